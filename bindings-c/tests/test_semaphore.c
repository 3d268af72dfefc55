/* The C face's semaphore and revocation tests (issue 14), against a real ZooKeeper
 * (bindings-c/ci-test.sh starts one).
 *
 *   test_semaphore SERVERS PROXY CONTROL_FIFO HARNESS_ANSWERS   (as test_zklock.c)
 *
 * A semaphore is a `zklock_lock`: the acquire, async, lease and callback functions are the
 * mutex's. The last line of the output is `N passed, N failed`.
 */
#include <fcntl.h>
#include <stdatomic.h>

#include "../../include/zklock.h"
#include "testutil.h"

static const char *servers, *proxy, *control, *answers;
static char base[128];

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", base, name); }

/* The directory of a semaphore's lease nodes (Curator's layout). */
static void leases_of(char *buf, size_t n, const char *p) { snprintf(buf, n, "%s/leases", p); }

static zklock_client *connect_to(const char *hosts, int64_t session_ms) {
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    if (session_ms) opts.session_timeout_ms = session_ms;
    opts.identity = "c-semaphore-test";
    zklock_client *c = NULL;
    zklock_status st = zklock_client_connect(hosts, &opts, &c);
    if (st != ZKLOCK_OK) {
        printf("    connect to %s failed: %s: %s\n", hosts, zklock_status_str(st), zklock_last_error());
        return NULL;
    }
    return c;
}

static void harness(const char *command) {
    if (!tu_harness(control, answers, command)) tu_current_failed = 1;
}

/* ---------------------------------------------------------------------------------------- */

#define CONTENDERS 4
#define ROUNDS 4
static char sem_path[256];
static atomic_int inside, most, acquire_errors, tokens_seen;

static void *contend(void *arg) {
    (void)arg;
    zklock_client *c = connect_to(servers, 0);
    zklock_lock *sem = NULL;
    if (!c || zklock_semaphore_new(c, sem_path, 2, NULL, &sem) != ZKLOCK_OK) {
        atomic_fetch_add(&acquire_errors, 1);
        zklock_client_free(c);
        return NULL;
    }
    for (int i = 0; i < ROUNDS; i++) {
        zklock_lease *lease = NULL;
        if (zklock_acquire(sem, 60000, &lease) != ZKLOCK_OK) {
            atomic_fetch_add(&acquire_errors, 1);
            continue;
        }
        int now = atomic_fetch_add(&inside, 1) + 1;
        int seen = atomic_load(&most);
        while (now > seen && !atomic_compare_exchange_weak(&most, &seen, now)) {
        }
        if (zklock_lease_token(lease) > 0) atomic_fetch_add(&tokens_seen, 1);
        sleep_ms(100);
        atomic_fetch_sub(&inside, 1);
        if (zklock_lease_release(lease) != ZKLOCK_OK) atomic_fetch_add(&acquire_errors, 1);
    }
    zklock_lock_free(sem);
    zklock_client_free(c);
    return NULL;
}

static void test_a_semaphore_of_two_never_has_more_than_two_holders_among_four_clients(void) {
    path_of(sem_path, sizeof sem_path, "four");
    atomic_store(&inside, 0);
    atomic_store(&most, 0);
    atomic_store(&acquire_errors, 0);
    atomic_store(&tokens_seen, 0);
    pthread_t t[CONTENDERS];
    for (int i = 0; i < CONTENDERS; i++) pthread_create(&t[i], NULL, contend, NULL);
    for (int i = 0; i < CONTENDERS; i++) pthread_join(t[i], NULL);
    printf("    at most %d holders at once\n", atomic_load(&most));
    EXPECT(atomic_load(&acquire_errors) == 0);
    EXPECT(atomic_load(&tokens_seen) == CONTENDERS * ROUNDS);
    EXPECT(atomic_load(&most) == 2);
    char leases[300];
    leases_of(leases, sizeof leases, sem_path);
    EXPECT(wait_ephemerals(servers, leases, 0, 5000) == 0);
}

