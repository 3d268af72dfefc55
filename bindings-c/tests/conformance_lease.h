/* The C runner's scenarios of issue 33's lease semantics (cases.txt's last block), apart from
 * conformance.c, which is past the 700-line rule. Included by conformance.c after its helpers
 * (main_client, case_path, seen, kind_of, problem, participant_at); not a header of its own.
 * `valid_until` is C's milliseconds left (zklock_lease_valid_for_ms). */

#define LEASE_MAX_HOLD_MS 1000
#define LEASE_ROUNDING_MS 10
/* valid-until-max-hold-from-idle: a short session, the harness's tick, and an idle spell past the
 * warm time (one session timeout) so that the acquire has to earn a fresh proof. */
#define LEASE_IDLE_SESSION_MS 2000
#define LEASE_IDLE_TICK_MS 200
#define LEASE_IDLE_SPELL_MS 2500

/* Where the milliseconds left stand against the maximum hold, right after the acquire. */
static const char *against_max_hold(struct outcome *o, zklock_lease *lease) {
    int64_t left = -1;
    zklock_status st = seen(o, zklock_lease_valid_for_ms(lease, &left));
    if (st != ZKLOCK_OK) return "none";
    if (left <= 0) return "past";
    if (left > LEASE_MAX_HOLD_MS + LEASE_ROUNDING_MS) return "beyond-max-hold";
    return "within-max-hold";
}

/* The counter block (issue 37, point 5): `<case path>-counter`, made on `client`. */
static zklock_status counter_at(struct outcome *o, zklock_client *client, const char *width, zklock_counter **out) {
    char path[512];
    snprintf(path, sizeof path, "%s-counter", case_path);
    return seen(o, zklock_counter_new(client, path, width, out));
}

/* True when `name` is one of the counter scenarios (its outcome in `o`). */
static int counter_scenario(struct outcome *o, const char *name) {
    static char word[96];
    zklock_counter *counter = NULL, *reader = NULL;
    zklock_lock *l = NULL;
    zklock_lease *a = NULL;
    zklock_client *own = NULL;
    zklock_count count = {0, 0};
    zklock_status st;
    if (strcmp(name, "counter-width-unknown") == 0) {
        st = seen(o, zklock_counter_new(main_client, case_path, "int16", &counter));
        o->word = kind_of(st);
    } else if (strcmp(name, "counter-guarded") == 0) {
        st = counter_at(o, main_client, "int64", &counter);
        if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        int64_t first = 0;
        if (st == ZKLOCK_OK) st = seen(o, zklock_lease_guarded_increment(a, counter, 1, &count));
        first = count.value;
        if (st == ZKLOCK_OK) st = seen(o, zklock_lease_guarded_increment(a, counter, 41, &count));
        if (st == ZKLOCK_OK) {
            snprintf(word, sizeof word, "%lld,%lld", (long long)first, (long long)count.value);
            o->word = word;
        } else {
            o->word = kind_of(st);
        }
    } else if (strcmp(name, "counter-after-loss") == 0) {
        zklock_client_options opts;
        zklock_client_options_init(&opts);
        st = connect_with(o, servers, &opts, &own);
        if (st == ZKLOCK_OK) st = counter_at(o, own, NULL, &counter);
        if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(own, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) {
            zklock_client_close(own);
            zklock_status inc = seen(o, zklock_lease_guarded_increment(a, counter, 1, NULL));
            st = counter_at(o, main_client, NULL, &reader);
            if (st == ZKLOCK_OK) st = seen(o, zklock_counter_get(reader, &count));
            snprintf(word, sizeof word, "%s,%lld", inc == ZKLOCK_OK ? "ok" : kind_of(inc), (long long)count.value);
            o->word = st == ZKLOCK_OK ? word : kind_of(st);
        } else {
            o->word = kind_of(st);
        }
    } else if (strcmp(name, "counter-int32-overflow") == 0) {
        st = counter_at(o, main_client, "int32", &counter);
        if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lease_guarded_increment(a, counter, 2147483647, NULL));
        if (st == ZKLOCK_OK) {
            zklock_status inc = seen(o, zklock_lease_guarded_increment(a, counter, 1, NULL));
            st = seen(o, zklock_counter_get(counter, &count));
            snprintf(word, sizeof word, "%s,%lld", inc == ZKLOCK_OK ? "ok" : kind_of(inc), (long long)count.value);
            o->word = st == ZKLOCK_OK ? word : kind_of(st);
        } else {
            o->word = kind_of(st);
        }
    } else if (strcmp(name, "counter-cas-stale") == 0) {
        zklock_count at = {0, 0};
        bool first = false, second = false;
        st = counter_at(o, main_client, NULL, &counter);
        if (st == ZKLOCK_OK) st = seen(o, zklock_counter_get(counter, &at));
        if (st == ZKLOCK_OK) st = seen(o, zklock_counter_compare_and_set(counter, &at, 7, &first, &count));
        if (st == ZKLOCK_OK) st = seen(o, zklock_counter_compare_and_set(counter, &at, 9, &second, NULL));
        if (st == ZKLOCK_OK) {
            char one[32];
            if (first) snprintf(one, sizeof one, "%lld", (long long)count.value);
            else snprintf(one, sizeof one, "stale");
            snprintf(word, sizeof word, "%s,%s", one, second ? "9" : "stale");
            o->word = word;
        } else {
            o->word = kind_of(st);
        }
    } else {
        return 0;
    }
    if (a) zklock_lease_release(a);
    zklock_lock_free(l);
    zklock_counter_free(counter);
    zklock_counter_free(reader);
    zklock_client_free(own);
    return 1;
}

