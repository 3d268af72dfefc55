/* The C face's conformance runner: every case of tests/conformance/cases.txt, performed through
 * the public C API (include/zklock.h) as a C program would, against a real ZooKeeper.
 *
 *   conformance CASES_FILE SERVERS [PROXY HARNESS_FIFO HARNESS_ANSWERS]
 *
 * CASES_FILE is tests/conformance/cases.txt (format: tests/conformance/README.md), SERVERS the
 * test ZooKeeper's connect string (bindings-c/ci-test.sh starts one), which `$SERVERS` in an
 * input stands for; PROXY, HARNESS_FIFO and HARNESS_ANSWERS are the harness's fault proxy, its
 * command FIFO and answers file (issue 53's scenarios, conformance_peers.h). One line per case
 * (`ok`, `FAIL` or `n/a` with the reason), then `conformance c: N passed, N failed` (n/a cases are counted apart, on the line before). A case whose input C
 * cannot express (a NUL inside a C string, a NaN, infinite or huge timeout in int64_t
 * milliseconds) or whose call has no form in the C API is `n/a`, by name and with the reason.
 * Exits non-zero on any mismatch, unknown op or scenario, malformed line, or error message
 * longer than 300 characters.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../include/zklock.h"

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

#define MAX_MESSAGE 300

static const char *servers;
static zklock_client *main_client, *other_client;

/* The outcome of one case: a word, a kind name, or n/a with its reason; `problem` fails the case
 * whatever the outcome (a message too long, a call that should not have failed). */
struct outcome {
    const char *word;
    const char *na;
    char problem[512];
};

/* The kind name (the core's ErrorKind::as_str) of a C status. */
static const char *kind_of(zklock_status st) {
    switch (st) {
    case ZKLOCK_OK: return "ok";
    case ZKLOCK_TIMEOUT: return "Timeout";
    case ZKLOCK_CANCELLED: return "Cancelled";
    case ZKLOCK_LOST: return "LockLost";
    case ZKLOCK_SESSION_EXPIRED: return "SessionExpired";
    case ZKLOCK_CONNECTION: return "Connection";
    case ZKLOCK_NOT_HELD: return "NotHeld";
    case ZKLOCK_UPGRADE: return "UpgradeNotAllowed";
    case ZKLOCK_INVALID_ARGUMENT: return "InvalidArgument";
    case ZKLOCK_CLOSED: return "Closed";
    case ZKLOCK_PERMISSION: return "Permission";
    case ZKLOCK_ZOOKEEPER: return "ZooKeeper";
    case ZKLOCK_PANIC: return "Internal";
    case ZKLOCK_OUTCOME_UNKNOWN: return "OutcomeUnknown";
    case ZKLOCK_CONFLICT: return "Conflict";
    }
    return "unknown-status";
}

/* Every failing call goes through here: its message must exist and be at most 300 characters. */
static zklock_status seen(struct outcome *o, zklock_status st) {
    if (st != ZKLOCK_OK) {
        size_t n = strlen(zklock_last_error());
        if (n > MAX_MESSAGE && !o->problem[0])
            snprintf(o->problem, sizeof o->problem, "%s message of %zu characters (limit %d): %.80s...",
                     kind_of(st), n, MAX_MESSAGE, zklock_last_error());
        if (n == 0 && !o->problem[0])
            snprintf(o->problem, sizeof o->problem, "%s with an empty zklock_last_error()", kind_of(st));
    }
    return st;
}

static void problem(struct outcome *o, const char *what, zklock_status st) {
    if (!o->problem[0])
        snprintf(o->problem, sizeof o->problem, "%s: %s: %.200s", what, kind_of(st), zklock_last_error());
}

/* --- the data file ------------------------------------------------------------------------ */

struct bytes {
    char *p;
    size_t n;
};

static void push(struct bytes *b, size_t *cap, char c) {
    if (b->n + 2 > *cap) {
        *cap = *cap * 2 + 64;
        b->p = realloc(b->p, *cap);
    }
    b->p[b->n++] = c;
    b->p[b->n] = 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes `in` (`%XX`, `%*N(x)`), then replaces `$SERVERS`; NULL when malformed. */
static int decode(const char *in, struct bytes *out, char *err, size_t errn) {
    struct bytes raw = {calloc(1, 1), 0};
    size_t cap = 1;
    for (const char *s = in; *s;) {
        if (*s != '%') {
            push(&raw, &cap, *s++);
        } else if (s[1] == '*') {
            char *end;
            errno = 0;
            unsigned long n = strtoul(s + 2, &end, 10);
            if (end == s + 2 || errno || end[0] != '(' || !end[1] || end[2] != ')') {
                snprintf(err, errn, "bad repeat at \"%.20s\"", s);
                free(raw.p);
                return 0;
            }
            for (unsigned long i = 0; i < n; i++) push(&raw, &cap, end[1]);
            s = end + 3;
        } else if (hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
            push(&raw, &cap, (char)(hexval(s[1]) * 16 + hexval(s[2])));
            s += 3;
        } else {
            snprintf(err, errn, "bad escape at \"%.20s\"", s);
            free(raw.p);
            return 0;
        }
    }
    struct bytes done = {calloc(1, 1), 0};
    cap = 1;
    const char *var = "$SERVERS";
    size_t vn = strlen(var);
    for (size_t i = 0; i < raw.n;) {
        if (raw.n - i >= vn && memcmp(raw.p + i, var, vn) == 0) {
            for (const char *v = servers; *v; v++) push(&done, &cap, *v);
            i += vn;
        } else {
            push(&done, &cap, raw.p[i++]);
        }
    }
    free(raw.p);
    *out = done;
    return 1;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
    return s;
}

/* --- helpers ------------------------------------------------------------------------------ */

static zklock_status connect_with(struct outcome *o, const char *hosts, zklock_client_options *opts,
                                  zklock_client **out) {
    return seen(o, zklock_client_connect(hosts, opts, out));
}

static zklock_client *fresh_client(struct outcome *o) {
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.identity = "c-conformance";
    zklock_client *c = NULL;
    zklock_status st = connect_with(o, servers, &opts, &c);
    if (st != ZKLOCK_OK) problem(o, "connecting a client", st);
    return c;
}

/* Whether a C string can carry the input (it ends at its first NUL). */
static int has_nul(const struct bytes *in) { return memchr(in->p, 0, in->n) != NULL; }

/* Seconds as text to a double; 0 when the text is no number. */
static int parse_seconds(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end) return 0;
    *out = v;
    return 1;
}

/* Seconds to int64_t milliseconds, rounded; 0 (with the reason in `why`) when they do not fit. */
static int to_millis(double secs, int64_t *ms, const char **why) {
    if (isnan(secs)) {
        *why = "a NaN timeout has no int64_t milliseconds form in C";
        return 0;
    }
    if (isinf(secs)) {
        *why = "an infinite timeout has no int64_t milliseconds form in C";
        return 0;
    }
    double v = round(secs * 1000.0);
    if (v >= 9.2e18 || v <= -9.2e18) {
        *why = "the timeout does not fit in int64_t milliseconds (C's unit)";
        return 0;
    }
    *ms = (int64_t)v;
    return 1;
}

static char case_path[256];

/* --- ops ---------------------------------------------------------------------------------- */

static void op_path(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: a path with NUL inside cannot be passed";
        return;
    }
    zklock_lock *l = NULL;
    zklock_status st = seen(o, zklock_mutex_new(main_client, in->p, NULL, &l));
    if (st != ZKLOCK_OK) {
        o->word = kind_of(st);
        return;
    }
    zklock_lease *lease = NULL;
    st = seen(o, zklock_acquire(l, 0, &lease));
    if (st == ZKLOCK_OK) st = seen(o, zklock_lease_release(lease));
    o->word = kind_of(st);
    zklock_lock_free(l);
}

static void op_rwpath(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: a path with NUL inside cannot be passed";
        return;
    }
    zklock_lock *r = NULL, *w = NULL;
    zklock_status st = seen(o, zklock_rwlock_new(main_client, in->p, &r, &w));
    o->word = kind_of(st);
    zklock_lock_free(r);
    zklock_lock_free(w);
}

static void op_multi(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: a path with NUL inside cannot be passed";
        return;
    }
    char *copy = strdup(in->p);
    const char *paths[64];
    size_t n = 0;
    if (in->n > 0) {
        for (char *s = copy, *next; s && n < 64; s = next) {
            next = strchr(s, ',');
            if (next) *next++ = 0;
            paths[n++] = s;
        }
    }
    zklock_lock *l = NULL;
    zklock_status st = seen(o, zklock_multi_new(main_client, paths, n, &l));
    o->word = kind_of(st);
    zklock_lock_free(l);
    free(copy);
}

