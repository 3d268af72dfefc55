/* Leader election through the C API (issue 25), against a real ZooKeeper:
 *
 *   test_election SERVERS
 *
 * Handover, requeue, mixed layouts (ZKLOCK_CONFLICT naming the foreign node), the leader
 * observer, sequencer checks, the maximum hold (read/write sides included), the lock-delay,
 * zklock_lease_valid_for_ms and bad input. Run
 * by bindings-c/ci-test.sh, also under valgrind (no errors, no leaks). Last line:
 * `N passed, N failed`.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../include/zklock.h"
/* testutil.h has helpers this program does not use */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "testutil.h"

static const char *servers;
static char base[128];

static zklock_client *connect_client(const char *identity) {
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.identity = identity;
    zklock_client *c = NULL;
    if (zklock_client_connect(servers, &opts, &c) != ZKLOCK_OK) return NULL;
    return c;
}

static void path_of(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", base, name); }

static zklock_participant participant(void) {
    zklock_participant p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    return p;
}

/* The id of the first participant of a list, or "none". */
static const char *first_id(zklock_participants *list, char *buf, size_t n) {
    zklock_participant p = participant();
    if (zklock_participants_count(list) == 0 || zklock_participants_get(list, 0, &p) != ZKLOCK_OK)
        snprintf(buf, n, "none");
    else
        snprintf(buf, n, "%s", p.id);
    return buf;
}

/* An async lead's (or requeue's) completion. */
struct done {
    tu_event ev;
    zklock_status status;
    zklock_lease *lease;
};

static void done_cb(void *user, zklock_status status, zklock_lease *lease) {
    struct done *d = user;
    d->status = status;
    d->lease = lease;
    tu_event_set(&d->ev);
}

static void test_handover_between_two_clients_with_rising_tokens(void) {
    char path[256], buf[64];
    path_of(path, sizeof path, "handover");
    zklock_client *c1 = connect_client("c1"), *c2 = connect_client("c2");
    CHECK(c1 && c2);
    zklock_election *a = NULL, *b = NULL;
    CHECK(zklock_election_new(c1, path, "selector", "a", -1, &a) == ZKLOCK_OK);
    CHECK(zklock_election_new(c2, path, NULL, "b", -1, &b) == ZKLOCK_OK);
    EXPECT(strcmp(zklock_election_style(a), "selector") == 0);
    EXPECT(strcmp(zklock_election_style(b), "latch") == 0); /* NULL style: latch */
    EXPECT(strcmp(zklock_election_id(a), "a") == 0);
    zklock_election_free(b);
    CHECK(zklock_election_new(c2, path, "selector", "b", -1, &b) == ZKLOCK_OK);
    zklock_lease *la = NULL;
    CHECK(zklock_election_lead(a, 10000, &la) == ZKLOCK_OK);
    int64_t ta = zklock_lease_token(la);
    zklock_lease *lb = NULL;
    EXPECT(zklock_election_lead(b, 0, &lb) == ZKLOCK_TIMEOUT); /* a try while a leads */
    EXPECT(lb == NULL);
    struct done d = {0};
    tu_event_init(&d.ev);
    zklock_op *op = NULL;
    CHECK(zklock_election_lead_async(b, -1, done_cb, &d, &op) == ZKLOCK_OK);
    sleep_ms(200);
    EXPECT(d.ev.fired == 0);
    EXPECT(zklock_election_resign(a, la, false, NULL, NULL, NULL) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&d.ev, 1, 10000) == 1);
    EXPECT(d.status == ZKLOCK_OK && d.lease);
    if (d.lease) {
        EXPECT(zklock_lease_token(d.lease) > ta);
        zklock_participants *leader = NULL;
        EXPECT(zklock_election_leader(a, &leader) == ZKLOCK_OK);
        EXPECT(strcmp(first_id(leader, buf, sizeof buf), "b") == 0);
        zklock_participant p = participant();
        EXPECT(zklock_participants_get(leader, 0, &p) == ZKLOCK_OK);
        EXPECT(p.token == zklock_lease_token(d.lease));
        EXPECT(p.style && strcmp(p.style, "selector") == 0);
        EXPECT(strcmp(p.library, "zklock") == 0 && strcmp(p.kind, "mutex") == 0);
        EXPECT(strcmp(p.node, zklock_lease_path(d.lease)) == 0);
        EXPECT(zklock_participants_get(leader, 1, &p) == ZKLOCK_INVALID_ARGUMENT);
        zklock_participants_free(leader);
        EXPECT(zklock_election_resign(b, d.lease, false, NULL, NULL, NULL) == ZKLOCK_OK);
    }
    zklock_op_free(op);
    tu_event_destroy(&d.ev);
    zklock_election_free(a);
    zklock_election_free(b);
    zklock_client_free(c1);
    zklock_client_free(c2);
}

