"""File modes of atomic writes: the umask is respected, and files that hold secrets are 0600 whatever
the umask (a webhook URL in the Alertmanager config is a credential)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from infersight import bundle_files
from infersight.bundle import build
from infersight.config import Config
from infersight.deploy import SECRET_PATHS, alertmanager, helm
from infersight.output import write_atomic


@pytest.fixture(params=[0o077, 0o022, 0o002], ids=["umask-077", "umask-022", "umask-002"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_plain_file_gets_0666_less_the_umask(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "sub" / "plain.yml"
    write_atomic(path, "a: 1\n")
    assert mode(path) == 0o666 & ~umask
    assert path.read_text() == "a: 1\n"


def test_a_secret_file_is_0600_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "secret.yml"
    write_atomic(path, "url: https://hooks.example/T0/B0/XXXX\n", secret=True)
    assert mode(path) == 0o600


def test_rewriting_a_world_readable_file_as_a_secret_closes_it(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "alertmanager.yml"
    path.write_text("old\n")
    path.chmod(0o644)
    write_atomic(path, "new\n", secret=True)
    assert (mode(path), path.read_text()) == (0o600, "new\n")


def test_no_temporary_file_is_left_behind(tmp_path: Path) -> None:
    write_atomic(tmp_path / "a.txt", b"bytes")
    write_atomic(tmp_path / "a.txt", "text", secret=True)
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_the_bundle_writes_its_secret_files_0600_and_the_rest_by_umask(tmp_path: Path, umask: int) -> None:
    files = bundle_files.render(build(Config()), with_deploy=True)
    assert {alertmanager.PATH, helm.ALERTMANAGER_VALUES_PATH} <= set(SECRET_PATHS) <= set(files)
    bundle_files.write(files, tmp_path)
    for rel in files:
        expected = 0o600 if rel in SECRET_PATHS else 0o666 & ~umask
        assert mode(tmp_path / rel) == expected, rel
