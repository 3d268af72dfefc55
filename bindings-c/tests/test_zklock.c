/* The C face's test program, run against a real ZooKeeper (bindings-c/ci-test.sh starts one).
 *
 *   test_zklock SERVERS PROXY CONTROL_FIFO HARNESS_ANSWERS
 *
 * SERVERS is the connect string, PROXY the address of the harness's fault proxy in front of the
 * server, CONTROL_FIFO the harness's command input (we write `blackhole` / `heal` to it) and
 * HARNESS_ANSWERS the file its output goes to, where we wait for its answer (`tu_harness`).
 * ZKLOCK_TEST_ROUNDS sets the acquires per thread of the contention test (default 200).
 * The last line of the output is `N passed, N failed`.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>

#include "../../include/zklock.h"
#include "testutil.h"

static const char *servers, *proxy, *control, *answers;
static char base[128];
static int rounds = 200;

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", base, name); }

static zklock_client *connect_to(const char *hosts, int64_t session_ms) {
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    if (session_ms) opts.session_timeout_ms = session_ms;
    opts.identity = "c-test";
    zklock_client *c = NULL;
    zklock_status st = zklock_client_connect(hosts, &opts, &c);
    if (st != ZKLOCK_OK) {
        printf("    connect to %s failed: %s: %s\n", hosts, zklock_status_str(st), zklock_last_error());
        return NULL;
    }
    return c;
}

/* Two clients, each with a mutex on the same fresh path: `la` for a holder, `lb` for a
 * contender (the setup of most contention tests). */
struct pair {
    char p[256];
    zklock_client *a, *b;
    zklock_lock *la, *lb;
};

/* The pair with each client on its own connect string and session timeout (0: the default):
 * the fault proxy for one of them, say. */
static int pair_open_via(struct pair *s, const char *name, const char *a_hosts, int64_t a_ms,
                         const char *b_hosts, int64_t b_ms) {
    path_of(s->p, sizeof s->p, name);
    s->a = connect_to(a_hosts, a_ms);
    s->b = connect_to(b_hosts, b_ms);
    s->la = s->lb = NULL;
    return s->a && s->b && zklock_mutex_new(s->a, s->p, NULL, &s->la) == ZKLOCK_OK &&
           zklock_mutex_new(s->b, s->p, NULL, &s->lb) == ZKLOCK_OK;
}

static int pair_open(struct pair *s, const char *name) {
    return pair_open_via(s, name, servers, 0, servers, 0);
}

static void pair_close(struct pair *s) {
    zklock_lock_free(s->la);
    zklock_lock_free(s->lb);
    zklock_client_free(s->a);
    zklock_client_free(s->b);
}

static void harness(const char *command) {
    if (!tu_harness(control, answers, command)) tu_current_failed = 1;
}

/* ---------------------------------------------------------------------------------------- */

static void test_status_strings(void) {
    CHECK(strncmp(zklock_status_str(ZKLOCK_OK), "ZKLOCK_OK", 9) == 0);
    int codes[] = {ZKLOCK_TIMEOUT,    ZKLOCK_CANCELLED,  ZKLOCK_LOST,
                   ZKLOCK_SESSION_EXPIRED, ZKLOCK_CONNECTION, ZKLOCK_NOT_HELD,
                   ZKLOCK_UPGRADE,    ZKLOCK_INVALID_ARGUMENT, ZKLOCK_CLOSED,
                   ZKLOCK_PERMISSION, ZKLOCK_ZOOKEEPER,  ZKLOCK_PANIC,
                   ZKLOCK_OUTCOME_UNKNOWN};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        CHECK(codes[i] < 0);
        CHECK(strncmp(zklock_status_str(codes[i]), "ZKLOCK_", 7) == 0);
    }
    CHECK(strcmp(zklock_status_str(12345), "unknown zklock status") == 0);
    /* The words fit every way the status arises (issue 27, item 14): a wrong SASL password is
     * ZKLOCK_PERMISSION, a revoke with no holder ZKLOCK_NOT_HELD. */
    CHECK(strstr(zklock_status_str(ZKLOCK_PERMISSION), "SASL") != NULL);
    CHECK(strstr(zklock_status_str(ZKLOCK_NOT_HELD), "revoke") != NULL);
    CHECK(zklock_version() != NULL && zklock_version()[0] != 0);
}

static void *other_thread_last_error(void *arg) {
    (void)arg;
    return (void *)(intptr_t)(zklock_last_error()[0] == 0);
}

static void test_last_error_is_per_thread(void) {
    zklock_lease *lease = NULL;
    CHECK(zklock_acquire(NULL, 0, &lease) == ZKLOCK_INVALID_ARGUMENT);
    CHECK(strstr(zklock_last_error(), "lock is NULL") != NULL);
    pthread_t t;
    void *empty = NULL;
    pthread_create(&t, NULL, other_thread_last_error, NULL);
    pthread_join(t, &empty);
    CHECK(empty == (void *)1);
}

static void dummy_acquire_cb(void *user, zklock_status st, zklock_lease *lease) {
    (void)user, (void)st, (void)lease;
}
static void dummy_state_cb(void *user, zklock_lease *lease, zklock_lease_state s) {
    (void)user, (void)lease, (void)s;
}

