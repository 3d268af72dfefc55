/* The `zkc` limit: the bare operations of an uncontended lock cycle through ZooKeeper's own C
 * client (Debian's libzookeeper-mt, its multi-threaded variant), the same cycle as the `raw`
 * worker in src/rust_worker.rs: create (ephemeral sequential, protected-style name) sent
 * together with getChildren of the lock's folder, both awaited, then delete. Nothing else.
 *
 * Same command line and output as every worker (see src/common.rs): `--scenario s1|s4
 * --servers S --path P --warmup W --secs S [--locks N] [--start-at T --warm-ms W --slot-ms S
 * --nslots N --my-slot I --rounds R]`, one JSON line on stdout. CPU is getrusage(RUSAGE_SELF):
 * the whole process, so the client's own I/O and completion threads count too.
 *
 * Built by bench/run.sh: cc -O2 -pthread bench/c/zkc_worker.c -lzookeeper_mt. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* The synchronous calls (used for the folders only) are declared for the threaded library. */
#define THREADED
#include <zookeeper/zookeeper.h>

#define MAX_ROUNDS 256

static int argc_;
static char **argv_;

/* The value of `--key`, or `dflt`. */
static const char *opt(const char *key, const char *dflt) {
    for (int i = 1; i + 1 < argc_; i++)
        if (argv_[i][0] == '-' && argv_[i][1] == '-' && strcmp(argv_[i] + 2, key) == 0) return argv_[i + 1];
    return dflt;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t us = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000ull +
                  (uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec;
    return us * 1000ull;
}

static void wait_until(uint64_t t) {
    for (;;) {
        uint64_t n = now_ns();
        if (n >= t) return;
        struct timespec d = {(time_t)((t - n) / 1000000000ull), (long)((t - n) % 1000000000ull)};
        if (nanosleep(&d, NULL) == 0) return;
    }
}

static void die(const char *what, int rc) {
    fprintf(stderr, "zkc_worker: %s: %s (%d)\n", what, zerror(rc), rc);
    exit(1);
}

/* --- the session ------------------------------------------------------------------------- */

static pthread_mutex_t conn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conn_cv = PTHREAD_COND_INITIALIZER;
static int conn_state;

static void on_session_event(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    (void)zh, (void)path, (void)ctx;
    if (type != ZOO_SESSION_EVENT) return;
    pthread_mutex_lock(&conn_mu);
    conn_state = state;
    pthread_cond_broadcast(&conn_cv);
    pthread_mutex_unlock(&conn_mu);
}

static zhandle_t *open_session(const char *servers) {
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zoo_set_log_stream(stderr);
    /* 10 s, like the raw worker's session. */
    zhandle_t *zh = zookeeper_init(servers, on_session_event, 10000, NULL, NULL, 0);
    if (!zh) {
        fprintf(stderr, "zkc_worker: zookeeper_init(%s): %s\n", servers, strerror(errno));
        exit(1);
    }
    /* By default the client resolves the server list again every time its I/O thread polls
     * (getaddrinfo: a netlink socket, /etc/hosts, /etc/gai.conf, ... per reply): about 20 more
     * system calls per cycle, which would make this limit cost more than twice raw's CPU. -1
     * resolves only on a connection loss, as zklock and zookeeper-client do. */
    int rc = zoo_set_servers_resolution_delay(zh, -1);
    if (rc != ZOK) die("zoo_set_servers_resolution_delay", rc);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 15;
    pthread_mutex_lock(&conn_mu);
    while (conn_state != ZOO_CONNECTED_STATE) {
        if (pthread_cond_timedwait(&conn_cv, &conn_mu, &deadline) == ETIMEDOUT) {
            fprintf(stderr, "zkc_worker: no session with %s within 15 s\n", servers);
            exit(1);
        }
    }
    pthread_mutex_unlock(&conn_mu);
    return zh;
}

/* Creates `path` and its missing parents (persistent, open ACL), as the raw worker's mkdir. */
static void make_dirs(zhandle_t *zh, const char *path) {
    char buf[1024];
    size_t len = strlen(path);
    if (len >= sizeof buf) die("path too long", ZBADARGUMENTS);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char keep = buf[i];
        buf[i] = '\0';
        int rc = zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
        if (rc != ZOK && rc != ZNODEEXISTS) die("create folder", rc);
        buf[i] = keep;
    }
}

/* --- one lock cycle --------------------------------------------------------------------- */

/* What one caller waits on: its outstanding requests and their results. */
struct cycle {
    zhandle_t *zh;
    char dir[512], prefix[600], node[700];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending, rc;
};