static void op_connect(struct outcome *o, const char *hosts, zklock_client_options *opts) {
    opts->connect_timeout_ms = 5000;
    zklock_client *c = NULL;
    zklock_status st = connect_with(o, hosts, opts, &c);
    o->word = kind_of(st);
    zklock_client_free(c);
}

static void op_hosts(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: a connect string with NUL inside cannot be passed";
        return;
    }
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    op_connect(o, in->p, &opts);
}

static void op_session_timeout(struct outcome *o, const struct bytes *in) {
    double secs;
    int64_t ms;
    if (!parse_seconds(in->p, &secs)) {
        snprintf(o->problem, sizeof o->problem, "the input %.40s is not a number of seconds", in->p);
        return;
    }
    if (!to_millis(secs, &ms, &o->na)) return;
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.session_timeout_ms = ms;
    op_connect(o, servers, &opts);
}

static void op_server_tick(struct outcome *o, const struct bytes *in) {
    double secs;
    int64_t ms;
    if (!parse_seconds(in->p, &secs)) {
        snprintf(o->problem, sizeof o->problem, "the input %.40s is not a number of seconds", in->p);
        return;
    }
    if (!to_millis(secs, &ms, &o->na)) return;
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.session_timeout_ms = 4000;
    opts.server_tick_ms = ms;
    op_connect(o, servers, &opts);
}

/* The tick the client runs on (zklock_client_server_tick_ms), in ms, with a 4 s session and the
 * input (seconds, or empty for none) as server_tick_ms. */
static void op_learned_tick(struct outcome *o, const struct bytes *in) {
    static char shown[32];
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.session_timeout_ms = 4000;
    opts.connect_timeout_ms = 5000;
    if (in->p[0] != '\0') {
        double secs;
        int64_t ms;
        if (!parse_seconds(in->p, &secs)) {
            snprintf(o->problem, sizeof o->problem, "the input %.40s is not a number of seconds", in->p);
            return;
        }
        if (!to_millis(secs, &ms, &o->na)) return;
        opts.server_tick_ms = ms;
    }
    zklock_client *c = NULL;
    zklock_status st = connect_with(o, servers, &opts, &c);
    if (st != ZKLOCK_OK) {
        o->word = kind_of(st);
    } else {
        snprintf(shown, sizeof shown, "%lld", (long long)zklock_client_server_tick_ms(c));
        o->word = shown;
    }
    zklock_client_free(c);
}

/* The version class that answered (zklock_client_server_version), on a default client. */
static void op_server_features(struct outcome *o, const struct bytes *in) {
    (void)in;
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.connect_timeout_ms = 5000;
    zklock_client *c = NULL;
    zklock_status st = connect_with(o, servers, &opts, &c);
    if (st != ZKLOCK_OK) {
        o->word = kind_of(st);
    } else {
        const char *version = zklock_client_server_version(c);
        o->word = version ? version : "NULL";
    }
    zklock_client_free(c);
}

static void op_identity(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: an identity with NUL inside cannot be passed";
        return;
    }
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.identity = in->p;
    op_connect(o, servers, &opts);
}

static void op_path_stats_limit(struct outcome *o, const struct bytes *in) {
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.path_stats_limit = strtoll(in->p, NULL, 10);
    op_connect(o, servers, &opts);
}

static void op_acl(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: a name with NUL inside cannot be passed";
        return;
    }
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.auth = "user:secret";
    zklock_status st = seen(o, zklock_acl_from_str(in->p, &opts.acl));
    if (st != ZKLOCK_OK) {
        o->word = kind_of(st);
        return;
    }
    op_connect(o, servers, &opts);
}

/* Nothing the C face shows (the lease's path, zklock_last_error after a malformed credential)
 * holds the password. */
/* Whether `shown` holds 12 consecutive characters of the PEM's body (no boundary lines). */
static int pem_body_shown(const char *shown, const char *pem) {
    char body[4096];
    size_t n = 0;
    for (const char *line = pem; *line && n < sizeof body - 1;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *t = line;
        while (t < end && (*t == ' ' || *t == '\t')) t++;
        if (strncmp(t, "-----", 5) != 0)
            for (; t < end && n < sizeof body - 1; t++)
                if (*t != '\r' && *t != ' ') body[n++] = *t;
        line = *end ? end + 1 : end;
    }
    body[n] = 0;
    for (size_t i = 0; i + 12 <= n; i++) {
        char window[13];
        memcpy(window, body + i, 12);
        window[12] = 0;
        if (strstr(shown, window)) return 1;
    }
    return 0;
}

/* SASL credentials for a server without SASL. */
static void op_sasl(struct outcome *o, const struct bytes *in) {
    static char user[256];
    const char *colon = strchr(in->p, ':');
    if (!colon || (size_t)(colon - in->p) >= sizeof user) {
        snprintf(o->problem, sizeof o->problem, "the input %.40s is not user:password", in->p);
        return;
    }
    memcpy(user, in->p, (size_t)(colon - in->p));
    user[colon - in->p] = 0;
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.connect_timeout_ms = 5000;
    opts.sasl_user = user;
    opts.sasl_password = colon + 1;
    zklock_client *c = NULL;
    zklock_status st = seen(o, zklock_client_connect(servers, &opts, &c));
    if (c) zklock_client_free(c);
    if (st != ZKLOCK_OK && strstr(zklock_last_error(), colon + 1)) o->word = "shown";
    else o->word = kind_of(st);
}

/* A PEM key given as content (or its body alone) to the TLS options: no error shows it. */
static void op_secret_pem(struct outcome *o, const struct bytes *in) {
    static char shown[4096];
    shown[0] = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        zklock_client_options opts;
        zklock_client_options_init(&opts);
        opts.connect_timeout_ms = 5000;
        if (attempt < 2) opts.tls_ca = in->p;
        if (attempt == 1) opts.tls_cert = in->p;
        if (attempt >= 1) opts.tls_key = in->p;
        zklock_client *c = NULL;
        zklock_status st = seen(o, zklock_client_connect(servers, &opts, &c));
        if (st == ZKLOCK_OK) {
            zklock_client_free(c);
            o->word = "connected";
            return;
        }
        size_t used = strlen(shown);
        snprintf(shown + used, sizeof shown - used, "%s ", zklock_last_error());
    }
    o->word = pem_body_shown(shown, in->p) ? "shown" : "hidden";
}

static void op_secret(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: a password with NUL inside cannot be passed";
        return;
    }
    char auth[512], shown[2048] = "";
    snprintf(auth, sizeof auth, "conformance:%s", in->p);
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.auth = auth;
    opts.acl = ZKLOCK_ACL_CREATOR_ALL;
    opts.connect_timeout_ms = 5000;
    zklock_client *c = NULL;
    zklock_lock *l = NULL;
    zklock_lease *lease = NULL;
    zklock_status st = seen(o, zklock_client_connect(servers, &opts, &c));
    if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(c, case_path, NULL, &l));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(l, 5000, &lease));
    if (st == ZKLOCK_OK) {
        snprintf(shown, sizeof shown, "%s", zklock_lease_path(lease));
        st = seen(o, zklock_lease_release(lease));
    }
    if (l) zklock_lock_free(l);
    if (c) zklock_client_free(c);
    if (st != ZKLOCK_OK) {
        o->word = kind_of(st);
        return;
    }
    opts.auth = in->p;
    opts.acl = ZKLOCK_ACL_OPEN;
    c = NULL;
    st = seen(o, zklock_client_connect(servers, &opts, &c));
    if (c) zklock_client_free(c);
    if (st != ZKLOCK_INVALID_ARGUMENT) {
        snprintf(o->problem, sizeof o->problem, "a credential without ':' gave %s", kind_of(st));
        return;
    }
    size_t used = strlen(shown);
    snprintf(shown + used, sizeof shown - used, " %s", zklock_last_error());
    o->word = strstr(shown, in->p) ? "shown" : "hidden";
}

/* A lease released by another thread after a delay. */
struct later {
    zklock_lease *lease;
    int ms;
    zklock_status status;
};

static void *release_later(void *arg) {
    struct later *l = arg;
    sleep_ms(l->ms);
    l->status = zklock_lease_release(l->lease);
    return NULL;
}

/* The `timeout` op's conversion of the input (seconds; -1 passed as C's "wait forever"). 0 when
 * the case ends here: a problem, or n/a with the reason. */
