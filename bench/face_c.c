/* Workers for zklock's C face (bindings-c, include/zklock.h), same command line and output as
 * the other workers. clock_gettime(CLOCK_MONOTONIC) like the others. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
        sleep_until(start + me * wslot);
        while (mono() < start + (me + 1) * wslot) {
            check(zklock_acquire(lock, -1, &lease), "acquire");
            check(zklock_lease_release(lease), "release");
        }
        for (int r = 0; r < rounds && r < 256; r++) {
            uint64_t from = start + nslots * wslot + ((uint64_t)r * nslots + me) * slot, to = from + slot * 9 / 10;
            sleep_until(from);
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
        }
        qsort(v, n, sizeof(uint64_t), cmp);
        double s = msecs * rounds;
        printf("{\"ops\":%zu,\"secs\":%f,\"ops_s\":%f,\"p50_us\":%f,\"p99_us\":%f,\"rounds\":[", n, s, n / s,
               pct(v, n, 50) / 1000.0, pct(v, n, 99) / 1000.0);
        for (int r = 0; r < rounds && r < 256; r++) printf("%s%f", r ? "," : "", per_round[r]);
        printf("]}\n");
    } else if (strcmp(scenario, "s3") == 0) {
        uint64_t start = strtoull(arg(argc, argv, "start-at", "0"), NULL, 10);
        uint64_t end = start + warm + secs, now = mono();
        if (start > now) {
            struct timespec d = {(time_t)((start - now) / 1000000000ull), (long)((start - now) % 1000000000ull)};
            nanosleep(&d, NULL);
        }
        while (mono() < end && n < cap) {
            check(zklock_acquire(lock, -1, &lease), "acquire");
            v[2 * n] = mono();
            v[2 * n + 1] = mono();
            check(zklock_lease_release(lease), "release");
            n++;
        }
        printf("{\"events\":[");
        for (size_t i = 0; i < n; i++) printf("%s[%llu,%llu]", i ? "," : "", (unsigned long long)v[2 * i], (unsigned long long)v[2 * i + 1]);
        printf("]}\n");
    } else {
        fprintf(stderr, "face_c: no scenario %s\n", scenario);
        return 2;
    }
    fflush(stdout);
    zklock_lock_free(lock);
    zklock_client_free(client);
    return 0;
}
