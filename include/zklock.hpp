// zklock.hpp: header-only C++17 RAII wrapper over the C API of libzklock (zklock.h).
//
//   zklock::client client("127.0.0.1:2181");
//   zklock::lock mutex = client.mutex("/locks/orders");
//   {
//       zklock::lease lease = mutex.acquire();            // throws zklock::error on failure
//       write(row, lease.token());                        // fencing token
//   }                                                     // released when it goes out of scope
//   if (auto lease = mutex.try_acquire()) { ... }         // std::optional<zklock::lease>
//   auto [read, write] = client.rwlock("/locks/x");      // zklock::rw_lock: two locks
//
// Handles are move-only and free what they own; errors are zklock::error exceptions carrying the
// zklock_status (`e.status()`) and the library's message. Callbacks (std::function) run on the
// client's callback thread; an exception escaping one is swallowed there (it cannot cross the C
// library), so handle errors inside. Link with -lzklock (pkg-config zklock).
#ifndef ZKLOCK_HPP
#define ZKLOCK_HPP

// Checked before any include, and the rest of the file is skipped then, so that an older
// dialect gets this one line rather than a page of errors from <optional> and the like. MSVC keeps __cplusplus at 199711L unless
// /Zc:__cplusplus is given; _MSVC_LANG holds its real dialect.
#if defined(_MSVC_LANG)
#define ZKLOCK_HPP_CPLUSPLUS _MSVC_LANG
#else
#define ZKLOCK_HPP_CPLUSPLUS __cplusplus
#endif
#if ZKLOCK_HPP_CPLUSPLUS < 201703L
#error "zklock.hpp needs C++17 or later (std::optional, structured bindings): compile with -std=c++17 (MSVC: /std:c++17), or use the C API in zklock.h, which any C++ dialect can include"
#else
#undef ZKLOCK_HPP_CPLUSPLUS

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "zklock.h"

namespace zklock {

/// A failed zklock call: the status and the library's message.
class error : public std::runtime_error {
public:
    error(zklock_status status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    zklock_status status() const noexcept { return status_; }
    /// The status's static description, e.g. "ZKLOCK_TIMEOUT: ...".
    const char *status_str() const noexcept { return zklock_status_str(status_); }

private:
    zklock_status status_;
};

namespace detail {
inline void check(zklock_status status) {
    if (status != ZKLOCK_OK) {
        const char *message = zklock_last_error();
        throw error(status, message && *message ? message : zklock_status_str(status));
    }
}

// A C++ duration as the C API's `timeout_ms`. C reads -1 as "forever" and other negatives as
// errors, so a truncating cast turned a deadline that passed 1 ms ago (`deadline - now()` of
// -1.5 ms) into a wait forever (issue 27, point 4). std::timed_mutex::try_lock_for's rule
// instead: <= 0 is one try (0), a positive duration rounds up (never down to a try), and one past
// int64_t milliseconds (+infinity among them) is no bound (-1). NaN has no C form.
template <class Rep, class Period>
int64_t timeout_ms(std::chrono::duration<Rep, Period> timeout) {
    const long double ms = std::chrono::duration<long double, std::milli>(timeout).count();
    if (ms != ms) throw error(ZKLOCK_INVALID_ARGUMENT, "the timeout is NaN");
    if (ms <= 0) return 0;
    if (ms >= 9.2e18L) return -1;
    const auto whole = static_cast<int64_t>(ms);
    return whole < ms ? whole + 1 : whole;
}

// The state callback that is running on this thread, so that a lease released from inside its
// own callback frees the std::function only after the call returns.
struct running_callback {
    const void *function = nullptr;
    bool delete_after = false;
};
inline running_callback &running() {
    static thread_local running_callback r;
    return r;
}
}  // namespace detail

enum class lease_state {
    held = ZKLOCK_LEASE_HELD,
    suspended = ZKLOCK_LEASE_SUSPENDED,
    lost = ZKLOCK_LEASE_LOST,
    released = ZKLOCK_LEASE_RELEASED,
};

/// A held lock. Move-only; released when destroyed (errors ignored: call release() to see them).
class lease {
public:
    using state_callback = std::function<void(lease_state)>;
    using revoke_callback = std::function<void()>;

