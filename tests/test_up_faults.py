"""``infersight up`` against bad input: a report folder that cannot take the report is one line
naming --report-dir, before any temporary folder, bundle or service exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.cli import main
from tests.one_line import one_line


@pytest.mark.parametrize("where", ["report", "report/below"], ids=["is-a-file", "under-a-file"])
def test_report_dir_that_cannot_be_a_folder_is_refused_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    (tmp_path / "report").write_text("not a folder\n")
    workdir = tmp_path / "work"
    code = main(["up", f"--report-dir={tmp_path / where}", f"--workdir={workdir}"])
    line = one_line(capsys.readouterr().err)
    assert code == 2
    assert "--report-dir" in line and "not a folder" in line
    assert not workdir.exists()  # nothing was set up, so nothing was started
    assert (tmp_path / "report").read_text() == "not a folder\n"