/* The extend block (issue 37, point 3). The expiring scenario's events, in order. */
static char expiring_events[64];
static pthread_mutex_t expiring_mu = PTHREAD_MUTEX_INITIALIZER;

static void note_event(const char *event) {
    pthread_mutex_lock(&expiring_mu);
    if (expiring_events[0]) strncat(expiring_events, ",", sizeof expiring_events - strlen(expiring_events) - 1);
    strncat(expiring_events, event, sizeof expiring_events - strlen(expiring_events) - 1);
    pthread_mutex_unlock(&expiring_mu);
}

static void on_expiring_event(void *user, zklock_lease *lease, int64_t ms_left) {
    (void)user, (void)lease, (void)ms_left;
    note_event("expiring");
}

static void on_state_event(void *user, zklock_lease *lease, zklock_lease_state state) {
    (void)user, (void)lease;
    if (state == ZKLOCK_LEASE_LOST) note_event("lost");
}

/* Waits (at most 10 s) for `lease` to turn lost; the first word of its lost reason in `out`
 * (empty when it did not turn lost). */
static void lost_word(zklock_lease *lease, char *out, size_t size) {
    for (int i = 0; i < 500 && zklock_lease_state_get(lease) != ZKLOCK_LEASE_LOST; i++) sleep_ms(20);
    const char *reason = zklock_lease_lost_reason(lease);
    const char *why = reason ? strstr(reason, " lost: ") : NULL;
    why = why ? why + 7 : "";
    size_t n = strcspn(why, ": ");
    snprintf(out, size, "%.*s", (int)(n < size - 1 ? n : size - 1), why);
}

/* True when `name` is one of the extend scenarios (its outcome in `o`). */
/* The value of the first sample of `name` in `text` whose line holds `l1` and `l2` (either may
   be NULL), into `out`; "none" when there is none. */
static void sample_value(const char *text, const char *name, const char *l1, const char *l2, char *out,
                         size_t size) {
    size_t n = strlen(name);
    snprintf(out, size, "none");
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        if (strncmp(buf, name, n) == 0 && (buf[n] == '{' || buf[n] == ' ') && (!l1 || strstr(buf, l1)) &&
            (!l2 || strstr(buf, l2))) {
            const char *sp = strrchr(buf, ' ');
            snprintf(out, size, "%s", sp ? sp + 1 : "none");
            return;
        }
        line = end ? end + 1 : NULL;
    }
}

/* path-stats-bound: a client with path_stats_limit 1; the case's path keeps its series, a
   second path folds into the overflow (read back from zklock_client_openmetrics's text). */