#define EXPECT_INVALID(call)                                                                   \
    do {                                                                                       \
        zklock_status st_ = (call);                                                            \
        if (st_ != ZKLOCK_INVALID_ARGUMENT || zklock_last_error()[0] == 0) {                   \
            printf("    %s gave %d (%s)\n", #call, st_, zklock_last_error());                  \
            CHECK(0);                                                                          \
        }                                                                                      \
    } while (0)

static void test_null_arguments(void) {
    char p[256];
    path_of(p, sizeof p, "nulls");
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    /* Sentinels: out-parameters are written only on success. */
    zklock_client *sc = (zklock_client *)&p;
    zklock_lock *sl = (zklock_lock *)&p, *sl2 = (zklock_lock *)&p;
    zklock_lease *sle = (zklock_lease *)&p;
    zklock_op *so = (zklock_op *)&p;
    EXPECT_INVALID(zklock_client_connect(NULL, NULL, &sc));
    EXPECT_INVALID(zklock_client_connect(servers, NULL, NULL));
    EXPECT_INVALID(zklock_mutex_new(NULL, p, NULL, &sl));
    EXPECT_INVALID(zklock_mutex_new(c, NULL, NULL, &sl));
    EXPECT_INVALID(zklock_mutex_new(c, p, NULL, NULL));
    EXPECT_INVALID(zklock_rwlock_new(NULL, p, &sl, &sl2));
    EXPECT_INVALID(zklock_rwlock_new(c, NULL, &sl, &sl2));
    EXPECT_INVALID(zklock_rwlock_new(c, p, NULL, &sl2));
    EXPECT_INVALID(zklock_rwlock_new(c, p, &sl, NULL));
    const char *paths[] = {p, NULL};
    EXPECT_INVALID(zklock_multi_new(NULL, paths, 1, &sl));
    EXPECT_INVALID(zklock_multi_new(c, NULL, 1, &sl));
    EXPECT_INVALID(zklock_multi_new(c, paths, 1, NULL));
    EXPECT_INVALID(zklock_multi_new(c, paths, 2, &sl));
    EXPECT_INVALID(zklock_multi_new(c, paths, 0, &sl));
    EXPECT_INVALID(zklock_acquire(NULL, -1, &sle));
    zklock_lock *l = NULL;
    CHECK(zklock_mutex_new(c, p, NULL, &l) == ZKLOCK_OK && l);
    EXPECT_INVALID(zklock_acquire(l, -1, NULL));
    EXPECT_INVALID(zklock_acquire_async(NULL, -1, dummy_acquire_cb, NULL, &so));
    EXPECT_INVALID(zklock_acquire_async(l, -1, NULL, NULL, &so));
    EXPECT_INVALID(zklock_acquire_async(l, -1, dummy_acquire_cb, NULL, NULL));
    EXPECT_INVALID(zklock_op_cancel(NULL));
    EXPECT_INVALID(zklock_lease_on_state(NULL, dummy_state_cb, NULL));
    EXPECT_INVALID(zklock_lease_release(NULL));
    CHECK(zklock_lease_token(NULL) == -1);
    CHECK(zklock_lease_path(NULL) == NULL);
    CHECK(zklock_lease_state_get(NULL) == ZKLOCK_LEASE_LOST);
    CHECK(strstr(zklock_last_error(), "NULL") != NULL);
    /* The _free and _init functions take NULL quietly. */
    zklock_client_free(NULL);
    zklock_lock_free(NULL);
    zklock_op_free(NULL);
    zklock_client_options_init(NULL);
    zklock_mutex_options_init(NULL);
    CHECK(sc == (zklock_client *)&p && sl == (zklock_lock *)&p && sl2 == (zklock_lock *)&p);
    CHECK(sle == (zklock_lease *)&p && so == (zklock_op *)&p);
    zklock_lock_free(l);
    zklock_client_free(c);
}

static void test_bad_arguments(void) {
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    zklock_lock *l = (zklock_lock *)&c;
    const char *bad_paths[] = {"", "relative/path", "/", "/a//b", "/a/", "/zookeeper/x", "/a/../b",
                               "/bad\xff\xfeutf8"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++) {
        EXPECT_INVALID(zklock_mutex_new(c, bad_paths[i], NULL, &l));
        zklock_lock *w = NULL;
        EXPECT_INVALID(zklock_rwlock_new(c, bad_paths[i], &l, &w));
    }
    CHECK(strstr(zklock_last_error(), "UTF-8") != NULL);
    EXPECT_INVALID(zklock_mutex_new(c, "relative", NULL, &l));
    CHECK(strstr(zklock_last_error(), "relative") != NULL);
    const char *dup[] = {"/x/a", "/x/b", "/x/a"};
    EXPECT_INVALID(zklock_multi_new(c, dup, 3, &l));
    CHECK(strstr(zklock_last_error(), "/x/a") != NULL);
    const char *badmulti[] = {"/x/a", "nope"};
    EXPECT_INVALID(zklock_multi_new(c, badmulti, 2, &l));
    CHECK(l == (zklock_lock *)&c);

    zklock_client *c2 = (zklock_client *)&c;
    const char *bad_hosts[] = {"", "   ", "host:notaport", "host:99999", "a b:2181", ",", "/chroot"};
    for (size_t i = 0; i < sizeof bad_hosts / sizeof bad_hosts[0]; i++) {
        EXPECT_INVALID(zklock_client_connect(bad_hosts[i], NULL, &c2));
    }
    CHECK(strstr(zklock_last_error(), "connect string") != NULL);

    zklock_client_options o;
    zklock_client_options_init(&o);
    CHECK(o.size == sizeof o && o.session_timeout_ms == 10000 && o.acl == ZKLOCK_ACL_OPEN);
    o.size = 0;
    EXPECT_INVALID(zklock_client_connect(servers, &o, &c2));
    CHECK(strstr(zklock_last_error(), "size") != NULL);
    zklock_client_options_init(&o);
    o.acl = 7;
    EXPECT_INVALID(zklock_client_connect(servers, &o, &c2));
    zklock_client_options_init(&o);
    o.auth = "nopassword";
    EXPECT_INVALID(zklock_client_connect(servers, &o, &c2));
    zklock_client_options_init(&o);
    o.session_timeout_ms = -5;
    EXPECT_INVALID(zklock_client_connect(servers, &o, &c2));
    zklock_client_options_init(&o);
    o.acl = ZKLOCK_ACL_CREATOR_ALL; /* needs auth */
    EXPECT_INVALID(zklock_client_connect(servers, &o, &c2));
    /* A newer caller's larger struct: unknown trailing bytes must be zero. */
    struct {
        zklock_client_options o;
        int64_t future_field;
    } bigger;
    memset(&bigger, 0, sizeof bigger);
    zklock_client_options_init(&bigger.o);
    bigger.o.size = sizeof bigger;
    bigger.future_field = 42;
    EXPECT_INVALID(zklock_client_connect(servers, &bigger.o, &c2));
    CHECK(c2 == (zklock_client *)&c);
    bigger.future_field = 0;
    zklock_client *ok = NULL;
    CHECK(zklock_client_connect(servers, &bigger.o, &ok) == ZKLOCK_OK && ok);
    zklock_client_free(ok);
    /* An older caller's smaller struct (only size and session_timeout_ms). */
    zklock_client_options_init(&o);
    o.size = offsetof(zklock_client_options, connect_timeout_ms);
    o.connect_timeout_ms = -99; /* beyond size: must be ignored */
    ok = NULL;
    CHECK(zklock_client_connect(servers, &o, &ok) == ZKLOCK_OK && ok);
    zklock_client_free(ok);

    /* Nobody listens on port 1: ZKLOCK_CONNECTION after the connect timeout. */
    zklock_client_options_init(&o);
    o.connect_timeout_ms = 500;
    int64_t t0 = now_ms();
    CHECK(zklock_client_connect("127.0.0.1:1", &o, &c2) == ZKLOCK_CONNECTION);
    CHECK(now_ms() - t0 < 5000);
    CHECK(strstr(zklock_last_error(), "127.0.0.1:1") != NULL);

    zklock_mutex_options mo;
    zklock_mutex_options_init(&mo);
    CHECK(mo.reentrancy == 0 && mo.size == sizeof mo);
    mo.reentrancy = 3; /* neither 0 nor a ZKLOCK_REENTRANCY_ constant */
    EXPECT_INVALID(zklock_mutex_new(c, "/x/y", &mo, &l));
    CHECK(strstr(zklock_last_error(), "reentrancy") != NULL);
    mo.reentrancy = 0;
    mo.size = 3;
    EXPECT_INVALID(zklock_mutex_new(c, "/x/y", &mo, &l));

    char p[256];
    path_of(p, sizeof p, "badtimeout");
    CHECK(zklock_mutex_new(c, p, NULL, &l) == ZKLOCK_OK);
    zklock_lease *lease = NULL;
    EXPECT_INVALID(zklock_acquire(l, -2, &lease));
    CHECK(strstr(zklock_last_error(), "timeout_ms") != NULL);
    zklock_op *op = NULL;
    EXPECT_INVALID(zklock_acquire_async(l, -100, dummy_acquire_cb, NULL, &op));
    CHECK(lease == NULL && op == NULL);
    zklock_lock_free(l);
    zklock_client_free(c);
}

static void test_acquire_release(void) {
    char p[256];
    path_of(p, sizeof p, "basic");
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    zklock_lock *l = NULL;
    CHECK(zklock_mutex_new(c, p, NULL, &l) == ZKLOCK_OK);
    zklock_lease *lease = NULL;
    CHECK(zklock_acquire(l, -1, &lease) == ZKLOCK_OK && lease);
    CHECK(zklock_lease_token(lease) > 0);
    const char *node = zklock_lease_path(lease);
    CHECK(node && strncmp(node, p, strlen(p)) == 0 && strstr(node, "-lock-"));
    CHECK(zklock_lease_state_get(lease) == ZKLOCK_LEASE_HELD);
    CHECK(ephemerals_under(servers, p) == 1);
    int64_t first = zklock_lease_token(lease);
    CHECK(zklock_lease_release(lease) == ZKLOCK_OK);
    CHECK(ephemerals_under(servers, p) == 0);
    CHECK(zklock_acquire(l, 1000, &lease) == ZKLOCK_OK);
    CHECK(zklock_lease_token(lease) > first);
    CHECK(zklock_lease_release(lease) == ZKLOCK_OK);
    CHECK(zklock_acquire(l, INT64_MAX, &lease) == ZKLOCK_OK); /* an absurd wait is "forever" */
    CHECK(zklock_lease_release(lease) == ZKLOCK_OK);
    zklock_lock_free(l);
    zklock_client_free(c);
}

static void test_reentrant_per_handle(void) {
    struct pair s;
    CHECK(pair_open(&s, "reentrant"));
    const char *p = s.p;
    zklock_client *a = s.a;
    zklock_lock *la = s.la, *lb = s.lb;
    zklock_lease *l1 = NULL, *l2 = NULL, *other = NULL;
    CHECK(zklock_acquire(la, -1, &l1) == ZKLOCK_OK);
    CHECK(zklock_acquire(la, 0, &l2) == ZKLOCK_OK); /* same handle, same thread: counted */
    CHECK(zklock_lease_token(l1) == zklock_lease_token(l2));
    CHECK(ephemerals_under(servers, p) == 1);
    CHECK(zklock_acquire(lb, 0, &other) == ZKLOCK_TIMEOUT && other == NULL);
    CHECK(strstr(zklock_last_error(), p) != NULL);
    CHECK(zklock_lease_release(l2) == ZKLOCK_OK);
    CHECK(zklock_acquire(lb, 0, &other) == ZKLOCK_TIMEOUT); /* still held once */
    CHECK(zklock_lease_release(l1) == ZKLOCK_OK);
    CHECK(zklock_acquire(lb, 0, &other) == ZKLOCK_OK);
    CHECK(zklock_lease_release(other) == ZKLOCK_OK);

    /* Non-re-entrant: the holder's second try waits for itself. */
    zklock_mutex_options mo;
    zklock_mutex_options_init(&mo);
    mo.reentrancy = ZKLOCK_REENTRANCY_OFF;
    zklock_lock *nr = NULL;
    CHECK(zklock_mutex_new(a, p, &mo, &nr) == ZKLOCK_OK);
    CHECK(zklock_acquire(nr, -1, &l1) == ZKLOCK_OK);
    CHECK(zklock_acquire(nr, 0, &l2) == ZKLOCK_TIMEOUT);
    CHECK(zklock_acquire(nr, 200, &l2) == ZKLOCK_TIMEOUT);
    CHECK(zklock_lease_release(l1) == ZKLOCK_OK);
    CHECK(wait_ephemerals(servers, p, 0, 2000) == 0);
    zklock_lock_free(nr);

    /* Zero means the default, as in zklock_client_options (issue 27, item 12): a zeroed struct
     * with only its size set is re-entrant, like NULL options and zklock_mutex_options_init. */
    zklock_mutex_options zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    zeroed.size = sizeof zeroed;
    zklock_lock *z = NULL;
    CHECK(zklock_mutex_new(a, p, &zeroed, &z) == ZKLOCK_OK);
    CHECK(zklock_acquire(z, -1, &l1) == ZKLOCK_OK);
    CHECK(zklock_acquire(z, 0, &l2) == ZKLOCK_OK); /* counted, not queued behind itself */
    CHECK(zklock_lease_token(l1) == zklock_lease_token(l2));
    CHECK(ephemerals_under(servers, p) == 1);
    CHECK(zklock_lease_release(l2) == ZKLOCK_OK);
    CHECK(zklock_lease_release(l1) == ZKLOCK_OK);
    zklock_lock_free(z);
    /* ZKLOCK_REENTRANCY_ON is the byte an older program's `bool reentrant = true` stored. */
    zeroed.reentrancy = ZKLOCK_REENTRANCY_ON;
    CHECK(zklock_mutex_new(a, p, &zeroed, &z) == ZKLOCK_OK);
    CHECK(zklock_acquire(z, -1, &l1) == ZKLOCK_OK);
    CHECK(zklock_acquire(z, 0, &l2) == ZKLOCK_OK);
    CHECK(zklock_lease_release(l2) == ZKLOCK_OK);
    CHECK(zklock_lease_release(l1) == ZKLOCK_OK);
    CHECK(wait_ephemerals(servers, p, 0, 2000) == 0);
    zklock_lock_free(z);
    pair_close(&s);
}

struct shared_handle {
    zklock_lock *lock;
    zklock_status status;
    int64_t elapsed;
};

static void *try_on_shared_handle(void *arg) {
    struct shared_handle *s = arg;
    zklock_lease *lease = NULL;
    int64_t t0 = now_ms();
    s->status = zklock_acquire(s->lock, 300, &lease);
    s->elapsed = now_ms() - t0;
    if (lease) zklock_lease_release(lease);
    return NULL;
}

static void test_reentrant_per_thread(void) {
    char p[256];
    path_of(p, sizeof p, "perthread");
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    zklock_lock *l = NULL;
    CHECK(zklock_mutex_new(c, p, NULL, &l) == ZKLOCK_OK);
    zklock_lease *lease = NULL;
    CHECK(zklock_acquire(l, -1, &lease) == ZKLOCK_OK);
    /* Another thread using the same handle contends. */
    struct shared_handle s = {l, ZKLOCK_OK, 0};
    pthread_t t;
    pthread_create(&t, NULL, try_on_shared_handle, &s);
    pthread_join(t, NULL);
    EXPECT(s.status == ZKLOCK_TIMEOUT);
    EXPECT(s.elapsed >= 250);
    CHECK(zklock_lease_release(lease) == ZKLOCK_OK);
    /* Free, the other thread gets it through the same handle. */
    pthread_create(&t, NULL, try_on_shared_handle, &s);
    pthread_join(t, NULL);
    CHECK(s.status == ZKLOCK_OK);
    CHECK(wait_ephemerals(servers, p, 0, 2000) == 0);
    zklock_lock_free(l);
    zklock_client_free(c);
}

/* Many short-lived threads on one handle: each has its own re-entrancy, and the handle forgets
 * the idle ones (no growth without bound); a thread's re-entrancy survives the pruning. */
static void *acquire_release_once(void *arg) {
    zklock_lock *l = arg;
    zklock_lease *a = NULL, *b = NULL;
    intptr_t ok = zklock_acquire(l, 10000, &a) == ZKLOCK_OK && zklock_acquire(l, 0, &b) == ZKLOCK_OK &&
                  zklock_lease_token(a) == zklock_lease_token(b);
    if (b) ok &= zklock_lease_release(b) == ZKLOCK_OK;
    if (a) ok &= zklock_lease_release(a) == ZKLOCK_OK;
    return (void *)ok;
}

static void test_many_threads_one_handle(void) {
    char p[256];
    path_of(p, sizeof p, "manythreads");
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    zklock_lock *l = NULL;
    CHECK(zklock_mutex_new(c, p, NULL, &l) == ZKLOCK_OK);
    zklock_lease *mine = NULL, *again = NULL;
    CHECK(zklock_acquire(l, -1, &mine) == ZKLOCK_OK);
    CHECK(zklock_lease_release(mine) == ZKLOCK_OK);
    for (int i = 0; i < 40; i++) {
        pthread_t t;
        void *ok = NULL;
        pthread_create(&t, NULL, acquire_release_once, l);
        pthread_join(t, &ok);
        CHECK(ok == (void *)1);
    }
    CHECK(zklock_acquire(l, -1, &mine) == ZKLOCK_OK);
    CHECK(zklock_acquire(l, 0, &again) == ZKLOCK_OK); /* still re-entrant for this thread */
    CHECK(zklock_lease_release(again) == ZKLOCK_OK);
    CHECK(zklock_lease_release(mine) == ZKLOCK_OK);
    CHECK(wait_ephemerals(servers, p, 0, 2000) == 0);
    zklock_lock_free(l);
    zklock_client_free(c);
}

/* 8 threads x ROUNDS blocking acquires, one handle per thread: never two inside, tokens rise. */
#define THREADS 8
static atomic_int inside;
static atomic_int overlaps;
static atomic_int token_errors;
static atomic_int acquire_errors;
static int64_t last_token; /* only touched while holding the ZooKeeper lock */
static zklock_client *contention_client;
static char contention_path[256];

static void *contend(void *arg) {
    (void)arg;
    zklock_lock *l = NULL;
    if (zklock_mutex_new(contention_client, contention_path, NULL, &l) != ZKLOCK_OK) {
        atomic_fetch_add(&acquire_errors, 1);
        return NULL;
    }
    for (int i = 0; i < rounds; i++) {
        zklock_lease *lease = NULL;
        zklock_status st = zklock_acquire(l, 60000, &lease);
        if (st != ZKLOCK_OK) {
            printf("    acquire failed: %s: %s\n", zklock_status_str(st), zklock_last_error());
            atomic_fetch_add(&acquire_errors, 1);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0) atomic_fetch_add(&overlaps, 1);
        int64_t token = zklock_lease_token(lease);
        if (token <= last_token) atomic_fetch_add(&token_errors, 1);
        last_token = token;
        atomic_fetch_sub(&inside, 1);
        if (zklock_lease_release(lease) != ZKLOCK_OK) atomic_fetch_add(&acquire_errors, 1);
    }
    zklock_lock_free(l);
    return NULL;
}

static void test_contention_threads(void) {
    path_of(contention_path, sizeof contention_path, "contend");
    contention_client = connect_to(servers, 0);
    CHECK(contention_client);
    pthread_t t[THREADS];
    int64_t t0 = now_ms();
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, contend, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("    %d threads x %d acquires in %lld ms, last token %lld\n", THREADS, rounds,
           (long long)(now_ms() - t0), (long long)last_token);
    EXPECT(atomic_load(&overlaps) == 0);
    EXPECT(atomic_load(&token_errors) == 0);
    EXPECT(atomic_load(&acquire_errors) == 0);
    EXPECT(ephemerals_under(servers, contention_path) == 0);
    zklock_client_free(contention_client);
}

struct async_result {
    tu_event done;
    void *user_seen;
    zklock_status status;
    zklock_lease *lease;
    int64_t token;
    zklock_status release_status;
    int release_in_callback;
    char message[256];
    int calls;
};

static void async_cb(void *user, zklock_status status, zklock_lease *lease) {
    struct async_result *r = user;
    r->user_seen = user;
    r->status = status;
    r->calls++;
    snprintf(r->message, sizeof r->message, "%s", status == ZKLOCK_OK ? "" : zklock_last_error());
    if (lease) r->token = zklock_lease_token(lease);
    if (lease && r->release_in_callback) {
        r->release_status = zklock_lease_release(lease); /* calling back into the library */
        lease = NULL;
    }
    r->lease = lease;
    tu_event_set(&r->done);
}

static void async_init(struct async_result *r, int release_in_callback) {
    memset(r, 0, sizeof *r);
    tu_event_init(&r->done);
    r->status = 99;
    r->release_status = 99;
    r->release_in_callback = release_in_callback;
}

static void test_async_acquire(void) {
    char p[256];
    path_of(p, sizeof p, "async");
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    zklock_lock *l = NULL;
    CHECK(zklock_mutex_new(c, p, NULL, &l) == ZKLOCK_OK);
    struct async_result r;
    async_init(&r, 1);
    zklock_op *op = NULL;
    CHECK(zklock_acquire_async(l, 5000, async_cb, &r, &op) == ZKLOCK_OK && op);
    CHECK(tu_event_wait(&r.done, 1, 10000) == 1);
    CHECK(r.user_seen == &r);
    CHECK(r.status == ZKLOCK_OK);
    CHECK(r.token > 0);
    CHECK(r.release_status == ZKLOCK_OK);
    CHECK(ephemerals_under(servers, p) == 0);
    CHECK(zklock_op_cancel(op) == ZKLOCK_OK); /* after completion: harmless */
    /* Queue position: 0 once ended (it held at once); NULLs refused, the out-param untouched. */
    uint32_t position = 77;
    CHECK(zklock_op_position(op, &position) == ZKLOCK_OK && position == 0);
    position = 77;
    CHECK(zklock_op_position(NULL, &position) == ZKLOCK_INVALID_ARGUMENT && position == 77);
    CHECK(zklock_op_position(op, NULL) == ZKLOCK_INVALID_ARGUMENT);
    CHECK(zklock_op_on_queued(op, NULL, NULL) == ZKLOCK_INVALID_ARGUMENT);
    zklock_op_free(op);
    sleep_ms(100);
    CHECK(r.calls == 1);
    tu_event_destroy(&r.done);

    /* Freeing the op at once does not cancel; the callback still comes. */
    async_init(&r, 0);
    CHECK(zklock_acquire_async(l, -1, async_cb, &r, &op) == ZKLOCK_OK);
    zklock_op_free(op);
    CHECK(tu_event_wait(&r.done, 1, 10000) == 1);
    CHECK(r.status == ZKLOCK_OK && r.lease);
    CHECK(zklock_lease_release(r.lease) == ZKLOCK_OK);
    tu_event_destroy(&r.done);
    zklock_lock_free(l);
    zklock_client_free(c);
}

static void test_async_try_and_timeout_while_held(void) {
    struct pair s;
    CHECK(pair_open(&s, "asynctry"));
    const char *p = s.p;
    zklock_lock *la = s.la, *lb = s.lb;
    zklock_lease *held = NULL, *none = NULL;
    CHECK(zklock_acquire(la, -1, &held) == ZKLOCK_OK);
    /* Blocking try and timed wait. */
    CHECK(zklock_acquire(lb, 0, &none) == ZKLOCK_TIMEOUT && none == NULL);
    int64_t t0 = now_ms();
    CHECK(zklock_acquire(lb, 300, &none) == ZKLOCK_TIMEOUT && none == NULL);
    CHECK(now_ms() - t0 >= 250);
    CHECK(wait_ephemerals(servers, p, 1, 2000) == 1); /* the timed-out attempt's node is gone */
    /* Async try (timeout 0) reports ZKLOCK_TIMEOUT through the callback. */
    struct async_result r;
    async_init(&r, 0);
    zklock_op *op = NULL;
    CHECK(zklock_acquire_async(lb, 0, async_cb, &r, &op) == ZKLOCK_OK);
    CHECK(tu_event_wait(&r.done, 1, 10000) == 1);
    CHECK(r.status == ZKLOCK_TIMEOUT && r.lease == NULL && r.user_seen == &r);
    CHECK(r.message[0] != 0);
    zklock_op_free(op);
    tu_event_destroy(&r.done);
    /* Async with a deadline. */
    async_init(&r, 0);
    t0 = now_ms();
    CHECK(zklock_acquire_async(lb, 300, async_cb, &r, &op) == ZKLOCK_OK);
    CHECK(tu_event_wait(&r.done, 1, 10000) == 1);
    CHECK(r.status == ZKLOCK_TIMEOUT && now_ms() - t0 >= 250);
    zklock_op_free(op);
    tu_event_destroy(&r.done);
    CHECK(wait_ephemerals(servers, p, 1, 2000) == 1);
    CHECK(zklock_lease_release(held) == ZKLOCK_OK);
    pair_close(&s);
}

static void test_async_cancel_leaves_no_node(void) {
    struct pair s;
    CHECK(pair_open(&s, "cancel"));
    const char *p = s.p;
    zklock_lock *la = s.la, *lb = s.lb;
    zklock_lease *held = NULL;
    CHECK(zklock_acquire(la, -1, &held) == ZKLOCK_OK);
    struct async_result r;
    async_init(&r, 0);
    zklock_op *op = NULL;
    CHECK(zklock_acquire_async(lb, -1, async_cb, &r, &op) == ZKLOCK_OK);
    CHECK(wait_ephemerals(servers, p, 2, 5000) == 2); /* the waiter's node is there */
    CHECK(r.calls == 0);
    CHECK(zklock_op_cancel(op) == ZKLOCK_OK);
    CHECK(zklock_op_cancel(op) == ZKLOCK_OK); /* twice is fine */
    CHECK(tu_event_wait(&r.done, 1, 10000) == 1);
    CHECK(r.status == ZKLOCK_CANCELLED && r.lease == NULL && r.user_seen == &r);
    CHECK(strstr(r.message, "cancel") != NULL);
    CHECK(wait_ephemerals(servers, p, 1, 3000) == 1); /* only the holder's node is left */
    CHECK(zklock_lease_release(held) == ZKLOCK_OK);
    CHECK(ephemerals_under(servers, p) == 0);
    /* And the lock is free for the next one at once. */
    zklock_lease *next = NULL;
    CHECK(zklock_acquire(lb, 0, &next) == ZKLOCK_OK);
    CHECK(zklock_lease_release(next) == ZKLOCK_OK);
    zklock_op_free(op);
    tu_event_destroy(&r.done);
    pair_close(&s);
}

static void test_rwlock(void) {
    char p[256];
    path_of(p, sizeof p, "rw");
    zklock_client *a = connect_to(servers, 0), *b = connect_to(servers, 0), *c = connect_to(servers, 0);
    CHECK(a && b && c);
    zklock_lock *ra = NULL, *wa = NULL, *rb = NULL, *wb = NULL, *rc = NULL, *wc = NULL;
    CHECK(zklock_rwlock_new(a, p, &ra, &wa) == ZKLOCK_OK && ra && wa);
    CHECK(zklock_rwlock_new(b, p, &rb, &wb) == ZKLOCK_OK && rb && wb);
    CHECK(zklock_rwlock_new(c, p, &rc, &wc) == ZKLOCK_OK && rc && wc);
    zklock_lease *r1 = NULL, *r2 = NULL, *w = NULL, *x = NULL;
    CHECK(zklock_acquire(ra, -1, &r1) == ZKLOCK_OK);
    CHECK(strstr(zklock_lease_path(r1), "__READ__") != NULL);
    CHECK(zklock_acquire(rb, 0, &r2) == ZKLOCK_OK); /* readers share */
    CHECK(zklock_acquire(wc, 0, &x) == ZKLOCK_TIMEOUT);
    CHECK(zklock_acquire(wa, -1, &w) == ZKLOCK_UPGRADE); /* at once, no deadlock */
    CHECK(strstr(zklock_last_error(), "upgrade") != NULL);
    CHECK(zklock_lease_release(r1) == ZKLOCK_OK);
    CHECK(zklock_lease_release(r2) == ZKLOCK_OK);
    CHECK(zklock_acquire(wa, 5000, &w) == ZKLOCK_OK);
    CHECK(strstr(zklock_lease_path(w), "__WRIT__") != NULL);
    CHECK(zklock_acquire(rb, 0, &x) == ZKLOCK_TIMEOUT);
    CHECK(zklock_acquire(wc, 0, &x) == ZKLOCK_TIMEOUT);
    CHECK(zklock_acquire(ra, 0, &r1) == ZKLOCK_OK); /* downgrade: the writer may read */
    CHECK(zklock_lease_release(w) == ZKLOCK_OK);
    CHECK(zklock_acquire(wc, 0, &x) == ZKLOCK_TIMEOUT); /* our read still holds */
    CHECK(zklock_acquire(rb, 5000, &r2) == ZKLOCK_OK);  /* and other readers may join */
    CHECK(zklock_lease_release(r2) == ZKLOCK_OK);
    CHECK(zklock_lease_release(r1) == ZKLOCK_OK);
    CHECK(zklock_acquire(wc, 5000, &x) == ZKLOCK_OK);
    CHECK(zklock_lease_release(x) == ZKLOCK_OK);
    CHECK(wait_ephemerals(servers, p, 0, 2000) == 0);
    zklock_lock_free(ra);
    zklock_lock_free(wa);
    zklock_lock_free(rb);
    zklock_lock_free(wb);
    zklock_lock_free(rc);
    zklock_lock_free(wc);
    zklock_client_free(a);
    zklock_client_free(b);
    zklock_client_free(c);
}

static void test_multi_lock(void) {
    char p1[256], p2[256];
    path_of(p1, sizeof p1, "multi-b");
    path_of(p2, sizeof p2, "multi-a");
    zklock_client *a = connect_to(servers, 0), *b = connect_to(servers, 0);
    CHECK(a && b);
    const char *paths[] = {p1, p2};
    zklock_lock *m = NULL, *single = NULL;
    CHECK(zklock_multi_new(a, paths, 2, &m) == ZKLOCK_OK && m);
    CHECK(zklock_mutex_new(b, p1, NULL, &single) == ZKLOCK_OK);
    zklock_lease *ml = NULL, *sl = NULL;
    CHECK(zklock_acquire(m, 5000, &ml) == ZKLOCK_OK);
    CHECK(zklock_lease_token(ml) > 0);
    CHECK(strncmp(zklock_lease_path(ml), p2, strlen(p2)) == 0); /* path order: multi-a first */
    CHECK(ephemerals_under(servers, p1) == 1 && ephemerals_under(servers, p2) == 1);
    CHECK(zklock_acquire(single, 0, &sl) == ZKLOCK_TIMEOUT);
    CHECK(zklock_lease_release(ml) == ZKLOCK_OK);
    CHECK(ephemerals_under(servers, p1) == 0 && ephemerals_under(servers, p2) == 0);
    /* All or nothing: with one member held elsewhere, a timed-out multi leaves no node. */
    CHECK(zklock_acquire(single, 0, &sl) == ZKLOCK_OK);
    CHECK(zklock_acquire(m, 300, &ml) == ZKLOCK_TIMEOUT);
    CHECK(wait_ephemerals(servers, p2, 0, 2000) == 0);
    CHECK(ephemerals_under(servers, p1) == 1);
    CHECK(zklock_lease_release(sl) == ZKLOCK_OK);
    zklock_lock_free(m);
    zklock_lock_free(single);
    zklock_client_free(a);
    zklock_client_free(b);
}

struct state_log {
    tu_event lost;
    atomic_int held, suspended, lost_count, calls_after_release;
    atomic_int released;
    zklock_status release_status;
    zklock_lease *expected;
    int release_on_lost;
};

static void state_cb(void *user, zklock_lease *lease, zklock_lease_state state) {
    struct state_log *s = user;
    if (atomic_load(&s->released)) atomic_fetch_add(&s->calls_after_release, 1);
    if (lease != s->expected) return;
    switch (state) {
    case ZKLOCK_LEASE_HELD: atomic_fetch_add(&s->held, 1); break;
    case ZKLOCK_LEASE_SUSPENDED: atomic_fetch_add(&s->suspended, 1); break;
    case ZKLOCK_LEASE_LOST:
        atomic_fetch_add(&s->lost_count, 1);
        if (s->release_on_lost) {
            s->release_status = zklock_lease_release(lease); /* from inside the callback */
            atomic_store(&s->released, 1);
        }
        tu_event_set(&s->lost);
        break;
    default: break;
    }
}

/* A log expecting the states of `lease` (see state_cb). */
static void state_log_start(struct state_log *s, zklock_lease *lease) {
    memset(s, 0, sizeof *s);
    tu_event_init(&s->lost);
    s->expected = lease;
}

/* A fresh client on `hosts` holding a mutex on the fresh path `p` (named `name`). */
static int one_lease(char p[256], const char *name, const char *hosts, int64_t session_ms,
                     zklock_client **c, zklock_lock **l, zklock_lease **lease) {
    path_of(p, 256, name);
    *l = NULL;
    *lease = NULL;
    *c = connect_to(hosts, session_ms);
    return *c && zklock_mutex_new(*c, p, NULL, l) == ZKLOCK_OK &&
           zklock_acquire(*l, -1, lease) == ZKLOCK_OK;
}

static void test_client_free_makes_leases_lost(void) {
    char p[256];
    zklock_client *c;
    zklock_lock *l;
    zklock_lease *lease;
    CHECK(one_lease(p, "closed", servers, 0, &c, &l, &lease));
    zklock_client_free(c);
    CHECK(zklock_lease_state_get(lease) == ZKLOCK_LEASE_LOST);
    /* A callback registered on a lease that is already lost hears LOST at once, once. */
    struct state_log s;
    state_log_start(&s, lease);
    CHECK(zklock_lease_on_state(lease, state_cb, &s) == ZKLOCK_OK);
    CHECK(tu_event_wait(&s.lost, 1, 5000) == 1);
    sleep_ms(200);
    CHECK(atomic_load(&s.lost_count) == 1);
    tu_event_destroy(&s.lost);
    zklock_lease *again = NULL;
    CHECK(zklock_acquire(l, 0, &again) == ZKLOCK_CLOSED && again == NULL);
    CHECK(zklock_lease_release(lease) == ZKLOCK_LOST); /* freed all the same */
    CHECK(wait_ephemerals(servers, p, 0, 3000) == 0);
    zklock_lock_free(l);
}

/* Freeing the client ends a waiting async acquire with ZKLOCK_CLOSED (and its node). */
static void test_client_free_ends_waiting_async(void) {
    struct pair s;
    CHECK(pair_open(&s, "closewait"));
    const char *p = s.p;
    zklock_client *a = s.a, *b = s.b;
    zklock_lock *la = s.la, *lb = s.lb;
    zklock_lease *held = NULL;
    CHECK(zklock_acquire(la, -1, &held) == ZKLOCK_OK);
    struct async_result r;
    async_init(&r, 0);
    zklock_op *op = NULL;
    CHECK(zklock_acquire_async(lb, -1, async_cb, &r, &op) == ZKLOCK_OK);
    CHECK(wait_ephemerals(servers, p, 2, 5000) == 2);
    zklock_client_free(b);
    CHECK(tu_event_wait(&r.done, 1, 10000) == 1);
    CHECK(r.status == ZKLOCK_CLOSED && r.lease == NULL);
    CHECK(wait_ephemerals(servers, p, 1, 5000) == 1);
    CHECK(zklock_lease_release(held) == ZKLOCK_OK);
    zklock_op_free(op);
    tu_event_destroy(&r.done);
    zklock_lock_free(la);
    zklock_lock_free(lb);
    zklock_client_free(a);
}

static void test_state_callback_not_called_after_release(void) {
    char p[256];
    zklock_client *c;
    zklock_lock *l;
    zklock_lease *lease;
    CHECK(one_lease(p, "statequiet", servers, 0, &c, &l, &lease));
    struct state_log s;
    state_log_start(&s, lease);
    CHECK(zklock_lease_on_state(lease, state_cb, &s) == ZKLOCK_OK);
    CHECK(zklock_lease_on_state(lease, NULL, NULL) == ZKLOCK_OK); /* removed */
    CHECK(zklock_lease_on_state(lease, state_cb, &s) == ZKLOCK_OK); /* and back */
    CHECK(zklock_lease_release(lease) == ZKLOCK_OK);
    zklock_client_free(c); /* would make a still-registered lease lost */
    sleep_ms(300);
    CHECK(atomic_load(&s.lost_count) == 0 && atomic_load(&s.suspended) == 0);
    tu_event_destroy(&s.lost);
    zklock_lock_free(l);
}

/* Item (issue 13): a state callback hears the lease's current state first (the core's
 * subscription), then changes: HELD once at registration, LOST once when the client goes. */
static void test_a_state_callback_hears_the_current_state_first(void) {
    char p[256];
    zklock_client *c;
    zklock_lock *l;
    zklock_lease *lease;
    CHECK(one_lease(p, "statefirst", servers, 0, &c, &l, &lease));
    struct state_log s;
    state_log_start(&s, lease);
    CHECK(zklock_lease_on_state(lease, state_cb, &s) == ZKLOCK_OK);
    int64_t until = now_ms() + 5000;
    while (atomic_load(&s.held) == 0 && now_ms() < until) sleep_ms(10);
    CHECK(atomic_load(&s.held) == 1 && atomic_load(&s.lost_count) == 0);
    zklock_client_free(c);
    CHECK(tu_event_wait(&s.lost, 1, 5000) == 1);
    sleep_ms(200);
    CHECK(atomic_load(&s.held) == 1 && atomic_load(&s.lost_count) == 1);
    CHECK(zklock_lease_release(lease) == ZKLOCK_LOST);
    tu_event_destroy(&s.lost);
    zklock_lock_free(l);
}

/* Session expiry: the holder talks through the fault proxy with a 2 s session; a blackhole
 * makes its lease suspended, then lost (client side, after the session timeout); the state
 * callback reports LOST once and releases the lease from inside the callback. */
static void test_lost_on_session_expiry(void) {
    char p[256];
    path_of(p, sizeof p, "expiry");
    zklock_client *holder = connect_to(proxy, 2000);
    zklock_client *other = connect_to(servers, 0);
    CHECK(holder && other);
    zklock_lock *l = NULL, *lo = NULL;
    CHECK(zklock_mutex_new(holder, p, NULL, &l) == ZKLOCK_OK);
    CHECK(zklock_mutex_new(other, p, NULL, &lo) == ZKLOCK_OK);
    zklock_lease *lease = NULL, *next = NULL;
    CHECK(zklock_acquire(l, -1, &lease) == ZKLOCK_OK);
    int64_t token = zklock_lease_token(lease);
    static struct state_log s;
    state_log_start(&s, lease);
    s.release_on_lost = 1;
    s.release_status = 99;
    CHECK(zklock_lease_on_state(lease, state_cb, &s) == ZKLOCK_OK);
    harness("blackhole");
    int64_t t0 = now_ms();
    int fired = tu_event_wait(&s.lost, 1, 20000);
    printf("    lost after %lld ms (suspended reported %d times)\n", (long long)(now_ms() - t0),
           atomic_load(&s.suspended));
    EXPECT(fired == 1);
    sleep_ms(1500); /* nothing more may come */
    harness("heal");
    EXPECT(atomic_load(&s.lost_count) == 1);
    EXPECT(atomic_load(&s.suspended) >= 1);
    EXPECT(atomic_load(&s.calls_after_release) == 0);
    EXPECT(s.release_status == ZKLOCK_LOST || s.release_status == ZKLOCK_OK);
    /* The server ends the dead session; then the lock is someone else's, with a larger token. */
    EXPECT(zklock_acquire(lo, 30000, &next) == ZKLOCK_OK);
    if (next) {
        EXPECT(zklock_lease_token(next) > token);
        EXPECT(zklock_lease_release(next) == ZKLOCK_OK);
    }
    /* The holder's client opens a fresh session on its next acquire. */
    EXPECT(zklock_acquire(l, 20000, &next) == ZKLOCK_OK);
    if (next) EXPECT(zklock_lease_release(next) == ZKLOCK_OK);
    tu_event_destroy(&s.lost);
    zklock_lock_free(l);
    zklock_lock_free(lo);
    zklock_client_free(holder);
    zklock_client_free(other);
}

/* A known, different last error (to see that the next call sets its own). */
static void set_last_error_to_something_else(void) {
    zklock_lease *unused = NULL;
    (void)zklock_acquire(NULL, 0, &unused);
}

/* Item: a second zklock_lease_release (or any use of a freed handle) is reported as
 * ZKLOCK_INVALID_ARGUMENT, without touching freed memory (valgrind runs this too). */
static void test_a_freed_handle_passed_again_is_an_invalid_argument(void) {
    char p[256];
    path_of(p, sizeof p, "double-free");
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    zklock_lock *l = NULL;
    CHECK(zklock_mutex_new(c, p, NULL, &l) == ZKLOCK_OK);
    zklock_lease *lease = NULL;
    CHECK(zklock_acquire(l, 5000, &lease) == ZKLOCK_OK);
    /* A handle of another kind is refused too. */
    EXPECT_INVALID(zklock_lease_release((zklock_lease *)(void *)l));
    CHECK(strstr(zklock_last_error(), "zklock_lock, not a zklock_lease") != NULL);
    CHECK(zklock_lease_release(lease) == ZKLOCK_OK);
    /* The same lease again: detected, no crash. */
    EXPECT_INVALID(zklock_lease_release(lease));
    CHECK(strstr(zklock_last_error(), "not a live zklock_lease") != NULL);
    CHECK(strstr(zklock_last_error(), "zklock_lease_release") != NULL);
    CHECK(zklock_lease_token(lease) == -1);
    CHECK(zklock_lease_path(lease) == NULL);
    CHECK(zklock_lease_state_get(lease) == ZKLOCK_LEASE_LOST);
    EXPECT_INVALID(zklock_lease_on_state(lease, dummy_state_cb, NULL));
    CHECK(ephemerals_under(servers, p) == 0);
    /* An op freed, then cancelled or freed again. */
    struct async_result r;
    async_init(&r, 1);
    zklock_op *op = NULL;
    CHECK(zklock_acquire_async(l, 5000, async_cb, &r, &op) == ZKLOCK_OK);
    CHECK(tu_event_wait(&r.done, 1, 10000) == 1);
    zklock_op_free(op);
    EXPECT_INVALID(zklock_op_cancel(op));
    CHECK(strstr(zklock_last_error(), "not a live zklock_op") != NULL);
    set_last_error_to_something_else();
    zklock_op_free(op);
    CHECK(strstr(zklock_last_error(), "not a live zklock_op") != NULL);
    tu_event_destroy(&r.done);
    /* A lock and a client freed twice; a freed lock or client used again. */
    zklock_lock_free(l);
    set_last_error_to_something_else();
    zklock_lock_free(l);
    CHECK(strstr(zklock_last_error(), "not a live zklock_lock") != NULL);
    zklock_lease *none = NULL;
    EXPECT_INVALID(zklock_acquire(l, 0, &none));
    CHECK(none == NULL);
    zklock_client_free(c);
    set_last_error_to_something_else();
    zklock_client_free(c);
    CHECK(strstr(zklock_last_error(), "not a live zklock_client") != NULL);
    EXPECT_INVALID(zklock_mutex_new(c, p, NULL, &l));
}

/* Item: each client has its own callback thread. Client A's state callback sleeps 3 s in its
 * LOST notification; client B's LOST still arrives while A's callback sleeps. */
struct slow_cb {
    tu_event started, lost;
    int sleep_ms;
    _Atomic int64_t started_at, ended_at, lost_at;
};

static void slow_state_cb(void *user, zklock_lease *lease, zklock_lease_state state) {
    (void)lease;
    struct slow_cb *s = user;
    if (state != ZKLOCK_LEASE_LOST) return;
    atomic_store(&s->lost_at, now_ms());
    tu_event_set(&s->lost);
    if (s->sleep_ms) {
        atomic_store(&s->started_at, now_ms());
        tu_event_set(&s->started);
        sleep_ms(s->sleep_ms);
        atomic_store(&s->ended_at, now_ms());
    }
}

/* How many threads of this process are zklock client callback threads ("zklock-cb"). */
static int callback_threads(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return -1;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(comm, sizeof comm, f) && strcmp(comm, "zklock-cb\n") == 0) count++;
        fclose(f);
    }
    closedir(dir);
    return count;
}

