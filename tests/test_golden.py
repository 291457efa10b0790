"""Golden bundles: the committed output of three configs (tests/golden/*.yaml). Any change to a
rule, an alert, a dashboard or a deploy file shows up as a reviewable diff of tests/golden/;
after a deliberate change, run scripts/update-golden and commit the result."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight.cli import main

GOLDEN = Path(__file__).parent / "golden"
CONFIGS = sorted(GOLDEN.glob("*.yaml"))


def test_there_are_golden_bundles_for_each_profile() -> None:
    assert [c.stem for c in CONFIGS] == ["default", "overrides", "time-scaled"]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.stem)
def test_golden_bundle_is_what_the_build_writes(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["build", "--config", str(config), "--check", str(GOLDEN / config.stem)])
    assert code == 0, "golden bundle is stale; review and run scripts/update-golden\n" + capsys.readouterr().err
