"""``infersight up`` as a user runs it (a separate process), at the cheapest size that still starts
and stops real services: ``--target`` the shared vLLM (so no vLLM start), a short GPU-leak scenario
on the fake GPU and a target-down scenario that must be reported as skipped, not performed.

Asserts exit code 0, the report, that the temporary folder is gone and that no process it started
(found by an environment marker every child inherits) is left running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from infersight.stack.vllm_server import VLLMServer

pytestmark = pytest.mark.e2e

SCENARIOS = Path(__file__).parent / "scenarios"
MARK = "INFERSIGHT_UP_SMOKE_MARK"


def processes_with(marker: str) -> list[str]:
    """Command names of live processes whose environment holds ``MARK=marker``."""
    found = []
    needle = f"{MARK}={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append((entry / "comm").read_text().strip())
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def test_up_with_a_target_runs_reports_and_leaves_nothing_behind(vllm_moe_small_kv: VLLMServer, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    work, report = tmp_path / "work", tmp_path / "report"
    scenarios = f"{SCENARIOS / 'gpu_leak.yaml'},{SCENARIOS / 'target_down.yaml'}"
    done = subprocess.run(
        [
            sys.executable, "-m", "infersight.cli", "up",
            f"--target={vllm_moe_small_kv.url}", f"--scenarios={scenarios}",
            f"--report-dir={report}", f"--workdir={work}", "--settle=10s",
        ],
        env={**os.environ, MARK: marker},
        cwd=tmp_path,  # not the repository: up must find its scenarios from the installed package
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    print(done.stdout[-4000:], done.stderr[-4000:])
    assert done.returncode == 0
    assert "temporary state in" in done.stdout and "stopped everything it started" in done.stdout
    assert (report / "index.html").is_file() and (report / "bundle" / "dashboards").is_dir()
    data = json.loads((report / "validation.json").read_text())
    leak, down = data["scenarios"]
    assert leak["name"] == "gpu_leak" and [e["status"] for e in leak["expectations"]] == ["met", "met"]
    assert [a["status"] for a in leak["actions"]] == ["done", "done"]
    assert down["name"] == "target_down" and [a["status"] for a in down["actions"]] == ["skipped"]
    assert "did not start" in down["actions"][0]["detail"]
    assert [e["status"] for e in down["expectations"]] == ["skipped"]
    assert vllm_moe_small_kv.alive  # a --target is never stopped
    assert list(work.iterdir()) == []  # the one temporary folder is gone
    assert processes_with(marker) == []