static void test_a_slow_callback_of_one_client_does_not_delay_another_clients_lost(void) {
    char pa[256], pb[256];
    path_of(pa, sizeof pa, "slow-cb-a");
    path_of(pb, sizeof pb, "slow-cb-b");
    /* Earlier tests' callback threads end once their last callbacks ran: let them. */
    int threads_before = callback_threads();
    for (int64_t until = now_ms() + 3000; now_ms() < until; sleep_ms(50)) {
        int n = callback_threads();
        if (n == threads_before && n == 0) break;
        threads_before = n;
    }
    zklock_client *a = connect_to(servers, 0), *b = connect_to(servers, 0);
    CHECK(a && b);
    /* A new thread names itself as it starts: give it a moment. */
    int threads_with_ab = callback_threads();
    for (int64_t until = now_ms() + 3000; threads_with_ab < threads_before + 2 && now_ms() < until;
         sleep_ms(20))
        threads_with_ab = callback_threads();
    printf("    callback threads: %d before, %d with two more clients\n", threads_before, threads_with_ab);
    EXPECT(threads_with_ab == threads_before + 2); /* one per client */
    zklock_lock *la = NULL, *lb = NULL;
    CHECK(zklock_mutex_new(a, pa, NULL, &la) == ZKLOCK_OK);
    CHECK(zklock_mutex_new(b, pb, NULL, &lb) == ZKLOCK_OK);
    zklock_lease *lease_a = NULL, *lease_b = NULL;
    CHECK(zklock_acquire(la, 5000, &lease_a) == ZKLOCK_OK);
    CHECK(zklock_acquire(lb, 5000, &lease_b) == ZKLOCK_OK);
    static struct slow_cb sa, sb;
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    tu_event_init(&sa.started);
    tu_event_init(&sa.lost);
    tu_event_init(&sb.started);
    tu_event_init(&sb.lost);
    sa.sleep_ms = 3000;
    CHECK(zklock_lease_on_state(lease_a, slow_state_cb, &sa) == ZKLOCK_OK);
    CHECK(zklock_lease_on_state(lease_b, slow_state_cb, &sb) == ZKLOCK_OK);
    zklock_client_free(a); /* A's lease is lost: its callback starts sleeping */
    CHECK(tu_event_wait(&sa.started, 1, 10000) == 1);
    int64_t t0 = now_ms();
    zklock_client_free(b); /* B's lease is lost: its LOST must not wait for A's callback */
    EXPECT(tu_event_wait(&sb.lost, 1, 10000) == 1);
    int64_t lost_b = atomic_load(&sb.lost_at);
    printf("    B's LOST came %lld ms after its client was freed; A's callback was asleep for "
           "another %lld ms then\n",
           (long long)(lost_b - t0), (long long)(atomic_load(&sa.started_at) + sa.sleep_ms - lost_b));
    EXPECT(lost_b > 0 && atomic_load(&sa.ended_at) == 0); /* A's callback still sleeps */
    EXPECT(lost_b - t0 < 1500);
    EXPECT(zklock_lease_release(lease_b) == ZKLOCK_LOST);
    /* Waits for A's running callback, then frees the lease. */
    EXPECT(zklock_lease_release(lease_a) == ZKLOCK_LOST);
    EXPECT(atomic_load(&sa.ended_at) > 0);
    zklock_lock_free(la);
    zklock_lock_free(lb);
    /* Everything made from the two clients is freed: their callback threads end. */
    int64_t until = now_ms() + 5000;
    while (callback_threads() != threads_before && now_ms() < until) sleep_ms(20);
    EXPECT(callback_threads() == threads_before);
    tu_event_destroy(&sa.started);
    tu_event_destroy(&sa.lost);
    tu_event_destroy(&sb.started);
    tu_event_destroy(&sb.lost);
}

