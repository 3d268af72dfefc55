#!/usr/bin/env bash
# Issue 12, part 3: the partition margins of the peers (Curator, kazoo) and zklock, measured against a real
# ZooKeeper through the fault proxy (tests/trust/tests/peer_margins.rs; README.md here has the
# numbers). It takes a few minutes; the rounds run one at a time so they do not disturb each
# other's timing.
#
# Issue 23, point 3: the same peers with the holder pinned to a follower of a 3-node ensemble
# whose peer links are black-holed (tests named *_isolated_follower_*; about 7 minutes more).
#
#   tests/trust/peer-margins.sh                 # 5 rounds per holder per timing, both scenarios
#   tests/trust/peer-margins.sh kazoo           # one holder (a test-name filter)
#   tests/trust/peer-margins.sh isolated_follower          # only the member isolation
#   tests/trust/peer-margins.sh isolated_follower_reports_its_lost_margin_at_tick_500_ms
#   ZKLOCK_MARGIN_ROUNDS=20 tests/trust/peer-margins.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
CARGO="${CARGO:-cargo}"
# A private temp dir for the server, the holders and their logs.
TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/zklock-margins.XXXXXX")"
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
"$CARGO" test -q -p zklock-trust --test peer_margins -- --ignored --nocapture --test-threads 1 "$@"
