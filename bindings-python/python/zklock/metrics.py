"""zklock's metrics for ``prometheus_client``: :class:`ZklockCollector` serves the families of
``Client.openmetrics()`` (the core's names: client-wide and per lock path) from a
``prometheus_client`` registry, read from the clients at each scrape::

    from prometheus_client import REGISTRY
    from zklock.metrics import ZklockCollector

    REGISTRY.register(ZklockCollector(client))

``prometheus_client`` is imported when a collector is made, not with ``zklock``: a program that
does not use it needs not install it (``pip install 'pyzklock[prometheus]'``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional

if TYPE_CHECKING:
    from ._client import Client


def _parser() -> Any:
    try:
        from prometheus_client.openmetrics import parser
    except ImportError as e:
        raise ImportError(
            "zklock.metrics.ZklockCollector needs the prometheus_client package: "
            "pip install prometheus_client (or pyzklock[prometheus])"
        ) from e
    return parser


class ZklockCollector:
    """A ``prometheus_client`` collector of one or more clients' metrics: at each ``collect()``
    it renders every client's ``openmetrics(labels)`` and yields the families, a client's
    series told apart by their ``client`` label. Register it yourself (``REGISTRY.register``);
    a closed client keeps its last counts."""

    def __init__(self, *clients: "Client", labels: Optional[Mapping[str, str]] = None) -> None:
        self._parser = _parser()
        self._clients: List["Client"] = list(clients)
        self._labels: Dict[str, str] = dict(labels or {})

    def collect(self) -> Iterator[Any]:
        families: Dict[str, Any] = {}
        for client in self._clients:
            text = client.openmetrics(self._labels)
            for family in self._parser.text_string_to_metric_families(text):
                known = families.get(family.name)
                if known is None:
                    families[family.name] = family
                else:
                    known.samples.extend(family.samples)
        yield from families.values()
