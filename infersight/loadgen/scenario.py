"""The model of a load scenario file (``loadgen/scenarios/*.yaml``).

A scenario is a timeline of stages (open-loop at a rate, or closed-loop at a concurrency),
optional fault actions that ``infersight validate`` performs on the stack, and optional
``expect:`` blocks saying which alerts must fire (and how soon after which fault) and which
must stay quiet. Every scenario is bounded: ``limits.max_duration`` and
``limits.max_requests`` are required, and the stages must fit inside them.

Loading fails with :class:`ScenarioError`, which names each bad field's path, its value and
what is allowed; nothing else escapes :func:`load_scenario`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictInt,
    Tag,
    model_validator,
)

from infersight.durations import Duration
from infersight.inputs import InputError, read_yaml, validate
from infersight.rules import Component, is_alert_name

# Hard ceilings: a scenario file must not be able to ask for an unbounded run.
MAX_DURATION_CEILING = Duration.parse("6h")
COMPANION_MAX_DURATION = Duration.parse("5h")  # leaves the companion an hour past the load
MAX_REQUESTS_CEILING = 1_000_000
MAX_TOKENS_CEILING = 131_072

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
_NAME_RULE = "1-40 characters of lower-case letters, digits, '_' or '-', starting with a letter or digit"

TrafficFault = Literal["overload", "kv_pressure", "client_errors", "moe_skew", "traffic_stop"]
Name = Annotated[str, Field(pattern=_NAME.pattern, description=_NAME_RULE)]
PositiveDuration = Annotated[Duration, Field(description="a positive duration such as 30s")]


class ScenarioError(InputError):
    """The scenario is invalid. ``problems`` lists (path, message) pairs."""

    what = "scenario"


class _Strict(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default. Numbers are
    finite: pydantic would read the strings "1e400" or "Infinity" as floats past any lower bound."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _positive(d: Duration, what: str) -> Duration:
    if d.ms <= 0:
        raise ValueError(f"{what} must be a positive duration, got {d}")
    return d


class TokenDistribution(_Strict):
    """A token count drawn per request: ``uniform`` in [min, max], or ``normal`` clipped to [min, max]."""

    dist: Literal["uniform", "normal"]
    min: StrictInt = Field(default=1, ge=1, le=MAX_TOKENS_CEILING)
    max: StrictInt = Field(ge=1, le=MAX_TOKENS_CEILING)
    mean: float | None = Field(default=None, gt=0)
    stddev: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _shape(self) -> TokenDistribution:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        if self.dist == "normal" and (self.mean is None or self.stddev is None):
            raise ValueError("a normal distribution needs mean and stddev (and clips to min/max)")
        if self.dist == "uniform" and (self.mean is not None or self.stddev is not None):
            raise ValueError("a uniform distribution takes only min and max; mean/stddev belong to dist: normal")
        return self


def _token_count_kind(value: Any) -> str | None:
    if isinstance(value, dict | TokenDistribution):
        return "dist"
    return None if isinstance(value, bool) or not isinstance(value, int) else "fixed"


# A fixed count (``output_tokens: 64``) or a distribution; one clear error for anything else.
TokenCount = Annotated[
    Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS_CEILING), Tag("fixed")] | Annotated[TokenDistribution, Tag("dist")],
    Discriminator(
        _token_count_kind,
        custom_error_type="token_count",
        custom_error_message="must be a whole number of tokens (e.g. 128) or a mapping "
        "{dist: uniform, min, max} or {dist: normal, mean, stddev, min, max}",
    ),
]


class PromptSpec(_Strict):
    """How prompt text is made. ``random`` draws fresh tokens per request (no accidental prefix
    cache hits); ``repeated`` repeats one token (MoE expert skew). ``shared_prefix_tokens`` puts
    one of ``prefix_groups`` fixed prefixes in front of the random body (prefix-cache hits)."""

    mode: Literal["random", "repeated"] = "random"
    shared_prefix_tokens: StrictInt = Field(default=0, ge=0, le=MAX_TOKENS_CEILING)
    prefix_groups: StrictInt = Field(default=1, ge=1, le=1000)

    @model_validator(mode="after")
    def _prefix_only_for_random(self) -> PromptSpec:
        if self.mode == "repeated" and self.shared_prefix_tokens:
            raise ValueError("shared_prefix_tokens applies to mode: random only; a repeated prompt is all prefix")
        return self


class Stage(_Strict):
    """A span of the timeline: open-loop arrivals at ``rate`` requests/s, ``concurrency`` streams
    sent back to back (closed loop), or ``idle``: nothing sent (traffic that stopped)."""

    name: Name
    duration: PositiveDuration
    rate: float | None = Field(default=None, gt=0, le=100_000, description="requests per second (open loop)")
    concurrency: StrictInt | None = Field(default=None, ge=1, le=4096, description="closed-loop streams")
    idle: StrictBool = Field(default=False, description="send nothing in this stage")
    arrival: Literal["constant", "poisson", "gamma"] = "poisson"
    # Gamma shape k (vLLM bench's convention): 1 is Poisson, below 1 is burstier, above 1 smoother.
    burstiness: float | None = Field(default=None, gt=0, le=100)
    prompt_tokens: TokenCount = 128
    output_tokens: TokenCount = 64
    prompt: PromptSpec = PromptSpec()
    fault: TrafficFault | None = Field(default=None, description="marks this stage as the fault window")

    @model_validator(mode="after")
    def _mode(self) -> Stage:
        _positive(self.duration, "duration")
        if [self.rate is not None, self.concurrency is not None, self.idle].count(True) != 1:
            raise ValueError(
                "give exactly one of rate (open loop, requests/s), concurrency (closed loop) or idle: true"
            )
        if (self.fault == "traffic_stop") != self.idle:
            raise ValueError("fault: traffic_stop marks an idle stage, and an idle stage can only be a traffic_stop")
        if self.concurrency is not None and ("arrival" in self.model_fields_set or self.burstiness is not None):
            raise ValueError("arrival/burstiness apply to rate stages; a concurrency stage sends back to back")
        if self.burstiness is not None and self.arrival != "gamma":
            raise ValueError(f"burstiness applies to arrival: gamma only (this stage has arrival: {self.arrival})")
        if self.fault == "moe_skew" and self.prompt.mode != "repeated":
            raise ValueError("fault: moe_skew needs prompt: {mode: repeated} so every token routes alike")
        return self

    @property
    def load_text(self) -> str:
        """What the stage sends, for progress lines: ``2/s``, ``x8 streams`` or ``idle``."""
        if self.rate is not None:
            return f"{self.rate:g}/s"
        return f"x{self.concurrency} streams" if self.concurrency is not None else "idle"

    @property
    def gamma_shape(self) -> float:
        return self.burstiness if self.burstiness is not None else 1.0

    @property
    def expected_requests(self) -> float:
        return (self.rate or 0.0) * self.duration.total_seconds


class Limits(_Strict):
    max_duration: PositiveDuration = Field(description="hard stop for the whole run, drain included")
    max_requests: StrictInt = Field(ge=1, le=MAX_REQUESTS_CEILING)
    max_in_flight: StrictInt = Field(default=256, ge=1, le=4096)
    request_timeout: PositiveDuration = Duration.parse("60s")

    @model_validator(mode="after")
    def _bounded(self) -> Limits:
        _positive(self.max_duration, "max_duration")
        _positive(self.request_timeout, "request_timeout")
        if self.max_duration > MAX_DURATION_CEILING:
            raise ValueError(f"max_duration {self.max_duration} exceeds the ceiling of {MAX_DURATION_CEILING}")
        return self


class Validity(_Strict):
    """When a run's numbers cannot be trusted: the client fell behind its own schedule. A send is
    late when it lags past the larger of ``max_schedule_lag_p99`` and
    ``max_schedule_lag_gap_fraction`` of its stage's mean gap between requests (a lag small
    against the gap does not change the load, however busy the host), and one send in a hundred
    may be late, though never by more than the stage's mean gap; ``infersight.loadgen.stats``
    counts them."""

    max_schedule_lag_p99: Duration = Duration.parse("10ms")
    max_schedule_lag_gap_fraction: float = Field(default=0.1, gt=0, le=1)

    @model_validator(mode="after")
    def _positive_threshold(self) -> Validity:
        _positive(self.max_schedule_lag_p99, "max_schedule_lag_p99")
        return self

    def allowed_lag_ms(self, rate: float) -> float:
        """How late a send of a stage at ``rate`` requests/s may be before it counts as late."""
        return max(self.max_schedule_lag_p99.ms, self.max_schedule_lag_gap_fraction * self.worst_lag_ms(rate))

    @staticmethod
    def worst_lag_ms(rate: float) -> float:
        """How late even a permitted late send may be: the stage's mean gap between requests."""
        return 1000 / rate


