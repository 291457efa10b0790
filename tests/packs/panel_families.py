"""Which scraped metric families a built panel reads: its queries' names, with every recording
followed down to the series it records from. Shared by the tests that hold panels to vLLM's."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from infersight import catalog
from infersight.bundle import Bundle
from infersight.lint import metric_names, substitute
from infersight.rules import RecordingRule

SUFFIXES = ("_bucket", "_sum", "_count")


def family(series: str) -> str:
    """The catalog family a series name belongs to (histogram parts to their histogram)."""
    if series in catalog.CATALOG:
        return series
    for suffix in SUFFIXES:
        if series.endswith(suffix) and series.removesuffix(suffix) in catalog.CATALOG:
            return series.removesuffix(suffix)
    return series


def panels(board: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows included."""
    for p in board.get("panels", []):
        yield from panels(p) if p.get("type") == "row" else (p,)


class PanelFamilies:
    def __init__(self, built: Bundle):
        self._recorded: dict[str, set[str]] = {}
        for rule in (r for g in built.groups("recording_rules") for r in g.rules if isinstance(r, RecordingRule)):
            self._recorded.setdefault(rule.record, set()).update(n for n in metric_names(rule.expr) if n)

    def _raw(self, name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if name not in self._recorded or name in seen:
            return {family(name)}
        return {f for n in self._recorded[name] for f in self._raw(n, seen | {name})}

    def of(self, panel: Mapping[str, Any]) -> set[str]:
        """The scraped families the panel's queries read."""
        return {f for n in query_names(panel) for f in self._raw(n)}


def query_names(panel: Mapping[str, Any]) -> set[str]:
    """The metric names a panel's queries select, Grafana's variables filled in."""
    exprs = [t["expr"] for t in panel.get("targets", []) or [] if t.get("expr")]
    return {n for e in exprs for n in metric_names(substitute(e)) if n}
