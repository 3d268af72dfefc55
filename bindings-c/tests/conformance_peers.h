/* The C runner's scenarios of issue 53's block (cases.txt): the peers' fixes, each with a
 * client behind the harness's fault proxy, apart from conformance.c, which is past the 700-line
 * rule. Included by conformance.c after its helpers (main_client, other_client, case_path, seen,
 * kind_of, problem, sleep_ms); not a header of its own. peer_harness is testutil.h's tu_harness
 * (conformance.c does not include testutil.h, whose sleep_ms it has already). The proxy's
 * address, the harness's command FIFO and its answers file are the runner's 3rd to 5th
 * arguments (ci-test.sh); without them these cases are n/a.
 * - election-path-deleted-while-disconnected (CURATOR-724): the leader, cut off with its
 *   session alive, has its node deleted (zklock_break_lock from another client: C has no raw
 *   ZooKeeper client); back on the session it reports lost.
 * - nothing-sent-after-close (CURATOR-720/729): once zklock_client_close returned, the proxy
 *   counts no byte and no connection more (the harness's `count`).
 * - connection-event-not-deletion (Curator GH-1290): a waiter whose connection is cut and comes
 *   back keeps waiting while its predecessor holds. */

static const char *peer_proxy, *peer_control, *peer_answers;

/* The harness's answers so far (`ok` and `error` lines) and whether the last was `ok`. */
static int peer_harness_answers(int *last_ok) {
    FILE *f = fopen(peer_answers, "r");
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

/* Sends one command to zk-harness through its FIFO and waits (30 s at most) for its answer: 1
 * when it answered `ok`. */
static int peer_harness(const char *command) {
    int last_ok = 0;
    int before = peer_harness_answers(&last_ok);
    if (before < 0) return 0;
    int fd = open(peer_control, O_WRONLY | O_NONBLOCK);
    if (fd < 0) return 0;
    char line[64];
    int n = snprintf(line, sizeof line, "%s\n", command);
    int written = write(fd, line, (size_t)n) == n;
    close(fd);
    if (!written) return 0;
    for (int i = 0; i < 6000; i++) {
        if (peer_harness_answers(&last_ok) > before) return last_ok;
        sleep_ms(5);
    }
    return 0;
}

/* The connection states a client reported, in order. */
struct peer_states {
    pthread_mutex_t mu;
    int seen[64];
    int n;
};

static void peer_on_state(void *user, zklock_client *client, zklock_connection_state state) {
    (void)client;
    struct peer_states *s = user;
    pthread_mutex_lock(&s->mu);
    if (s->n < 64) s->seen[s->n++] = state;
    pthread_mutex_unlock(&s->mu);
}

static int peer_count(struct peer_states *s) {
    pthread_mutex_lock(&s->mu);
    int n = s->n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Waits (at most 30 s) until `state` is reported after the first `from`: the count after it, or
 * -1. */
static int peer_until(struct peer_states *s, int from, zklock_connection_state state) {
    for (int i = 0; i < 1500; i++) {
        pthread_mutex_lock(&s->mu);
        int at = -1;
        for (int j = from; j < s->n; j++)
            if (s->seen[j] == (int)state) {
                at = j + 1;
                break;
            }
        pthread_mutex_unlock(&s->mu);
        if (at >= 0) return at;
        sleep_ms(20);
    }
    return -1;
}

/* A client through the proxy (4 s session) whose states go to `s`. */
static zklock_status peer_client(struct outcome *o, struct peer_states *s, zklock_client **out) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.session_timeout_ms = 4000;
    opts.connect_timeout_ms = 5000;
    zklock_status st = seen(o, zklock_client_connect(peer_proxy, &opts, out));
    if (st == ZKLOCK_OK) st = seen(o, zklock_client_on_connection(*out, peer_on_state, s));
    return st;
}

/* The harness's counts: bytes and connections clients sent through the proxy so far; 0 when it
 * gave none. peer_harness waits for the `ok`; the last `bytes=` line of the answers is this one. */
static int peer_counts(long long *bytes, long long *conns) {
    if (!peer_harness("count")) return 0;
    FILE *f = fopen(peer_answers, "r");
    if (!f) return 0;
    char line[256];
    int got = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "bytes=%lld connections=%lld", bytes, conns) == 2) got = 1;
    fclose(f);
    return got;
}

/* Waits (at most 30 s) until `lock` has `n` participants. */
static int peer_until_queued(struct outcome *o, zklock_lock *lock, size_t n) {
    for (int i = 0; i < 1500; i++) {
        zklock_participants *list = NULL;
        if (seen(o, zklock_lock_participants(lock, 5000, &list)) == ZKLOCK_OK) {
            size_t count = zklock_participants_count(list);
            zklock_participants_free(list);
            if (count >= n) return 1;
        }
        sleep_ms(20);
    }
    return 0;
}

