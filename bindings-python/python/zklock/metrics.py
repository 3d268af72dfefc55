"""zklock's metrics for ``prometheus_client``: :class:`ZklockCollector` serves the core's metric
families (client-wide and per lock path, the names of ``Client.openmetrics()``) from a
``prometheus_client`` registry, read from the clients at each scrape::

    from prometheus_client import REGISTRY
    from zklock.metrics import ZklockCollector

    REGISTRY.register(ZklockCollector(client))

The families are built from the core's statistics directly (``Client._native.metric_families``),
not by rendering OpenMetrics text and parsing it back (issue 51: at 1,000 paths that took 287 ms
a collect; the bench's ``python-collect`` row measures it now).

``prometheus_client`` is imported when a collector is made, not with ``zklock``: a program that
does not use it needs not install it (``pip install 'pyzklock[prometheus]'``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional

if TYPE_CHECKING:
    from ._client import Client


def _metric_class() -> Any:
    try:
        from prometheus_client.metrics_core import Metric
    except ImportError as e:
        raise ImportError(
            "zklock.metrics.ZklockCollector needs the prometheus_client package: "
            "pip install prometheus_client (or pyzklock[prometheus])"
        ) from e
    return Metric


class ZklockCollector:
    """A ``prometheus_client`` collector of one or more clients' metrics: at each ``collect()``
    it reads every client's metric families (labelled with ``labels``) and yields them, a
    client's series told apart by their ``client`` label. Register it yourself
    (``REGISTRY.register``); a closed client keeps its last counts."""

    def __init__(self, *clients: "Client", labels: Optional[Mapping[str, str]] = None) -> None:
        self._metric = _metric_class()
        self._clients: List["Client"] = list(clients)
        self._labels: Dict[str, str] = dict(labels or {})

    def collect(self) -> Iterator[Any]:
        pairs = [(str(k), str(v)) for k, v in self._labels.items()]
        families: Dict[str, Any] = {}
        for client in self._clients:
            for name, kind, help_text, unit, samples in client._native.metric_families(pairs):
                family = families.get(name)
                if family is None:
                    family = self._metric(name, help_text, kind, unit)
                    families[name] = family
                for sample_name, labels, value in samples:
                    family.add_sample(sample_name, labels, value)
        yield from families.values()
