"""One fleet benchmark: start a fleet and Prometheus, wait for the rate windows to fill, measure,
and return a report that prints as tables. Timings are printed here and asserted nowhere."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from infersight.config import Config
from infersight.durations import Duration
from infersight.fleet import cpu, measure, topology
from infersight.fleet.stack import PROMETHEUS, FleetStack

# Prometheus keeps roughly this much resident memory per head series (measured: docs/scale.md),
# and the fleet server about 1/10 of it; used only to refuse fleets this machine cannot hold.
BYTES_PER_SERIES = 8 * 1024
SERIES_PER_SERVER = 700  # vLLM + dcgm-exporter share + recordings, upper bound


@dataclass(frozen=True)
class DashboardCost:
    dashboard: str
    where: str
    recorded: measure.QueryCost
    raw: measure.QueryCost | None  # None: the panel reads no recording, or one that cannot be inlined


@dataclass
class Report:
    servers: int
    models: int
    moe_servers: int
    nodes: int
    gpus: int
    waited_s: float
    machine: str
    groups: list[measure.GroupCost] = field(default_factory=list)
    slowest: list[measure.RuleCost] = field(default_factory=list)
    # Rules whose windows reach further back than the run: measured before they filled.
    long_windows: list[measure.LongWindow] = field(default_factory=list)
    missed: float = 0.0
    failures: float = 0.0
    unhealthy: list[str] = field(default_factory=list)
    series: measure.SeriesSplit | None = None
    head_series: float = 0.0
    rss_bytes: int = 0
    # The same fleet scraped for as long by a Prometheus with no rules: what the bundle adds.
    baseline_head_series: float | None = None
    baseline_rss_bytes: int | None = None
    # Over the last minutes before measuring: whether the rules are slow or wait for a core.
    cpu_use: cpu.CpuUse | None = None
    baseline_cpu_use: cpu.CpuUse | None = None
    targets_down: int = 0
    slowest_scrape_s: float = 0.0
    yardstick_s: float | None = None  # measure.YARDSTICK's median time: the machine's speed during the run
    # Per dashboard range (seconds): every panel's cost over that range, at Grafana's step for it.
    dashboards: dict[float, list[DashboardCost]] = field(default_factory=dict)
    steps: dict[float, float] = field(default_factory=dict)


# Rules listed by their own evaluation time, under the groups: where the groups' time goes.
SLOWEST_RULES = 15

# The ranges an SRE opens a dashboard on: the default hour, and a shift's six hours.
DASHBOARD_RANGES_S = (3600.0, 6 * 3600.0)


def machine() -> str:
    mem = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = int(line.split()[1]) * 1024
    return f"{os.cpu_count()} CPUs, {mem / 2**30:.1f} GiB memory"


def available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def capacity_problem(servers: int) -> str:
    """Why this machine cannot hold a fleet of ``servers``, or "" when it can."""
    need = servers * SERIES_PER_SERVER * BYTES_PER_SERIES
    have = available_bytes()
    if need > have * 0.8:
        largest = int(have * 0.8 / (SERIES_PER_SERVER * BYTES_PER_SERIES))
        return (
            f"{servers} engines need about {need / 2**30:.1f} GiB for Prometheus and the fleet server; this machine "
            f"has {have / 2**30:.1f} GiB available, enough for about {largest} engines"
        )
    return ""


def run(
    workdir: Path,
    cfg: Config,
    files: Mapping[str, str],
    servers: int,
    models: int,
    wait_s: float,
    progress: Callable[[str], None],
    baseline: bool = True,
    dashboards: bool = True,
) -> Report:
    fleet = topology.build(servers, models)
    report = Report(
        servers=servers,
        models=len(fleet.models),
        moe_servers=len(fleet.moe_servers),
        nodes=len(fleet.nodes),
        gpus=len(fleet.nodes) * topology.GPUS_PER_NODE,
        waited_s=wait_s,
        machine=machine(),
    )
    scrape_s = cfg.scaled(cfg.intervals.scrape).total_seconds
    with FleetStack(workdir, cfg, files, servers, models) as stack:
        progress(
            f"fleet of {servers} engines on {len(stack.fleet.nodes)} nodes served at {stack.server_url}, "
            f"scraped by Prometheus at {stack.api.url}"
        )
        api = stack.api
        times = measure.RuleTimes()
        report.cpu_use = _wait_measuring_cpu(
            wait_s, "filling the rate windows", progress, stack.pids(), lambda: times.sample(api)
        )
        progress("measuring rule groups, series and memory")
        times.sample(api)
        report.groups = times.groups()
        report.slowest = times.slowest_rules(SLOWEST_RULES)
        report.long_windows = measure.long_windows(measure.rules_of(files), wait_s)
        own = measure.self_metrics(
            api,
            (
                "prometheus_rule_group_iterations_missed_total",
                "prometheus_rule_evaluation_failures_total",
                "prometheus_tsdb_head_series",
            ),
        )
        report.missed = own["prometheus_rule_group_iterations_missed_total"]
        report.failures = own["prometheus_rule_evaluation_failures_total"]
        report.head_series = own["prometheus_tsdb_head_series"]
        report.unhealthy = measure.unhealthy_rules(api)
        report.rss_bytes = stack.prometheus_rss_bytes()
        rules = measure.rules_of(files)
        names = sorted({r.name for r in rules if not r.alert} | {"ALERTS", "ALERTS_FOR_STATE"})
        report.series = measure.split_series(measure.scraped_series(api), measure.series_by_name(api, names))
        report.targets_down = len(api.instant("up == 0"))
        slowest = api.instant("max(scrape_duration_seconds)")
        report.slowest_scrape_s = float(slowest[0]["value"][1]) if slowest else 0.0
        report.yardstick_s = measure.yardstick_seconds(api)
        for range_s in DASHBOARD_RANGES_S if dashboards else ():
            step_s = measure.grafana_step(range_s, scrape_s)
            progress(f"measuring dashboard queries over {range_s / 3600:g}h")
            report.steps[range_s] = step_s
            report.dashboards[range_s] = dashboard_costs(api, files, rules, range_s, step_s, scrape_s)
    if baseline:
        # After the measured run, not beside it: a second Prometheus scraping at the same time
        # would take CPU from the rule evaluation being measured.
        with FleetStack(workdir / "baseline", cfg, {}, servers, models) as bare:
            progress(f"baseline: the same fleet scraped by a Prometheus without rules at {bare.api.url}")
            # Read the (empty) rules API as often as in the measured run: its own cost cancels out.
            report.baseline_cpu_use = _wait_measuring_cpu(
                wait_s,
                "baseline: scraping for as long",
                progress,
                bare.pids(),
                lambda: measure.RuleTimes().sample(bare.api),
            )
            own = measure.self_metrics(bare.api, ("prometheus_tsdb_head_series",))
            report.baseline_head_series = own["prometheus_tsdb_head_series"]
            report.baseline_rss_bytes = bare.prometheus_rss_bytes()
    return report


# CPU is averaged over the end of the wait, once every rate window is full and the rules run
# as they will at the measurement.
CPU_WINDOW_S = 120.0


# Rule times are read this often over the CPU window: every evaluation of a 30 s group is seen.
SAMPLE_EVERY_S = 10.0


def _wait_measuring_cpu(
    seconds: float,
    what: str,
    progress: Callable[[str], None],
    pids: Mapping[str, int],
    sample: Callable[[], None] | None = None,
) -> cpu.CpuUse:
    window = min(CPU_WINDOW_S, seconds / 2)
    _wait(seconds - window, what, progress)
    before = cpu.snapshot(pids)
    _wait(window, what, progress, sample)
    return cpu.between(before, cpu.snapshot(pids))


def _wait(seconds: float, what: str, progress: Callable[[str], None], sample: Callable[[], None] | None = None) -> None:
    deadline = time.monotonic() + seconds
    reported = -1.0
    while (left := deadline - time.monotonic()) > 0:
        if reported < 0 or reported - left >= 30.0:
            progress(f"{what}: {left:.0f} s left")
            reported = left
        if sample is not None:
            sample()
        time.sleep(min(SAMPLE_EVERY_S if sample is not None else 30.0, left))


def dashboard_costs(
    api: measure.PrometheusAPI,
    files: Mapping[str, str],
    rules: list[measure.Rule],
    range_s: float,
    step_s: float,
    scrape_s: float,
) -> list[DashboardCost]:
    recordings = measure.recordings_by_name(rules)
    end = time.time()
    start = end - range_s
    out = []
    for board, where, expr in measure.panel_queries(files, measure.grafana_rate_interval(step_s, scrape_s), api):
        recorded = measure.range_cost(api, expr, start, end, step_s)
        raw_expr = measure.inline(expr, recordings)
        raw = measure.range_cost(api, raw_expr, start, end, step_s) if raw_expr and raw_expr != expr else None
        out.append(DashboardCost(board, where, recorded, raw))
    return out


# --- printing -----------------------------------------------------------------------------------


def _speed_line(yardstick_s: float | None) -> str:
    what = f"one instant read of every GPU ({measure.YARDSTICK})"
    if yardstick_s is None:
        return f"machine speed: not measured ({what} did not answer)"
    return (
        f"machine speed: {what} took {yardstick_s:.3f} s (median of {measure.YARDSTICK_READS}); "
        "compare runs of one size by it"
    )


def render(report: Report) -> str:
    lines = [
        f"machine: {report.machine}",
        f"fleet: {report.servers} engines, {report.models} models ({report.moe_servers} MoE engines, "
        f"capped at {topology.MOE_LAYERS} layers x {topology.MOE_EXPERTS} experts), "
        f"{report.nodes} nodes / {report.gpus} GPUs; measured after {report.waited_s:.0f} s",
        f"scrapes: {report.targets_down} targets down, slowest scrape {report.slowest_scrape_s:.3f} s",
        _speed_line(report.yardstick_s),
        "",
        "evaluation time per group: the median (and the longest) of the evaluations seen over the last "
        f"{CPU_WINDOW_S:.0f} s; share = median / interval",
        f"{'rule group':<44} {'rules':>5} {'interval':>8} {'evals':>5} {'median':>9} {'longest':>9} {'share':>7}",
    ]
    total = 0.0
    for g in sorted(report.groups, key=lambda g: -g.share):
        total += g.share
        lines.append(
            f"{g.name:<44} {g.rules:>5} {g.interval_s:>7.0f}s {g.evaluations:>5} {g.seconds:>8.3f}s "
            f"{g.max_s:>8.3f}s {100 * g.share:>6.2f}%"
        )
    lines += [
        f"{'all groups (sum of shares)':<44} {'':>5} {'':>8} {'':>5} {'':>9} {'':>9} {100 * total:>6.2f}%",
        *_cpu_lines(report),
        f"missed iterations: {report.missed:.0f}; rule evaluation failures: {report.failures:.0f}; "
        f"unhealthy rules: {len(report.unhealthy)}",
        *(f"  {u}" for u in report.unhealthy[:10]),
        *_long_window_lines(report),
        "",
    ]
    if report.slowest:
        lines.append(f"{'slowest rules (median)':<44} {'group':<40} {'eval':>10}")
        lines += [f"{r.name[:44]:<44} {r.group[:40]:<40} {r.seconds:>9.3f}s" for r in report.slowest]
        lines.append("")
    s = report.series
    if s is not None:
        lines += [
            f"head series: {report.head_series:.0f} (raw {s.raw}, recorded {s.recorded} = "
            f"{100 * s.recorded_share:.1f}% of raw, ALERTS {s.alerts}); per engine: raw {s.raw / report.servers:.0f}, "
            f"recorded {s.recorded / report.servers:.1f}",
            "recorded series by level: " + ", ".join(f"{k} {v}" for k, v in s.recorded_by_level.items()),
            f"Prometheus RSS: {report.rss_bytes / 2**20:.0f} MiB ({report.rss_bytes / max(report.head_series, 1):.0f} "
            "bytes per head series)",
        ]
        if report.baseline_rss_bytes is not None and report.baseline_head_series is not None:
            lines.append(
                f"without the bundle (same fleet, as long, no rules): head series {report.baseline_head_series:.0f}, "
                f"RSS {report.baseline_rss_bytes / 2**20:.0f} MiB; the bundle adds "
                f"{100 * (report.head_series / max(report.baseline_head_series, 1) - 1):.1f}% head series and "
                f"{100 * (report.rss_bytes / max(report.baseline_rss_bytes, 1) - 1):.1f}% RSS"
            )
        lines.append("")
    lines += _dashboard_table(report)
    return "\n".join(lines)


def _long_window_lines(report: Report) -> list[str]:
    """Which rules this run measured before their windows filled: their cost here is a floor."""
    raw = [w for w in report.long_windows if w.raw]
    recorded_only = [w for w in report.long_windows if not w.raw]
    lines = []
    if raw:
        listed = ", ".join(f"{w.rule} ({Duration.seconds(w.seconds)})" for w in raw)
        longest = Duration.seconds(raw[0].seconds)
        lines.append(
            f"{len(raw)} rules read scraped series further back than this run's {report.waited_s:.0f} s, so their "
            f"cost above is below their steady state (a --duration past {longest} measures it): {listed}"
        )
    if recorded_only:
        lines.append(
            f"{len(recorded_only)} more read only recordings further back (up to "
            f"{Duration.seconds(max(w.seconds for w in recorded_only))}): per model or node, few series"
        )
    return lines


def _cpu_lines(report: Report) -> list[str]:
    """CPU with and without the rules: the cores the rules really use, and whether any were left."""
    if report.cpu_use is None:
        return []
    lines = [report.cpu_use.render()]
    base = report.baseline_cpu_use
    if base is not None:
        lines.append("without the bundle: " + base.render())
        extra = report.cpu_use.cores.get(PROMETHEUS, 0.0) - base.cores.get(PROMETHEUS, 0.0)
        lines.append(
            f"the rules' own CPU: {extra:.2f} cores = {100 * extra:.0f}% of one core's interval "
            f"(Prometheus with rules minus without); without rules the host was {100 * base.host_busy:.0f}% busy"
        )
    return lines


def _dashboard_table(report: Report) -> list[str]:
    lines: list[str] = []
    for range_s, costs in report.dashboards.items():
        lines += _one_range(range_s, report.steps[range_s], costs)
    return lines


def _one_range(range_s: float, step_s: float, costs: list[DashboardCost]) -> list[str]:
    lines = [
        f"dashboard queries: range {range_s / 3600:g}h at step {step_s:g}s, multi-value variables on All, "
        "single-value ones on their first value (samples = totalQueryableSamples, time = execTotalTime)",
        f"{'dashboard / panel':<60} {'samples':>10} {'time':>8} | {'raw samples':>11} {'raw time':>8} {'x':>6}",
    ]
    per_board: dict[str, list[float]] = {}
    for d in costs:
        raw = d.raw
        label = f"{d.dashboard.removesuffix('.json')}: {d.where.removeprefix('panel ')}"[:60]
        cells = f"{d.recorded.samples:>10} {d.recorded.seconds:>7.3f}s"
        if d.recorded.error:
            cells = f"error: {d.recorded.error}"[:20]
        raw_cells = ""
        if raw is not None:
            factor = raw.samples / d.recorded.samples if d.recorded.samples else 0.0
            raw_cells = f"{raw.samples:>11} {raw.seconds:>7.3f}s {factor:>5.1f}x"
            if raw.error:
                raw_cells = f"raw error: {raw.error}"[:40]
        lines.append(f"{label:<60} {cells} | {raw_cells}")
        # [samples, time, compared: samples, raw samples, time, raw time, whole board without recordings:
        # samples, raw queries that failed]
        totals = per_board.setdefault(d.dashboard, [0, 0, 0, 0, 0, 0, 0, 0])
        totals[0] += d.recorded.samples
        totals[1] += d.recorded.seconds
        if raw is not None and not raw.error:
            totals[2] += d.recorded.samples
            totals[3] += raw.samples
            totals[4] += d.recorded.seconds
            totals[5] += raw.seconds
            totals[6] += raw.samples
        else:  # reads raw series already, or the raw query failed: counted as no dearer than recorded
            totals[6] += d.recorded.samples
            totals[7] += raw is not None
    lines += [
        "",
        f"{'dashboard totals, ' + format(range_s / 3600, 'g') + 'h':<28} {'samples':>11} {'time':>8} | "
        "compared panels: samples x, time x | whole dashboard: samples x",
    ]
    for board, t in per_board.items():
        samples_x = t[3] / t[2] if t[2] else 0.0
        time_x = t[5] / t[4] if t[4] else 0.0
        whole_x = t[6] / t[0] if t[0] else 0.0
        # A raw query that failed (timed out) is counted at the recorded cost: the ratio is a floor.
        # A floor is marked ">=": at least that much cheaper.
        whole = f">={whole_x:.1f}x (raw failed on {t[7]:.0f} of its panels)" if t[7] else f"{whole_x:>6.1f}x"
        lines.append(f"{board:<28} {t[0]:>11.0f} {t[1]:>7.3f}s | {samples_x:>6.1f}x {time_x:>6.1f}x | {whole}")
    return [*lines, ""]


def render_growth(reports: Sequence[Report]) -> str:
    """One row per fleet size, measured in the same run: what each engine costs as N grows (it
    should stay flat), and the rule time per 1,000 engines."""
    first = reports[0]
    lines = [
        f"growth with the fleet, one run ({first.machine}; one model in ten MoE): per engine, and per 1,000 engines",
        f"{'engines':>8} {'models':>6} {'raw/eng':>8} {'rec/eng':>8} {'rec % raw':>9} {'head/eng':>9} "
        f"{'RSS KiB/eng':>11} {'no rules':>9} {'rules %':>8} {'% /1k eng':>9} {'cores /1k':>9} "
        f"{'dash 1h samples/eng':>19}",
    ]
    for r in reports:
        s = r.series
        raw, recorded = (s.raw, s.recorded) if s is not None else (0, 0)
        share = sum(g.share for g in r.groups)
        cores = r.cpu_use.cores.get(PROMETHEUS, 0.0) if r.cpu_use is not None else 0.0
        bare = f"{r.baseline_rss_bytes / 1024 / r.servers:>9.1f}" if r.baseline_rss_bytes is not None else f"{'-':>9}"
        hour = r.dashboards.get(DASHBOARD_RANGES_S[0])
        dash = f"{sum(d.recorded.samples for d in hour) / r.servers:>19.0f}" if hour else f"{'-':>19}"
        lines.append(
            f"{r.servers:>8} {r.models:>6} {raw / r.servers:>8.0f} {recorded / r.servers:>8.1f} "
            f"{100 * recorded / max(raw, 1):>8.1f}% {r.head_series / r.servers:>9.0f} "
            f"{r.rss_bytes / 1024 / r.servers:>11.1f} {bare} {100 * share:>7.2f}% "
            f"{100 * share * 1000 / r.servers:>8.2f}% {cores * 1000 / r.servers:>9.2f} {dash}"
        )
    lines.append(
        "rec/eng falls with N while the per-model and per-expert recordings (which do not grow with engines) "
        "are spread over more engines; '% /1k eng' is what 1,000 engines would cost at this size's "
        "per-engine rate"
    )
    return "\n".join(lines)
