"""GPUs: utilization, framebuffer and leak trend with time to OOM, per-process memory, power,
temperature, clocks and throttling, XID and ECC errors, and the load of the engines on them."""

from __future__ import annotations

from typing import Any

from infersight import promql
from infersight.config import Config
from infersight.dashboards.common import Query, Section, filters, render, stat, timeseries
from infersight.recording_rules import gpu as gpu_rules

FILE = "gpu.json"
VARIABLES = ("job", "Hostname", "gpu")
GPU_FILTERS = filters(*VARIABLES)
_WHO = "{{Hostname}} GPU {{gpu}}"


def _selected(name: str, extra: list[str] | None = None) -> str:
    return promql.recorded(name, [*GPU_FILTERS, *(extra or [])])


def _on_selected_gpus(workload_series: str) -> str:
    """A per-workload vLLM series, kept for the workloads of the selected GPUs."""
    return f"{workload_series}\nand on ({gpu_rules.WORKLOAD_LABEL})\n{_selected(gpu_rules.FB_USED)}"


def _overview(cfg: Config) -> Section:
    within = cfg.gpu.alerts.predicted_oom.within.total_seconds
    return Section(
        "Overview",
        [
            stat(
                "GPUs",
                "GPUs (or MIG instances) reporting framebuffer usage.",
                "short",
                [Query(f"count({_selected(gpu_rules.FB_USED)})")],
            ),
            stat(
                "Average utilization",
                "Mean GPU utilization (share of time a kernel ran) across the selection.",
                "percentunit",
                [Query(f"avg({_selected(gpu_rules.UTIL)})")],
            ),
            stat(
                "Framebuffer used",
                "Used framebuffer over total, across the selection. vLLM pre-allocates most of it for "
                "the KV cache, so a high value is normal.",
                "percentunit",
                [Query(f"sum({_selected(gpu_rules.FB_USED)}) / sum({_selected(gpu_rules.FB_TOTAL)})")],
            ),
            stat(
                "Soonest predicted OOM",
                f"Shortest time until a GPU's free framebuffer reaches zero at its "
                f"{cfg.gpu.alerts.predicted_oom.long_window} trend; empty while no GPU's free memory falls.",
                "s",
                [Query(f"min({_selected(gpu_rules.time_to_oom(cfg))})")],
                thresholds=((None, "red"), (within, "green")),
            ),
            stat(
                "Hottest GPU",
                "Highest GPU temperature in the selection.",
                "celsius",
                [Query(f"max({_selected(gpu_rules.TEMP)})")],
                thresholds=((None, "green"), (cfg.gpu.alerts.temperature.celsius, "red")),
            ),
            stat(
                "Power draw",
                "Total board power of the selection.",
                "watt",
                [Query(f"sum({_selected(gpu_rules.POWER)})")],
            ),
        ],
    )


def _utilization(cfg: Config) -> Section:
    bw = cfg.gpu.alerts.bandwidth_kv_thrash
    return Section(
        "Utilization",
        [
            timeseries(
                "GPU utilization",
                "Share of time at least one kernel ran (DCGM_FI_DEV_GPU_UTIL). Near zero while requests "
                "wait means the engine is stuck.",
                "percentunit",
                [Query(_selected(gpu_rules.UTIL), _WHO)],
                max_val=1,
            ),
            timeseries(
                "Memory-copy utilization",
                "Share of time device memory was read or written (DCGM_FI_DEV_MEM_COPY_UTIL). High together "
                f"with KV preemptions is KV-cache thrash (alert above {bw.mem_copy_ratio:.0%}).",
                "percentunit",
                [Query(_selected(gpu_rules.MEM_COPY), _WHO)],
                max_val=1,
            ),
        ],
    )


def _memory(cfg: Config) -> Section:
    leak = cfg.gpu.alerts.memory_leak
    oom = cfg.gpu.alerts.predicted_oom
    threshold = leak.growth_mib * gpu_rules.MIB / leak.window.total_seconds
    process = promql.series(
        "infersight_gpu_process_memory_bytes", [*cfg.selectors.gpu_exporter, *filters("Hostname", "gpu")]
    )
    return Section(
        "Framebuffer and leaks",
        [
            timeseries(
                "Framebuffer used and total",
                "Used and total framebuffer per GPU, in bytes (DCGM reports MiB).",
                "bytes",
                [
                    Query(_selected(gpu_rules.FB_USED), f"used {_WHO}"),
                    Query(_selected(gpu_rules.FB_TOTAL), f"total {_WHO}"),
                ],
            ),
            timeseries(
                "Used framebuffer trend",
                f"Growth of used framebuffer over {leak.window} (deriv), bytes per second. Above the "
                f"threshold line ({leak.growth_mib:g} MiB per {leak.window}) for {leak.for_} with flat "
                "load is a leak; a short spike is a warm-up or restart.",
                "Bps",
                [Query(_selected(gpu_rules.fb_used_deriv(cfg)), _WHO), Query(f"{threshold:.6g}", "leak threshold")],
                min_val=None,
            ),
            timeseries(
                "Time to OOM",
                f"When free framebuffer reaches zero at its {oom.long_window} trend. Only GPUs whose free "
                f"memory is falling have a value; the alert fires under {oom.within}.",
                "s",
                [Query(_selected(gpu_rules.time_to_oom(cfg)), _WHO)],
            ),
            timeseries(
                "Per-process GPU memory",
                "GPU memory per process, from the infersight GPU exporter (NVML; dcgm-exporter has no "
                "per-process memory). A leaking process grows here while the others stay flat.",
                "bytes",
                [Query(process, "{{Hostname}} GPU {{gpu}} {{process}} ({{pid}})")],
            ),
        ],
    )


