"""The README and docs/ say what the code does: every path they name exists, every alert of the
bundle is in the README's proof table with tests that really name it, and statements that once
went stale (a group-size gap, the e2e time scales, the stall probe, the runbook's lost GPU, a
design document outside the repository) stay fixed."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from infersight import alerts as alerts_package
from infersight import bundle, bundle_files
from infersight.config import Config
from infersight.conventions import MAX_RULES_PER_GROUP
from infersight.stack.observed import VALIDATION_TIME_SCALE
from tests.host_stalls import StallWatch
from tests.packs.autoscaling_configs import THREE_MODELS
from tests.packs.e2e_support import profile

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").glob("*.md"))}
ALL_DOCS = {"README.md": README, **DOCS}

REPO_PATH = re.compile(r"^(?:\./)?((?:infersight|tests|scripts|docs|loadgen|benchmarks)/[\w./*-]*)$")


def section(text: str, heading: str) -> str:
    """The text under a markdown heading, up to the next heading of the same or a higher level."""
    match = re.search(rf"^(#+) {re.escape(heading)}\s*$", text, re.M)
    assert match, f"no heading {heading!r}"
    level = len(match.group(1))
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def named_paths(text: str) -> set[str]:
    """Repository paths a markdown text names in backticks (from the repository root)."""
    return {m.group(1).rstrip("/") for c in re.findall(r"`([^`\s]+)`", text) if (m := REPO_PATH.match(c))}


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_repository_paths_named_in_the_docs_exist() -> None:
    missing = [
        f"{doc}: {path}"
        for doc, text in ALL_DOCS.items()
        for path in sorted(named_paths(text))
        if not (any(REPO.glob(path)) if "*" in path else (REPO / path).exists())
    ]
    assert not missing, "\n".join(missing)


def test_links_between_the_docs_reach_a_file_and_heading() -> None:
    broken = []
    for doc, text in ALL_DOCS.items():
        for target, anchor in re.findall(r"\]\((?!https?:)([^)#\s]*)(?:#([^)\s]*))?\)", text):
            path = (REPO / doc).parent / target if target else REPO / doc
            if not path.exists():
                broken.append(f"{doc}: {target} does not exist")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text(encoding="utf-8")):
                broken.append(f"{doc}: {target}#{anchor} names no heading there")
    assert not broken, "\n".join(broken)


def test_no_file_points_to_a_design_doc_outside_the_repository() -> None:
    needle = "DESIGN" + ".md"  # spelled apart so this file does not name it
    roots = ["README.md", "pyproject.toml", "docs", "infersight", "tests", "benchmarks", "scripts", "loadgen"]
    files = [p for r in roots for p in ([REPO / r] if (REPO / r).is_file() else (REPO / r).rglob("*"))]
    pointing = [
        p.relative_to(REPO).as_posix()
        for p in files
        if p.is_file() and p.suffix != ".pyc" and needle in p.read_text(encoding="utf-8", errors="replace")
    ]
    assert not (REPO / needle).exists() or not pointing
    assert not pointing, f"these files point to {needle}, which is not in the repository: {pointing}"


def test_bundle_file_paths_named_in_the_docs_are_written_by_the_build() -> None:
    written = set(bundle_files.render(bundle.build(Config()), with_deploy=False))
    pattern = re.compile(r"(?<![\w/-])((?:alerts|recording_rules|dashboards)/[\w.-]+\.(?:yaml|json))")
    unknown = [f"{doc}: {p}" for doc, text in ALL_DOCS.items() for p in sorted(set(pattern.findall(text)) - written)]
    assert not unknown, "\n".join(unknown)


def _alert_constants() -> dict[str, set[str]]:
    """Alert name -> the module constants that hold it (tests name alerts as kv_alerts.SATURATED)."""
    import importlib
    import pkgutil

    out: dict[str, set[str]] = {}
    for info in pkgutil.iter_modules(alerts_package.__path__):
        module = importlib.import_module(f"{alerts_package.__name__}.{info.name}")
        for attr, value in vars(module).items():
            if attr.isupper() and isinstance(value, str) and value.startswith("Infersight"):
                out.setdefault(value, set()).add(attr)
    return out


def _proof_rows() -> dict[str, str]:
    rows = re.findall(r"^\| `(Infersight\w+)` \|(.*)$", section(README, "Which alerts are proven where"), re.M)
    names = [name for name, _ in rows]
    assert len(names) == len(set(names)), f"an alert has two rows: {names}"
    return dict(rows)


def test_proof_table_lists_every_alert_the_bundle_can_hold() -> None:
    # The MoE absent alert needs MoE models, the autoscaling alert scaled models.
    all_on = Config.model_validate({"moe": {"models": ["m"]}, **THREE_MODELS})
    assert set(_proof_rows()) == bundle.build(all_on).alert_names()


def test_proof_table_cites_only_files_that_name_the_alert() -> None:
    constants = _alert_constants()
    wrong = []
    for name, row in _proof_rows().items():
        cited = named_paths(row)
        assert any("promtool" in path for path in cited), f"{name}: no promtool test cited"
        for path in sorted(cited):
            text = (REPO / path).read_text(encoding="utf-8")
            if name not in text and not any(f".{const}" in text for const in constants.get(name, ())):
                wrong.append(f"{name}: {path} does not name it")
    assert not wrong, "\n".join(wrong)


def test_runbook_sends_a_gpu_that_fell_off_the_bus_to_the_lost_alert() -> None:
    runbook = DOCS["docs/runbook.md"]
    lost_section = section(runbook, "InfersightGPULost")
    elsewhere = runbook.replace(lost_section, "")
    # One bullet or paragraph at a time: a line break inside it does not matter.
    blocks = re.split(r"\n(?=- )|\n\n", elsewhere)
    stale = [b for b in blocks if "fell off the bus" in b and "InfersightGPULost" not in b]
    assert not stale, stale


def test_readme_scaling_out_reports_no_group_size_gap() -> None:
    scaling = section(README, "Scaling out")
    assert f"groups of at most {MAX_RULES_PER_GROUP} rules" in scaling
    assert "Known gap" not in scaling and "larger than" not in scaling


def test_readme_states_the_time_scales_the_e2e_tests_run_at() -> None:
    tested = section(README, "How it is tested")
    for scale in (VALIDATION_TIME_SCALE, profile().time_scale):
        assert f"`time_scale: {scale:g}`" in tested, f"README does not state time scale {scale:g}"


def test_validate_doc_describes_the_stall_probe_as_the_thread_it_is() -> None:
    assert isinstance(StallWatch()._thread, threading.Thread)
    stalls = section(DOCS["docs/validate.md"], "When the machine stalls")
    assert "thread" in stalls and "separate process" not in stalls


def test_dashboard_comparison_counts_match_its_rows_and_name_built_panels() -> None:
    """Each section's "(N panels: a match, b partial, c none)" and the totals agree with its table,
    and every infersight panel a row names in italics is a panel of the default build."""
    text = DOCS["docs/dashboard-comparison.md"]
    built = {p.get("title") for board in bundle.build(Config()).dashboards for p in board.model.get("panels", [])}
    sums = [0, 0, 0, 0]
    for m in re.finditer(r"^## (vLLM / .+) \((\d+) panels: (\d+) match, (\d+) partial, (\d+) none\)$", text, re.M):
        lines = section(text, m.group(0).removeprefix("## ")).splitlines()
        rows = [r for r in lines if r.startswith("| ") and not r.startswith(("| vLLM panel", "| ---"))]
        cells = [r.split(" | ") for r in rows]
        none = sum(1 for c in cells if c[1].strip() == "—")
        partial = sum(1 for c in cells if c[2].startswith("**Partial**"))
        counts = (len(rows), len(rows) - none - partial, partial, none)
        assert counts == tuple(int(g) for g in m.groups()[1:]), f"{m.group(1)}: the table has {counts}"
        sums = [a + b for a, b in zip(sums, counts, strict=True)]
        for cell in (c[1] for c in cells):
            for title in re.findall(r"\*([^*]+)\*", cell):
                assert title in built, f"{m.group(1)}: {title!r} is no panel of the default build"
    totals = re.search(
        r"Totals: (\d+) upstream panels\. (\d+) have an equivalent, (\d+) (?:is|are) partly covered and (\d+)", text
    )
    assert totals and [int(g) for g in totals.groups()] == sums, f"the sections add up to {sums}"