static void test_cancel_an_async_lead(void) {
    char path[256];
    path_of(path, sizeof path, "cancel");
    zklock_client *c = connect_client("c");
    CHECK(c);
    zklock_election *a = NULL, *b = NULL;
    CHECK(zklock_election_new(c, path, "kazoo", "a", -1, &a) == ZKLOCK_OK);
    CHECK(zklock_election_new(c, path, "kazoo", "b", -1, &b) == ZKLOCK_OK);
    zklock_lease *la = NULL;
    CHECK(zklock_election_lead(a, 10000, &la) == ZKLOCK_OK);
    struct done d = {0};
    tu_event_init(&d.ev);
    zklock_op *op = NULL;
    EXPECT(zklock_election_lead_async(b, -1, done_cb, &d, &op) == ZKLOCK_OK);
    sleep_ms(200);
    EXPECT(zklock_op_cancel(op) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&d.ev, 1, 10000) == 1);
    EXPECT(d.status == ZKLOCK_CANCELLED && d.lease == NULL);
    zklock_participants *list = NULL;
    EXPECT(zklock_election_participants(a, &list) == ZKLOCK_OK);
    EXPECT(zklock_participants_count(list) == 1); /* the cancelled node is gone */
    zklock_participants_free(list);
    zklock_op_free(op);
    tu_event_destroy(&d.ev);
    EXPECT(zklock_election_resign(a, la, false, NULL, NULL, NULL) == ZKLOCK_OK);
    zklock_election_free(a);
    zklock_election_free(b);
    zklock_client_free(c);
}

static void test_resign_with_requeue_hands_over_and_reenters_at_the_tail(void) {
    char path[256], buf[64];
    path_of(path, sizeof path, "requeue");
    zklock_client *c1 = connect_client("c1"), *c2 = connect_client("c2");
    CHECK(c1 && c2);
    zklock_election *a = NULL, *b = NULL;
    CHECK(zklock_election_new(c1, path, "latch", "a", -1, &a) == ZKLOCK_OK);
    CHECK(zklock_election_new(c2, path, "latch", "b", -1, &b) == ZKLOCK_OK);
    zklock_lease *la = NULL;
    CHECK(zklock_election_lead(a, 10000, &la) == ZKLOCK_OK);
    struct done db = {0}, dagain = {0};
    tu_event_init(&db.ev);
    tu_event_init(&dagain.ev);
    zklock_op *opb = NULL, *again = NULL;
    EXPECT(zklock_election_lead_async(b, -1, done_cb, &db, &opb) == ZKLOCK_OK);
    for (int i = 0; i < 100; i++) {
        zklock_participants *list = NULL;
        size_t n = zklock_election_participants(a, &list) == ZKLOCK_OK ? zklock_participants_count(list) : 0;
        zklock_participants_free(list);
        if (n == 2) break;
        sleep_ms(50);
    }
    /* requeue needs its callback and op */
    EXPECT(zklock_election_resign(a, la, true, NULL, NULL, &again) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_resign(a, la, true, done_cb, &dagain, &again) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&db.ev, 1, 10000) == 1 && db.status == ZKLOCK_OK);
    sleep_ms(300);
    zklock_participants *list = NULL;
    EXPECT(zklock_election_participants(a, &list) == ZKLOCK_OK);
    char order[64] = "";
    for (size_t i = 0; i < zklock_participants_count(list); i++) {
        zklock_participant p = participant();
        if (zklock_participants_get(list, i, &p) != ZKLOCK_OK) break;
        size_t n = strlen(order);
        snprintf(order + n, sizeof order - n, "%s%s", i ? "," : "", p.id);
    }
    zklock_participants_free(list);
    EXPECT(strcmp(order, "b,a") == 0);
    EXPECT(dagain.ev.fired == 0); /* a waits behind b */
    if (db.lease) EXPECT(zklock_election_resign(b, db.lease, false, NULL, NULL, NULL) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&dagain.ev, 1, 10000) == 1 && dagain.status == ZKLOCK_OK);
    zklock_participants *leader = NULL;
    EXPECT(zklock_election_leader(b, &leader) == ZKLOCK_OK);
    EXPECT(strcmp(first_id(leader, buf, sizeof buf), "a") == 0);
    zklock_participants_free(leader);
    if (dagain.lease) EXPECT(zklock_election_resign(a, dagain.lease, false, NULL, NULL, NULL) == ZKLOCK_OK);
    zklock_op_free(opb);
    zklock_op_free(again);
    tu_event_destroy(&db.ev);
    tu_event_destroy(&dagain.ev);
    zklock_election_free(a);
    zklock_election_free(b);
    zklock_client_free(c1);
    zklock_client_free(c2);
}