# A shorter cycle than the kernel schedules reliably, or a longer one than a throttle (a hang).
THROTTLE_PERIOD_MIN, THROTTLE_PERIOD_MAX = Duration.parse("10ms"), Duration.parse("10s")


class _Action(_Strict):
    name: Name
    at: Duration = Field(description="offset from the start of the run")


class ServerKill(_Action):
    """SIGKILL the vLLM engine mid-run: 5xx for in-flight requests, then target down."""

    do: Literal["server_kill"]


class TargetDown(_Action):
    do: Literal["target_down"]


class TargetUp(_Action):
    do: Literal["target_up"]


class GpuLeakStart(_Action):
    """Make the GPU exporter's fake backend (or a real leaking process on a GPU host) grow memory."""

    do: Literal["gpu_leak_start"]
    mib_per_second: float = Field(gt=0, le=100_000)


class GpuLeakStop(_Action):
    do: Literal["gpu_leak_stop"]


class EnginePause(_Action):
    """Freeze vLLM's engine core (SIGSTOP) while its API server keeps answering: a hung engine."""

    do: Literal["engine_pause"]


class EngineResume(_Action):
    do: Literal["engine_resume"]


class EngineThrottleStart(_Action):
    """Slow vLLM's engine down as a power- or clock-capped GPU would: its engine core and workers
    stopped for ``stopped_share`` of every ``period``, its API server untouched."""

    do: Literal["engine_throttle"]
    stopped_share: float = Field(gt=0, lt=1)
    period: Duration = Duration.parse("250ms")

    @model_validator(mode="after")
    def _period_in_range(self) -> EngineThrottleStart:
        if not THROTTLE_PERIOD_MIN <= self.period <= THROTTLE_PERIOD_MAX:
            raise ValueError(f"period {self.period} is not between {THROTTLE_PERIOD_MIN} and {THROTTLE_PERIOD_MAX}")
        return self


