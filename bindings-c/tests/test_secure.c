/* Secure ZooKeeper through the C API: TLS, SASL, ACLs and chroot against one secured server.
 * Usage: test_secure HARNESS_OUTPUT (the `key=value` lines of `zk-harness --secure`). */
#include <zklock.h>

/* testutil.h has helpers this program does not use. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "testutil.h"

static char info_text[8192];

/* The value of `key=` in the harness output (a static copy), or "" when missing. */
static const char *info(const char *key) {
    static char values[16][1024];
    static int next;
    char *v = values[next++ % 16];
    size_t klen = strlen(key);
    v[0] = 0;
    for (const char *line = info_text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
            const char *end = strchr(line, '\n');
            size_t n = end ? (size_t)(end - line - klen - 1) : strlen(line + klen + 1);
            snprintf(v, 1024, "%.*s", (int)n, line + klen + 1);
        }
    }
    return v;
}

/* The password of a SASL user of the harness (`sasl_users=alice:pw,bob:pw`). */
static const char *sasl_password(const char *user) {
    static char pw[2][256];
    static int next;
    char *out = pw[next++ % 2];
    char users[1024], want[64];
    snprintf(users, sizeof users, "%s", info("sasl_users"));
    snprintf(want, sizeof want, "%s:", user);
    char *at = strstr(users, want);
    out[0] = 0;
    if (at) {
        at += strlen(want);
        at[strcspn(at, ",")] = 0;
        snprintf(out, 256, "%s", at);
    }
    return out;
}

static int counter;
static void unique(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/zklock-c-secure/%s-%d-%d", name, (int)getpid(), ++counter);
}

static zklock_client_options base(void) {
    zklock_client_options o;
    zklock_client_options_init(&o);
    o.connect_timeout_ms = 15000;
    return o;
}

static void a_tls_client_with_a_client_certificate_acquires_and_releases(void) {
    char ca[1024], cert[1024], key[1024], path[256];
    snprintf(ca, sizeof ca, "%s", info("tls_ca"));
    snprintf(cert, sizeof cert, "%s", info("tls_cert"));
    snprintf(key, sizeof key, "%s", info("tls_key"));
    zklock_client_options o = base();
    o.tls_ca = ca;
    o.tls_cert = cert;
    o.tls_key = key;
    zklock_client *client = NULL;
    CHECK(zklock_client_connect(info("tls_servers"), &o, &client) == ZKLOCK_OK);
    zklock_lock *lock = NULL;
    zklock_lease *lease = NULL;
    unique(path, sizeof path, "tls");
    EXPECT(zklock_mutex_new(client, path, NULL, &lock) == ZKLOCK_OK);
    EXPECT(lock && zklock_acquire(lock, 10000, &lease) == ZKLOCK_OK);
    EXPECT(lease && zklock_lease_token(lease) > 0);
    if (lease) EXPECT(zklock_lease_release(lease) == ZKLOCK_OK);
    if (lock) zklock_lock_free(lock);
    zklock_client_free(client);
}

/* connects with the options and expects ZKLOCK_CONNECTION whose message holds `words`, fast */
static int fails_fast(const char *hosts, const zklock_client_options *o, const char *words) {
    zklock_client *client = NULL;
    int64_t start = now_ms();
    zklock_status st = zklock_client_connect(hosts, o, &client);
    int64_t took = now_ms() - start;
    if (st != ZKLOCK_CONNECTION || !strstr(zklock_last_error(), words) || took > 6000) {
        printf("    status %d after %lld ms: %s (wanted ZKLOCK_CONNECTION with '%s')\n", (int)st,
               (long long)took, zklock_last_error(), words);
        if (client) zklock_client_free(client);
        return 0;
    }
    return 1;
}

static void a_bad_tls_setup_fails_fast_with_zklock_connection_saying_which(void) {
    char ca[1024], wrong_ca[1024];
    snprintf(ca, sizeof ca, "%s", info("tls_ca"));
    snprintf(wrong_ca, sizeof wrong_ca, "%s", info("tls_wrong_ca"));
    zklock_client_options o = base();
    o.tls_ca = wrong_ca;
    EXPECT(fails_fast(info("tls_servers"), &o, "wrong CA"));
    o = base();
    EXPECT(fails_fast(info("tls_servers"), &o, "speaks TLS"));
    o.tls_ca = ca;
    EXPECT(fails_fast(info("tls_wrong_host_servers"), &o, "wrong host"));
}

static void a_wrong_sasl_password_is_zklock_permission_and_never_shown(void) {
    zklock_client_options o = base();
    o.sasl_user = "alice";
    o.sasl_password = "pw-never-shown-3";
    zklock_client *client = NULL;
    CHECK(zklock_client_connect(info("servers"), &o, &client) == ZKLOCK_PERMISSION);
    CHECK(strstr(zklock_last_error(), "alice") != NULL);
    CHECK(strstr(zklock_last_error(), "pw-never-shown-3") == NULL);
}

