"""The real-GPU suite: `pytest tests/gpu -m gpu`. Every test here is marked ``gpu`` and skipped
unless ``nvidia-smi`` answers, so the suite is harmless on machines without an NVIDIA GPU."""

from __future__ import annotations

import shutil
import subprocess

import pytest


def nvidia_smi_works() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session", autouse=True)
def _require_gpu() -> None:
    if not nvidia_smi_works():
        pytest.skip("no NVIDIA GPU here: nvidia-smi is missing or fails")
