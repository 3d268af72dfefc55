// Test of the C++17 RAII wrapper (include/zklock.hpp) against a real ZooKeeper.
//   test_zklock_cpp SERVERS        (last line: `N passed, N failed`)
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "zklock.hpp"

using namespace std::chrono_literals;

static std::string servers;
static std::string base;
static int passed_count = 0, failed_count = 0;

struct check_failed {};

#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond)) {                                                             \
            std::printf("    check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            throw check_failed{};                                                  \
        }                                                                          \
    } while (0)

template <class F>
static void run(const char *name, F test) {
    std::printf("--- %s\n", name);
    bool ok = false;
    try {
        test();
        ok = true;
    } catch (const check_failed &) {
    } catch (const zklock::error &e) {
        std::printf("    unexpected zklock::error %s: %s\n", e.status_str(), e.what());
    } catch (const std::exception &e) {
        std::printf("    unexpected exception: %s\n", e.what());
    }
    (ok ? passed_count : failed_count)++;
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", name);
    std::fflush(stdout);
}

template <class F>
static zklock_status status_of(F f) {
    try {
        f();
    } catch (const zklock::error &e) {
        return e.status();
    }
    return ZKLOCK_OK;
}

static std::string path(const char *name) { return base + "/" + name; }

// A one-shot latch for callbacks.
struct latch {
    std::mutex mu;
    std::condition_variable cv;
    int count = 0;
    void set() {
        std::lock_guard<std::mutex> g(mu);
        count++;
        cv.notify_all();
    }
    bool wait(std::chrono::milliseconds d, int n = 1) {
        std::unique_lock<std::mutex> g(mu);
        return cv.wait_for(g, d, [&] { return count >= n; });
    }
};

static void test_raii_lease_releases_at_scope_end() {
    zklock::client a(servers), b(servers);
    zklock::lock la = a.mutex(path("raii")), lb = b.mutex(path("raii"));
    int64_t token = 0;
    {
        zklock::lease lease = la.acquire();
        CHECK(lease && lease.is_held());
        token = lease.token();
        CHECK(token > 0);
        CHECK(lease.path().rfind(path("raii"), 0) == 0);
        CHECK(!lb.try_acquire().has_value());
    }
    auto other = lb.try_acquire();  // released by the destructor
    CHECK(other.has_value() && other->token() > token);
    CHECK(other->release());
    CHECK(!*other);
    CHECK(status_of([&] { other->token(); }) == ZKLOCK_NOT_HELD);
}

static void test_move_semantics() {
    zklock::client c(servers);
    zklock::lock l = c.mutex(path("move"));
    zklock::lock moved = std::move(l);
    CHECK(!l && moved);
    std::vector<zklock::lease> held;
    held.push_back(moved.acquire());
    held.push_back(moved.acquire());  // re-entrant: same handle, same thread
    CHECK(held[0].token() == held[1].token());
    zklock::lease taken = std::move(held[0]);
    CHECK(!held[0] && taken);
    held.clear();
    CHECK(taken.release());
    zklock::client c2 = std::move(c);
    zklock::lock l2 = c2.mutex(path("move"));
    zklock::lease again = l2.acquire_for(1s);
    CHECK(again.is_held());
}

static void test_errors_carry_the_status() {
    zklock::client c(servers);
    try {
        c.mutex("relative/path");
        CHECK(false);
    } catch (const zklock::error &e) {
        CHECK(e.status() == ZKLOCK_INVALID_ARGUMENT);
        CHECK(std::strstr(e.what(), "relative/path") != nullptr);
    }
    CHECK(status_of([&] { c.multi({}); }) == ZKLOCK_INVALID_ARGUMENT);
    zklock::options bad;
    bad.connect_timeout = 300ms;
    CHECK(status_of([&] { zklock::client x("127.0.0.1:1", bad); }) == ZKLOCK_CONNECTION);
    CHECK(status_of([&] { zklock::client x("no port:x"); }) == ZKLOCK_INVALID_ARGUMENT);
    zklock::client other(servers);
    zklock::lock mine = c.mutex(path("errors")), theirs = other.mutex(path("errors"));
    zklock::lease held = mine.acquire();
    auto t0 = std::chrono::steady_clock::now();
    CHECK(status_of([&] { theirs.acquire_for(200ms); }) == ZKLOCK_TIMEOUT);
    CHECK(std::chrono::steady_clock::now() - t0 >= 150ms);
}

// acquire_for follows std::timed_mutex::try_lock_for (issue 27, point 4): `deadline - now()` of
// a deadline that passed is one try, never C's -1 "forever" (a truncated -1.5 ms used to wait
// until the holder let go) nor an error (-5 ms used to throw ZKLOCK_INVALID_ARGUMENT).
static void test_acquire_for_a_passed_deadline_is_one_try() {
    using std::chrono::steady_clock;
    zklock::client c(servers), other(servers);
    zklock::lock mine = c.mutex(path("deadline")), theirs = other.mutex(path("deadline"));
    std::optional<zklock::lease> held = mine.acquire();
    // The holder lets go after 3 s: an acquire that waits "forever" then gets the lock, and the
    // check below sees it acquired instead of timing out.
    std::thread let_go([&] {
        std::this_thread::sleep_for(3s);
        held.reset();
    });
    struct joined {
        std::thread &t;
        ~joined() {
            if (t.joinable()) t.join();
        }
    } join_on_failure{let_go};
    const std::chrono::duration<double> minus_inf(-std::numeric_limits<double>::infinity());
    auto passed = [&](auto d) {
        auto t0 = steady_clock::now();
        zklock_status st = status_of([&] { theirs.acquire_for(d); });
        return st == ZKLOCK_TIMEOUT && steady_clock::now() - t0 < 2s;
    };
    CHECK(passed(steady_clock::now() - 1500us - steady_clock::now()));
    CHECK(passed(-1ms));
    CHECK(passed(-999us));
    CHECK(passed(-5ms));
    CHECK(passed(-1h));
    CHECK(passed(0ns));
    CHECK(passed(std::chrono::duration<double, std::milli>(-0.5)));
    CHECK(passed(minus_inf));
    {
        auto t0 = steady_clock::now();
        CHECK(status_of([&] { theirs.acquire_until(steady_clock::now() - 1500us); }) ==
              ZKLOCK_TIMEOUT);
        CHECK(steady_clock::now() - t0 < 2s);
    }
    // Positive sub-millisecond durations round up to a bounded wait.
    CHECK(passed(1ns));
    CHECK(passed(std::chrono::duration<double, std::micro>(0.25)));
    CHECK(status_of([&] { theirs.acquire_for(std::chrono::duration<double>(NAN)); }) ==
          ZKLOCK_INVALID_ARGUMENT);
    // Durations beyond int64_t milliseconds (and +infinity) wait as long as it takes.
    const std::chrono::duration<double> plus_inf(std::numeric_limits<double>::infinity());
    zklock::lease after_inf = theirs.acquire_for(plus_inf);
    CHECK(after_inf.is_held());
    let_go.join();
    after_inf.release();
    zklock::lease after_max = theirs.acquire_for(std::chrono::hours::max());
    CHECK(after_max.is_held());
}

static void test_rwlock_and_upgrade() {
    zklock::client c(servers), d(servers), e(servers);
    auto [read, write] = c.rwlock(path("rw"));
    zklock::rw_lock other = d.rwlock(path("rw"));
    zklock::rw_lock third = e.rwlock(path("rw"));
    zklock::lease r = read.acquire();
    zklock::lease r2 = other.read.acquire_for(2s);
    CHECK(status_of([&] { write.acquire(); }) == ZKLOCK_UPGRADE);
    CHECK(!third.write.try_acquire());
    r.release();
    r2.release();
    zklock::lease w = write.acquire_for(2s);
    zklock::lease down = read.acquire_for(2s);  // downgrade
    CHECK(down.is_held());
    CHECK(!third.read.try_acquire());
}

static void test_multi() {
    zklock::client c(servers), d(servers);
    zklock::lock m = c.multi({path("m2"), path("m1")});
    zklock::lock single = d.mutex(path("m2"));
    {
        zklock::lease all = m.acquire_for(2s);
        CHECK(all.path().rfind(path("m1"), 0) == 0);
        CHECK(!single.try_acquire());
    }
    CHECK(single.try_acquire().has_value());
}

static void test_async_with_lambda() {
    zklock::client c(servers), d(servers);
    zklock::lock l = c.mutex(path("async")), other = d.mutex(path("async"));
    latch done;
    zklock_status seen = ZKLOCK_PANIC;
    int64_t token = 0;
    zklock::operation op = l.acquire_async([&](zklock_status st, zklock::lease lease) {
        seen = st;
        if (lease) token = lease.token();
        done.set();  // the lease is released when it goes out of scope here
    });
    CHECK(done.wait(10s));
    CHECK(seen == ZKLOCK_OK && token > 0);

    // Cancel while someone else holds it.
    zklock::lease held = other.acquire();
    latch cancelled;
    bool got_lease = true;
    zklock::operation waiting = l.acquire_async([&](zklock_status st, zklock::lease lease) {
        seen = st;
        got_lease = static_cast<bool>(lease);
        cancelled.set();
    });
    std::this_thread::sleep_for(200ms);
    waiting.cancel();
    CHECK(cancelled.wait(10s));
    CHECK(seen == ZKLOCK_CANCELLED && !got_lease);
}

static void test_state_callback_and_release_inside() {
    zklock::client c(servers);
    zklock::lock l = c.mutex(path("state"));
    zklock::lease lease = l.acquire();
    // A callback hears the current state (held) first; the replaced and the removed one may
    // have heard that, but never the lost that comes after they were replaced.
    std::atomic<int> calls{0};
    auto count_changes = [&](zklock::lease_state s) {
        if (s != zklock::lease_state::held) calls++;
    };
    lease.on_state(count_changes);
    lease.on_state(count_changes);  // replaced
    lease.on_state(nullptr);        // removed
    latch lost;
    zklock::lease *self = &lease;
    bool released_inside = false;
    lease.on_state([&](zklock::lease_state s) {
        if (s == zklock::lease_state::lost) {
            released_inside = !self->release();  // false: it had been lost
            lost.set();
        }
    });
    // Lose the lease by closing its client (session expiry is covered by the C test).
    zklock::client moved = std::move(c);
    { zklock::client closing = std::move(moved); }
    CHECK(lost.wait(10s));
    CHECK(released_inside);
    CHECK(!lease);
    CHECK(calls == 0);
}

// zklock::options{a, b}: the members left out take their defaults (and, built with
// -Wmissing-field-initializers -Werror in ci-test.sh, the aggregate form compiles cleanly).
static void test_partial_options_take_the_defaults() {
    zklock::options opts{2000ms, 5000ms};
    CHECK(opts.session_timeout == 2000ms && opts.connect_timeout == 5000ms);
    CHECK(opts.auth.empty() && opts.identity.empty() && opts.acl == ZKLOCK_ACL_OPEN);
    zklock::client c(servers, opts);
    zklock::lock l = c.mutex(path("partial-options"));
    zklock::lease lease = l.acquire_for(5000ms);
    CHECK(lease.token() > 0);
    zklock::options only_timeout{2000ms};
    CHECK(only_timeout.connect_timeout == 0ms && only_timeout.acl == ZKLOCK_ACL_OPEN);
}

// Semaphores are zklock::lock objects: a semaphore of 2 gives two leases and refuses a third;
// the semaphore mutex excludes itself; a revocation reaches the holder's on_revoke, which may
// release the lease from inside.
static void test_semaphore_and_revocation() {
    zklock::client c(servers), other(servers);
    zklock::lock sem = c.semaphore(path("semaphore"), 2);
    zklock::lease one = sem.acquire_for(10s);
    zklock::lease two = sem.acquire_for(10s);
    CHECK(one.path() != two.path());
    CHECK(!other.semaphore(path("semaphore"), 2).try_acquire());
    CHECK(status_of([&] { c.semaphore(path("semaphore"), 0); }) == ZKLOCK_INVALID_ARGUMENT);
    one.release();
    two.release();

    zklock::lock mine = c.semaphore_mutex(path("semaphore-mutex"));
    zklock::lease held = mine.acquire_for(10s);
    CHECK(!mine.try_acquire());  // not re-entrant
    latch asked;
    zklock::lease *self = &held;
    bool released_inside = false;
    held.on_revoke([&] {
        released_inside = self->release();
        asked.set();
    });
    CHECK(!held.revoke_requested());
    other.revoke(path("semaphore-mutex"));
    zklock::lease next = other.semaphore_mutex(path("semaphore-mutex")).acquire_for(20s);
    CHECK(asked.wait(10s));
    CHECK(released_inside);
    CHECK(!held);
    next.release();
    CHECK(status_of([&] { other.revoke(path("semaphore-mutex")); }) == ZKLOCK_NOT_HELD);
}


static void test_leadership_guard_and_observer() {
    zklock::client c(servers), other(servers);
    auto p = path("election");
    auto watch = other.observe_leader(p);
    CHECK(!watch.next(5000).has_value());  // nobody leads
    auto a = c.election(p, "latch", "a");
    auto b = other.election(p, "latch", "b");
    CHECK(a.style() == "latch" && a.id() == "a");
    int64_t token = 0;
    {
        zklock::leadership lead = a.lead_for(std::chrono::seconds(10));
        token = lead.token();
        CHECK(lead.is_held() && lead.lease().valid_for_ms() > 0);
        CHECK(other.check(p, token));
        auto seen = watch.next(5000);
        CHECK(seen && seen->id == "a" && seen->style == "latch" && seen->kind == "latch");
        CHECK(!b.try_lead().has_value());
        lead.proclaim("a2");
        CHECK(b.leader() && b.leader()->id == "a2");
        CHECK(a.participants().size() == 1);
    }  // resigned here
    CHECK(!other.check(p, token));
    CHECK(!watch.next(5000).has_value());
    CHECK(status_of([&] { watch.next(200); }) == ZKLOCK_TIMEOUT);
    auto sel = other.election(p, "selector", "s");
    auto held = b.lead();
    CHECK(status_of([&] { sel.try_lead(); }) == ZKLOCK_CONFLICT);
    CHECK(held.resign());
    CHECK(status_of([&] { c.election(p, "leader"); }) == ZKLOCK_INVALID_ARGUMENT);
    auto m = c.mutex(path("maxhold"));
    m.set_max_hold(200);
    auto lease = m.acquire();
    for (int i = 0; i < 50 && lease.state() != zklock::lease_state::lost; i++)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(lease.lost_reason().find("max-hold") != std::string::npos);
    CHECK(status_of([&] { lease.valid_for_ms(); }) == ZKLOCK_LOST);
}

// Issue 33: a destructor cannot throw, so a scope that must learn of a loss ends with finish(),
// which throws ZKLOCK_LOST after a loss and releases quietly otherwise; ~lease() stays quiet.
static void test_finish_ends_a_scope_loudly_after_a_loss_and_quietly_otherwise() {
    {
        zklock::client c(servers);
        auto held = c.mutex(path("finish")).acquire();
        held.finish();
        CHECK(!held);
    }
    zklock::client own(servers);
    auto lease = own.mutex(path("finish")).acquire();
    auto election = own.election(path("finish-e"), "latch", "a");
    auto lead = election.lead();
    CHECK(zklock_client_close(own.get()) == ZKLOCK_OK);
    CHECK(lease.state() == zklock::lease_state::lost);
    CHECK(status_of([&] { lease.finish(); }) == ZKLOCK_LOST);
    CHECK(!lease);
    CHECK(status_of([&] { lead.finish(); }) == ZKLOCK_LOST);
    CHECK(!lead);
    zklock::client again(servers);
    auto next = again.mutex(path("finish")).acquire();  // the lost lease's node went with its session
    CHECK(next.release());
}

static void test_another_election_object_cannot_resign_a_leadership() {
    zklock::client c(servers);
    auto a = c.election(path("foreign"), "latch", "a");
    auto b = c.election(path("foreign"), "latch", "b");
    auto lead = a.lead();
    zklock_status st = zklock_election_resign(b.get(), lead.lease().get(), false, nullptr, nullptr, nullptr);
    CHECK(st == ZKLOCK_INVALID_ARGUMENT);
    CHECK(lead.is_held() && a.leader() && a.leader()->id == "a");
    CHECK(status_of([&] { a.lead_for(std::chrono::seconds(30)); }) == ZKLOCK_INVALID_ARGUMENT);
    CHECK(lead.resign());
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s SERVERS\n", argv[0]);
        std::printf("0 passed, 1 failed\n");
        return 2;
    }
    servers = argv[1];
    base = "/zklock-cpp-test/" + std::to_string(getpid());
    std::printf("zklock %s (C++ wrapper) against %s\n", zklock_version(), servers.c_str());
    run("raii_lease_releases_at_scope_end", test_raii_lease_releases_at_scope_end);
    run("move_semantics", test_move_semantics);
    run("errors_carry_the_status", test_errors_carry_the_status);
    run("acquire_for_a_passed_deadline_is_one_try", test_acquire_for_a_passed_deadline_is_one_try);
    run("rwlock_and_upgrade", test_rwlock_and_upgrade);
    run("multi", test_multi);
    run("async_with_lambda", test_async_with_lambda);
    run("state_callback_and_release_inside", test_state_callback_and_release_inside);
    run("partial_options_take_the_defaults", test_partial_options_take_the_defaults);
    run("semaphore_and_revocation", test_semaphore_and_revocation);
    run("leadership_guard_and_observer", test_leadership_guard_and_observer);
    run("finish_ends_a_scope_loudly_after_a_loss_and_quietly_otherwise",
        test_finish_ends_a_scope_loudly_after_a_loss_and_quietly_otherwise);
    run("another_election_object_cannot_resign_a_leadership", test_another_election_object_cannot_resign_a_leadership);
    std::printf("%d passed, %d failed\n", passed_count, failed_count);
    return failed_count == 0 ? 0 : 1;
}