static void creator_all_and_read_anyone_creator_all_keep_another_user_out_of_the_queue(void) {
    char path[256], alice_pw[256];
    snprintf(alice_pw, sizeof alice_pw, "%s", sasl_password("alice"));
    for (int policy = ZKLOCK_ACL_CREATOR_ALL; policy <= ZKLOCK_ACL_READ_ANYONE_CREATOR_ALL; policy++) {
        zklock_client_options ours_o = base(), bob_o = base();
        ours_o.sasl_user = "alice";
        ours_o.sasl_password = alice_pw;
        ours_o.acl = policy;
        bob_o.auth = "bob:bob-digest";
        zklock_client *ours = NULL, *bob = NULL;
        CHECK(zklock_client_connect(info("servers"), &ours_o, &ours) == ZKLOCK_OK);
        EXPECT(zklock_client_connect(info("servers"), &bob_o, &bob) == ZKLOCK_OK);
        unique(path, sizeof path, "acl");
        zklock_lock *lock = NULL, *theirs = NULL;
        zklock_lease *lease = NULL, *stolen = NULL;
        EXPECT(zklock_mutex_new(ours, path, NULL, &lock) == ZKLOCK_OK);
        EXPECT(lock && zklock_acquire(lock, 10000, &lease) == ZKLOCK_OK);
        EXPECT(bob && zklock_mutex_new(bob, path, NULL, &theirs) == ZKLOCK_OK);
        /* Neither policy lets bob into the queue (the C API has no participants list: that
         * read-anyone-creator-all lets bob list it is shown by the other faces). */
        if (theirs) {
            EXPECT(zklock_acquire(theirs, 0, &stolen) == ZKLOCK_PERMISSION);
            zklock_lock_free(theirs);
        }
        if (lease) EXPECT(zklock_lease_release(lease) == ZKLOCK_OK);
        if (lock) zklock_lock_free(lock);
        if (bob) zklock_client_free(bob);
        zklock_client_free(ours);
    }
}

static void lock_paths_are_relative_to_the_chroot(void) {
    char root[256], base_path[300], hosts[1400], ca[1024], seen_path[300];
    snprintf(ca, sizeof ca, "%s", info("tls_ca"));
    unique(root, sizeof root, "chroot");
    snprintf(base_path, sizeof base_path, "%s/base", root);
    zklock_client *plain = NULL, *chrooted = NULL;
    zklock_client_options o = base();
    CHECK(zklock_client_connect(info("servers"), &o, &plain) == ZKLOCK_OK);
    zklock_lock *base_lock = NULL, *lock = NULL;
    zklock_lease *base_lease = NULL, *lease = NULL;
    /* the chroot must exist: a lock held under it makes it */
    EXPECT(zklock_mutex_new(plain, base_path, NULL, &base_lock) == ZKLOCK_OK);
    EXPECT(base_lock && zklock_acquire(base_lock, 10000, &base_lease) == ZKLOCK_OK);
    snprintf(hosts, sizeof hosts, "%s%s", info("tls_servers"), root);
    o.tls_ca = ca;
    EXPECT(zklock_client_connect(hosts, &o, &chrooted) == ZKLOCK_OK);
    if (chrooted) {
        EXPECT(zklock_mutex_new(chrooted, "/app/orders", NULL, &lock) == ZKLOCK_OK);
        EXPECT(lock && zklock_acquire(lock, 10000, &lease) == ZKLOCK_OK);
        EXPECT(lease && strncmp(zklock_lease_path(lease), "/app/orders/_c_", 15) == 0);
        /* the server has our node under <root>/app/orders (its ephemerals, by the plain port) */
        snprintf(seen_path, sizeof seen_path, "%s/app/orders", root);
        EXPECT(ephemerals_under(info("servers"), seen_path) == 1);
        if (lease) zklock_lease_release(lease);
        if (lock) zklock_lock_free(lock);
        zklock_client_free(chrooted);
    }
    if (base_lease) zklock_lease_release(base_lease);
    if (base_lock) zklock_lock_free(base_lock);
    zklock_client_free(plain);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_secure HARNESS_OUTPUT\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    size_t n = fread(info_text, 1, sizeof info_text - 1, f);
    info_text[n] = 0;
    fclose(f);
    if (!*info("tls_servers")) {
        fprintf(stderr, "no tls_servers= in %s: the secured ZooKeeper did not start\n", argv[1]);
        return 1;
    }
    RUN(a_tls_client_with_a_client_certificate_acquires_and_releases);
    RUN(a_bad_tls_setup_fails_fast_with_zklock_connection_saying_which);
    RUN(a_wrong_sasl_password_is_zklock_permission_and_never_shown);
    RUN(creator_all_and_read_anyone_creator_all_keep_another_user_out_of_the_queue);
    RUN(lock_paths_are_relative_to_the_chroot);
    return tu_summary();
}
