/* A C client's callback thread (issue 27, point 9), against a real ZooKeeper
 * (bindings-c/ci-test.sh starts one).
 *
 *   test_threads SERVERS
 *
 * Each C client runs its callbacks on a thread of its own. This program is linked against
 * libzklock.a with -Wl,--wrap=pthread_create, so that it can make "the system" refuse a new
 * thread the way pthread_create does at its limits (EAGAIN) and check what zklock_client_connect
 * reports: a resource the client needs was refused (ZKLOCK_CONNECTION, saying which), not
 * ZKLOCK_PANIC ("a bug in zklock"), and no session opened for nothing. Linux only (it counts
 * /proc/self/task). The last line of the output is `N passed, N failed`.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>

#include "../../include/zklock.h"
/* Only the framework of testutil.h is used here, not its ZooKeeper helpers. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "testutil.h"

static const char *servers;
static atomic_int refuse_threads;

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg);

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    if (atomic_load(&refuse_threads)) return EAGAIN;
    return __real_pthread_create(thread, attr, start, arg);
}

static int threads_now(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static zklock_client *connect_plain(void) {
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.connect_timeout_ms = 5000;
    zklock_client *c = NULL;
    zklock_status st = zklock_client_connect(servers, &opts, &c);
    if (st != ZKLOCK_OK) printf("    connect failed: %s: %s\n", zklock_status_str(st), zklock_last_error());
    return c;
}

/* bindings-c/README.md: one thread per client, ended when the client is freed. */
static void test_each_client_has_one_callback_thread(void) {
    zklock_client *first = connect_plain(); /* starts what the library shares */
    CHECK(first != NULL);
    int before = threads_now();
    zklock_client *clients[10] = {0};
    for (int i = 0; i < 10; i++) {
        clients[i] = connect_plain();
        EXPECT(clients[i] != NULL);
    }
    int with = threads_now();
    printf("    threads: %d with one client, %d with eleven\n", before, with);
    EXPECT(with == before + 10);
    for (int i = 0; i < 10; i++) zklock_client_free(clients[i]);
    int after = threads_now();
    for (int i = 0; i < 100 && after != before; i++) {
        sleep_ms(50);
        after = threads_now();
    }
    EXPECT(after == before);
    zklock_client_free(first);
}

static void test_a_refused_callback_thread_is_a_resource_status_not_a_panic(void) {
    zklock_client *warm = connect_plain(); /* the library's shared threads run already */
    CHECK(warm != NULL);
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.connect_timeout_ms = 5000;
    zklock_client *c = NULL;
    atomic_store(&refuse_threads, 1);
    zklock_status st = zklock_client_connect(servers, &opts, &c);
    atomic_store(&refuse_threads, 0);
    printf("    %s: %s\n", zklock_status_str(st), zklock_last_error());
    EXPECT(st == ZKLOCK_CONNECTION);
    EXPECT(c == NULL);
    EXPECT(strstr(zklock_last_error(), "callback thread") != NULL);
    EXPECT(strstr(zklock_last_error(), "refused a new thread") != NULL);
    if (c) zklock_client_free(c);
    /* Once the system has threads again, connecting works. */
    c = connect_plain();
    EXPECT(c != NULL);
    if (c) zklock_client_free(c);
    zklock_client_free(warm);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SERVERS\n", argv[0]);
        printf("0 passed, 1 failed\n");
        return 2;
    }
    servers = argv[1];
    RUN(test_each_client_has_one_callback_thread);
    RUN(test_a_refused_callback_thread_is_a_resource_status_not_a_panic);
    return tu_summary();
}
