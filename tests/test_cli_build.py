from __future__ import annotations

from pathlib import Path

import pytest

from infersight.cli import main


def test_build_writes_and_check_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bundle"
    assert main(["build", "--out", str(out)]) == 0
    assert (out / "dashboards" / "vllm-overview.json").is_file()
    assert main(["build", "--check", str(out)]) == 0


def test_check_lists_changed_missing_and_extra_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bundle"
    main(["build", "--out", str(out)])
    (out / "alerts" / "serving.yaml").write_text("groups: []\n")
    (out / "recording_rules" / "serving.yaml").unlink()
    (out / "dashboards" / "old.json").write_text("{}")
    capsys.readouterr()
    assert main(["build", "--check", str(out)]) == 1
    err = capsys.readouterr().err
    assert "alerts/serving.yaml" in err
    assert "recording_rules/serving.yaml" in err
    assert "dashboards/old.json (not produced by this build)" in err


def test_bad_config_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bundle"
    main(["build", "--out", str(out)])
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cfg = tmp_path / "infersight.yaml"
    cfg.write_text("slo:\n  ttft:\n    threshold_seconds: 3\n    objective: 1.5\n")
    assert main(["build", "--config", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "slo.ttft.objective" in err and "1.5" in err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not list(out.rglob("*.tmp"))


def test_init_writes_template_and_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "infersight.yaml"
    assert main(["init", str(target)]) == 0
    assert "burn_windows" in target.read_text()
    assert main(["init", str(target)]) == 2
    assert main(["build", "--config", str(target), "--out", str(tmp_path / "b")]) == 0
