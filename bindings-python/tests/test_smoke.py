import threading
import time

import zklock
from conftest import assert_empty_eventually, nodes


def test_basic_with(client, path):
    lock = client.lock(path)
    with lock as lease:
        assert lease.token > 0
        assert lease.state == "held"
        assert lease.is_held()
        assert lock.locked()
        assert lock.lease is lease
        assert len(nodes(client, path)) == 1
    assert not lock.locked()
    assert lock.lease is None
    assert lease.state == "released"
    assert_empty_eventually(client, path)
