"""zklock's exceptions: one class per error kind of the core, all under :class:`ZkLockError`,
with the builtin bases a Python developer expects. ``kind`` is the core's name of the kind
(``ErrorKind::as_str``: ``'Timeout'``, ``'NotHeld'``, ...), as every face shows it."""

from __future__ import annotations

__all__ = [
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
    "OutcomeUnknown",
    "Conflict",
]


class ZkLockError(Exception):
    """Base class of every zklock error. ``kind`` is the core's name of the error kind."""

    kind: str = "ZooKeeper"

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class LockTimeout(ZkLockError, TimeoutError):
    """The deadline passed before the lock was acquired (no node is left behind)."""

    kind = "Timeout"


class Cancelled(ZkLockError):
    """The acquire was cancelled by the caller."""

    kind = "Cancelled"


class LockLost(ZkLockError):
    """The lease was lost while it was held."""

    kind = "LockLost"


class SessionExpired(ZkLockError):
    """The client's ZooKeeper session expired."""

    kind = "SessionExpired"


class ConnectionFailed(ZkLockError, ConnectionError):
    """The ensemble could not be reached within the connect timeout."""

    kind = "Connection"


class NotHeld(ZkLockError, RuntimeError):
    """Release by a caller that holds nothing."""

    kind = "NotHeld"


class UpgradeNotAllowed(ZkLockError):
    """A read holder asked for the write lock of the same read/write lock."""

    kind = "UpgradeNotAllowed"


class InvalidArgument(ZkLockError, ValueError):
    """A bad path, connect string, timeout or option."""

    kind = "InvalidArgument"


class InvalidArgumentType(InvalidArgument, TypeError):
    """An argument of the wrong type: both :class:`InvalidArgument` and ``TypeError``."""


class ClientClosed(ZkLockError):
    """Use after the client was closed (or in a child process after fork)."""

    kind = "Closed"


class PermissionDenied(ZkLockError, PermissionError):
    """ZooKeeper's ACL refused the operation."""

    kind = "Permission"


class ZooKeeperError(ZkLockError):
    """Any other server error; ZooKeeper's own code is in the message."""

    kind = "ZooKeeper"


class InternalError(ZkLockError):
    """A bug in zklock (a task of its runtime panicked); please report it."""

    kind = "Internal"


class OutcomeUnknown(ZkLockError, ConnectionError):
    """A write was sent but the connection broke before ZooKeeper answered: it may or may not
    have been applied (kazoo's ``ConnectionLoss``). Read back before retrying."""

    kind = "OutcomeUnknown"


class Conflict(ZkLockError):
    """An election refused to lead: a participant of another layout (a Curator latch beside a
    selector, Curator beside kazoo) is on its path, and each would lead in its own order. The
    message names the foreign node; our own node was removed."""

    kind = "Conflict"


for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, ZkLockError):
        _cls.__module__ = "zklock"
del _cls
