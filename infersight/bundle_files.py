"""The bundle as files: the one place that serialises a built bundle and writes it.

``render`` turns a :class:`~infersight.bundle.Bundle` into text by relative path: rule files
as YAML, dashboards as JSON and, unless asked not to, the deploy stage's ``deploy/`` tree.
``write`` lays the files down atomically; ``stale_files`` powers ``infersight build --check``.
"""

from __future__ import annotations

from pathlib import Path

from infersight import deploy
from infersight.bundle import Bundle
from infersight.output import dump_json, dump_yaml, write_atomic


def render(bundle: Bundle, *, with_deploy: bool = True) -> dict[str, str]:
    """Every file of the bundle, by relative path, in path order. ``with_deploy=False`` gives only
    the rule files and dashboards: what a Prometheus or a test stack loads (no mixin trace)."""
    files = {f.path: dump_yaml(f.data(), bundle.header) for f in bundle.rule_files}
    files.update({d.path: dump_json(d.model) for d in bundle.dashboards})
    if with_deploy:
        files.update(deploy.artefacts(bundle))
    return dict(sorted(files.items()))


def write(files: dict[str, str], out: Path) -> None:
    for rel, text in files.items():
        write_atomic(out / rel, text)


def rule_file_paths(bundle: Bundle, out: Path) -> list[Path]:
    """The recording and alert rule files of a bundle written to ``out``, for Prometheus's rule_files."""
    return sorted(out / f.path for f in bundle.rule_files)


def stale_files(files: dict[str, str], out: Path) -> list[str]:
    """Paths under ``out`` that differ from, are missing from, or are extra to the build."""
    stale = []
    for rel, text in files.items():
        target = out / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            stale.append(rel)
    owned_dirs = {Path(rel).parts[0] for rel in files}
    if out.is_dir():
        for path in sorted(out.rglob("*")):
            rel = path.relative_to(out).as_posix()
            if path.is_file() and rel.split("/")[0] in owned_dirs and rel not in files:
                stale.append(rel + " (not produced by this build)")
    return sorted(stale)
