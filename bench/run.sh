#!/usr/bin/env bash
# Benchmarks of issue 8: zklock (Rust core and the faces that are built) against Curator 5,
# kazoo and two raw ZooKeeper limits (zookeeper-client from crates.io, ZooKeeper's C client), side by side on ZooKeeper servers started by the harness,
# once with forceSync=no and once with the default fsync. Prints the table and the targets,
# writes bench/results/results.json.
#
#   bench/run.sh                      everything (about 8 minutes on 2 cores: s9 at 1,000
#                                     sessions, standalone, T = 10 s; `make bench-s9-long` for
#                                     the rest of issue 34's sweep, more than an hour)
#   BENCH_SECS=2 bench/run.sh         shorter measured windows
#   bench/run.sh --modes nosync --scenarios s1,s4 --impls zklock,raw,zkc,curator
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
build="$here/build"
mkdir -p "$build" "$here/results"

zkc_header=/usr/include/zookeeper/zookeeper.h
command -v java >/dev/null && [ -f /usr/share/java/curator-recipes.jar ] && [ -d /usr/lib/python3/dist-packages/kazoo ] \
  && [ -f "$zkc_header" ] || "$root/scripts/install-deps.sh"

echo "bench: building the Rust workers (release)"
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
# A private copy: the shared target dir may be rebuilt by others while we run.
cp "$CARGO_TARGET_DIR/release/zkbench" "$build/zkbench"

# The C limit `zkc` (issue 24, point 6): the raw cycle through ZooKeeper's own C client. A limit
# the targets are measured against, so a missing library fails the run instead of skipping it.
echo "bench: compiling the C limit (c/zkc_worker.c against libzookeeper-mt)"
if [ ! -f "$zkc_header" ]; then
  echo "bench: $zkc_header is missing: the C limit needs Debian's libzookeeper-mt-dev" \
       "(scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if ! cc -O2 -pthread -o "$build/zkc_worker" "$here/c/zkc_worker.c" -lzookeeper_mt 2>"$build/zkc.log"; then
  cat "$build/zkc.log" >&2
  echo "bench: the C limit did not compile or link against libzookeeper_mt" \
       "(libzookeeper-mt-dev; see bench/build/zkc.log)" >&2
  exit 1
fi

echo "bench: compiling the Curator workers"
J=/usr/share/java
cp="$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar"
cp="$cp:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar:$J/netty-handler.jar:$J/netty-common.jar:$J/netty-buffer.jar"
cp="$cp:$J/netty-transport.jar:$J/netty-codec.jar:$J/netty-resolver.jar:$J/netty-transport-native-epoll.jar"
cp="$cp:$J/netty-transport-native-unix-common.jar:$J/metrics-core.jar:$J/commons-io.jar"
mkdir -p "$build/java"
javac -nowarn -d "$build/java" -cp "$cp" "$here/java/ZkBench.java"

faces=()
# Rebuild a face only when its sources (or the core's) changed since the last build.
stale() { [ ! -f "$1" ] || [ -n "$(find "$root/core/src" "${@:2}" -newer "$1" -type f 2>/dev/null | head -1)" ]; }
# Python face: a venv with the package built from bindings-python (pip, maturin).
if [ -f "$root/bindings-python/pyproject.toml" ]; then
  [ -x "$build/py-venv/bin/python" ] || python3 -m venv "$build/py-venv"
  if stale "$build/py.stamp" "$root/bindings-python"; then
    echo "bench: building the Python face (pip install ./bindings-python)"
    rm -f "$build/py.stamp"
    "$build/py-venv/bin/pip" install -q "$root/bindings-python" >"$build/pip.log" 2>&1 && touch "$build/py.stamp" || true
  fi
  if [ -f "$build/py.stamp" ] && "$build/py-venv/bin/python" -c "import zklock; zklock.Client" 2>/dev/null; then
    faces+=(--python-face "$build/py-venv/bin/python")
  else
    faces+=(--skip "python=bindings-python did not build or import (see bench/build/pip.log)")
  fi
else
  faces+=(--skip "python=bindings-python not ready when measured (not built)")
fi
# Node face: the package from bindings-node (npm links the local directory).
if [ -f "$root/bindings-node/package.json" ]; then
  mkdir -p "$build/node"
  cp "$here/face_node.mjs" "$build/node/"
  # The addon is rebuilt in release every time (cargo makes it quick when nothing changed):
  # `make demo` leaves a debug build in bindings-node/zklock.node, about half as fast.
  if (cd "$build/node" && { [ -d node_modules/zklock ] || npm install --silent --no-audit --no-fund "$root/bindings-node" >"$build/npm.log" 2>&1; } \
        && ZKLOCK_NODE_PROFILE=release node "$root/bindings-node/scripts/build.js" >>"$build/npm.log" 2>&1 \
        && node -e "require('zklock').Client" >>"$build/npm.log" 2>&1); then
    faces+=(--node-face "$build/node")
  else
    faces+=(--skip "node=bindings-node did not install or load (see bench/build/npm.log)")
  fi
else
  faces+=(--skip "node=bindings-node not ready when measured (not built)")
fi
# C face: libzklock.so from bindings-c and include/zklock.h.
if [ -f "$root/include/zklock.h" ] && [ -f "$root/bindings-c/Makefile" ]; then
  if stale "$build/face_c" "$root/bindings-c/src" "$here/face_c.c"; then
    echo "bench: building the C face (make -C bindings-c build)"
    rm -f "$build/face_c"
    if make -C "$root/bindings-c" build >"$build/c.log" 2>&1; then
      # The program needs the library under its soname (libzklock.so.0); -lzklock finds the link.
      cp "$CARGO_TARGET_DIR/zklock-c/release/libzklock.so.0" "$build/libzklock.so.0"
      ln -sf libzklock.so.0 "$build/libzklock.so"
      cc -O2 -pthread -o "$build/face_c" "$here/face_c.c" -I"$root/include" -L"$build" -lzklock \
         -Wl,-rpath,"$build" >>"$build/c.log" 2>&1 || true
    fi
  fi
  if [ -x "$build/face_c" ]; then
    faces+=(--c-face "$build/face_c")
  else
    faces+=(--skip "c=bindings-c did not build (see bench/build/c.log)")
  fi
else
  faces+=(--skip "c=bindings-c not ready when measured (not built)")
fi

# The Python collector's row (issue 51, part 4): ZklockCollector.collect() and one scrape at
# 1,000 paths, against the goal (collect <= 20 ms, scrape <= 200 KB); bench/README.md.
if [ -f "$build/py.stamp" ]; then
  if "$build/py-venv/bin/pip" install -q "prometheus_client>=0.17" >>"$build/pip.log" 2>&1 \
      && cargo build --quiet -p zklock-testkit --bin zk-harness; then
    "$build/py-venv/bin/python" "$here/python_collect.py" --out "$here/results/python-collect.json" \
      || echo "bench: python-collect failed" >&2
  else
    echo "bench: python-collect skipped: prometheus_client or zk-harness did not install" >&2
  fi
fi

exec "$build/zkbench" orchestrate \
  --secs "${BENCH_SECS:-2}" \
  --out "$here/results/results.json" \
  --bench-dir "$here" \
  --java-cp "$build/java:$cp" \
  --kazoo-python /usr/bin/python3 \
  --zkc-worker "$build/zkc_worker" \
  "${faces[@]}" "$@"
