"""Cross-language demo worker: `python worker.py SERVERS PATH ROUNDS LOGFILE`.

ROUNDS times: take the mutex on PATH, append one line `python <token> <enter_ns> <exit_ns>`
(time.time_ns) to LOGFILE, spending ~20 ms inside the critical section, and release. Workers of
every face append to the same file; no two lines' [enter, exit] intervals may overlap, and the
tokens must increase in time order.
"""

from __future__ import annotations

import os
import sys
import time

import zklock


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print("usage: python worker.py SERVERS PATH ROUNDS LOGFILE", file=sys.stderr)
        return 2
    _, servers, path, rounds_arg, logfile = argv
    try:
        rounds = int(rounds_arg)
    except ValueError:
        print(f"worker.py: ROUNDS must be an integer, got {rounds_arg!r}", file=sys.stderr)
        return 2
    identity = f"python/{os.uname().nodename}/{os.getpid()}"
    try:
        env = os.environ.get  # a secured ensemble: the same variables as the CLI's
        with zklock.Client(
            servers,
            identity=identity,
            tls_ca=env("ZKLOCK_TLS_CA"),
            tls_cert=env("ZKLOCK_TLS_CERT"),
            tls_key=env("ZKLOCK_TLS_KEY"),
            sasl_user=env("ZKLOCK_SASL_USER"),
            sasl_password=env("ZKLOCK_SASL_PASSWORD"),
        ) as client:
            lock = client.lock(path)
            with open(logfile, "a", encoding="utf-8") as log:
                for _ in range(rounds):
                    with lock as lease:
                        enter = time.time_ns()
                        time.sleep(0.02)
                        leave = time.time_ns()
                        log.write(f"python {lease.token} {enter} {leave}\n")
                        log.flush()
    except zklock.ZkLockError as e:
        print(f"worker.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