static void test_mixed_layouts_conflict_and_name_the_foreign_node(void) {
    char path[256];
    path_of(path, sizeof path, "mixed");
    zklock_client *c1 = connect_client("c1"), *c2 = connect_client("c2");
    CHECK(c1 && c2);
    zklock_election *latch = NULL, *selector = NULL, *kazoo = NULL;
    CHECK(zklock_election_new(c1, path, "latch", "l", -1, &latch) == ZKLOCK_OK);
    CHECK(zklock_election_new(c2, path, "selector", "s", -1, &selector) == ZKLOCK_OK);
    CHECK(zklock_election_new(c2, path, "kazoo", "k", -1, &kazoo) == ZKLOCK_OK);
    zklock_lease *ll = NULL, *ls = (zklock_lease *)0, *lk = NULL;
    CHECK(zklock_election_lead(latch, 10000, &ll) == ZKLOCK_OK);
    char node[512];
    snprintf(node, sizeof node, "%s", strrchr(zklock_lease_path(ll), '/') + 1);
    EXPECT(zklock_election_lead(selector, 0, &ls) == ZKLOCK_CONFLICT);
    EXPECT(ls == NULL);
    EXPECT(strstr(zklock_last_error(), node) != NULL);
    EXPECT(zklock_election_lead(kazoo, 5000, &lk) == ZKLOCK_CONFLICT);
    EXPECT(strstr(zklock_last_error(), node) != NULL);
    zklock_participants *list = NULL;
    EXPECT(zklock_election_participants(selector, &list) == ZKLOCK_OK);
    EXPECT(zklock_participants_count(list) == 1); /* the refused nodes are gone */
    zklock_participants_free(list);
    EXPECT(strcmp(zklock_status_str(ZKLOCK_CONFLICT), "") != 0);
    EXPECT(strncmp(zklock_status_str(ZKLOCK_CONFLICT), "ZKLOCK_CONFLICT", 15) == 0);
    EXPECT(zklock_election_resign(latch, ll, false, NULL, NULL, NULL) == ZKLOCK_OK);
    zklock_election_free(latch);
    zklock_election_free(selector);
    zklock_election_free(kazoo);
    zklock_client_free(c1);
    zklock_client_free(c2);
}

