zklock exec /zklock-tour/cli -- sh -c 'echo "cli holds the lock, fencing token $ZKLOCK_TOKEN"'
zklock exec --try /zklock-tour/cli -- true   # exits 75 at once when someone else holds it
zklock ls --json /zklock-tour/cli
