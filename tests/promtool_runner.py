"""Run `promtool test rules` files against a fresh build of the bundle.

Test files name rule files relative to themselves (``recording_rules/x.yaml``), so each
run copies the test file next to a bundle built into a temporary folder."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from infersight import bundle, bundle_files
from infersight.config import Config


def promtool_test(test_file: Path, workdir: Path, cfg: Config | None = None) -> subprocess.CompletedProcess[str]:
    files = bundle_files.render(bundle.build(cfg or Config()), with_deploy=False)
    _check_eval_order(test_file, files)
    bundle_files.write(files, workdir)
    shutil.copy(test_file, workdir / test_file.name)
    return subprocess.run(
        ["promtool", "test", "rules", test_file.name], cwd=workdir, capture_output=True, text=True, timeout=300
    )


def _check_eval_order(test_file: Path, files: dict[str, str]) -> None:
    """Every group a test's ``group_eval_order`` names is in its rule files. promtool accepts a
    name that matches nothing, and a renamed or split group then silently loses its place."""
    data = yaml.safe_load(test_file.read_text())
    unbuilt = [rel for rel in data["rule_files"] if rel not in files]
    assert not unbuilt, f"{test_file.name}: rule_files the build does not write: {unbuilt}"
    groups = {g["name"] for rel in data["rule_files"] for g in yaml.safe_load(files[rel])["groups"]}
    unknown = [name for name in data.get("group_eval_order", []) if name not in groups]
    assert not unknown, f"{test_file.name}: group_eval_order names groups the rule files lack: {unknown}"


def only_case(test_file: Path, case: str, workdir: Path) -> Path:
    """A copy of ``test_file`` with just the case whose name starts with ``case`` (promtool runs a
    whole file; a changed rule needs only the case it should break)."""
    data = yaml.safe_load(test_file.read_text())
    data["tests"] = [t for t in data["tests"] if t["name"].startswith(case)]
    assert len(data["tests"]) == 1, case
    path = workdir / "case" / test_file.name
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
