"""The packs the bundle is made of, listed in one place.

A pack monitors one part of running vLLM (serving, the KV cache, MoE experts, GPUs, the health of
infersight's own exporters). It contributes recording-rule groups, alert groups and dashboards,
each a pure function of the config, and reads a declared set of catalogued metrics from its own
section of infersight.yaml. The bundle builds exactly the packs listed in :data:`PACKS`, in that
order; there is no discovery by module name, so a reader (or a type checker) can follow the build
into every builder from here. ``docs/architecture.md`` says how to add a pack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from infersight.alerts import autoscaling as autoscaling_alerts
from infersight.alerts import exporter_health as exporter_health_alerts
from infersight.alerts import gpu as gpu_alerts
from infersight.alerts import kv_cache as kv_cache_alerts
from infersight.alerts import moe as moe_alerts
from infersight.alerts import serving as serving_alerts
from infersight.alerts import spec_decode as spec_decode_alerts
from infersight.config import Config
from infersight.config.gpu import NEEDED_DCGM_FIELDS
from infersight.dashboards import autoscaling as autoscaling_dashboards
from infersight.dashboards import gpu as gpu_dashboards
from infersight.dashboards import kv_cache as kv_cache_dashboards
from infersight.dashboards import moe as moe_dashboards
from infersight.dashboards import requests as requests_dashboards
from infersight.dashboards import serving as serving_dashboards
from infersight.dashboards import spec_decode as spec_decode_dashboards
from infersight.recording_rules import autoscaling as autoscaling_rules
from infersight.recording_rules import gpu as gpu_rules
from infersight.recording_rules import kv_cache as kv_cache_rules
from infersight.recording_rules import kv_connectors as kv_connectors_rules
from infersight.recording_rules import moe as moe_rules
from infersight.recording_rules import serving as serving_rules
from infersight.recording_rules import spec_decode as spec_decode_rules
from infersight.rules import RuleGroup
from infersight.traces.attributes import STAGES, stage_histogram

GroupsBuilder = Callable[[Config], list[RuleGroup]]
DashboardsBuilder = Callable[[Config], dict[str, dict[str, Any]]]

# The two kinds of rule file a pack may write: recording_rules/<pack>.yaml and alerts/<pack>.yaml.
RULE_KINDS = ("recording_rules", "alerts")


def _together(*builders: DashboardsBuilder) -> DashboardsBuilder:
    """One pack's dashboards from several modules (a module per dashboard)."""

    def build(cfg: Config) -> dict[str, dict[str, Any]]:
        return {file: board for builder in builders for file, board in builder(cfg).items()}

    return build


@dataclass(frozen=True)
class Pack:
    name: str  # the bundle's files are named after it: alerts/<name>.yaml
    config_sections: tuple[str, ...]  # top-level keys of infersight.yaml whose settings it reads
    reads: frozenset[str]  # catalog metric names its expressions select (tests hold it to this)
    recording_groups: GroupsBuilder | None = None
    alert_groups: GroupsBuilder | None = None
    dashboards: DashboardsBuilder | None = None

    def groups(self, kind: str) -> GroupsBuilder | None:
        """The builder of one rule kind ("recording_rules" or "alerts"), None when the pack has none."""
        if kind not in RULE_KINDS:
            raise ValueError(f"rule kind {kind!r} is not one of {RULE_KINDS}")
        return self.recording_groups if kind == "recording_rules" else self.alert_groups


_VLLM_SERVING = frozenset(
    {
        "vllm:request_success_total",
        "vllm:time_to_first_token_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:e2e_request_latency_seconds",
        "vllm:request_prompt_tokens",
        "vllm:request_generation_tokens",
        "vllm:request_max_num_generation_tokens",
        "vllm:request_time_per_output_token_seconds",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:num_preemptions_total",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:kv_cache_usage_perc",
        "vllm:engine_healthy",
        "vllm:lora_requests_info",
        "vllm:estimated_flops_per_gpu_total",
        "vllm:estimated_read_bytes_per_gpu_total",
        "vllm:estimated_write_bytes_per_gpu_total",
        "http_requests_total",
        "http_request_duration_seconds",
        requests_dashboards.PREFILL_COMPUTED_TOKENS,
        # The requests dashboard's mean time per phase.
        "vllm:request_queue_time_seconds",
        "vllm:request_prefill_time_seconds",
        "vllm:request_decode_time_seconds",
        *requests_dashboards.OPERATIONS,
        "process_cpu_seconds_total",
        "process_max_fds",
        "process_open_fds",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
        "up",
        *(stage_histogram(stage) for stage, _ in STAGES),
    }
)

# What the KV cache pack reads of the KV connectors' families (recording_rules.kv_connectors and the
# raw gauges its dashboard rows read).
_KV_CONNECTOR_READS = frozenset(
    {
        *(metric for metric, _ in kv_connectors_rules.TRANSFER_RATES.values()),
        *(metric for metric, _, _ in kv_connectors_rules.NIXL_HISTOGRAMS),
        *(metric for metric, _ in kv_connectors_rules.LOOKUP_HISTOGRAMS),
        *(metric for pair in kv_connectors_rules.CACHES.values() for metric in pair),
        kv_connectors_rules.SAVE_OUTCOMES,
        kv_connectors_rules.KV_FETCH_BY_STAGE,
        "vllm:kv_offload_cpu_cache_usage_perc",
        "vllm:kv_offload_cpu_cache_write_usage_perc",
        "vllm:kv_offload_cpu_cache_read_usage_perc",
        "vllm:simple_kv_offload_used_blocks",
        "vllm:simple_kv_offload_pending_store_blocks",
    }
)