/* An async acquire's end. */
struct peer_ended {
    pthread_mutex_t mu;
    int done;
    zklock_status st;
    zklock_lease *lease;
};

static void peer_done(void *user, zklock_status st, zklock_lease *lease) {
    struct peer_ended *e = user;
    pthread_mutex_lock(&e->mu);
    e->st = st;
    e->lease = lease;
    e->done = 1;
    pthread_mutex_unlock(&e->mu);
}

/* Waits at most `ms` for the end; 1 when it came. */
static int peer_wait_end(struct peer_ended *e, int ms) {
    for (int i = 0; i <= ms / 20; i++) {
        pthread_mutex_lock(&e->mu);
        int done = e->done;
        pthread_mutex_unlock(&e->mu);
        if (done) return 1;
        sleep_ms(20);
    }
    return 0;
}

static void peer_election_path_deleted(struct outcome *o) {
    struct peer_states s;
    zklock_client *c = NULL;
    zklock_election *e = NULL;
    zklock_lease *lead = NULL;
    zklock_participants *list = NULL, *broken = NULL;
    if (peer_client(o, &s, &c) != ZKLOCK_OK) {
        problem(o, "connecting through the proxy", ZKLOCK_CONNECTION);
        goto out;
    }
    zklock_status st = seen(o, zklock_election_new(c, case_path, "latch", "a", -1, &e));
    if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(e, 10000, &lead));
    if (st == ZKLOCK_OK) st = seen(o, zklock_election_participants(e, &list));
    zklock_participant p = {.size = sizeof p};
    if (st == ZKLOCK_OK) st = seen(o, zklock_participants_get(list, 0, &p));
    if (st != ZKLOCK_OK) {
        problem(o, "leading through the proxy", st);
        goto out;
    }
    int from = peer_count(&s);
    if (!peer_harness("refuse") || !peer_harness("cut") ||
        peer_until(&s, from, ZKLOCK_SUSPENDED) < 0) {
        snprintf(o->problem, sizeof o->problem, "the client behind the proxy never heard suspended");
        goto out;
    }
    st = seen(o, zklock_break_lock(main_client, case_path, p.node, NULL, &broken));
    if (st != ZKLOCK_OK) {
        problem(o, "breaking the leader's node", st);
        goto out;
    }
    from = peer_count(&s);
    if (!peer_harness("heal") || peer_until(&s, from, ZKLOCK_CONNECTED) < 0) {
        snprintf(o->problem, sizeof o->problem, "the client behind the proxy never heard connected again");
        goto out;
    }
    o->word = "still-leading-on-no-node";
    for (int i = 0; i < 1000; i++) {
        if (zklock_lease_state_get(lead) == ZKLOCK_LEASE_LOST) {
            o->word = "lost";
            break;
        }
        sleep_ms(20);
    }
out:
    peer_harness("heal");
    zklock_participants_free(list);
    zklock_participants_free(broken);
    if (lead) zklock_lease_release(lead);
    zklock_election_free(e);
    if (c) zklock_client_free(c);
}

static void peer_nothing_sent_after_close(struct outcome *o) {
    struct peer_states s;
    zklock_client *c = NULL;
    zklock_lock *mine = NULL, *waiter_lock = NULL, *holder_lock = NULL;
    zklock_lease *held = NULL, *holder = NULL;
    zklock_op *op = NULL;
    struct peer_ended ended = {.done = 0};
    pthread_mutex_init(&ended.mu, NULL);
    char other[300];
    snprintf(other, sizeof other, "%s-other", case_path);
    if (peer_client(o, &s, &c) != ZKLOCK_OK) {
        problem(o, "connecting through the proxy", ZKLOCK_CONNECTION);
        goto out;
    }
    /* A held lease, a waiting acquire (its watch on the predecessor) when close comes. */
    zklock_status st = seen(o, zklock_mutex_new(c, case_path, NULL, &mine));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(mine, 10000, &held));
    if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(main_client, other, NULL, &holder_lock));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(holder_lock, 10000, &holder));
    if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(c, other, NULL, &waiter_lock));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire_async(waiter_lock, -1, peer_done, &ended, &op));
    if (st != ZKLOCK_OK) {
        problem(o, "holding and waiting through the proxy", st);
        goto out;
    }
    if (!peer_until_queued(o, holder_lock, 2)) {
        snprintf(o->problem, sizeof o->problem, "the waiter never queued");
        goto out;
    }
    zklock_client_close(c);
    long long b0 = 0, c0 = 0, b1 = 0, c1 = 0;
    if (!peer_counts(&b0, &c0) || b0 <= 0 || c0 <= 0) {
        snprintf(o->problem, sizeof o->problem, "the proxy counted none of the client's traffic");
        goto out;
    }
    /* What would wake a loop left behind: the predecessor goes, the connection is cut. */
    zklock_lease_release(holder);
    holder = NULL;
    peer_harness("cut");
    peer_wait_end(&ended, 10000);
    sleep_ms(4000); /* three of the closed session's ping intervals (4 s / 3) of quiet */
    if (!peer_counts(&b1, &c1)) {
        snprintf(o->problem, sizeof o->problem, "the harness gave no counts");
        goto out;
    }
    static char word[96];
    if (b1 == b0 && c1 == c0)
        o->word = "none-sent";
    else {
        snprintf(word, sizeof word, "sent=%lld,connections=%lld", b1 - b0, c1 - c0);
        o->word = word;
    }