static int timeout_ms_of(struct outcome *o, const struct bytes *in, int64_t *ms) {
    double secs;
    if (!parse_seconds(in->p, &secs)) {
        snprintf(o->problem, sizeof o->problem, "the input %.40s is not a number of seconds", in->p);
        return 0;
    }
    if (strcmp(in->p, "-1") == 0) {
        *ms = -1;
        return 1;
    }
    return to_millis(secs, ms, &o->na);
}

static void op_timeout(struct outcome *o, const struct bytes *in) {
    int64_t ms;
    if (!timeout_ms_of(o, in, &ms)) return;
    zklock_lock *mine = NULL, *theirs = NULL;
    zklock_status st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &mine));
    if (st == ZKLOCK_OK) st = seen(o, zklock_mutex_new(other_client, case_path, NULL, &theirs));
    struct later holder = {NULL, 300, ZKLOCK_OK};
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(theirs, 10000, &holder.lease));
    if (st != ZKLOCK_OK) {
        problem(o, "setting up the holder", st);
        zklock_lock_free(mine);
        zklock_lock_free(theirs);
        return;
    }
    pthread_t t;
    pthread_create(&t, NULL, release_later, &holder);
    zklock_lease *lease = NULL;
    st = seen(o, zklock_acquire(mine, ms, &lease));
    if (st == ZKLOCK_OK) {
        o->word = "acquired";
        zklock_status rs = seen(o, zklock_lease_release(lease));
        if (rs != ZKLOCK_OK) problem(o, "releasing", rs);
    } else {
        o->word = st == ZKLOCK_TIMEOUT ? "not-acquired" : kind_of(st);
    }
    pthread_join(t, NULL);
    if (holder.status != ZKLOCK_OK) problem(o, "the holder's release", holder.status);
    zklock_lock_free(mine);
    zklock_lock_free(theirs);
}

/* Holds the case's lock through the main client: 1 with `*l` and `*a` set, else 0 (a problem
 * recorded, nothing left to free). */
static int hold_case_lock(struct outcome *o, zklock_lock **l, zklock_lease **a) {
    zklock_status st = seen(o, zklock_mutex_new(main_client, case_path, NULL, l));
    if (st == ZKLOCK_OK) st = seen(o, zklock_acquire(*l, 10000, a));
    if (st != ZKLOCK_OK) {
        problem(o, "holding the lock", st);
        zklock_lock_free(*l);
        *l = NULL;
        return 0;
    }
    return 1;
}

/* A guarded create with the input as its timeout; on failure the same create must succeed. */
static void op_guarded_timeout(struct outcome *o, const struct bytes *in) {
    int64_t ms;
    if (!timeout_ms_of(o, in, &ms)) return;
    static char data[600];
    snprintf(data, sizeof data, "%s-data", case_path);
    zklock_lock *l = NULL;
    zklock_lease *a = NULL;
    if (!hold_case_lock(o, &l, &a)) return;
    zklock_write create = {"create", data, "a", 1, 0};
    zklock_status st = seen(o, zklock_lease_guarded_write_timeout(a, &create, 1, ms));
    o->word = st == ZKLOCK_OK ? "created" : kind_of(st);
    zklock_write again[2] = {{"create", data, NULL, 0, 0}, {"delete", data, NULL, 0, 0}};
    zklock_write *cleanup = st == ZKLOCK_OK ? &again[1] : again;
    zklock_status cs = zklock_lease_guarded_write(a, cleanup, st == ZKLOCK_OK ? 1 : 2);
    if (cs != ZKLOCK_OK) {
        if (st == ZKLOCK_OK) problem(o, "deleting the node", cs);
        else o->word = "written-after-timeout";
    }
    zklock_status rs = zklock_lease_release(a);
    if (rs != ZKLOCK_OK) problem(o, "releasing", rs);
    zklock_lock_free(l);
}

/* A guarded create of the input number of bytes; then the lease must still be held. */
static void op_guarded_size(struct outcome *o, const struct bytes *in) {
    char *end;
    unsigned long long n = strtoull(in->p, &end, 10);
    if (end == in->p || *end) {
        snprintf(o->problem, sizeof o->problem, "the input %.40s is not a byte count", in->p);
        return;
    }
    static char data[600];
    snprintf(data, sizeof data, "%s-data", case_path);
    zklock_lock *l = NULL;
    zklock_lease *a = NULL;
    if (!hold_case_lock(o, &l, &a)) return;
    char *bytes = malloc(n ? n : 1);
    memset(bytes, 'a', n);
    zklock_write create = {"create", data, bytes, n, 0};
    zklock_status st = seen(o, zklock_lease_guarded_write(a, &create, 1));
    free(bytes);
    o->word = st == ZKLOCK_OK ? "created" : kind_of(st);
    if (st == ZKLOCK_OK) {
        zklock_write del = {"delete", data, NULL, 0, 0};
        zklock_status cs = zklock_lease_guarded_write(a, &del, 1);
        if (cs != ZKLOCK_OK) problem(o, "deleting the node", cs);
    }
    enum zklock_lease_state state = zklock_lease_state_get(a);
    if (state != ZKLOCK_LEASE_HELD) {
        static char word[64];
        snprintf(word, sizeof word, "%s,%s", o->word, zklock_lease_state_str(state));
        o->word = word;
    }
    zklock_lease_release(a);
    zklock_lock_free(l);
}


/* --- participants and elections ------------------------------------------------------------ */

/* Participant `i` of a list (size set); 0 when there is none. */
static int participant_at(zklock_participants *list, size_t i, zklock_participant *p) {
    memset(p, 0, sizeof *p);
    p->size = sizeof *p;
    return zklock_participants_get(list, i, p) == ZKLOCK_OK;
}

/* The lock's participant whose node is the lease's path; 0 when not found. */
static int find_node(zklock_participants *list, const char *node, zklock_participant *p) {
    for (size_t i = 0; i < zklock_participants_count(list); i++)
        if (participant_at(list, i, p) && strcmp(p->node, node) == 0) return 1;
    return 0;
}

/* Waits (up to 5 s) until the election lists `n` participants. */
static int wait_for_participants(zklock_election *e, size_t n) {
    for (int i = 0; i < 100; i++) {
        zklock_participants *list = NULL;
        if (zklock_election_participants(e, &list) == ZKLOCK_OK) {
            size_t got = zklock_participants_count(list);
            zklock_participants_free(list);
            if (got == n) return 1;
        }
        sleep_ms(50);
    }
    return 0;
}

/* The completion of an async lead (or a requeue), waited for by the runner. */
struct lead_done {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    zklock_status status;
    zklock_lease *lease;
};

static void lead_done_cb(void *user, zklock_status status, zklock_lease *lease) {
    struct lead_done *d = user;
    pthread_mutex_lock(&d->mu);
    d->status = status;
    d->lease = lease;
    d->done = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void lead_done_init(struct lead_done *d) {
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
}

/* Waits up to `ms` for the completion: its status (ZKLOCK_TIMEOUT when it did not come). */
static zklock_status lead_done_wait(struct lead_done *d, int ms) {
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += ms / 1000;
    at.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (at.tv_nsec >= 1000000000L) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&d->mu);
    while (!d->done)
        if (pthread_cond_timedwait(&d->cv, &d->mu, &at) != 0) break;
    zklock_status st = d->done ? d->status : ZKLOCK_TIMEOUT;
    pthread_mutex_unlock(&d->mu);
    return st;
}

static void lead_done_destroy(struct lead_done *d) {
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
}

/* op election_style: an election with the input as style name, id "conformance"; one try. */
static void op_election_style(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: a style name with NUL inside cannot be passed";
        return;
    }
    zklock_election *e = NULL;
    zklock_status st = seen(o, zklock_election_new(main_client, case_path, in->p, "conformance", -1, &e));
    if (st == ZKLOCK_OK) {
        zklock_lease *lead = NULL;
        st = seen(o, zklock_election_lead(e, 0, &lead));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_resign(e, lead, false, NULL, NULL, NULL));
    }
    o->word = kind_of(st);
    zklock_election_free(e);
}

