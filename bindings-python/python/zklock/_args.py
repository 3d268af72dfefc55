"""Argument types: a wrong type raises :class:`InvalidArgumentType` (both ``InvalidArgument``
and ``TypeError``). The values themselves are the core's to judge. The bottom of the package:
every other module checks its arguments here."""

from __future__ import annotations

import os
from typing import Optional

from . import _zklock
from ._errors import InvalidArgumentType


def _type_name(value: object) -> str:
    return type(value).__name__


def _check_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{what} must be a str, got {_type_name(value)}")
    return value


def _check_optional_str(value: object, what: str) -> Optional[str]:
    return None if value is None else _check_str(value, what)


def _check_optional_path(value: object, what: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise InvalidArgumentType(
            f"{what} must be a file path or PEM text (str), got {_type_name(value)}"
        )
    return value


def _check_number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentType(f"{what} must be a number of seconds, got {_type_name(value)}")
    # An int past a float (10**400) is past any clock: infinite, for the core's rule to judge.
    if isinstance(value, int) and abs(value) >= 2**1000:
        return float("inf") if value > 0 else float("-inf")
    return float(value)


def _check_optional_count(value: object, what: str) -> Optional[int]:
    """``None``, or an int (its value is the core's to judge; one past a C ``int64`` is pinned
    to its bound, which the core judges alike)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{what} must be an int, got {_type_name(value)}")
    return max(min(value, 2**63 - 1), -(2**63))


def _check_optional_seconds(value: object, what: str) -> Optional[float]:
    """``None``, or a number of seconds (its value is the core's to judge)."""
    return None if value is None else _check_number(value, what)


def _check_timeout(value: object) -> Optional[float]:
    """``None`` waits forever; a number is judged by the core's rule (``Wait::from_secs``)."""
    seconds = None if value is None else _check_number(value, "timeout")
    _zklock.check_timeout(seconds)
    return seconds