out:
    if (holder) zklock_lease_release(holder);
    if (held) zklock_lease_release(held);
    if (op) zklock_op_free(op);
    if (ended.lease) zklock_lease_release(ended.lease);
    zklock_lock_free(mine);
    zklock_lock_free(waiter_lock);
    zklock_lock_free(holder_lock);
    if (c) zklock_client_free(c);
}

static void peer_connection_event_not_deletion(struct outcome *o) {
    struct peer_states s;
    zklock_client *c = NULL;
    zklock_lock *holder_lock = NULL, *waiter_lock = NULL;
    zklock_lease *holder = NULL;
    zklock_op *op = NULL;
    struct peer_ended ended = {.done = 0};
    pthread_mutex_init(&ended.mu, NULL);
    zklock_status st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &holder_lock));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(holder_lock, 10000, &holder));
    if (st != ZKLOCK_OK || peer_client(o, &s, &c) != ZKLOCK_OK) {
        problem(o, "holding, and connecting through the proxy", st == ZKLOCK_OK ? ZKLOCK_CONNECTION : st);
        goto out;
    }
    st = seen(o, zklock_mutex_new(c, case_path, NULL, &waiter_lock));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire_async(waiter_lock, -1, peer_done, &ended, &op));
    if (st != ZKLOCK_OK) {
        problem(o, "waiting through the proxy", st);
        goto out;
    }
    if (!peer_until_queued(o, holder_lock, 2)) {
        snprintf(o->problem, sizeof o->problem, "the waiter never queued");
        goto out;
    }
    int from = peer_count(&s);
    int at;
    if (!peer_harness("cut") || (at = peer_until(&s, from, ZKLOCK_SUSPENDED)) < 0 ||
        peer_until(&s, at, ZKLOCK_CONNECTED) < 0) {
        snprintf(o->problem, sizeof o->problem, "the client behind the proxy never heard suspended, then connected");
        goto out;
    }
    /* The predecessor still holds: the waiter must still be waiting (two seconds after the
     * reconnect to go wrong: a waiter that takes the event for the deletion acquires at once). */
    const char *first = "waited", *second = "-";
    if (peer_wait_end(&ended, 2000)) first = ended.st == ZKLOCK_OK ? "acquired-while-held" : "failed";
    zklock_lease_release(holder);
    holder = NULL;
    if (first[0] == 'w') {
        if (!peer_wait_end(&ended, 30000)) second = "hung";
        else second = ended.st == ZKLOCK_OK ? "acquired" : kind_of(ended.st);
    }
    static char word[96];
    snprintf(word, sizeof word, "%s,%s", first, second);
    o->word = word;
out:
    if (holder) zklock_lease_release(holder);
    if (op) {
        zklock_op_cancel(op);
        peer_wait_end(&ended, 10000);
        zklock_op_free(op);
    }
    if (ended.lease) zklock_lease_release(ended.lease);
    zklock_lock_free(holder_lock);
    zklock_lock_free(waiter_lock);
    if (c) zklock_client_free(c);
}

/* One of this block's scenarios: 1 when `name` is one of them (the outcome in `o`). */
static int peer_scenario(struct outcome *o, const char *name) {
    void (*run)(struct outcome *) = NULL;
    if (strcmp(name, "election-path-deleted-while-disconnected") == 0) run = peer_election_path_deleted;
    else if (strcmp(name, "nothing-sent-after-close") == 0) run = peer_nothing_sent_after_close;
    else if (strcmp(name, "connection-event-not-deletion") == 0) run = peer_connection_event_not_deletion;
    if (!run) return 0;
    if (!peer_proxy || !peer_control || !peer_answers)
        o->na = "needs the harness's fault proxy: the runner's 3rd to 5th arguments (proxy, command FIFO, answers)";
    else
        run(o);
    return 1;
}
