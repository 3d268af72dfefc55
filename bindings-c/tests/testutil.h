/* Tiny test framework and helpers shared by the C test programs (header-only, C11). */
#ifndef ZKLOCK_TESTUTIL_H
#define ZKLOCK_TESTUTIL_H

#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int tu_passed, tu_failed, tu_current_failed;
static const char *tu_current;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("    check failed at %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                   zklock_last_error());                                                       \
            fflush(stdout);                                                                    \
            tu_current_failed = 1;                                                             \
            return;                                                                            \
        }                                                                                      \
    } while (0)

/* Non-fatal: records the failure and goes on (for use where cleanup must still run). */
#define EXPECT(cond)                                                                           \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("    check failed at %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                   zklock_last_error());                                                       \
            fflush(stdout);                                                                    \
            tu_current_failed = 1;                                                             \
        }                                                                                      \
    } while (0)

#define RUN(test)                                                                              \
    do {                                                                                       \
        tu_current = #test;                                                                    \
        tu_current_failed = 0;                                                                 \
        printf("--- %s\n", #test);                                                             \
        fflush(stdout);                                                                        \
        test();                                                                                \
        if (tu_current_failed) {                                                               \
            tu_failed++;                                                                       \
            printf("FAIL %s\n", #test);                                                        \
        } else {                                                                               \
            tu_passed++;                                                                       \
            printf("ok   %s\n", #test);                                                        \
        }                                                                                      \
        fflush(stdout);                                                                        \
    } while (0)

static int tu_summary(void) {
    printf("%d passed, %d failed\n", tu_passed, tu_failed);
    fflush(stdout);
    return tu_failed == 0 && tu_passed > 0 ? 0 : 1;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Sends a four-letter word to the first server of a connect string; returns a malloc'd reply. */
static char *four_letter(const char *servers, const char *word) {
    char host[256];
    snprintf(host, sizeof host, "%s", servers);
    host[strcspn(host, ",/")] = 0;
    char *colon = strrchr(host, ':');
    if (!colon) return NULL;
    *colon = 0;
    const char *port = colon + 1;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) return NULL;
    int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        if (fd >= 0) close(fd);
        freeaddrinfo(res);
        return NULL;
    }
    freeaddrinfo(res);
    if (write(fd, word, strlen(word)) < 0) {
        close(fd);
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ssize_t n;
    while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 1024) buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    close(fd);
    return buf;
}

/* How many ephemeral nodes (of any session) live directly under `dir` (ZooKeeper's `dump`). */
static int ephemerals_under(const char *servers, const char *dir) {
    char *dump = four_letter(servers, "dump");
    if (!dump) return -1;
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/", dir);
    int count = 0;
    for (char *line = strtok(dump, "\n"); line; line = strtok(NULL, "\n")) {
        while (*line == ' ' || *line == '\t') line++;
        if (strncmp(line, prefix, strlen(prefix)) == 0 && !strchr(line + strlen(prefix), '/'))
            count++;
    }
    free(dump);
    return count;
}

/* Polls until `dir` has `want` ephemeral nodes or `ms` pass; returns the last count seen. */
static int wait_ephemerals(const char *servers, const char *dir, int want, int ms) {
    int64_t until = now_ms() + ms;
    int n;
    while ((n = ephemerals_under(servers, dir)) != want && now_ms() < until) sleep_ms(20);
    return n;
}

/* The answers zk-harness has written to `answers`, the file its stdout goes to: how many `ok` and
 * `error: ...` lines, and in `last_ok` whether the last of them is `ok`. -1 if it cannot be read. */
static int tu_harness_answers(const char *answers, int *last_ok) {
    FILE *f = fopen(answers, "r");
    if (!f) return -1;
    char line[512];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        if (strcmp(line, "ok\n") == 0 || strncmp(line, "error", 5) == 0) {
            count++;
            *last_ok = line[0] == 'o';
        }
    }
    fclose(f);
    return count;
}

/* Sends one command to zk-harness, whose stdin is the FIFO `control`, and waits (30 s at most) for
 * its answer in `answers`: when this returns 1 the fault is in place. Writing to the FIFO alone
 * does not say when the harness reads it; on a loaded machine it read `blackhole` after the
 * test's next request had crossed the proxy. Returns 0 (and says why) if there is no answer or
 * the answer is an error. */
static int tu_harness(const char *control, const char *answers, const char *command) {
    int last_ok = 0;
    int before = tu_harness_answers(answers, &last_ok);
    if (before < 0) {
        printf("    cannot read the harness's answers in %s\n", answers);
        return 0;
    }
    /* Non-blocking: if the harness is gone, fail at once instead of waiting for a reader. */
    int fd = open(control, O_WRONLY | O_NONBLOCK);
    if (fd < 0) {
        printf("    cannot open the harness control %s\n", control);
        return 0;
    }
    char line[64];
    int n = snprintf(line, sizeof line, "%s\n", command);
    int written = write(fd, line, (size_t)n) == n;
    close(fd);
    if (!written) {
        printf("    cannot write to the harness control %s\n", control);
        return 0;
    }
    int64_t until = now_ms() + 30000;
    while (tu_harness_answers(answers, &last_ok) <= before) {
        if (now_ms() >= until) {
            printf("    zk-harness gave no answer to %s in 30 s\n", command);
            return 0;
        }
        sleep_ms(5);
    }
    if (!last_ok) printf("    zk-harness refused %s (see its answers in %s)\n", command, answers);
    return last_ok;
}

/* A simple one-shot event for callbacks. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fired;
} tu_event;

static void tu_event_init(tu_event *e) {
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->fired = 0;
}

static void tu_event_destroy(tu_event *e) {
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
}

static void tu_event_set(tu_event *e) {
    pthread_mutex_lock(&e->mu);
    e->fired++;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Waits until fired at least `n` times, at most `ms`; returns the count. */
static int tu_event_wait(tu_event *e, int n, int ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&e->mu);
    while (e->fired < n) {
        if (pthread_cond_timedwait(&e->cv, &e->mu, &until) != 0) break;
    }
    int fired = e->fired;
    pthread_mutex_unlock(&e->mu);
    return fired;
}

#endif
