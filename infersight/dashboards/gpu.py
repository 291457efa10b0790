"""GPUs: a fleet view per node, then one node's GPUs: utilization, framebuffer and leak trend
with time to OOM, per-process memory, power, temperature, clocks and throttling, XID and ECC
errors, and the load of the engines on them.

The fleet rows read the ``node`` recordings. The drill-down reads one node's raw dcgm-exporter
series, so ``Hostname`` is a single-select variable: across thousands of GPUs a per-GPU panel is
neither readable nor cheap (docs/scale.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from infersight import promql
from infersight.config import Config
from infersight.dashboards.common import Query, Section, filters, render, stat, timeseries
from infersight.recording_rules import gpu as gpu_rules

FILE = "gpu.json"
VARIABLES = ("job", "Hostname")
JOB = filters("job")
_WHO = "GPU {{gpu}} ({{modelName}})"
_NODE = "{{Hostname}}"


def _fleet(name: str) -> str:
    return promql.recorded(name, JOB)


def _on_node(cfg: Config, build: Callable[[Sequence[str]], str]) -> str:
    """A per-GPU expression for the GPUs of the selected node, whichever host label the exporter
    uses; the node is chosen in the raw selector, so other nodes' samples are never loaded."""
    parts = [build([*JOB, *matchers]) for matchers in gpu_rules.host_matchers(cfg, "$Hostname")]
    return parts[0] if len(parts) == 1 else "\n or \n".join(f"({p})" for p in parts)


def _node_gpu(cfg: Config, field: gpu_rules.Field) -> str:
    return _on_node(cfg, lambda m: gpu_rules.per_gpu(cfg, field, m))


def _leak_threshold(cfg: Config) -> float:
    leak = cfg.gpu.alerts.memory_leak
    return leak.growth_mib * gpu_rules.MIB / leak.window.total_seconds


def _fleet_stats(cfg: Config) -> Section:
    within = cfg.gpu.alerts.predicted_oom.within.total_seconds
    gpus = _fleet(gpu_rules.NODE_GPUS)
    return Section(
        "Fleet",
        [
            stat("GPUs", "GPUs (or MIG instances) reporting framebuffer usage.", "short", [Query(f"sum({gpus})")]),
            stat(
                "Average utilization",
                "Mean GPU utilization (share of time a kernel ran) across every GPU of the selected jobs.",
                "percentunit",
                [Query(f"sum({_fleet(gpu_rules.NODE_UTIL)} * on (job, Hostname) {gpus}) / sum({gpus})")],
            ),
            stat(
                "Framebuffer used",
                "Used framebuffer over total, across the fleet. vLLM pre-allocates most of it for the KV "
                "cache, so a high value is normal.",
                "percentunit",
                [Query(f"sum({_fleet(gpu_rules.NODE_FB_USED)}) / sum({_fleet(gpu_rules.NODE_FB_TOTAL)})")],
            ),
            stat(
                "Soonest predicted OOM",
                f"Shortest time until any GPU's free framebuffer reaches zero at its "
                f"{cfg.gpu.alerts.predicted_oom.long_window} trend; empty while no GPU's free memory falls.",
                "s",
                [Query(f"min({_fleet(gpu_rules.node_time_to_oom(cfg))})")],
                thresholds=((None, "red"), (within, "green")),
            ),
            stat(
                "Hottest GPU",
                "Highest GPU temperature in the fleet.",
                "celsius",
                [Query(f"max({_fleet(gpu_rules.NODE_TEMP)})")],
                thresholds=((None, "green"), (cfg.gpu.alerts.temperature.celsius, "red")),
            ),
            stat(
                "Power draw", "Total board power of the fleet.", "watt", [Query(f"sum({_fleet(gpu_rules.NODE_POWER)})")]
            ),
            stat(
                "GPUs throttled",
                "GPUs whose clocks are held down right now: thermal, HW power brake, or a power cap under a "
                "power limit lowered below the default (a busy GPU at its default limit sits at its cap).",
                "short",
                [Query(f"sum({_fleet(gpu_rules.NODE_THROTTLED)}) or vector(0)")],
                thresholds=((None, "green"), (1, "orange")),
            ),
            stat(
                "GPUs with an XID",
                "GPUs whose last XID error code is not 0 (it sticks until the driver reloads).",
                "short",
                [Query(f"sum({_fleet(gpu_rules.NODE_XID)}) or vector(0)")],
                thresholds=((None, "green"), (1, "red")),
            ),
        ],
    )


