"""What a client counts (``Client.stats()``): :class:`Stats` and its :class:`Percentiles`."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class Percentiles:
    """Percentiles of recorded times, in seconds (each the upper bound of a log bucket at most a
    quarter wide, never above ``max``, which is exact)."""

    count: int
    p50: float
    p90: float
    p99: float
    max: float


@dataclasses.dataclass(frozen=True)
class Stats:
    """A snapshot of a client's lock statistics (``Client.stats()``), counted by the core since
    the client was made. A re-entrant acquire (a count going up) is not counted; a multi-lock
    counts each member."""

    acquired: int
    timed_out: int
    cancelled: int
    failed: int
    wait: Percentiles
    hold: Percentiles
    held: int
    waiting: int
    suspended: int
    lost: int
    reconnects: int
    session_expiries: int

    @classmethod
    def _of(cls, raw: Mapping[str, Any]) -> "Stats":
        values = dict(raw)
        values["wait"] = Percentiles(**raw["wait"])
        values["hold"] = Percentiles(**raw["hold"])
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class PathStats:
    """One lock path's statistics (``Client.path_stats()``): the outcomes of the acquires on it,
    the sum of the waits of the acquired ones (seconds), leases ``lost`` by reason word
    (``broken``, ``max-hold``, ``conflict``, ``session``), leases ``held`` now and how long the
    oldest of them has been held (``oldest_hold``, seconds). ``path`` is ``None`` for the
    overflow series, where the acquires on paths past the client's ``path_stats_limit`` go."""

    path: Optional[str]
    acquired: int
    timed_out: int
    cancelled: int
    failed: int
    wait_sum: float
    lost: Dict[str, int]
    held: int
    oldest_hold: float

    @classmethod
    def _of(cls, raw: Mapping[str, Any]) -> "PathStats":
        values = dict(raw)
        values["lost"] = dict(raw["lost"])
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class PathStatsSnapshot:
    """Every path's statistics (``Client.path_stats()``), sorted by path: at most ``limit``
    paths (0: per-path statistics are off), the ``overflow`` series once an acquire was folded
    into it, and how many acquires were (``folded``)."""

    limit: int
    folded: int
    paths: Tuple[PathStats, ...]
    overflow: Optional[PathStats]

    @classmethod
    def _of(cls, raw: Mapping[str, Any]) -> "PathStatsSnapshot":
        overflow = raw["overflow"]
        return cls(
            limit=raw["limit"],
            folded=raw["folded"],
            paths=tuple(PathStats._of(p) for p in raw["paths"]),
            overflow=None if overflow is None else PathStats._of(overflow),
        )
