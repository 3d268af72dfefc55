#include <stdio.h>
#include <stdlib.h>
#include <zklock.h>

int main(void) {
    zklock_client_options opts;
    zklock_client_options_init(&opts);
    opts.tls_ca = getenv("ZKLOCK_TLS_CA"); /* the CA's PEM file; tls_cert, tls_key */
    opts.sasl_user = getenv("ZKLOCK_SASL_USER");
    opts.sasl_password = getenv("ZKLOCK_SASL_PASSWORD");
    opts.acl = ZKLOCK_ACL_CREATOR_ALL;
    zklock_client *client;
    zklock_lock *lock;
    zklock_lease *lease;
    if (zklock_client_connect(getenv("ZKLOCK_SERVERS"), &opts, &client) != ZKLOCK_OK) {
        fprintf(stderr, "connect: %s\n", zklock_last_error());
        return 1;
    }
    if (zklock_mutex_new(client, "/zklock-tour/secure-c", NULL, &lock) == ZKLOCK_OK) {
        if (zklock_acquire(lock, 5000, &lease) == ZKLOCK_OK) {
            printf("c holds the lock over TLS, fencing token %lld\n", (long long)zklock_lease_token(lease));
            zklock_lease_release(lease);
        }
        zklock_lock_free(lock);
    }
    zklock_client_free(client);
    return 0;
}