/* Issue 57: a client freed on one thread while its connection callback runs on the client's
 * callback thread. zklock_client_free waits for the running call to end, and no call starts
 * after it returned (the callback's user data may be freed right away). */
struct busy_connection_cb {
    tu_event started;
    _Atomic int calls;
    _Atomic int64_t ended_at;
};

static void busy_connection_cb(void *user, zklock_client *client, zklock_connection_state state) {
    (void)client;
    (void)state;
    struct busy_connection_cb *s = user;
    if (atomic_fetch_add(&s->calls, 1) == 0) {
        tu_event_set(&s->started);
        sleep_ms(400);
        atomic_store(&s->ended_at, now_ms());
    }
}

static void test_freeing_a_client_while_its_connection_callback_runs_waits_for_it_and_none_runs_after(void) {
    static struct busy_connection_cb s;
    memset(&s, 0, sizeof s);
    tu_event_init(&s.started);
    zklock_client *c = connect_to(servers, 0);
    CHECK(c);
    CHECK(zklock_client_on_connection(c, busy_connection_cb, &s) == ZKLOCK_OK);
    CHECK(tu_event_wait(&s.started, 1, 10000) == 1); /* the current state, heard on the callback thread */
    zklock_client_free(c);
    int64_t freed_at = now_ms();
    int calls_at_free = atomic_load(&s.calls);
    printf("    the running callback ended %lld ms before zklock_client_free returned\n",
           (long long)(freed_at - atomic_load(&s.ended_at)));
    EXPECT(atomic_load(&s.ended_at) > 0 && atomic_load(&s.ended_at) <= freed_at);
    sleep_ms(300); /* a LOST for the closed session, if one were still to come, comes now */
    EXPECT(atomic_load(&s.calls) == calls_at_free);
    tu_event_destroy(&s.started);
}