    lease() noexcept = default;
    /// Takes ownership of a C lease.
    explicit lease(zklock_lease *raw) noexcept : raw_(raw) {}
    lease(lease &&other) noexcept
        : raw_(std::exchange(other.raw_, nullptr)),
          on_state_(std::move(other.on_state_)),
          on_revoke_(std::move(other.on_revoke_)) {}
    lease &operator=(lease &&other) noexcept {
        if (this != &other) {
            reset();
            raw_ = std::exchange(other.raw_, nullptr);
            on_state_ = std::move(other.on_state_);
            on_revoke_ = std::move(other.on_revoke_);
        }
        return *this;
    }
    lease(const lease &) = delete;
    lease &operator=(const lease &) = delete;
    ~lease() { reset(); }

    explicit operator bool() const noexcept { return raw_ != nullptr; }
    /// The fencing token (strictly increasing from one holder to the next).
    int64_t token() const { return zklock_lease_token(need()); }
    /// Full path of our lock node.
    std::string path() const { return zklock_lease_path(need()); }
    lease_state state() const { return static_cast<lease_state>(zklock_lease_state_get(need())); }
    bool is_held() const { return state() == lease_state::held; }
    /// Milliseconds left until valid_until (no one else can hold it before then); throws
    /// zklock::error with ZKLOCK_LOST once lost.
    int64_t valid_for_ms() const {
        int64_t ms = 0;
        detail::check(zklock_lease_valid_for_ms(need(), &ms));
        return ms;
    }
    /// Why the lease was lost ("... max-hold ..." for a maximum hold); empty while not lost.
    std::string lost_reason() const {
        const char *reason = zklock_lease_lost_reason(need());
        return reason ? reason : "";
    }

    /// Releases the lock now. Returns true, or false when the lease had been lost before (there
    /// was nothing to delete); throws zklock::error on other failures. The lease is empty after.
    bool release() {
        zklock_lease *raw = std::exchange(raw_, nullptr);
        if (!raw) throw error(ZKLOCK_NOT_HELD, "the lease is empty (moved from or released)");
        zklock_status status = zklock_lease_release(raw);
        drop_callback();
        drop(on_revoke_);
        if (status == ZKLOCK_LOST) return false;
        detail::check(status);
        return true;
    }

    /// Ends a scoped hold loudly (docs/contract.md): release(), then zklock::error ZKLOCK_LOST
    /// when the lease had been lost. ~lease() cannot throw: it releases quietly.
    void finish() {
        std::string why = lost_reason();
        if (!release()) throw error(ZKLOCK_LOST, "the lease was lost before its scope ended (" + why + ")");
    }

    /// Calls `callback(state)` on the library's callback thread with the current state, then at
    /// every change (lost is reported once, and nothing after it). It may release this lease (release() from inside is fine) as long as the
    /// lease object itself is still alive. Replaces an earlier callback; an empty one removes it.
    void on_state(state_callback callback) {
        zklock_lease *raw = need();
        if (!callback) {
            detail::check(zklock_lease_on_state(raw, nullptr, nullptr));
            drop_callback();
            return;
        }
        auto fresh = std::make_unique<state_callback>(std::move(callback));
        detail::check(zklock_lease_on_state(raw, &lease::state_trampoline, fresh.get()));
        drop_callback();  // the old one is deactivated: nothing runs it any more
        on_state_ = std::move(fresh);
    }

    /// Calls `callback()` once on the library's callback thread when someone asks the holder to
    /// let go (the lease's node set to `__REVOKE__`: client::revoke, `zklock revoke`, Curator's
    /// Revoker), also when that happened before; never after the lease was released or lost.
    /// Only a request: the lease stays held until released (release() from inside is fine while
    /// the lease object is alive). Replaces an earlier callback; an empty one removes it.
    void on_revoke(revoke_callback callback) {
        zklock_lease *raw = need();
        if (!callback) {
            detail::check(zklock_lease_on_revoke(raw, nullptr, nullptr));
            drop(on_revoke_);
            return;
        }
        auto fresh = std::make_unique<revoke_callback>(std::move(callback));
        detail::check(zklock_lease_on_revoke(raw, &lease::revoke_trampoline, fresh.get()));
        drop(on_revoke_);  // the old one is deactivated: nothing runs it any more
        on_revoke_ = std::move(fresh);
    }
    /// True once someone asked the holder to let go.
    bool revoke_requested() const { return zklock_lease_revoke_requested(need()); }

