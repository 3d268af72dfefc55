#!/usr/bin/env bash
# scripts/disk-use.sh: what `make test` left on disk (target/ and its largest folders) and what
# is still free there, so a CI log shows how near the machine's disk a run came (Cargo.toml, Disk).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
[ -d "$target_dir" ] || { echo "disk: no $target_dir"; exit 0; }
echo "disk: $(du -sh "$target_dir" | cut -f1) in $target_dir, $(df -h --output=avail "$target_dir" | tail -n 1 | tr -d ' ') free there"
du -sh "$target_dir"/*/ 2>/dev/null | sort -h | tail -n 5 | sed 's/^/disk:   /'
