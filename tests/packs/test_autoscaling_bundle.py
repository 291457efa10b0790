"""The autoscaling pack's config, rules and deploy/autoscaling/ artefacts, checked without a
cluster: KEDA ScaledObjects against a schema written from KEDA v2's CRD (tests/data/
keda-scaledobject.schema.json), HPAs through the kubernetes Python client's autoscaling/v2
models, prometheus-adapter values by what the chart reads, and every query as PromQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes.client
import promql_parser
import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.cli import main
from infersight.config import ConfigError, parse_config
from infersight.deploy import autoscaling, helm
from infersight.recording_rules import autoscaling as autoscaling_rules
from tests.packs.autoscaling_configs import THREE_MODELS

KEDA_SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "keda-scaledobject.schema.json").read_text())
CFG = parse_config(THREE_MODELS)
FILES = bundle_files.render(bundle.build(CFG))


def _docs(rel: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(FILES[rel]) if d]


def test_default_config_scales_nothing() -> None:
    files = bundle_files.render(bundle.build(parse_config({})))
    assert not [rel for rel in files if rel.startswith(autoscaling.DIR)]
    assert "vllm-autoscaling.json" not in {rel.split("/")[-1] for rel in files}
    assert "extraManifests" not in yaml.safe_load(files[helm.VALUES_PATH])


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        ({"signal": "queue_depth"}, "autoscaling.models.0.signal", "waiting_per_replica"),
        ({"min_replicas": 5, "max_replicas": 2}, "autoscaling.models.0", "min_replicas 5 is above max_replicas 2"),
        ({"target": 0}, "autoscaling.models.0.target", "greater than 0"),
        ({"target": -1.5}, "autoscaling.models.0.target", "greater than 0"),
        ({"signal": "kv_usage", "target": 80}, "autoscaling.models.0", "must be a fraction"),
        (
            {"workload": {"kind": "Pod", "name": "x", "namespace": "llm"}},
            "autoscaling.models.0.workload.kind",
            "Deployment",
        ),
    ],
)
def test_bad_autoscaling_config_is_named_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], where: str, says: str
) -> None:
    model = {**THREE_MODELS["autoscaling"]["models"][0], **change}
    data = {"autoscaling": {"models": [model]}}
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert where in str(err.value) and says in str(err.value)
    config = tmp_path / "infersight.yaml"
    config.write_text(yaml.safe_dump(data))
    out = tmp_path / "bundle"
    assert main(["build", "--config", str(config), "--out", str(out)]) == 2
    assert not out.exists()
    assert "Traceback" not in capsys.readouterr().err


def test_a_workload_listed_twice_is_refused() -> None:
    first = THREE_MODELS["autoscaling"]["models"][0]
    with pytest.raises(ConfigError, match="listed twice"):
        parse_config({"autoscaling": {"models": [first, {**first, "model_name": "other"}]}})


def test_every_scaled_object_is_a_valid_keda_v2_object_pinned_to_its_model() -> None:
    objects = _docs(autoscaling.KEDA_PATH)
    assert [o["metadata"]["name"] for o in objects] == ["vllm-tiny-moe", "vllm-big", "lws-dense"]
    for obj, model in zip(objects, CFG.autoscaling.models, strict=True):
        jsonschema.validate(obj, KEDA_SCHEMA)
        assert obj["metadata"]["namespace"] == model.workload.namespace
        trigger = obj["spec"]["triggers"][0]
        assert trigger["type"] == "prometheus" and trigger["metricType"] == "Value"
        meta = trigger["metadata"]
        assert meta["ignoreNullValues"] == "false"  # a missing signal must not read as 0
        assert meta["query"] == autoscaling_rules.signal_query(CFG, model)
        promql_parser.parse(meta["query"])
        assert f'namespace="{model.workload.namespace}"' in meta["query"]
        assert f'model_name="{model.model_name}"' in meta["query"]
        assert float(meta["threshold"]) == model.effective_target
    assert objects[2]["spec"]["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "lws-dense",
    }


def test_every_hpa_round_trips_through_the_kubernetes_autoscaling_v2_model() -> None:
    api = kubernetes.client.ApiClient()
    for doc in _docs(autoscaling.HPA_PATH):
        model = api._ApiClient__deserialize(doc, "V2HorizontalPodAutoscaler")  # type: ignore[attr-defined]
        assert isinstance(model, kubernetes.client.V2HorizontalPodAutoscaler)
        # A field the model does not know, or a wrong type, would not come back the same.
        assert api.sanitize_for_serialization(model) == doc
        metric = model.spec.metrics[0].external
        assert metric.metric.name == autoscaling.EXTERNAL_METRIC
        assert metric.target.type == "Value"
        assert model.spec.min_replicas <= model.spec.max_replicas


def test_prometheus_adapter_serves_the_signal_under_the_name_the_hpas_read() -> None:
    values = yaml.safe_load(FILES[autoscaling.ADAPTER_VALUES_PATH])
    assert values["prometheus"] == {"url": "http://127.0.0.1", "port": 9090, "path": ""}
    (rule,) = values["rules"]["external"]
    assert rule["name"]["as"] == autoscaling.EXTERNAL_METRIC
    promql_parser.parse(rule["seriesQuery"])
    assert rule["seriesQuery"].startswith(autoscaling_rules.signal(CFG) + "{")
    assert rule["resources"] == {"overrides": {"namespace": {"resource": "namespace"}}}
    hpa_selectors = [
        d["spec"]["metrics"][0]["external"]["metric"]["selector"]["matchLabels"] for d in _docs(autoscaling.HPA_PATH)
    ]
    assert all(set(s) == {"scale_target", "signal"} for s in hpa_selectors)


def test_the_helm_overlay_carries_the_chosen_engines_objects() -> None:
    assert [m["kind"] for m in yaml.safe_load(FILES[helm.VALUES_PATH])["extraManifests"]] == ["ScaledObject"] * 3
    hpa_cfg = parse_config({"autoscaling": {**THREE_MODELS["autoscaling"], "engine": "hpa"}})
    values = yaml.safe_load(bundle_files.render(bundle.build(hpa_cfg))[helm.VALUES_PATH])
    assert [m["kind"] for m in values["extraManifests"]] == ["HorizontalPodAutoscaler"] * 3


def test_rules_keep_each_models_rules_in_one_group() -> None:
    many = {"autoscaling": {"models": [
        {"model_name": f"m{i}", "workload": {"name": f"w{i}", "namespace": "llm"}} for i in range(9)
    ]}}  # fmt: skip
    groups = bundle.build(parse_config(many)).groups("recording_rules")
    scaling = [g for g in groups if g.name.startswith("infersight-autoscaling")]
    assert [g.name for g in scaling] == [f"infersight-autoscaling-{i}.rules" for i in (1, 2, 3)]
    # An autoscaler reads them: every 30 s, though no alert of the bundle reads them promptly.
    assert {str(g.interval) for g in scaling} == {"30s"}
    for g in scaling:
        assert len(g.rules) <= 20
        models = [r.expr for r in g.rules if r.record == autoscaling_rules.DESIRED]
        assert len(models) * 5 == len(g.rules)
