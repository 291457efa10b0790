"""Fixtures for the deploy tests: the default bundle (built once), written to a folder."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.config import Config


@pytest.fixture(scope="session")
def built() -> dict[str, str]:
    return bundle_files.render(bundle.build(Config()), with_mixin=True)


@pytest.fixture(scope="session")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory, built: dict[str, str]) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    bundle_files.write(built, out)
    return out


def docs(text: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def tool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a real checker (promtool, amtool); the result carries its output for assertion messages."""
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=300)