static int path_stats_scenario(struct outcome *o, const char *name) {
    static char word[160];
    static char text[32768];
    zklock_lock *l = NULL, *other = NULL;
    zklock_lease *a = NULL, *b = NULL;
    zklock_client *own = NULL;
    zklock_status st;
    if (strcmp(name, "path-stats-bound") != 0) return 0;
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.path_stats_limit = 1;
    char other_path[512];
    snprintf(other_path, sizeof other_path, "%s-other", case_path);
    st = connect_with(o, servers, &opts, &own);
    if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(own, case_path, NULL, &l));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
    if (st == ZKLOCK_OK) {
        st = seen(o, zklock_lease_release(a));
        a = NULL;
    }
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
    if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(own, other_path, NULL, &other));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(other, 10000, &b));
    if (st == ZKLOCK_OK) {
        st = seen(o, zklock_lease_release(b));
        b = NULL;
    }
    size_t got = 0;
    if (st == ZKLOCK_OK) st = seen(o, zklock_client_openmetrics(own, text, sizeof text, &got));
    if (st == ZKLOCK_OK) {
        char path[600], acquired[32], held[32], overflow[32], folded[32];
        snprintf(path, sizeof path, "path=\"%s\"", case_path);
        sample_value(text, "zklock_path_acquires_total", path, "outcome=\"acquired\"", acquired, sizeof acquired);
        sample_value(text, "zklock_path_held", path, NULL, held, sizeof held);
        sample_value(text, "zklock_path_acquires_total", "path=\"(overflow)\"", "outcome=\"acquired\"", overflow,
                     sizeof overflow);
        sample_value(text, "zklock_path_stats_folded_total", NULL, NULL, folded, sizeof folded);
        snprintf(word, sizeof word, "acquired=%s,held=%s,overflow=%s,folded=%s", acquired, held, overflow, folded);
        o->word = word;
    } else {
        o->word = kind_of(st);
    }
    if (a) zklock_lease_release(a);
    zklock_lock_free(other);
    zklock_lock_free(l);
    zklock_client_free(own);
    return 1;
}

