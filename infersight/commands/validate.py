"""``infersight validate``: run scenarios with fault actions against a running vLLM, Prometheus
(loaded with the bundle's rules) and Alertmanager, and report which expected alerts fired, how
fast, and which alerts fired on healthy traffic.

Exit codes: 0 every expectation met (or skipped); 1 an expectation was missed; 2 bad input
(scenario, flag, URL, report folder; nothing was sent); 3 the target or the monitoring stack did
not answer; 130 interrupted (no report).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from infersight.commands.arguments import duration, loopback_listen, time_scale
from infersight.commands.loadgen import resolve_scenario
from infersight.config import Config, ConfigError, load_config
from infersight.durations import Duration
from infersight.loadgen.prompts import TokenizerError, load_vocabulary
from infersight.loadgen.results import ResultsLocationError, check_results_dir
from infersight.loadgen.scenario import Scenario, ScenarioError, load_scenario
from infersight.loadgen.target import TargetError, base_url, check_target
from infersight.stack.observed import VALIDATION_TIME_SCALE
from infersight.traces.receiver import SpanReceiver
from infersight.validate.apis import AlertmanagerApi, ApiError, PrometheusApi
from infersight.validate.controls import command_controls
from infersight.validate.evaluator import Summary
from infersight.validate.session import Monitoring, ScenarioRun, SessionError, Target, instance_of, run_suite
from infersight.validate.session import served_model as ask_served_model

EXIT_MISSED, EXIT_BAD_INPUT, EXIT_UNREACHABLE, EXIT_INTERRUPTED = 1, 2, 3, 130
DEFAULT_REPORT_DIR = Path("infersight-report")


def add_report_arguments(p: argparse.ArgumentParser, settle: str = "30s") -> None:
    """Flags ``validate`` and ``up`` share."""
    p.add_argument(
        "--report-dir",
        type=Path,
        default=DEFAULT_REPORT_DIR,
        help=f"where index.html, plots/, validation.json and the load results go (default ./{DEFAULT_REPORT_DIR})",
    )
    p.add_argument(
        "--settle",
        type=duration,
        default=Duration.parse(settle),
        help="before each scenario, wait up to this long for the target's alerts that could count in it to clear "
        "(pending ones, and firing ones its expectations name); what still fires then is reported as "
        f"carried over and judged neither way (default {settle})",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="prove the alerts: run scenarios with faults against vLLM + Prometheus + Alertmanager, write a report",
        description="Run load scenarios (with their fault actions) against a vLLM that a Prometheus loaded with the "
        "bundle's rules scrapes; watch Prometheus and Alertmanager; report per expectation whether the alert fired "
        "and how fast, and false positives on healthy traffic. Exits 1 when an expectation is missed.",
    )
    p.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="scenario files or names under loadgen/scenarios/")
    p.add_argument("--target", required=True, help="vLLM base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--prometheus", required=True, help="Prometheus base URL (loaded with the bundle's rules)")
    p.add_argument("--alertmanager", help="Alertmanager base URL; without it, arrival there is not checked")
    p.add_argument("--allow-remote", action="store_true", help="allow a --target that is not a loopback address")
    p.add_argument("--model", help="model to request (default: the first of /v1/models)")
    p.add_argument("--tokenizer", type=Path, help="the model's folder or tokenizer.json: prompts in its tokens")
    p.add_argument("--instance", help="the target's instance label in Prometheus (default: HOST:PORT of --target)")
    p.add_argument("--config", type=Path, help="infersight.yaml the bundle was built from (names its rules)")
    p.add_argument(
        "--time-scale",
        type=time_scale,
        default=VALIDATION_TIME_SCALE,
        help=f"the time scale the rules were built with, stated in the report (default {VALIDATION_TIME_SCALE:g})",
    )
    hooks = p.add_argument_group("fault hooks (an action without its hook is skipped and reported as skipped)")
    hooks.add_argument("--server-kill-cmd", metavar="CMD", help="shell command that SIGKILLs vLLM (server_kill)")
    hooks.add_argument("--target-down-cmd", metavar="CMD", help="shell command that stops vLLM (target_down)")
    hooks.add_argument(
        "--target-up-cmd",
        metavar="CMD",
        help="shell command that starts vLLM again (target_up); then /v1/models is awaited",
    )
    hooks.add_argument(
        "--gpu-control-file",
        type=Path,
        metavar="FILE",
        help="the fake GPU exporter's --control-file (gpu_leak_start, gpu_leak_stop)",
    )
    hooks.add_argument(
        "--engine-pause-cmd",
        metavar="CMD",
        help="shell command that freezes vLLM's engine core, e.g. 'pkill -STOP -x VLLM::EngineCor' (engine_pause)",
    )
    hooks.add_argument(
        "--engine-resume-cmd",
        metavar="CMD",
        help="shell command that continues it, e.g. 'pkill -CONT -x VLLM::EngineCor' (engine_resume)",
    )
    p.add_argument(
        "--companion-target",
        metavar="URL",
        help="a second vLLM (another model) for scenarios with a companion: load, e.g. traffic_stop",
    )
    p.add_argument(
        "--otlp-receiver",
        type=loopback_listen,
        metavar="HOST:PORT",
        help="receive the target's request spans over OTLP/HTTP here (vLLM: --otlp-traces-endpoint "
        "http://HOST:PORT/v1/traces, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf); the report then joins "
        "each request to its span by the traceparent the load generator sends",
    )
    add_report_arguments(p)
    p.set_defaults(func=run_validate)


def load_scenarios(args: Sequence[str]) -> list[tuple[Scenario, str]]:
    """Each scenario with the file it came from; ScenarioError names every bad one."""
    out = []
    for arg in args:
        path = resolve_scenario(arg)
        out.append((load_scenario(path), str(path)))
    return out


def print_outcome(runs: Sequence[ScenarioRun], summary: Summary, index: Path) -> None:
    for run in runs:
        for e in run.verdict.expectations:
            ttd = f" ({e.ttd_s:.1f}s)" if e.ttd_s is not None else ""
            print(f"  {e.status.upper():<7} {run.scenario.name}: {e.kind} {e.selector}{ttd}: {e.detail}")
        for fp in run.verdict.false_positives:
            print(f"  FALSE POSITIVE {run.scenario.name}: {fp.description} at +{fp.offset_s:.1f}s of healthy traffic")
    met = summary.expectations - summary.missed - summary.skipped
    print(f"{met} of {summary.expectations} expectations met, {summary.missed} missed, {summary.skipped} skipped")
    print(f"report: {index.resolve()}")


def known_alerts(prom: PrometheusApi) -> list[str]:
    try:
        return sorted({str(rule["name"]) for rule in prom.alert_rules()})
    except ApiError:
        return []


def run_validate(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    prog = "infersight validate"
    try:
        scenarios = load_scenarios(args.scenarios)
        url = check_target(args.target, args.allow_remote)
        other = (
            check_target(args.companion_target, args.allow_remote, "--companion-target")
            if args.companion_target
            else None
        )
        vocabulary = load_vocabulary(args.tokenizer)
        cfg = load_config(args.config) if args.config is not None else Config()
        prometheus_url = base_url(args.prometheus, "--prometheus", "http://127.0.0.1:9090", allow_path=True)
        alertmanager_url = (
            base_url(args.alertmanager, "--alertmanager", "http://127.0.0.1:9093", allow_path=True)
            if args.alertmanager
            else None
        )
        check_results_dir(args.report_dir)
    except ResultsLocationError as exc:
        print(f"{prog}: --report-dir {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ScenarioError, TargetError, TokenizerError, ConfigError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        spans = SpanReceiver(*args.otlp_receiver) if args.otlp_receiver else None
    except OSError as exc:
        host, port = args.otlp_receiver
        print(f"{prog}: --otlp-receiver cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # Stopped whatever happens: a receiver left listening would hold its port.
    with spans if spans is not None else nullcontext():
        controls = command_controls(
            url,
            args.server_kill_cmd,
            args.target_down_cmd,
            args.target_up_cmd,
            args.gpu_control_file,
            engine_pause=args.engine_pause_cmd,
            engine_resume=args.engine_resume_cmd,
        )
        prom = PrometheusApi(prometheus_url)
        mon = Monitoring(
            prom,
            AlertmanagerApi(alertmanager_url) if alertmanager_url else None,
            cfg,
            args.time_scale,
            settle_timeout_s=args.settle.total_seconds,
            spans=spans,
        )
        try:
            model = args.model or ask_served_model(url)
            companion = (
                Target(other, ask_served_model(other, "--companion-target"), instance_of(other), vocabulary)
                if other
                else None
            )
            target = Target(url, model, args.instance or instance_of(url), vocabulary, controls, companion)
            runs = run_suite([(s, src, target) for s, src in scenarios], mon, args.report_dir / "results")
        except SessionError as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            return EXIT_UNREACHABLE
        except KeyboardInterrupt:
            print(f"{prog}: interrupted; no report written", file=sys.stderr)
            return EXIT_INTERRUPTED
        from infersight.validate import report  # matplotlib: imported only when a report is written

        meta = report.ReportMeta(args.time_scale, args.prometheus, args.alertmanager, known_alerts(prom))
        if mon.alertmanager is None:
            meta.notes.append("No Alertmanager was watched: arrival there was not checked.")
        index, summary = report.write_report(args.report_dir, runs, meta)
        print_outcome(runs, summary, index)
        return EXIT_MISSED if summary.missed else 0
