"""Rule cost of a bundle early in a fleet run and again once every window has filled, in one run.

`infersight bench fleet` measures after --duration (6 m by default). Rules that read further
back than that (a 1 h `increase`, a 30 m `deriv`) then read fewer samples than they will at
steady state, so the bench prints their names and calls their cost a floor. This benchmark
keeps one fleet and one Prometheus running past the longest such window and measures the same
groups twice, early and late, so the ratio between the two is what the bench's floor misses.
It also times given expressions with `stats=all` at both points (e.g. a rule and a cheaper
rewrite of it), side by side on the same data.

    python benchmarks/fleet_steady_state.py --bundle DIR [--engines 1000] [--early 6m] [--late 66m]
        [--exprs exprs.yaml]   # {name: PromQL}

Timings are printed, never asserted. The fleet server and Prometheus are stopped on exit.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from infersight.config import load_config
from infersight.durations import Duration
from infersight.fleet import measure
from infersight.fleet.stack import FleetStack
from infersight.interrupts import Terminated, interrupts_raise, signal_of

# Rule times are sampled over this long before each point: two evaluations of a 2 m group.
WINDOW = Duration.parse("4m")
SAMPLE_EVERY_S = 10.0
REPEATS = 5  # each expression is timed this often, interleaved; the median is printed
SLOWEST_RULES = 25  # where the groups' time goes: the slowest at steady state, with their early cost


@dataclass(frozen=True)
class Point:
    """One measurement: each group's cost and each expression's (median seconds, samples)."""

    label: str
    groups: list[measure.GroupCost]
    rules: list[measure.RuleCost]
    exprs: dict[str, tuple[float, int]]


def rule_times(api: measure.PrometheusAPI, seconds: float) -> measure.RuleTimes:
    times = measure.RuleTimes()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        times.sample(api)
        time.sleep(SAMPLE_EVERY_S)
    times.sample(api)
    return times


def expression_times(api: measure.PrometheusAPI, exprs: dict[str, str]) -> dict[str, tuple[float, int]]:
    seconds: dict[str, list[float]] = {k: [] for k in exprs}
    samples: dict[str, int] = {}
    for _ in range(REPEATS):  # interleaved, so that a slow moment weighs on every expression alike
        for name, expr in exprs.items():
            took, samples[name] = measure.instant_cost(api, expr)
            seconds[name].append(took)
    return {k: (statistics.median(v), samples[k]) for k, v in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, required=True, help="a folder `infersight build --out` wrote")
    parser.add_argument("--engines", type=int, default=1000)
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--early", type=Duration.parse, default=Duration.parse("6m"))
    parser.add_argument("--late", type=Duration.parse, default=Duration.parse("66m"))
    parser.add_argument("--window", type=Duration.parse, default=WINDOW, help="sample rule times over this long")
    parser.add_argument("--exprs", type=Path, help="YAML {name: PromQL} to time at both points")
    parser.add_argument("--workdir", type=Path, help="where Prometheus keeps its data (default: a temporary folder)")
    args = parser.parse_args()
    files = {
        p.relative_to(args.bundle).as_posix(): p.read_text()
        for kind in ("recording_rules", "alerts")
        for p in sorted((args.bundle / kind).glob("*.yaml"))
    }
    exprs = yaml.safe_load(args.exprs.read_text()) if args.exprs else {}
    # Ctrl-C and SIGTERM (even where the shell started it with SIGINT ignored) stop the fleet and
    # Prometheus through FleetStack's exit; a plain SIGTERM would leave both running.
    try:
        with interrupts_raise(), tempfile.TemporaryDirectory(prefix="infersight-steady-") as scratch:
            workdir = args.workdir or Path(scratch)
            workdir.mkdir(parents=True, exist_ok=True)
            report(measure_twice(workdir, args, files, exprs), exprs)
    except (KeyboardInterrupt, Terminated) as exc:
        name = getattr(signal_of(exc), "name", "an interrupt")
        raise SystemExit(f"stopped by {name}: the fleet and Prometheus are stopped") from None


def measure_twice(
    workdir: Path, args: argparse.Namespace, files: dict[str, str], exprs: dict[str, str]
) -> tuple[list[Point], dict[str, float]]:
    points = []
    with FleetStack(workdir, load_config(None), files, args.engines, args.models) as stack:
        started = time.monotonic()
        for label, at in (("early", args.early), ("steady", args.late)):
            window = args.window.total_seconds
            time.sleep(max(0.0, at.total_seconds - window - (time.monotonic() - started)))
            times = rule_times(stack.api, window)
            rules = times.slowest_rules()  # every rule, slowest first
            points.append(Point(f"{label} ({at})", times.groups(), rules, expression_times(stack.api, exprs)))
            share = sum(g.share for g in points[-1].groups)
            speed = measure.yardstick_seconds(stack.api)
            took = "did not answer" if speed is None else f"{speed:.3f} s"
            print(
                f"measured {label}: all groups {100 * share:.2f} % of their intervals; one instant read of "
                f"every GPU ({measure.YARDSTICK}) {took}",
                flush=True,
            )
        own = measure.self_metrics(
            stack.api, ("prometheus_rule_group_iterations_missed_total", "prometheus_rule_evaluation_failures_total")
        )
    return points, own


def report(
    measured: tuple[list[Point], dict[str, float]],
    exprs: dict[str, str],
) -> None:
    (early, late), own = measured
    early_label, late_label, early_x, late_x = early.label, late.label, early.exprs, late.exprs
    before = {g.name: g for g in early.groups}
    print(f"{'rule group':<46} {'interval':>8} {early_label:>16} {late_label:>16} {'ratio':>7}")
    for g in sorted(late.groups, key=lambda g: -g.share):
        e = before.get(g.name)
        e_share = e.share if e else 0.0
        ratio = f"{g.share / e_share:6.2f}x" if e_share else ""
        print(f"{g.name:<46} {g.interval_s:>7.0f}s {100 * e_share:>15.2f}% {100 * g.share:>15.2f}% {ratio:>7}")
    total_e, total_l = sum(g.share for g in early.groups), sum(g.share for g in late.groups)
    print(f"{'all groups (sum of shares)':<46} {'':>8} {100 * total_e:>15.2f}% {100 * total_l:>15.2f}%")
    intervals = {g.name: g.interval_s for g in late.groups}
    early_rules = {(r.group, r.name): r.seconds for r in early.rules}
    print(f"\n{'slowest rules at steady state':<60} {'group':<36} {'early':>8} {'steady':>8} {'share':>7}")
    for r in late.rules[:SLOWEST_RULES]:
        early_s = early_rules.get((r.group, r.name), 0.0)
        share = 100 * r.seconds / intervals.get(r.group, 1.0)
        print(f"{r.name[:60]:<60} {r.group[:36]:<36} {early_s:7.3f}s {r.seconds:7.3f}s {share:6.2f}%")
    for name in exprs:
        (es, en), (ls, ln) = early_x[name], late_x[name]
        print(f"expr {name:<41} {es:8.3f}s ({en} samples) {ls:8.3f}s ({ln} samples)")
    print(
        f"missed iterations: {own['prometheus_rule_group_iterations_missed_total']:.0f}; "
        f"rule evaluation failures: {own['prometheus_rule_evaluation_failures_total']:.0f}"
    )


if __name__ == "__main__":
    main()
