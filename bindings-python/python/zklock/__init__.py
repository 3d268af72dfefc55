"""zklock: distributed locks on Apache ZooKeeper.

Re-entrant mutexes, read/write locks and multi-locks after Apache Curator's recipes, with a
fencing token on every lease and a lost signal. The locks have the shapes of
``threading.Lock`` and ``asyncio.Lock``::

    import zklock

    with zklock.Client("127.0.0.1:2181", session_timeout=10.0) as client:
        lock = client.lock("/locks/orders")     # re-entrant per thread (per task under asyncio)
        with lock as lease:                      # the GIL is released while waiting
            print("fencing token", lease.token)

    async def main() -> None:
        async with await zklock.Client.connect_async("127.0.0.1:2181") as client:
            async with client.lock("/locks/orders") as lease:  # never blocks the event loop
                print("fencing token", lease.token)

    asyncio.run(main())

Re-entrancy follows Curator: a thread that holds a lock may take it again (it only counts up),
while another thread of the same process contends for it like another process would. Under
asyncio each task is an owner of its own. Waiting releases the GIL and is interrupted by Ctrl-C
(``KeyboardInterrupt``), which leaves no node behind.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import weakref
from types import TracebackType
from typing import (
    Callable,
    Dict,
    Iterable,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
)

from . import _zklock
from ._errors import (
    Cancelled,
    ClientClosed,
    ConnectionFailed,
    InvalidArgument,
    InvalidArgumentType,
    LockLost,
    LockTimeout,
    NotHeld,
    PermissionDenied,
    SessionExpired,
    UpgradeNotAllowed,
    ZkLockError,
    ZooKeeperError,
    InternalError,
)

__version__: str = _zklock.__version__

__all__ = [
    "Client",
    "Lock",
    "RwLock",
    "MultiLock",
    "Lease",
    "Participant",
    "ZkLockError",
    "LockTimeout",
    "Cancelled",
    "LockLost",
    "SessionExpired",
    "ConnectionFailed",
    "NotHeld",
    "UpgradeNotAllowed",
    "InvalidArgument",
    "InvalidArgumentType",
    "ClientClosed",
    "PermissionDenied",
    "ZooKeeperError",
    "InternalError",
]

# One lock for the per-owner bookkeeping of every lock object (held only for dictionary work,
# never while waiting). A child process made by fork() gets a fresh one.
_mu = threading.Lock()


def _reset_after_fork() -> None:
    global _mu
    _mu = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)

_get_running_loop = asyncio.events._get_running_loop


def _owner() -> object:
    """Who holds a re-entrant lock: the current asyncio task, else the current thread."""
    loop = _get_running_loop()
    if loop is not None:
        task = asyncio.current_task(loop)
        if task is not None:
            return task
    return threading.current_thread()


class _Shared:
    """The one owner of a non re-entrant lock (any thread may release it, like threading.Lock)."""

    def __repr__(self) -> str:
        return "<shared>"


_SHARED = _Shared()


# ---------------------------------------------------------------------------------------------
# Argument checks (wrong types raise InvalidArgumentType: both InvalidArgument and TypeError)


def _type_name(value: object) -> str:
    return type(value).__name__


def _check_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{what} must be a str, got {_type_name(value)}")
    return value


def _check_optional_str(value: object, what: str) -> Optional[str]:
    if value is None:
        return None
    return _check_str(value, what)


def _check_number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentType(f"{what} must be a number of seconds, got {_type_name(value)}")
    number = float(value)
    if math.isnan(number):
        raise InvalidArgument(f"{what} must be a number of seconds, got nan")
    return number


def _check_positive(value: object, what: str) -> float:
    number = _check_number(value, what)
    if number <= 0 or math.isinf(number):
        raise InvalidArgument(f"{what} must be a positive, finite number of seconds, got {value!r}")
    return number


def _check_timeout(value: object) -> Optional[float]:
    """``None`` (or infinity) waits forever; otherwise a number of seconds >= 0."""
    if value is None:
        return None
    number = _check_number(value, "timeout")
    if number < 0:
        raise InvalidArgument(f"timeout must be None or >= 0 seconds, got {value!r}")
    return None if math.isinf(number) else number


def _acquire_timeout(blocking: object, timeout: object) -> Optional[float]:
    """threading.Lock.acquire's arguments to a core timeout (None: forever, 0: one try)."""
    if not isinstance(blocking, (bool, int)):
        raise InvalidArgumentType(f"blocking must be a bool, got {_type_name(blocking)}")
    number = _check_number(timeout, "timeout")
    if not blocking:
        if number != -1:
            raise InvalidArgument("can't specify a timeout for a non-blocking acquire")
        return 0.0
    if number == -1 or math.isinf(number):
        return None
    if number < 0:
        raise InvalidArgument(f"timeout must be -1 (forever) or >= 0 seconds, got {timeout!r}")
    return number


