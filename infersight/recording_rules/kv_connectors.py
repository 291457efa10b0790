"""What KV connectors (``--kv-transfer-config``) move and how they fare, per model: NIXL transfers
(disaggregated prefill), offloading to CPU (OffloadingConnector, SimpleCPUOffloadConnector), the
external prefix cache any loading connector answers, and the waiting requests' KV loads.

None of these series exist without a connector, so on most fleets these rules read nothing and
record nothing. Everything is per model: a handful of series per model where a connector runs.
"""

from __future__ import annotations

from infersight import conventions, promql
from infersight.config import Config
from infersight.conventions import MODEL
from infersight.recording_rules.histograms import quantile_rules
from infersight.recording_rules.ratios import counter_ratio
from infersight.rules import RecordingRule

NIXL_XFER_TIME = "vllm:nixl_xfer_time_seconds"
# Per-transfer histograms drawn as p50/p95 per model.
NIXL_HISTOGRAMS = (
    ("vllm:nixl_bytes_transferred", "Bytes per transfer", "bytes"),
    ("vllm:nixl_post_time_seconds", "Transfer post time", "s"),
    ("vllm:nixl_num_descriptors", "Descriptors per transfer", "short"),
)
TRANSFER_QUANTILES = (0.5, 0.95)
LOOKUP_HISTOGRAMS = (
    ("vllm:kv_offload_lookup_sync_delay_seconds", "sync"),
    ("vllm:kv_offload_lookup_async_delay_seconds", "async"),
)
LOOKUP_QUANTILES = (0.5, 0.99)
# Per model and second. kind -> (family, series suffix): a histogram's _sum or _count counts bytes,
# seconds or transfers like a counter does.
TRANSFER_RATES = {
    "offload_load_bytes": ("vllm:kv_offload_load_bytes_total", ""),
    "offload_store_bytes": ("vllm:kv_offload_store_bytes_total", ""),
    "offload_load_seconds": ("vllm:kv_offload_load_time_total", ""),
    "offload_store_seconds": ("vllm:kv_offload_store_time_total", ""),
    "offload_loads": ("vllm:kv_offload_load_size", "_count"),
    "offload_stores": ("vllm:kv_offload_store_size", "_count"),
    "offload_allocation_failures": ("vllm:kv_offload_allocation_failure_total", ""),
    "offload_stores_skipped": ("vllm:kv_offload_stores_skipped_total", ""),
    "simple_offload_loaded_blocks": ("vllm:simple_kv_offload_load_blocks_total", ""),
    "nixl_bytes": ("vllm:nixl_bytes_transferred", "_sum"),
    "nixl_transfers": (NIXL_XFER_TIME, "_count"),
    "nixl_transfer_seconds": (NIXL_XFER_TIME, "_sum"),
    "nixl_failed_transfers": ("vllm:nixl_num_failed_transfers_total", ""),
    "nixl_failed_notifications": ("vllm:nixl_num_failed_notifications_total", ""),
    "nixl_expired_requests": ("vllm:nixl_num_kv_expired_reqs_total", ""),
    "nixl_late_notifications": ("vllm:nixl_num_notifications_after_expiry_total", ""),
}
SAVE_OUTCOMES = "vllm:simple_kv_offload_save_outcomes_total"
KV_FETCH_BY_STAGE = "vllm:num_requests_kv_fetch_by_stage"
KV_FETCHES = conventions.record_name("model", KV_FETCH_BY_STAGE, "sum")
# (hits, queries) of the caches besides the local prefix cache, by the name their ratio records.
CACHES = {
    "external_prefix_cache": ("vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_queries_total"),
    "mm_cache": ("vllm:mm_cache_hits_total", "vllm:mm_cache_queries_total"),
}


def transfer_rate(cfg: Config, kind: str) -> str:
    """Per model and second: one of TRANSFER_RATES."""
    return conventions.record_name("model", f"vllm:kv_{kind}", conventions.op_rate(cfg))


def save_outcomes(cfg: Config) -> str:
    return conventions.record_name("model", SAVE_OUTCOMES.removesuffix("_total"), conventions.op_rate(cfg))


def cache_hit_ratio(cfg: Config, cache: str) -> str:
    """Hits over lookups per model of one of CACHES; nothing while it is not looked up."""
    return conventions.record_name("model", f"vllm:{cache}_hits", "ratio_" + conventions.op_rate(cfg))


def rules(cfg: Config) -> list[RecordingRule]:
    sel, w = cfg.selectors.vllm, cfg.scaled(cfg.intervals.rate)
    out = [
        RecordingRule(transfer_rate(cfg, kind), promql.sum_by(MODEL, promql.rate(metric, w, sel, suffix)))
        for kind, (metric, suffix) in TRANSFER_RATES.items()
    ]
    out.append(
        RecordingRule(save_outcomes(cfg), promql.sum_by((*MODEL, "outcome"), promql.rate(SAVE_OUTCOMES, w, sel)))
    )
    out.append(RecordingRule(KV_FETCHES, promql.sum_by((*MODEL, "stage"), promql.series(KV_FETCH_BY_STAGE, sel))))
    out += [
        counter_ratio(cfg, cache_hit_ratio(cfg, c), hits, q, cfg.intervals.rate, MODEL)
        for c, (hits, q) in CACHES.items()
    ]
    out += quantile_rules(cfg, NIXL_XFER_TIME, TRANSFER_QUANTILES)
    for metric, _, _ in NIXL_HISTOGRAMS:
        out += quantile_rules(cfg, metric, TRANSFER_QUANTILES)
    for metric, _ in LOOKUP_HISTOGRAMS:
        out += quantile_rules(cfg, metric, LOOKUP_QUANTILES)
    return out
