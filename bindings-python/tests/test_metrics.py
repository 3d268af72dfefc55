"""Per-path statistics and the metrics adapter (issue 37, point 4): `Client.path_stats()`, its
bound (`path_stats_limit`), the per-path families of `openmetrics()` read back by
prometheus_client's own OpenMetrics parser, and `zklock.metrics.ZklockCollector` served from a
real `prometheus_client` registry."""

from __future__ import annotations

import subprocess
import sys

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

import zklock
from zklock.metrics import ZklockCollector

WAIT = 10.0


def test_each_path_is_counted_and_paths_past_the_limit_fold_into_the_overflow(servers, path):
    with zklock.Client(servers, path_stats_limit=2) as client:
        # While both known paths are held, later paths fold (an idle one would be evicted).
        with client.lock(path).hold(WAIT), client.lock(f"{path}-b").hold(WAIT):
            for p in (f"{path}-c", f"{path}-d"):
                with client.lock(p).hold(WAIT):
                    pass
        with client.lock(path).hold(WAIT):
            snapshot = client.path_stats()
            own = {p.path: p for p in snapshot.paths}
            assert (snapshot.limit, snapshot.folded) == (2, 2)
            assert sorted(own) == [path, f"{path}-b"]
            assert (own[path].acquired, own[path].held) == (2, 1)
            assert own[path].oldest_hold >= 0.0
            assert own[path].lost == {"broken": 0, "max-hold": 0, "conflict": 0, "session": 0}
            assert snapshot.overflow is not None
            assert (snapshot.overflow.path, snapshot.overflow.acquired) == (None, 2)
        assert client.path_stats().paths[0].held == 0


def test_the_per_path_text_parses_with_prometheus_clients_openmetrics_parser(servers, path):
    odd = f'{path}/a "quoted" \\ path'
    with zklock.Client(servers) as client:
        with client.lock(odd).hold(WAIT):
            text = client.openmetrics({"service": 'x"y'})
    families = {f.name: f for f in text_string_to_metric_families(text)}
    acquired = [
        s for s in families["zklock_path_acquires"].samples
        if s.labels.get("path") == odd and s.labels["outcome"] == "acquired"
    ]
    assert [(s.value, s.labels["service"]) for s in acquired] == [(1.0, 'x"y')]
    held = [s for s in families["zklock_path_held"].samples if s.labels["path"] == odd]
    assert [s.value for s in held] == [1.0]
    wait = families["zklock_path_wait_seconds"]
    assert (wait.type, wait.unit) == ("counter", "seconds")
    assert [s.name for s in wait.samples if s.labels["path"] == odd] == [
        "zklock_path_wait_seconds_total"
    ]
    assert families["zklock_path_stats_folded"].samples[0].value == 0.0


def test_the_collector_fills_a_registry_at_each_scrape(servers, path):
    with zklock.Client(servers) as client, zklock.Client(servers) as second:
        registry = CollectorRegistry()
        registry.register(ZklockCollector(client, second, labels={"service": "jobs"}))
        ids = {"client": str(client.id), "service": "jobs", "path": path}
        with client.lock(path).hold(WAIT):
            assert registry.get_sample_value("zklock_path_held", ids) == 1.0
            exposed = generate_latest(registry).decode()
            assert f'client="{second.id}"' in exposed
        # Released: the path has no held or oldest-hold series (absent, not 0), its acquired
        # count and wait seconds stay.
        assert registry.get_sample_value("zklock_path_held", ids) is None
        assert registry.get_sample_value("zklock_path_oldest_hold_seconds", ids) is None
        assert registry.get_sample_value("zklock_path_wait_seconds_total", ids) >= 0.0
        assert registry.get_sample_value(
            "zklock_path_acquires_total", {**ids, "outcome": "acquired"}
        ) == 1.0
        assert registry.get_sample_value(
            "zklock_acquires_total",
            {"client": str(client.id), "service": "jobs", "outcome": "acquired"},
        ) == 1.0
        other_registry = CollectorRegistry()
        other_registry.register(client.prometheus_collector())
        assert other_registry.get_sample_value("zklock_held", {"client": str(client.id)}) == 0.0


def test_the_collector_builds_the_texts_families_from_the_statistics_without_parsing_text(
    servers, path, monkeypatch
):
    # Issue 51: the families come from the core's statistics, not from rendering the text and
    # parsing it back (287 ms a collect at 1,000 paths); they are the text's families all the same.
    from prometheus_client.openmetrics import parser

    with zklock.Client(servers) as client:
        for i in range(3):
            with client.lock(f"{path}/{i}").hold(WAIT):
                pass
        with client.lock(f"{path}/held").hold(WAIT):
            collector = ZklockCollector(client, labels={"service": "jobs"})
            monkeypatch.setattr(
                parser, "text_string_to_metric_families", lambda *_: pytest.fail("parsed text")
            )
            collected = {f.name: f for f in collector.collect()}
            monkeypatch.undo()
            text = client.openmetrics({"service": "jobs"})
    parsed = {f.name: f for f in text_string_to_metric_families(text)}
    assert sorted(collected) == sorted(parsed)
    for name, family in parsed.items():
        got = collected[name]
        assert (got.type, got.unit, got.documentation) == (family.type, family.unit, family.documentation)
        # Gauges of time (the oldest hold) move between the two reads; the rest is equal.
        if name != "zklock_path_oldest_hold_seconds":
            assert [(s.name, s.labels, s.value) for s in got.samples] == [
                (s.name, s.labels, s.value) for s in family.samples
            ], name


def test_zklock_does_not_import_prometheus_client_and_a_missing_one_is_a_clear_error(
    servers, monkeypatch
):
    probe = "import sys, zklock; print('prometheus_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    for name in [m for m in sys.modules if m.startswith("prometheus_client")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with zklock.Client(servers) as client:
        with pytest.raises(ImportError, match="pip install prometheus_client"):
            client.prometheus_collector()


@pytest.mark.parametrize("limit", [-1, 10**30, 1_000_001])
def test_a_path_stats_limit_out_of_range_is_refused_before_connecting(servers, limit):
    with pytest.raises(zklock.InvalidArgument, match="path_stats_limit"):
        zklock.Client(servers, path_stats_limit=limit)


def test_a_path_stats_limit_that_is_not_an_int_is_a_type_error(servers):
    with pytest.raises(zklock.InvalidArgumentType, match="path_stats_limit"):
        zklock.Client(servers, path_stats_limit=True)
    with zklock.Client(servers, path_stats_limit=0) as off:
        assert off.path_stats().paths == ()
        assert "zklock_path_" not in off.openmetrics()
