/* Workers for zklock's C face (bindings-c, include/zklock.h), same command line and output as
 * the other workers. clock_gettime(CLOCK_MONOTONIC) like the others. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "zklock.h"

static const char *arg(int argc, char **argv, const char *key, const char *dflt) {
    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i] + 2, key) == 0) return argv[i + 1];
    return dflt;
}

static uint64_t mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* User + system CPU time of the whole process in ns (getrusage, like the other workers). */
static uint64_t cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

static void sleep_until(uint64_t t) {
    uint64_t now = mono();
    if (t > now) {
        struct timespec d = {(time_t)((t - now) / 1000000000ull), (long)((t - now) % 1000000000ull)};
        nanosleep(&d, NULL);
    }
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, double p) {
    if (n == 0) return 0;
    size_t rank = (size_t)((p / 100.0) * n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return v[rank - 1];
}

static void check(enum zklock_status s, const char *what) {
    if (s != ZKLOCK_OK) {
        fprintf(stderr, "face_c: %s: %s: %s\n", what, zklock_status_str(s), zklock_last_error());
        exit(1);
    }
}

/* Time slots shared by workers running side by side (see bench/src/common.rs, Slots). */
struct slots {
    uint64_t start, wslot, slot, nslots, me;
    int rounds;
    double msecs;
};

static struct slots slots_from(int argc, char **argv, uint64_t warm, uint64_t secs) {
    struct slots s;
    const char *start_at = arg(argc, argv, "start-at", NULL);
    s.start = start_at ? strtoull(start_at, NULL, 10) : mono();
    s.wslot = start_at ? (uint64_t)atoll(arg(argc, argv, "warm-ms", "1000")) * 1000000ull : warm;
    s.slot = start_at ? (uint64_t)atoll(arg(argc, argv, "slot-ms", "500")) * 1000000ull : secs * 10 / 9;
    s.nslots = start_at ? (uint64_t)atoll(arg(argc, argv, "nslots", "1")) : 1;
    s.me = start_at ? (uint64_t)atoll(arg(argc, argv, "my-slot", "0")) : 0;
    s.rounds = start_at ? atoi(arg(argc, argv, "rounds", "1")) : 1;
    if (s.rounds > 256) s.rounds = 256;
    s.msecs = (s.slot * 9 / 10) / 1e9;
    return s;
}

static uint64_t slot_from(const struct slots *s, int r) {
    return s->start + s->nslots * s->wslot + ((uint64_t)r * s->nslots + s->me) * s->slot;
}

/* Scenario 4: one thread per lock, all over one client. */
struct loop_arg {
    const struct slots *sl;
    struct zklock_lock *lock;
    uint64_t counts[256];
    uint64_t *lat;
    size_t n, cap;
};

static void *slotted_loop(void *p) {
    struct loop_arg *a = p;
    const struct slots *sl = a->sl;
    struct zklock_lease *lease;
    sleep_until(sl->start + sl->me * sl->wslot);
    while (mono() < sl->start + (sl->me + 1) * sl->wslot) {
        check(zklock_acquire(a->lock, -1, &lease), "acquire");
        check(zklock_lease_release(lease), "release");
    }
    for (int r = 0; r < sl->rounds; r++) {
        uint64_t from = slot_from(sl, r), to = from + sl->slot * 9 / 10;
        sleep_until(from);
        for (;;) {
            uint64_t t0 = mono();
            if (t0 >= to) break;
            check(zklock_acquire(a->lock, -1, &lease), "acquire");
            check(zklock_lease_release(lease), "release");
            uint64_t t1 = mono();
            if (t1 <= to) {
                a->counts[r]++;
                if (a->n < a->cap) a->lat[a->n++] = t1 - t0;
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *scenario = arg(argc, argv, "scenario", "s1");
    uint64_t warm = (uint64_t)(atof(arg(argc, argv, "warmup", "1")) * 1e9);
    uint64_t secs = (uint64_t)(atof(arg(argc, argv, "secs", "3")) * 1e9);
    struct zklock_client *client;
    struct zklock_lock *lock;
    struct zklock_lease *lease;
    check(zklock_client_connect(arg(argc, argv, "servers", ""), NULL, &client), "connect");
    check(zklock_mutex_new(client, arg(argc, argv, "path", "/bench/c"), NULL, &lock), "mutex");
    size_t cap = 1 << 22, n = 0;
    uint64_t *v = malloc(cap * sizeof(uint64_t) * 2);
    if (strcmp(scenario, "s1") == 0) {
        /* Time slots shared by workers running side by side (see bench/src/common.rs, Slots). */
        const char *start_at = arg(argc, argv, "start-at", NULL);
        uint64_t start = start_at ? strtoull(start_at, NULL, 10) : mono();
        uint64_t wslot = start_at ? (uint64_t)atoll(arg(argc, argv, "warm-ms", "1000")) * 1000000ull : warm;
        uint64_t slot = start_at ? (uint64_t)atoll(arg(argc, argv, "slot-ms", "500")) * 1000000ull : secs * 10 / 9;
        uint64_t nslots = start_at ? (uint64_t)atoll(arg(argc, argv, "nslots", "1")) : 1;
        uint64_t me = start_at ? (uint64_t)atoll(arg(argc, argv, "my-slot", "0")) : 0;
        int rounds = start_at ? atoi(arg(argc, argv, "rounds", "1")) : 1;
        double msecs = (slot * 9 / 10) / 1e9;
        double per_round[256] = {0};
        uint64_t cpu = 0;
        sleep_until(start + me * wslot);
        while (mono() < start + (me + 1) * wslot) {
            check(zklock_acquire(lock, -1, &lease), "acquire");
            check(zklock_lease_release(lease), "release");
        }
        for (int r = 0; r < rounds && r < 256; r++) {
            uint64_t from = start + nslots * wslot + ((uint64_t)r * nslots + me) * slot, to = from + slot * 9 / 10;
            sleep_until(from);
            uint64_t c0 = cpu_ns();
            for (;;) {
                uint64_t t0 = mono();
                if (t0 >= to) break;
                check(zklock_acquire(lock, -1, &lease), "acquire");
                check(zklock_lease_release(lease), "release");
                uint64_t t1 = mono();
                if (t1 <= to && n < cap) {
                    v[n++] = t1 - t0;
                    per_round[r] += 1.0 / msecs;
                }
            }
            cpu += cpu_ns() - c0;
        }
        qsort(v, n, sizeof(uint64_t), cmp);
        double s = msecs * rounds;
        printf("{\"ops\":%zu,\"secs\":%f,\"ops_s\":%f,\"p50_us\":%f,\"p99_us\":%f,\"rounds\":[", n, s, n / s,
               pct(v, n, 50) / 1000.0, pct(v, n, 99) / 1000.0);
        for (int r = 0; r < rounds && r < 256; r++) printf("%s%f", r ? "," : "", per_round[r]);
        printf("],\"cpu_s\":%f", cpu / 1e9);
        if (n) printf(",\"cpu_us_per_op\":%f", cpu / 1e3 / n);
        printf("}\n");
    } else if (strcmp(scenario, "s3") == 0) {
        uint64_t start = strtoull(arg(argc, argv, "start-at", "0"), NULL, 10);
        uint64_t end = start + warm + secs, now = mono();
        if (start > now) {
            struct timespec d = {(time_t)((start - now) / 1000000000ull), (long)((start - now) % 1000000000ull)};
            nanosleep(&d, NULL);
        }
        uint64_t c0 = 0;
        while (mono() < end && n < cap) {
            if (!c0 && mono() >= start + warm) c0 = cpu_ns();
            check(zklock_acquire(lock, -1, &lease), "acquire");
            v[2 * n] = mono();
            v[2 * n + 1] = mono();
            check(zklock_lease_release(lease), "release");
            n++;
        }
        printf("{\"events\":[");
        for (size_t i = 0; i < n; i++) printf("%s[%llu,%llu]", i ? "," : "", (unsigned long long)v[2 * i], (unsigned long long)v[2 * i + 1]);
        printf("],\"cpu_s\":%f}\n", c0 ? (cpu_ns() - c0) / 1e9 : 0.0);
    } else if (strcmp(scenario, "s4") == 0) {
        struct slots sl = slots_from(argc, argv, warm, secs);
        int nlocks = atoi(arg(argc, argv, "locks", "64"));
        if (nlocks < 1) nlocks = 1;
        struct loop_arg *args = calloc((size_t)nlocks, sizeof *args);
        pthread_t *threads = calloc((size_t)nlocks, sizeof *threads);
        char path[512];
        for (int i = 0; i < nlocks; i++) {
            snprintf(path, sizeof path, "%s/%d", arg(argc, argv, "path", "/bench/c"), i);
            check(zklock_mutex_new(client, path, NULL, &args[i].lock), "mutex");
            args[i].sl = &sl;
            args[i].cap = cap / (size_t)nlocks;
            args[i].lat = v + (size_t)i * args[i].cap;
            pthread_create(&threads[i], NULL, slotted_loop, &args[i]);
        }
        /* The process's CPU time over the measured windows, read once per window for all threads. */
        uint64_t cpu = 0;
        for (int r = 0; r < sl.rounds; r++) {
            uint64_t from = slot_from(&sl, r);
            sleep_until(from);
            uint64_t c0 = cpu_ns();
            sleep_until(from + sl.slot * 9 / 10);
            cpu += cpu_ns() - c0;
        }
        double per_round[256] = {0};
        for (int i = 0; i < nlocks; i++) {
            pthread_join(threads[i], NULL);
            for (int r = 0; r < sl.rounds; r++) per_round[r] += args[i].counts[r] / sl.msecs;
            memmove(v + n, args[i].lat, args[i].n * sizeof(uint64_t));
            n += args[i].n;
            zklock_lock_free(args[i].lock);
        }
        qsort(v, n, sizeof(uint64_t), cmp);
        double s = sl.msecs * sl.rounds;
        printf("{\"ops\":%zu,\"secs\":%f,\"ops_s\":%f,\"p50_us\":%f,\"p99_us\":%f,\"rounds\":[", n, s, n / s,
               pct(v, n, 50) / 1000.0, pct(v, n, 99) / 1000.0);
        for (int r = 0; r < sl.rounds; r++) printf("%s%f", r ? "," : "", per_round[r]);
        printf("],\"cpu_s\":%f", cpu / 1e9);
        if (n) printf(",\"cpu_us_per_op\":%f", cpu / 1e3 / n);
        printf("}\n");
        free(args);
        free(threads);
    } else {
        fprintf(stderr, "face_c: no scenario %s\n", scenario);
        return 2;
    }
    fflush(stdout);
    zklock_lock_free(lock);
    zklock_client_free(client);
    return 0;
}
