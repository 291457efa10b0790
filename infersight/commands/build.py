"""``infersight init`` and ``infersight build``."""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from infersight import bundle, bundle_files
from infersight.config import ConfigError, load_config
from infersight.lint import LintError
from infersight.output import write_atomic


def add_parser(sub: argparse._SubParsersAction) -> None:
    p_init = sub.add_parser("init", help="write a commented infersight.yaml with every default")
    p_init.add_argument("path", nargs="?", default="infersight.yaml", type=Path)
    p_init.add_argument("--force", action="store_true", help="overwrite an existing file")
    p_init.set_defaults(func=run_init)

    p_build = sub.add_parser("build", help="generate dashboards, rules and deploy files from the config")
    p_build.add_argument("--config", type=Path, help="infersight.yaml (default: embedded defaults)")
    p_build.add_argument("--out", type=Path, default=Path("bundle"), help="output folder (default: ./bundle)")
    p_build.add_argument(
        "--check",
        type=Path,
        metavar="DIR",
        help="write nothing; exit 1 and list the stale files if DIR differs from the build",
    )
    p_build.set_defaults(func=run_build)


def template_text() -> str:
    return resources.files("infersight").joinpath("init_template.yaml").read_text(encoding="utf-8")


def run_init(args: argparse.Namespace) -> int:
    path: Path = args.path
    if path.is_dir():
        print(f"infersight init: {path} is a folder; give the path of the file to write", file=sys.stderr)
        return 2
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        print(f"infersight init: cannot write {path}: {blocking} is a file, not a folder", file=sys.stderr)
        return 2
    if path.exists() and not args.force:
        print(f"infersight init: {path} exists; pass --force to overwrite it", file=sys.stderr)
        return 2
    try:
        write_atomic(path, template_text())
    except OSError as exc:
        print(f"infersight init: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


def run_build(args: argparse.Namespace) -> int:
    try:
        files = bundle_files.render(bundle.build(load_config(args.config)), with_mixin=True)
    except ConfigError as exc:
        print(f"infersight build: {exc}", file=sys.stderr)
        return 2
    except LintError as exc:
        print(f"infersight build: {exc}", file=sys.stderr)
        return 3
    if args.check is not None:
        if not args.check.is_dir():
            what = "is not a folder" if args.check.exists() else "does not exist"
            named = f"--check {args.check} {what}"
            print(f"infersight build: {named}; give the folder a bundle was built into", file=sys.stderr)
            return 2
        stale = bundle_files.stale_files(files, args.check)
        if stale:
            print(f"{args.check} is stale; rebuild with `infersight build --out {args.check}`:", file=sys.stderr)
            for rel in stale:
                print(f"  {rel}", file=sys.stderr)
            return 1
        print(f"{args.check} is up to date ({len(files)} files)")
        return 0
    out: Path = args.out
    if out.exists() and not out.is_dir():
        print(f"infersight build: --out {out} is not a folder; give a folder to write the bundle into", file=sys.stderr)
        return 1
    try:
        bundle_files.write(files, out)
    except OSError as exc:
        where = exc.filename or out
        print(f"infersight build: cannot write {where}: {exc.strerror or exc}; {out} is unchanged", file=sys.stderr)
        return 1
    print(f"wrote {len(files)} files to {out}")
    return 0