static void test_observer_reports_leader_changes_and_no_leader(void) {
    char path[256], buf[64];
    path_of(path, sizeof path, "observe");
    zklock_client *c1 = connect_client("c1"), *c2 = connect_client("c2");
    CHECK(c1 && c2);
    zklock_leader_watch *w = NULL;
    CHECK(zklock_leader_watch_new(c1, path, &w) == ZKLOCK_OK);
    zklock_participants *seen = NULL;
    EXPECT(zklock_leader_watch_next(w, 10000, &seen) == ZKLOCK_OK);
    EXPECT(strcmp(first_id(seen, buf, sizeof buf), "none") == 0);
    zklock_participants_free(seen);
    seen = NULL;
    EXPECT(zklock_leader_watch_next(w, 300, &seen) == ZKLOCK_TIMEOUT); /* nothing changed */
    EXPECT(seen == NULL);
    zklock_election *e = NULL;
    CHECK(zklock_election_new(c2, path, "latch", "x", -1, &e) == ZKLOCK_OK);
    zklock_lease *l = NULL;
    CHECK(zklock_election_lead(e, 10000, &l) == ZKLOCK_OK);
    EXPECT(zklock_leader_watch_next(w, 10000, &seen) == ZKLOCK_OK);
    EXPECT(strcmp(first_id(seen, buf, sizeof buf), "x") == 0);
    zklock_participants_free(seen);
    seen = NULL;
    EXPECT(zklock_election_proclaim(e, l, "new-id", 6) == ZKLOCK_OK);
    zklock_participants *leader = NULL;
    EXPECT(zklock_election_leader(e, &leader) == ZKLOCK_OK);
    EXPECT(strcmp(first_id(leader, buf, sizeof buf), "new-id") == 0);
    zklock_participants_free(leader);
    EXPECT(zklock_election_resign(e, l, false, NULL, NULL, NULL) == ZKLOCK_OK);
    EXPECT(zklock_leader_watch_next(w, 10000, &seen) == ZKLOCK_OK);
    EXPECT(strcmp(first_id(seen, buf, sizeof buf), "none") == 0);
    zklock_participants_free(seen);
    zklock_leader_watch_free(w);
    zklock_election_free(e);
    zklock_client_free(c1);
    zklock_client_free(c2);
}