static void test_a_semaphore_mutex_excludes_another_client_and_its_own_holder(void) {
    char p[256];
    path_of(p, sizeof p, "mutex");
    zklock_client *a = connect_to(servers, 0), *b = connect_to(servers, 0);
    CHECK(a && b);
    zklock_lock *la = NULL, *lb = NULL;
    zklock_semaphore_options opts;
    zklock_semaphore_options_init(&opts);
    CHECK(zklock_semaphore_mutex_new(a, p, &opts, &la) == ZKLOCK_OK);
    CHECK(zklock_semaphore_mutex_new(b, p, NULL, &lb) == ZKLOCK_OK);
    zklock_lease *held = NULL, *other = NULL;
    CHECK(zklock_acquire(la, 10000, &held) == ZKLOCK_OK);
    EXPECT(zklock_acquire(lb, 0, &other) == ZKLOCK_TIMEOUT);
    /* Not re-entrant (Curator's InterProcessSemaphoreMutex): the holder waits for itself. */
    EXPECT(zklock_acquire(la, 0, &other) == ZKLOCK_TIMEOUT);
    EXPECT(other == NULL);
    EXPECT(zklock_lease_release(held) == ZKLOCK_OK);
    EXPECT(zklock_acquire(lb, 10000, &other) == ZKLOCK_OK);
    if (other) EXPECT(zklock_lease_release(other) == ZKLOCK_OK);
    zklock_lock_free(la);
    zklock_lock_free(lb);
    zklock_client_free(a);
    zklock_client_free(b);
}

struct async_result {
    tu_event done;
    atomic_int status;
    zklock_lease *lease;
};

static void async_cb(void *user, zklock_status status, zklock_lease *lease) {
    struct async_result *r = user;
    atomic_store(&r->status, status);
    r->lease = lease;
    tu_event_set(&r->done);
}

static void test_try_timeout_and_cancel_on_a_full_semaphore_leave_no_node(void) {
    char p[256], leases[300];
    path_of(p, sizeof p, "full");
    leases_of(leases, sizeof leases, p);
    zklock_client *a = connect_to(servers, 0), *b = connect_to(servers, 0);
    CHECK(a && b);
    zklock_lock *la = NULL, *lb = NULL;
    CHECK(zklock_semaphore_new(a, p, 1, NULL, &la) == ZKLOCK_OK);
    CHECK(zklock_semaphore_new(b, p, 1, NULL, &lb) == ZKLOCK_OK);
    zklock_lease *held = NULL, *other = NULL;
    CHECK(zklock_acquire(la, 10000, &held) == ZKLOCK_OK);
    EXPECT(zklock_acquire(lb, 0, &other) == ZKLOCK_TIMEOUT);
    int64_t t0 = now_ms();
    EXPECT(zklock_acquire(lb, 300, &other) == ZKLOCK_TIMEOUT);
    EXPECT(now_ms() - t0 >= 300);
    static struct async_result timed, cancelled;
    memset(&timed, 0, sizeof timed);
    memset(&cancelled, 0, sizeof cancelled);
    tu_event_init(&timed.done);
    tu_event_init(&cancelled.done);
    zklock_op *op1 = NULL, *op2 = NULL;
    EXPECT(zklock_acquire_async(lb, 300, async_cb, &timed, &op1) == ZKLOCK_OK);
    EXPECT(zklock_acquire_async(lb, -1, async_cb, &cancelled, &op2) == ZKLOCK_OK);
    sleep_ms(300);
    EXPECT(zklock_op_cancel(op2) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&timed.done, 1, 10000) == 1);
    EXPECT(tu_event_wait(&cancelled.done, 1, 10000) == 1);
    EXPECT(atomic_load(&timed.status) == ZKLOCK_TIMEOUT);
    EXPECT(atomic_load(&cancelled.status) == ZKLOCK_CANCELLED);
    EXPECT(timed.lease == NULL && cancelled.lease == NULL);
    /* Only the holder's lease node is there. */
    EXPECT(wait_ephemerals(servers, leases, 1, 5000) == 1);
    EXPECT(zklock_lease_release(held) == ZKLOCK_OK);
    EXPECT(wait_ephemerals(servers, leases, 0, 5000) == 0);
    zklock_op_free(op1);
    zklock_op_free(op2);
    tu_event_destroy(&timed.done);
    tu_event_destroy(&cancelled.done);
    zklock_lock_free(la);
    zklock_lock_free(lb);
    zklock_client_free(a);
    zklock_client_free(b);
}