class EngineThrottleStop(_Action):
    do: Literal["engine_unthrottle"]


Action = Annotated[
    ServerKill
    | TargetDown
    | TargetUp
    | GpuLeakStart
    | GpuLeakStop
    | EnginePause
    | EngineResume
    | EngineThrottleStart
    | EngineThrottleStop,
    Field(discriminator="do"),
]
ACTION_KINDS: tuple[str, ...] = (
    "server_kill",
    "target_down",
    "target_up",
    "gpu_leak_start",
    "gpu_leak_stop",
    "engine_pause",
    "engine_resume",
    "engine_throttle",
    "engine_unthrottle",
)
# Each "undo" action, with the action it must follow.
_UNDOES = {
    "target_up": ("target_down", "server_kill"),
    "engine_resume": ("engine_pause",),
    "engine_unthrottle": ("engine_throttle",),
}
MAX_PEERS = 8


class _AlertSelector(_Strict):
    alert: str | None = None
    component: Component | None = None

    @model_validator(mode="after")
    def _one_selector(self) -> _AlertSelector:
        if (self.alert is None) == (self.component is None):
            raise ValueError("give exactly one of alert (a name) or component (serving, kv_cache, moe, gpu, exporter)")
        if self.alert is not None and not is_alert_name(self.alert):
            raise ValueError(f"alert {self.alert!r} is not an infersight alert name (Infersight..., CamelCase, <= 40)")
        return self

    @property
    def label(self) -> str:
        return f"alert {self.alert}" if self.alert else f"component {self.component}"


class ExpectFire(_AlertSelector):
    """This alert (or any alert of this component) must fire within ``within`` of the fault's start."""

    within: PositiveDuration
    after: Name | None = Field(
        default=None, description="the fault: a stage with fault: or an action; default: the only one"
    )

    @model_validator(mode="after")
    def _within_positive(self) -> ExpectFire:
        _positive(self.within, "within")
        return self


class ExpectResolve(_AlertSelector):
    """This alert (every activation of it, or of this component's alerts, that is firing when the
    action ``after`` starts) must resolve within ``within`` of it; one that never fired is a miss."""

    within: PositiveDuration
    after: Name = Field(description="the action that ends the fault, e.g. an engine_resume")

    @model_validator(mode="after")
    def _within_positive(self) -> ExpectResolve:
        _positive(self.within, "within")
        return self


class ExpectQuiet(_AlertSelector):
    """This alert (or every alert of this component) must not fire during the named stages
    (default: all), about the target, or with ``of: companion`` about the companion's model."""

    during: list[Name] = []
    of: Literal["target", "companion", "peers"] = "target"


