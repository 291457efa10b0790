"""Faults and bad input for ``infersight init`` and ``infersight build``: each answers with one
line naming what was wrong, and a bundle on disk is either wholly the old one or wholly the new."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infersight import bundle, bundle_files
from infersight.cli import main
from infersight.config import Config
from infersight.output import write_atomic
from tests.one_line import one_line


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _one_line_error(err: str, prog: str) -> str:
    line = one_line(err)
    assert line.startswith(prog)
    return line


@pytest.fixture
def old_bundle(tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    assert main(["build", "--out", str(out)]) == 0
    return out


def test_a_write_failing_midway_leaves_the_old_bundle_whole(
    old_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "infersight.yaml"
    cfg.write_text("slo:\n  availability:\n    objective: 0.999\n")
    before = _snapshot(old_bundle)

    def failing(path: Path, content: str | bytes, **kwargs: object) -> None:
        if "dashboards" in path.parts:  # a read-only dashboards/ as the probe had it
            raise PermissionError(13, "Permission denied", str(path))
        write_atomic(path, content, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bundle_files, "write_atomic", failing)
    capsys.readouterr()
    assert main(["build", "--config", str(cfg), "--out", str(old_bundle)]) == 1
    line = _one_line_error(capsys.readouterr().err, "infersight build:")
    assert "Permission denied" in line and "unchanged" in line
    assert _snapshot(old_bundle) == before
    assert [p.name for p in old_bundle.iterdir() if p.name.startswith(".")] == []


def test_a_rename_failing_midway_puts_every_folder_back(old_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _snapshot(old_bundle)
    real_replace = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        # Swapping in deploy/ fails after alerts/ and dashboards/ were swapped in.
        if Path(dst) == old_bundle / "deploy" and Path(src).parent.name.startswith(".infersight-new-"):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(bundle_files.os, "replace", replace)
    files = bundle_files.render(bundle.build(Config()))
    files["alerts/serving.yaml"] = "# changed\n" + files["alerts/serving.yaml"]
    with pytest.raises(OSError, match="No space left"):
        bundle_files.write(files, old_bundle)
    assert _snapshot(old_bundle) == before


def test_build_removes_files_it_no_longer_writes_in_the_folders_it_owns(old_bundle: Path) -> None:
    (old_bundle / "alerts" / "exporters.yaml").write_text("groups: []\n")  # a pack renamed since
    (old_bundle / "notes.txt").write_text("mine\n")  # outside the bundle's folders: left alone
    assert main(["build", "--check", str(old_bundle)]) == 1
    assert main(["build", "--out", str(old_bundle)]) == 0
    assert not (old_bundle / "alerts" / "exporters.yaml").exists()
    assert (old_bundle / "notes.txt").read_text() == "mine\n"
    assert main(["build", "--check", str(old_bundle)]) == 0


def test_build_out_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "bundle"
    target.write_text("not a folder\n")
    assert main(["build", "--out", str(target)]) == 1
    line = _one_line_error(capsys.readouterr().err, "infersight build:")
    assert str(target) in line and "not a folder" in line
    assert target.read_text() == "not a folder\n"


def test_build_check_on_a_bundle_file_that_is_not_utf8(old_bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (old_bundle / "alerts" / "serving.yaml").write_bytes(b"\xff\xfe garbage")
    capsys.readouterr()
    assert main(["build", "--check", str(old_bundle)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "alerts/serving.yaml" in err


def test_init_force_on_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "infersight.yaml"
    target.mkdir()
    assert main(["init", "--force", str(target)]) == 2
    line = _one_line_error(capsys.readouterr().err, "infersight init:")
    assert str(target) in line and "folder" in line
    assert target.is_dir()


def test_check_against_a_file_or_nothing_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It said "stale; rebuild with infersight build --out FILE", a command that then fails."""
    a_file = tmp_path / "list.yaml"
    a_file.write_text("x: 1\n")
    assert main(["build", "--check", str(a_file)]) == 2
    line = _one_line_error(capsys.readouterr().err, "infersight build:")
    assert f"--check {a_file} is not a folder" in line, line
    missing = tmp_path / "nothing"
    assert main(["build", "--check", str(missing)]) == 2
    line = _one_line_error(capsys.readouterr().err, "infersight build:")
    assert f"--check {missing} does not exist" in line, line


def test_init_under_a_file_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "list.yaml"
    a_file.write_text("x: 1\n")
    assert main(["init", str(a_file / "infersight.yaml")]) == 2
    line = _one_line_error(capsys.readouterr().err, "infersight init:")
    assert f"{a_file} is a file" in line, line
    assert a_file.read_text() == "x: 1\n"
