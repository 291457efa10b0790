"""The request plan: every open-loop request (its due time, prompt and token counts) is made
before the clock starts, so prompt synthesis never delays a send. Closed-loop stages draw their
requests as they go (nothing is scheduled there, so nothing can be late).

Each stage has its own seeded random streams (arrivals, token counts, prompts), so changing one
stage does not reshuffle the others.
"""

from __future__ import annotations

import random

from infersight.loadgen import arrivals
from infersight.loadgen.prompts import PromptFactory
from infersight.loadgen.records import RequestSpec
from infersight.loadgen.scenario import Scenario, TokenDistribution


def draw_tokens(count: int | TokenDistribution, rng: random.Random) -> int:
    if isinstance(count, int):
        return count
    if count.dist == "uniform":
        return rng.randint(count.min, count.max)
    assert count.mean is not None and count.stddev is not None  # enforced by the scenario model
    return min(count.max, max(count.min, round(rng.gauss(count.mean, count.stddev))))


class Planner:
    def __init__(self, scenario: Scenario, prompts: PromptFactory):
        self.scenario = scenario
        self._prompts = prompts
        seed = scenario.seed
        self._token_rngs = [random.Random(f"{seed}:{i}:tokens") for i in range(len(scenario.stages))]
        self._prompt_rngs = [random.Random(f"{seed}:{i}:prompts") for i in range(len(scenario.stages))]

    def spec(self, stage_index: int, index: int, scheduled: float | None) -> RequestSpec:
        stage = self.scenario.stages[stage_index]
        rng = self._token_rngs[stage_index]
        prompt_tokens = draw_tokens(stage.prompt_tokens, rng)
        max_tokens = draw_tokens(stage.output_tokens, rng)
        prompt = self._prompts.build(stage.prompt, prompt_tokens, self._prompt_rngs[stage_index])
        return RequestSpec(index, stage_index, scheduled, prompt, prompt_tokens, max_tokens)

    def open_loop(self) -> tuple[list[RequestSpec], bool]:
        """Every rate stage's requests in due order, offsets from the run's start; and whether
        ``limits.max_requests`` cut the plan short."""
        plan: list[RequestSpec] = []
        budget = self.scenario.limits.max_requests
        truncated = False
        for i, (stage, start) in enumerate(zip(self.scenario.stages, self.scenario.stage_starts(), strict=True)):
            if stage.rate is None:
                continue
            rng = random.Random(f"{self.scenario.seed}:{i}:arrivals")
            due = arrivals.offsets(
                stage.arrival, stage.rate, stage.duration.total_seconds, rng, stage.gamma_shape, budget - len(plan) + 1
            )
            if len(plan) + len(due) > budget:
                truncated = True
                due = due[: budget - len(plan)]
            plan.extend(self.spec(i, len(plan), start.total_seconds + t) for t in due)
        return plan, truncated
