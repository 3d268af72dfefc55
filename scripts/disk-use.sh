#!/usr/bin/env bash
# scripts/disk-use.sh [--before]: the disk `make test` needs (Cargo.toml, Disk).
#   --before   first in `make test`: fails at once, saying so, when target/'s disk has less free
#              than a fresh clone's run fills (NEED_GB, measured: see CHANGELOG), rather than
#              half an hour later in whichever suite's build meets the full disk. What target/
#              already holds counts as free (a second run reuses it).
#   (none)     last in `make test`: what the run left in target/ and what is still free there,
#              so a CI log shows how near the machine's disk a run came.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
NEED_GB="${ZKLOCK_TEST_DISK_GB:-8}"
kb_of() { du -sk "$1" 2>/dev/null | cut -f1; }
if [ "${1:-}" = --before ]; then
  probe="$target_dir"; [ -d "$probe" ] || probe="$root"
  free_kb="$(df -k --output=avail "$probe" | tail -n 1 | tr -d ' ')"
  held_kb="$(kb_of "$target_dir" || true)"
  have_kb=$((free_kb + ${held_kb:-0}))
  if [ "$have_kb" -lt $((NEED_GB * 1024 * 1024)) ]; then
    echo "disk: make test needs about $NEED_GB GB for $target_dir; $((free_kb / 1024)) MB are free there and target/ holds $((${held_kb:-0} / 1024)) MB (ZKLOCK_TEST_DISK_GB sets the need)" >&2
    exit 1
  fi
  echo "disk: $((free_kb / 1024 / 1024)) GB free for $target_dir (make test needs about $NEED_GB GB)"
  exit 0
fi
[ -d "$target_dir" ] || { echo "disk: no $target_dir"; exit 0; }
echo "disk: $(du -sh "$target_dir" | cut -f1) in $target_dir, $(df -h --output=avail "$target_dir" | tail -n 1 | tr -d ' ') free there"
du -sh "$target_dir"/*/ 2>/dev/null | sort -h | tail -n 5 | sed 's/^/disk:   /'
