/* A semaphore of 2 and a revocation request: `semaphore SERVERS` (bindings-c/README.md). */
#include <stdatomic.h>
#include <stdio.h>
#include <threads.h>

#include <zklock.h>

static void asked(void *user, zklock_lease *lease) { /* on the client's callback thread */
    (void)lease;
    atomic_store((atomic_int *)user, 1); /* or zklock_lease_release(lease) right here */
}

int main(int argc, char **argv) {
    const char *servers = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zklock_client *client, *other;
    if (zklock_client_connect(servers, NULL, &client) != ZKLOCK_OK ||
        zklock_client_connect(servers, NULL, &other) != ZKLOCK_OK) {
        fprintf(stderr, "%s\n", zklock_last_error());
        return 1;
    }
    zklock_lock *pool, *rival;
    zklock_semaphore_new(client, "/locks/pool", 2, NULL, &pool); /* at most 2 leases at once */
    zklock_semaphore_new(other, "/locks/pool", 2, NULL, &rival); /* every user passes 2 */
    zklock_lease *a, *b, *c = NULL;
    zklock_acquire(pool, 5000, &a); /* never re-entrant: each acquire is a lease of its own */
    zklock_acquire(pool, 5000, &b);
    printf("third: %s\n", zklock_status_str(zklock_acquire(rival, 0, &c))); /* ZKLOCK_TIMEOUT */
    zklock_lease_release(a);
    zklock_lease_release(b);

    zklock_lock *one; /* excludes Curator's InterProcessSemaphoreMutex */
    zklock_semaphore_mutex_new(client, "/locks/report", NULL, &one);
    zklock_lease *held;
    zklock_acquire(one, 5000, &held);
    atomic_int flag = 0;
    zklock_lease_on_revoke(held, asked, &flag); /* opt-in, as Curator's makeRevocable */
    zklock_revoke(other, "/locks/report", NULL);        /* sets __REVOKE__ on the holder's node */
    for (int i = 0; i < 100 && !atomic_load(&flag); i++)
        thrd_sleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
    printf("asked to let go: %s\n", flag ? "yes" : "no"); /* a request: still held */
    zklock_lease_release(held);

    zklock_lock_free(one);
    zklock_lock_free(pool);
    zklock_lock_free(rival);
    zklock_client_free(other);
    zklock_client_free(client);
    return 0;
}
