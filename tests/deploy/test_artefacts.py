"""Every deploy/ artefact, checked with the real tool where one exists here (promtool, amtool)
and against the bundle it wraps: the same groups, the same dashboard bytes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files, deploy
from infersight.bundle import Dashboard, RuleFile
from infersight.config import Config, ConfigError, parse_config
from infersight.deploy import (
    alertmanager,
    grafana,
    helm,
    kubernetes,
    otelcol,
    prometheus,
    targets,
    trace,
)
from infersight.deploy.naming import resource_name
from infersight.durations import Duration
from infersight.output import dump_yaml
from infersight.rules import RecordingRule, RuleGroup
from tests import written
from tests.grafana_provisioning import provisioning_problems

from .conftest import docs, tool

ARTEFACTS = [
    helm.VALUES_PATH,
    helm.ALERTMANAGER_VALUES_PATH,
    kubernetes.RULES_PATH,
    kubernetes.DASHBOARDS_PATH,
    kubernetes.POD_MONITORS_PATH,
    grafana.PROVIDER_PATH,
    grafana.DATASOURCE_PATH,
    prometheus.PATH,
    alertmanager.PATH,
    otelcol.PATH,
    "deploy/mixin/mixin.libsonnet",
]


def rule_groups(built: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    return {rel: data["groups"] for rel, data in written.rule_files(built).items()}


def promtool_rules(tmp_path: Path, groups_by_name: dict[str, list[dict[str, Any]]]) -> None:
    paths = []
    for name, groups in groups_by_name.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(dump_yaml({"groups": groups}))
        paths.append(str(path))
    result = tool("promtool", "check", "rules", *paths)
    assert result.returncode == 0, result.stdout + result.stderr


def test_build_writes_every_artefact(built: dict[str, str]) -> None:
    missing = [path for path in ARTEFACTS if path not in built]
    assert not missing


def test_prometheus_config_passes_promtool_and_loads_every_rule_file(bundle_dir: Path, built: dict[str, str]) -> None:
    result = tool("promtool", "check", "config", prometheus.PATH, cwd=bundle_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    data = yaml.safe_load(built[prometheus.PATH])
    loaded = {(bundle_dir / Path(prometheus.PATH).parent / ref).resolve() for ref in data["rule_files"]}
    assert loaded == {(bundle_dir / rel).resolve() for rel in rule_groups(built)}
    jobs = {job["job_name"] for job in data["scrape_configs"]}
    assert jobs == {"vllm", "dcgm-exporter", "infersight-gpu", "infersight-moe"}


def test_time_scaled_prometheus_config_keeps_timeout_below_interval(tmp_path: Path) -> None:
    files = bundle_files.render(bundle.build(parse_config({"time_scale": 60})))
    bundle_files.write(files, tmp_path)
    result = tool("promtool", "check", "config", prometheus.PATH, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert yaml.safe_load(files[prometheus.PATH])["global"]["scrape_timeout"] == "250ms"


def test_alertmanager_config_passes_amtool(bundle_dir: Path) -> None:
    result = tool("amtool", "check-config", str(bundle_dir / alertmanager.PATH))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 inhibit rules" in result.stdout


def test_alertmanager_routes_by_severity_and_groups_by_model_and_component(built: dict[str, str]) -> None:
    route = yaml.safe_load(built[alertmanager.PATH])["route"]
    assert route["group_by"] == ["component", "model_name"]
    assert {r["matchers"][0]: r["receiver"] for r in route["routes"]} == {
        'severity="critical"': "infersight-page",
        'severity="warning"': "infersight-ticket",
        'severity="info"': "infersight-info",
    }


def test_inhibitions_name_alerts_the_build_produces(built: dict[str, str]) -> None:
    names = written.alert_names(built)
    for rule in yaml.safe_load(built[alertmanager.PATH])["inhibit_rules"]:
        source = rule["source_matchers"][0]
        if source.startswith("alertname"):
            named = source.split('"')[1].split("|")
            assert set(named) <= names, named


def test_inhibition_left_out_when_its_source_alert_is_disabled() -> None:
    cfg = parse_config({"alerts": {"serving": {"target_down": {"enabled": False}}}})
    rules = yaml.safe_load(bundle_files.render(bundle.build(cfg))[alertmanager.PATH])["inhibit_rules"]
    assert not [r for r in rules if "InfersightVLLMTargetDown" in str(r["source_matchers"])]


def test_helm_overlay_wraps_the_bundle(tmp_path: Path, built: dict[str, str]) -> None:
    values = yaml.safe_load(built[helm.VALUES_PATH])
    rules = values["additionalPrometheusRulesMap"]
    assert {name: entry["groups"] for name, entry in rules.items()} == {
        resource_name(rel): groups for rel, groups in rule_groups(built).items()
    }
    promtool_rules(tmp_path, {name: entry["groups"] for name, entry in rules.items()})
    spec = values["prometheus"]["prometheusSpec"]
    for selector in ("rule", "serviceMonitor", "podMonitor", "probe", "scrapeConfig"):
        assert spec[f"{selector}SelectorNilUsesHelmValues"] is False
    assert spec["remoteWrite"] == []
    monitors = {m["name"]: m for m in values["prometheus"]["additionalPodMonitors"]}
    assert set(monitors) == {"infersight-vllm", "infersight-dcgm", "infersight-gpu-exporter", "infersight-moe-exporter"}
    vllm = monitors["infersight-vllm"]
    assert vllm["selector"] == {"matchLabels": {"app.kubernetes.io/name": "vllm"}}
    assert vllm["namespaceSelector"] == {"any": True}
    endpoint = vllm["podMetricsEndpoints"][0]
    assert endpoint["port"] == "http"
    assert endpoint["relabelings"] == [{"action": "replace", "targetLabel": "job", "replacement": "vllm"}]
    assert monitors["infersight-dcgm"]["podMetricsEndpoints"][0]["honorLabels"] is True
    g = values["grafana"]
    assert g["sidecar"]["datasources"]["uid"] == "prometheus"
    provider = g["dashboardProviders"]["dashboardproviders.yaml"]["providers"][0]
    assert provider["folder"] == "infersight"
    assert provider["options"]["path"] == f"/var/lib/grafana/dashboards/{helm.PROVIDER}"
    boards = g["dashboards"][helm.PROVIDER]
    assert {f"{name}.json": b["json"] for name, b in boards.items()} == {
        rel.split("/")[1]: text for rel, text in built.items() if rel.startswith("dashboards/")
    }


def test_helm_overlay_makes_remote_write_and_selectors_a_values_change() -> None:
    cfg = parse_config(
        {
            "deploy": {
                "remote_write_url": "https://mimir.example.com/api/v1/push",
                "kubernetes": {"labels": {"release": "kps"}},
                "targets": {"vllm": {"pod_labels": ["app=llm", "tier=serving"], "namespaces": ["llm"]}},
            }
        }
    )
    values = yaml.safe_load(bundle_files.render(bundle.build(cfg))[helm.VALUES_PATH])
    assert values["prometheus"]["prometheusSpec"]["remoteWrite"] == [{"url": "https://mimir.example.com/api/v1/push"}]
    vllm = values["prometheus"]["additionalPodMonitors"][0]
    assert vllm["selector"] == {"matchLabels": {"app": "llm", "tier": "serving"}}
    assert vllm["namespaceSelector"] == {"matchNames": ["llm"]}
    assert vllm["additionalLabels"] == {"release": "kps"}
    assert all(
        entry["additionalLabels"] == {"release": "kps"} for entry in values["additionalPrometheusRulesMap"].values()
    )


def test_alertmanager_overlay_is_the_alertmanager_config(built: dict[str, str]) -> None:
    overlay = yaml.safe_load(built[helm.ALERTMANAGER_VALUES_PATH])
    assert overlay == {"alertmanager": {"config": yaml.safe_load(built[alertmanager.PATH])}}


def test_kubernetes_manifests(tmp_path: Path, built: dict[str, str]) -> None:
    rules = docs(built[kubernetes.RULES_PATH])
    assert [r["kind"] for r in rules] == ["PrometheusRule"] * len(rule_groups(built))
    assert {r["metadata"]["name"]: r["spec"]["groups"] for r in rules} == {
        resource_name(rel): groups for rel, groups in rule_groups(built).items()
    }
    promtool_rules(tmp_path, {r["metadata"]["name"]: r["spec"]["groups"] for r in rules})
    maps = docs(built[kubernetes.DASHBOARDS_PATH])
    dashboards = {rel.split("/")[1]: text for rel, text in built.items() if rel.startswith("dashboards/")}
    assert {k: v for m in maps for k, v in m["data"].items()} == dashboards
    for m in maps:
        assert m["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert m["metadata"]["annotations"] == {"grafana_folder": "infersight"}
        assert m["metadata"]["namespace"] == "monitoring"
    monitors = docs(built[kubernetes.POD_MONITORS_PATH])
    assert {m["kind"] for m in monitors} == {"PodMonitor"}
    assert len(monitors) == 4


def test_grafana_provisioning_points_dashboards_at_the_provisioned_datasource(built: dict[str, str]) -> None:
    provider = yaml.safe_load(built[grafana.PROVIDER_PATH])
    datasource = yaml.safe_load(built[grafana.DATASOURCE_PATH])
    boards = {rel: json.loads(text) for rel, text in built.items() if rel.startswith("dashboards/")}
    assert provisioning_problems(provider, datasource, boards) == []  # the rules `up`'s Grafana is held to too
    assert provider["providers"][0]["folder"] == "infersight"
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards/infersight"
    source = datasource["datasources"][0]
    assert source["type"] == "prometheus" and source["jsonData"]["timeInterval"] == "15s"
    assert source["url"] == "http://127.0.0.1:9090"  # deploy.prometheus_url


def test_otelcol_defines_every_pipeline_component(built: dict[str, str]) -> None:
    config = yaml.safe_load(built[otelcol.PATH])
    service = config["service"]
    for name in service["extensions"]:
        assert name in config["extensions"]
    for pipeline in service["pipelines"].values():
        for section in ("receivers", "processors", "exporters"):
            for name in pipeline[section]:
                defined = name in config[section] or (section != "processors" and name in config["connectors"])
                assert defined, f"{section}.{name} is used but not defined"
    assert {"k8sattributes", "resourcedetection"} <= set(service["pipelines"]["metrics"]["processors"])
    assert service["pipelines"]["metrics"]["exporters"] == ["prometheusremotewrite"]
    assert service["pipelines"]["traces"]["receivers"] == ["otlp"]
    assert service["pipelines"]["traces"]["processors"] == otelcol.PROCESSORS
    assert config["exporters"]["prometheusremotewrite"]["endpoint"] == "http://127.0.0.1:9090/api/v1/write"


def test_otelcol_scrape_configs_pass_promtool_once_unescaped(tmp_path: Path, built: dict[str, str]) -> None:
    embedded = yaml.safe_load(built[otelcol.PATH])["receivers"]["prometheus"]["config"]
    path = tmp_path / "prometheus.yml"
    path.write_text(dump_yaml(otelcol.unescape(embedded)))
    result = tool("promtool", "check", "config", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert otelcol.unescape(embedded)["scrape_configs"] == yaml.safe_load(built[prometheus.PATH])["scrape_configs"]


def test_otelcol_escapes_every_dollar() -> None:
    relabel = {"source_labels": ["__address__"], "regex": "(.+):\\d+$", "replacement": "$1", "keep": ["$$"]}
    escaped = otelcol.escape(relabel)
    assert escaped == {"source_labels": ["__address__"], "regex": "(.+):\\d+$$", "replacement": "$$1", "keep": ["$$$$"]}
    assert otelcol.unescape(escaped) == relabel


def _otelcol_listeners(cfg: Config) -> list[str]:
    config = otelcol.config(cfg)
    protocols = config["receivers"]["otlp"]["protocols"]
    return [
        protocols["grpc"]["endpoint"],
        protocols["http"]["endpoint"],
        config["extensions"]["health_check"]["endpoint"],
    ]


def test_otelcol_listens_on_loopback_unless_told_otherwise() -> None:
    assert _otelcol_listeners(Config()) == ["127.0.0.1:4317", "127.0.0.1:4318", "127.0.0.1:13133"]
    pod = parse_config({"deploy": {"otelcol": {"listen_address": "0.0.0.0"}}})
    assert _otelcol_listeners(pod) == ["0.0.0.0:4317", "0.0.0.0:4318", "0.0.0.0:13133"]
    mixed = parse_config({"deploy": {"otelcol": {"listen_address": "::", "otlp_http_endpoint": "10.0.0.5:4318"}}})
    assert _otelcol_listeners(mixed) == ["[::]:4317", "10.0.0.5:4318", "[::]:13133"]


@pytest.mark.parametrize("address", ["0.0.0.0:4317", "", "host name", "http://collector"])
def test_otelcol_listen_address_must_be_an_address_or_host_name(address: str) -> None:
    with pytest.raises(ConfigError, match=r"deploy\.otelcol\.listen_address: .*IP address or host name"):
        parse_config({"deploy": {"otelcol": {"listen_address": address}}})


def test_job_follows_the_selector_and_a_contradicting_job_is_refused() -> None:
    cfg = parse_config({"selectors": {"vllm": ['job="llm-serving"', 'namespace=~"llm-.*"']}})
    assert targets.targets(cfg)[0].job == "llm-serving"
    cfg = parse_config({"selectors": {"vllm": ['job=~"llm-.*"']}, "deploy": {"targets": {"vllm": {"job": "vllm"}}}})
    with pytest.raises(ConfigError) as exc:
        targets.targets(cfg)
    assert exc.value.problems[0][0] == "deploy.targets.vllm.job"
    cfg = parse_config({"selectors": {"vllm": ['job=~"llm-.*"']}})
    with pytest.raises(ConfigError, match="no job="):
        targets.targets(cfg)


def test_a_contradicting_job_fails_the_build_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from infersight.cli import main

    cfg = tmp_path / "infersight.yaml"
    cfg.write_text("selectors:\n  dcgm: ['job=~\"gpu-.*\"']\n")
    assert main(["build", "--config", str(cfg), "--out", str(tmp_path / "out")]) == 2
    assert "deploy.targets.dcgm.job" in capsys.readouterr().err


def test_disabled_target_is_not_scraped() -> None:
    cfg = parse_config({"deploy": {"targets": {"moe_exporter": {"enabled": False}}}})
    files = bundle_files.render(bundle.build(cfg))
    assert "infersight-moe" not in {j["job_name"] for j in yaml.safe_load(files[prometheus.PATH])["scrape_configs"]}
    assert len(docs(files[kubernetes.POD_MONITORS_PATH])) == 3


def test_writers_follow_what_the_build_produces() -> None:
    """A pack added later (its rule file and dashboard) reaches every consumer untouched."""
    built = bundle.build(Config())
    extra_group = RuleGroup("infersight-extra.rules", Duration.parse("30s"), (RecordingRule("a:b:c", "up"),))
    extra_board = built.dashboards[0].model | {"uid": "infersight-extra", "title": "Extra"}
    extended = dataclasses.replace(
        built,
        rule_files=(*built.rule_files, RuleFile("extra", "recording_rules", (extra_group,))),
        dashboards=(*built.dashboards, Dashboard("extra", "extra.json", extra_board)),
    )
    out = deploy.artefacts(extended, with_mixin=False)
    assert "../../recording_rules/extra.yaml" in yaml.safe_load(out[prometheus.PATH])["rule_files"]
    values = yaml.safe_load(out[helm.VALUES_PATH])
    assert values["additionalPrometheusRulesMap"]["infersight-recording-rules-extra"]["groups"] == [
        extra_group.to_dict()
    ]
    assert "extra" in values["grafana"]["dashboards"][helm.PROVIDER]
    assert "infersight-recording-rules-extra" in {d["metadata"]["name"] for d in docs(out[kubernetes.RULES_PATH])}
    assert "extra.json" in {k for d in docs(out[kubernetes.DASHBOARDS_PATH]) for k in d["data"]}


def test_deploy_files_are_deterministic(built: dict[str, str]) -> None:
    trace._trace.cache_clear()  # trace the settings again rather than reuse the first result
    again = bundle_files.render(bundle.build(Config()), with_mixin=True)
    assert {k: v for k, v in again.items() if k.startswith("deploy/")} == {
        k: v for k, v in built.items() if k.startswith("deploy/")
    }