PACKS: tuple[Pack, ...] = (
    Pack(
        "serving",
        config_sections=("selectors", "intervals", "buckets", "slo", "alerts", "dashboards"),
        reads=_VLLM_SERVING,
        recording_groups=serving_rules.groups,
        alert_groups=serving_alerts.groups,
        dashboards=_together(serving_dashboards.dashboards, requests_dashboards.dashboards),
    ),
    Pack(
        "kv_cache",
        config_sections=("kv_cache",),
        reads=frozenset(
            {
                "vllm:admission_rejections_total",
                "vllm:cache_config_info",
                "vllm:engine_sleep_state",
                "vllm:iteration_tokens_total",
                "vllm:kv_block_idle_before_evict_seconds",
                "vllm:kv_block_lifetime_seconds",
                "vllm:kv_block_reuse_gap_seconds",
                *_KV_CONNECTOR_READS,
                "vllm:prompt_tokens_by_source_total",
                "vllm:prompt_tokens_cached_by_source_total",
                "vllm:prompt_tokens_cached_total",
                "vllm:prompt_tokens_total",
                "vllm:kv_cache_usage_perc",
                "vllm:num_preemptions_total",
                "vllm:num_requests_waiting",
                "vllm:num_requests_waiting_by_reason",
                "vllm:prefix_cache_hits_total",
                "vllm:prefix_cache_queries_total",
                "vllm:request_decode_time_seconds",
                "vllm:request_num_preemptions",
                "vllm:request_prefill_time_seconds",
                "vllm:request_queue_time_seconds",
            }
        ),
        recording_groups=kv_cache_rules.groups,
        alert_groups=kv_cache_alerts.groups,
        dashboards=kv_cache_dashboards.dashboards,
    ),
    Pack(
        "spec_decode",
        config_sections=("spec_decode",),
        reads=frozenset(
            {
                spec_decode_rules.ACCEPTED_METRIC,
                spec_decode_rules.DRAFT_TOKENS_METRIC,
                spec_decode_rules.DRAFTS_METRIC,
                spec_decode_rules.PER_POSITION_METRIC,
            }
        ),
        recording_groups=spec_decode_rules.groups,
        alert_groups=spec_decode_alerts.groups,
        dashboards=spec_decode_dashboards.dashboards,
    ),
    Pack(
        "moe",
        config_sections=("moe",),
        reads=frozenset(
            {
                "infersight_moe_expert_tokens_total",
                "infersight_moe_exporter_window_seconds",
                "infersight_moe_layer_experts",
                "infersight_moe_layer_top_k",
                "infersight_moe_layer_window_seconds",
                "infersight_moe_layer_window_tokens",
                "infersight_moe_layer_share_variance",
                "infersight_moe_layer_max_share",
                "infersight_moe_layer_dead_experts",
            }
        ),
        recording_groups=moe_rules.groups,
        alert_groups=moe_alerts.groups,
        dashboards=moe_dashboards.dashboards,
    ),
    Pack(
        "gpu",
        config_sections=("gpu",),
        reads=frozenset(
            {
                # the fields with no fallback (the coverage alert's default), and the framebuffer
                # fields the total falls back to
                *NEEDED_DCGM_FIELDS,
                "DCGM_FI_DEV_FB_RESERVED",
                "DCGM_FI_DEV_FB_TOTAL",
                "DCGM_FI_DEV_FB_USED",
                "infersight_gpu_process_memory_bytes",
                "process_start_time_seconds",
                "up",
            }
        ),
        recording_groups=gpu_rules.groups,
        alert_groups=gpu_alerts.groups,
        dashboards=gpu_dashboards.dashboards,
    ),
    Pack(
        "autoscaling",
        config_sections=("autoscaling",),
        reads=frozenset(
            {
                "kube_deployment_status_replicas",
                "kube_statefulset_status_replicas",
                "vllm:kv_cache_usage_perc",
                "vllm:num_requests_running",
                "vllm:num_requests_waiting",
            }
        ),
        recording_groups=autoscaling_rules.groups,
        alert_groups=autoscaling_alerts.groups,
        dashboards=autoscaling_dashboards.dashboards,
    ),
    Pack(
        "exporter_health",
        config_sections=("exporters",),
        reads=frozenset(
            {
                "infersight_exporter_errors_total",
                "infersight_exporter_last_success_timestamp_seconds",
                "infersight_exporter_up",
                "up",
            }
        ),
        alert_groups=exporter_health_alerts.groups,
    ),
)


def by_name(name: str) -> Pack:
    for pack in PACKS:
        if pack.name == name:
            return pack
    raise KeyError(f"no pack named {name!r}; the packs are {[p.name for p in PACKS]}")
