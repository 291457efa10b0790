"""The one label mapping that joins GPU series to vLLM targets (config gpu.join): its default
covers both dcgm-exporter host-label spellings and Kubernetes pods, and every part of it can be
re-pointed. Proven with promtool against the built recording rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight.config import Config, ConfigError, parse_config
from infersight.recording_rules import gpu as gpu_rules
from tests.promtool_runner import promtool_test

_GPU = 'job="dcgm-exporter", gpu="0", UUID="{uuid}", device="nvidia0", modelName="NVIDIA H100 80GB HBM3"'


def _join_test(
    gpus: dict[str, str], targets: list[str], expected: dict[str, tuple[str, str]], cfg: Config
) -> dict[str, Any]:
    """A promtool test. ``gpus``: UUID -> extra labels of its FB_USED series; ``targets``: label
    sets of vLLM targets, the i-th with KV usage 0.(i+1); ``expected``: UUID -> (join key, target
    it must join). Each expected GPU finds its target's KV usage, and no other GPU finds any."""
    series = [
        {"series": f"DCGM_FI_DEV_FB_USED{{{_GPU.format(uuid=uuid)}, {labels}}}", "values": "70000x5"}
        for uuid, labels in gpus.items()
    ]
    for i, target in enumerate(targets):
        series.append({"series": f"up{{{target}}}", "values": "1x5"})
        engine = f'{target}, model_name="m{i}", engine="0"'
        series.append({"series": f"vllm:kv_cache_usage_perc{{{engine}}}", "values": f"0.{i + 1}x5"})
    # The per-GPU expression every GPU alert and the drill-down read (nothing is recorded per GPU).
    kv_of_gpu = (
        f"group by (UUID, infersight_workload) ({gpu_rules.per_gpu(cfg, gpu_rules.FB_USED)})\n"
        "* on (infersight_workload) group_left ()\nworkload:vllm_kv_cache_usage:max"
    )
    samples = [
        {"labels": f'{{UUID="{uuid}", infersight_workload="{key}"}}', "value": (targets.index(target) + 1) / 10}
        for uuid, (key, target) in expected.items()
    ]
    return {
        "rule_files": ["recording_rules/serving.yaml", "recording_rules/gpu.yaml"],
        "evaluation_interval": "30s",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [{"expr": kv_of_gpu, "eval_time": "4m", "exp_samples": samples}],
            }
        ],
    }


def _run(tmp_path: Path, test: dict[str, Any], cfg: Config) -> str:
    test_file = tmp_path / "join.test.yaml"
    test_file.write_text(yaml.safe_dump(test, sort_keys=False))
    result = promtool_test(test_file, tmp_path / "bundle", cfg)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


HOST_1 = 'job="vllm", instance="gpu-node-1:8000"'
HOST_2 = 'job="vllm", instance="gpu-node-2:8000"'
POD = 'job="vllm", instance="10.42.1.17:8000", namespace="llm", pod="vllm-0"'


def test_default_join_covers_both_host_spellings_and_kubernetes_pods(tmp_path: Path) -> None:
    gpus = {
        "GPU-released": 'Hostname="gpu-node-1"',  # dcgm-exporter releases
        "GPU-main": 'hostname="gpu-node-2"',  # dcgm-exporter main branch
        "GPU-pod": 'Hostname="gpu-node-3", namespace="llm", pod="vllm-0", container="vllm"',
        "GPU-free": 'Hostname="gpu-node-3"',  # a Kubernetes GPU no pod holds: no engine
    }
    expected = {
        "GPU-released": ("host/gpu-node-1", HOST_1),
        "GPU-main": ("host/gpu-node-2", HOST_2),
        "GPU-pod": ("pod/llm/vllm-0", POD),
    }
    _run(tmp_path, _join_test(gpus, [HOST_1, HOST_2, POD], expected, Config()), Config())


def test_join_mapping_is_configurable(tmp_path: Path) -> None:
    # The dcgm-exporter scrape did not honour its labels (exported_*), the GPU host label is a
    # relabelled `node`, and vLLM is scraped by FQDN in a `host` label, so the regex drops the domain.
    cfg = parse_config(
        {
            "gpu": {
                "join": {
                    "pod_labels": [
                        {"gpu": "exported_namespace", "vllm": "namespace"},
                        {"gpu": "exported_pod", "vllm": "pod"},
                    ],
                    "gpu_host_labels": ["node"],
                    "vllm_host_label": "host",
                    "host_regex": "([^.:]+)[^:]*(?::[0-9]+)?",
                }
            }
        }
    )
    gpus = {
        "GPU-a": 'node="gpu-node-1.dc1.example.com"',
        "GPU-b": 'node="gpu-node-2", exported_namespace="llm", exported_pod="vllm-0", namespace="gpu-operator"',
    }
    targets = [
        'job="vllm", instance="10.0.0.5:8000", host="gpu-node-1.dc1.example.com"',
        'job="vllm", instance="10.42.1.17:8000", host="ignored", namespace="llm", pod="vllm-0"',
    ]
    expected = {"GPU-a": ("host/gpu-node-1", targets[0]), "GPU-b": ("pod/llm/vllm-0", targets[1])}
    _run(tmp_path, _join_test(gpus, targets, expected, cfg), cfg)


def test_the_join_test_can_fail(tmp_path: Path) -> None:
    # Same GPUs under the default mapping: exported_* and node are not read, nothing joins.
    gpus = {"GPU-b": 'node="gpu-node-2", exported_namespace="llm", exported_pod="vllm-0"'}
    targets = ['job="vllm", instance="10.42.1.17:8000", namespace="llm", pod="vllm-0"']
    test = _join_test(gpus, targets, {"GPU-b": ("pod/llm/vllm-0", targets[0])}, Config())
    test_file = tmp_path / "join.test.yaml"
    test_file.write_text(yaml.safe_dump(test, sort_keys=False))
    result = promtool_test(test_file, tmp_path / "bundle", Config())
    assert result.returncode != 0


@pytest.mark.parametrize(
    ("join", "path"),
    [
        ({"pod_labels": [{"gpu": "1pod", "vllm": "pod"}]}, "gpu.join.pod_labels.0.gpu"),
        ({"pod_labels": []}, "gpu.join.pod_labels"),
        ({"gpu_host_labels": ["host-name"]}, "gpu.join.gpu_host_labels"),
        ({"vllm_host_label": ""}, "gpu.join.vllm_host_label"),
        ({"host_regex": "([^:]+"}, "gpu.join.host_regex"),
        ({"host_regex": "[^:]+"}, "gpu.join.host_regex"),  # no group 1
    ],
)
def test_bad_join_config_names_the_field(join: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"gpu": {"join": join}})
    assert path in {p for p, _ in err.value.problems}
