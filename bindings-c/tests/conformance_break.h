/* The C runner's scenarios of issue 37's breaking of a stuck lock (cases.txt's block), apart
 * from conformance.c, which is past the 700-line rule. Included by conformance.c after its
 * helpers (main_client, other_client, case_path, seen, kind_of, problem, fresh_client,
 * sleep_ms); not a header of its own. `zklock_break_lock` from the second client; the broken
 * holder's `zklock_lease_state_get` and `zklock_lease_lost_reason`. */

#define BREAK_MISSING "_c_00000000-0000-0000-0000-000000000000-lock-0000009999"

/* The waiter of `break-holder`: acquires on its own thread, no timeout. */
struct break_waiter {
    zklock_lock *lock;
    zklock_lease *lease;
    zklock_status st;
};

static void *break_waiter_run(void *arg) {
    struct break_waiter *w = arg;
    w->st = zklock_acquire(w->lock, -1, &w->lease);
    return NULL;
}

/* op lock_delay: the case's mutex with the input (seconds) as lock-delay in milliseconds;
 * when accepted, one try and its release. */
static void op_lock_delay(struct outcome *o, const struct bytes *in) {
    double secs;
    int64_t ms;
    if (!parse_seconds(in->p, &secs)) {
        snprintf(o->problem, sizeof o->problem, "the input %.40s is not a number of seconds", in->p);
        return;
    }
    if (isnan(secs)) {
        o->na = "a NaN has no int64_t milliseconds form in C";
        return;
    }
    if (!to_millis(secs, &ms, &o->na)) return;
    zklock_lock *l = NULL;
    zklock_lease *lease = NULL;
    zklock_status st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
    if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_lock_delay(l, ms));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 0, &lease));
    o->word = st == ZKLOCK_OK ? "ok" : st == ZKLOCK_TIMEOUT ? "not-acquired" : kind_of(st);
    if (lease) zklock_lease_release(lease);
    zklock_lock_free(l);
}

/* True when `name` is one of this block's scenarios (its outcome in `o`). */
static int break_scenario(struct outcome *o, const char *name) {
    zklock_lock *l = NULL;
    zklock_lease *a = NULL;
    zklock_status st;
    static char word[96];
    if (strcmp(name, "break-without-node") == 0 || strcmp(name, "break-missing-node") == 0) {
        const char *node = strcmp(name, "break-missing-node") == 0 ? BREAK_MISSING : "";
        st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st != ZKLOCK_OK) {
            problem(o, "holding", st);
        } else {
            st = seen(o, zklock_break_lock(other_client, case_path, node, "conformance", NULL));
            o->word = st == ZKLOCK_OK ? "broken" : kind_of(st);
        }
    } else if (strcmp(name, "break-holder") == 0) {
        zklock_client *own = fresh_client(o), *waiter_client = fresh_client(o);
        zklock_participants *broken = NULL;
        struct break_waiter w = {NULL, NULL, ZKLOCK_OK};
        pthread_t thread;
        int started = 0;
        st = own && waiter_client ? ZKLOCK_OK : ZKLOCK_CONNECTION;
        if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(own, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(waiter_client, case_path, NULL, &w.lock));
        if (st == ZKLOCK_OK) started = pthread_create(&thread, NULL, break_waiter_run, &w) == 0;
        if (st == ZKLOCK_OK) {
            const char *name_of = strrchr(zklock_lease_path(a), '/') + 1;
            st = seen(o, zklock_break_lock(other_client, case_path, name_of, "conformance", &broken));
        }
        zklock_participant p;
        p.size = sizeof p;
        if (st != ZKLOCK_OK || !participant_at(broken, 0, &p)) {
            problem(o, "breaking", st);
        } else {
            for (int i = 0; i < 100 && zklock_lease_state_get(a) != ZKLOCK_LEASE_LOST; i++) sleep_ms(100);
            const char *reason = zklock_lease_lost_reason(a);
            const char *why = reason ? strstr(reason, " lost: ") : NULL;
            why = why ? why + 7 : "none";
            size_t n = strcspn(why, ": ");
            const char *state = zklock_lease_state_get(a) == ZKLOCK_LEASE_LOST ? "lost" : "held";
            if (started) {
                pthread_join(thread, NULL);
                started = 0;
            }
            const char *up = w.st == ZKLOCK_OK && zklock_lease_token(w.lease) > p.token ? "token-up" : "token-down";
            snprintf(word, sizeof word, "%s,%.*s,%s", state, (int)(n < 40 ? n : 40), why, up);
            o->word = word;
        }
        if (started) {
            /* Not broken: the holder lets go so that the waiter ends. */
            if (a) zklock_lease_release(a);
            a = NULL;
            pthread_join(thread, NULL);
        }
        if (w.lease) zklock_lease_release(w.lease);
        zklock_lock_free(w.lock);
        zklock_participants_free(broken);
        if (a) zklock_lease_release(a);
        a = NULL;
        zklock_lock_free(l);
        l = NULL;
        if (own) zklock_client_close(own);
        if (waiter_client) zklock_client_close(waiter_client);
        zklock_client_free(own);
        zklock_client_free(waiter_client);
    } else {
        return 0;
    }
    if (a) zklock_lease_release(a);
    zklock_lock_free(l);
    return 1;
}
