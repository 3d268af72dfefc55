"""What a client counts (``Client.stats()``): :class:`Stats` and its :class:`Percentiles`."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping


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
