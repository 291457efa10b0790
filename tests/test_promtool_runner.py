"""The promtool runner orders the rule groups itself: each after the groups whose recordings it
reads. promtool's own order, where a test file lists none (or lists some), is random, and a case
whose expected value depends on a recording written at the same instant then fails by chance
(the GPU throttling case once read a share of 3/20 instead of 4/21 and failed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.config import parse_config
from tests.packs.autoscaling_configs import THREE_MODELS
from tests.promtool_runner import eval_order, promtool_test

EVERY_PACK = {**THREE_MODELS, "moe": {"models": ["tiny-moe"]}}


def _group(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "rules": list(rules)}


def test_a_test_file_with_its_own_order_is_refused(tmp_path: Path) -> None:
    test_file = tmp_path / "gpu.test.yaml"
    order = ["infersight-gpu.rules"]
    test_file.write_text(yaml.safe_dump({"rule_files": ["recording_rules/gpu.yaml"], "group_eval_order": order}))
    with pytest.raises(AssertionError, match="the runner orders the groups"):
        promtool_test(test_file, tmp_path / "bundle")


def test_rule_files_the_build_lacks_are_refused(tmp_path: Path) -> None:
    test_file = tmp_path / "gpu.test.yaml"
    test_file.write_text(yaml.safe_dump({"rule_files": ["recording_rules/gpu-transfer.yaml"]}))
    with pytest.raises(AssertionError, match=r"\['recording_rules/gpu-transfer.yaml'\]"):
        promtool_test(test_file, tmp_path / "bundle")


def test_a_reader_comes_after_its_writer_whatever_the_file_order() -> None:
    groups = [
        _group("alerts", {"alert": "A", "expr": 'ratio{slo="ttft"} > 1'}),
        _group("ratio-itl", {"record": "ratio", "expr": "x", "labels": {"slo": "itl"}}),
        _group("ratio-ttft", {"record": "ratio", "expr": "y", "labels": {"slo": "ttft"}}),
        _group("sources", {"record": "y", "expr": "z"}),
    ]
    # ratio-itl writes another slo than the alert reads: it keeps its place.
    assert eval_order(groups) == ["ratio-itl", "sources", "ratio-ttft", "alerts"]


def test_groups_that_read_each_other_are_refused() -> None:
    groups = [_group("a", {"record": "x", "expr": "y"}), _group("b", {"record": "y", "expr": "x"})]
    with pytest.raises(AssertionError, match=r"read each other's recordings: \['a', 'b'\]"):
        eval_order(groups)


@pytest.mark.parametrize("config", [{}, EVERY_PACK], ids=["default", "every pack"])
def test_every_group_of_the_bundle_is_evaluated_after_the_groups_it_reads(config: dict[str, Any]) -> None:
    files = bundle_files.render(bundle.build(parse_config(config)), with_deploy=False)
    groups = [g for rel, text in files.items() if rel.endswith(".yaml") for g in yaml.safe_load(text)["groups"]]
    order = eval_order(groups)
    assert sorted(order) == sorted(g["name"] for g in groups)
    recorded_in = {r["record"]: g["name"] for g in groups for r in g["rules"] if "record" in r}
    # The throttling alert reads the throttle group's recordings: the flaky case of the GPU tests.
    assert order.index(recorded_in["gpu:dcgm_clock_throttle:active"]) < order.index("infersight-gpu-slow.alerts")
    assert order.index("infersight-serving.rules") < order.index("infersight-serving-patient.rules")