/* op election_id: a latch with the input as id; lead once, the leader's id read back. */
static void op_election_id(struct outcome *o, const struct bytes *in) {
    if (has_nul(in)) {
        o->na = "a C string ends at its first NUL: an id with NUL inside cannot be passed";
        return;
    }
    zklock_election *e = NULL;
    zklock_status st = seen(o, zklock_election_new(main_client, case_path, "latch", in->p, -1, &e));
    if (st != ZKLOCK_OK) {
        o->word = kind_of(st);
        return;
    }
    zklock_lease *lead = NULL;
    zklock_participants *leader = NULL;
    zklock_participant p;
    st = seen(o, zklock_election_lead(e, 0, &lead));
    if (st == ZKLOCK_OK) st = seen(o, zklock_election_leader(e, &leader));
    if (st != ZKLOCK_OK) {
        problem(o, "leading and reading the leader", st);
    } else if (!participant_at(leader, 0, &p)) {
        snprintf(o->problem, sizeof o->problem, "nobody leads after a successful lead");
    } else {
        o->word = strcmp(p.id, in->p) == 0 ? "ok" : "id-differs";
    }
    zklock_participants_free(leader);
    if (lead) {
        st = seen(o, zklock_election_resign(e, lead, false, NULL, NULL, NULL));
        if (st != ZKLOCK_OK) problem(o, "resigning", st);
    }
    zklock_election_free(e);
}

/* op max_hold: the case's mutex with the input (seconds) as maximum hold in milliseconds;
 * acquired, then up to 5 s for the lease to turn lost, and the lost reason's first word. */
static void op_max_hold(struct outcome *o, const struct bytes *in) {
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
    zklock_status st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &l));
    if (st != ZKLOCK_OK) {
        problem(o, "making the mutex", st);
        return;
    }
    st = seen(o, zklock_lock_set_max_hold(l, ms));
    if (st != ZKLOCK_OK) {
        o->word = kind_of(st);
        zklock_lock_free(l);
        return;
    }
    zklock_lease *lease = NULL;
    st = seen(o, zklock_acquire(l, 10000, &lease));
    if (st != ZKLOCK_OK) {
        problem(o, "acquiring", st);
        zklock_lock_free(l);
        return;
    }
    for (int i = 0; i < 50 && zklock_lease_state_get(lease) != ZKLOCK_LEASE_LOST; i++) sleep_ms(100);
    const char *reason = zklock_lease_lost_reason(lease);
    if (zklock_lease_state_get(lease) == ZKLOCK_LEASE_LOST && reason) {
        /* "<...> lost: <why>": the first word of why (up to ':' or ' '). */
        static char word[96];
        const char *why = strstr(reason, " lost: ");
        why = why ? why + 7 : "";
        size_t n = strcspn(why, ": ");
        snprintf(word, sizeof word, "lost,%.*s", (int)(n < 80 ? n : 80), why);
        o->word = word;
    } else {
        o->word = "held";
    }
    zklock_lease_release(lease);
    zklock_lock_free(l);
}

/* op participants_timeout: hold the case's lock, list its participants within the input. */
static void op_participants_timeout(struct outcome *o, const struct bytes *in) {
    int64_t ms;
    if (!timeout_ms_of(o, in, &ms)) return;
    zklock_lock *l = NULL;
    zklock_lease *a = NULL;
    if (!hold_case_lock(o, &l, &a)) return;
    zklock_participants *list = NULL;
    zklock_status st = seen(o, zklock_lock_participants(l, ms, &list));
    if (st == ZKLOCK_OK) {
        static char word[32];
        snprintf(word, sizeof word, "listed=%zu", zklock_participants_count(list));
        o->word = word;
    } else {
        o->word = kind_of(st);
    }
    zklock_participants_free(list);
    zklock_status rs = zklock_lease_release(a);
    if (rs != ZKLOCK_OK) problem(o, "releasing", rs);
    zklock_lock_free(l);
}

/* --- scenarios ---------------------------------------------------------------------------- */

struct try_arg {
    zklock_lock *lock;
    zklock_status status;
    struct outcome *o;
};

static void *try_once(void *arg) {
    struct try_arg *a = arg;
    zklock_lease *lease = NULL;
    /* seen() here: the message is this thread's (zklock_last_error() is per thread). */
    a->status = seen(a->o, zklock_acquire(a->lock, 0, &lease));
    if (a->status == ZKLOCK_OK) zklock_lease_release(lease);
    return NULL;
}

/* A try on `lock` from another thread (a second owner in C). */
static zklock_status try_from_another_thread(struct outcome *o, zklock_lock *lock) {
    struct try_arg a = {lock, ZKLOCK_OK, o};
    pthread_t t;
    pthread_create(&t, NULL, try_once, &a);
    pthread_join(t, NULL);
    return a.status;
}

/* The states a zklock_lease_on_state callback hears, joined by ','. */
struct heard {
    pthread_mutex_t mu;
    char text[128];
    int lost;
};

static void heard_cb(void *user, zklock_lease *lease, zklock_lease_state state) {
    (void)lease;
    struct heard *h = user;
    pthread_mutex_lock(&h->mu);
    if (h->text[0]) strncat(h->text, ",", sizeof h->text - strlen(h->text) - 1);
    strncat(h->text, zklock_lease_state_str(state), sizeof h->text - strlen(h->text) - 1);
    if (state == ZKLOCK_LEASE_LOST) h->lost = 1;
    pthread_mutex_unlock(&h->mu);
}

static int heard_lost(struct heard *h) {
    pthread_mutex_lock(&h->mu);
    int lost = h->lost;
    pthread_mutex_unlock(&h->mu);
    return lost;
}

static const char *try_word(zklock_status st) {
    return st == ZKLOCK_OK ? "acquired" : st == ZKLOCK_TIMEOUT ? "not-acquired" : kind_of(st);
}

/* A revocation callback's flag (revoke-requested). */
static struct {
    pthread_mutex_t mu;
    int asked;
} revoke_heard = {PTHREAD_MUTEX_INITIALIZER, 0};

static void revoke_heard_cb(void *user, zklock_lease *lease) {
    (void)user;
    (void)lease;
    pthread_mutex_lock(&revoke_heard.mu);
    revoke_heard.asked = 1;
    pthread_mutex_unlock(&revoke_heard.mu);
}

/* What the connection-states scenario's callback heard, joined by ','. */
static struct {
    pthread_mutex_t mu;
    char text[128];
    int lost;
} connection_heard = {PTHREAD_MUTEX_INITIALIZER, "", 0};

static void connection_heard_cb(void *user, zklock_client *client, zklock_connection_state state) {
    (void)user;
    (void)client;
    pthread_mutex_lock(&connection_heard.mu);
    size_t n = strlen(connection_heard.text);
    snprintf(connection_heard.text + n, sizeof connection_heard.text - n, "%s%s", n ? "," : "",
             zklock_connection_state_str(state));
    if (state == ZKLOCK_CONNECTION_LOST) connection_heard.lost = 1;
    pthread_mutex_unlock(&connection_heard.mu);
}

/* The outcome of the cancel scenario's async acquire. */
static struct {
    pthread_mutex_t mu;
    int done;
    zklock_status status;
} cancelled_acquire = {PTHREAD_MUTEX_INITIALIZER, 0, ZKLOCK_OK};

static void cancelled_acquire_cb(void *user, zklock_status status, zklock_lease *lease) {
    (void)user;
    if (lease) zklock_lease_release(lease);
    pthread_mutex_lock(&cancelled_acquire.mu);
    cancelled_acquire.status = status;
    cancelled_acquire.done = 1;
    pthread_mutex_unlock(&cancelled_acquire.mu);
}

static int revoke_was_heard(void) {
    pthread_mutex_lock(&revoke_heard.mu);
    int asked = revoke_heard.asked;
    pthread_mutex_unlock(&revoke_heard.mu);
    return asked;
}

/* op semaphore: N as C's int64_t (the parameter's type), then one try and its release. */
static void op_semaphore(struct outcome *o, const struct bytes *in) {
    char *end = NULL;
    errno = 0;
    long long n = strtoll(in->p, &end, 10);
    if (errno || end == in->p || *end) {
        o->na = "the number of leases does not fit in int64_t (C's parameter type)";
        return;
    }
    zklock_lock *l = NULL;
    zklock_status st = seen(o, zklock_semaphore_new(main_client, case_path, (int64_t)n, NULL, &l));
    if (st == ZKLOCK_OK) {
        zklock_lease *lease = NULL;
        /* At most 5 s, not a try: the first lease also creates `leases` and its parents. */
        st = seen(o, zklock_acquire(l, 5000, &lease));
        if (st == ZKLOCK_OK) st = seen(o, zklock_lease_release(lease));
    }
    o->word = st == ZKLOCK_OK ? "ok" : kind_of(st);
    zklock_lock_free(l);
}

/* concurrent-callers-one-value (issue 50): threads sharing one lock handle, each acquiring it,
 * acquiring it again nested (a try: it must count up at once, on the same token) and releasing
 * both. C has no hold-count call: the nested try's success and token stand for the count. */