/* Item (valgrind report in acquire_until): clients freed while async acquires are in flight --
 * some still starting, some queued behind a holder -- end each acquire with ZKLOCK_CLOSED and
 * leave no node; valgrind checks the memory on the way. */
static void test_clients_freed_with_async_acquires_in_flight_end_them_cleanly(void) {
    struct pair s;
    CHECK(pair_open(&s, "free-in-flight"));
    zklock_lease *held = NULL;
    CHECK(zklock_acquire(s.la, -1, &held) == ZKLOCK_OK);
    int n = rounds < 10 ? rounds : 10;
    for (int i = 0; i < n; i++) {
        zklock_client *c = connect_to(servers, 0);
        CHECK(c);
        zklock_lock *l = NULL;
        CHECK(zklock_mutex_new(c, s.p, NULL, &l) == ZKLOCK_OK);
        struct async_result r;
        async_init(&r, 1);
        zklock_op *op = NULL;
        CHECK(zklock_acquire_async(l, i % 2 ? 30000 : -1, async_cb, &r, &op) == ZKLOCK_OK);
        if (i % 3 == 2) CHECK(wait_ephemerals(servers, s.p, 2, 5000) == 2); /* queued */
        zklock_client_free(c);                                               /* else: starting */
        EXPECT(tu_event_wait(&r.done, 1, 10000) == 1);
        EXPECT(r.status == ZKLOCK_CLOSED && r.lease == NULL);
        zklock_op_free(op);
        zklock_lock_free(l);
        tu_event_destroy(&r.done);
    }
    EXPECT(wait_ephemerals(servers, s.p, 1, 5000) == 1);
    EXPECT(zklock_lease_release(held) == ZKLOCK_OK);
    pair_close(&s);
}