def _engines(cfg: Config) -> Section:
    return Section(
        "Engines on these GPUs",
        [
            timeseries(
                "Request rate",
                "Finished requests per second of the vLLM engines joined to the selected GPUs "
                "(gpu.join). The leak alert wants it flat.",
                "reqps",
                [Query(_on_selected_gpus(gpu_rules.workload_requests(cfg)), f"{{{{{gpu_rules.WORKLOAD_LABEL}}}}}")],
                width=8,
            ),
            timeseries(
                "KV-cache usage",
                "Fullest KV cache among the engines joined to the selected GPUs.",
                "percentunit",
                [Query(_on_selected_gpus(gpu_rules.WORKLOAD_KV_USAGE), f"{{{{{gpu_rules.WORKLOAD_LABEL}}}}}")],
                width=8,
                max_val=1,
            ),
            timeseries(
                "Preemptions",
                "KV-cache preemptions per second of the engines joined to the selected GPUs.",
                "short",
                [Query(_on_selected_gpus(gpu_rules.workload_preemptions(cfg)), f"{{{{{gpu_rules.WORKLOAD_LABEL}}}}}")],
                width=8,
            ),
        ],
    )


def _physical(cfg: Config) -> Section:
    return Section(
        "Power, temperature and clocks",
        [
            timeseries(
                "Power draw", "Board power per GPU.", "watt", [Query(_selected(gpu_rules.POWER), _WHO)], width=6
            ),
            timeseries(
                "Temperature",
                "GPU and memory (HBM) temperature per GPU.",
                "celsius",
                [
                    Query(_selected(gpu_rules.TEMP), f"gpu {_WHO}"),
                    Query(_selected(gpu_rules.MEMORY_TEMP), f"memory {_WHO}"),
                ],
                width=6,
            ),
            timeseries(
                "Clocks",
                "SM and memory clocks per GPU; SM clocks dropping under load means throttling.",
                "hertz",
                [
                    Query(_selected(gpu_rules.SM_CLOCK), f"sm {_WHO}"),
                    Query(_selected(gpu_rules.MEM_CLOCK), f"memory {_WHO}"),
                ],
                width=6,
            ),
            timeseries(
                "Clock throttling",
                "Share of samples whose clock-event reasons say thermal (incl. HW slowdown) or power. Needs "
                "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS in the exporter's collectors CSV.",
                "percentunit",
                [Query(f"avg_over_time({_selected(gpu_rules.THROTTLE)}[$__rate_interval])", f"{{{{reason}}}} {_WHO}")],
                width=6,
                max_val=1,
            ),
        ],
    )


def _errors(cfg: Config) -> Section:
    return Section(
        "Errors",
        [
            timeseries(
                "XID errors (last code)",
                "The last XID error code per GPU; it sticks until the driver reloads, so a change is the "
                "news. 0 means none since the driver loaded.",
                "short",
                [Query(_selected(gpu_rules.XID), _WHO)],
            ),
            timeseries(
                "ECC errors and row remaps",
                "Uncorrectable (double-bit) and corrected (single-bit) ECC errors, and rows remapped after "
                "uncorrectable errors, per second. The ECC counters must be enabled in the collectors CSV.",
                "cps",
                [
                    Query(_selected(gpu_rules.ecc_rate(cfg, "dbe")), f"double-bit {_WHO}"),
                    Query(_selected(gpu_rules.ecc_rate(cfg, "sbe")), f"single-bit {_WHO}"),
                    Query(_selected(gpu_rules.ecc_rate(cfg, "remapped_rows_uncorrectable")), f"remapped rows {_WHO}"),
                ],
            ),
        ],
    )


def dashboards(cfg: Config) -> dict[str, dict[str, Any]]:
    board = render(
        cfg,
        name="gpu",
        title="vLLM / GPUs",
        description="GPU health, memory and leaks for vLLM serving, from dcgm-exporter (infersight).",
        variables_from=gpu_rules.FB_USED,
        variable_labels=VARIABLES,
        sections=[_overview(cfg), _utilization(cfg), _memory(cfg), _engines(cfg), _physical(cfg), _errors(cfg)],
    )
    return {FILE: board}
