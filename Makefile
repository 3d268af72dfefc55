# zklock: `make demo` runs the main job, `make test` runs every test suite.
SHELL := /bin/bash
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never
# Disk (Cargo.toml, Disk): a fresh clone's `make test` builds everything once, where cargo's
# incremental caches (5 GB of target/ with them) buy nothing. `CARGO_INCREMENTAL=1 make …` keeps them.
export CARGO_INCREMENTAL ?= 0

.PHONY: test-servers test-server-smoke test-server-3.4
.PHONY: test disk deps old-userland lint test-monitoring test-rust test-model test-python test-node test-c test-cli test-interop test-dist dist release-check check-reach demo bench soak soak-10k trust-long test-faults install fuzz-wire test-exit-long bench-s9-long model-long

test: disk deps old-userland lint test-monitoring test-rust test-server-smoke test-model test-python test-node test-c test-cli test-interop test-dist
	@echo "make test: every suite passed"
	@scripts/disk-use.sh

# Fails first, with the numbers, where the disk cannot hold a run (scripts/disk-use.sh).
disk:
	@scripts/disk-use.sh --before

deps:
	@scripts/install-deps.sh

# test-dist's Debian 11 root (glibc 2.31), made in the background while the suites before it run.
old-userland: deps
	@scripts/old-userland.sh --background

# One way down: each crate's `crate::` imports against its layers.txt (the core's layers are
# folders of core/src), and no import circle between files. Small rooms: no source file of the
# core, wire, the CLI or a face over 700 lines, tests and generated files aside. The checker's
# own cases (scripts/test_check_layers.py: each finding made in a scratch crate) run first.
LAYERED := core wire cli bindings-python bindings-c
lint:
	scripts/test_check_layers.py
	scripts/test_test_summary.py
	scripts/check-layers.py $(LAYERED)
	scripts/check-sizes.py
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -p zklock --no-deps

# monitoring/ (issue 51, part 4): the alert rules are valid and their unit tests pass (each
# alert fires on series made to fire it, not on the one beside it), and the dashboard parses
# and names only metrics core/src/ops/metric_families.rs decides. No promtool is a failure, not a skip
# (scripts/install-deps.sh installs Debian's prometheus package for it).
test-monitoring:
	@command -v promtool >/dev/null 2>&1 || { echo "$@: promtool is missing (Debian package prometheus; scripts/install-deps.sh installs it)" >&2; exit 1; }
	promtool check rules monitoring/alerts.yml
	cd monitoring && promtool test rules alerts_test.yml
	monitoring/check.py

test-rust:
	$(CARGO) build -q -p zklock-testkit --bin zk-harness
	$(CARGO) test --workspace --exclude zklock-cli --exclude zklock-model
	$(CARGO) test -p zklock --features metrics --test metrics_facade

# Server versions (issue 53, docs/interop.md "Server versions"): 3.8.0 is the system's, 3.9.3 and
# 3.9.6 come from Debian's archive (trixie, sid) through scripts/zk-versions.sh, unpacked into
# /var/cache/zklock, never installed. test-servers runs the Rust conformance runner and the
# isolation and one-way trust rounds (SERVER_ROUNDS each) against each and prints a pass/fail
# table; test-server-smoke (in make test) runs a few conformance cases against the newest 3.9;
# test-server-3.4 checks that 3.4.13 is refused at connect within a round trip, naming create2,
# and never retried (core/tests/old_server.rs, its ignored case).
SERVER_VERSIONS ?= 3.8.0 3.9.3 3.9.6
SERVER_ROUNDS ?= 1
test-servers: deps
	ZKLOCK_ISOLATION_ROUNDS=$(SERVER_ROUNDS) scripts/test-servers.sh $(SERVER_VERSIONS)
test-server-smoke: deps
	scripts/test-servers.sh --smoke
test-server-3.4: deps
	scripts/test-servers.sh --probe-3.4

# The model of the lifeline against ZooKeeper's expiry (model/README.md, issue 52): a bounded
# breadth-first check of every behaviour up to its horizon, and its mutations, each printing
# the states explored, the depth and the time (seconds on 2 cores). `model-long` goes deeper.
test-model:
	$(CARGO) test -p zklock-model -- --nocapture --test-threads=1
