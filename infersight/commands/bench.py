"""``infersight bench fleet``: size a Prometheus for a fleet. Serves N synthetic vLLM engines (plus
their dcgm-exporter and MoE-exporter series) from one process, has a real Prometheus scrape them
and evaluate the bundle's rules at production timings, then prints rule-group cost, series,
memory and dashboard query cost (docs/scale.md). Everything it started is stopped on exit, on
Ctrl-C and on SIGTERM.

Exit codes: 0 measured; 2 bad input; 3 a process did not start; 130 interrupted."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from infersight import bundle, bundle_files
from infersight.commands import arguments
from infersight.commands.deploy import BundleError, load_bundle_files
from infersight.config import ConfigError, load_config
from infersight.fleet import bench
from infersight.fleet.measure import QueryFailed
from infersight.interrupts import Terminated, interrupts_raise, signal_of, uninterruptible
from infersight.lint import LintError
from infersight.stack.process import ServiceError

EXIT_BAD_INPUT = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130
MAX_ENGINES = 20000
# The 5 m rate windows, two evaluation intervals and a scrape to spare.
DEFAULT_WAIT = "6m"


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
    f.add_argument("--engines", type=_positive, required=True, help="vLLM servers (scrape targets) to simulate")
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


def _fail(message: str, code: int) -> int:
    print(f"infersight bench fleet: {message}", file=sys.stderr)
    return code


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
    problem = bench.capacity_problem(args.engines)
    if problem:
        return _fail(f"this machine cannot serve the fleet: {problem}", EXIT_BAD_INPUT)
    workdir = Path(tempfile.mkdtemp(prefix="infersight-bench-"))
    try:
        with interrupts_raise():
            report = bench.run(
                workdir,
                cfg,
                files,
                args.engines,
                args.models,
                args.duration,
                lambda m: print(m, file=sys.stderr),
                baseline=not args.no_baseline,
                dashboards=not args.no_dashboards,
            )
    except (KeyboardInterrupt, Terminated) as exc:
        sig = signal_of(exc)
        return _fail(f"interrupted ({sig.name if sig else 'signal'}); every process it started is stopped", 130)
    except ServiceError as exc:
        return _fail(str(exc).splitlines()[0], EXIT_UNREACHABLE)
    except (OSError, QueryFailed) as exc:  # Prometheus stopped answering, or a measurement outlasted its timeout
        return _fail(f"measuring failed: Prometheus did not answer ({exc}); is the machine overloaded?", 1)
    finally:
        with uninterruptible():
            shutil.rmtree(workdir, ignore_errors=True)
    print(bench.render(report))
    return 0
