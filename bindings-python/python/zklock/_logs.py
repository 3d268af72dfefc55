"""zklock's records on ``logging.getLogger("zklock")``, following ``logging`` as configured at
each record (issue 33).

The core formats a record only when its level is wanted (an application that logs nothing pays
nothing per acquire), so it must be told the level ``logging`` wants. Reading it once per
``Client`` creation missed every later configuration: a module-level client made before
``logging.basicConfig(level=logging.DEBUG)`` never logged below WARNING. ``logging`` itself
caches each logger's answer to ``isEnabledFor`` and clears that cache in
``Manager._clear_cache`` whenever a level changes (``setLevel``, ``basicConfig``,
``dictConfig``, ``logging.disable``); hooking the same call re-tells the core at exactly the
moments ``logging``'s own answer can change, and costs nothing per record. Each record is still
filtered by ``logger.log`` itself, so a core that sends more than wanted loses nothing but time.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Dict

from . import _zklock

#: The logger zklock's records go to: a settled acquire at DEBUG, a new session and a reconnect at
#: INFO, lease state changes (suspended, held again, lost) and session breaks at WARNING. Quiet
#: by default (a NullHandler, as libraries do): configure ``logging`` to see them.
logger = logging.getLogger("zklock")
logger.addHandler(logging.NullHandler())

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}

_lock = threading.Lock()
_installed = False


def _forward_log(level: str, event: str, message: str, fields: Dict[str, str], client: int) -> None:
    """The core's log sink (on zklock's callback thread): one ``logging`` record per core record,
    with the core's fields in ``record.zklock`` (``event``, ``client``: the ``Client.id`` it is
    about, ``path``, ``state``, ...)."""
    logger.log(
        _LEVELS.get(level, logging.INFO),
        "%s",
        message,
        extra={"zklock": {"event": event, "client": client, **fields}},
    )


def _wanted() -> str:
    """The most verbose of the core's levels that ``logging`` takes from zklock now."""
    if logger.isEnabledFor(logging.DEBUG):
        return "debug"
    if logger.isEnabledFor(logging.INFO):
        return "info"
    return "warn"


def _tell_core() -> None:
    with _lock:
        if _installed:
            _zklock.set_log_sink(_forward_log, _wanted())


def _follow_logging() -> None:
    """Re-tells the core whenever ``logging`` clears its level cache (see the module's text)."""
    manager = logging.Logger.manager
    clear: Callable[[], None] = getattr(manager, "_clear_cache", None) or (lambda: None)
    if getattr(clear, "_zklock_follows", False):
        return

    def clear_and_follow() -> None:
        clear()
        _tell_core()

    setattr(clear_and_follow, "_zklock_follows", True)
    if hasattr(manager, "_clear_cache"):
        setattr(manager, "_clear_cache", clear_and_follow)


def install_log_sink() -> None:
    """Installs the core's sink (first client) and tells it the level ``logging`` wants now. A
    Python whose ``logging`` has no level cache to hook gets every record down to DEBUG, filtered
    by ``logging`` itself at each record."""
    global _installed
    with _lock:
        first = not _installed
        _installed = True
    if first:
        _follow_logging()
    if hasattr(logging.Logger.manager, "_clear_cache"):
        _tell_core()
    else:
        _zklock.set_log_sink(_forward_log, "debug")
