"""``infersight deploy rules`` and ``infersight deploy dashboards``: push a bundle's rules into a
running Prometheus, or its dashboards into Grafana. The bundle is built from ``--config`` unless
``--bundle`` names one already built (what was reviewed is what ships)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from infersight import bundle, bundle_files
from infersight.commands.arguments import http_url, time_limit
from infersight.config import Config, ConfigError, load_config
from infersight.deploy import grafana, http
from infersight.deploy.grafana_api import TOKEN_ENV, Grafana, GrafanaError, token_from_env
from infersight.deploy.rules_deploy import DeployError, DeployInterrupted, Prometheus, RulesDeploy, rule_files
from infersight.lint import LintError
from infersight.packs import RULE_KINDS


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("deploy", help="push the bundle's rules into Prometheus or its dashboards into Grafana")
    targets = p.add_subparsers(dest="target", required=True, metavar="TARGET")

    rules = targets.add_parser(
        "rules",
        help="check the rule files with promtool, write them into Prometheus's rules folder, reload, confirm",
        description="On any failure the previous rule files are put back and Prometheus reloaded.",
    )
    _source(rules)
    rules.add_argument("--rules-dir", type=Path, required=True, help="the folder Prometheus's rule_files reads")
    rules.add_argument("--prometheus-url", type=http_url, required=True, help="e.g. http://127.0.0.1:9090")
    _timeout(rules, "the reload and every rule's first evaluation, together")
    rules.set_defaults(func=run_rules)

    boards = targets.add_parser(
        "dashboards",
        help="import the dashboards through Grafana's HTTP API into their folder",
        description=f"The Grafana token is read from ${TOKEN_ENV} (a service-account token, Editor role).",
    )
    _source(boards)
    boards.add_argument("--grafana-url", type=http_url, required=True, help="e.g. https://grafana.example.com")
    boards.add_argument("--folder", help="folder title (default: deploy.grafana.folder)")
    _timeout(boards, "the whole import")
    boards.set_defaults(func=run_dashboards)


def _source(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, help="infersight.yaml (default: embedded defaults)")
    p.add_argument("--bundle", type=Path, help="deploy this already built bundle instead of building one")


def _timeout(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--timeout",
        type=time_limit,
        default=120.0,
        help=f"time limit for {what}, however slowly the server answers: seconds or a duration such as 2m "
        "(default 120)",
    )


class BundleError(ValueError):
    """A file of the --bundle folder cannot be read; the message names it."""


def load_bundle_files(args: argparse.Namespace) -> tuple[Config, dict[str, str]]:
    """The config and the bundle's rule and dashboard files: built from --config, or read from an
    already built --bundle folder (what was reviewed is what ships)."""
    cfg = load_config(args.config)
    if args.bundle is None:
        return cfg, bundle_files.render(bundle.build(cfg), with_deploy=False)
    root: Path = args.bundle
    rebuild = f"build one with `infersight build --out {root}`"
    if not root.exists():
        raise BundleError(f"--bundle {root} does not exist; {rebuild}")
    if not root.is_dir():
        raise BundleError(f"--bundle {root} is not a folder; give the folder `infersight build --out` wrote")
    files = {
        p.relative_to(root).as_posix(): _read_text(root, p)
        for kind, pattern in [*((k, "*.yaml") for k in RULE_KINDS), ("dashboards", "*.json")]
        for p in sorted((root / kind).glob(pattern))
    }
    if not files:
        raise BundleError(f"--bundle {root} holds no recording_rules/, alerts/ or dashboards/ files; {rebuild}")
    return cfg, files


def _read_text(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"--bundle {root}: {rel} is not UTF-8 text (byte {exc.start}); rebuild the bundle") from None
    except OSError as exc:
        raise BundleError(f"--bundle {root}: cannot read {rel}: {exc.strerror or exc}") from None


def _dashboards(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    boards = {}
    for rel, text in files.items():
        if not rel.startswith("dashboards/"):
            continue
        try:
            board = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BundleError(f"{rel} is not valid JSON ({exc.msg} at line {exc.lineno}); rebuild the bundle") from None
        if not isinstance(board, dict):
            raise BundleError(f"{rel} is not a dashboard (a JSON object); rebuild the bundle")
        boards[rel.removeprefix("dashboards/")] = board
    return boards


def _fail(command: str, exc: Exception, code: int) -> int:
    print(f"infersight deploy {command}: {exc}", file=sys.stderr)
    return code


def run_rules(args: argparse.Namespace) -> int:
    try:
        _, files = load_bundle_files(args)
    except (ConfigError, LintError, BundleError) as exc:
        return _fail("rules", exc, 2)
    deploy = RulesDeploy(args.rules_dir, Prometheus(args.prometheus_url), timeout=args.timeout)
    try:
        deploy.run(rule_files(files))
    except DeployInterrupted as exc:
        return _fail("rules", exc, exc.exit_code)
    except (DeployError, http.RequestFailed) as exc:
        return _fail("rules", exc, 1)
    except KeyboardInterrupt:  # during promtool's check, before anything changed
        return _fail("rules", RuntimeError("interrupted (SIGINT); nothing was changed"), 130)
    return 0


def run_dashboards(args: argparse.Namespace) -> int:
    try:
        cfg, files = load_bundle_files(args)
        boards = _dashboards(files)
        token = token_from_env()
    except (ConfigError, LintError, BundleError, GrafanaError) as exc:
        return _fail("dashboards", exc, 2)
    if not boards:
        return _fail("dashboards", ValueError("the bundle has no dashboards"), 2)
    client = Grafana(args.grafana_url, token, timeout=args.timeout)
    folder = args.folder or cfg.deploy.grafana.folder
    try:
        client.deploy(boards, grafana.folder_uid(cfg), folder, cfg.dashboards.datasource_uid)
    except (GrafanaError, http.RequestFailed) as exc:
        return _fail("dashboards", exc, 1)
    except KeyboardInterrupt:
        return _fail("dashboards", RuntimeError("interrupted (SIGINT); the dashboards imported so far stay"), 130)
    print(f"imported {len(boards)} dashboards into folder {folder!r}")
    return 0
