/* Cross-language demo worker: `worker SERVERS PATH ROUNDS LOGFILE`.
 * ROUNDS times: acquire the mutex on PATH, append `c <token> <enter_ns> <exit_ns>` to LOGFILE
 * (CLOCK_REALTIME nanoseconds), stay inside ~20 ms, release. Exit status 0 when every round ran.
 * Build: cc -std=c11 worker.c $(pkg-config --cflags --libs zklock) -o worker */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <zklock.h>

static long long realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int fail(const char *what, zklock_status st) {
    fprintf(stderr, "worker: %s: %s: %s\n", what, zklock_status_str(st), zklock_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s SERVERS PATH ROUNDS LOGFILE\n", argv[0]);
        return 2;
    }
    const char *servers = argv[1], *path = argv[2], *logfile = argv[4];
    int rounds = atoi(argv[3]);
    if (rounds < 0) {
        fprintf(stderr, "worker: ROUNDS must be >= 0\n");
        return 2;
    }
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.identity = "c-worker";
    /* a secured ensemble: the same variables as the CLI's (NULL when unset) */
    opts.tls_ca = getenv("ZKLOCK_TLS_CA");
    opts.tls_cert = getenv("ZKLOCK_TLS_CERT");
    opts.tls_key = getenv("ZKLOCK_TLS_KEY");
    opts.sasl_user = getenv("ZKLOCK_SASL_USER");
    opts.sasl_password = getenv("ZKLOCK_SASL_PASSWORD");
    zklock_client *client = NULL;
    zklock_status st = zklock_client_connect(servers, &opts, &client);
    if (st != ZKLOCK_OK) return fail("connect", st);
    zklock_lock *lock = NULL;
    st = zklock_mutex_new(client, path, NULL, &lock);
    if (st != ZKLOCK_OK) {
        zklock_client_free(client);
        return fail("mutex", st);
    }
    int rc = 0;
    for (int i = 0; i < rounds && rc == 0; i++) {
        zklock_lease *lease = NULL;
        st = zklock_acquire(lock, -1, &lease);
        if (st != ZKLOCK_OK) {
            rc = fail("acquire", st);
            break;
        }
        long long enter = realtime_ns();
        struct timespec pause = {0, 20 * 1000000L};
        nanosleep(&pause, NULL);
        long long exit_ns = realtime_ns();
        FILE *log = fopen(logfile, "a");
        if (!log) {
            perror("worker: cannot open the log file");
            rc = 1;
        } else {
            fprintf(log, "c %lld %lld %lld\n", (long long)zklock_lease_token(lease), enter, exit_ns);
            fflush(log);
            fclose(log);
        }
        st = zklock_lease_release(lease);
        if (st != ZKLOCK_OK) rc = fail("release", st);
    }
    zklock_lock_free(lock);
    zklock_client_free(client);
    return rc;
}
