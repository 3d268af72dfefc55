/* The C runner's scenarios of issue 37's queue position (cases.txt's block), apart from
 * conformance.c, which is past the 700-line rule. Included by conformance.c after its helpers
 * (main_client, other_client, case_path, seen, kind_of, problem, fresh_client, sleep_ms); not a
 * header of its own. An async acquire's `zklock_op_on_queued` callback and `zklock_op_position`;
 * `zklock_op_cancel` makes a waiter leave. */

/* What one async acquire reported: its on_queued calls and its end. */
struct queue_heard {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uint32_t calls[16];
    int n, taken, done;
    zklock_status st;
};

static void queue_heard_init(struct queue_heard *h) {
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cond, NULL);
}

static void queue_on_queued(void *user, uint32_t position) {
    struct queue_heard *h = user;
    pthread_mutex_lock(&h->mu);
    if (h->n < 16) h->calls[h->n++] = position;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->mu);
}

static void queue_done(void *user, zklock_status st, zklock_lease *lease) {
    struct queue_heard *h = user;
    if (lease) zklock_lease_release(lease);
    pthread_mutex_lock(&h->mu);
    h->st = st;
    h->done = 1;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->mu);
}

/* Waits at most `ms` for a next call (1) or the end (2); 0 when neither came. */
static int queue_wait(struct queue_heard *h, int ms, int for_end) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000L;
    }
    int got = 0;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        if (!for_end && h->n > h->taken) {
            got = 1;
            break;
        }
        if (for_end && h->done) {
            got = 2;
            break;
        }
        if (pthread_cond_timedwait(&h->cond, &h->mu, &until) != 0) break;
    }
    pthread_mutex_unlock(&h->mu);
    return got;
}

/* The next call as text appended to `word` ("silent" when none came within 10 s). */
static void queue_next(struct queue_heard *h, char *word, size_t size) {
    size_t len = strlen(word);
    if (queue_wait(h, 10000, 0) == 1) {
        pthread_mutex_lock(&h->mu);
        uint32_t v = h->calls[h->taken++];
        pthread_mutex_unlock(&h->mu);
        snprintf(word + len, size - len, "%s%u", len ? "," : "", (unsigned)v);
    } else {
        snprintf(word + len, size - len, "%ssilent", len ? "," : "");
    }
}

/* The end (at most 20 s), 300 ms for a late call, then the calls not taken yet, the outcome,
 * and `quiet` when there was no call at all. */
static void queue_end(struct queue_heard *h, char *word, size_t size) {
    int ended = queue_wait(h, 20000, 1) == 2;
    sleep_ms(300);
    pthread_mutex_lock(&h->mu);
    size_t len = strlen(word);
    for (; h->taken < h->n; h->taken++) {
        snprintf(word + len, size - len, "%s%u", len ? "," : "", (unsigned)h->calls[h->taken]);
        len = strlen(word);
    }
    const char *outcome = !ended ? "still-waiting" : h->st == ZKLOCK_OK ? "acquired" : kind_of(h->st);
    snprintf(word + len, size - len, "%s%s%s", len ? "," : "", outcome, h->n == 0 ? ",quiet" : "");
    pthread_mutex_unlock(&h->mu);
}

/* Waits at most 10 s until the op's position is `n`. */
static int queue_until_position(zklock_op *op, uint32_t n) {
    for (int i = 0; i < 500; i++) {
        uint32_t now = 0;
        if (zklock_op_position(op, &now) == ZKLOCK_OK && now == n) return 1;
        sleep_ms(20);
    }
    return 0;
}

/* True when `name` is one of this block's scenarios (its outcome in `o`). */
static int queue_scenario(struct outcome *o, const char *name) {
    static char word[96];
    word[0] = 0;
    int third = strcmp(name, "queue-position-third") == 0;
    int reader = strcmp(name, "queue-position-reader") == 0;
    if (!third && !reader && strcmp(name, "queue-position-uncontended") != 0) return 0;
    struct queue_heard h, middle_heard;
    queue_heard_init(&h);
    queue_heard_init(&middle_heard);
    zklock_client *own = NULL;
    zklock_lock *held_lock = NULL, *held_peer = NULL, *middle_lock = NULL, *middle_peer = NULL;
    zklock_lock *lock = NULL, *peer = NULL;
    zklock_lease *held = NULL;
    zklock_op *middle = NULL, *op = NULL;
    zklock_status st = ZKLOCK_OK;
    if (third || reader) {
        own = fresh_client(o);
        if (!own) goto done;
        /* The holder (a reader for `reader`), then the waiter in the middle (a writer). */
        if (third) {
            st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &held_lock));
            if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(other_client, case_path, NULL, &middle_lock));
        } else {
            st = seen(o, zklock_rwlock_new(main_client, case_path, &held_lock, &held_peer));
            if (st == ZKLOCK_OK)
                st = seen(o, zklock_rwlock_new(other_client, case_path, &middle_peer, &middle_lock));
        }
        if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(held_lock, 10000, &held));
        if (st == ZKLOCK_OK)
            st = seen(o, zklock_acquire_async(middle_lock, -1, queue_done, &middle_heard, &middle));
        if (st != ZKLOCK_OK) {
            problem(o, "queueing the first two", st);
            goto done;
        }
        if (!queue_until_position(middle, 1)) {
            snprintf(o->problem, sizeof o->problem, "the second acquire's position never was 1");
            goto done;
        }
        st = third ? seen(o, zklock_mutex_new(own, case_path, NULL, &lock))
                   : seen(o, zklock_rwlock_new(own, case_path, &lock, &peer));
    } else {
        st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &lock));
    }
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire_async(lock, -1, queue_done, &h, &op));
    if (st == ZKLOCK_OK) st = seen(o, zklock_op_on_queued(op, queue_on_queued, &h));
    if (st != ZKLOCK_OK) {
        problem(o, "starting the acquire", st);
        goto done;
    }
    if (third || reader) {
        queue_next(&h, word, sizeof word);
        zklock_op_cancel(middle);
        queue_wait(&middle_heard, 10000, 1);
        if (third) queue_next(&h, word, sizeof word);
        if (third) {
            zklock_lease_release(held);
            held = NULL;
        }
    }
    queue_end(&h, word, sizeof word);
    o->word = word;
done:
    if (middle) {
        zklock_op_cancel(middle);
        queue_wait(&middle_heard, 10000, 1);
    }
    if (op) {
        zklock_op_cancel(op);
        queue_wait(&h, 10000, 1);
    }
    zklock_op_free(middle);
    zklock_op_free(op);
    if (held) zklock_lease_release(held);
    zklock_lock_free(lock);
    zklock_lock_free(peer);
    zklock_lock_free(middle_lock);
    zklock_lock_free(middle_peer);
    zklock_lock_free(held_lock);
    zklock_lock_free(held_peer);
    if (own) {
        zklock_client_close(own);
        zklock_client_free(own);
    }
    return 1;
}