struct revoke_log {
    tu_event asked;
    atomic_int calls;
    zklock_lease *expected;
    int release_when_asked;
    zklock_status release_status;
};

static void revoke_cb(void *user, zklock_lease *lease) {
    struct revoke_log *r = user;
    if (lease != r->expected) return;
    atomic_fetch_add(&r->calls, 1);
    if (r->release_when_asked) r->release_status = zklock_lease_release(lease); /* let go */
    tu_event_set(&r->asked);
}

static void test_revocation_reaches_the_holders_callback_and_the_lease_stays_held(void) {
    char p[256];
    path_of(p, sizeof p, "revoke");
    zklock_client *a = connect_to(servers, 0), *b = connect_to(servers, 0);
    CHECK(a && b);
    zklock_lock *sem = NULL;
    CHECK(zklock_semaphore_new(a, p, 2, NULL, &sem) == ZKLOCK_OK);
    zklock_lease *lease = NULL;
    CHECK(zklock_acquire(sem, 10000, &lease) == ZKLOCK_OK);
    static struct revoke_log r;
    memset(&r, 0, sizeof r);
    tu_event_init(&r.asked);
    r.expected = lease;
    CHECK(zklock_lease_on_revoke(lease, revoke_cb, &r) == ZKLOCK_OK);
    EXPECT(!zklock_lease_revoke_requested(lease));
    EXPECT(zklock_revoke(b, p, NULL) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&r.asked, 1, 10000) == 1);
    EXPECT(zklock_lease_revoke_requested(lease));
    /* Only a request: the lease is still held until released. */
    EXPECT(zklock_lease_state_get(lease) == ZKLOCK_LEASE_HELD);
    sleep_ms(200);
    EXPECT(atomic_load(&r.calls) == 1);
    EXPECT(zklock_lease_release(lease) == ZKLOCK_OK);
    EXPECT(zklock_revoke(b, p, NULL) == ZKLOCK_NOT_HELD);
    EXPECT(zklock_revoke(b, p, "no-such-node") == ZKLOCK_NOT_HELD);
    tu_event_destroy(&r.asked);
    zklock_lock_free(sem);
    zklock_client_free(a);
    zklock_client_free(b);
}

/* The C idiom: the holder lets go from inside its revocation callback; the waiter then gets
 * the semaphore mutex. */
static void test_a_holder_that_releases_when_asked_hands_the_semaphore_mutex_over(void) {
    char p[256];
    path_of(p, sizeof p, "revoke-release");
    zklock_client *a = connect_to(servers, 0), *b = connect_to(servers, 0);
    CHECK(a && b);
    zklock_lock *la = NULL, *lb = NULL;
    CHECK(zklock_semaphore_mutex_new(a, p, NULL, &la) == ZKLOCK_OK);
    CHECK(zklock_semaphore_mutex_new(b, p, NULL, &lb) == ZKLOCK_OK);
    zklock_lease *held = NULL, *next = NULL;
    CHECK(zklock_acquire(la, 10000, &held) == ZKLOCK_OK);
    static struct revoke_log r;
    memset(&r, 0, sizeof r);
    tu_event_init(&r.asked);
    r.expected = held;
    r.release_when_asked = 1;
    r.release_status = 99;
    CHECK(zklock_lease_on_revoke(held, revoke_cb, &r) == ZKLOCK_OK);
    int64_t token = zklock_lease_token(held);
    EXPECT(zklock_revoke(b, p, NULL) == ZKLOCK_OK);
    EXPECT(zklock_acquire(lb, 20000, &next) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&r.asked, 1, 10000) == 1);
    EXPECT(r.release_status == ZKLOCK_OK);
    if (next) {
        EXPECT(zklock_lease_token(next) > token);
        EXPECT(zklock_lease_release(next) == ZKLOCK_OK);
    }
    tu_event_destroy(&r.asked);
    zklock_lock_free(la);
    zklock_lock_free(lb);
    zklock_client_free(a);
    zklock_client_free(b);
}

struct lost_log {
    tu_event lost;
    zklock_lease *expected;
};

static void lost_cb(void *user, zklock_lease *lease, zklock_lease_state state) {
    struct lost_log *l = user;
    if (lease == l->expected && state == ZKLOCK_LEASE_LOST) tu_event_set(&l->lost);
}