def _fleet_nodes(cfg: Config) -> Section:
    leak = cfg.gpu.alerts.memory_leak
    oom = cfg.gpu.alerts.predicted_oom
    return Section(
        "Nodes",
        [
            timeseries(
                "Utilization per node",
                "Mean GPU utilization of each node's GPUs.",
                "percentunit",
                [Query(_fleet(gpu_rules.NODE_UTIL), _NODE)],
                max_val=1,
            ),
            timeseries(
                "Steepest framebuffer growth per node",
                f"The fastest-growing used framebuffer among each node's GPUs, over {leak.window} (deriv), bytes "
                f"per second. Above the threshold line ({leak.growth_mib:g} MiB per {leak.window}) for "
                f"{leak.for_} with flat load is a leak; open the node below to see which GPU.",
                "Bps",
                [
                    Query(_fleet(gpu_rules.node_leak_trend(cfg)), _NODE),
                    Query(f"{_leak_threshold(cfg):.6g}", "leak threshold"),
                ],
                min_val=None,
            ),
            timeseries(
                "Soonest OOM per node",
                f"When the first GPU of each node runs out of free framebuffer at its {oom.long_window} trend. "
                f"Only nodes with a GPU whose free memory falls have a value; the alert fires under {oom.within}.",
                "s",
                [Query(_fleet(gpu_rules.node_time_to_oom(cfg)), _NODE)],
            ),
            timeseries(
                "Memory-copy utilization per node",
                "The busiest GPU memory of each node. High together with KV preemptions is KV-cache thrash "
                f"(alert above {cfg.gpu.alerts.bandwidth_kv_thrash.mem_copy_ratio:.0%}).",
                "percentunit",
                [Query(_fleet(gpu_rules.NODE_MEM_COPY), _NODE)],
                max_val=1,
            ),
            timeseries(
                "Hottest GPU and power per node",
                "Each node's hottest GPU, and its total board power.",
                "celsius",
                [Query(_fleet(gpu_rules.NODE_TEMP), f"temperature {_NODE}")],
                width=8,
            ),
            timeseries(
                "Power per node",
                "Total board power of each node's GPUs.",
                "watt",
                [Query(_fleet(gpu_rules.NODE_POWER), _NODE)],
                width=8,
            ),
            timeseries(
                "Throttled GPUs, XIDs and ECC errors per node",
                "GPUs clock-throttled now (by reason; a power cap only under a lowered power limit), GPUs whose "
                "last XID is not 0, and ECC errors per second "
                "(double-bit, single-bit, remapped rows). Throttle reasons and ECC counters must be enabled in "
                "dcgm-exporter's collectors CSV.",
                "short",
                [
                    Query(_fleet(gpu_rules.NODE_THROTTLED), "throttled ({{reason}}) " + _NODE),
                    Query(_fleet(gpu_rules.NODE_XID), f"XID {_NODE}"),
                    Query(_fleet(gpu_rules.node_ecc(cfg)), "ECC {{kind}} " + _NODE),
                ],
                width=8,
            ),
        ],
    )


def _node_utilization(cfg: Config) -> Section:
    return Section(
        "Node $Hostname: utilization and memory",
        [
            timeseries(
                "GPU utilization",
                "Share of time at least one kernel ran (DCGM_FI_DEV_GPU_UTIL). Near zero while requests "
                "wait means the engine is stuck.",
                "percentunit",
                [Query(_node_gpu(cfg, gpu_rules.UTIL), _WHO)],
                width=8,
                max_val=1,
            ),
            timeseries(
                "Memory-copy utilization",
                "Share of time device memory was read or written (DCGM_FI_DEV_MEM_COPY_UTIL).",
                "percentunit",
                [Query(_node_gpu(cfg, gpu_rules.MEM_COPY), _WHO)],
                width=8,
                max_val=1,
            ),
            timeseries(
                "Framebuffer used and total",
                "Used and total framebuffer per GPU, in bytes (DCGM reports MiB).",
                "bytes",
                [
                    Query(_node_gpu(cfg, gpu_rules.FB_USED), f"used {_WHO}"),
                    Query(_on_node(cfg, lambda m: gpu_rules.fb_total(cfg, m)), f"total {_WHO}"),
                ],
                width=8,
            ),
            timeseries(
                "Used framebuffer trend",
                f"Growth of used framebuffer per GPU over {cfg.gpu.alerts.memory_leak.window} (deriv), bytes per "
                "second; a short spike is a warm-up or restart.",
                "Bps",
                [
                    Query(_on_node(cfg, lambda m: gpu_rules.fb_used_trend(cfg, m)), _WHO),
                    Query(f"{_leak_threshold(cfg):.6g}", "leak threshold"),
                ],
                width=8,
                min_val=None,
            ),
            timeseries(
                "Time to OOM",
                "When each GPU's free framebuffer reaches zero at its trend (only while it falls).",
                "s",
                [Query(_on_node(cfg, lambda m: gpu_rules.time_to_oom(cfg, m)), _WHO)],
                width=8,
            ),
            timeseries(
                "Per-process GPU memory",
                "GPU memory per process, from the infersight GPU exporter (NVML; dcgm-exporter has no "
                "per-process memory). A leaking process grows here while the others stay flat.",
                "bytes",
                [
                    Query(
                        promql.series(
                            "infersight_gpu_process_memory_bytes", [*cfg.selectors.gpu_exporter, *filters("Hostname")]
                        ),
                        "GPU {{gpu}} {{process}} ({{pid}})",
                    )
                ],
                width=8,
            ),
        ],
    )


