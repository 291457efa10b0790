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
    bundle_files.write(bundle_files.render(bundle.build(cfg or Config()), with_deploy=False), workdir)
    shutil.copy(test_file, workdir / test_file.name)
    return subprocess.run(
        ["promtool", "test", "rules", test_file.name], cwd=workdir, capture_output=True, text=True, timeout=300
    )


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
