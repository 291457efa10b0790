"""The KV cache dashboard's rows for KV connectors (``--kv-transfer-config``): KV loads and the
external prefix cache of any loading connector, NIXL transfers (disaggregated prefill), the
OffloadingConnector's CPU tier and the SimpleCPUOffloadConnector's pool.

Each panel names the connector its series need instead of showing "No data". Rates, ratios and
quantiles are read from the per-model recordings (``recording_rules.kv_connectors``); the few
gauges per engine are read raw at the instant, where a recording would cost the same read."""

from __future__ import annotations

from collections.abc import Sequence

from grafana_foundation_sdk.builders.timeseries import Panel as TimeseriesPanel

from infersight import conventions, promql
from infersight.config import Config
from infersight.dashboards.common import Query, Section, filters, model_quantiles, timeseries
from infersight.recording_rules import kv_connectors as rules

MODEL_FILTERS = filters("job", "model_name")
INSTANCE_FILTERS = filters("job", "model_name", "instance")
_WHO = "{{model_name}} @ {{instance}}"
_NEEDS = "No {what} here: these series need --kv-transfer-config with {connector}"
LOADING = _NEEDS.format(what="KV connector", connector="a connector that loads KV (kv_consumer or kv_both)")
NIXL = _NEEDS.format(what="NIXL transfers", connector="NixlConnector (disaggregated prefill)")
OFFLOAD = _NEEDS.format(what="KV offload", connector="OffloadingConnector (KV offload to CPU)")
SIMPLE = _NEEDS.format(what="CPU offload pool", connector="SimpleCPUOffloadConnector")


def _rate(cfg: Config, kind: str) -> str:
    return promql.recorded(rules.transfer_rate(cfg, kind), MODEL_FILTERS)


def _per(cfg: Config, numerator: str, denominator: str) -> str:
    """One recorded per-model rate over another, only where the second flows."""
    return f"{_rate(cfg, numerator)}\n/\n({_rate(cfg, denominator)} > 0)"


def _rates(
    cfg: Config,
    title: str,
    description: str,
    unit: str,
    series: Sequence[tuple[str, str]],
    no_value: str,
    *,
    width: int,
) -> TimeseriesPanel:
    """A panel of recorded per-model rates: (TRANSFER_RATES kind, legend prefix) each."""
    queries = [Query(_rate(cfg, kind), f"{prefix} {{{{model_name}}}}") for kind, prefix in series]
    return timeseries(title, description, unit, queries, width=width, no_value=no_value)


def _raw_by_instance(cfg: Config, op: str, metric: str) -> str:
    return promql.agg(op, conventions.INSTANCE, promql.series(metric, [*cfg.selectors.vllm, *INSTANCE_FILTERS]))


def _loading(cfg: Config) -> Section:
    return Section(
        "KV connector",
        [
            timeseries(
                "Requests waiting on KV loads",
                "Waiting requests per model by the stage of their KV load from the connector: not started, "
                "in progress, or loaded and not yet running. A growing in-progress count is a slow or stuck "
                "transfer.",
                "short",
                [Query(promql.recorded(rules.KV_FETCHES, MODEL_FILTERS), "{{stage}} {{model_name}}")],
                stacked=True,
                no_value=LOADING,
            ),
            timeseries(
                "External prefix-cache hit ratio",
                f"Prompt tokens the connector's external cache held over those looked up in it, per model over "
                f"{cfg.intervals.rate}. The local prefix cache is looked up first; this is what the connector "
                "saved on the rest.",
                "percentunit",
                [
                    Query(
                        promql.recorded(rules.cache_hit_ratio(cfg, "external_prefix_cache"), MODEL_FILTERS),
                        "{{model_name}}",
                    )
                ],
                max_val=1,
                no_value=LOADING,
            ),
        ],
    )


def _nixl(cfg: Config) -> Section:
    return Section(
        "NIXL transfers",
        [
            timeseries(
                "NIXL transfer throughput",
                "Bytes per second per model moved by NIXL, and the bytes per second of transfer time: the link "
                "speed one transfer sees, which falls when the network or the remote side is slow.",
                "Bps",
                [
                    Query(_rate(cfg, "nixl_bytes"), "moved {{model_name}}"),
                    Query(_per(cfg, "nixl_bytes", "nixl_transfer_seconds"), "per transfer {{model_name}}"),
                ],
                width=8,
                no_value=NIXL,
            ),
            _rates(
                cfg,
                "NIXL transfers per second",
                "Finished KV transfers per second per model.",
                "short",
                [("nixl_transfers", "transfers")],
                NIXL,
                width=8,
            ),
            timeseries(
                "NIXL transfer time",
                f"Time of one KV transfer, p50 and p95 per model over {cfg.intervals.rate}: slow transfers "
                "stall decode on the receiving side.",
                "s",
                model_quantiles(cfg, rules.NIXL_XFER_TIME, rules.TRANSFER_QUANTILES),
                width=8,
                no_value=NIXL,
            ),
            *(
                timeseries(
                    f"NIXL {title.lower()}",
                    f"p50 and p95 per model over {cfg.intervals.rate}.",
                    unit,
                    model_quantiles(cfg, metric, rules.TRANSFER_QUANTILES),
                    width=8,
                    no_value=NIXL,
                )
                for metric, title, unit in rules.NIXL_HISTOGRAMS
            ),
            _rates(
                cfg,
                "NIXL failures",
                "Per model and second: failed transfers (handshakes included), completion notifications that "
                "failed to send, requests whose KV expired before the decoder fetched it, and notifications "
                "that came after that expiry.",
                "short",
                [
                    ("nixl_failed_transfers", "failed transfers"),
                    ("nixl_failed_notifications", "failed notifications"),
                    ("nixl_expired_requests", "expired KV"),
                    ("nixl_late_notifications", "late notifications"),
                ],
                NIXL,
                width=24,
            ),
        ],
    )


