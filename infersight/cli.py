"""The ``infersight`` command. Each subcommand lives in its own module and registers
itself through ``add_parser(subparsers)``; this file only dispatches."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Modules that provide add_parser(subparsers) -> None and set `func` on their parser.
COMMAND_MODULES: tuple[str, ...] = (
    "infersight.commands.build",
    "infersight.commands.deploy",
    "infersight.commands.exporter",
    "infersight.commands.loadgen",
    "infersight.commands.validate",
    "infersight.commands.up",
    "infersight.commands.bench",
)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="infersight",
        description="Observability bundle for vLLM serving: build, validate and deploy dashboards and rules.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
