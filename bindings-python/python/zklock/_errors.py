"""zklock's exceptions: one class per error kind of the contract (API.md), all under
:class:`ZkLockError`, with the builtin bases a Python developer expects."""

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
]


class ZkLockError(Exception):
    """Base class of every zklock error. ``kind`` names the error kind of the contract."""

    kind: str = "zookeeper"

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class LockTimeout(ZkLockError, TimeoutError):
    """The deadline passed before the lock was acquired (no node is left behind)."""

    kind = "timeout"


class Cancelled(ZkLockError):
    """The acquire was cancelled by the caller."""

    kind = "cancelled"


class LockLost(ZkLockError):
    """The lease was lost while it was held."""

    kind = "lock_lost"


class SessionExpired(ZkLockError):
    """The client's ZooKeeper session expired."""

    kind = "session_expired"


class ConnectionFailed(ZkLockError, ConnectionError):
    """The ensemble could not be reached within the connect timeout."""

    kind = "connection"


class NotHeld(ZkLockError, RuntimeError):
    """Release by a caller that holds nothing."""

    kind = "not_held"


class UpgradeNotAllowed(ZkLockError):
    """A read holder asked for the write lock of the same read/write lock."""

    kind = "upgrade_not_allowed"


class InvalidArgument(ZkLockError, ValueError):
    """A bad path, connect string, timeout or option."""

    kind = "invalid_argument"


class InvalidArgumentType(InvalidArgument, TypeError):
    """An argument of the wrong type: both :class:`InvalidArgument` and ``TypeError``."""


class ClientClosed(ZkLockError):
    """Use after the client was closed (or in a child process after fork)."""

    kind = "closed"


class PermissionDenied(ZkLockError, PermissionError):
    """ZooKeeper's ACL refused the operation."""

    kind = "permission"


class ZooKeeperError(ZkLockError):
    """Any other server error; ZooKeeper's own code is in the message."""

    kind = "zookeeper"


class InternalError(ZkLockError):
    """A bug in zklock (a task of its runtime panicked); please report it."""

    kind = "internal"


for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, ZkLockError):
        _cls.__module__ = "zklock"
del _cls