static int extend_scenario(struct outcome *o, const char *name) {
    static char word[96];
    zklock_lock *l = NULL;
    zklock_lease *a = NULL;
    zklock_client *own = NULL;
    zklock_status st;
    if (strcmp(name, "extend-no-max-hold") == 0) {
        st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lease_extend(a, 1000));
        o->word = st == ZKLOCK_OK ? "ok" : kind_of(st);
    } else if (strcmp(name, "extend-past-ceiling") == 0) {
        st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, 5000));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_hold_ceiling(l, 8000));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) {
            zklock_status first = seen(o, zklock_lease_extend(a, 60000));
            zklock_status second = seen(o, zklock_lease_extend(a, 6000));
            snprintf(word, sizeof word, "%s,%s", first == ZKLOCK_OK ? "ok" : kind_of(first),
                     second == ZKLOCK_OK ? "ok" : kind_of(second));
            o->word = word;
        } else {
            o->word = kind_of(st);
        }
    } else if (strcmp(name, "extend-after-loss") == 0) {
        zklock_client_options opts;
        zklock_client_options_init(&opts);
        st = connect_with(o, servers, &opts, &own);
        if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(own, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, 30000));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) {
            zklock_client_close(own);
            st = seen(o, zklock_lease_extend(a, 1000));
        }
        o->word = st == ZKLOCK_OK ? "ok" : kind_of(st);
    } else if (strcmp(name, "extend-moves-valid-until") == 0) {
        st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, LEASE_MAX_HOLD_MS));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lease_extend(a, 20000));
        o->word = st == ZKLOCK_OK ? against_max_hold(o, a) : kind_of(st);
    } else if (strcmp(name, "rw-max-hold") == 0) {
        zklock_lock *r = NULL, *w = NULL;
        char words[2][48] = {"", ""};
        st = seen(o, zklock_rwlock_new(main_client, case_path, &r, &w));
        if (st == ZKLOCK_OK) st = seen(o, zklock_rwlock_set_max_hold(r, w, 500));
        for (int i = 0; i < 2 && st == ZKLOCK_OK; i++) {
            zklock_lease *side = NULL;
            st = seen(o, zklock_acquire(i == 0 ? r : w, 10000, &side));
            if (st != ZKLOCK_OK) break;
            lost_word(side, words[i], sizeof words[i]);
            zklock_lease_release(side);
        }
        snprintf(word, sizeof word, "%s,%s", words[0], words[1]);
        o->word = st == ZKLOCK_OK ? word : kind_of(st);
        zklock_lock_free(r);
        zklock_lock_free(w);
    } else if (strcmp(name, "multi-max-hold") == 0) {
        char pa[512], pb[512], lost[48] = "";
        snprintf(pa, sizeof pa, "%s/a", case_path);
        snprintf(pb, sizeof pb, "%s/b", case_path);
        const char *members[2] = {pa, pb}, *reversed[2] = {pb, pa};
        zklock_lock *again = NULL;
        zklock_lease *next = NULL;
        st = seen(o, zklock_multi_new(main_client, members, 2, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, 500));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) {
            lost_word(a, lost, sizeof lost);
            zklock_lease_release(a);
            a = NULL;
            st = seen(o, zklock_multi_new(main_client, reversed, 2, &again));
        }
        if (st == ZKLOCK_OK) {
            zklock_status got = seen(o, zklock_acquire(again, 10000, &next));
            snprintf(word, sizeof word, "%s,%s", lost, got == ZKLOCK_OK ? "acquired" : kind_of(got));
            o->word = word;
        } else {
            o->word = kind_of(st);
        }
        if (next) zklock_lease_release(next);
        zklock_lock_free(again);
    } else if (strcmp(name, "multi-max-hold-extend") == 0) {
        char pa[512], pb[512];
        snprintf(pa, sizeof pa, "%s/a", case_path);
        snprintf(pb, sizeof pb, "%s/b", case_path);
        const char *members[2] = {pa, pb};
        st = seen(o, zklock_multi_new(main_client, members, 2, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, LEASE_MAX_HOLD_MS));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_hold_ceiling(l, 5000));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) {
            zklock_status first = seen(o, zklock_lease_extend(a, 60000));
            zklock_status second = seen(o, zklock_lease_extend(a, 3000));
            snprintf(word, sizeof word, "%s,%s", first == ZKLOCK_OK ? "ok" : kind_of(first),
                     second == ZKLOCK_OK ? against_max_hold(o, a) : kind_of(second));
            o->word = word;
        } else {
            o->word = kind_of(st);
        }
    } else if (strcmp(name, "multi-max-hold-zero") == 0) {
        char pa[512];
        snprintf(pa, sizeof pa, "%s/a", case_path);
        const char *members[1] = {pa};
        st = seen(o, zklock_multi_new(main_client, members, 1, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, 0));
        o->word = kind_of(st);
    } else if (strcmp(name, "openmetrics") == 0) {
        zklock_client_options opts;
        zklock_client_options_init(&opts);
        st = connect_with(o, servers, &opts, &own);
        if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(own, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) {
            st = seen(o, zklock_lease_release(a));
            a = NULL;
        }
        static char text[16384];
        size_t need = 0, got = 0;
        /* The size query first, then the text into a buffer that holds it. */
        if (st == ZKLOCK_OK) st = seen(o, zklock_client_openmetrics(own, NULL, 0, &need));
        if (st == ZKLOCK_OK && need > sizeof text) st = ZKLOCK_INVALID_ARGUMENT;
        if (st == ZKLOCK_OK) st = seen(o, zklock_client_openmetrics(own, text, sizeof text, &got));
        if (st == ZKLOCK_OK) {
            size_t n = strlen(text);
            const char *eof = n >= 6 && strcmp(text + n - 6, "# EOF\n") == 0 ? "eof" : "no-eof";
            const char *line = strstr(text, "zklock_acquires_total{client=");
            char acquired[32] = "none";
            while (line && !strstr(line, "outcome=\"acquired\"")) line = strstr(line + 1, "zklock_acquires_total{");
            if (line) {
                const char *end = strchr(line, '\n');
                const char *sp = end ? end : line + strlen(line);
                while (sp > line && sp[-1] != ' ') sp--;
                snprintf(acquired, sizeof acquired, "%.*s", (int)((end ? end : sp + strlen(sp)) - sp), sp);
            }
            snprintf(word, sizeof word, "%s,acquired=%s", eof, acquired);
            o->word = word;
        } else {
            o->word = kind_of(st);
        }
    } else if (strcmp(name, "expiring-warns-first") == 0) {
        expiring_events[0] = 0;
        st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, 800));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lease_on_expiring(a, 400, on_expiring_event, NULL));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lease_on_state(a, on_state_event, NULL));
        for (int i = 0; st == ZKLOCK_OK && i < 500; i++) {
            pthread_mutex_lock(&expiring_mu);
            int lost = strstr(expiring_events, "lost") != NULL;
            pthread_mutex_unlock(&expiring_mu);
            if (lost) break;
            sleep_ms(20);
        }
        pthread_mutex_lock(&expiring_mu);
        snprintf(word, sizeof word, "%s", expiring_events);
        pthread_mutex_unlock(&expiring_mu);
        o->word = st == ZKLOCK_OK ? word : kind_of(st);
    } else {
        return 0;
    }
    if (a) zklock_lease_release(a);
    zklock_lock_free(l);
    zklock_client_free(own);
    return 1;
}