def _node_physical(cfg: Config) -> Section:
    return Section(
        "Node $Hostname: power, temperature, clocks and errors",
        [
            timeseries(
                "Power draw", "Board power per GPU.", "watt", [Query(_node_gpu(cfg, gpu_rules.POWER), _WHO)], width=8
            ),
            timeseries(
                "Temperature",
                "GPU and memory (HBM) temperature per GPU.",
                "celsius",
                [
                    Query(_node_gpu(cfg, gpu_rules.TEMP), f"gpu {_WHO}"),
                    Query(_node_gpu(cfg, gpu_rules.MEMORY_TEMP), f"memory {_WHO}"),
                ],
                width=8,
            ),
            timeseries(
                "Clocks",
                "SM and memory clocks per GPU; SM clocks dropping under load means throttling.",
                "hertz",
                [
                    Query(_node_gpu(cfg, gpu_rules.SM_CLOCK), f"sm {_WHO}"),
                    Query(_node_gpu(cfg, gpu_rules.MEM_CLOCK), f"memory {_WHO}"),
                ],
                width=8,
            ),
            timeseries(
                "Clock throttling",
                "1 while a GPU's clock-event reasons say thermal (incl. HW slowdown), power_brake (HW power "
                "brake) or power_cap (SW power cap: normal for a busy GPU at its default power limit). Needs "
                "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS in the exporter's collectors CSV.",
                "short",
                [Query(_on_node(cfg, lambda m: gpu_rules.throttle(cfg, m)), "{{reason}} " + _WHO)],
                width=8,
                max_val=1,
            ),
            timeseries(
                "XID errors (last code)",
                "The last XID error code per GPU; it sticks until the driver reloads, so a change is the "
                "news. 0 means none since the driver loaded.",
                "short",
                [Query(_node_gpu(cfg, gpu_rules.XID), _WHO)],
                width=8,
            ),
            timeseries(
                "ECC errors and row remaps",
                "Uncorrectable (dbe) and corrected (sbe) ECC errors, and rows remapped after uncorrectable "
                "errors, per second. The ECC counters must be enabled in the collectors CSV.",
                "cps",
                [Query(_on_node(cfg, lambda m: gpu_rules.ecc_rate(cfg, m, "$__rate_interval")), "{{kind}} " + _WHO)],
                width=8,
            ),
        ],
    )


def _node_engines(cfg: Config) -> Section:
    def on_node(workload_series: str) -> str:
        gpus = _node_gpu(cfg, gpu_rules.FB_USED)
        return f"{workload_series}\nand on ({gpu_rules.WORKLOAD_LABEL})\n(\n{gpus}\n)"

    who = f"{{{{{gpu_rules.WORKLOAD_LABEL}}}}}"
    return Section(
        "Node $Hostname: engines on its GPUs",
        [
            timeseries(
                "Request rate",
                "Finished requests per second of the vLLM engines joined to this node's GPUs (gpu.join). "
                "The leak alert wants it flat.",
                "reqps",
                [Query(on_node(gpu_rules.workload_requests(cfg)), who)],
                width=8,
            ),
            timeseries(
                "KV-cache usage",
                "Fullest KV cache among the engines joined to this node's GPUs.",
                "percentunit",
                [Query(on_node(gpu_rules.WORKLOAD_KV_USAGE), who)],
                width=8,
                max_val=1,
            ),
            timeseries(
                "Preemptions",
                "KV-cache preemptions per second of the engines joined to this node's GPUs.",
                "short",
                [Query(on_node(f"(\n{gpu_rules.workload_preemptions(cfg)}\n)"), who)],
                width=8,
            ),
        ],
    )


def dashboards(cfg: Config) -> dict[str, dict[str, Any]]:
    board = render(
        cfg,
        name="gpu",
        title="vLLM / GPUs",
        description="GPU health, memory and leaks for vLLM serving, from dcgm-exporter (infersight).",
        variables_from=gpu_rules.NODE_GPUS,
        variable_labels=VARIABLES,
        single_variables=("Hostname",),
        sections=[
            _fleet_stats(cfg),
            _fleet_nodes(cfg),
            _node_utilization(cfg),
            _node_physical(cfg),
            _node_engines(cfg),
        ],
    )
    return {FILE: board}
