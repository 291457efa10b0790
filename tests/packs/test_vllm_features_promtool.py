"""promtool unit tests of the recordings over vLLM's newer families (speculative decoding, waiting
by reason, cached prompt tokens by source, KV block residency, MFU) against the production build,
and proof that they can fail: recordings that miss a server's second engine break the spec-decode
and waiting-by-reason cases (the others are held by their exact values alone)."""

from __future__ import annotations

from pathlib import Path

from infersight.config import parse_config
from tests.promtool_runner import promtool_test

TEST_FILE = Path(__file__).parent / "promtool" / "vllm_features.test.yaml"


def test_the_newer_families_recordings_pass_promtool_unit_tests(tmp_path: Path) -> None:
    result = promtool_test(TEST_FILE, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_unit_tests_catch_recordings_that_drop_an_engine(tmp_path: Path) -> None:
    # A selector that keeps engine 0 only: the per-server sums lose the first server's second engine.
    cfg = parse_config({"selectors": {"vllm": ['job="vllm"', 'engine="0"']}})
    result = promtool_test(TEST_FILE, tmp_path, cfg)
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "instance:vllm_spec_decode_num_drafts:rate5m" in out and "model:vllm_num_requests_waiting_by_reason" in out
