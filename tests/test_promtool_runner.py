"""The promtool runner refuses a test file whose group_eval_order names a group its rule files
lack: promtool itself accepts it, and the group then silently loses its place in the order."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.promtool_runner import promtool_test


def test_a_group_eval_order_naming_a_missing_group_is_refused(tmp_path: Path) -> None:
    test_file = tmp_path / "gpu.test.yaml"
    order = ["infersight-gpu.rules", "infersight-gpu-transfer.rules"]
    test_file.write_text(yaml.safe_dump({"rule_files": ["recording_rules/gpu.yaml"], "group_eval_order": order}))
    with pytest.raises(AssertionError, match=r"\['infersight-gpu-transfer.rules'\]"):
        promtool_test(test_file, tmp_path / "bundle")
