"""A pending acquire's queue position (issue 37, point 4): ``on_queued`` under asyncio (called on
the loop's thread) and ``lock.position`` while tasks wait; a bad callback is refused."""

from __future__ import annotations

import asyncio
import threading
from typing import List

import pytest

import zklock
from conftest import assert_empty_eventually


def test_an_asyncio_waiter_hears_its_place_on_the_loop_thread_and_position_reads_it(
        client, other, path):
    holder = other.lock(path)
    held, let_go = threading.Event(), threading.Event()

    def hold() -> None:  # a lock is its thread's: acquired and released there
        assert holder.acquire(timeout=10)
        held.set()
        let_go.wait(30)
        holder.release()

    keeper = threading.Thread(target=hold)
    keeper.start()
    assert held.wait(30)
    lock = client.lock(path)

    async def main() -> List[object]:
        heard: List[object] = []
        queued = asyncio.Event()
        loop_thread = threading.get_ident()

        def on_queued(position: int) -> None:
            heard.append((position, threading.get_ident() == loop_thread))
            queued.set()

        task = asyncio.ensure_future(lock.acquire_async(on_queued=on_queued))
        await asyncio.wait_for(queued.wait(), 30)
        heard.append(lock.position)
        let_go.set()
        lease = await asyncio.wait_for(task, 30)
        heard.append(lock.position)
        await lease.release_async()
        return heard

    assert asyncio.run(main()) == [(1, True), 1, None]
    keeper.join(30)
    assert_empty_eventually(client, path)


def test_an_acquire_that_holds_at_once_never_calls_on_queued(client, path):
    heard: List[int] = []
    lock = client.lock(path)
    assert lock.acquire(on_queued=heard.append)
    assert lock.position is None
    lock.release()
    assert heard == []


def test_a_callback_that_is_not_callable_is_refused_before_any_io(client, path):
    with pytest.raises(zklock.InvalidArgument, match="on_queued"):
        client.lock(path).acquire(on_queued=42)  # type: ignore[arg-type]