# ---------------------------------------------------------------------------------------------
# Leases


class _LostSignal:
    """Sets the ``lost`` event and calls the ``on_lost`` callbacks once, on zklock's callback
    thread. Holds no reference to its lease (the core keeps this alive until release)."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event
        self.mu = threading.Lock()
        self.fired = False
        self.callbacks: List[Callable[[], object]] = []

    def fire(self) -> None:
        with self.mu:
            if self.fired:
                return
            self.fired = True
            callbacks, self.callbacks = self.callbacks, []
        self.event.set()
        for callback in callbacks:
            _zklock.run_callback(callback)

    def add(self, callback: Callable[[], object]) -> None:
        with self.mu:
            if not self.fired:
                self.callbacks.append(callback)
                return
        _zklock.run_callback(callback)


class Lease:
    """A held lock: its fencing token, its node, its state and a lost signal.

    ``state`` is ``'held'``, ``'suspended'`` (disconnected: we cannot know whether we still hold
    it), ``'lost'`` (final) or ``'released'``. ``lost`` is a :class:`threading.Event` set when the
    lease is lost; ``on_lost(callback)`` calls ``callback()`` once, from zklock's callback thread.

    A lease stays held until it is released, its client is closed or the process exits: garbage
    collection never releases it (a lease collected while held emits a ``ResourceWarning`` and
    its node stays until the client closes). In a child process made by ``fork()``, a lease of
    the parent raises :class:`ClientClosed` for its state, ``lost``, callbacks and release.
    """

    __slots__ = ("_native", "_lock", "_key", "_entry", "_done", "_signal", "__weakref__")

    def __init__(self, native: _zklock.NativeLease, lock: "Lock", key: object, entry: "_Entry"):
        self._native = native
        self._lock = lock
        self._key = key
        self._entry = entry
        self._done = False
        # Made on first use of `lost` / `on_lost`: most leases are never asked, and a
        # re-entrant hold then costs no event and no registration.
        self._signal: Optional[_LostSignal] = None

    def _lost_signal(self) -> _LostSignal:
        state = self._native.state  # ClientClosed in a child process after fork()
        signal = self._signal
        if signal is None:
            with _mu:
                signal = self._signal
                if signal is None:
                    signal = _LostSignal(threading.Event())
                    if state == "lost":
                        signal.event.set()  # visible at once; callbacks still run once via fire()
                    self._native.on_lost(signal.fire)
                    self._signal = signal
        return signal

    @property
    def lost(self) -> threading.Event:
        """A :class:`threading.Event`, set once the lease is lost."""
        return self._lost_signal().event

    @property
    def token(self) -> int:
        """The fencing token: the czxid of our lock node (for a multi-lock, the largest)."""
        return self._native.token

    @property
    def tokens(self) -> List[int]:
        """Every member's token (one for a plain lock), in path order."""
        return self._native.tokens

    @property
    def path(self) -> str:
        """Full path of our lock node (the first member's for a multi-lock)."""
        return self._native.path

    @property
    def paths(self) -> List[str]:
        """Full paths of every member's node."""
        return self._native.paths

    @property
    def state(self) -> str:
        """``'held'``, ``'suspended'``, ``'lost'`` or ``'released'``."""
        return self._native.state

    def is_held(self) -> bool:
        """True while the state is ``'held'``."""
        return self._native.is_held()

    def on_lost(self, callback: Callable[[], object]) -> None:
        """Calls ``callback()`` once, from zklock's callback thread, if the lease is lost (at
        once, on that thread, if it already is). The callback may call into zklock."""
        if not callable(callback):
            raise InvalidArgumentType(f"on_lost() needs a callable, got {_type_name(callback)}")
        self._lost_signal().add(callback)

    def on_state(self, callback: Callable[[str], object]) -> None:
        """Calls ``callback(state)`` from zklock's callback thread at every change of the
        lease's state (``'held'``, ``'suspended'``, ``'lost'``, ``'released'``), ending after a
        final state. Changes after the call only: read :attr:`state` for the current one."""
        if not callable(callback):
            raise InvalidArgumentType(f"on_state() needs a callable, got {_type_name(callback)}")
        self._native.on_state(callback)

    def _claim(self) -> None:
        with _mu:
            if self._done:
                raise NotHeld(f"the lease on {self.path} was already released")
            self._done = True

    def release(self) -> None:
        """Releases the lease (a re-entrant hold only counts down). Releasing a lost lease
        succeeds; releasing twice raises :class:`NotHeld`."""
        self._claim()
        try:
            self._native.release()
        finally:
            self._lock._forget(self)

    async def release_async(self) -> None:
        """The asyncio twin of :meth:`release`."""
        self._claim()
        try:
            await self._native.release_async()
        finally:
            self._lock._forget(self)

    def __repr__(self) -> str:
        try:
            state = self.state
        except ClientClosed:
            state = "forked"  # a lease of the parent process, seen in a child
        return f"<zklock.Lease path={self.path!r} token={self.token} state={state!r}>"


