"""``infersight up``: build the bundle, start a whole stack on loopback (tiny vLLM models,
exporters, Prometheus with the time-scaled rules, Alertmanager), prove the alerts with a short
validation suite, write the report, and stop everything again. With ``--keep-running`` it also
shows the bundle's dashboards with the stack's data: in a Grafana it starts where one is installed,
else through the ``docker run`` it prints (infersight.stack.grafana).

All temporary state lives in one folder, named at the start and removed at the end (also on
Ctrl-C, SIGTERM or an error); the report and the bundle go to ``--report-dir``, which stays.

Exit codes: 0 every expectation met (or skipped); 1 an expectation was missed; 2 bad input;
3 the stack did not start or stopped answering; 130 interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from infersight import bundle, bundle_files
from infersight.commands.loadgen import scenario_dirs
from infersight.commands.validate import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_MISSED,
    EXIT_UNREACHABLE,
    add_report_arguments,
    known_alerts,
    load_scenarios,
    print_outcome,
)
from infersight.config import Config
from infersight.interrupts import Terminated, interrupts_raise, uninterruptible
from infersight.loadgen.prompts import load_vocabulary
from infersight.loadgen.results import ResultsLocationError, check_results_dir
from infersight.loadgen.scenario import Scenario, ScenarioError
from infersight.loadgen.target import TargetError, check_target
from infersight.stack import grafana
from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.process import ServiceError
from infersight.stack.tiny_models import ModelKind
from infersight.validate.apis import AlertmanagerApi, PrometheusApi
from infersight.validate.dashboard_data import check_dashboards
from infersight.validate.local_stack import Endpoint, LocalStack
from infersight.validate.session import Monitoring, ScenarioRun, SessionError, Target, run_suite, served_model

# The suite, in the order it runs: on the MoE server first, overload before KV pressure (its TTFT
# burn outlasts it, and overload's baseline must be quiet), then the dense server: the outlier
# replica after the traffic stop (its load ends the stop; its own end would start a traffic stop
# that the traffic stop's quiet-during-traffic could not tell from its own), the hung engine after
# them (the requests it held burn the TTFT budget when it thaws), stopped last. The traffic stop's
# companion load goes to the MoE server; the outlier replica's peers are two more dense replicas.
DEFAULT_SCENARIOS = (
    "healthy",
    "moe_skew",
    "overload",
    "kv_pressure",
    "gpu_leak",
    "traffic_stop",
    "outlier_replica",
    "hung_engine",
    "target_down",
)
# Which tiny model serves each shipped scenario: the MoE one has the small KV cache and the MoE
# exporter; the dense one is the server that may be stopped.
SERVER_FOR: dict[str, ModelKind] = {
    "healthy": "moe",
    "overload": "moe",
    "kv_pressure": "moe",
    "moe_skew": "moe",
    "client_errors": "moe",
    "gpu_leak": "dense",
    "traffic_stop": "dense",
    "outlier_replica": "dense",
    "hung_engine": "dense",
    "target_down": "dense",
    "server_kill": "dense",
}
NEEDS_MOE_EXPORTER = ("moe_skew",)
say = functools.partial(print, flush=True)  # progress shows as it happens, also when piped to a file


def _scenario_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give scenario names separated by commas, e.g. healthy,overload")
    return list(dict.fromkeys(names))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "up",
        help="start vLLM + exporters + Prometheus + Alertmanager on loopback, prove the alerts, write a report",
        description="Build the bundle, start the whole stack on loopback (free ports, one temporary folder), run a "
        "short validation suite (time-scaled rules), write the report, and stop everything. About 14 minutes on "
        "2 CPU cores; the first run also builds two tiny models.",
    )
    p.add_argument(
        "--scenarios",
        type=_scenario_list,
        default=list(DEFAULT_SCENARIOS),
        metavar="A,B,...",
        help=f"scenarios to run (default {','.join(DEFAULT_SCENARIOS)})",
    )
    p.add_argument("--target", help="validate an existing vLLM at this URL instead of starting one")
    p.add_argument("--allow-remote", action="store_true", help="allow a --target that is not a loopback address")
    p.add_argument(
        "--keep-running",
        action="store_true",
        help="leave the stack up afterwards, with a Grafana showing the dashboards (started where one is installed, "
        "else a docker command to start one); Ctrl-C stops it",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        help="make the temporary folder inside this folder (default: the system's temporary folder)",
    )
    add_report_arguments(p, settle="20s")
    p.set_defaults(func=run_up)


def _order(scenarios: list[tuple[Scenario, str]]) -> list[tuple[Scenario, str]]:
    """Scenarios that stop or kill a server run last, so the others find every server up."""

    def stops_server(s: Scenario) -> bool:
        return any(a.do in ("target_down", "server_kill") for a in s.actions)

    return sorted(scenarios, key=lambda item: stops_server(item[0]))


def _plan(
    scenarios: Sequence[tuple[Scenario, str]], target: str | None
) -> tuple[list[tuple[Scenario, str, ModelKind]], list[str]]:
    """Each scenario with the server it runs on; notes on those left out."""
    plan, notes = [], []
    for scenario, source in scenarios:
        if target and scenario.name in NEEDS_MOE_EXPORTER:
            notes.append(
                f"{scenario.name} skipped: it needs the MoE exporter plugin in the vLLM, which --target does not say"
            )
            continue
        if target and scenario.peers:
            notes.append(
                f"{scenario.name} skipped: it needs {scenario.peers} more replicas of the target's model, "
                "which infersight up starts only without --target"
            )
            continue
        # Peers are replicas of the dense model: a scenario of one's own with peers runs there.
        plan.append((scenario, source, SERVER_FOR.get(scenario.name, "dense" if scenario.peers else "moe")))
    return plan, notes


def _dense_peers(plan: Sequence[tuple[Scenario, str, ModelKind]]) -> int:
    """How many more dense replicas the plan's scenarios need."""
    return max((s.peers for s, _, kind in plan if kind == "dense"), default=0)


