"""A small, fully typed use of zklock: `mypy --strict` must accept it (ci-test.sh checks)."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import List, Optional

import zklock


def write_fenced(lease: zklock.Lease, rows: List[str]) -> int:
    token: int = lease.token
    rows.append(f"{lease.path} {token} {lease.state}")
    return token


def with_threads(client: zklock.Client, path: str) -> List[str]:
    rows: List[str] = []
    lock: zklock.Lock = client.lock(path)
    lost = threading.Event()

    def work() -> None:
        with lock as lease:
            lease.on_lost(lost.set)
            write_fenced(lease, rows)
            assert lease.is_held() and not lease.lost.is_set()
        if lock.acquire(timeout=0.5):
            current: Optional[zklock.Lease] = lock.lease
            assert current is not None
            lock.release()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rows


async def with_asyncio(client: zklock.Client, path: str) -> int:
    lock = client.lock(path)
    async with lock as lease:
        first = lease.token
    try:
        async with lock.hold(timeout=1.0) as again:
            return max(first, again.token)
    except zklock.LockTimeout:
        return first


def with_rw_and_multi(client: zklock.Client, path: str) -> None:
    rw: zklock.RwLock = client.rw_lock(f"{path}/rw")
    with rw.read:
        try:
            rw.write.acquire()
        except zklock.UpgradeNotAllowed as e:
            print("as expected:", e.kind, e.message)
    multi: zklock.MultiLock = client.multi_lock([f"{path}/a", rw.write])
    with multi as lease:
        tokens: List[int] = lease.tokens
        print("multi tokens", tokens)
    queue: List[zklock.Participant] = rw.participants()
    print("queue", [(p.identity, p.kind) for p in queue])


def with_election(client: zklock.Client, path: str) -> List[str]:
    seen: List[str] = []
    election: zklock.Election = client.election(f"{path}/election", id="typed", max_hold=60.0)
    watch: zklock.LeaderWatch = client.observe_leader(election.path)
    now: Optional[zklock.Participant] = watch.next(timeout=5.0)
    seen.append("none" if now is None else now.id)
    with election.lead(timeout=5.0) as lead:
        token: int = lead.token
        until: Optional[float] = lead.valid_until()
        left: Optional[float] = lead.time_left()
        assert until is not None and left is not None and lead.lost_reason is None
        election.proclaim(lead, "typed!")
        leader = election.leader()
        seen.append("none" if leader is None else leader.id)
        assert client.check(election.path, token)
        family: List[Optional[str]] = [p.style for p in election.participants()]
        seen.extend(f for f in family if f is not None)
        attempt: Optional[zklock.LeadAttempt] = election.resign(lead, requeue=True)
    assert attempt is not None
    again: zklock.Leadership = attempt.result(timeout=5.0)
    election.resign(again)

    def as_leader(lead: zklock.Leadership) -> str:
        return lead.state

    seen.append(election.run(as_leader) or "none")

    async def leading() -> int:
        async with election.lead_async(timeout=5.0) as lead:
            return lead.token

    seen.append(str(asyncio.run(leading()) > token))
    try:
        client.election(path, style="leader")
    except zklock.InvalidArgument as e:
        seen.append(e.kind)
    except zklock.Conflict:
        raise
    return seen


def main(servers: str) -> None:
    try:
        with zklock.Client(servers, session_timeout=10.0, identity="typed-example") as client:
            path = "/zklock-py/typed-example"
            print(with_threads(client, path))
            print(asyncio.run(with_asyncio(client, path)))
            with_rw_and_multi(client, path)
            print(with_election(client, path))
    except zklock.ConnectionFailed as e:
        print("no ZooKeeper:", e, file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:2181")