#define CALLERS 5
struct callers {
    zklock_lock *lock;
    pthread_mutex_t mu;
    int inside, most, entered, counted, failed;
    int64_t tokens[CALLERS];
};

static void *one_caller(void *arg) {
    struct callers *c = arg;
    zklock_lease *lease = NULL, *nested = NULL;
    if (zklock_acquire(c->lock, 10000, &lease) != ZKLOCK_OK) {
        pthread_mutex_lock(&c->mu);
        c->failed++;
        pthread_mutex_unlock(&c->mu);
        return NULL;
    }
    pthread_mutex_lock(&c->mu);
    if (++c->inside > c->most) c->most = c->inside;
    c->tokens[c->entered++] = zklock_lease_token(lease);
    pthread_mutex_unlock(&c->mu);
    int counted = zklock_acquire(c->lock, 0, &nested) == ZKLOCK_OK &&
                  zklock_lease_token(nested) == zklock_lease_token(lease);
    usleep(20000);
    if (nested) zklock_lease_release(nested);
    pthread_mutex_lock(&c->mu);
    c->inside--;
    c->counted += counted;
    pthread_mutex_unlock(&c->mu);
    zklock_lease_release(lease);
    return NULL;
}

static void concurrent_callers(struct outcome *o) {
    static char word[64];
    struct callers c = {0};
    pthread_mutex_init(&c.mu, NULL);
    zklock_status st = seen(o, zklock_mutex_new(main_client, case_path, NULL, &c.lock));
    if (st != ZKLOCK_OK) {
        o->word = kind_of(st);
        pthread_mutex_destroy(&c.mu);
        return;
    }
    pthread_t t[CALLERS];
    for (int i = 0; i < CALLERS; i++) pthread_create(&t[i], NULL, one_caller, &c);
    for (int i = 0; i < CALLERS; i++) pthread_join(t[i], NULL);
    int up = c.entered == CALLERS && !c.failed;
    for (int i = 1; up && i < CALLERS; i++) up = c.tokens[i - 1] < c.tokens[i];
    snprintf(word, sizeof word, "%s,%s,%s", c.most == 1 ? "excluded" : "overlapped",
             up ? "tokens-up" : "tokens-not-up", c.counted == CALLERS ? "counted-up" : "not-counted");
    o->word = word;
    zklock_lock_free(c.lock);
    pthread_mutex_destroy(&c.mu);
}

#include "conformance_lease.h"
#include "conformance_break.h"
#include "conformance_queue.h"
#include "conformance_peers.h"

