"""Prompt synthesis: token counts in the target's tokenizer (or words), unique random prompts,
shared prefixes for the prefix cache, repeated tokens for MoE skew; the plan is seeded."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from infersight.loadgen.plan import Planner, draw_tokens
from infersight.loadgen.prompts import PromptFactory, TokenizerError, TokenizerVocabulary, WordVocabulary
from infersight.loadgen.scenario import PromptSpec, TokenDistribution
from tests.loadgen.helpers import scenario


@pytest.fixture(scope="module")
def tokenizer(tiny_dense_model: Path) -> TokenizerVocabulary:
    return TokenizerVocabulary(tiny_dense_model)


def test_words_mode_counts_words() -> None:
    factory = PromptFactory(WordVocabulary(), seed=1)
    text = factory.build(PromptSpec(), 50, random.Random(0))
    assert len(text.split()) == 50


@pytest.mark.parametrize("n", [1, 7, 64, 300])
def test_tokenizer_mode_counts_the_targets_tokens(tokenizer: TokenizerVocabulary, n: int) -> None:
    rng = random.Random(n)
    counts = [tokenizer.count(tokenizer.random_text(n, rng)) for _ in range(20)]
    assert sum(c == n for c in counts) >= 18, counts  # decode/encode may merge a pair now and then
    assert all(abs(c - n) <= 2 for c in counts), counts


def test_repeated_mode_is_one_token_n_times(tokenizer: TokenizerVocabulary) -> None:
    factory = PromptFactory(tokenizer, seed=1)
    text = factory.build(PromptSpec(mode="repeated"), 200, random.Random(0))
    assert tokenizer.count(text) == 200
    assert len(set(tokenizer._tok.encode(text, add_special_tokens=False).ids)) == 1
    words = PromptFactory(WordVocabulary(), 1).build(PromptSpec(mode="repeated"), 30, random.Random(0))
    assert len(set(words.split())) == 1 and len(words.split()) == 30


def test_random_prompts_do_not_share_prefixes() -> None:
    factory = PromptFactory(WordVocabulary(), seed=1)
    rng = random.Random(0)
    prompts = [factory.build(PromptSpec(), 40, rng) for _ in range(200)]
    assert len({" ".join(p.split()[:6]) for p in prompts}) == 200


def test_shared_prefixes_come_from_a_fixed_set_of_groups() -> None:
    factory = PromptFactory(WordVocabulary(), seed=1)
    spec = PromptSpec(shared_prefix_tokens=20, prefix_groups=3)
    rng = random.Random(0)
    prompts = [factory.build(spec, 50, rng) for _ in range(60)]
    assert all(len(p.split()) == 50 for p in prompts)
    prefixes = {" ".join(p.split()[:20]) for p in prompts}
    bodies = {" ".join(p.split()[20:]) for p in prompts}
    assert len(prefixes) == 3 and len(bodies) == 60
    # The same seed gives the same prefixes in another run (warm the cache, then measure).
    again = PromptFactory(WordVocabulary(), seed=1).build(spec, 50, random.Random(5))
    assert " ".join(again.split()[:20]) in prefixes


def test_token_distributions_stay_in_bounds() -> None:
    rng = random.Random(0)
    uniform = TokenDistribution(dist="uniform", min=10, max=20)
    normal = TokenDistribution(dist="normal", mean=100, stddev=50, min=60, max=120)
    u = [draw_tokens(uniform, rng) for _ in range(2000)]
    n = [draw_tokens(normal, rng) for _ in range(2000)]
    assert min(u) == 10 and max(u) == 20
    assert min(n) == 60 and max(n) == 120  # clipped at both ends
    assert draw_tokens(33, rng) == 33


def test_plan_is_seeded_and_follows_the_stages() -> None:
    sc = scenario(
        [
            {"name": "a", "duration": "10s", "rate": 5, "prompt_tokens": {"dist": "uniform", "min": 5, "max": 9}},
            {"name": "b", "duration": "5s", "concurrency": 2},
            {"name": "c", "duration": "10s", "rate": 2, "arrival": "gamma", "burstiness": 0.5, "output_tokens": 7},
        ],
        seed=42,
    )

    def plan() -> list[tuple[float | None, int, int, str]]:
        specs, truncated = Planner(sc, PromptFactory(WordVocabulary(), sc.seed)).open_loop()
        assert not truncated
        return [(s.scheduled, s.stage, s.max_tokens, s.prompt) for s in specs]

    first, second = plan(), plan()
    assert first == second
    assert {stage for _, stage, _, _ in first} == {0, 2}  # the concurrency stage has no schedule
    assert all(0 <= t < 10 for t, stage, _, _ in first if stage == 0 and t is not None)
    assert all(15 <= t < 25 for t, stage, _, _ in first if stage == 2 and t is not None)
    assert all(m == 7 for _, stage, m, _ in first if stage == 2)
    other = Planner(sc.model_copy(update={"seed": 43}), PromptFactory(WordVocabulary(), 43)).open_loop()[0]
    assert [s.scheduled for s in other] != [t for t, _, _, _ in first]


def test_plan_truncation_at_max_requests_is_reported() -> None:
    # 10/s for 10 s expects 100 requests; seed 1 happens to draw 116 Poisson arrivals.
    stages = [{"name": "a", "duration": "10s", "rate": 10}]
    capped = scenario(stages, seed=1, limits={"max_requests": 100})
    specs, truncated = Planner(capped, PromptFactory(WordVocabulary(), 1)).open_loop()
    assert truncated and len(specs) == 100
    roomy = scenario(stages, seed=1, limits={"max_requests": 1000})
    specs, truncated = Planner(roomy, PromptFactory(WordVocabulary(), 1)).open_loop()
    assert not truncated and len(specs) == 116


def test_bad_tokenizer_paths(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match=r"no tokenizer\.json"):
        TokenizerVocabulary(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(TokenizerError, match="cannot load tokenizer"):
        TokenizerVocabulary(tmp_path)
