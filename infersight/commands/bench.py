"""``infersight bench tracing``: vLLM's throughput with request spans on, off, and sent to a collector
that is down, side by side in one run (:mod:`infersight.traces.overhead`).

``infersight bench fleet``: size a Prometheus for a fleet. Serves N synthetic vLLM engines (plus
their dcgm-exporter and MoE-exporter series) from one process, has a real Prometheus scrape them
and evaluate the bundle's rules at production timings, then prints rule-group cost, series,
memory and dashboard query cost (docs/scale.md). Everything it started is stopped on exit, on
Ctrl-C and on SIGTERM.

Exit codes: 0 measured; 2 bad input; 3 a process did not start; 130 interrupted."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from infersight import bundle, bundle_files
from infersight.commands import arguments
from infersight.commands.deploy import BundleError, load_bundle_files
from infersight.config import ConfigError, load_config
from infersight.fleet import bench
from infersight.fleet.measure import QueryFailed
from infersight.interrupts import Terminated, interrupts_raise, signal_of, uninterruptible
from infersight.lint import LintError
from infersight.loadgen.prompts import load_vocabulary
from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.process import ServiceError
from infersight.stack.tiny_models import SERVED_NAMES, ensure_tiny_model
from infersight.stack.vllm_server import VLLMServer, tracing
from infersight.traces import overhead
from infersight.traces.receiver import PATH as OTLP_PATH
from infersight.traces.receiver import SpanReceiver

EXIT_BAD_INPUT = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130
MAX_ENGINES = 20000
# The 5 m rate windows, two evaluation intervals and a scrape to spare.
DEFAULT_WAIT = "6m"


MAX_FLEET_SIZES = 6


def _engine_counts(text: str) -> tuple[int, ...]:
    """``1000``, or ``10,100,1000`` for several fleet sizes in one run (measured smallest first)."""
    counts = sorted({_positive(part.strip()) for part in text.split(",")})
    if len(counts) > MAX_FLEET_SIZES:
        raise argparse.ArgumentTypeError(
            f"{text!r} names {len(counts)} fleet sizes: give at most {MAX_FLEET_SIZES} (each takes --duration or more)"
        )
    return tuple(counts)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_ENGINES:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count: give a whole number from 1 to {MAX_ENGINES}")
    return value


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="benchmarks: how the bundle scales")
    bench_sub = p.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    f = bench_sub.add_parser(
        "fleet", help="a synthetic fleet of vLLM engines on a real Prometheus: rule, series and dashboard cost"
    )
    f.add_argument(
        "--engines",
        type=_engine_counts,
        required=True,
        help="vLLM servers (scrape targets) to simulate; several comma-separated sizes (10,100,1000) are measured "
        "one after another in the same run and compared per engine",
    )
    f.add_argument("--models", type=_positive, default=20, help="models they serve (default 20; one in ten is MoE)")
    f.add_argument("--config", type=Path, help="infersight.yaml (default: embedded defaults)")
    f.add_argument("--bundle", type=Path, help="measure this already built bundle instead of building one")
    f.add_argument(
        "--duration",
        type=arguments.time_limit,
        default=arguments.time_limit(DEFAULT_WAIT),
        help=f"how long to let Prometheus scrape and evaluate before measuring (default {DEFAULT_WAIT}: "
        "the 5m rate windows filled); shorter runs measure partly filled windows",
    )
    f.add_argument(
        "--time-scale",
        type=arguments.time_scale,
        default=1.0,
        help="build the bundle with this time scale (default 1: production timings); ignored with --bundle",
    )
    f.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the second run without rules that measures what the bundle adds to head series and RSS "
        "(it takes another --duration)",
    )
    f.add_argument(
        "--no-dashboards",
        action="store_true",
        help="skip the dashboard queries (recorded and raw, over 1h and 6h): rule cost, series and memory only",
    )
    f.set_defaults(func=run_fleet)
    t = bench_sub.add_parser(
        "tracing",
        help="vLLM throughput with request spans on, off and sent where nothing listens: three tiny vLLMs, "
        "measured in alternating rounds",
    )
    t.add_argument("--rounds", type=_bounded(1, 20), default=4, help="rounds per server (default 4)")
    t.add_argument("--round-seconds", type=_bounded(5, 600), default=30, help="load per round, in seconds (default 30)")
    t.add_argument("--concurrency", type=_bounded(1, 64), default=4, help="closed-loop streams (default 4)")
    t.add_argument("--output-tokens", type=_bounded(1, 256), default=64, help="tokens per request (default 64)")
    t.set_defaults(func=run_tracing)


def _bounded(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low} to {high}")
        return value

    return parse


def _fail(message: str, code: int, bench_name: str = "fleet") -> int:
    print(f"infersight bench {bench_name}: {message}", file=sys.stderr)
    return code


def _interrupted(exc: BaseException, bench_name: str) -> int:
    sig = signal_of(exc)
    what = sig.name if sig else "signal"
    return _fail(f"interrupted ({what}); every process it started is stopped", EXIT_INTERRUPTED, bench_name)


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def _paused(server: VLLMServer, sig: signal.Signals) -> Callable[[], None]:
    return lambda: server.process.kill(sig)


def run_tracing(args: argparse.Namespace) -> int:
    """Three tiny dense vLLMs: one sending its request spans to a loopback receiver, one sending
    none, one sending them where nothing listens; alternating rounds."""

    workdir = Path(tempfile.mkdtemp(prefix="infersight-bench-tracing-"))
    servers: dict[str, VLLMServer] = {}
    try:
        with interrupts_raise(), SpanReceiver() as receiver:
            model_dir = ensure_tiny_model("dense")
            name = SERVED_NAMES["dense"]
            nobody_listens = f"http://{LOOPBACK}:{free_port()}{OTLP_PATH}"
            for kind, endpoint in (
                (overhead.PLAIN, None),
                (overhead.TRACED, receiver.url),
                (overhead.UNRECEIVED, nobody_listens),
            ):
                port = free_port()
                args_, env = tracing(endpoint, name, f"{LOOPBACK}:{port}") if endpoint else ((), {})
                _say(f"starting the {kind} vLLM (about a minute on 2 cores)")
                servers[kind] = VLLMServer(
                    model_dir, name, workdir / f"vllm-{kind}", extra_args=args_, env=env, port=port
                )
                servers[kind].start()
            targets = [
                overhead.BenchTarget(kind, s.url, name, _paused(s, signal.SIGSTOP), _paused(s, signal.SIGCONT))
                for kind, s in servers.items()
            ]
            rounds = overhead.measure(
                targets,
                args.rounds,
                args.round_seconds,
                args.concurrency,
                args.output_tokens,
                load_vocabulary(model_dir),
                workdir / "rounds",
                _say,
            )
            time.sleep(2)  # the last spans leave within half a second
            sent = {t for r in rounds if r.target == overhead.TRACED for t in r.trace_ids}
            matched = len(sent & {s.trace_id for s in receiver.spans()})
    except (KeyboardInterrupt, Terminated) as exc:
        return _interrupted(exc, "tracing")
    except ServiceError as exc:
        return _fail(str(exc).splitlines()[0], EXIT_UNREACHABLE, "tracing")
    finally:
        with uninterruptible():
            for server in servers.values():
                server.process.kill(signal.SIGCONT)  # a paused server would not stop
                server.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    print(overhead.render(rounds, matched))
    return 0


def run_fleet(args: argparse.Namespace) -> int:
    try:
        if args.bundle is not None:
            if not args.bundle.is_dir():
                raise BundleError(f"--bundle {args.bundle} is not a folder; give a folder `infersight build` wrote")
            if not any((args.bundle / "recording_rules").glob("*.yaml")):
                raise BundleError(f"--bundle {args.bundle} holds no recording_rules/*.yaml: not a bundle")
            cfg, files = load_bundle_files(args)
        else:
            cfg = load_config(args.config).model_copy(update={"time_scale": args.time_scale})
            files = bundle_files.render(bundle.build(cfg), with_deploy=False)
    except (ConfigError, LintError, BundleError) as exc:
        return _fail(str(exc), EXIT_BAD_INPUT)
    problem = bench.capacity_problem(max(args.engines))
    if problem:
        return _fail(f"this machine cannot serve the fleet: {problem}", EXIT_BAD_INPUT)
    workdir = Path(tempfile.mkdtemp(prefix="infersight-bench-"))
    reports = []
    try:
        with interrupts_raise():
            for engines in args.engines:
                report = bench.run(
                    workdir / str(engines),
                    cfg,
                    files,
                    engines,
                    args.models,
                    args.duration,
                    _say,
                    baseline=not args.no_baseline,
                    dashboards=not args.no_dashboards,
                )
                reports.append(report)
                print(bench.render(report), flush=True)  # each size as soon as it is measured
                shutil.rmtree(workdir / str(engines), ignore_errors=True)  # its TSDB: disk for the next size
    except (KeyboardInterrupt, Terminated) as exc:
        return _interrupted(exc, "fleet")
    except ServiceError as exc:
        return _fail(str(exc).splitlines()[0], EXIT_UNREACHABLE)
    except (OSError, QueryFailed) as exc:  # Prometheus stopped answering, or a measurement outlasted its timeout
        return _fail(f"measuring failed: Prometheus did not answer ({exc}); is the machine overloaded?", 1)
    finally:
        with uninterruptible():
            shutil.rmtree(workdir, ignore_errors=True)
            if len(reports) > 1:  # also when a later size failed or was interrupted: what was measured
                print(bench.render_growth(reports), flush=True)
    return 0