static void scenario(struct outcome *o, const char *name) {
    zklock_lock *l = NULL, *r = NULL, *w = NULL, *other = NULL;
    zklock_lease *a = NULL, *b = NULL;
    zklock_client *c = NULL;
    zklock_status st;
#define TRY(call, what)                                                                        \
    do {                                                                                       \
        st = seen(o, (call));                                                                  \
        if (st != ZKLOCK_OK) {                                                                 \
            o->word = kind_of(st);                                                             \
            if (!(what)[0]) goto done;                                                         \
            problem(o, what, st);                                                              \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)

    if (strcmp(name, "concurrent-callers-one-value") == 0) {
        concurrent_callers(o);
    } else if (strcmp(name, "reenter-same-owner") == 0) {
        /* C has no hold-count call: the count is what another client sees. Two holds by this
         * thread; after one release the lock is still held, after the second it is free. */
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_mutex_new(other_client, case_path, NULL, &other), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the first acquire");
        TRY(zklock_acquire(l, 0, &b), "");
        TRY(zklock_lease_release(a), "the first release");
        a = NULL;
        zklock_status after_one = try_from_another_thread(o, other);
        TRY(zklock_lease_release(b), "the second release");
        b = NULL;
        zklock_status after_two = try_from_another_thread(o, other);
        if (after_one == ZKLOCK_TIMEOUT && after_two == ZKLOCK_OK)
            o->word = "held-twice";
        else if (after_one == ZKLOCK_OK)
            o->word = "held-once";
        else
            o->word = "held-more";
    } else if (strcmp(name, "second-owner-try") == 0) {
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the holder's acquire");
        o->word = try_word(try_from_another_thread(o, l));
    } else if (strcmp(name, "other-client-try") == 0) {
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_mutex_new(other_client, case_path, NULL, &other), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the holder's acquire");
        o->word = try_word(seen(o, zklock_acquire(other, 0, &b)));
    } else if (strcmp(name, "release-twice") == 0) {
        o->na = "zklock_lease_release frees the lease: a second release passes a freed pointer "
                "(a use after free in C, reported by the handle registry as ZKLOCK_INVALID_ARGUMENT)";
    } else if (strcmp(name, "release-not-held") == 0) {
        o->na = "C releases only a zklock_lease, which exists only after an acquire";
    } else if (strcmp(name, "lock-after-close") == 0) {
        o->na = "C closes a client with zklock_client_free: a lock made on it afterwards passes a "
                "freed pointer (a use after free in C)";
    } else if (strcmp(name, "acquire-after-close") == 0) {
        c = fresh_client(o);
        if (!c) goto done;
        TRY(zklock_mutex_new(c, case_path, NULL, &l), "making the mutex");
        zklock_client_free(c);
        c = NULL;
        st = seen(o, zklock_acquire(l, 0, &a));
        o->word = try_word(st);
    } else if (strcmp(name, "upgrade") == 0 || strcmp(name, "downgrade") == 0) {
        int up = strcmp(name, "upgrade") == 0;
        TRY(zklock_rwlock_new(main_client, case_path, &r, &w), "making the read/write lock");
        TRY(zklock_acquire(up ? r : w, 10000, &a), "the first side's acquire");
        o->word = try_word(seen(o, zklock_acquire(up ? w : r, 0, &b)));
    } else if (strcmp(name, "state-held") == 0) {
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        o->word = zklock_lease_state_str(zklock_lease_state_get(a));
    } else if (strcmp(name, "state-released") == 0) {
        o->na = "zklock_lease_release frees the lease: there is no released lease to ask its state";
    } else if (strcmp(name, "state-lost-on-close") == 0) {
        c = fresh_client(o);
        if (!c) goto done;
        TRY(zklock_mutex_new(c, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        zklock_client_free(c);
        c = NULL;
        o->word = zklock_lease_state_str(zklock_lease_state_get(a));
        st = seen(o, zklock_lease_release(a)); /* ZKLOCK_LOST: nothing left to delete */
        a = NULL;
        if (st != ZKLOCK_LOST) problem(o, "releasing the lost lease (expected ZKLOCK_LOST)", st);
    } else if (strcmp(name, "subscription") == 0) {
        /* Subscribe, free the client (its leases turn lost); what the callback heard until
         * LOST, and 300 ms more (nothing may follow a final state). */
        static struct heard h;
        static char heard_text[128];
        memset(h.text, 0, sizeof h.text);
        h.lost = 0;
        pthread_mutex_init(&h.mu, NULL);
        c = fresh_client(o);
        if (!c) goto done;
        TRY(zklock_mutex_new(c, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        TRY(zklock_lease_on_state(a, heard_cb, &h), "subscribing");
        zklock_client_free(c);
        c = NULL;
        for (int i = 0; i < 50 && !heard_lost(&h); i++) sleep_ms(100);
        sleep_ms(300);
        st = seen(o, zklock_lease_release(a)); /* ZKLOCK_LOST: nothing left to delete */
        a = NULL;
        if (st != ZKLOCK_LOST) problem(o, "releasing the lost lease (expected ZKLOCK_LOST)", st);
        pthread_mutex_lock(&h.mu);
        snprintf(heard_text, sizeof heard_text, "%s", h.text);
        pthread_mutex_unlock(&h.mu);
        o->word = heard_text;
    } else if (strncmp(name, "release-outcome", 15) == 0) {
        o->na = "zklock_lease_release reports a status, not the core's release outcome (ZKLOCK_OK "
                "for released and still-held alike, ZKLOCK_LOST for was-lost)";
    } else if (strcmp(name, "stats-outcomes") == 0) {
        c = fresh_client(o);
        if (!c) goto done;
        TRY(zklock_mutex_new(c, case_path, NULL, &l), "making the mutex");
        TRY(zklock_mutex_new(other_client, case_path, NULL, &other), "making the mutex");
        TRY(zklock_acquire(other, 10000, &b), "the other client's acquire");
        st = seen(o, zklock_acquire(l, 0, &a));
        if (st != ZKLOCK_TIMEOUT) {
            problem(o, "the try (expected ZKLOCK_TIMEOUT)", st);
            goto done;
        }
        TRY(zklock_lease_release(b), "the other client's release");
        b = NULL;
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        zklock_stats during = {.size = sizeof(zklock_stats)}, after = {.size = sizeof(zklock_stats)};
        TRY(zklock_client_stats(c, &during), "the stats");
        TRY(zklock_lease_release(a), "the release");
        a = NULL;
        TRY(zklock_client_stats(c, &after), "the stats");
        static char text[160];
        snprintf(text, sizeof text, "acquired=%llu,timed_out=%llu,held=%llu,after=%llu,holds=%llu",
                 (unsigned long long)after.acquired, (unsigned long long)after.timed_out,
                 (unsigned long long)during.held, (unsigned long long)after.held,
                 (unsigned long long)after.hold.count);
        o->word = text;
    } else if (strcmp(name, "stats-lost") == 0) {
        o->na = "C closes a client with zklock_client_free: no client is left to ask its stats "
                "(the lost count after a black hole is in test_zklock.c)";
    } else if (strcmp(name, "guarded-write") == 0) {
        static char data[600], text[160];
        snprintf(data, sizeof data, "%s-data", case_path);
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        zklock_write create = {"create", data, "a", 1, 0};
        TRY(zklock_lease_guarded_write(a, &create, 1), "the guarded create");
        zklock_write more[2] = {{"set_data", data, "b", 1, 0}, {"delete", data, NULL, 0, 0}};
        TRY(zklock_lease_guarded_write(a, more, 2), "the guarded set and delete");
        /* C has no per-write result for a create or a delete: ZKLOCK_OK says each applied. */
        snprintf(text, sizeof text, "created,version=%d,deleted", (int)more[0].version);
        o->word = text;
    } else if (strcmp(name, "guarded-write-lost") == 0) {
        static char data[600];
        snprintf(data, sizeof data, "%s-data", case_path);
        c = fresh_client(o);
        if (!c) goto done;
        TRY(zklock_mutex_new(c, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        zklock_client_free(c);
        c = NULL;
        zklock_write late = {"create", data, "late", 4, 0};
        st = seen(o, zklock_lease_guarded_write(a, &late, 1));
        o->word = st == ZKLOCK_OK ? "written" : kind_of(st);
        TRY(zklock_mutex_new(other_client, case_path, NULL, &other), "making the mutex");
        TRY(zklock_acquire(other, 10000, &b), "the other client's acquire");
        zklock_write again[2] = {{"create", data, NULL, 0, 0}, {"delete", data, NULL, 0, 0}};
        if (zklock_lease_guarded_write(b, again, 2) != ZKLOCK_OK) o->word = "written-after-loss";
    } else if (strcmp(name, "guarded-write-unknown-op") == 0) {
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        zklock_write w = {"append", case_path, "x", 1, 0};
        st = seen(o, zklock_lease_guarded_write(a, &w, 1));
        o->word = st == ZKLOCK_OK ? "written" : kind_of(st);
    } else if (strcmp(name, "semaphore-fills") == 0) {
        /* Two other clients each hold a lease of a semaphore of 2; this one tries. */
        c = fresh_client(o);
        if (!c) goto done;
        TRY(zklock_semaphore_new(other_client, case_path, 2, NULL, &other), "making a semaphore");
        TRY(zklock_semaphore_new(c, case_path, 2, NULL, &r), "making a semaphore");
        TRY(zklock_semaphore_new(main_client, case_path, 2, NULL, &l), "making a semaphore");
        TRY(zklock_acquire(other, 10000, &a), "the first holder's acquire");
        TRY(zklock_acquire(r, 10000, &b), "the second holder's acquire");
        zklock_lease *tried = NULL;
        st = seen(o, zklock_acquire(l, 0, &tried));
        if (tried) zklock_lease_release(tried);
        o->word = try_word(st);
    } else if (strcmp(name, "semaphore-two-leases-one-value") == 0) {
        TRY(zklock_semaphore_new(main_client, case_path, 2, NULL, &l), "making the semaphore");
        TRY(zklock_acquire(l, 10000, &a), "the first acquire");
        st = seen(o, zklock_acquire(l, 0, &b));
        if (st == ZKLOCK_OK && strcmp(zklock_lease_path(a), zklock_lease_path(b)) == 0)
            o->word = "same-node";
        else
            o->word = try_word(st);
    } else if (strcmp(name, "semaphore-mutex-not-reentrant") == 0) {
        TRY(zklock_semaphore_mutex_new(main_client, case_path, NULL, &l), "making the semaphore mutex");
        TRY(zklock_acquire(l, 10000, &a), "the holder's acquire");
        o->word = try_word(seen(o, zklock_acquire(l, 0, &b)));
    } else if (strcmp(name, "revoke-requested") == 0) {
        pthread_mutex_lock(&revoke_heard.mu);
        revoke_heard.asked = 0;
        pthread_mutex_unlock(&revoke_heard.mu);
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the holder's acquire");
        TRY(zklock_lease_on_revoke(a, revoke_heard_cb, NULL), "listening for revocation");
        TRY(zklock_revoke(other_client, case_path, NULL), "the second client's revoke");
        for (int i = 0; i < 50 && !revoke_was_heard(); i++) sleep_ms(100);
        o->word = revoke_was_heard() ? "revoke-requested" : "not-requested";
    } else if (strcmp(name, "connection-states") == 0) {
        pthread_mutex_lock(&connection_heard.mu);
        connection_heard.text[0] = 0;
        connection_heard.lost = 0;
        pthread_mutex_unlock(&connection_heard.mu);
        c = fresh_client(o);
        if (!c) goto done;
        TRY(zklock_client_on_connection(c, connection_heard_cb, NULL), "listening to the connection");
        TRY(zklock_client_close(c), "closing the client");
        int lost = 0;
        for (int i = 0; i < 50 && !lost; i++) {
            pthread_mutex_lock(&connection_heard.mu);
            lost = connection_heard.lost;
            pthread_mutex_unlock(&connection_heard.mu);
            if (!lost) sleep_ms(100);
        }
        sleep_ms(300);
        static char heard[128];
        pthread_mutex_lock(&connection_heard.mu);
        snprintf(heard, sizeof heard, "%s", connection_heard.text);
        pthread_mutex_unlock(&connection_heard.mu);
        o->word = heard;
    } else if (strcmp(name, "cancel-waiting-acquire") == 0) {
        /* C cancels an async acquire (zklock_op_cancel). No listing in C: a node the cancelled
         * acquire left would stand first once the holder releases, so a try fails then. */
        pthread_mutex_lock(&cancelled_acquire.mu);
        cancelled_acquire.done = 0;
        pthread_mutex_unlock(&cancelled_acquire.mu);
        zklock_op *op = NULL;
        TRY(zklock_mutex_new(other_client, case_path, NULL, &other), "making the holder's mutex");
        TRY(zklock_acquire(other, 10000, &b), "the holder's acquire");
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire_async(l, -1, cancelled_acquire_cb, NULL, &op), "starting the acquire");
        sleep_ms(200);
        st = seen(o, zklock_op_cancel(op));
        zklock_op_free(op);
        if (st != ZKLOCK_OK) {
            problem(o, "cancelling", st);
            goto done;
        }
        int done_yet = 0;
        for (int i = 0; i < 100 && !done_yet; i++) {
            pthread_mutex_lock(&cancelled_acquire.mu);
            done_yet = cancelled_acquire.done;
            pthread_mutex_unlock(&cancelled_acquire.mu);
            if (!done_yet) sleep_ms(50);
        }
        if (!done_yet) {
            snprintf(o->problem, sizeof o->problem, "the cancelled acquire never called back");
            goto done;
        }
        o->word = cancelled_acquire.status == ZKLOCK_OK ? "acquired" : kind_of(cancelled_acquire.status);
        TRY(zklock_lease_release(b), "the holder's release");
        b = NULL;
        if (zklock_acquire(l, 0, &a) != ZKLOCK_OK) o->word = "left-node";
    } else if (strcmp(name, "revoke-not-held") == 0) {
        st = seen(o, zklock_revoke(main_client, case_path, NULL));
        o->word = st == ZKLOCK_OK ? "revoked" : kind_of(st);
    } else if (strncmp(name, "kind-", 5) == 0 && strcmp(name, "kind-latch") != 0) {
        /* Our node's kind among the lock's participants. */
        int sem = strcmp(name, "kind-lease") == 0;
        zklock_lock *held = NULL;
        if (sem) {
            TRY(zklock_semaphore_new(main_client, case_path, 2, NULL, &l), "making the semaphore");
            held = l;
        } else if (strcmp(name, "kind-mutex") == 0) {
            TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
            held = l;
        } else {
            TRY(zklock_rwlock_new(main_client, case_path, &r, &w), "making the read/write lock");
            held = strcmp(name, "kind-read") == 0 ? r : w;
        }
        TRY(zklock_acquire(held, 10000, &a), "the acquire");
        zklock_participants *list = NULL;
        TRY(zklock_lock_participants(held, 10000, &list), "listing the participants");
        static char word[32];
        zklock_participant p;
        if (find_node(list, zklock_lease_path(a), &p)) {
            snprintf(word, sizeof word, "%s", p.kind);
            o->word = word;
        } else {
            snprintf(o->problem, sizeof o->problem, "our node is not among the participants");
        }
        zklock_participants_free(list);
    } else if (strcmp(name, "library") == 0) {
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        zklock_participants *list = NULL;
        TRY(zklock_lock_participants(l, 10000, &list), "listing the participants");
        static char word[32];
        zklock_participant p;
        if (find_node(list, zklock_lease_path(a), &p)) {
            snprintf(word, sizeof word, "%s", p.library);
            o->word = word;
        } else {
            snprintf(o->problem, sizeof o->problem, "our node is not among the participants");
        }
        zklock_participants_free(list);
    } else if (strcmp(name, "kind-latch") == 0 || strcmp(name, "library-kazoo-style") == 0) {
        int latch = strcmp(name, "kind-latch") == 0;
        zklock_election *e = NULL;
        zklock_participants *list = NULL;
        st = seen(o, zklock_election_new(main_client, case_path, latch ? "latch" : "kazoo", NULL, -1, &e));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(e, 10000, &a));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_participants(e, &list));
        static char word[32];
        zklock_participant p;
        if (st != ZKLOCK_OK) {
            problem(o, "leading and listing", st);
        } else if (find_node(list, zklock_lease_path(a), &p)) {
            snprintf(word, sizeof word, "%s", latch ? p.kind : p.library);
            o->word = word;
        } else {
            snprintf(o->problem, sizeof o->problem, "our node is not among the participants");
        }
        zklock_participants_free(list);
        if (a) {
            st = seen(o, zklock_election_resign(e, a, false, NULL, NULL, NULL));
            a = NULL;
            if (st != ZKLOCK_OK) problem(o, "resigning", st);
        }
        zklock_election_free(e);
    } else if (strcmp(name, "election-handover") == 0) {
        zklock_election *ea = NULL, *eb = NULL;
        zklock_op *op = NULL;
        zklock_participants *leader = NULL;
        static struct lead_done d;
        static char word[96];
        lead_done_init(&d);
        st = seen(o, zklock_election_new(main_client, case_path, "selector", "a", -1, &ea));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_new(other_client, case_path, "selector", "b", -1, &eb));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(ea, 10000, &a));
        int64_t a_token = a ? zklock_lease_token(a) : -1;
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead_async(eb, -1, lead_done_cb, &d, &op));
        if (st == ZKLOCK_OK) {
            st = seen(o, zklock_election_resign(ea, a, false, NULL, NULL, NULL));
            a = NULL;
        }
        if (st == ZKLOCK_OK) st = seen(o, lead_done_wait(&d, 10000));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_leader(ea, &leader));
        zklock_participant p;
        if (st != ZKLOCK_OK) {
            problem(o, "the handover", st);
        } else if (!participant_at(leader, 0, &p)) {
            snprintf(o->problem, sizeof o->problem, "nobody leads after the handover");
        } else {
            snprintf(word, sizeof word, "%s,%s", p.id, zklock_lease_token(d.lease) > a_token ? "token-up" : "token-down");
            o->word = word;
        }
        zklock_participants_free(leader);
        if (op) {
            zklock_op_cancel(op);
            lead_done_wait(&d, 10000);
            zklock_op_free(op);
        }
        if (d.lease) zklock_election_resign(eb, d.lease, false, NULL, NULL, NULL);
        lead_done_destroy(&d);
        zklock_election_free(ea);
        zklock_election_free(eb);
    } else if (strcmp(name, "election-requeue") == 0) {
        zklock_election *ea = NULL, *eb = NULL;
        zklock_op *op_b = NULL, *op_again = NULL;
        zklock_participants *list = NULL;
        static struct lead_done db, dagain;
        static char word[96];
        lead_done_init(&db);
        lead_done_init(&dagain);
        st = seen(o, zklock_election_new(main_client, case_path, "latch", "a", -1, &ea));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_new(other_client, case_path, "latch", "b", -1, &eb));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(ea, 10000, &a));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead_async(eb, -1, lead_done_cb, &db, &op_b));
        if (st == ZKLOCK_OK && !wait_for_participants(ea, 2)) st = ZKLOCK_TIMEOUT;
        if (st == ZKLOCK_OK) {
            st = seen(o, zklock_election_resign(ea, a, true, lead_done_cb, &dagain, &op_again));
            a = NULL;
        }
        if (st == ZKLOCK_OK) st = seen(o, lead_done_wait(&db, 10000));
        if (st == ZKLOCK_OK && !wait_for_participants(ea, 2)) st = ZKLOCK_TIMEOUT;
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_participants(ea, &list));
        if (st != ZKLOCK_OK) {
            problem(o, "the requeue", st);
        } else {
            word[0] = 0;
            zklock_participant p;
            for (size_t i = 0; i < zklock_participants_count(list) && participant_at(list, i, &p); i++) {
                size_t n = strlen(word);
                snprintf(word + n, sizeof word - n, "%s%s", i ? "," : "", p.id);
            }
            o->word = word;
        }
        zklock_participants_free(list);
        if (db.lease) zklock_election_resign(eb, db.lease, false, NULL, NULL, NULL);
        if (op_again) {
            if (lead_done_wait(&dagain, 10000) != ZKLOCK_OK) problem(o, "the requeued attempt", dagain.status);
            if (dagain.lease) zklock_lease_release(dagain.lease);
            zklock_op_free(op_again);
        }
        if (op_b) {
            zklock_op_cancel(op_b);
            lead_done_wait(&db, 10000);
            zklock_op_free(op_b);
        }
        lead_done_destroy(&db);
        lead_done_destroy(&dagain);
        zklock_election_free(ea);
        zklock_election_free(eb);
    } else if (strcmp(name, "election-mixed-layouts") == 0) {
        zklock_election *theirs = NULL, *ours = NULL;
        zklock_participants *list = NULL;
        TRY(zklock_election_new(other_client, case_path, "latch", "latch", -1, &theirs), "making the latch");
        st = seen(o, zklock_election_lead(theirs, 10000, &b));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_new(main_client, case_path, "selector", "selector", -1, &ours));
        if (st != ZKLOCK_OK) {
            problem(o, "the latch's lead", st);
        } else {
            st = seen(o, zklock_election_lead(ours, 0, &a));
            o->word = st == ZKLOCK_OK ? "led" : kind_of(st);
            if (st == ZKLOCK_CONFLICT && !strstr(zklock_last_error(), "latch-"))
                snprintf(o->problem, sizeof o->problem, "the conflict does not name the latch node: %.200s",
                         zklock_last_error());
            if (zklock_election_participants(ours, &list) == ZKLOCK_OK && zklock_participants_count(list) != 1)
                o->word = "left-node";
        }
        zklock_participants_free(list);
        zklock_election_free(ours);
        zklock_election_free(theirs);
    } else if (strcmp(name, "election-observe") == 0) {
        zklock_leader_watch *watch = NULL;
        zklock_election *ea = NULL;
        static char word[96];
        word[0] = 0;
        TRY(zklock_leader_watch_new(main_client, case_path, &watch), "making the watch");
        for (int step = 0; step < 3 && st == ZKLOCK_OK; step++) {
            if (step == 1) {
                st = seen(o, zklock_election_new(other_client, case_path, "selector", "a", -1, &ea));
                if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(ea, 10000, &b));
            } else if (step == 2) {
                st = seen(o, zklock_election_resign(ea, b, false, NULL, NULL, NULL));
                b = NULL;
            }
            zklock_participants *seen_list = NULL;
            if (st == ZKLOCK_OK) st = seen(o, zklock_leader_watch_next(watch, 10000, &seen_list));
            if (st == ZKLOCK_OK) {
                zklock_participant p;
                size_t n = strlen(word);
                snprintf(word + n, sizeof word - n, "%s%s", step ? "," : "",
                         participant_at(seen_list, 0, &p) ? p.id : "none");
            }
            zklock_participants_free(seen_list);
        }
        if (st != ZKLOCK_OK) problem(o, "observing", st);
        else o->word = word;
        if (b) {
            zklock_election_resign(ea, b, false, NULL, NULL, NULL);
            b = NULL;
        }
        zklock_election_free(ea);
        zklock_leader_watch_free(watch);
    } else if (strcmp(name, "election-proclaim") == 0) {
        zklock_election *ea = NULL, *reader = NULL;
        zklock_participants *leader = NULL;
        static char word[96];
        st = seen(o, zklock_election_new(main_client, case_path, "latch", "a", -1, &ea));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_lead(ea, 10000, &a));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_proclaim(ea, a, "p-data", 6));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_new(other_client, case_path, "latch", NULL, -1, &reader));
        if (st == ZKLOCK_OK) st = seen(o, zklock_election_leader(reader, &leader));
        zklock_participant p;
        if (st != ZKLOCK_OK) {
            problem(o, "proclaiming", st);
        } else {
            snprintf(word, sizeof word, "%s", participant_at(leader, 0, &p) ? p.id : "none");
            o->word = word;
        }
        zklock_participants_free(leader);
        if (a) {
            zklock_election_resign(ea, a, false, NULL, NULL, NULL);
            a = NULL;
        }
        zklock_election_free(reader);
        zklock_election_free(ea);
    } else if (strcmp(name, "check-token") == 0) {
        TRY(zklock_mutex_new(main_client, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        int64_t token = zklock_lease_token(a);
        int before = -1, after = -1;
        TRY(zklock_check(other_client, case_path, token, 0, &before), "the first check");
        TRY(zklock_lease_release(a), "the release");
        a = NULL;
        TRY(zklock_check(other_client, case_path, token, 0, &after), "the second check");
        static char word[32];
        snprintf(word, sizeof word, "%s,%s", before ? "true" : "false", after ? "true" : "false");
        o->word = word;
    } else if (strcmp(name, "valid-until") == 0) {
        /* C's form: milliseconds left (zklock_lease_valid_for_ms); the client's session timeout
         * is fresh_client's default, 10000 ms. */
        c = fresh_client(o);
        if (!c) goto done;
        TRY(zklock_mutex_new(c, case_path, NULL, &l), "making the mutex");
        TRY(zklock_acquire(l, 10000, &a), "the acquire");
        int64_t left = -1;
        st = seen(o, zklock_lease_valid_for_ms(a, &left));
        const char *first = st != ZKLOCK_OK ? "none" : left <= 0 ? "past" : left > 10000 ? "beyond" : "ahead";
        TRY(zklock_client_close(c), "closing the client");
        int64_t again = -7;
        st = seen(o, zklock_lease_valid_for_ms(a, &again));
        const char *second = st == ZKLOCK_OK ? "some" : (st == ZKLOCK_LOST && again == -7) ? "none" : kind_of(st);
        static char word[64];
        snprintf(word, sizeof word, "%s,%s", first, second);
        o->word = word;
    } else if (!lease_scenario(o, name) && !break_scenario(o, name) && !queue_scenario(o, name) &&
               !peer_scenario(o, name)) {
        snprintf(o->problem, sizeof o->problem, "unknown scenario %.60s", name);
    }
done:
    if (a) zklock_lease_release(a);
    if (b) zklock_lease_release(b);
    zklock_lock_free(l);
    zklock_lock_free(r);
    zklock_lock_free(w);
    zklock_lock_free(other);
    zklock_client_free(c);
#undef TRY
}

/* --- main --------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASES_FILE SERVERS [PROXY HARNESS_FIFO HARNESS_ANSWERS]\n", argv[0]);
        return 2;
    }
    servers = argv[2];
    if (argc >= 6) { /* the harness's fault proxy, for issue 53's scenarios (conformance_peers.h) */
        peer_proxy = argv[3];
        peer_control = argv[4];
        peer_answers = argv[5];
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        printf("cannot read %s: %s\nconformance c: 0 passed, 1 failed\n", argv[1], strerror(errno));
        return 1;
    }
    struct outcome setup = {0};
    main_client = fresh_client(&setup);
    other_client = fresh_client(&setup);
    if (!main_client || !other_client) {
        printf("cannot connect to ZooKeeper at %s: %s\nconformance c: 0 passed, 1 failed\n", servers, setup.problem);
        return 1;
    }
    int passed = 0, failed = 0, na = 0, lineno = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#') continue;
        char *cols[4];
        int n = 0;
        for (char *p = s, *bar; n < 4; p = bar + 1) {
            bar = strchr(p, '|');
            cols[n++] = p;
            if (!bar) break;
            *bar = 0;
        }
        if (n != 4 || strchr(cols[3], '|')) {
            printf("FAIL line %d: not four columns separated by |\n", lineno);
            failed++;
            continue;
        }
        const char *id = trim(cols[0]), *op = trim(cols[1]), *expected = trim(cols[3]);
        struct outcome o = {0};
        struct bytes in = {0};
        char err[128];
        if (!decode(trim(cols[2]), &in, err, sizeof err)) {
            printf("FAIL %s: input: %s\n", id, err);
            failed++;
            continue;
        }
        snprintf(case_path, sizeof case_path, "/conformance/c/%s-%d", id, (int)getpid());
        if (strcmp(op, "path") == 0) op_path(&o, &in);
        else if (strcmp(op, "rwpath") == 0) op_rwpath(&o, &in);
        else if (strcmp(op, "multi") == 0) op_multi(&o, &in);
        else if (strcmp(op, "hosts") == 0) op_hosts(&o, &in);
        else if (strcmp(op, "session_timeout") == 0) op_session_timeout(&o, &in);
        else if (strcmp(op, "server_tick") == 0) op_server_tick(&o, &in);
        else if (strcmp(op, "learned_tick") == 0) op_learned_tick(&o, &in);
        else if (strcmp(op, "server_features") == 0) op_server_features(&o, &in);
        else if (strcmp(op, "identity") == 0) op_identity(&o, &in);
        else if (strcmp(op, "path_stats_limit") == 0) op_path_stats_limit(&o, &in);
        else if (strcmp(op, "acl") == 0) op_acl(&o, &in);
        else if (strcmp(op, "timeout") == 0) op_timeout(&o, &in);
        else if (strcmp(op, "guarded_timeout") == 0) op_guarded_timeout(&o, &in);
        else if (strcmp(op, "guarded_size") == 0) op_guarded_size(&o, &in);
        else if (strcmp(op, "deadline") == 0)
            o.na = "C takes timeout_ms only; zklock.hpp's acquire_for/acquire_until (a passed deadline is "
                   "one try) are tested by tests/test_zklock.cpp";
        else if (strcmp(op, "participants_timeout") == 0) op_participants_timeout(&o, &in);
        else if (strcmp(op, "election_style") == 0) op_election_style(&o, &in);
        else if (strcmp(op, "election_id") == 0) op_election_id(&o, &in);
        else if (strcmp(op, "max_hold") == 0) op_max_hold(&o, &in);
        else if (strcmp(op, "lock_delay") == 0) op_lock_delay(&o, &in);
        else if (strcmp(op, "secret") == 0) op_secret(&o, &in);
        else if (strcmp(op, "secret_pem") == 0) op_secret_pem(&o, &in);
        else if (strcmp(op, "sasl") == 0) op_sasl(&o, &in);
        else if (strcmp(op, "semaphore") == 0) op_semaphore(&o, &in);
        else if (strcmp(op, "scenario") == 0) scenario(&o, in.p);
        else snprintf(o.problem, sizeof o.problem, "unknown op %.40s", op);
        free(in.p);
        if (o.problem[0]) {
            printf("FAIL %s (%s): expected %s, got %s; %s\n", id, op, expected, o.word ? o.word : "nothing",
                   o.problem);
            failed++;
        } else if (o.na) {
            printf("n/a  %s (%s): %s\n", id, op, o.na);
            na++;
        } else if (o.word && strcmp(o.word, expected) == 0) {
            printf("ok   %s (%s): %s\n", id, op, o.word);
            passed++;
        } else {
            printf("FAIL %s (%s): expected %s, got %s (%.200s)\n", id, op, expected, o.word ? o.word : "nothing",
                   o.word && !strcmp(o.word, "ok") ? "" : zklock_last_error());
            failed++;
        }
    }
    free(line);
    fclose(f);
    zklock_client_free(main_client);
    zklock_client_free(other_client);
    printf("%d n/a (no form in C; each listed above with the reason)\n", na);
    printf("conformance c: %d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
