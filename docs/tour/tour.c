#include <stdio.h>
#include <stdlib.h>
#include <zklock.h>

int main(void) {
    const char *servers = getenv("ZKLOCK_SERVERS") ? getenv("ZKLOCK_SERVERS") : "127.0.0.1:2181";
    zklock_client *client;
    zklock_lock *lock;
    zklock_lease *lease;
    if (zklock_client_connect(servers, NULL, &client) != ZKLOCK_OK) {
        fprintf(stderr, "connect: %s\n", zklock_last_error());
        return 1;
    }
    if (zklock_mutex_new(client, "/zklock-tour/c", NULL, &lock) == ZKLOCK_OK) {
        if (zklock_acquire(lock, 5000 /* ms; -1 forever, 0 try */, &lease) == ZKLOCK_OK) {
            printf("c holds the lock, fencing token %lld\n", (long long)zklock_lease_token(lease));
            zklock_lease_release(lease);
        }
        zklock_lock_free(lock);
    }
    zklock_client_free(client);
    return 0;
}