model-long:
	ZKLOCK_MODEL_LONG=1 $(CARGO) test -p zklock-model --test check -- --nocapture --test-threads=1
	$(CARGO) test -p zklock-model --test mutations -- --ignored --nocapture --test-threads=1

# Each face owns its test script; a missing (or not executable) script is a failure, not a skip.
suite = @if [ -x $(1) ]; then $(1); else echo "$@: $(1) is missing or not executable" >&2; exit 1; fi
test-python:
	$(call suite,bindings-python/ci-test.sh)
test-node:
	$(call suite,bindings-node/ci-test.sh)
test-c:
	$(call suite,bindings-c/ci-test.sh)
test-cli:
	$(call suite,cli/ci-test.sh)
test-interop:
	$(call suite,tests/ci-test.sh)
# The packages of `make dist` installed and run where no Rust toolchain is (docs/packaging.md);
# then installed by name from local registries, Verdaccio and pypiserver (issue 55, about 40 s).
test-dist: dist
	$(call suite,tests/dist/test-dist.sh)
	$(call suite,tests/dist/test-registries.sh)

# dist/: the abi3 wheel and sdist, the npm tarball with the prebuilt addon, the C tarball, the
# .deb and SHA256SUMS, all of the workspace's version (cargo profile `dist`, in target/), for
# x86_64 glibc >= 2.17. DIST_TARGETS='linux-x64-gnu linux-arm64-gnu linux-x64-musl
# linux-arm64-musl' (for dist and test-dist alike) adds aarch64 glibc and x86_64 and aarch64 musl
# (docs/packaging.md, Targets); windows-x64-gnu adds Windows x86_64, which test-dist runs under
# Wine (tests/dist/test-dist-reach.sh); macos-arm64 and macos-x64 add macOS 11+ on Apple silicon
# and 10.12+ on x86_64, which test-dist checks statically, nothing here running Mach-O
# (tests/dist/test-dist-macos.sh; rcodesign, which signs them, is built into target/tools).
# Without a Linux target, test-dist runs only the Windows and macOS checks.
dist:
	scripts/dist.sh

# Not part of `make test` (issue 55): every registry's own check of what a release publishes,
# never an upload: cargo publish --dry-run for zklock-wire, zklock and zklock-cli in dependency
# order, the sdist built and installed from source, twine check on the wheels and the sdist,
# npm publish --dry-run for the main package and each platform package (docs/packaging.md,
# Publishing).
release-check: dist
	scripts/release-check.sh

# Opt-in, not part of `make test`: the shipped crates type-check (cargo check, nothing linked)
# for Windows and macOS, each with a standard library built from Debian's rust-web-src
# (issue 36's first step; REACH_TARGETS='windows-x64-gnu macos-arm64 macos-x64' by default).
check-reach:
	scripts/check-reach.sh

# Starts (or reuses) a local ZooKeeper when ZKLOCK_SERVERS is unset, then workers of every
# face contend for one lock and a checker gives its verdict.
demo: deps
	cli/demo.sh

# Installs libzklock, its headers and zklock.pc under PREFIX (default /usr/local).
PREFIX ?= /usr/local
install:
	$(MAKE) -C bindings-c install PREFIX=$(PREFIX)

# Benchmarks against Curator, kazoo and the raw ZooKeeper limit; results in bench/results/.
bench: deps
	bench/run.sh

# Not part of `make bench` (issue 51, point 5): scenario 9 at every size, timing and topology of
# issue 34 (1,000 and 5,000 sessions; standalone and 3 members; T = 10 s and 4 s), zklock
# measured first and last: more than an hour on 2 cores.
bench-s9-long: deps
	bench/run.sh --modes nosync --scenarios s9 --impls zklock,curator,kazoo,zklock --s9-sizes 1000,5000 --s9-members 1,3 --s9-timings 10000,4000

