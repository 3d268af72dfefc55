# ZKLOCK_SERVERS, ZKLOCK_TLS_CA, ZKLOCK_SASL_USER and ZKLOCK_SASL_PASSWORD from the environment
# (the password never as a flag: it would show in ps); --tls-ca, --sasl-user and
# --sasl-password-file are the flags
zklock exec --acl creator-all /zklock-tour/secure-cli -- sh -c 'echo "cli holds the lock over TLS, fencing token $ZKLOCK_TOKEN"'
