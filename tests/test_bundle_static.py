"""Static checks of the built bundle (testing ladder, rung 2), for every pack."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models.dashboard import Dashboard as DashboardModel
from prometheus_client.parser import text_string_to_metric_families

from infersight import bundle, bundle_files, catalog
from infersight.config import Config
from infersight.lint import dashboard_queries, lint_dashboard, lint_rules, metric_names, substitute
from infersight.rules import COMPONENTS
from tests.grafana_schema import REFERENCE_DIR, schema_problems

REPO = Path(__file__).resolve().parents[1]
FILES = bundle_files.render(bundle.build(Config()))
RULE_FILES = {k: v for k, v in FILES.items() if k.startswith(("recording_rules/", "alerts/"))}
DASHBOARDS = {k: json.loads(v) for k, v in FILES.items() if k.startswith("dashboards/")}
REFERENCES = (
    REFERENCE_DIR / "vllm-0.32.0-metric-families.txt",
    REFERENCE_DIR / "vllm-0.32.0-feature-metric-families.txt",  # scripts/capture_vllm_features.py
)


def _alerts() -> list[dict[str, Any]]:
    return [
        r for text in RULE_FILES.values() for g in yaml.safe_load(text)["groups"] for r in g["rules"] if "alert" in r
    ]


def test_bundle_has_the_slice() -> None:
    assert {"recording_rules/serving.yaml", "alerts/serving.yaml", "dashboards/vllm-overview.json"} <= set(FILES)


def test_promtool_check_rules(tmp_path: Path) -> None:
    bundle_files.write(RULE_FILES, tmp_path)
    paths = [str(tmp_path / rel) for rel in RULE_FILES]
    result = subprocess.run(["promtool", "check", "rules", *paths], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_expression_parses_and_names_only_catalogued_or_recorded_metrics() -> None:
    recorded = bundle.build(Config()).recorded_names()
    problems: list[str] = []
    for rel, text in RULE_FILES.items():
        problems += lint_rules(rel, yaml.safe_load(text), recorded)
    for rel, board in DASHBOARDS.items():
        problems += lint_dashboard(rel, board, recorded)
    assert problems == []
    # And the names really are the catalog's: a vLLM series here is one vLLM really exposes.
    known = catalog.known_series_names()
    raw = {n for text in RULE_FILES.values() for g in yaml.safe_load(text)["groups"] for r in g["rules"]
           for n in metric_names(r["expr"]) if n and n not in recorded}  # fmt: skip
    assert raw and raw <= known


def test_catalog_vllm_names_match_a_real_vllm_0_32() -> None:
    # Two measured runs: a plain server, and one with every optional metric family switched on.
    families = dict(
        line.split()[:2]
        for ref in REFERENCES
        for line in ref.read_text().splitlines()
        if line and not line.startswith("#")
    )
    for m in catalog.CATALOG.values():
        if m.source not in (catalog.Source.VLLM, catalog.Source.VLLM_API) or not m.name.startswith("vllm:"):
            continue
        if m.versions == catalog.UNRELEASED:
            assert m.name not in families, f"{m.name} is catalogued as unreleased, yet 0.32 exposes it"
            continue
        if m.versions == catalog.SOURCE_ONLY:
            continue  # held to the installed source below
        assert m.name in families, f"{m.name} is not exposed by vLLM 0.32.0"
        assert families[m.name] == m.type.value, f"{m.name}: vLLM 0.32 exposes a {families[m.name]}"
        for alias in m.aliases:
            assert alias.name not in families, f"alias {alias.name} should be the old name"


def _connector_families() -> dict[str, tuple[str, tuple[str, ...], tuple[float, ...]]]:
    """family -> (type, labels, bounds) from the file scripts/capture_kv_connector_metrics.py renders."""
    out = {}
    for line in (REFERENCE_DIR / "vllm-0.32.0-kv-connector-families.txt").read_text().splitlines():
        if line.startswith("#"):
            continue
        name, kind, *fields = line.split()
        parts = dict(f.split("=", 1) for f in fields)
        bounds = tuple(float(b) for b in parts["buckets"].split(",")) if "buckets" in parts else ()
        out[name] = (kind, tuple(parts["labels"].split(",")), bounds)
    return out


def test_source_only_families_are_declared_so_by_the_installed_vllm() -> None:
    """The KV connector families no real scrape here can hold (NIXL and the two offloading
    connectors need CUDA): each has the type, labels and bucket bounds vLLM's own classes declare."""
    declared = _connector_families()
    only = [m for m in catalog.CATALOG.values() if m.versions == catalog.SOURCE_ONLY]
    assert len(only) >= 24
    for m in only:
        assert m.name in declared, f"{m.name}: no KV connector of the installed vLLM declares it"
        kind, labels, bounds = declared[m.name]
        assert kind == m.type.value, f"{m.name}: vLLM declares a {kind}"
        assert set(labels) == set(m.labels), f"{m.name}: vLLM's labels are {labels}"
        assert bounds == tuple(m.buckets), f"{m.name}: vLLM's bounds are {bounds}"