/* Issue 12: what the core promises under a black hole holds through the C face too. */

/* Time bounds are stretched tenfold under valgrind (it runs this program too). */
static int64_t bound_ms(int64_t ms) {
    const char *preload = getenv("LD_PRELOAD");
    return preload && strstr(preload, "vgpreload") ? ms * 10 : ms;
}

struct timed_result {
    tu_event done;
    _Atomic int64_t at_ms;
    atomic_int status;
    zklock_lease *lease;
};

static void timed_acquire_cb(void *user, zklock_status status, zklock_lease *lease) {
    struct timed_result *r = user;
    atomic_store(&r->at_ms, now_ms());
    atomic_store(&r->status, (int)status);
    r->lease = lease;
    tu_event_set(&r->done);
}

struct lost_at {
    tu_event lost;
    _Atomic int64_t at_ms;
};

static void lost_at_cb(void *user, zklock_lease *lease, zklock_lease_state state) {
    (void)lease;
    struct lost_at *l = user;
    if (state == ZKLOCK_LEASE_LOST) {
        atomic_store(&l->at_ms, now_ms());
        tu_event_set(&l->lost);
    }
}

/* A holder behind the black-holed proxy hears LOST before a client on a healthy link is given
 * the lock (3 rounds, session timeout 2 s); the margins are printed. */
