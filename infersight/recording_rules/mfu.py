"""vLLM's model-FLOPs and memory-traffic estimates per GPU (``--enable-mfu-metrics``), per engine.

vLLM computes them from the model config, not from the device, and exports the counters at 0
without the flag: the rates are recorded only above 0, so a fleet without the flag records nothing
and the dashboard says why instead of drawing zeros. ``per_gpu`` is vLLM's average over the GPUs of
an engine (tensor parallel ranks), so engines are never summed.
"""

from __future__ import annotations

from infersight import conventions, promql
from infersight.config import Config
from infersight.rules import RecordingRule

ESTIMATES = {
    "flops": "vllm:estimated_flops_per_gpu_total",
    "read_bytes": "vllm:estimated_read_bytes_per_gpu_total",
    "write_bytes": "vllm:estimated_write_bytes_per_gpu_total",
}


def per_gpu(cfg: Config, kind: str) -> str:
    return conventions.record_name("engine", f"vllm:estimated_{kind}_per_gpu", conventions.op_rate(cfg))


def rules(cfg: Config) -> list[RecordingRule]:
    w = cfg.scaled(cfg.intervals.rate)
    return [
        RecordingRule(
            per_gpu(cfg, kind), f"{promql.sum_by(conventions.ENGINE, promql.rate(metric, w, cfg.selectors.vllm))} > 0"
        )
        for kind, metric in ESTIMATES.items()
    ]
