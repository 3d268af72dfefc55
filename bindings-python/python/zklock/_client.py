"""The :class:`Client`: one ZooKeeper session, and the locks, semaphores and elections made
on it. The top of the package below ``__init__``."""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Optional,
    Type,
    Union,
)

from . import _zklock
from ._args import (
    _check_number,
    _check_optional_count,
    _check_optional_path,
    _check_optional_seconds,
    _check_optional_str,
    _check_str,
    _type_name,
)
from ._election import Election, LeaderWatch
from ._errors import InvalidArgument, InvalidArgumentType
from ._lease import Counter, Participant
from ._lock import Lock, MultiLock, RwLock, Semaphore
from ._logs import install_log_sink as _install_log_sink
from ._stats import PathStatsSnapshot, Stats

if TYPE_CHECKING:
    from .metrics import ZklockCollector


class Client:
    """One ZooKeeper session over ``hosts`` (``host:port,host:port/optional/chroot``).

    Connecting blocks (with the GIL released) until the session is established or
    ``connect_timeout`` passes (:class:`ConnectionFailed`): the client connects here, eagerly,
    so an acquire's ``timeout`` starts after that. When a session ends later (expired, given up),
    the next acquire opens a new one within its own ``timeout``. Also a context manager that closes
    the session on exit; a client still open at interpreter exit is closed then, so that its
    lock nodes go at once instead of after the session timeout.

    Secure ZooKeeper: ``tls_ca`` (PEM file of the CA) turns TLS on for every server;
    ``tls_cert`` and ``tls_key`` give a client certificate. Each takes a path or PEM text itself
    (a ``str`` holding ``-----BEGIN ``), which no exception ever shows; ``tls_verify_hostname=False`` turns
    host name checking off. ``sasl_user`` and ``sasl_password`` authenticate with SASL
    DIGEST-MD5 (a wrong password raises :class:`PermissionDenied`).

    ``server_tick`` (seconds) is the ensemble's ``tickTime``; the lost signal's deadline depends on
    it (docs/safety.md). The client learns it from the servers at connect (``server_tick`` the
    property); a ``server_tick`` given here can raise it, never lower it. A session shorter than
    four ticks raises :class:`InvalidArgument`.

    ``path_stats_limit`` is how many lock paths get statistics of their own (``path_stats()``,
    ``openmetrics()``); acquires on later paths are counted together in one overflow series.
    0 turns per-path statistics off; default 1000 (the core's).
    """

    def __init__(
        self,
        hosts: str,
        session_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        auth: Optional[str] = None,
        identity: Optional[str] = None,
        acl: str = "open",
        *,
        tls_ca: Optional[Union[str, os.PathLike[str]]] = None,
        tls_cert: Optional[Union[str, os.PathLike[str]]] = None,
        tls_key: Optional[Union[str, os.PathLike[str]]] = None,
        tls_verify_hostname: Optional[bool] = None,
        sasl_user: Optional[str] = None,
        sasl_password: Optional[str] = None,
        server_tick: Optional[float] = None,
        path_stats_limit: Optional[int] = None,
    ) -> None:
        hosts = _check_str(hosts, "hosts")
        session = _check_number(session_timeout, "session_timeout")
        connect = _check_number(connect_timeout, "connect_timeout")
        auth = _check_optional_str(auth, "auth")
        identity = _check_optional_str(identity, "identity")
        acl = _check_str(acl, "acl")
        if tls_verify_hostname is not None and not isinstance(tls_verify_hostname, bool):
            raise InvalidArgumentType(
                f"tls_verify_hostname must be a bool, got {_type_name(tls_verify_hostname)}"
            )
        _install_log_sink()
        self._native = _zklock.Client(
            hosts,
            session,
            connect,
            auth,
            identity,
            acl,
            _check_optional_path(tls_ca, "tls_ca"),
            _check_optional_path(tls_cert, "tls_cert"),
            _check_optional_path(tls_key, "tls_key"),
            tls_verify_hostname,
            _check_optional_str(sasl_user, "sasl_user"),
            _check_optional_str(sasl_password, "sasl_password"),
            None if server_tick is None else _check_number(server_tick, "server_tick"),
            _check_optional_count(path_stats_limit, "path_stats_limit"),
        )
        self._finalizer = weakref.finalize(self, self._native.close)
        # add_listener's callables and their ids in the core.
        self._listeners: Dict[Callable[[str], object], int] = {}
        self._listeners_lock = threading.Lock()

    @classmethod
    async def connect_async(
        cls,
        hosts: str,
        session_timeout: float = 10.0,
        connect_timeout: float = 15.0,
        auth: Optional[str] = None,
        identity: Optional[str] = None,
        acl: str = "open",
        **secure: Any,
    ) -> "Client":
        """Connects without blocking the event loop (the connect runs in the loop's default
        executor). Takes the same keyword arguments as the constructor (``tls_ca``, ...)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None,
            lambda: cls(hosts, session_timeout, connect_timeout, auth, identity, acl, **secure),
        )

    @property
    def hosts(self) -> str:
        return self._native.hosts

    @property
    def id(self) -> int:
        """This client's id in the process (never reused): ``record.zklock["client"]`` of its
        log records."""
        return self._native.id

    @property
    def session_id(self) -> int:
        """The current ZooKeeper session's id."""
        return self._native.session_id

    @property
    def session_timeout(self) -> float:
        """The session timeout the server granted, in seconds."""
        return self._native.session_timeout

    @property
    def server_tick(self) -> float:
        """The tick the lease proof runs on, in seconds: the larger of ``server_tick=`` and the
        tick learned from the servers at connect (half the shortest session they grant:
        their ``tickTime``, or more when the operator raised ``minSessionTimeout``)."""
        return self._native.server_tick

    def server_features(self) -> Dict[str, Any]:
        """Which ZooKeeper version class answered at connect: ``{"version": "3.7+", "lacks":
        []}``; ``version`` is ``"3.5"``, ``"3.6"`` or ``"3.7+"`` and ``lacks`` names the requests
        that class lacks (docs/interop.md, "Server versions")."""
        version, lacks = self._native.server_features()
        return {"version": version, "lacks": list(lacks)}

    @property
    def closed(self) -> bool:
        return self._native.closed

    # -- connection state (kazoo's add_listener) ----------------------------------------------

    @property
    def state(self) -> str:
        """The connection now: ``'connected'``, ``'suspended'`` (broken; the session may live,
        its leases are suspended) or ``'lost'`` (the session ended, or the client was closed)."""
        return self._native.connection_state

    def add_listener(self, listener: Callable[[str], object]) -> None:
        """Calls ``listener(state)`` with the current state and at every change, on zklock's
        callback thread (kazoo's ``add_listener``): ``'lost'`` once per session, then
        ``'connected'`` when a later acquire opens a new session; nothing after the ``'lost'``
        of a closed client. An exception it raises goes to ``sys.unraisablehook``. Adding the
        same callable twice adds it once."""
        with self._listeners_lock:
            if listener not in self._listeners:
                self._listeners[listener] = self._native._on_connection(listener)

    def remove_listener(self, listener: Callable[[str], object]) -> None:
        """Stops calling ``listener`` (a call already on its way may still run); a listener
        that was never added is ignored, as in kazoo."""
        with self._listeners_lock:
            id = self._listeners.pop(listener, None)
        if id is not None:
            self._native._remove_connection_listener(id)

    def stats(self) -> Stats:
        """This client's lock statistics (a frozen :class:`Stats`): acquires by outcome
        (``acquired``, ``timed_out``, ``cancelled``, ``failed``), ``wait`` and ``hold`` times
        (:class:`Percentiles`, seconds), leases ``held`` and acquires ``waiting`` now,
        ``suspended`` and ``lost`` events, ``reconnects`` and ``session_expiries``. Works after
        close too."""
        return Stats._of(self._native.stats())

    def openmetrics(self, labels: Optional[Dict[str, str]] = None) -> str:
        """This client's statistics as OpenMetrics text, what Prometheus scrapes (serve it from
        your own ``/metrics``): acquires by outcome, wait and hold time summaries, leases held
        and acquires waiting, losses and reconnects, each sample labelled ``client="<id>"`` and
        with ``labels``. The names are the core's, the same in every face."""
        pairs = []
        for key, value in (labels or {}).items():
            pairs.append((_check_str(key, "label name"), _check_str(value, "label value")))
        return self._native.openmetrics(pairs)

    def path_stats(self) -> PathStatsSnapshot:
        """This client's statistics per lock path (a frozen :class:`PathStatsSnapshot`): at most
        ``path_stats_limit`` paths, each with its acquires by outcome, wait sum, losses by
        reason, leases held now and the age of the oldest; acquires on later paths in the
        ``overflow`` series. Works after close too."""
        return PathStatsSnapshot._of(self._native.path_stats())

    def prometheus_collector(self) -> "ZklockCollector":
        """A ``prometheus_client`` collector of this client's metrics (the ``openmetrics()``
        families), to register yourself: ``REGISTRY.register(client.prometheus_collector())``.
        Imports ``prometheus_client`` only now; :class:`ImportError` says how to install it."""
        from .metrics import ZklockCollector

        return ZklockCollector(self)

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

    def lock(
        self,
        path: str,
        reentrant: bool = True,
        *,
        max_hold: Optional[float] = None,
        hold_ceiling: Optional[float] = None,
        lock_delay: Optional[float] = None,
    ) -> Lock:
        """An exclusive lock on ``path`` (Curator's ``InterProcessMutex``, which it excludes,
        also with ``reentrant=False``; for Curator's ``InterProcessSemaphoreMutex`` use
        :meth:`semaphore_mutex`). ``max_hold`` (seconds, None: no limit) ends every lease of
        it after that long: lost, ``lost_reason`` containing ``max-hold``, node deleted.
        ``lease.extend(seconds)`` moves that end, up to ``hold_ceiling`` seconds after the
        acquire (None: no ceiling); ``lease.on_expiring(before, callback)`` warns ahead of it.
        ``lock_delay`` (seconds, None: none; Chubby's lock-delay): after a holder's node went
        without a clean release (session expiry, a break), the next holder's lease is held
        only that long after; a clean release hands over at once."""
        path = _check_str(path, "path")
        if not isinstance(reentrant, (bool, int)):
            raise InvalidArgumentType(f"reentrant must be a bool, got {_type_name(reentrant)}")
        native = self._native.mutex(
            path,
            bool(reentrant),
            _check_optional_seconds(max_hold, "max_hold"),
            _check_optional_seconds(hold_ceiling, "hold_ceiling"),
            _check_optional_seconds(lock_delay, "lock_delay"),
        )
        return Lock(self, native, "mutex", bool(reentrant))

    mutex = lock

    def semaphore(
        self,
        path: str,
        max_leases: int,
        *,
        max_hold: Optional[float] = None,
        lock_delay: Optional[float] = None,
    ) -> Semaphore:
        """A counting semaphore of ``max_leases`` leases on ``path`` (Curator's
        ``InterProcessSemaphoreV2``; every user of the path must pass the same N).
        ``max_hold`` and ``lock_delay``: as for :meth:`lock`, per lease."""
        path = _check_str(path, "path")
        if isinstance(max_leases, bool) or not isinstance(max_leases, int):
            raise InvalidArgumentType(
                f"max_leases must be an int, got {_type_name(max_leases)}"
            )
        native = self._native.semaphore(
            path,
            max_leases,
            _check_optional_seconds(max_hold, "max_hold"),
            _check_optional_seconds(lock_delay, "lock_delay"),
        )
        return Semaphore(self, native, max_leases)

    def semaphore_mutex(self, path: str, *, max_hold: Optional[float] = None) -> Semaphore:
        """The semaphore of one lease on ``path``: excludes Curator's
        ``InterProcessSemaphoreMutex`` (and zklock's semaphore mutexes). Not re-entrant: a
        second acquire by the holder waits for itself; any thread may release. ``max_hold``:
        as for :meth:`lock`."""
        native = self._native.semaphore_mutex(
            _check_str(path, "path"), _check_optional_seconds(max_hold, "max_hold")
        )
        return Semaphore(self, native, 1)

    def election(
        self,
        path: str,
        *,
        style: Optional[str] = None,
        id: Optional[str] = None,
        max_hold: Optional[float] = None,
        lock_delay: Optional[float] = None,
    ) -> Election:
        """A participant in the leader election on ``path`` (see :class:`Election`): ``style``
        ``'latch'`` (None: the core's default, Curator's ``LeaderLatch``), ``'selector'`` (Curator's
        ``LeaderSelector``) or ``'kazoo'`` (kazoo's ``Election``); ``id`` the participant id
        (default: the client's identity; at most 1024 bytes, no NUL); ``max_hold`` seconds
        (None: no limit) ends every leadership after that long (lost, reason ``max-hold``);
        ``lock_delay`` seconds (None: none): as for :meth:`lock`, after a leader went without
        a clean resign."""
        native = self._native.election(
            _check_str(path, "path"),
            _check_optional_str(style, "style"),
            _check_optional_str(id, "id"),
            _check_optional_seconds(max_hold, "max_hold"),
            _check_optional_seconds(lock_delay, "lock_delay"),
        )
        return Election(self, native)

    def observe_leader(self, path: str) -> LeaderWatch:
        """Watches who leads the election on ``path`` without running (etcd's ``Observe``,
        which cannot report that nobody leads; this can): a :class:`LeaderWatch` iterator of
        the leader now, then every change (None: no leader)."""
        return LeaderWatch(self._native.observe_leader(_check_str(path, "path")))

    def check(self, path: str, token: int, max_leases: Optional[int] = None) -> bool:
        """Whether ``token`` is the fencing token of a current holder of the lock on ``path``
        (or of its election's leader): Chubby's ``CheckSequencer``, for a resource that gets a
        token from a client. ``max_leases``: a semaphore's N (leases beyond it do not count).
        The GIL is released meanwhile."""
        path = _check_str(path, "path")
        if isinstance(token, bool) or not isinstance(token, int):
            raise InvalidArgumentType(f"token must be an int, got {_type_name(token)}")
        if max_leases is not None and (
            isinstance(max_leases, bool) or not isinstance(max_leases, int)
        ):
            raise InvalidArgumentType(
                f"max_leases must be an int, got {_type_name(max_leases)}"
            )
        return self._native.check(path, token, max_leases)

    def counter(self, path: str, width: str = "int32") -> Counter:
        """A shared counter on ``path``: ``width`` ``'int32'`` is Curator's ``SharedCount``
        layout (a 4-byte big-endian int), ``'int64'`` ``DistributedAtomicLong``'s (8 bytes), so a
        Curator process shares the node. ``get()`` returns a :class:`Count` (value, version);
        ``compare_and_set(seen, value)`` the new :class:`Count` or None when it moved;
        ``lease.guarded_increment(counter, by=1)`` moves it only while the lease holds its lock."""
        return self._native.counter(_check_str(path, "path"), _check_str(width, "width"))

    def revoke(self, path: str, node: Optional[str] = None) -> List[str]:
        """Asks the holder of ``path`` to let go, as Curator's ``Revoker.attemptRevoke`` does:
        sets the data of its node to ``__REVOKE__`` (every lease of a semaphore; ``node``, a
        node's name or full path, asks that one). Returns the nodes asked; raises
        :class:`NotHeld` when nobody holds ``path`` or the node is gone. Holders hear it through
        :attr:`Lease.revoke_requested` / :meth:`Lease.on_revoke` (zklock) or a
        ``RevocationListener`` (Curator); it is a request, the holder decides."""
        return self._native.revoke(_check_str(path, "path"), _check_optional_str(node, "node"))

    def break_lock(self, path: str, node: str, reason: Optional[str] = None) -> Participant:
        """Breaks a stuck lock: deletes ``node`` (a node's name, as :meth:`Lock.participants`
        shows it, or its full path), checked against the version read just before, so a node
        changed or re-created meanwhile is not touched. Returns the :class:`Participant` broken
        (identity, token). Raises :class:`NotHeld` when the node is not among the contenders
        (or went away first), :class:`PermissionDenied` when the ACL refuses, and
        :class:`InvalidArgument` for an empty node. ``reason`` goes to the logs. A zklock
        holder's lease turns lost with the reason ``broken``; the next waiter acquires with a
        larger token."""
        broken = self._native.break_lock(
            _check_str(path, "path"),
            _check_str(node, "node"),
            _check_optional_str(reason, "reason"),
        )
        return Participant(*broken)

    def rw_lock(self, path: str, *, max_hold: Optional[float] = None) -> RwLock:
        """A read/write lock on ``path``: ``.read`` and ``.write`` are :class:`Lock` objects.
        ``max_hold`` (seconds, None: no limit) ends every lease of either side after that long,
        as for :meth:`lock`."""
        return RwLock(
            self, _check_str(path, "path"), _check_optional_seconds(max_hold, "max_hold")
        )

    def multi_lock(
        self,
        locks: Iterable[Union[str, Lock]],
        *,
        max_hold: Optional[float] = None,
        hold_ceiling: Optional[float] = None,
    ) -> MultiLock:
        """Several locks taken as one; give paths (new mutexes) or :class:`Lock` objects.
        ``max_hold`` (seconds, None: no limit) ends the whole hold that long after every member
        became ours: each member's lease turns lost (reason ``max-hold``) and its node is
        deleted. ``lease.extend(seconds)`` moves that end for every member, up to
        ``hold_ceiling`` seconds (None: no ceiling)."""
        if isinstance(locks, (str, bytes)) or not isinstance(locks, Iterable):
            raise InvalidArgumentType(
                f"multi_lock() needs a list of paths or locks, got {_type_name(locks)}"
            )
        members: List[Lock] = []
        for item in locks:
            if isinstance(item, str):
                members.append(self.lock(item))
            elif isinstance(item, Lock) and not isinstance(item, MultiLock):
                if item.client is not self:
                    raise InvalidArgument(f"the lock on {item.path} belongs to another client")
                members.append(item)
            else:
                raise InvalidArgumentType(
                    f"multi_lock() members must be paths or locks, got {_type_name(item)}"
                )
        return MultiLock(
            self,
            members,
            _check_optional_seconds(max_hold, "max_hold"),
            _check_optional_seconds(hold_ceiling, "hold_ceiling"),
        )

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"session=0x{self.session_id:x}"
        return f"<zklock.Client {self.hosts!r} {state}>"