static void test_a_semaphore_lease_whose_session_expires_is_lost_and_its_place_freed(void) {
    char p[256];
    path_of(p, sizeof p, "expiry");
    zklock_client *holder = connect_to(proxy, 2000), *other = connect_to(servers, 0);
    CHECK(holder && other);
    zklock_lock *lh = NULL, *lo = NULL;
    CHECK(zklock_semaphore_new(holder, p, 1, NULL, &lh) == ZKLOCK_OK);
    CHECK(zklock_semaphore_new(other, p, 1, NULL, &lo) == ZKLOCK_OK);
    zklock_lease *lease = NULL, *next = NULL;
    CHECK(zklock_acquire(lh, 10000, &lease) == ZKLOCK_OK);
    int64_t token = zklock_lease_token(lease);
    static struct lost_log l;
    memset(&l, 0, sizeof l);
    tu_event_init(&l.lost);
    l.expected = lease;
    CHECK(zklock_lease_on_state(lease, lost_cb, &l) == ZKLOCK_OK);
    harness("blackhole");
    EXPECT(tu_event_wait(&l.lost, 1, 20000) == 1);
    EXPECT(zklock_lease_state_get(lease) == ZKLOCK_LEASE_LOST);
    /* The server expires the dead session: its lease node goes, another holder fits. */
    EXPECT(zklock_acquire(lo, 30000, &next) == ZKLOCK_OK);
    harness("heal");
    if (next) {
        EXPECT(zklock_lease_token(next) > token);
        EXPECT(zklock_lease_release(next) == ZKLOCK_OK);
    }
    EXPECT(zklock_lease_release(lease) == ZKLOCK_LOST);
    tu_event_destroy(&l.lost);
    zklock_lock_free(lh);
    zklock_lock_free(lo);
    zklock_client_free(holder);
    zklock_client_free(other);
}

static void test_bad_numbers_of_leases_and_arguments_are_invalid(void) {
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    const int64_t bad[] = {0, -1, 2147483648LL, INT64_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zklock_lock *l = NULL;
        EXPECT(zklock_semaphore_new(c, "/sem/bad", bad[i], NULL, &l) == ZKLOCK_INVALID_ARGUMENT);
        EXPECT(l == NULL);
        char shown[32];
        snprintf(shown, sizeof shown, "leases %lld ", (long long)bad[i]);
        EXPECT(strstr(zklock_last_error(), shown) != NULL);
    }
    zklock_lock *l = NULL;
    EXPECT(zklock_semaphore_new(c, "/sem/bad", 2, NULL, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_semaphore_new(NULL, "/sem/bad", 2, NULL, &l) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_semaphore_mutex_new(c, "no-slash", NULL, &l) == ZKLOCK_INVALID_ARGUMENT);
    zklock_semaphore_options opts = {1};
    EXPECT(zklock_semaphore_mutex_new(c, "/sem/bad", &opts, &l) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_revoke(c, NULL, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_lease_on_revoke(NULL, revoke_cb, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(!zklock_lease_revoke_requested(NULL));
    EXPECT(l == NULL);
    zklock_client_free(c);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s SERVERS PROXY CONTROL_FIFO HARNESS_ANSWERS\n", argv[0]);
        printf("0 passed, 1 failed\n");
        return 2;
    }
    servers = argv[1];
    proxy = argv[2];
    control = argv[3];
    answers = argv[4];
    snprintf(base, sizeof base, "/zklock-c-semaphore/%ld-%ld", (long)getpid(), (long)time(NULL));
    setvbuf(stdout, NULL, _IOLBF, 0);
    RUN(test_a_semaphore_of_two_never_has_more_than_two_holders_among_four_clients);
    RUN(test_a_semaphore_mutex_excludes_another_client_and_its_own_holder);
    RUN(test_try_timeout_and_cancel_on_a_full_semaphore_leave_no_node);
    RUN(test_revocation_reaches_the_holders_callback_and_the_lease_stays_held);
    RUN(test_a_holder_that_releases_when_asked_hands_the_semaphore_mutex_over);
    RUN(test_a_semaphore_lease_whose_session_expires_is_lost_and_its_place_freed);
    RUN(test_bad_numbers_of_leases_and_arguments_are_invalid);
    return tu_summary();
}
