"""infersight's dashboards lose no panel of the dashboards vLLM's releases ship as examples: every
vLLM metric family a panel of theirs reads (tests/data/upstream/vllm-0.34.0/, the same bytes in
0.32 and 0.33) is read by some panel of the default build, directly or through the recordings it
reads. docs/dashboard-comparison.md compares panel by panel with the four dashboards upstream's
generator makes on its main branch; this holds the build to the ones a release user imports."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from infersight import bundle
from infersight.config import Config
from tests.packs.panel_families import PanelFamilies, family, panels, query_names

UPSTREAM = Path(__file__).parents[1] / "data" / "upstream" / "vllm-0.34.0"


@functools.cache
def upstream_panels() -> dict[str, set[str]]:
    """'<dashboard> / <panel>' -> the vLLM families its queries read."""
    out = {}
    for path in sorted(UPSTREAM.glob("*.json")):
        board = json.loads(path.read_text())
        for p in panels(board):
            names = {family(n) for n in query_names(p) if n.startswith("vllm:")}
            if names:
                out[f"{board['title']} / {p['title'].strip()}"] = names
    return out


@functools.cache
def raw_families_read_by_the_build() -> set[str]:
    """Every family a built panel reads, through recordings down to scraped series."""
    built = bundle.build(Config())
    read = PanelFamilies(built)
    return {f for board in built.dashboards for p in panels(board.model) for f in read.of(p)}


def test_the_stored_upstream_dashboards_are_read_whole() -> None:
    found = upstream_panels()
    assert len(found) == 43  # 13 + 16 + 14 panels with queries
    assert len(set().union(*found.values())) == 17


@pytest.mark.parametrize("panel", sorted(upstream_panels()))
def test_each_upstream_panels_families_are_read_by_an_infersight_panel(panel: str) -> None:
    missing = upstream_panels()[panel] - raw_families_read_by_the_build()
    assert missing == set(), f"{panel}: no infersight panel reads {sorted(missing)}"