def _offload(cfg: Config) -> Section:
    return Section(
        "KV offload",
        [
            _rates(
                cfg,
                "KV offload traffic",
                "Bytes per second per model stored to the offload tier and loaded back from it. Loads are "
                "prefills saved; stores without later loads only cost bandwidth.",
                "Bps",
                [("offload_store_bytes", "store"), ("offload_load_bytes", "load")],
                OFFLOAD,
                width=8,
            ),
            *(
                timeseries(
                    title,
                    description,
                    unit,
                    [
                        Query(_per(cfg, f"offload_{way}_bytes", f"offload_{way}{per}"), f"{way} {{{{model_name}}}}")
                        for way in ("store", "load")
                    ],
                    width=8,
                    no_value=OFFLOAD,
                )
                for title, description, unit, per in (
                    (
                        "Offload transfer bandwidth",
                        "Bytes per second of transfer time per model: the copy speed between GPU and the offload tier.",
                        "Bps",
                        "_seconds",  # over offload_store_seconds, offload_load_seconds
                    ),
                    ("Mean offload transfer size", "Bytes per store and per load, per model.", "bytes", "s"),
                )
            ),
            timeseries(
                "Offload lookup latency",
                f"p50 and p99 per model over {cfg.intervals.rate}: one lookup call in the scheduler (sync), and "
                "the wait of a deferred lookup for its answer (async), which delays the request's admission.",
                "s",
                [
                    q
                    for metric, kind in rules.LOOKUP_HISTOGRAMS
                    for q in model_quantiles(cfg, metric, rules.LOOKUP_QUANTILES, f"{kind} ")
                ],
                width=8,
                no_value=OFFLOAD,
            ),
            timeseries(
                "CPU offload cache usage",
                "Fullest engine of each server: in use, and pinned by stores and by loads in flight. A full "
                "offload cache turns stores into allocation failures.",
                "percentunit",
                [
                    Query(_raw_by_instance(cfg, "max", "vllm:kv_offload_cpu_cache_usage_perc"), "used " + _WHO),
                    Query(_raw_by_instance(cfg, "max", "vllm:kv_offload_cpu_cache_write_usage_perc"), "stores " + _WHO),
                    Query(_raw_by_instance(cfg, "max", "vllm:kv_offload_cpu_cache_read_usage_perc"), "loads " + _WHO),
                ],
                width=8,
                max_val=1,
                no_value=OFFLOAD,
            ),
            _rates(
                cfg,
                "Failed and skipped offload stores",
                "Per model and second: stores that found no room in the offload tier, and stores skipped "
                "under the configured reuse threshold.",
                "short",
                [("offload_allocation_failures", "allocation failed"), ("offload_stores_skipped", "skipped")],
                OFFLOAD,
                width=8,
            ),
        ],
    )


def _simple_offload(cfg: Config) -> Section:
    return Section(
        "Simple CPU offload",
        [
            timeseries(
                "Store admission outcomes",
                "Store decisions per second per model by outcome (eager hand-off stores only).",
                "short",
                [
                    Query(
                        promql.recorded(rules.save_outcomes(cfg), MODEL_FILTERS),
                        "{{outcome}} {{model_name}}",
                    )
                ],
                width=8,
                stacked=True,
                no_value=SIMPLE,
            ),
            _rates(
                cfg,
                "Blocks restored from offload",
                "KV blocks per second per model loaded back from the CPU pool: prefill work saved.",
                "short",
                [("simple_offload_loaded_blocks", "restored")],
                SIMPLE,
                width=8,
            ),
            timeseries(
                "Offload pool blocks",
                "Per server: pool blocks pinned by transfers or cache hits, and blocks in stores not yet "
                "finished. A pending count that only grows is a stuck transfer.",
                "short",
                [
                    Query(_raw_by_instance(cfg, "sum", "vllm:simple_kv_offload_used_blocks"), "pinned " + _WHO),
                    Query(
                        _raw_by_instance(cfg, "sum", "vllm:simple_kv_offload_pending_store_blocks"),
                        "pending stores " + _WHO,
                    ),
                ],
                width=8,
                no_value=SIMPLE,
            ),
        ],
    )


def sections(cfg: Config) -> list[Section]:
    return [_loading(cfg), _nixl(cfg), _offload(cfg), _simple_offload(cfg)]
