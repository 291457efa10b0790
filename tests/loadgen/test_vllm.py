"""The load generator against a real vLLM (tiny MoE, max_model_len 512): prompts are exactly the
requested number of the target's tokens, ignore_eos gives exactly the output tokens, ITL comes
from vLLM's per-chunk usage, and over-long prompts are counted as HTTP 400."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from infersight.loadgen.prompts import TokenizerVocabulary, WordVocabulary
from infersight.loadgen.results import REQUESTS_CSV
from infersight.loadgen.runner import RunOptions, run
from infersight.stack.vllm_server import VLLMServer
from tests.loadgen.helpers import scenario

pytestmark = pytest.mark.e2e


def test_scenario_against_vllm(vllm_moe_small_kv: VLLMServer, tiny_moe_model: Path, tmp_path: Path) -> None:
    sc = scenario(
        [
            {"name": "ok", "duration": "3s", "rate": 2, "prompt_tokens": 40, "output_tokens": 12},
            {"name": "closed", "duration": "2s", "concurrency": 1, "prompt_tokens": 20, "output_tokens": 6},
            {"name": "too_long", "duration": "1s", "rate": 3, "arrival": "constant", "prompt_tokens": 600},
        ],
        limits={"max_duration": "60s", "request_timeout": "30s"},
        validity={"max_schedule_lag_p99": "1s"},  # correctness here; lag is the benchmark's business
    )
    opts = RunOptions(
        target=vllm_moe_small_kv.url,
        out_dir=tmp_path,
        vocabulary=TokenizerVocabulary(tiny_moe_model),
        handle_signals=False,
    )
    summary = run(sc, opts).run["summary"]
    ok, closed, too_long = summary["stages"]
    assert ok["sent"] >= 1 and ok["succeeded"] == ok["sent"], ok["errors"]
    assert ok["prompt_tokens"]["min"] == ok["prompt_tokens"]["max"] == 40  # in the target's tokens, exactly
    assert ok["completion_tokens_total"] == 12 * ok["succeeded"]  # ignore_eos + min_tokens
    assert ok["itl_sources"] == {"usage": ok["succeeded"]}
    # One ITL per token after the first content chunk. A loaded machine may pack several tokens
    # into that chunk (vLLM coalesces outputs a slow reader has not taken yet); they get none.
    rows = [r for r in csv.DictReader((tmp_path / REQUESTS_CSV).open()) if r["stage"] == "ok"]
    first_chunk = [int(r["first_chunk_tokens"]) for r in rows]
    assert len(rows) == ok["succeeded"] and all(1 <= n <= 12 for n in first_chunk), first_chunk
    assert ok["itl_s"]["count"] == sum(12 - n for n in first_chunk)
    assert ok["ttft_s"]["p50"] is not None and ok["ttft_s"]["p50"] > 0
    assert closed["succeeded"] >= 1 and closed["errors"] == {}
    assert too_long["errors"] == {"400": 3} and too_long["succeeded"] == 0


def test_chat_endpoint_against_vllm(vllm_moe_small_kv: VLLMServer, tmp_path: Path) -> None:
    sc = scenario(
        [{"name": "chat", "duration": "2s", "rate": 2, "arrival": "constant", "prompt_tokens": 16, "output_tokens": 8}],
        endpoint="chat",
        limits={"max_duration": "60s"},
        validity={"max_schedule_lag_p99": "1s"},
    )
    opts = RunOptions(target=vllm_moe_small_kv.url, out_dir=tmp_path, vocabulary=WordVocabulary(), handle_signals=False)
    stage = run(sc, opts).run["summary"]["stages"][0]
    assert stage["succeeded"] == stage["sent"] == 4, stage["errors"]
    assert stage["completion_tokens_total"] == 32
    assert stage["itl_sources"] == {"usage": 4}