def test_the_connector_families_file_is_what_the_installed_vllm_declares() -> None:
    script = Path(__file__).parents[1] / "scripts" / "capture_kv_connector_metrics.py"
    result = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def test_catalog_labels_and_buckets_match_the_feature_scrape() -> None:
    """Label names and histogram bounds of every catalogued family in the real 0.32 scrape."""
    scrape = (REFERENCE_DIR.parent / "vllm-0.32.0-features-scrape.txt").read_text()
    seen: dict[str, set[str]] = {}
    bounds: dict[str, set[float]] = {}
    for family in text_string_to_metric_families(scrape):
        for sample in family.samples:
            seen.setdefault(family.name, set()).update(k for k in sample.labels if k != "le")
            if sample.name.endswith("_bucket") and sample.labels["le"] != "+Inf":
                bounds.setdefault(family.name, set()).add(float(sample.labels["le"]))
    checked = 0
    for m in catalog.CATALOG.values():
        name = m.name.removesuffix("_total") if m.type is catalog.MetricType.COUNTER else m.name
        if (
            m.source not in (catalog.Source.VLLM, catalog.Source.VLLM_API)
            or not name.startswith("vllm:")
            or name not in seen
        ):
            continue
        checked += 1
        # An info family has many labels; the catalog lists those the bundle may read.
        labels_match = set(m.labels) <= seen[name] if name.endswith("_info") else set(m.labels) == seen[name]
        assert labels_match, f"{m.name}: the scrape has labels {sorted(seen[name])}, the catalog {m.labels}"
        if m.buckets:
            assert bounds[name] == set(m.buckets), f"{m.name}: the scrape has buckets {sorted(bounds[name])}"
    assert checked >= 20


def test_dashboards_round_trip_through_foundation_sdk_models() -> None:
    register_default_plugins()
    for rel, board in DASHBOARDS.items():
        model = DashboardModel.from_json(board)
        again = json.loads(JSONEncoder(sort_keys=True).encode(model))
        assert again == board, rel


def test_dashboards_validate_against_grafana_schemas() -> None:
    for rel, board in DASHBOARDS.items():
        assert schema_problems(board) == [], rel


def test_dashboard_uids_are_stable_and_unique() -> None:
    uids = [b["uid"] for b in DASHBOARDS.values()]
    assert len(uids) == len(set(uids))
    assert DASHBOARDS["dashboards/vllm-overview.json"]["uid"] == "infersight-vllm-overview"


def test_dashboard_variables() -> None:
    board = DASHBOARDS["dashboards/vllm-overview.json"]
    names = [v["name"] for v in board["templating"]["list"]]
    assert names == ["datasource", "job", "model_name", "instance", "engine"]
    model_var = board["templating"]["list"][2]
    assert 'job=~"$job"' in model_var["query"]  # chained on the variable before it