class Companion(_Strict):
    """Steady light load to a second model's server for the whole run (``infersight up`` picks
    its other server; ``validate --companion-target``), so a fault can be shown to stay with the
    target's model."""

    # Light by design: it only shows that another model keeps its traffic, and it runs until the
    # scenario is judged (up to COMPANION_MAX_DURATION plus the watching), within the request ceiling.
    rate: float = Field(gt=0, le=20, description="requests per second")
    prompt_tokens: TokenCount = 32
    output_tokens: TokenCount = 16

    def scenario(self, parent: Scenario, lasting: Duration) -> Scenario:
        """The companion's own run: one Poisson stage of ``lasting``. The caller makes that longer
        than the parent is run and watched, and stops it: a companion that ran out while the
        parent was still judged would be a real traffic stop of its model."""
        lasting = min(lasting, MAX_DURATION_CEILING, key=lambda d: d.ms)  # any run's bound (see _consistent)
        requests = max(1, math.ceil(self.rate * lasting.total_seconds * 2))  # room for Poisson's spread
        return Scenario(
            name=f"{parent.name[:30]}_companion",
            description=f"companion load of {parent.name}",
            seed=parent.seed + 1,
            limits=Limits(max_duration=lasting, max_requests=min(requests, MAX_REQUESTS_CEILING)),
            stages=[
                Stage(
                    name="companion",
                    duration=lasting,
                    rate=self.rate,
                    prompt_tokens=self.prompt_tokens,
                    output_tokens=self.output_tokens,
                )
            ],
        )


class Expect(_Strict):
    fire: list[ExpectFire] = []
    resolve: list[ExpectResolve] = []
    quiet: list[ExpectQuiet] = []