# ---------------------------------------------------------------------------------------------
# Per-owner core lock values


class _Entry:
    """One owner's core lock values of a recipe, its live leases per side, and a use count
    (pending acquires, unreleased leases, multi-locks built on it)."""

    __slots__ = ("natives", "stacks", "users", "on_drop")

    def __init__(
        self, natives: Sequence[_zklock.NativeLock], on_drop: Optional[Callable[[], None]]
    ) -> None:
        self.natives = list(natives)
        self.stacks: List[List[Lease]] = [[] for _ in self.natives]
        self.users = 0
        self.on_drop = on_drop


_Make = Callable[[object], Tuple[Sequence[_zklock.NativeLock], Optional[Callable[[], None]]]]


class _Family:
    """The core lock values of one recipe, one set per owner: a re-entrant core value counts the
    holds of one owner only, so every thread (or asyncio task) gets its own and contends with
    the others like another process would. All methods run under ``_mu``."""

    def __init__(self, make: _Make) -> None:
        self._make = make
        self.entries: Dict[object, _Entry] = {}

    def use(self, key: object) -> _Entry:
        entry = self.entries.get(key)
        if entry is None:
            natives, on_drop = self._make(key)
            entry = _Entry(natives, on_drop)
            self.entries[key] = entry
        entry.users += 1
        return entry

    def unuse(self, key: object, entry: _Entry) -> None:
        entry.users -= 1
        if entry.users <= 0 and self.entries.get(key) is entry:
            del self.entries[key]
            if entry.on_drop is not None:
                entry.on_drop()

    def peek(self, key: object) -> Optional[_Entry]:
        return self.entries.get(key)


class Participant(NamedTuple):
    """One contender in a lock's queue (holder first)."""

    node: str
    identity: str
    token: int
    library: str
    kind: str
    session_id: int


# ---------------------------------------------------------------------------------------------
# Locks