# The member-isolation and one-way-loss scenarios at their full count (make test runs 2-3 rounds
# of each; issues 23 and 33 ask for at least 10): a holder on an isolated follower or leader, or
# one that hears nothing back, knows (and stops) first, and zklock exec's and elect's command is
# stopped before the next holder's starts, also while that zklock itself is stopped, and a
# holder stopped 5 s at T = 10 s keeps its lease in at least 9 rounds of 10 (issue 50, part 4);
# a holder resumed from a simulated suspend never reads held (issue 50, part 3); holders behind
# a round-robin TCP load balancer, and on a follower stopped past syncLimit ticks, know first
# (issue 54, point 7).
TRUST_ROUNDS ?= 10
# The Python face for the one-way-loss rounds (issue 33), as tests/ci-test.sh installs it.
PY_VENV ?= $(or $(ZKLOCK_PY_VENV),$(or $(CARGO_TARGET_DIR),target)/py-venv)
trust-long: deps
	$(CARGO) build -q -p zklock-testkit --bin zk-harness
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) $(CARGO) test -p zklock-trust --test isolation -- --nocapture --test-threads=1
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) $(CARGO) test -p zklock-cli --test isolation -- --nocapture
	@$(PY_VENV)/bin/python -c 'import zklock' 2>/dev/null || { [ -x $(PY_VENV)/bin/python ] || python3 -m venv $(PY_VENV); $(PY_VENV)/bin/python -m pip install -q ./bindings-python; }
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) ZKLOCK_PYTHON=$(abspath $(PY_VENV))/bin/python $(CARGO) test -p zklock-trust --test one_way -- --nocapture --include-ignored --test-threads=1
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) $(CARGO) test -p zklock-cli --test one_way -- --nocapture --test-threads=1
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) $(CARGO) test -p zklock-cli --test paused -- --nocapture --test-threads=1
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) $(CARGO) test -p zklock-trust --test resumed -- --nocapture
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) $(CARGO) test -p zklock-trust --test suspend -- --nocapture --test-threads=1
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) $(CARGO) test -p zklock-trust --test balancer -- --nocapture
	ZKLOCK_ISOLATION_ROUNDS=$(TRUST_ROUNDS) $(CARGO) test -p zklock-trust --test stopped_follower -- --nocapture

# Not part of `make test` (issue 57): the exit shapes of bindings-python/tests/test_exit.py at
# EXIT_RUNS runs each (make test runs 30): thousands of short Python programs that end while
# zklock is busy, beside two CPU hogs, each of which must exit with its own status.
EXIT_RUNS ?= 400
test-exit-long: deps
	$(CARGO) build -q -p zklock-testkit --bin zk-harness
	@$(PY_VENV)/bin/python -c 'import zklock' 2>/dev/null || { [ -x $(PY_VENV)/bin/python ] || python3 -m venv $(PY_VENV); $(PY_VENV)/bin/python -m pip install -q pytest ./bindings-python; }
	cd bindings-python && ZK_HARNESS=$(abspath $(or $(CARGO_TARGET_DIR),target))/debug/zk-harness ZKLOCK_EXIT_RUNS=$(EXIT_RUNS) $(abspath $(PY_VENV))/bin/python -m pytest -p no:cacheprovider -q -s tests/test_exit.py

# The transport's decoders fed random and mutated frames at length (make test runs 20,000 cases
# per property; wire/README.md): FUZZ_CASES per property, optimised, a new seed each run unless
# ZKLOCK_WIRE_FUZZ_SEED is set.
FUZZ_CASES ?= 1000000
fuzz-wire:
	ZKLOCK_WIRE_FUZZ_CASES=$(FUZZ_CASES) ZKLOCK_WIRE_FUZZ_SEED=$${ZKLOCK_WIRE_FUZZ_SEED:-$$(date +%s)} $(CARGO) test -p zklock-wire --release --test fuzz -- --nocapture

# A bounded soak with random faults on a 3-node ensemble (SOAK_SECONDS, default 600).
SOAK_SECONDS ?= 600
soak: deps
	$(CARGO) run -q --release -p zklock-trust --bin soak -- $(SOAK_SECONDS)

# Not part of `make test` (issue 34): one process opens SESSIONS sessions (default 10,000)
# against a 3-member ensemble, takes and releases one lock on each (a path each) and closes them
# all; prints the client's memory, each member's CPU, connections and heap, and the times to
# open and to close; any error fails it. SESSIONS_ARGS passes more options: --parallel P,
# --window-secs S, --session-ms T, --tick-ms K, --server-heap no (tests/trust/README.md).
SESSIONS ?= 10000
soak-10k: deps
	$(CARGO) run -q --release -p zklock-trust --bin soak-sessions -- --sessions $(SESSIONS) $(SESSIONS_ARGS)