def _target(endpoint: Endpoint) -> Target:
    vocabulary = load_vocabulary(endpoint.tokenizer)
    peers = tuple(Target(p.url, p.model, p.instance, vocabulary, p.controls) for p in endpoint.peers)
    return Target(endpoint.url, endpoint.model, endpoint.instance, vocabulary, endpoint.controls, peers=peers)


def _suite_target(
    scenario: Scenario, kind: ModelKind, endpoints: dict[ModelKind, Endpoint], external: Endpoint | None
) -> Target:
    """The scenario's target; with a companion: load, the other server of the stack as its companion."""
    if external is not None:
        return _target(external)
    others = [e for k, e in endpoints.items() if k != kind]
    companion = _target(others[0]) if scenario.companion is not None and others else None
    return dataclasses.replace(_target(endpoints[kind]), companion=companion)


@dataclass
class _GrafanaView:
    """How to see the dashboards live: a Grafana started here, or the command that starts one."""

    overview: str  # the overview dashboard's URL
    started: grafana.Grafana | None = None
    docker: str | None = None


def _grafana_view(stack: LocalStack) -> _GrafanaView:
    """A Grafana on the stack's Prometheus and Alertmanager with the stack's own (time-scaled)
    dashboards: started when a Grafana server is on PATH, else the ``docker run`` that starts one."""
    assert stack.observed is not None
    observed, cfg = stack.observed, stack.cfg
    provisioning = grafana.Provisioning(observed.bundle, observed.prometheus.url, observed.alertmanager.url)
    dashboards = (observed.bundle_dir / "dashboards").resolve()
    folder = (stack.workdir / "grafana").resolve()
    uid = grafana.overview_uid(cfg)
    command = grafana.server_command()
    if command is not None:
        say(f"starting Grafana ({' '.join(command)}) with the dashboards")
        try:
            started = grafana.Grafana(folder, provisioning, dashboards, command).start()
            return _GrafanaView(grafana.dashboard_url(started.url, uid), started=started)
        except ServiceError as exc:
            print(f"infersight up: Grafana did not start: {exc}", file=sys.stderr)
    container_dashboards = cfg.deploy.grafana.dashboards_path
    provisioning.write(folder / "provisioning", container_dashboards)
    port = free_port()
    docker = grafana.docker_command(folder / "provisioning", dashboards, container_dashboards, port, os.getuid())
    return _GrafanaView(grafana.dashboard_url(f"http://{LOOPBACK}:{port}", uid), docker=docker)


def _say_grafana(view: _GrafanaView) -> None:
    if view.started is not None:
        say(f"  {'Grafana (read-only)':<22} {view.overview}")
        return
    say("no Grafana server on PATH (grafana or grafana-server); to see the dashboards with this stack's data, run")
    say(f"  {view.docker}")
    say(f"and open {view.overview} (Linux: the container shares the host's network to reach 127.0.0.1)")


def _wait_for_ctrl_c(stack: LocalStack, shown: grafana.Grafana | None) -> None:
    say("the stack stays up; press Ctrl-C to stop it and remove the temporary folder")
    reported: set[str] = set()
    while True:
        time.sleep(5)
        dead = set(stack.healthy())
        if shown is not None and not shown.alive:
            dead.add("Grafana")
        if dead - reported:
            say(f"stopped by itself: {', '.join(sorted(dead - reported))}")
        reported = dead