static void test_check_passes_the_current_token_only(void) {
    char path[256];
    path_of(path, sizeof path, "check");
    zklock_client *c1 = connect_client("c1"), *c2 = connect_client("c2");
    CHECK(c1 && c2);
    zklock_election *e = NULL;
    CHECK(zklock_election_new(c1, path, "latch", NULL, -1, &e) == ZKLOCK_OK);
    EXPECT(strcmp(zklock_election_id(e), "c1") == 0); /* NULL id: the client's identity */
    zklock_lease *l = NULL;
    CHECK(zklock_election_lead(e, 10000, &l) == ZKLOCK_OK);
    int64_t token = zklock_lease_token(l);
    int ok = -1;
    EXPECT(zklock_check(c2, path, token, 0, &ok) == ZKLOCK_OK && ok == 1);
    EXPECT(zklock_check(c2, path, token - 1, 0, &ok) == ZKLOCK_OK && ok == 0);
    ok = -1;
    EXPECT(zklock_check(c2, path, token, -3, &ok) == ZKLOCK_INVALID_ARGUMENT && ok == -1);
    EXPECT(zklock_check(c2, path, token, 0, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_resign(e, l, false, NULL, NULL, NULL) == ZKLOCK_OK);
    EXPECT(zklock_check(c2, path, token, 0, &ok) == ZKLOCK_OK && ok == 0);
    zklock_election_free(e);
    zklock_client_free(c1);
    zklock_client_free(c2);
}

static void test_max_hold_ends_a_lease_and_a_leadership(void) {
    char path[256], lpath[256];
    path_of(path, sizeof path, "maxhold-election");
    path_of(lpath, sizeof lpath, "maxhold-lock");
    zklock_client *c = connect_client("c");
    CHECK(c);
    zklock_lock *m = NULL;
    CHECK(zklock_mutex_new(c, lpath, NULL, &m) == ZKLOCK_OK);
    EXPECT(zklock_lock_set_max_hold(m, 0) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_lock_set_max_hold(m, -2) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_lock_set_max_hold(m, -1) == ZKLOCK_OK);
    EXPECT(zklock_lock_set_max_hold(m, 300) == ZKLOCK_OK);
    zklock_lease *l = NULL;
    CHECK(zklock_acquire(m, 10000, &l) == ZKLOCK_OK);
    EXPECT(zklock_lease_lost_reason(l) == NULL);
    for (int i = 0; i < 50 && zklock_lease_state_get(l) != ZKLOCK_LEASE_LOST; i++) sleep_ms(100);
    EXPECT(zklock_lease_state_get(l) == ZKLOCK_LEASE_LOST);
    const char *reason = zklock_lease_lost_reason(l);
    EXPECT(reason && strstr(reason, "max-hold"));
    int64_t left = -7;
    EXPECT(zklock_lease_valid_for_ms(l, &left) == ZKLOCK_LOST && left == -7);
    EXPECT(strstr(zklock_last_error(), "max-hold") != NULL);
    EXPECT(zklock_lease_release(l) == ZKLOCK_LOST);
    zklock_lock *r = NULL, *w = NULL;
    CHECK(zklock_rwlock_new(c, lpath, &r, &w) == ZKLOCK_OK);
    EXPECT(zklock_lock_set_max_hold(r, 1000) == ZKLOCK_INVALID_ARGUMENT);
    /* Both sides at once, read side first, as Python's rw_lock(max_hold=) and Node's. */
    EXPECT(zklock_rwlock_set_max_hold(w, r, 300) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_rwlock_set_max_hold(r, r, 300) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_rwlock_set_max_hold(r, m, 300) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_rwlock_set_max_hold(r, w, 0) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_rwlock_set_max_hold(r, w, 300) == ZKLOCK_OK);
    CHECK(zklock_acquire(w, 10000, &l) == ZKLOCK_OK);
    EXPECT(zklock_rwlock_set_max_hold(r, w, -1) == ZKLOCK_INVALID_ARGUMENT); /* while held */
    for (int i = 0; i < 50 && zklock_lease_state_get(l) != ZKLOCK_LEASE_LOST; i++) sleep_ms(100);
    reason = zklock_lease_lost_reason(l);
    EXPECT(reason && strstr(reason, "max-hold"));
    EXPECT(zklock_lease_release(l) == ZKLOCK_LOST);
    zklock_lock_free(r);
    zklock_lock_free(w);
    zklock_lock_free(m);

    zklock_election *e = NULL;
    EXPECT(zklock_election_new(c, path, "selector", "a", 0, &e) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(e == NULL);
    CHECK(zklock_election_new(c, path, "selector", "a", 300, &e) == ZKLOCK_OK);
    zklock_lease *lead = NULL;
    CHECK(zklock_election_lead(e, 10000, &lead) == ZKLOCK_OK);
    for (int i = 0; i < 50 && zklock_lease_state_get(lead) != ZKLOCK_LEASE_LOST; i++) sleep_ms(100);
    reason = zklock_lease_lost_reason(lead);
    EXPECT(reason && strstr(reason, "max-hold"));
    zklock_participants *list = NULL;
    EXPECT(zklock_election_participants(e, &list) == ZKLOCK_OK);
    EXPECT(zklock_participants_count(list) == 0); /* its node deleted */
    zklock_participants_free(list);
    EXPECT(zklock_election_resign(e, lead, false, NULL, NULL, NULL) == ZKLOCK_LOST);
    zklock_election_free(e);
    zklock_client_free(c);
}

/* Chubby's lock-delay on an election (issue 37, point 2): a leader broken by a third client
 * costs the waiting successor the delay; a clean resign (both with a delay far longer than
 * the test) hands over without it. */
static void test_lock_delay_after_a_break_and_none_after_a_resign(void) {
    char path[256], clean[256];
    path_of(path, sizeof path, "lock-delay");
    path_of(clean, sizeof clean, "lock-delay-clean");
    zklock_client *c1 = connect_client("c1"), *c2 = connect_client("c2"), *c3 = connect_client("c3");
    CHECK(c1 && c2 && c3);
    const int64_t delay = 1500, long_delay = 120000;
    zklock_election *a = NULL, *b = NULL;
    CHECK(zklock_election_new(c1, path, "latch", "a", -1, &a) == ZKLOCK_OK);
    CHECK(zklock_election_new(c2, path, "latch", "b", -1, &b) == ZKLOCK_OK);
    EXPECT(zklock_election_set_lock_delay(a, 0) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_set_lock_delay(a, -2) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_set_lock_delay(NULL, delay) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_set_lock_delay(a, -1) == ZKLOCK_OK);
    CHECK(zklock_election_set_lock_delay(a, delay) == ZKLOCK_OK);
    CHECK(zklock_election_set_lock_delay(b, delay) == ZKLOCK_OK);
    zklock_lease *la = NULL;
    CHECK(zklock_election_lead(a, 10000, &la) == ZKLOCK_OK);
    struct done d = {0};
    tu_event_init(&d.ev);
    zklock_op *op = NULL;
    CHECK(zklock_election_lead_async(b, -1, done_cb, &d, &op) == ZKLOCK_OK);
    zklock_participants *list = NULL;
    for (int i = 0; i < 600; i++) { /* b's node is queued behind a's (60 s at most) */
        size_t n = 0;
        if (zklock_election_participants(a, &list) == ZKLOCK_OK) n = zklock_participants_count(list);
        zklock_participants_free(list);
        list = NULL;
        if (n >= 2) break;
        sleep_ms(100);
    }
    const char *name = strrchr(zklock_lease_path(la), '/') + 1;
    int64_t before_break = now_ms();
    EXPECT(zklock_break_lock(c3, path, name, "test", &list) == ZKLOCK_OK);
    zklock_participants_free(list);
    EXPECT(tu_event_wait(&d.ev, 1, 60000) == 1);
    int64_t after = now_ms() - before_break;
    printf("    b led %lld ms after the break (lock-delay %lld ms)\n", (long long)after, (long long)delay);
    EXPECT(d.status == ZKLOCK_OK && d.lease);
    EXPECT(after >= delay);
    if (d.lease) EXPECT(zklock_election_resign(b, d.lease, false, NULL, NULL, NULL) == ZKLOCK_OK);
    EXPECT(zklock_election_resign(a, la, false, NULL, NULL, NULL) == ZKLOCK_LOST);
    zklock_op_free(op);
    tu_event_destroy(&d.ev);
    zklock_election_free(a);
    zklock_election_free(b);

    /* A clean resign: the successor leads long before a delay of two minutes. */
    CHECK(zklock_election_new(c1, clean, "latch", "a", -1, &a) == ZKLOCK_OK);
    CHECK(zklock_election_new(c2, clean, "latch", "b", -1, &b) == ZKLOCK_OK);
    CHECK(zklock_election_set_lock_delay(a, long_delay) == ZKLOCK_OK);
    CHECK(zklock_election_set_lock_delay(b, long_delay) == ZKLOCK_OK);
    CHECK(zklock_election_lead(a, 10000, &la) == ZKLOCK_OK);
    struct done e = {0};
    tu_event_init(&e.ev);
    op = NULL;
    CHECK(zklock_election_lead_async(b, -1, done_cb, &e, &op) == ZKLOCK_OK);
    for (int i = 0; i < 600; i++) {
        size_t n = 0;
        if (zklock_election_participants(a, &list) == ZKLOCK_OK) n = zklock_participants_count(list);
        zklock_participants_free(list);
        list = NULL;
        if (n >= 2) break;
        sleep_ms(100);
    }
    EXPECT(zklock_election_resign(a, la, false, NULL, NULL, NULL) == ZKLOCK_OK);
    EXPECT(tu_event_wait(&e.ev, 1, 60000) == 1); /* well before the 120 s delay */
    EXPECT(e.status == ZKLOCK_OK && e.lease);
    if (e.lease) EXPECT(zklock_election_resign(b, e.lease, false, NULL, NULL, NULL) == ZKLOCK_OK);
    zklock_op_free(op);
    tu_event_destroy(&e.ev);
    zklock_election_free(a);
    zklock_election_free(b);
    zklock_client_free(c1);
    zklock_client_free(c2);
    zklock_client_free(c3);
}

static void test_valid_for_ms_is_ahead_while_held(void) {
    char path[256];
    path_of(path, sizeof path, "valid");
    zklock_client *c = connect_client("c");
    CHECK(c);
    zklock_election *e = NULL;
    CHECK(zklock_election_new(c, path, "latch", "v", -1, &e) == ZKLOCK_OK);
    zklock_lease *l = NULL;
    CHECK(zklock_election_lead(e, 10000, &l) == ZKLOCK_OK);
    int64_t left = -1;
    EXPECT(zklock_lease_valid_for_ms(l, &left) == ZKLOCK_OK);
    EXPECT(left > 0 && left <= 10000);
    EXPECT(zklock_lease_valid_for_ms(l, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_lease_valid_for_ms(NULL, &left) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_client_close(c) == ZKLOCK_OK);
    left = -7;
    EXPECT(zklock_lease_valid_for_ms(l, &left) == ZKLOCK_LOST && left == -7);
    EXPECT(zklock_election_resign(e, l, false, NULL, NULL, NULL) == ZKLOCK_LOST);
    zklock_election_free(e);
    zklock_client_free(c);
}

static void test_bad_input_is_invalid_argument(void) {
    char path[256];
    path_of(path, sizeof path, "bad");
    zklock_client *c = connect_client("c");
    CHECK(c);
    zklock_election *e = NULL;
    EXPECT(zklock_election_new(NULL, path, NULL, NULL, -1, &e) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_new(c, NULL, NULL, NULL, -1, &e) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_new(c, path, NULL, NULL, -1, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_new(c, path, "leader", NULL, -1, &e) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(strstr(zklock_last_error(), "latch") != NULL); /* lists the known names */
    EXPECT(zklock_election_new(c, path, "", NULL, -1, &e) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_new(c, "no-slash", NULL, NULL, -1, &e) == ZKLOCK_INVALID_ARGUMENT);
    char *huge = malloc(1026);
    memset(huge, 'i', 1025);
    huge[1025] = 0;
    EXPECT(zklock_election_new(c, path, NULL, huge, -1, &e) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(strlen(zklock_last_error()) < 300);
    huge[1024] = 0;
    EXPECT(zklock_election_new(c, path, NULL, huge, -1, &e) == ZKLOCK_OK);
    free(huge);
    EXPECT(e != NULL);
    zklock_lease *l = NULL;
    EXPECT(zklock_election_lead(NULL, 0, &l) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_lead(e, -2, &l) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_lead(e, 0, NULL) == ZKLOCK_INVALID_ARGUMENT);
    zklock_op *op = NULL;
    EXPECT(zklock_election_lead_async(e, -1, NULL, NULL, &op) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_resign(e, NULL, false, NULL, NULL, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_proclaim(e, NULL, "x", 1) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_participants(e, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_id(NULL) == NULL && zklock_election_style(NULL) == NULL);
    EXPECT(zklock_leader_watch_new(c, NULL, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_leader_watch_next(NULL, 0, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_participants_count(NULL) == 0);
    EXPECT(zklock_check(c, NULL, 1, 0, NULL) == ZKLOCK_INVALID_ARGUMENT);
    /* a lease of another path is refused and left alone */
    char other[256];
    path_of(other, sizeof other, "bad-other");
    zklock_lock *m = NULL;
    CHECK(zklock_mutex_new(c, other, NULL, &m) == ZKLOCK_OK);
    CHECK(zklock_acquire(m, 10000, &l) == ZKLOCK_OK);
    EXPECT(zklock_election_resign(e, l, false, NULL, NULL, NULL) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_election_proclaim(e, l, "x", 1) == ZKLOCK_INVALID_ARGUMENT);
    EXPECT(zklock_lease_state_get(l) == ZKLOCK_LEASE_HELD);
    EXPECT(zklock_lease_release(l) == ZKLOCK_OK);
    zklock_lock_free(m);
    zklock_election_free(e);
    zklock_election_free(NULL);
    zklock_leader_watch_free(NULL);
    zklock_participants_free(NULL);
    zklock_client_free(c);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SERVERS\n", argv[0]);
        printf("0 passed, 1 failed\n");
        return 2;
    }
    servers = argv[1];
    snprintf(base, sizeof base, "/zklock-c-election/%ld-%ld", (long)getpid(), (long)time(NULL));
    setvbuf(stdout, NULL, _IOLBF, 0);
    RUN(test_handover_between_two_clients_with_rising_tokens);
    RUN(test_cancel_an_async_lead);
    RUN(test_resign_with_requeue_hands_over_and_reenters_at_the_tail);
    RUN(test_mixed_layouts_conflict_and_name_the_foreign_node);
    RUN(test_observer_reports_leader_changes_and_no_leader);
    RUN(test_check_passes_the_current_token_only);
    RUN(test_max_hold_ends_a_lease_and_a_leadership);
    RUN(test_lock_delay_after_a_break_and_none_after_a_resign);
    RUN(test_valid_for_ms_is_ahead_while_held);
    RUN(test_bad_input_is_invalid_argument);
    return tu_summary();
}