static void cycle_init(struct cycle *c, zhandle_t *zh, const char *dir) {
    c->zh = zh;
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    snprintf(c->prefix, sizeof c->prefix, "%s/_c_00000000-0000-0000-0000-000000000000-lock-", dir);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
}

/* One reply in: note the first error, wake the caller when none is left. */
static void answered(struct cycle *c, int rc) {
    pthread_mutex_lock(&c->mu);
    if (rc != ZOK && c->rc == ZOK) c->rc = rc;
    if (--c->pending == 0) pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void on_created(int rc, const char *name, const void *data) {
    struct cycle *c = (struct cycle *)data;
    if (rc == ZOK && name) snprintf(c->node, sizeof c->node, "%s", name);
    answered(c, rc);
}

static void on_children(int rc, const struct String_vector *children, const void *data) {
    (void)children;
    answered((struct cycle *)data, rc);
}

static void on_deleted(int rc, const void *data) { answered((struct cycle *)data, rc); }

static void await_replies(struct cycle *c, const char *what) {
    pthread_mutex_lock(&c->mu);
    while (c->pending > 0) pthread_cond_wait(&c->cv, &c->mu);
    int rc = c->rc;
    pthread_mutex_unlock(&c->mu);
    if (rc != ZOK) die(what, rc);
}

static void arm(struct cycle *c, int n) {
    pthread_mutex_lock(&c->mu);
    c->pending = n;
    c->rc = ZOK;
    pthread_mutex_unlock(&c->mu);
}

/* create + getChildren queued together (one round trip), then delete. */
static void run_cycle(struct cycle *c) {
    arm(c, 2);
    int rc = zoo_acreate(c->zh, c->prefix, "raw", 3, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, on_created, c);
    if (rc != ZOK) die("zoo_acreate", rc);
    rc = zoo_aget_children(c->zh, c->dir, 0, on_children, c);
    if (rc != ZOK) die("zoo_aget_children", rc);
    await_replies(c, "create + getChildren");
    arm(c, 1);
    rc = zoo_adelete(c->zh, c->node, -1, on_deleted, c);
    if (rc != ZOK) die("zoo_adelete", rc);
    await_replies(c, "delete");
}

/* --- time slots (src/common.rs, Slots) --------------------------------------------------- */

struct slots {
    uint64_t start, warm, slot, n, me;
    int rounds;
};

static struct slots slots_from_args(void) {
    struct slots s;
    const char *start_at = opt("start-at", NULL);
    if (start_at) {
        s.start = strtoull(start_at, NULL, 10);
        s.warm = strtoull(opt("warm-ms", "1000"), NULL, 10) * 1000000ull;
        s.slot = strtoull(opt("slot-ms", "500"), NULL, 10) * 1000000ull;
        s.n = strtoull(opt("nslots", "1"), NULL, 10);
        s.me = strtoull(opt("my-slot", "0"), NULL, 10);
        s.rounds = atoi(opt("rounds", "1"));
    } else {
        s.start = now_ns();
        s.warm = (uint64_t)(atof(opt("warmup", "1")) * 1e9);
        s.slot = (uint64_t)(atof(opt("secs", "3")) * 1e9 / 0.9);
        s.n = 1;
        s.me = 0;
        s.rounds = 1;
    }
    if (s.rounds < 1) s.rounds = 1;
    if (s.rounds > MAX_ROUNDS) s.rounds = MAX_ROUNDS;
    return s;
}

static uint64_t warm_from(const struct slots *s) { return s->start + s->me * s->warm; }
static uint64_t round_from(const struct slots *s, int r) {
    return s->start + s->n * s->warm + ((uint64_t)r * s->n + s->me) * s->slot;
}
static uint64_t measured(const struct slots *s) { return s->slot * 9 / 10; }

/* One caller's loop over the warm-up window and its measured slots. */
struct loop {
    const struct slots *sl;
    struct cycle cycle;
    uint64_t counts[MAX_ROUNDS];
    uint64_t *lat;
    size_t n, cap;
};

static void *cycle_loop(void *p) {
    struct loop *l = p;
    const struct slots *sl = l->sl;
    wait_until(warm_from(sl));
    while (now_ns() < warm_from(sl) + sl->warm) run_cycle(&l->cycle);
    for (int r = 0; r < sl->rounds; r++) {
        uint64_t from = round_from(sl, r), to = from + measured(sl);
        wait_until(from);
        for (;;) {
            uint64_t t0 = now_ns();
            if (t0 >= to) break;
            run_cycle(&l->cycle);
            uint64_t t1 = now_ns();
            if (t1 <= to) {
                l->counts[r]++;
                if (l->n < l->cap) l->lat[l->n++] = t1 - t0;
            }
        }
    }
    return NULL;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest rank, like src/common.rs's percentile. */
static double percentile_us(const uint64_t *sorted, size_t n, double p) {
    if (n == 0) return 0.0;
    size_t rank = (size_t)((p / 100.0) * (double)n);
    if ((double)rank < (p / 100.0) * (double)n) rank++;
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return sorted[rank - 1] / 1000.0;
}

/* Scenario 1 (one lock, `locks` = 1) and 4 (`locks` locks cycled at once, one thread each,
 * over the one session); the main thread reads the CPU counters at each measured slot. */
static void slotted(zhandle_t *zh, const char *path, int locks, int per_lock_dirs) {
    struct slots sl = slots_from_args();
    struct loop *loops = calloc((size_t)locks, sizeof *loops);
    pthread_t *threads = calloc((size_t)locks, sizeof *threads);
    size_t cap = ((size_t)1 << 22) / (size_t)locks;
    if (!loops || !threads) die("out of memory", ZSYSTEMERROR);
    char dir[512];
    for (int i = 0; i < locks; i++) {
        if (per_lock_dirs)
            snprintf(dir, sizeof dir, "%s/%d", path, i);
        else
            snprintf(dir, sizeof dir, "%s", path);
        make_dirs(zh, dir);
        cycle_init(&loops[i].cycle, zh, dir);
        loops[i].sl = &sl;
        loops[i].cap = cap;
        loops[i].lat = malloc(cap * sizeof(uint64_t));
        if (!loops[i].lat) die("out of memory", ZSYSTEMERROR);
    }
    for (int i = 0; i < locks; i++)
        if (pthread_create(&threads[i], NULL, cycle_loop, &loops[i]) != 0) die("pthread_create", ZSYSTEMERROR);
    uint64_t cpu = 0;
    for (int r = 0; r < sl.rounds; r++) {
        uint64_t from = round_from(&sl, r);
        wait_until(from);
        uint64_t c0 = cpu_ns();
        wait_until(from + measured(&sl));
        cpu += cpu_ns() - c0;
    }
    size_t total = 0;
    for (int i = 0; i < locks; i++) {
        pthread_join(threads[i], NULL);
        total += loops[i].n;
    }
    uint64_t *lat = malloc((total ? total : 1) * sizeof(uint64_t));
    if (!lat) die("out of memory", ZSYSTEMERROR);
    double msecs = measured(&sl) / 1e9, per_round[MAX_ROUNDS] = {0};
    size_t ops = 0;
    for (int i = 0; i < locks; i++) {
        memcpy(lat + ops, loops[i].lat, loops[i].n * sizeof(uint64_t));
        ops += loops[i].n;
        for (int r = 0; r < sl.rounds; r++) per_round[r] += (double)loops[i].counts[r] / msecs;
    }
    qsort(lat, ops, sizeof(uint64_t), by_value);
    double secs = msecs * sl.rounds;
    printf("{\"ops\":%zu,\"secs\":%f,\"ops_s\":%f,\"p50_us\":%f,\"p99_us\":%f,\"rounds\":[", ops, secs,
           (double)ops / secs, percentile_us(lat, ops, 50.0), percentile_us(lat, ops, 99.0));
    for (int r = 0; r < sl.rounds; r++) printf("%s%f", r ? "," : "", per_round[r]);
    printf("],\"cpu_s\":%f", cpu / 1e9);
    if (ops) printf(",\"cpu_us_per_op\":%f", cpu / 1e3 / (double)ops);
    printf("}\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    argc_ = argc;
    argv_ = argv;
    const char *scenario = opt("scenario", "");
    const char *servers = opt("servers", NULL);
    const char *path = opt("path", NULL);
    if (!servers || !path) {
        fprintf(stderr, "zkc_worker: --servers and --path are needed\n");
        return 2;
    }
    int s1 = strcmp(scenario, "s1") == 0, s4 = strcmp(scenario, "s4") == 0;
    if (!s1 && !s4) {
        fprintf(stderr, "zkc_worker: no scenario %s (s1 and s4 only)\n", scenario);
        return 2;
    }
    zhandle_t *zh = open_session(servers);
    int locks = s4 ? atoi(opt("locks", "64")) : 1;
    slotted(zh, path, locks < 1 ? 1 : locks, s4);
    zookeeper_close(zh);
    return 0;
}