def run_up(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    prog = "infersight up"
    if not scenario_dirs():
        print(
            f"{prog}: no loadgen/scenarios/ folder found (looked in ./loadgen/scenarios and beside the installed "
            "package). Run it from a clone of the repository, installed with `pip install -e .` (./scripts/setup).",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    try:
        scenarios = _order(load_scenarios(args.scenarios))
        target = check_target(args.target, args.allow_remote) if args.target else None
        check_results_dir(args.report_dir)
    except ResultsLocationError as exc:
        print(f"{prog}: --report-dir {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ScenarioError, TargetError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    plan, skipped = _plan(scenarios, target)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="infersight-up-", dir=args.workdir))
    say(f"{prog}: temporary state in {workdir} (removed at the end)")
    models = tuple(dict.fromkeys(kind for _, _, kind in plan))
    stack = LocalStack(workdir, models=models, target=target, say=say, dense_peers=_dense_peers(plan))
    began = time.monotonic()
    try:
        with interrupts_raise():
            return _run(args, stack, plan, skipped, target, began)
    except (KeyboardInterrupt, Terminated):
        print(f"\n{prog}: interrupted; stopping everything", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        with uninterruptible():
            stack.stop()
            shutil.rmtree(workdir, ignore_errors=True)
        say(f"{prog}: stopped everything it started and removed {workdir} ({time.monotonic() - began:.0f}s in all)")


def _run(
    args: argparse.Namespace,
    stack: LocalStack,
    plan: list[tuple[Scenario, str, ModelKind]],
    skipped: list[str],
    target: str | None,
    began: float,
) -> int:
    prog = "infersight up"
    report_dir: Path = args.report_dir
    bundle_dir = report_dir / "bundle"
    say(f"building the bundle (embedded defaults) into {bundle_dir}")
    bundle_files.write(bundle_files.render(bundle.build(Config()), with_mixin=True), bundle_dir)
    try:
        stack.start()
        if target:
            external = stack.external_endpoint(target, served_model(target))
        endpoints = {kind: stack.endpoint(kind) for kind in stack.servers}
    except (ServiceError, SessionError) as exc:
        print(f"{prog}: the stack did not start: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    say(f"stack up after {time.monotonic() - began:.0f}s:")
    for name, url in stack.urls().items():
        say(f"  {name:<22} {url}")
    assert stack.observed is not None
    prom, am = stack.observed.prometheus, stack.observed.alertmanager
    mon = Monitoring(
        PrometheusApi(prom.url),
        AlertmanagerApi(am.url),
        Config(),
        stack.cfg.time_scale,
        settle_timeout_s=args.settle.total_seconds,
        spans=stack.spans,  # None with --target: a vLLM up did not start sends its spans elsewhere
    )
    suite = [(s, src, _suite_target(s, kind, endpoints, external if target else None)) for s, src, kind in plan]
    total = sum(s.scheduled_duration.total_seconds for s, _, _ in suite)
    names = ", ".join(s.name for s, _, _ in suite)
    say(f"running {len(suite)} scenario(s), about {total / 60:.0f} min of load: {names}")

    def announce(run: ScenarioRun) -> None:
        missed = len(run.verdict.missed)
        say(f"  {run.scenario.name}: {'all expectations met' if not missed else f'{missed} missed'}")

    try:
        runs = run_suite(suite, mon, report_dir / "results", on_done=announce)
    except SessionError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    view = _grafana_view(stack) if args.keep_running else None
    try:
        return _report(args, stack, mon, runs, skipped, view)
    finally:
        if view is not None and view.started is not None:
            with uninterruptible():
                view.started.stop()


def _report(
    args: argparse.Namespace,
    stack: LocalStack,
    mon: Monitoring,
    runs: list[ScenarioRun],
    skipped: list[str],
    view: _GrafanaView | None,
) -> int:
    """Write the report (each dashboard's panels with data over the run, and links into the Grafana
    when one was started), say the outcome, and with --keep-running wait for Ctrl-C."""
    from infersight.validate import report  # matplotlib: imported only when a report is written

    assert stack.observed is not None
    prom, am = stack.observed.prometheus, stack.observed.alertmanager
    bundle_dir = args.report_dir / "bundle"
    meta = report.ReportMeta(stack.cfg.time_scale, prom.url, am.url, known_alerts(mon.prometheus))
    if runs:
        span = min(r.window.start for r in runs), max(r.window.end for r in runs)
        boards = stack.observed.bundle.dashboards
        meta.dashboards = check_dashboards(mon.prometheus, boards, *span, stack.observed.scrape_seconds())
    if view is not None and view.started is not None:
        meta.grafana_url = view.started.url
    meta.notes += skipped
    intervals = stack.cfg.intervals
    meta.notes.append(
        f"Scrape and rule evaluation every {stack.cfg.scaled(intervals.scrape)} "
        f"({intervals.scrape} at production timings; "
        f"the shipped 15s/30s would scale below what a busy 2-core host answers in)."
    )
    meta.notes.append(
        f"Stack started by infersight up (temporary, now removed); the dashboards and rules to deploy are in "
        f"{bundle_dir.resolve()} (embedded defaults, production timings)."
    )
    index, summary = report.write_report(args.report_dir, runs, meta)
    print_outcome(runs, summary, index)
    say(f"dashboards and rules: {bundle_dir.resolve()}")
    for note in skipped:
        say(f"note: {note}")
    if view is not None:
        for name, url in stack.urls().items():
            say(f"  {name:<22} {url}")
        _say_grafana(view)
        _wait_for_ctrl_c(stack, view.started)
    return EXIT_MISSED if summary.missed else 0