def test_alert_conventions_and_runbook_sections() -> None:
    runbook = (REPO / "docs" / "runbook.md").read_text()
    anchors = {m.lower() for m in re.findall(r"^#+\s+(\S+)\s*$", runbook, re.M)}
    alerts = _alerts()
    assert alerts
    for a in alerts:
        name = a["alert"]
        assert re.fullmatch(r"Infersight[A-Z][A-Za-z0-9]*", name) and len(name) <= 40
        assert a["labels"]["severity"] in ("critical", "warning", "info")
        assert a["labels"]["component"] in COMPONENTS
        ann = a["annotations"]
        assert ann["summary"][0].isupper() and ann["summary"].endswith(".") and "{{" not in ann["summary"]
        assert "{{" in ann["description"]
        assert ann["runbook_url"].endswith(f"docs/runbook.md#{name.lower()}")
        assert name.lower() in anchors, f"docs/runbook.md has no section for {name}"
        assert "for" in a or "BudgetBurn" in name, f"{name} has no for:"


def test_build_is_byte_identical_across_processes(tmp_path: Path) -> None:
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "infersight.cli", "build", "--out", str(out)], check=True, env=env)
        outs.append({p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    assert outs[0] == outs[1]
    assert set(outs[0]) == set(bundle_files.render(bundle.build(Config()), with_mixin=True))


# --- the lint catches what it claims to catch -------------------------------------------------
def _board_with(expr: str, **panel: Any) -> dict[str, Any]:
    base = {"type": "timeseries", "title": "t", "description": "d", "datasource": {"uid": "${datasource}"},
            "fieldConfig": {"defaults": {"unit": "s"}}, "targets": [{"refId": "A", "expr": expr}]}  # fmt: skip
    return {"uid": "x", "templating": {"list": [{"type": "datasource", "name": "datasource", "query": "prometheus"}]},
            "panels": [{**base, **panel}]}  # fmt: skip


@pytest.mark.parametrize(
    ("expr", "panel", "finding"),
    [
        ("rate(vllm:num_preemptions_total[5m])", {}, "must use [$__rate_interval]"),
        ("vllm:num_preemptions_total", {}, "must be read through rate()"),
        ("rate(vllm:num_preemptions[$__rate_interval])", {}, "neither in the catalog"),
        ("up", {"fieldConfig": {"defaults": {}}}, "has no unit"),
        ("up", {"description": ""}, "has no description"),
        ("sum(rate(up[$__rate_interval]", {}, "does not parse"),
    ],
)
def test_dashboard_lint_findings(expr: str, panel: dict[str, Any], finding: str) -> None:
    problems = lint_dashboard("x.json", _board_with(expr, **panel), frozenset())
    assert any(finding in p for p in problems), problems


def test_dashboard_lint_accepts_a_good_panel() -> None:
    assert (
        lint_dashboard("x.json", _board_with("rate(vllm:num_preemptions_total[$__rate_interval])"), frozenset()) == []
    )


def test_substitute_grafana_variables() -> None:
    assert substitute('rate(x{job=~"$job", a=~"${model_name}"}[$__rate_interval])') == (
        'rate(x{job=~".*", a=~".*"}[5m])'
    )


def test_substitute_the_range_and_its_seconds_apart() -> None:
    # $__range is a prefix of $__range_s: a summary table multiplies a mean rate by the seconds.
    assert substitute("avg_over_time(x[$__range]) * $__range_s") == "avg_over_time(x[1h]) * 3600"


def test_substitute_leaves_label_replace_capture_groups_alone() -> None:
    expr = 'label_replace(x{h=~"$Hostname"}, "host", "host/$1", "h", "(.+)")'
    assert substitute(expr, {"Hostname": "node-1"}) == 'label_replace(x{h=~"node-1"}, "host", "host/$1", "h", "(.+)")'


def test_every_recording_is_read_by_a_dashboard_or_a_rule() -> None:
    # A recording nobody reads costs a series per entity at fleet size and buys nothing (issue 12).
    recorded = bundle.build(Config()).recorded_names()
    exprs = [r["expr"] for text in RULE_FILES.values() for g in yaml.safe_load(text)["groups"] for r in g["rules"]]
    exprs += [expr for board in DASHBOARDS.values() for _, expr in dashboard_queries(board)]
    read = {n for expr in exprs for n in metric_names(substitute(expr))}
    assert sorted(recorded - read) == []
