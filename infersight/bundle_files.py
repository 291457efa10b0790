"""The bundle as files: the one place that serialises a built bundle and writes it.

``render`` turns a :class:`~infersight.bundle.Bundle` into text by relative path: rule files
as YAML, dashboards as JSON and, unless asked not to, the deploy stage's ``deploy/`` tree.
``write`` lays the files down atomically; ``stale_files`` powers ``infersight build --check``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from infersight import deploy
from infersight.bundle import Bundle
from infersight.output import dump_json, dump_yaml, write_atomic


def render(bundle: Bundle, *, with_deploy: bool = True, with_mixin: bool = False) -> dict[str, str]:
    """Every file of the bundle, by relative path, in path order. ``with_deploy=False`` gives only
    the rule files and dashboards: what a Prometheus or a test stack loads. The jsonnet mixin is
    traced from the packs (each is rebuilt several times), so only what writes a whole bundle for
    a user (``infersight build``, ``infersight up``) asks for it."""
    files = {f.path: dump_yaml(f.data(), bundle.header) for f in bundle.rule_files}
    files.update({d.path: dump_json(d.model) for d in bundle.dashboards})
    if with_deploy:
        files.update(deploy.artefacts(bundle, with_mixin=with_mixin))
    return dict(sorted(files.items()))


def owned_folders(files: dict[str, str]) -> list[str]:
    """The top-level folders of ``out`` that the bundle owns whole (alerts/, dashboards/, ...)."""
    return sorted({rel.split("/")[0] for rel in files})


def write(files: dict[str, str], out: Path) -> None:
    """Replace the folders the bundle owns under ``out`` with exactly ``files``.

    The new folders are written completely beside the old ones first, then swapped in folder by
    folder; if anything fails (a write, a rename, an interrupt) every folder already swapped is
    put back, so ``out`` holds either the whole old bundle or the whole new one. Files the build no
    longer produces disappear with their old folder; anything else in ``out`` is left alone.
    """
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".infersight-new-", dir=out))
    retired = Path(tempfile.mkdtemp(prefix=".infersight-old-", dir=out))
    swapped: list[str] = []
    try:
        for rel, text in files.items():
            write_atomic(staging / rel, text, secret=rel in deploy.SECRET_PATHS)
        for top in owned_folders(files):
            if os.path.lexists(out / top):
                os.replace(out / top, retired / top)
            swapped.append(top)
            os.replace(staging / top, out / top)
    except BaseException:
        for top in reversed(swapped):
            _put_back(top, out, staging, retired)
        raise
    finally:
        _remove(staging)
        _remove(retired)


def _put_back(top: str, out: Path, staging: Path, retired: Path) -> None:
    """Undo one folder's swap: drop the new folder if it went in, return the old one if there was one."""
    if os.path.lexists(retired / top) or not os.path.lexists(staging / top):
        _remove(out / top)
    if os.path.lexists(retired / top):
        os.replace(retired / top, out / top)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink()


def rule_file_paths(bundle: Bundle, out: Path) -> list[Path]:
    """The recording and alert rule files of a bundle written to ``out``, for Prometheus's rule_files."""
    return sorted(out / f.path for f in bundle.rule_files)


def stale_files(files: dict[str, str], out: Path) -> list[str]:
    """Paths under ``out`` that differ from, are missing from, or are extra to the build."""
    stale = []
    for rel, text in files.items():
        target = out / rel
        if not target.is_file() or target.read_bytes() != text.encode("utf-8"):
            stale.append(rel)
    owned_dirs = {Path(rel).parts[0] for rel in files}
    if out.is_dir():
        for path in sorted(out.rglob("*")):
            rel = path.relative_to(out).as_posix()
            if path.is_file() and rel.split("/")[0] in owned_dirs and rel not in files:
                stale.append(rel + " (not produced by this build)")
    return sorted(stale)