    /// The C lease (still owned by this object).
    zklock_lease *get() const noexcept { return raw_; }
    /// Gives up ownership of the C lease (the caller releases it; no callback set here remains).
    zklock_lease *detach() noexcept {
        if (on_state_ && raw_) zklock_lease_on_state(raw_, nullptr, nullptr);
        if (on_revoke_ && raw_) zklock_lease_on_revoke(raw_, nullptr, nullptr);
        drop_callback();
        drop(on_revoke_);
        return std::exchange(raw_, nullptr);
    }

private:
    zklock_lease *need() const {
        if (!raw_) throw error(ZKLOCK_NOT_HELD, "the lease is empty (moved from or released)");
        return raw_;
    }
    void reset() noexcept {
        if (raw_) zklock_lease_release(std::exchange(raw_, nullptr));
        drop_callback();
        drop(on_revoke_);
    }
    void drop_callback() noexcept { drop(on_state_); }
    template <class F>
    static void drop(std::unique_ptr<F> &callback) noexcept {
        detail::running_callback &r = detail::running();
        if (callback && r.function == callback.get()) {
            callback.release();  // deleted by the trampoline once the call returns
            r.delete_after = true;
        }
        callback.reset();
    }
    static void revoke_trampoline(void *user, zklock_lease *) noexcept {
        auto *callback = static_cast<revoke_callback *>(user);
        detail::running_callback saved = detail::running();
        detail::running() = {callback, false};
        try {
            (*callback)();
        } catch (...) {
        }
        bool delete_after = detail::running().delete_after;
        detail::running() = saved;
        if (delete_after) delete callback;
    }
    static void state_trampoline(void *user, zklock_lease *, zklock_lease_state state) noexcept {
        auto *callback = static_cast<state_callback *>(user);
        detail::running_callback saved = detail::running();
        detail::running() = {callback, false};
        try {
            (*callback)(static_cast<lease_state>(state));
        } catch (...) {
        }
        bool delete_after = detail::running().delete_after;
        detail::running() = saved;
        if (delete_after) delete callback;
    }

