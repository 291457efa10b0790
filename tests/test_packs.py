"""The pack contract (infersight.packs): every pack in the registry is built, named uniquely,
reads exactly the catalogued metrics it declares, and owns the files named after it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infersight import bundle, catalog, lint
from infersight.config import Config, parse_config
from infersight.packs import PACKS, RULE_KINDS, Pack, by_name
from tests.packs.autoscaling_configs import THREE_MODELS


def _catalog_names_of(series: str) -> set[str]:
    return {m.name for m in catalog.CATALOG.values() if series in set(m.series_names())}


def _expressions(pack: Pack, cfg: Config) -> list[str]:
    exprs = [r.expr for kind in RULE_KINDS for g in bundle.pack_groups(cfg, pack, kind) for r in g.rules]
    for board in bundle.pack_dashboards(cfg, pack).values():
        exprs += [lint.substitute(expr) for _, expr in lint.dashboard_queries(board)]
    return exprs


def metrics_read(pack: Pack, cfg: Config) -> frozenset[str]:
    """Catalog names the pack's expressions select (recording-rule names are not metrics)."""
    names: set[str] = set()
    for expr in _expressions(pack, cfg):
        for series in lint.metric_names(expr):
            if series is not None:
                names |= _catalog_names_of(series)
    return frozenset(names)


# Packs that build nothing on the defaults, with a config that turns all of them on.
CONFIG_OF = {"autoscaling": parse_config(THREE_MODELS)}


@pytest.mark.parametrize("pack", PACKS, ids=lambda p: p.name)
def test_pack_reads_exactly_the_metrics_it_declares(pack: Pack) -> None:
    assert metrics_read(pack, CONFIG_OF.get(pack.name, Config())) == pack.reads


def test_pack_names_are_unique_and_name_their_files() -> None:
    names = [p.name for p in PACKS]
    assert len(set(names)) == len(names)
    built = bundle.build(Config())
    assert {f.pack for f in built.rule_files} | {d.pack for d in built.dashboards} == set(names)
    for f in built.rule_files:
        assert f.path == f"{f.kind}/{f.pack}.yaml"


@pytest.mark.parametrize("pack", PACKS, ids=lambda p: p.name)
def test_group_names_name_their_pack_and_kind(pack: Pack) -> None:
    # One name for one idea: a reader of a Prometheus rule page finds the pack from the group.
    prefix = "infersight-" + pack.name.replace("_", "-")
    cfg = CONFIG_OF.get(pack.name, Config())
    for kind, suffix in (("recording_rules", ".rules"), ("alerts", ".alerts")):
        for g in bundle.pack_groups(cfg, pack, kind):
            assert g.name == prefix + suffix or (g.name.startswith(prefix + "-") and g.name.endswith(suffix)), g.name


def test_every_pack_reads_its_own_config_section() -> None:
    fields = set(Config.model_fields)
    for pack in PACKS:
        assert set(pack.config_sections) <= fields, pack.name
    assert {s for p in PACKS for s in p.config_sections} | {"time_scale", "deploy"} == fields


def test_unknown_pack_and_kind_are_named() -> None:
    with pytest.raises(KeyError, match="no pack named 'nope'"):
        by_name("nope")
    with pytest.raises(ValueError, match="rule kind 'rules'"):
        PACKS[0].groups("rules")


def test_the_architecture_doc_lists_every_pack() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = re.search(r"^- Packs today: (.+?)\.$", doc, re.M | re.S)
    assert listed, "docs/architecture.md has no '- Packs today: ...' line"
    assert set(re.findall(r"`(\w+)`", listed.group(1))) == {p.name for p in PACKS}
