"""``infersight loadgen``: run a load scenario, check scenario files, serve the stub.

Exit codes of ``loadgen run``: 0 a valid, complete run; 1 the run is invalid (the client fell
behind its schedule, the responses were not OpenAI-shaped, or the client failed; results are
still written); 2 bad input (scenario, flags, target, results folder; nothing was sent); 3 the
target did not answer before the run; 4 the results could not be written; 130 interrupted
(partial results written).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import infersight
from infersight.loadgen import runner, stub_server
from infersight.loadgen.prompts import TokenizerError, load_vocabulary
from infersight.loadgen.results import (
    REQUESTS_CSV,
    RESULTS_JSON,
    ResultsLocationError,
    ResultsWriteError,
    check_results_dir,
)
from infersight.loadgen.scenario import Scenario, ScenarioError, load_scenario
from infersight.loadgen.target import TargetError, check_target

EXIT_INVALID, EXIT_BAD_INPUT, EXIT_TARGET, EXIT_NOT_WRITTEN, EXIT_INTERRUPTED = 1, 2, 3, 4, 130


def scenario_dirs() -> list[Path]:
    """Where bare scenario names are looked up: ./loadgen/scenarios, then the source checkout's."""
    repo = Path(infersight.__file__).resolve().parent.parent
    dirs = [Path.cwd() / "loadgen" / "scenarios", repo / "loadgen" / "scenarios"]
    return list(dict.fromkeys(d for d in dirs if d.is_dir()))


def resolve_scenario(arg: str) -> Path:
    path = Path(arg)
    if path.exists() or path.suffix in (".yaml", ".yml") or "/" in arg:
        return path
    for folder in scenario_dirs():
        candidate = folder / f"{arg}.yaml"
        if candidate.is_file():
            return candidate
    known = sorted({p.stem for d in scenario_dirs() for p in d.glob("*.yaml")})
    raise ScenarioError(arg, [("(file)", f"no such file or scenario name; known scenarios: {known}")])


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("loadgen", help="open-loop load against an OpenAI-compatible server (vLLM)")
    lsub = p.add_subparsers(dest="loadgen_command", required=True, metavar="ACTION")

    run = lsub.add_parser("run", help="run a scenario and write results.json and requests.csv")
    run.add_argument("scenario", help="a scenario YAML file, or the name of one under loadgen/scenarios/")
    run.add_argument("--target", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    run.add_argument("--allow-remote", action="store_true", help="allow a target that is not a loopback address")
    run.add_argument("--model", help="model name to request (default: the scenario's, else the first of /v1/models)")
    run.add_argument(
        "--tokenizer", type=Path, help="the target model's folder or tokenizer.json; prompts are then in its tokens"
    )
    run.add_argument("--out", type=Path, help="results folder (default: loadgen-results/NAME-TIMESTAMP)")
    run.add_argument("--force", action="store_true", help="replace an earlier run's results in --out")
    run.add_argument("--seed", type=int, help="override the scenario's seed")
    progress = run.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None, help="live progress")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="no live progress")
    run.set_defaults(func=run_command)

    check = lsub.add_parser("check", help="validate scenario files without sending anything")
    check.add_argument("scenarios", nargs="+", help="scenario files or names")
    check.set_defaults(func=check_command)

    stub = lsub.add_parser("stub", help="serve the streaming stub server (known TTFT/ITL) on loopback")
    stub_server.add_arguments(stub)
    stub.set_defaults(func=stub_command)


def _load(arg: str) -> Scenario:
    return load_scenario(resolve_scenario(arg))


