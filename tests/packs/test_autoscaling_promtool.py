"""promtool unit tests of the autoscaling signals and the absent-signal alert, and proof that
they can fail."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from infersight.config import parse_config
from tests.packs.autoscaling_configs import THREE_MODELS
from tests.promtool_runner import promtool_test

TEST_FILE = Path(__file__).parent / "promtool" / "autoscaling.test.yaml"


def test_autoscaling_rules_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(TEST_FILE, tmp_path, parse_config(THREE_MODELS))
    assert result.returncode == 0, result.stdout + result.stderr


def _changed(model: int, **changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(THREE_MODELS)
    data["autoscaling"]["models"][model].update(changes)
    return data


@pytest.mark.parametrize(
    ("expected", "data"),
    [
        ("namespace_model:vllm_autoscaling_target:value", _changed(0, target=4)),
        ("namespace_model:vllm_autoscaling_desired_replicas:value", _changed(0, max_replicas=3)),
        ("namespace_model:vllm_autoscaling_signal:avg1m", _changed(2, max_num_seqs=8)),  # fill halves
        (
            "namespace_model:vllm_replicas:count",
            _changed(0, workload={"kind": "Deployment", "name": "vllm-tiny-moe", "namespace": "llm-b"}),
        ),
        (
            "InfersightAutoscalingSignalAbsent",
            {"autoscaling": {**THREE_MODELS["autoscaling"], "alerts": {"signal_absent": {"for": "10m"}}}},
        ),
    ],
)
def test_the_unit_tests_catch_a_changed_rule(tmp_path: Path, expected: str, data: dict[str, Any]) -> None:
    result = promtool_test(TEST_FILE, tmp_path, parse_config(data))
    assert result.returncode != 0
    assert expected in result.stdout + result.stderr