class Scenario(_Strict):
    name: Name
    description: str = Field(default="", max_length=2000)
    endpoint: Literal["completions", "chat"] = "completions"
    model: str | None = Field(default=None, min_length=1, max_length=200, description="default: first of /v1/models")
    seed: StrictInt = 0
    # vLLM's ignore_eos/min_tokens make every request produce exactly its output_tokens.
    ignore_eos: StrictBool = True
    limits: Limits
    validity: Validity = Validity()
    stages: list[Stage] = Field(min_length=1, max_length=100)
    actions: list[Action] = Field(default=[], max_length=100)
    companion: Companion | None = None
    # Other replicas of the target's model, each sent the same stages by a load generator of its
    # own, as a router spreads a model's traffic: what an outlier replica is judged against.
    # infersight up starts them; with fewer, the peers' load and expectations are skipped.
    peers: int = Field(default=0, ge=0, le=MAX_PEERS)
    expect: Expect | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        problems: list[str] = []
        names = [s.name for s in self.stages] + [a.name for a in self.actions]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            problems.append(f"stages: names must be unique across stages and actions; repeated: {dupes}")
        total = Duration(sum(s.duration.ms for s in self.stages))
        if total > self.limits.max_duration:
            problems.append(
                f"stages: the stages last {total} in all, longer than limits.max_duration "
                f"({self.limits.max_duration}); shorten them or raise max_duration"
            )
        expected = sum(s.expected_requests for s in self.stages)
        if expected > self.limits.max_requests:
            problems.append(
                f"stages: the rate stages would send about {expected:.0f} requests, more than "
                f"limits.max_requests ({self.limits.max_requests}); lower rates/durations or raise max_requests"
            )
        if self.companion is not None and self.limits.max_duration > COMPANION_MAX_DURATION:
            problems.append(
                f"limits.max_duration: a scenario with a companion load may last at most {COMPANION_MAX_DURATION} "
                "(its companion runs on while the scenario is watched afterwards)"
            )
        problems += self._action_problems()
        problems += self._expect_problems()
        if problems:
            raise ValueError(" ;; ".join(problems))
        return self

    def _action_problems(self) -> list[str]:
        problems = []
        undone = {undo: False for undo in _UNDOES}  # whether the fault each one undoes is on
        for action in sorted(self.actions, key=lambda a: a.at):
            if action.at > self.limits.max_duration:
                problems.append(f"actions: {action.name} at {action.at} is after limits.max_duration")
            for undo, faults in _UNDOES.items():
                if action.do in faults:
                    undone[undo] = True
                elif action.do == undo:
                    if not undone[undo]:
                        problems.append(f"actions: {action.name} ({undo}) comes before any {'/'.join(faults)}")
                    undone[undo] = False
        return problems

    def _expect_problems(self) -> list[str]:
        if self.expect is None:
            return []
        problems = []
        faults = self.fault_starts()
        stage_names = {s.name for s in self.stages}
        for i, fire in enumerate(self.expect.fire):
            where = f"expect.fire.{i}"
            if fire.after is None and len(faults) != 1:
                problems.append(
                    f"{where}: name the fault with after: (one of {sorted(faults)})"
                    if faults
                    else f"{where}: there is no fault to fire after; mark a stage with fault: or add an action"
                )
                continue
            after = fire.after if fire.after is not None else next(iter(faults))
            if after not in faults:
                problems.append(f"{where}.after: {after!r} is not a fault; faults here: {sorted(faults)}")
                continue
            if Duration(faults[after].ms + fire.within.ms) > self.limits.max_duration:
                problems.append(
                    f"{where}.within: the fault {after} starts at {faults[after]}, so the run "
                    f"(limits.max_duration {self.limits.max_duration}) ends before {fire.within} have passed"
                )
        actions = {a.name: a.at for a in self.actions}
        for i, resolve in enumerate(self.expect.resolve):
            where = f"expect.resolve.{i}"
            if resolve.after not in actions:
                problems.append(f"{where}.after: {resolve.after!r} is not an action; actions: {sorted(actions)}")
            elif Duration(actions[resolve.after].ms + resolve.within.ms) > self.limits.max_duration:
                problems.append(
                    f"{where}.within: {resolve.after} is at {actions[resolve.after]}, so the run "
                    f"(limits.max_duration {self.limits.max_duration}) ends before {resolve.within} have passed"
                )
        for i, quiet in enumerate(self.expect.quiet):
            if quiet.of == "companion" and self.companion is None:
                problems.append(f"expect.quiet.{i}.of: companion, but the scenario has no companion: load")
            if quiet.of == "peers" and self.peers == 0:
                problems.append(f"expect.quiet.{i}.of: peers, but the scenario has no peers (peers: 1 to {MAX_PEERS})")
            unknown = sorted(set(quiet.during) - stage_names)
            if unknown:
                problems.append(f"expect.quiet.{i}.during: unknown stages {unknown}; stages: {sorted(stage_names)}")
        return problems

    def peer_load(self) -> Scenario:
        """What each peer replica is sent: the same stages and limits, with no actions (the fault is
        the target's alone) and nothing expected of its own."""
        return self.model_copy(update={"name": f"{self.name[:35]}_peer", "actions": [], "peers": 0, "expect": None})

    def stage_starts(self) -> list[Duration]:
        starts, t = [], 0
        for s in self.stages:
            starts.append(Duration(t))
            t += s.duration.ms
        return starts

    def fault_starts(self) -> dict[str, Duration]:
        """Every fault by name (stages marked ``fault:`` and actions) with its start offset."""
        faults = {s.name: start for s, start in zip(self.stages, self.stage_starts(), strict=True) if s.fault}
        faults.update({a.name: a.at for a in self.actions})
        return faults

    def fault_for(self, expectation: ExpectFire | ExpectResolve) -> tuple[str, Duration]:
        """The fault or action an expectation counts from (its ``after:``, else the only fault) and its start."""
        faults = self.fault_starts()
        name = expectation.after if expectation.after is not None else next(iter(faults))
        return name, faults[name]

    def deadline(self) -> Duration:
        """When the last fire or resolve expectation's time is up, from the start of the run."""
        if self.expect is None:
            return Duration(0)
        timed: list[ExpectFire | ExpectResolve] = [*self.expect.fire, *self.expect.resolve]
        return Duration(max((self.fault_for(e)[1].ms + e.within.ms for e in timed), default=0))

    @property
    def scheduled_duration(self) -> Duration:
        return Duration(sum(s.duration.ms for s in self.stages))


# Union branch and discriminator tags pydantic puts in error paths; they mean nothing to a user.
_TAG_IN_PATH = re.compile("^(function-|fixed$|dist$|" + "|".join(f"{kind}$" for kind in ACTION_KINDS) + ")")


def parse_scenario(data: Any, source: str = "<scenario>") -> Scenario:
    """Validate already-parsed YAML data. Raises only ScenarioError."""
    return validate(
        Scenario,
        data,
        source,
        ScenarioError,
        mapping_hint="a mapping with name, limits and stages",
        unknown_key_hint="check the spelling (see loadgen/scenarios/ for examples)",
        drop_from_path=_TAG_IN_PATH,
    )


def load_scenario(path: Path) -> Scenario:
    return parse_scenario(read_yaml(path, ScenarioError), str(path))
