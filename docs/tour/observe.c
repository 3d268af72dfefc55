#include <stdio.h>
#include <stdlib.h>
#include <zklock.h>

static void on_log(void *user, int level, const char *event, const char *message, const char *fields) {
    (void)user, (void)event, (void)fields;
    if (level <= ZKLOCK_LOG_WARN) fprintf(stderr, "zklock: %s\n", message);
}

int main(void) {
    const char *servers = getenv("ZKLOCK_SERVERS") ? getenv("ZKLOCK_SERVERS") : "127.0.0.1:2181";
    zklock_client *client;
    zklock_lock *lock;
    zklock_lease *lease;
    zklock_set_log_callback(ZKLOCK_LOG_WARN, on_log, NULL);
    if (zklock_client_connect(servers, NULL, &client) != ZKLOCK_OK) return 1;
    int failed = 1;
    if (zklock_mutex_new(client, "/zklock-tour/observe-c", NULL, &lock) == ZKLOCK_OK) {
        if (zklock_acquire(lock, 5000, &lease) == ZKLOCK_OK) {
            /* Written only while the lock is ours: one multi request with a check of our node. */
            zklock_write writes[] = {{"create", "/zklock-tour/c-state", "v1", 2, 0},
                                     {"delete", "/zklock-tour/c-state", NULL, 0, 0}};
            failed = zklock_lease_guarded_write(lease, writes, 2) != ZKLOCK_OK;
            zklock_lease_release(lease);
        }
        zklock_lock_free(lock);
    }
    zklock_stats stats = {.size = sizeof stats};
    if (zklock_client_stats(client, &stats) == ZKLOCK_OK)
        printf("acquired %llu, waited p99 %lld us, held max %lld us\n",
               (unsigned long long)stats.acquired, (long long)stats.wait.p99_us,
               (long long)stats.hold.max_us);
    zklock_client_free(client);
    return failed;
}