def check_command(args: argparse.Namespace) -> int:
    status = 0
    for arg in args.scenarios:
        try:
            scenario = _load(arg)
        except ScenarioError as exc:
            print(f"infersight loadgen check: {exc}", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        print(f"{arg}: ok ({scenario.name}: {len(scenario.stages)} stages, {scenario.scheduled_duration})")
    return status


def _fmt(value: Any, scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}"


def print_summary(run: dict[str, Any], json_path: Path, csv_path: Path) -> None:
    summary = run["summary"]
    print(f"{'stage':<16} {'req/s':>8} {'got/s':>8} {'sent':>7} {'ok':>7} {'ttft p50/p99 ms':>17} "
          f"{'itl p50/p99 ms':>16} {'lag p99 ms':>10}  errors")  # fmt: skip
    for s in summary["stages"]:
        requested = _fmt(s.get("requested_rate")) if s["mode"] == "rate" else f"x{s['concurrency']}"
        ttft, itl = s["ttft_s"], s["itl_s"]
        print(
            f"{s['name']:<16} {requested:>8} {_fmt(s['achieved_rate']):>8} {s['sent']:>7} {s['succeeded']:>7} "
            f"{_fmt(ttft['p50'], 1000) + '/' + _fmt(ttft['p99'], 1000):>17} "
            f"{_fmt(itl['p50'], 1000) + '/' + _fmt(itl['p99'], 1000):>16} "
            f"{_fmt(s['schedule_lag_ms']['p99']):>10}  {s['errors'] or ''}"
        )
    for note in summary["notes"]:
        print(f"note: {note}")
    if summary["valid"]:
        print("valid run (no open-loop stage sent more requests late than a 1 % late share gives by chance)")
    for reason in summary["invalid_reasons"]:
        print(f"INVALID RUN: {reason}")
    print(f"wrote {json_path} and {csv_path}")


def default_results_dir(scenario_name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("loadgen-results") / f"{scenario_name}-{stamp}"


def run_command(args: argparse.Namespace) -> int:
    try:
        scenario = _load(args.scenario)
        if args.seed is not None:
            scenario = scenario.model_copy(update={"seed": args.seed})
        target = check_target(args.target, args.allow_remote)
        vocabulary = load_vocabulary(args.tokenizer)
        out_dir = args.out or default_results_dir(scenario.name)
        check_results_dir(out_dir)
        earlier = [name for name in (RESULTS_JSON, REQUESTS_CSV) if (out_dir / name).exists()]
        if earlier and not args.force:
            raise ResultsLocationError(
                f"{out_dir} holds an earlier run's {' and '.join(earlier)}; give a new folder, or pass --force to "
                "replace them"
            )
    except ResultsLocationError as exc:
        print(f"infersight loadgen run: --out {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ScenarioError, TargetError, TokenizerError) as exc:
        print(f"infersight loadgen run: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if scenario.actions:
        print(
            f"note: {len(scenario.actions)} fault action(s) in this scenario are performed by `infersight validate`; "
            "`loadgen run` sends the traffic only",
            file=sys.stderr,
        )
    if scenario.companion is not None:
        print(
            "note: the scenario's companion load (to a second model's server) is sent by `infersight validate "
            "--companion-target` and `infersight up`; `loadgen run` sends to --target only",
            file=sys.stderr,
        )
    opts = runner.RunOptions(
        target=target,
        out_dir=out_dir,
        vocabulary=vocabulary,
        model=args.model,
        progress=sys.stderr.isatty() if args.progress is None else args.progress,
    )
    try:
        outcome = runner.run(scenario, opts)
    except TargetError as exc:
        print(f"infersight loadgen run: {exc}", file=sys.stderr)
        return EXIT_TARGET
    except ResultsWriteError as exc:  # the folder was checked before the run: it changed under it
        print(f"infersight loadgen run: {exc}", file=sys.stderr)
        return EXIT_NOT_WRITTEN
    print_summary(outcome.run, outcome.json_path, outcome.csv_path)
    if outcome.ended == "interrupted":
        return EXIT_INTERRUPTED
    return 0 if outcome.valid else EXIT_INVALID


def stub_command(args: argparse.Namespace) -> int:
    return stub_server.run_from_args(args, "infersight loadgen stub")