    zklock_lease *raw_ = nullptr;
    std::unique_ptr<state_callback> on_state_;
    std::unique_ptr<revoke_callback> on_revoke_;
};


/// One participant of a lock's queue or an election (zklock_participant, copied).
struct participant {
    std::string node;
    std::string id;
    int64_t token = 0;
    std::string library;
    std::string kind;
    /// The election layout ("latch", "selector", "kazoo"); empty for read, write, lease nodes.
    std::string style;
    int64_t session_id = 0;
    int64_t created_ms = 0;
};

namespace detail {
/// Copies a C list into participants and frees it.
inline std::vector<participant> take_list(zklock_participants *list) {
    std::vector<participant> out;
    for (size_t i = 0; i < zklock_participants_count(list); i++) {
        zklock_participant p{};
        p.size = sizeof p;
        if (zklock_participants_get(list, i, &p) != ZKLOCK_OK) break;
        out.push_back(participant{p.node, p.id, p.token, p.library, p.kind, p.style ? p.style : "",
                                  p.session_id, p.created_ms});
    }
    zklock_participants_free(list);
    return out;
}
}  // namespace detail

/// An asynchronous acquire in flight. Move-only; destroying it does not cancel.
class operation {
public:
    operation() noexcept = default;
    explicit operation(zklock_op *raw) noexcept : raw_(raw) {}
    operation(operation &&other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    operation &operator=(operation &&other) noexcept {
        if (this != &other) {
            zklock_op_free(raw_);
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    operation(const operation &) = delete;
    operation &operator=(const operation &) = delete;
    ~operation() { zklock_op_free(raw_); }

    /// The callback then gets ZKLOCK_CANCELLED (unless the acquire had already ended).
    void cancel() {
        if (raw_) detail::check(zklock_op_cancel(raw_));
    }

private:
    zklock_op *raw_ = nullptr;
};

/// A lock handle (mutex, one side of a read/write lock, or a multi-lock). Move-only.
/// Re-entrant per handle and thread.
class lock {
public:
    using acquire_callback = std::function<void(zklock_status, lease)>;

    lock() noexcept = default;
    explicit lock(zklock_lock *raw) noexcept : raw_(raw) {}
    lock(lock &&other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    lock &operator=(lock &&other) noexcept {
        if (this != &other) {
            zklock_lock_free(raw_);
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    lock(const lock &) = delete;
    lock &operator=(const lock &) = delete;
    ~lock() { zklock_lock_free(raw_); }

    explicit operator bool() const noexcept { return raw_ != nullptr; }

    /// Waits as long as it takes.
    lease acquire() { return acquire_ms(-1); }
    /// Waits at most `timeout`, as std::timed_mutex::try_lock_for does: a duration <= 0 (a
    /// deadline that has passed: `acquire_for(deadline - now())`) is one try, a positive one is
    /// rounded up to whole milliseconds, one beyond what int64_t milliseconds hold waits as long
    /// as it takes; a NaN is ZKLOCK_INVALID_ARGUMENT. Throws zklock::error with ZKLOCK_TIMEOUT
    /// when it passed (or the try found the lock held).
    template <class Rep, class Period>
    lease acquire_for(std::chrono::duration<Rep, Period> timeout) {
        return acquire_ms(detail::timeout_ms(timeout));
    }
    /// acquire_for(deadline - Clock::now()).
    template <class Clock, class Duration>
    lease acquire_until(std::chrono::time_point<Clock, Duration> deadline) {
        return acquire_for(deadline - Clock::now());
    }
    /// One try: an empty optional when someone else holds the lock.
    std::optional<lease> try_acquire() {
        zklock_lease *raw = nullptr;
        zklock_status status = zklock_acquire(raw_, 0, &raw);
        if (status == ZKLOCK_TIMEOUT) return std::nullopt;
        detail::check(status);
        return lease(raw);
    }
    /// Starts acquiring without blocking; `callback(status, lease)` runs once on the library's
    /// callback thread (the lease is empty unless status is ZKLOCK_OK). timeout: -1 forever,
    /// 0 one try, > 0 milliseconds.
    operation acquire_async(acquire_callback callback, int64_t timeout_ms = -1) {
        auto owned = std::make_unique<acquire_callback>(std::move(callback));
        zklock_op *op = nullptr;
        detail::check(
            zklock_acquire_async(raw_, timeout_ms, &lock::acquire_trampoline, owned.get(), &op));
        owned.release();  // the trampoline deletes it
        return operation(op);
    }

    /// Every lease taken from now on ends after `max_hold_ms` (lost, reason "max-hold"); -1
    /// removes the limit; 0 throws ZKLOCK_INVALID_ARGUMENT. Mutexes and semaphores only.
    void set_max_hold(int64_t max_hold_ms) { detail::check(zklock_lock_set_max_hold(raw_, max_hold_ms)); }
    /// The queue: holder first, then the waiters.
    std::vector<participant> participants(int64_t timeout_ms = -1) {
        zklock_participants *list = nullptr;
        detail::check(zklock_lock_participants(raw_, timeout_ms, &list));
        return detail::take_list(list);
    }

    zklock_lock *get() const noexcept { return raw_; }

private:
    lease acquire_ms(int64_t timeout_ms) {
        zklock_lease *raw = nullptr;
        detail::check(zklock_acquire(raw_, timeout_ms, &raw));
        return lease(raw);
    }
    static void acquire_trampoline(void *user, zklock_status status, zklock_lease *raw) noexcept {
        std::unique_ptr<acquire_callback> callback(static_cast<acquire_callback *>(user));
        lease held(raw);
        try {
            (*callback)(status, std::move(held));
        } catch (...) {
        }
    }

    zklock_lock *raw_ = nullptr;
};


class election;

/// A leadership guard: the lease of a leader, resigned when destroyed (errors ignored: call
/// resign() to see them). Move-only. Everything a lease has is on lease().
class leadership {
public:
    leadership() noexcept = default;
    leadership(zklock_election *election, lease held) noexcept
        : election_(election), lease_(std::move(held)) {}
    leadership(leadership &&other) noexcept
        : election_(std::exchange(other.election_, nullptr)), lease_(std::move(other.lease_)) {}
    leadership &operator=(leadership &&other) noexcept {
        if (this != &other) {
            reset();
            election_ = std::exchange(other.election_, nullptr);
            lease_ = std::move(other.lease_);
        }
        return *this;
    }
    leadership(const leadership &) = delete;
    leadership &operator=(const leadership &) = delete;
    ~leadership() { reset(); }

    explicit operator bool() const noexcept { return static_cast<bool>(lease_); }
    zklock::lease &lease() noexcept { return lease_; }
    int64_t token() const { return lease_.token(); }
    bool is_held() const { return lease_.is_held(); }
    /// Sets our node's data: the leader's id participants and observers see.
    void proclaim(const std::string &data) {
        detail::check(zklock_election_proclaim(election_, need(), data.data(), data.size()));
    }
    /// Gives the leadership up now (the guard is empty after). Returns false when it had been
    /// lost before; throws zklock::error on other failures.
    bool resign() {
        zklock_lease *raw = need();
        zklock_election *e = std::exchange(election_, nullptr);
        zklock_status status = zklock_election_resign(e, raw, false, nullptr, nullptr, nullptr);
        (void)lease_.detach();
        if (status == ZKLOCK_LOST) return false;
        detail::check(status);
        return true;
    }
    /// resign(), loud as lease::finish() (the destructor resigns quietly).
    void finish() {
        std::string why = lease_.lost_reason();
        if (!resign()) throw error(ZKLOCK_LOST, "the leadership was lost before its scope ended (" + why + ")");
    }

private:
    zklock_lease *need() const {
        if (!lease_ || !election_) throw error(ZKLOCK_NOT_HELD, "the leadership is empty (moved from or resigned)");
        return lease_.get();
    }
    void reset() noexcept {
        if (lease_ && election_) {
            zklock_election_resign(election_, lease_.get(), false, nullptr, nullptr, nullptr);
            (void)lease_.detach();
        }
        election_ = nullptr;
    }

    zklock_election *election_ = nullptr;
    zklock::lease lease_;
};

/// One participant's side of the leader election on a path. Move-only; free it after the
/// leaderships taken through it (they resign through it).
class election {
public:
    election() noexcept = default;
    explicit election(zklock_election *raw) noexcept : raw_(raw) {}
    election(election &&other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    election &operator=(election &&other) noexcept {
        if (this != &other) {
            zklock_election_free(raw_);
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    election(const election &) = delete;
    election &operator=(const election &) = delete;
    ~election() { zklock_election_free(raw_); }

    std::string id() const { return zklock_election_id(raw_); }
    std::string style() const { return zklock_election_style(raw_); }
    /// Waits until we lead (throws ZKLOCK_CONFLICT beside another layout's node).
    leadership lead() { return lead_ms(-1); }
    /// Waits at most `timeout` (std::timed_mutex's rule, as lock::acquire_for); throws
    /// zklock::error with ZKLOCK_TIMEOUT past it.
    template <class Rep, class Period>
    leadership lead_for(std::chrono::duration<Rep, Period> timeout) {
        return lead_ms(detail::timeout_ms(timeout));
    }
    /// One attempt: an empty optional when someone else leads.
    std::optional<leadership> try_lead() {
        zklock_lease *raw = nullptr;
        zklock_status status = zklock_election_lead(raw_, 0, &raw);
        if (status == ZKLOCK_TIMEOUT) return std::nullopt;
        detail::check(status);
        return leadership(raw_, lease(raw));
    }
    std::vector<participant> participants() {
        zklock_participants *list = nullptr;
        detail::check(zklock_election_participants(raw_, &list));
        return detail::take_list(list);
    }
    /// The leader now; empty when nobody leads.
    std::optional<participant> leader() {
        zklock_participants *list = nullptr;
        detail::check(zklock_election_leader(raw_, &list));
        auto all = detail::take_list(list);
        if (all.empty()) return std::nullopt;
        return all.front();
    }

    zklock_election *get() const noexcept { return raw_; }

private:
    leadership lead_ms(int64_t timeout_ms) {
        zklock_lease *raw = nullptr;
        detail::check(zklock_election_lead(raw_, timeout_ms, &raw));
        return leadership(raw_, lease(raw));
    }

    zklock_election *raw_ = nullptr;
};

/// Watches who leads the election on a path without taking part. Move-only.
class leader_watch {
public:
    leader_watch() noexcept = default;
    explicit leader_watch(zklock_leader_watch *raw) noexcept : raw_(raw) {}
    leader_watch(leader_watch &&other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    leader_watch &operator=(leader_watch &&other) noexcept {
        if (this != &other) {
            zklock_leader_watch_free(raw_);
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    leader_watch(const leader_watch &) = delete;
    leader_watch &operator=(const leader_watch &) = delete;
    ~leader_watch() { zklock_leader_watch_free(raw_); }

    /// The leader at the first call, then the next change (empty: nobody leads); throws
    /// zklock::error with ZKLOCK_TIMEOUT when nothing changed within `timeout_ms` (-1 forever).
    std::optional<participant> next(int64_t timeout_ms = -1) {
        zklock_participants *list = nullptr;
        detail::check(zklock_leader_watch_next(raw_, timeout_ms, &list));
        auto all = detail::take_list(list);
        if (all.empty()) return std::nullopt;
        return all.front();
    }

private:
    zklock_leader_watch *raw_ = nullptr;
};

/// The two sides of a read/write lock.
struct rw_lock {
    lock read;
    lock write;
};

/// Options of a client; zero durations mean the library's defaults. Every member has a default,
/// so a partial aggregate initialisation (`zklock::options{2s, 5s}`) is complete and compiles
/// cleanly under -Wextra / -Wmissing-field-initializers.
struct options {
    std::chrono::milliseconds session_timeout{0};
    std::chrono::milliseconds connect_timeout{0};
    std::string auth{};      // "user:password", empty for none
    std::string identity{};  // empty: "host/pid"
    int32_t acl{ZKLOCK_ACL_OPEN};
    std::string tls_ca{};    // PEM file of the CA: TLS to every server; empty for none
    std::string tls_cert{};  // PEM files of a client certificate and its key (both or neither)
    std::string tls_key{};
    bool tls_verify_hostname{true};
    std::string sasl_user{};  // SASL DIGEST-MD5; empty for none
    std::string sasl_password{};
    std::chrono::milliseconds server_tick{0};  // the ensemble's tickTime; zero: the default
};

/// One ZooKeeper session. Move-only; closed when destroyed.
class client {
public:
    explicit client(const std::string &hosts, const options &opts = options()) {
        zklock_client_options o;
        zklock_client_options_init(&o);
        if (opts.session_timeout.count() > 0) o.session_timeout_ms = opts.session_timeout.count();
        if (opts.connect_timeout.count() > 0) o.connect_timeout_ms = opts.connect_timeout.count();
        if (opts.server_tick.count() > 0) o.server_tick_ms = opts.server_tick.count();
        o.auth = opts.auth.empty() ? nullptr : opts.auth.c_str();
        o.identity = opts.identity.empty() ? nullptr : opts.identity.c_str();
        o.acl = opts.acl;
        auto text = [](const std::string &s) { return s.empty() ? nullptr : s.c_str(); };
        o.tls_ca = text(opts.tls_ca);
        o.tls_cert = text(opts.tls_cert);
        o.tls_key = text(opts.tls_key);
        o.tls_verify_hostname = opts.tls_verify_hostname ? 0 : ZKLOCK_TLS_VERIFY_HOSTNAME_OFF;
        o.sasl_user = text(opts.sasl_user);
        o.sasl_password = text(opts.sasl_password);
        detail::check(zklock_client_connect(hosts.c_str(), &o, &raw_));
    }
    client(client &&other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
    client &operator=(client &&other) noexcept {
        if (this != &other) {
            zklock_client_free(raw_);
            raw_ = std::exchange(other.raw_, nullptr);
        }
        return *this;
    }
    client(const client &) = delete;
    client &operator=(const client &) = delete;
    ~client() { zklock_client_free(raw_); }

    /// An exclusive lock on `path` (re-entrant per handle and thread unless `reentrant` is false).
    lock mutex(const std::string &path, bool reentrant = true) {
        zklock_mutex_options o;
        zklock_mutex_options_init(&o);
        o.reentrancy = reentrant ? ZKLOCK_REENTRANCY_ON : ZKLOCK_REENTRANCY_OFF;
        zklock_lock *raw = nullptr;
        detail::check(zklock_mutex_new(raw_, path.c_str(), &o, &raw));
        return lock(raw);
    }
    /// A counting semaphore of `max_leases` leases on `path` (Curator's InterProcessSemaphoreV2
    /// layout): each acquire takes a lease of its own (never re-entrant).
    lock semaphore(const std::string &path, int64_t max_leases) {
        zklock_lock *raw = nullptr;
        detail::check(zklock_semaphore_new(raw_, path.c_str(), max_leases, nullptr, &raw));
        return lock(raw);
    }
    /// The semaphore of one lease: excludes Curator's InterProcessSemaphoreMutex.
    lock semaphore_mutex(const std::string &path) {
        zklock_lock *raw = nullptr;
        detail::check(zklock_semaphore_mutex_new(raw_, path.c_str(), nullptr, &raw));
        return lock(raw);
    }
    /// Asks the holder(s) of `path` (or the one `node`, when not empty) to let go; throws
    /// zklock::error with ZKLOCK_NOT_HELD when nobody holds it.
    void revoke(const std::string &path, const std::string &node = std::string()) {
        detail::check(
            zklock_revoke(raw_, path.c_str(), node.empty() ? nullptr : node.c_str()));
    }
    /// A read/write lock on `path`.
    rw_lock rwlock(const std::string &path) {
        zklock_lock *read = nullptr, *write = nullptr;
        detail::check(zklock_rwlock_new(raw_, path.c_str(), &read, &write));
        return rw_lock{lock(read), lock(write)};
    }
    /// Locks on several paths taken as one (all or nothing).
    lock multi(const std::vector<std::string> &paths) {
        std::vector<const char *> c_paths;
        c_paths.reserve(paths.size());
        for (const auto &p : paths) c_paths.push_back(p.c_str());
        zklock_lock *raw = nullptr;
        detail::check(zklock_multi_new(raw_, c_paths.data(), c_paths.size(), &raw));
        return lock(raw);
    }

    /// A participant in the election on `path`: style "latch" (default), "selector" or
    /// "kazoo"; id empty = the client's identity; max_hold_ms -1 = no limit.
    zklock::election election(const std::string &path, const std::string &style = "latch",
                              const std::string &id = std::string(), int64_t max_hold_ms = -1) {
        zklock_election *raw = nullptr;
        detail::check(zklock_election_new(raw_, path.c_str(), style.c_str(),
                                          id.empty() ? nullptr : id.c_str(), max_hold_ms, &raw));
        return zklock::election(raw);
    }
    /// Watches the leader of the election on `path`.
    leader_watch observe_leader(const std::string &path) {
        zklock_leader_watch *raw = nullptr;
        detail::check(zklock_leader_watch_new(raw_, path.c_str(), &raw));
        return leader_watch(raw);
    }
    /// Whether `token` is a current holder's or leader's on `path` (max_leases 0: unknown).
    bool check(const std::string &path, int64_t token, int64_t max_leases = 0) {
        int ok = 0;
        detail::check(zklock_check(raw_, path.c_str(), token, max_leases, &ok));
        return ok != 0;
    }

    zklock_client *get() const noexcept { return raw_; }

private:
    zklock_client *raw_ = nullptr;
};

}  // namespace zklock

#endif  // C++17
#endif  // ZKLOCK_HPP