/* True when `name` is one of this block's scenarios (its outcome in `o`). */
static int lease_scenario(struct outcome *o, const char *name) {
    zklock_lock *l = NULL;
    zklock_election *e = NULL, *other = NULL;
    zklock_lease *a = NULL, *b = NULL;
    zklock_participants *leader = NULL;
    zklock_client *own = NULL;
    zklock_status st;
    static char word[96];
    if (strcmp(name, "valid-until-max-hold") == 0) {
        st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, LEASE_MAX_HOLD_MS));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        o->word = st == ZKLOCK_OK ? against_max_hold(o, a) : kind_of(st);
    } else if (strcmp(name, "valid-until-max-hold-election") == 0) {
        st = seen(o, zklock_election_new(main_client, case_path, "latch", "a", LEASE_MAX_HOLD_MS, &e));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(e, 10000, &a));
        o->word = st == ZKLOCK_OK ? against_max_hold(o, a) : kind_of(st);
    } else if (strcmp(name, "valid-until-max-hold-from-idle") == 0) {
        zklock_client_options opts;
        zklock_client_options_init(&opts);
        opts.session_timeout_ms = LEASE_IDLE_SESSION_MS;
        opts.server_tick_ms = LEASE_IDLE_TICK_MS;
        st = connect_with(o, servers, &opts, &own);
        if (st == ZKLOCK_OK) {
            sleep_ms(LEASE_IDLE_SPELL_MS);
            st = seen(o, zklock_mutex_new(own, case_path, NULL, &l));
        }
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, LEASE_MAX_HOLD_MS));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        o->word = st == ZKLOCK_OK ? against_max_hold(o, a) : kind_of(st);
    } else if (strcmp(name, "time-left-max-hold-short-session") == 0) {
        /* C's valid_until is already the time left (zklock_lease_valid_for_ms). */
        zklock_client_options opts;
        zklock_client_options_init(&opts);
        opts.session_timeout_ms = LEASE_IDLE_SESSION_MS;
        opts.server_tick_ms = LEASE_IDLE_TICK_MS;
        st = connect_with(o, servers, &opts, &own);
        if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(own, case_path, NULL, &l));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lock_set_max_hold(l, LEASE_MAX_HOLD_MS));
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 10000, &a));
        o->word = st == ZKLOCK_OK ? against_max_hold(o, a) : kind_of(st);
    } else if (strcmp(name, "lost-stays-lost") == 0) {
        o->na = "zklock_lease_release frees the lease handle, so nothing is left to read after it; "
                "its status after a loss is ZKLOCK_LOST";
    } else if (strcmp(name, "scope-end-after-loss") == 0) {
        o->na = "C has no scoped hold; the C++ wrapper's RAII rule is tested by test_zklock.cpp";
    } else if (strcmp(name, "resign-foreign-leadership") == 0) {
        st = seen(o, zklock_election_new(main_client, case_path, "latch", "a", -1, &e));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_new(main_client, case_path, "latch", "b", -1, &other));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(e, 10000, &a));
        if (st != ZKLOCK_OK) {
            problem(o, "leading", st);
        } else {
            /* Refused, the lease stays the caller's (zklock.h): still a handle to read. */
            zklock_status refused = seen(o, zklock_election_resign(other, a, false, NULL, NULL, NULL));
            if (refused == ZKLOCK_OK) a = NULL; /* resigned and freed: A no longer leads */
            zklock_participant p;
            int leads = a && zklock_lease_state_get(a) == ZKLOCK_LEASE_HELD &&
                        seen(o, zklock_election_leader(e, &leader)) == ZKLOCK_OK &&
                        participant_at(leader, 0, &p) && strcmp(p.id, "a") == 0;
            snprintf(word, sizeof word, "%s,%s", kind_of(refused), leads ? "still-leads" : "not-leading");
            o->word = word;
        }
    } else if (strcmp(name, "lead-while-leading") == 0) {
        st = seen(o, zklock_election_new(main_client, case_path, "latch", "a", -1, &e));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(e, 10000, &a));
        if (st != ZKLOCK_OK) {
            problem(o, "leading", st);
        } else {
            st = seen(o, zklock_election_lead(e, 2000, &b));
            o->word = st == ZKLOCK_OK ? "acquired" : kind_of(st);
        }
    } else {
        return counter_scenario(o, name) || extend_scenario(o, name) || path_stats_scenario(o, name);
    }
    zklock_participants_free(leader);
    if (b) zklock_election_resign(e, b, false, NULL, NULL, NULL);
    if (a) {
        if (e) zklock_election_resign(e, a, false, NULL, NULL, NULL);
        else zklock_lease_release(a);
    }
    zklock_election_free(other);
    zklock_election_free(e);
    zklock_lock_free(l);
    zklock_client_free(own);
    return 1;
}