static void test_a_black_holed_holder_hears_lost_before_another_client_acquires(void) {
    for (int round = 0; round < 3; round++) {
        /* a: the holder, behind the proxy; b: the other client, on a healthy link. */
        struct pair s;
        CHECK(pair_open_via(&s, "partition", proxy, 2000, servers, 2000));
        zklock_lease *held = NULL;
        CHECK(zklock_acquire(s.la, -1, &held) == ZKLOCK_OK);
        static struct lost_at lost;
        memset(&lost, 0, sizeof lost);
        tu_event_init(&lost.lost);
        CHECK(zklock_lease_on_state(held, lost_at_cb, &lost) == ZKLOCK_OK);
        static struct timed_result next;
        memset(&next, 0, sizeof next);
        tu_event_init(&next.done);
        zklock_op *op = NULL;
        CHECK(zklock_acquire_async(s.lb, 30000, timed_acquire_cb, &next, &op) == ZKLOCK_OK);
        sleep_ms(300); /* queued behind the holder */
        harness("blackhole");
        EXPECT(tu_event_wait(&next.done, 1, 30000) == 1);
        EXPECT(tu_event_wait(&lost.lost, 1, 30000) == 1);
        EXPECT(atomic_load(&next.status) == ZKLOCK_OK);
        int64_t margin = atomic_load(&next.at_ms) - atomic_load(&lost.at_ms);
        printf("    round %d: LOST %lld ms before the other client acquired\n", round + 1,
               (long long)margin);
        EXPECT(margin > 0);
        harness("heal");
        if (next.lease) EXPECT(zklock_lease_release(next.lease) == ZKLOCK_OK);
        (void)zklock_lease_release(held); /* ZKLOCK_LOST: freed anyway */
        zklock_op_free(op);
        pair_close(&s);
        tu_event_destroy(&lost.lost);
        tu_event_destroy(&next.done);
    }
}

/* A try and a short timeout settle on time while the link is black (they took 15 s). */
static void test_a_try_and_a_timeout_settle_on_time_while_the_link_is_black(void) {
    char p[256];
    path_of(p, sizeof p, "outage-try");
    zklock_client *c = connect_to(proxy, 10000);
    CHECK(c);
    zklock_lock *l = NULL;
    CHECK(zklock_mutex_new(c, p, NULL, &l) == ZKLOCK_OK);
    harness("blackhole");
    zklock_lease *lease = NULL;
    int64_t t0 = now_ms();
    zklock_status tried = zklock_acquire(l, 0, &lease);
    int64_t took_try = now_ms() - t0;
    t0 = now_ms();
    zklock_status timed = zklock_acquire(l, 500, &lease);
    int64_t took_timeout = now_ms() - t0;
    harness("heal");
    printf("    try settled in %lld ms, a 500 ms timeout in %lld ms\n", (long long)took_try,
           (long long)took_timeout);
    EXPECT(tried == ZKLOCK_TIMEOUT && took_try <= bound_ms(500));
    EXPECT(timed == ZKLOCK_TIMEOUT && took_timeout <= bound_ms(850));
    EXPECT(lease == NULL);
    zklock_lock_free(l);
    zklock_client_free(c);
}

/* zklock_op_cancel during an outage calls back with ZKLOCK_CANCELLED at once (it took 13.7 s and
 * reported SESSION_EXPIRED). */
static void test_an_async_cancel_settles_at_once_while_the_link_is_black(void) {
    /* a: a holder on a healthy link; b: the client under test, behind the proxy. */
    struct pair s;
    CHECK(pair_open_via(&s, "outage-cancel", servers, 0, proxy, 10000));
    zklock_lease *held = NULL;
    CHECK(zklock_acquire(s.la, -1, &held) == ZKLOCK_OK);
    static struct timed_result r;
    memset(&r, 0, sizeof r);
    tu_event_init(&r.done);
    zklock_op *op = NULL;
    CHECK(zklock_acquire_async(s.lb, -1, timed_acquire_cb, &r, &op) == ZKLOCK_OK);
    sleep_ms(300);
    harness("blackhole");
    sleep_ms(200);
    int64_t t0 = now_ms();
    EXPECT(zklock_op_cancel(op) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&r.done, 1, 20000) == 1);
    int64_t took = atomic_load(&r.at_ms) - t0;
    printf("    cancel called back after %lld ms with %s\n", (long long)took,
           zklock_status_str(atomic_load(&r.status)));
    harness("heal");
    EXPECT(atomic_load(&r.status) == ZKLOCK_CANCELLED);
    EXPECT(took <= bound_ms(500));
    EXPECT(zklock_lease_release(held) == ZKLOCK_OK);
    zklock_op_free(op);
    pair_close(&s);
    tu_event_destroy(&r.done);
}

/* ---------------------------------------------------------------------------------------- */
/* Observing locks (issue 18): stats, the log callback, guarded writes. */

static zklock_stats stats_of(zklock_client *c) {
    zklock_stats st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    if (zklock_client_stats(c, &st) != ZKLOCK_OK) printf("    stats: %s\n", zklock_last_error());
    return st;
}

static void test_stats_count_acquires_by_outcome_and_what_is_held_and_waiting_now(void) {
    struct pair s;
    CHECK(pair_open(&s, "stats"));
    zklock_stats st = stats_of(s.b);
    CHECK(st.size == sizeof st && st.acquired == 0 && st.timed_out == 0);
    zklock_lease *held = NULL, *mine = NULL;
    CHECK(zklock_acquire(s.la, -1, &held) == ZKLOCK_OK);
    CHECK(zklock_acquire(s.lb, 0, &mine) == ZKLOCK_TIMEOUT);
    CHECK(zklock_acquire(s.lb, 200, &mine) == ZKLOCK_TIMEOUT);
    struct async_result r;
    async_init(&r, 0);
    zklock_op *op = NULL;
    CHECK(zklock_acquire_async(s.lb, -1, async_cb, &r, &op) == ZKLOCK_OK);
    int64_t until = now_ms() + 10000;
    while (stats_of(s.b).waiting != 1 && now_ms() < until) sleep_ms(10);
    CHECK(stats_of(s.b).waiting == 1);
    CHECK(zklock_op_cancel(op) == ZKLOCK_OK);
    CHECK(tu_event_wait(&r.done, 1, 10000) == 1 && r.status == ZKLOCK_CANCELLED);
    zklock_op_free(op);
    tu_event_destroy(&r.done);
    CHECK(zklock_lease_release(held) == ZKLOCK_OK);
    CHECK(zklock_acquire(s.lb, 10000, &mine) == ZKLOCK_OK);
    st = stats_of(s.b);
    EXPECT(st.acquired == 1 && st.timed_out == 2 && st.cancelled == 1 && st.failed == 0);
    EXPECT(st.held == 1 && st.waiting == 0 && st.wait.count == 1);
    EXPECT(st.wait.p50_us <= st.wait.max_us && st.wait.p99_us <= st.wait.max_us);
    sleep_ms(50);
    CHECK(zklock_lease_release(mine) == ZKLOCK_OK);
    st = stats_of(s.b);
    EXPECT(st.held == 0 && st.hold.count == 1 && st.hold.max_us >= 50000);
    EXPECT(stats_of(s.a).acquired == 1);
    /* A caller built against an older, smaller zklock_stats gets only the fields that fit. */
    struct {
        zklock_stats st;
        uint64_t canary;
    } old;
    memset(&old, 0xAB, sizeof old);
    old.st.size = offsetof(zklock_stats, wait);
    CHECK(zklock_client_stats(s.b, &old.st) == ZKLOCK_OK);
    EXPECT(old.st.acquired == 1 && old.st.timed_out == 2);
    EXPECT(old.st.wait.count == 0xABABABABABABABABull && old.canary == 0xABABABABABABABABull);
    /* A size ending inside a field (12: `size` and half of `acquired`) writes only whole
     * fields: `acquired` keeps the caller's bytes, not half a counter (issue 27, item 14). */
    memset(&old, 0xAB, sizeof old);
    old.st.size = offsetof(zklock_stats, acquired) + 4;
    CHECK(zklock_client_stats(s.b, &old.st) == ZKLOCK_OK);
    EXPECT(old.st.size == offsetof(zklock_stats, acquired) + 4);
    EXPECT(old.st.acquired == 0xABABABABABABABABull);
    /* One whole field more than `wait.count`: wait.count is written, wait.p50_us is not. */
    memset(&old, 0xAB, sizeof old);
    old.st.size = offsetof(zklock_stats, wait) + sizeof(uint64_t) + 3;
    CHECK(zklock_client_stats(s.b, &old.st) == ZKLOCK_OK);
    EXPECT(old.st.wait.count != 0xABABABABABABABABull);
    EXPECT((uint64_t)old.st.wait.p50_us == 0xABABABABABABABABull);
    zklock_stats tiny = {.size = 1};
    EXPECT(zklock_client_stats(s.b, &tiny) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_client_stats(s.b, NULL) == ZKLOCK_INVALID_ARGUMENT);
    pair_close(&s);
}

