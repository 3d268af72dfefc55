/*
 * A suspend, as one process sees it (tests/trust/tests/suspend.rs, issue 50 part 3).
 *
 * While a machine is suspended CLOCK_MONOTONIC stands still and CLOCK_BOOTTIME goes on
 * (clock_gettime(2)); CLOCK_REALTIME is set forward from the hardware clock on resume. A
 * process stopped with SIGSTOP sees every clock go on instead. Preloaded (LD_PRELOAD), this
 * library subtracts from the monotonic clocks the nanoseconds stored in the file named by
 * ZKLOCK_SUSPEND_OFFSET_FILE (8 bytes, native order, mapped shared, so the test can grow it
 * while the process is stopped): grown by the stop's length before SIGCONT, the monotonic
 * clocks resume where they stood, while CLOCK_BOOTTIME and CLOCK_REALTIME count the stop, as
 * after a real suspend. libfaketime cannot express this: it fakes CLOCK_BOOTTIME exactly as
 * CLOCK_MONOTONIC (both, or neither with FAKETIME_DONT_FAKE_MONOTONIC).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int (*gettime_fn)(clockid_t, struct timespec *);

static gettime_fn real_gettime;
static const int64_t *offset_ns;

__attribute__((constructor)) static void shim_init(void) {
    real_gettime = (gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    const char *path = getenv("ZKLOCK_SUSPEND_OFFSET_FILE");
    if (path == NULL) {
        return;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        return;
    }
    void *mapped = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped != MAP_FAILED) {
        offset_ns = (const int64_t *)mapped;
    }
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    if (real_gettime == NULL) {
        real_gettime = (gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    }
    int rc = real_gettime(clock, ts);
    if (rc != 0 || offset_ns == NULL) {
        return rc;
    }
    if (clock != CLOCK_MONOTONIC && clock != CLOCK_MONOTONIC_RAW &&
        clock != CLOCK_MONOTONIC_COARSE) {
        return rc;
    }
    int64_t off = __atomic_load_n(offset_ns, __ATOMIC_ACQUIRE);
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec - off;
    ts->tv_sec = ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
    return rc;
}