class Lock:
    """A lock on a ZooKeeper path: a mutex, one side of a :class:`RwLock`, or a multi-lock.

    Shaped like :class:`threading.Lock` (``acquire``/``release``/``locked``/``with``) and
    :class:`asyncio.Lock` (``async with``, ``await acquire_async()``). Re-entrant per thread, and
    per task under asyncio; ``reentrant=False`` gives Curator's semaphore-mutex (every acquire
    waits for its own place, and any thread may release).
    """

    def __init__(
        self,
        client: "Client",
        path: str,
        family: _Family,
        side: int,
        kind: str,
        reentrant: bool,
        probe: _zklock.NativeLock,
    ) -> None:
        self._client = client
        self._path = path
        self._family = family
        self._side = side
        self._kind = kind
        self._reentrant = reentrant
        self._probe = probe
        # Leases taken by `with lock` / `async with lock`, per owner, for the matching exit.
        self._ctx: Dict[object, List[Lease]] = {}

    # -- identity -----------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The lock path (comma-separated paths for a multi-lock)."""
        return self._path

    @property
    def kind(self) -> str:
        """``'mutex'``, ``'read'``, ``'write'`` or ``'multi'``."""
        return self._kind

    @property
    def reentrant(self) -> bool:
        return self._reentrant

    @property
    def client(self) -> "Client":
        return self._client

    def __repr__(self) -> str:
        return f"<zklock.Lock {self._kind} {self._path!r} locked={self.locked()}>"

    # -- bookkeeping --------------------------------------------------------------------------

    def _key(self) -> object:
        return _owner() if self._reentrant else _SHARED

    def _begin(self) -> Tuple[object, _Entry, _zklock.NativeLock]:
        key = self._key()
        with _mu:
            entry = self._family.use(key)
        return key, entry, entry.natives[self._side]

    def _abort(self, key: object, entry: _Entry) -> None:
        with _mu:
            self._family.unuse(key, entry)

    def _finish(self, key: object, entry: _Entry, native: _zklock.NativeLease) -> Lease:
        lease = Lease(native, self, key, entry)
        with _mu:
            entry.stacks[self._side].append(lease)
        return lease

    def _forget(self, lease: Lease) -> None:
        """A lease of this lock was released."""
        with _mu:
            stack = lease._entry.stacks[self._side]
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is lease:
                    del stack[i]
                    break
            self._family.unuse(lease._key, lease._entry)

    def _acquire_lease(self, timeout: Optional[float], raise_timeout: bool) -> Optional[Lease]:
        key, entry, native = self._begin()
        try:
            taken = native.acquire(timeout)
        except LockTimeout:
            self._abort(key, entry)
            if raise_timeout:
                raise
            return None
        except BaseException:
            self._abort(key, entry)
            raise
        return self._finish(key, entry, taken)

    # -- threading.Lock shape -----------------------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Waits for the lock like :meth:`threading.Lock.acquire`: ``blocking=False`` tries
        once, ``timeout`` (seconds, -1 forever) bounds the wait. Returns False when the lock
        was not taken (no node is left behind). The GIL is released while waiting."""
        return self._acquire_lease(_acquire_timeout(blocking, timeout), False) is not None

    def release(self) -> None:
        """Releases this owner's most recent hold. Raises :class:`NotHeld` when this thread
        (task) holds nothing."""
        key = self._key()
        with _mu:
            entry = self._family.peek(key)
            stack = entry.stacks[self._side] if entry is not None else []
            lease = stack[-1] if stack else None
        if lease is None:
            raise NotHeld(f"release of the lock {self._path}: this {_owner_word(key)} does not hold it")
        lease.release()

    def locked(self) -> bool:
        """True while any thread or task of this process holds the lock through this object."""
        with _mu:
            entries = list(self._family.entries.values())
            leases = [lease for e in entries for lease in e.stacks[self._side]]
        if any(lease.state in ("held", "suspended") for lease in leases):
            return True
        return self._reentrant and any(e.natives[self._side].hold_count() > 0 for e in entries)

    @property
    def lease(self) -> Optional[Lease]:
        """This thread's (task's) lease while it holds the lock (state ``'held'`` or
        ``'suspended'``), else None. A lost lease is not returned, but still needs releasing
        (``release()`` does that without raising)."""
        with _mu:
            entry = self._family.peek(self._key())
            if entry is None or not entry.stacks[self._side]:
                return None
            lease = entry.stacks[self._side][-1]
        return lease if lease.state in ("held", "suspended") else None

    def hold(self, timeout: Optional[float] = None) -> "_Holding":
        """A context manager (``with`` and ``async with``) that takes the lock within
        ``timeout`` seconds (None: forever) or raises :class:`LockTimeout`, and yields the
        lease."""
        return _Holding(self, _check_timeout(timeout))

    def __enter__(self) -> Lease:
        lease = self._acquire_lease(None, True)
        assert lease is not None
        self._push_ctx(lease)
        return lease

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease = self._pop_ctx()
        if lease is not None and not lease._done:
            lease.release()

    def _push_ctx(self, lease: Lease) -> None:
        with _mu:
            self._ctx.setdefault(lease._key, []).append(lease)

    def _pop_ctx(self) -> Optional[Lease]:
        key = self._key()
        with _mu:
            stack = self._ctx.get(key)
            if not stack:
                return None
            lease = stack.pop()
            if not stack:
                del self._ctx[key]
            return lease

    # -- asyncio.Lock shape -------------------------------------------------------------------

    async def acquire_async(self, timeout: Optional[float] = None) -> Lease:
        """Waits for the lock without blocking the event loop and returns the lease; raises
        :class:`LockTimeout` after ``timeout`` seconds (None: forever, 0: one try). Cancelling
        the awaiting task removes the waiting node."""
        seconds = _check_timeout(timeout)
        key, entry, native = self._begin()
        pending = native.acquire_async(seconds)
        try:
            taken = await pending
        except BaseException:
            self._abort(key, entry)
            if pending.done() and not pending.cancelled() and pending.exception() is None:
                # The lock was granted, but this task was cancelled before it resumed: nobody
                # will hold that lease, so it is released (at once, in the background) rather
                # than left to the garbage collector, which never releases a lock.
                pending.result().release_async()
            raise
        return self._finish(key, entry, taken)

    async def release_async(self) -> None:
        """The asyncio twin of :meth:`release`."""
        key = self._key()
        with _mu:
            entry = self._family.peek(key)
            stack = entry.stacks[self._side] if entry is not None else []
            lease = stack[-1] if stack else None
        if lease is None:
            raise NotHeld(f"release of the lock {self._path}: this {_owner_word(key)} does not hold it")
        await lease.release_async()

    async def __aenter__(self) -> Lease:
        lease = await self.acquire_async(None)
        self._push_ctx(lease)
        return lease

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease = self._pop_ctx()
        if lease is not None and not lease._done:
            await lease.release_async()

    # -- introspection ------------------------------------------------------------------------

    def participants(self) -> List[Participant]:
        """The queue of the lock path, holder first: node, identity, token, library, kind and
        session id of every contender (Curator's and kazoo's too)."""
        return [Participant(*p) for p in self._probe.participants()]


def _owner_word(key: object) -> str:
    if isinstance(key, asyncio.Task):
        return "task"
    if key is _SHARED:
        return "process"
    return "thread"


class _Holding:
    """``with lock.hold(timeout) as lease`` / ``async with lock.hold(timeout) as lease``."""

    def __init__(self, lock: Lock, timeout: Optional[float]) -> None:
        self._lock = lock
        self._timeout = timeout
        self._lease: Optional[Lease] = None

    def __enter__(self) -> Lease:
        lease = self._lock._acquire_lease(self._timeout, True)
        assert lease is not None
        self._lease = lease
        return lease

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease, self._lease = self._lease, None
        if lease is not None and not lease._done:
            lease.release()

    async def __aenter__(self) -> Lease:
        self._lease = await self._lock.acquire_async(self._timeout)
        return self._lease

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        lease, self._lease = self._lease, None
        if lease is not None and not lease._done:
            await lease.release_async()


class RwLock:
    """A read/write lock (Curator's ``InterProcessReadWriteLock``): any number of readers or
    one writer. A write holder may take the read side (downgrade); a read holder asking for the
    write side gets :class:`UpgradeNotAllowed` at once. Both sides are re-entrant per thread."""

    def __init__(self, client: "Client", path: str) -> None:
        native = client._native
        probe_read, probe_write = native.rw_lock(path)

        def make(_key: object) -> Tuple[Sequence[_zklock.NativeLock], None]:
            return list(native.rw_lock(path)), None

        family = _Family(make)
        self._path = path
        self.read: Lock = Lock(client, path, family, 0, "read", True, probe_read)
        self.write: Lock = Lock(client, path, family, 1, "write", True, probe_write)

    @property
    def path(self) -> str:
        return self._path

    def participants(self) -> List[Participant]:
        return self.read.participants()

    def __repr__(self) -> str:
        return f"<zklock.RwLock {self._path!r}>"


class MultiLock(Lock):
    """Several locks taken as one (Curator's ``InterProcessMultiLock``): all or nothing, one
    deadline for the set, members taken in path order and released in reverse order. Members
    given as :class:`Lock` objects share their re-entrancy with them."""

    def __init__(self, client: "Client", members: Sequence[Lock]) -> None:
        native = client._native
        if not members:
            raise InvalidArgument("a multi-lock needs at least one lock")
        probe = native.multi_lock([m._probe for m in members])
        self._members = list(members)

        def make(key: object) -> Tuple[Sequence[_zklock.NativeLock], Callable[[], None]]:
            pinned: List[Tuple[_Family, object, _Entry]] = []

            def unpin() -> None:
                for family, member_key, entry in pinned:
                    family.unuse(member_key, entry)

            try:
                natives = []
                for m in members:
                    member_key = key if m._reentrant else _SHARED
                    entry = m._family.use(member_key)
                    pinned.append((m._family, member_key, entry))
                    natives.append(entry.natives[m._side])
                return [native.multi_lock(natives)], unpin
            except BaseException:
                unpin()
                raise

        super().__init__(client, ",".join(m.path for m in members), _Family(make), 0, "multi", True, probe)

    @property
    def members(self) -> List[Lock]:
        return list(self._members)

    def participants(self) -> List[Participant]:
        """The queues of every member path, one after the other."""
        return [p for m in self._members for p in m.participants()]


# ---------------------------------------------------------------------------------------------
# Client


class Client:
    """One ZooKeeper session over ``hosts`` (``host:port,host:port/optional/chroot``).

    Connecting blocks (with the GIL released) until the session is established or
    ``connect_timeout`` passes (:class:`ConnectionFailed`). Also a context manager that closes
    the session on exit; a client still open at interpreter exit is closed then, so that its
    lock nodes go at once instead of after the session timeout.
    """

    def __init__(
        self,
        hosts: str,
        session_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        auth: Optional[str] = None,
        identity: Optional[str] = None,
        acl: str = "open",
    ) -> None:
        hosts = _check_str(hosts, "hosts")
        session = _check_positive(session_timeout, "session_timeout")
        connect = _check_positive(connect_timeout, "connect_timeout")
        auth = _check_optional_str(auth, "auth")
        identity = _check_optional_str(identity, "identity")
        acl = _check_str(acl, "acl")
        self._native = _zklock.Client(hosts, session, connect, auth, identity, acl)
        self._finalizer = weakref.finalize(self, self._native.close)

    @classmethod
    async def connect_async(
        cls,
        hosts: str,
        session_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        auth: Optional[str] = None,
        identity: Optional[str] = None,
        acl: str = "open",
    ) -> "Client":
        """Connects without blocking the event loop (the connect runs in the loop's default
        executor)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, lambda: cls(hosts, session_timeout, connect_timeout, auth, identity, acl)
        )

    @property
    def hosts(self) -> str:
        return self._native.hosts

    @property
    def session_id(self) -> int:
        """The current ZooKeeper session's id."""
        return self._native.session_id

    @property
    def session_timeout(self) -> float:
        """The session timeout the server granted, in seconds."""
        return self._native.session_timeout

    @property
    def closed(self) -> bool:
        return self._native.closed

    def close(self) -> None:
        """Closes the session: its leases become lost and the server deletes their nodes.
        Later calls raise :class:`ClientClosed`. Closing twice is fine."""
        self._finalizer.detach()
        self._native.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def lock(self, path: str, reentrant: bool = True) -> Lock:
        """An exclusive lock on ``path`` (Curator's ``InterProcessMutex``; with
        ``reentrant=False`` its ``InterProcessSemaphoreMutex``)."""
        path = _check_str(path, "path")
        if not isinstance(reentrant, (bool, int)):
            raise InvalidArgumentType(f"reentrant must be a bool, got {_type_name(reentrant)}")
        native = self._native
        probe = native.mutex(path, bool(reentrant))

        if reentrant:

            def make(_key: object) -> Tuple[Sequence[_zklock.NativeLock], None]:
                return [native.mutex(path, True)], None

        else:

            def make(_key: object) -> Tuple[Sequence[_zklock.NativeLock], None]:
                return [probe], None

        return Lock(self, path, _Family(make), 0, "mutex", bool(reentrant), probe)

    mutex = lock

    def rw_lock(self, path: str) -> RwLock:
        """A read/write lock on ``path``: ``.read`` and ``.write`` are :class:`Lock` objects."""
        return RwLock(self, _check_str(path, "path"))

    def multi_lock(self, locks: Iterable[Union[str, Lock]]) -> MultiLock:
        """Several locks taken as one; give paths (new mutexes) or :class:`Lock` objects."""
        if isinstance(locks, (str, bytes)) or not isinstance(locks, Iterable):
            raise InvalidArgumentType(
                f"multi_lock() needs a list of paths or locks, got {_type_name(locks)}"
            )
        members: List[Lock] = []
        for item in locks:
            if isinstance(item, str):
                members.append(self.lock(item))
            elif isinstance(item, Lock) and not isinstance(item, MultiLock):
                if item._client is not self:
                    raise InvalidArgument(f"the lock on {item.path} belongs to another client")
                members.append(item)
            else:
                raise InvalidArgumentType(
                    f"multi_lock() members must be paths or locks, got {_type_name(item)}"
                )
        return MultiLock(self, members)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"session=0x{self.session_id:x}"
        return f"<zklock.Client {self.hosts!r} {state}>"