/* What the log callback heard: one line per record, "level event fields". */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[65536];

static void log_cb(void *user, int level, const char *event, const char *message,
                   const char *fields) {
    (void)message;
    pthread_mutex_lock(&log_mu);
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof log_text - n, "%d %s %s|", level, event, fields);
    pthread_mutex_unlock(&log_mu);
    (void)user;
}

static int log_has(int level, const char *event, const char *needle) {
    pthread_mutex_lock(&log_mu);
    int found = 0;
    char *rec = log_text;
    while (!found && rec && *rec) {
        char *end = strchr(rec, '|');
        char saved = end ? *end : 0;
        if (end) *end = 0;
        char head[64];
        snprintf(head, sizeof head, "%d %s ", level, event);
        found = strncmp(rec, head, strlen(head)) == 0 && strstr(rec, needle) != NULL;
        if (end) *end = saved;
        rec = end ? end + 1 : NULL;
    }
    pthread_mutex_unlock(&log_mu);
    return found;
}

static void test_a_black_holed_holder_counts_lost_logs_it_at_warn_and_its_guarded_write_does_not_apply(
    void) {
    log_text[0] = 0;
    CHECK(zklock_set_log_callback(ZKLOCK_LOG_DEBUG, log_cb, NULL) == ZKLOCK_OK);
    struct pair s;
    CHECK(pair_open_via(&s, "guardedlost", proxy, 2000, servers, 0));
    char data[300], data2[310];
    snprintf(data, sizeof data, "%s-data", s.p);
    snprintf(data2, sizeof data2, "%s-2", data);
    zklock_lease *lease = NULL;
    CHECK(zklock_acquire(s.la, -1, &lease) == ZKLOCK_OK);
    zklock_write create = {"create", data, "one", 3, 0};
    CHECK(zklock_lease_guarded_write(lease, &create, 1) == ZKLOCK_OK);
    harness("blackhole");
    int64_t until = now_ms() + 20000;
    while (zklock_lease_state_get(lease) != ZKLOCK_LEASE_LOST && now_ms() < until) sleep_ms(20);
    EXPECT(zklock_lease_state_get(lease) == ZKLOCK_LEASE_LOST);
    zklock_write after[2] = {{"set_data", data, "two", 3, 0}, {"create", data2, NULL, 0, 0}};
    EXPECT(zklock_lease_guarded_write(lease, after, 2) == ZKLOCK_LOST);
    harness("heal");
    /* The lease reads LOST the moment its state flips; the counters follow on the thread that
     * flipped it (observe::lease_state, then end_hold), which a loaded machine can stall
     * between the two: wait for them, as for the log below. */
    zklock_stats st = stats_of(s.a);
    until = now_ms() + 10000;
    while (!(st.lost == 1 && st.held == 0) && now_ms() < until) {
        sleep_ms(20);
        st = stats_of(s.a);
    }
    EXPECT(st.lost == 1 && st.held == 0 && st.suspended >= 1 && st.session_expiries == 1);
    (void)zklock_lease_release(lease);
    /* Nothing of the batch applied: "-2" can still be created, and "data" deleted. */
    zklock_lease *check = NULL;
    CHECK(zklock_acquire(s.lb, 10000, &check) == ZKLOCK_OK);
    zklock_write cleanup[4] = {{"set_data", data, "seen", 4, 0}, {"create", data2, NULL, 0, 0},
                               {"delete", data2, NULL, 0, 0}, {"delete", data, NULL, 0, 0}};
    EXPECT(zklock_lease_guarded_write(check, cleanup, 4) == ZKLOCK_OK);
    EXPECT(cleanup[0].version == 1 && cleanup[1].version == -1); /* "two" never applied */
    CHECK(zklock_lease_release(check) == ZKLOCK_OK);
    until = now_ms() + 10000;
    while (!log_has(ZKLOCK_LOG_WARN, "state", "state=lost") && now_ms() < until) sleep_ms(20);
    EXPECT(log_has(ZKLOCK_LOG_WARN, "state", "state=lost"));
    EXPECT(log_has(ZKLOCK_LOG_DEBUG, "acquire", "outcome=acquired"));
    EXPECT(log_has(ZKLOCK_LOG_WARN, "session", "event=expired"));
    CHECK(zklock_set_log_callback(ZKLOCK_LOG_DEBUG, NULL, NULL) == ZKLOCK_OK);
    EXPECT(zklock_set_log_callback(7, log_cb, NULL) == ZKLOCK_INVALID_ARGUMENT);
    pair_close(&s);
}

static void test_a_failing_guarded_write_applies_nothing_and_bad_writes_are_invalid(void) {
    char p[256];
    zklock_client *c;
    zklock_lock *l;
    zklock_lease *lease;
    CHECK(one_lease(p, "guardedbad", servers, 0, &c, &l, &lease));
    char data[300];
    snprintf(data, sizeof data, "%s-data", p);
    zklock_write fails[2] = {{"create", data, "a", 1, 0},
                             {"delete", "/zklock-c-no/such/node", NULL, 0, 0}};
    EXPECT(zklock_lease_guarded_write(lease, fails, 2) == ZKLOCK_ZOOKEEPER);
    EXPECT(strstr(zklock_last_error(), "delete") != NULL);
    zklock_write ok[2] = {{"create", data, "a", 1, 0}, {"delete", data, NULL, 0, 0}};
    EXPECT(zklock_lease_guarded_write(lease, ok, 2) == ZKLOCK_OK); /* "data" did not exist */
    zklock_write unknown = {"append", data, "a", 1, 0};
    EXPECT(zklock_lease_guarded_write(lease, &unknown, 1) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_lease_guarded_write(lease, NULL, 1) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_lease_guarded_write(lease, NULL, 0) == ZKLOCK_OK); /* only the check */
    CHECK(zklock_lease_release(lease) == ZKLOCK_OK);
    zklock_lock_free(l);
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
    const char *r = getenv("ZKLOCK_TEST_ROUNDS");
    if (r && atoi(r) > 0) rounds = atoi(r);
    snprintf(base, sizeof base, "/zklock-c-test/%ld-%ld", (long)getpid(), (long)time(NULL));
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("zklock %s against %s (proxy %s)\n", zklock_version(), servers, proxy);

    RUN(test_status_strings);
    RUN(test_last_error_is_per_thread);
    RUN(test_null_arguments);
    RUN(test_bad_arguments);
    RUN(test_acquire_release);
    RUN(test_reentrant_per_handle);
    RUN(test_reentrant_per_thread);
    RUN(test_many_threads_one_handle);
    RUN(test_contention_threads);
    RUN(test_async_acquire);
    RUN(test_async_try_and_timeout_while_held);
    RUN(test_async_cancel_leaves_no_node);
    RUN(test_rwlock);
    RUN(test_multi_lock);
    RUN(test_client_free_makes_leases_lost);
    RUN(test_client_free_ends_waiting_async);
    RUN(test_state_callback_not_called_after_release);
    RUN(test_a_state_callback_hears_the_current_state_first);
    RUN(test_lost_on_session_expiry);
    RUN(test_a_black_holed_holder_hears_lost_before_another_client_acquires);
    RUN(test_a_try_and_a_timeout_settle_on_time_while_the_link_is_black);
    RUN(test_an_async_cancel_settles_at_once_while_the_link_is_black);
    RUN(test_a_freed_handle_passed_again_is_an_invalid_argument);
    RUN(test_a_slow_callback_of_one_client_does_not_delay_another_clients_lost);
    RUN(test_freeing_a_client_while_its_connection_callback_runs_waits_for_it_and_none_runs_after);
    RUN(test_clients_freed_with_async_acquires_in_flight_end_them_cleanly);
    RUN(test_stats_count_acquires_by_outcome_and_what_is_held_and_waiting_now);
    RUN(test_a_black_holed_holder_counts_lost_logs_it_at_warn_and_its_guarded_write_does_not_apply);
    RUN(test_a_failing_guarded_write_applies_nothing_and_bad_writes_are_invalid);
    return tu_summary();
}
