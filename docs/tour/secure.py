import os

import zklock

env = os.environ.get
with zklock.Client(
    env("ZKLOCK_SERVERS", "127.0.0.1:2281"),
    tls_ca=env("ZKLOCK_TLS_CA"),  # the CA's PEM file; tls_cert / tls_key for a client certificate
    sasl_user=env("ZKLOCK_SASL_USER"),
    sasl_password=env("ZKLOCK_SASL_PASSWORD"),
    acl="creator-all",
) as client:
    with client.lock("/zklock-tour/secure-python") as lease:
        print("python holds the lock over TLS, fencing token", lease.token)
