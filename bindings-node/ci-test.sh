#!/usr/bin/env bash
# The Node face's suite (`make test-node`): builds the addon from source (npm install runs the
# package's install script, i.e. cargo), builds the ZooKeeper harness, runs `node --test`
# against real ZooKeeper and type-checks the TypeScript example with `tsc --noEmit --strict`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
CARGO="${CARGO:-cargo}"

command -v node >/dev/null || { echo "test-node: node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "test-node: npm is not installed" >&2; exit 1; }
node -e 'const [maj] = process.versions.node.split(".").map(Number); if (maj < 20) { console.error(`test-node: Node >= 20 needed, found ${process.version}`); process.exit(1) }'

echo "test-node: npm install (builds the native addon)"
cd "$here"
npm install --no-audit --no-fund
test -f "$here/zklock.node" || { echo "test-node: npm install built no zklock.node" >&2; exit 1; }

echo "test-node: building zk-harness"
(cd "$repo" && "$CARGO" build -q -p zklock-testkit --bin zk-harness)

echo "test-node: tsc --noEmit --strict"
node_modules/.bin/tsc --noEmit --strict -p test/types

echo "test-node: node --test"
node --test --test-concurrency=1 --test-timeout=600000 test/*.test.js

echo "test-node: passed"
