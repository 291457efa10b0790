"""Judging a scenario from what was observed: each expectation met, missed or skipped, and the
figures per alert across scenarios (detection rate, median time to detect, false positives per
hour of healthy traffic). Pure functions of the timeline; no I/O.

Definitions (stated in the report too):
- a fault starts when its stage starts, or when its action started (skipped action: skipped
  expectation; failed action: missed);
- a ``fire`` expectation is met when a matching alert *starts firing* in Prometheus within
  ``within`` of the fault's start and also reaches Alertmanager (when one is watched); time to
  detect is from the fault's start to the first poll that saw it firing;
- an alert already firing when the scenario started is carried over: it neither proves nor breaks
  an expectation, and it is listed apart;
- a ``resolve`` expectation is met when every matching alert firing as its action starts has
  stopped firing in Prometheus within ``within`` of it; with none firing then, it is missed (the
  fault it undoes was not detected);
- a ``quiet`` expectation is broken by a matching alert firing at any moment of its stages (all of
  the scenario when none are named); with ``of: companion`` the alerts judged are those about the
  companion load's model, and without a companion load it is skipped; it is skipped too when every
  companion alert that fired was right about the companion's own traffic (a starved server that
  finished nothing: see companion_stall), with the reason; with ``of: peers`` those about the
  peer replicas that got the same load (skipped when none did);
- healthy traffic is the part of a scenario before its first fault (all of it when it has none);
  a false positive is any alert that starts firing during healthy traffic.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from infersight.loadgen.scenario import ExpectFire, ExpectQuiet, ExpectResolve, Scenario
from infersight.validate.timeline import ActionOutcome, AlertInterval

Status = Literal["met", "missed", "skipped"]
Scope = Callable[[AlertInterval], bool]
Excuse = Callable[[AlertInterval], "str | None"]


@dataclass(frozen=True)
class StageWindow:
    name: str
    start: float
    end: float
    fault: str | None


@dataclass(frozen=True)
class RunWindow:
    """When one scenario ran: its start (the load's clock), stages, the load's end and the
    end of observation (after the last expectation's deadline)."""

    start: float
    stages: tuple[StageWindow, ...]
    load_end: float
    end: float

    @classmethod
    def of(cls, scenario: Scenario, start: float, load_end: float, end: float) -> RunWindow:
        stages = tuple(
            StageWindow(s.name, start + t.total_seconds, start + t.total_seconds + s.duration.total_seconds, s.fault)
            for s, t in zip(scenario.stages, scenario.stage_starts(), strict=True)
        )
        return cls(start, stages, load_end, max(end, load_end))


@dataclass(frozen=True)
class Fault:
    name: str
    at: float | None  # Unix time it started; None when it never happened
    status: Literal["done", "skipped", "failed"]
    detail: str = ""


@dataclass
class ExpectationResult:
    kind: Literal["fire", "resolve", "quiet"]
    selector: str  # "alert X" or "component Y"
    status: Status
    detail: str
    fault: str | None = None
    fault_offset_s: float | None = None  # fault start from the scenario's start
    within_s: float | None = None
    during: tuple[str, ...] = ()
    alert: str | None = None  # the alert that met a fire expectation
    ttd_s: float | None = None  # fault start -> firing in Prometheus (resolve: action -> resolved)
    received_s: float | None = None  # fault start -> seen in Alertmanager
    offenders: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FalsePositive:
    alert: str
    description: str
    offset_s: float  # firing start from the scenario's start


@dataclass
class ScenarioVerdict:
    scenario: str
    expectations: list[ExpectationResult]
    false_positives: list[FalsePositive]
    healthy_s: float
    carried_over: list[str]  # alerts already firing when the scenario started

    @property
    def missed(self) -> list[ExpectationResult]:
        return [e for e in self.expectations if e.status == "missed"]


# --- faults and windows -------------------------------------------------------------------------


def faults(scenario: Scenario, window: RunWindow, outcomes: Sequence[ActionOutcome]) -> dict[str, Fault]:
    """Every fault by name with the moment it really started."""
    out = {s.name: Fault(s.name, s.start, "done") for s in window.stages if s.fault}
    by_name = {o.name: o for o in outcomes}
    for action in scenario.actions:
        o = by_name.get(action.name)
        if o is None:
            out[action.name] = Fault(action.name, None, "skipped", "never performed")
        else:
            out[action.name] = Fault(action.name, o.started_at if o.status != "skipped" else None, o.status, o.detail)
    return out


def healthy_span(window: RunWindow, fault_list: Iterable[Fault]) -> tuple[float, float]:
    """From the start to the first fault (or the end of the load when there is none)."""
    starts = [f.at for f in fault_list if f.at is not None]
    end = min([*starts, window.load_end])
    return window.start, max(window.start, end)


def matches(interval: AlertInterval, selector: ExpectFire | ExpectResolve | ExpectQuiet) -> bool:
    if selector.alert is not None:
        return interval.name == selector.alert
    return interval.component == selector.component


def carried_over(interval: AlertInterval, window: RunWindow) -> bool:
    return interval.firing_at is not None and interval.firing_at < window.start


def spoils(scenario: Scenario, interval: AlertInterval) -> bool:
    """Whether an alert firing as ``scenario`` starts could change its verdict: one that a ``fire``
    or ``resolve`` expectation, or a ``quiet`` expectation of the target, names. Still firing, it
    could not start firing inside the window (the fire missed for want of a new start), its end
    could pass for the resolve of a fault it did not come from, and a quiet expectation would not
    judge it (carried over) where, cleared by the wait, a firing again under the scenario's own
    traffic would have broken it. Only an alert that no such expectation names cannot."""
    if scenario.expect is None:
        return False
    named: list[ExpectFire | ExpectResolve | ExpectQuiet] = [
        *scenario.expect.fire,
        *scenario.expect.resolve,
        *(q for q in scenario.expect.quiet if q.of == "target"),
    ]
    return any(matches(interval, e) for e in named)


# --- expectations -------------------------------------------------------------------------------


def _fire(
    exp: ExpectFire,
    scenario: Scenario,
    window: RunWindow,
    fault_map: dict[str, Fault],
    intervals: Sequence[AlertInterval],
    watch_alertmanager: bool,
) -> ExpectationResult:
    name, _ = scenario.fault_for(exp)
    fault = fault_map[name]
    within = exp.within.total_seconds
    result = ExpectationResult("fire", exp.label, "missed", "", fault=name, within_s=within)
    if fault.status == "skipped" or fault.at is None:
        result.status, result.detail = "skipped", f"fault {name} was not performed: {fault.detail or 'skipped'}"
        return result
    if fault.status == "failed":
        result.detail = f"fault {name} failed: {fault.detail}"
        result.fault_offset_s = fault.at - window.start
        return result
    result.fault_offset_s = fault.at - window.start
    deadline = fault.at + within
    fired = sorted(
        (i for i in intervals if matches(i, exp) and i.firing_at is not None and fault.at <= i.firing_at <= deadline),
        key=lambda i: i.firing_at or 0.0,
    )
    if not fired:
        late = [i for i in intervals if matches(i, exp) and i.firing_at is not None and i.firing_at > deadline]
        pending = [i for i in intervals if matches(i, exp) and i.pending_at >= fault.at and i.firing_at is None]
        if late:
            late_at = min(i.firing_at or 0.0 for i in late)
            result.detail = f"fired {late_at - fault.at:.1f}s after {name}, later than within {within:g}s"
        elif pending:
            result.detail = (
                f"went pending {min(i.pending_at for i in pending) - fault.at:.1f}s after {name} but never fired"
            )
        else:
            result.detail = f"did not fire within {within:g}s of {name}"
        return result
    first = fired[0]
    assert first.firing_at is not None
    result.alert = first.describe()
    result.ttd_s = first.firing_at - fault.at
    received = [i.received_at for i in fired if i.received_at is not None]
    if received:
        result.received_s = min(received) - fault.at
    if watch_alertmanager and not received:
        result.detail = f"fired {result.ttd_s:.1f}s after {name} but never reached Alertmanager"
        return result
    result.status = "met"
    result.detail = f"fired {result.ttd_s:.1f}s after {name}"
    return result


def _resolve(
    exp: ExpectResolve, window: RunWindow, fault_map: dict[str, Fault], intervals: Sequence[AlertInterval]
) -> ExpectationResult:
    action = fault_map[exp.after]
    within = exp.within.total_seconds
    result = ExpectationResult("resolve", exp.label, "missed", "", fault=exp.after, within_s=within)
    if action.status == "skipped" or action.at is None:
        result.status, result.detail = "skipped", f"{exp.after} was not performed: {action.detail or 'skipped'}"
        return result
    result.fault_offset_s = action.at - window.start
    if action.status == "failed":
        result.detail = f"{exp.after} failed: {action.detail}"
        return result
    at, deadline = action.at, action.at + within
    open_then = [
        i
        for i in intervals
        if matches(i, exp) and i.firing_at is not None and i.firing_at <= at and (i.resolved_at or float("inf")) > at
    ]
    if not open_then:
        result.detail = f"was not firing when {exp.after} started, so nothing could resolve"
        return result
    late = [i for i in open_then if i.resolved_at is None or i.resolved_at > deadline]
    if late:
        result.detail = f"still firing {within:g}s after {exp.after}"
        result.offenders = [i.describe() for i in late]
        return result
    last = max(i.resolved_at or at for i in open_then)
    result.status, result.ttd_s = "met", last - at
    result.alert = ", ".join(sorted({i.describe() for i in open_then}))
    result.detail = f"resolved {last - at:.1f}s after {exp.after}"
    return result


def _quiet(
    exp: ExpectQuiet, window: RunWindow, intervals: Sequence[AlertInterval], excuse: Excuse = lambda _: None
) -> ExpectationResult:
    """``excuse`` gives the reason an alert that fired was right after all (None: it was not)."""
    spans = [(s.start, s.end) for s in window.stages if s.name in exp.during] or [(window.start, window.end)]
    offenders, reasons = [], []
    for i in intervals:
        if matches(i, exp) and not carried_over(i, window) and any(i.firing_overlaps(a, b) for a, b in spans):
            assert i.firing_at is not None
            offenders.append(f"{i.describe()} fired at +{i.firing_at - window.start:.1f}s")
            reasons.append(excuse(i))
    where = f"during {', '.join(exp.during)}" if exp.during else "during the whole scenario"
    if offenders and all(reasons):
        detail = f"fired {where}, but rightly: {reasons[0]}"
        return ExpectationResult("quiet", exp.label, "skipped", detail, during=tuple(exp.during), offenders=offenders)
    if offenders:
        return ExpectationResult(
            "quiet", exp.label, "missed", f"fired {where}", during=tuple(exp.during), offenders=offenders
        )
    return ExpectationResult("quiet", exp.label, "met", f"quiet {where}", during=tuple(exp.during))


def evaluate(
    scenario: Scenario,
    window: RunWindow,
    outcomes: Sequence[ActionOutcome],
    intervals: Sequence[AlertInterval],
    scope: Scope = lambda _: True,
    watch_alertmanager: bool = True,
    companion_scope: Scope | None = None,
    companion_excuse: Excuse = lambda _: None,
    peer_scope: Scope | None = None,
) -> ScenarioVerdict:
    """Judge one scenario. ``scope`` drops alerts about something else (another vLLM target);
    ``companion_scope`` keeps those about the companion load's model (None: it did not run);
    ``companion_excuse`` says why one of those was right (the companion's own traffic collapsed);
    ``peer_scope`` keeps those about the peer replicas (None: no peer load ran)."""
    mine = [i for i in intervals if scope(i)]
    fault_map = faults(scenario, window, outcomes)
    expectations: list[ExpectationResult] = []
    if scenario.expect is not None:
        expectations += [_fire(e, scenario, window, fault_map, mine, watch_alertmanager) for e in scenario.expect.fire]
        expectations += [_resolve(e, window, fault_map, mine) for e in scenario.expect.resolve]
        for quiet in scenario.expect.quiet:
            if quiet.of == "target":
                expectations.append(_quiet(quiet, window, mine))
                continue
            other, excuse = (peer_scope, _no_excuse) if quiet.of == "peers" else (companion_scope, companion_excuse)
            if other is None:
                why = f"no {'peer' if quiet.of == 'peers' else 'companion'} load ran"
                expectations.append(ExpectationResult("quiet", quiet.label, "skipped", why, during=tuple(quiet.during)))
                continue
            result = _quiet(quiet, window, [i for i in intervals if other(i)], excuse)
            result.selector += " of the peers" if quiet.of == "peers" else " of the companion"
            expectations.append(result)
    start, end = healthy_span(window, fault_map.values())
    false_positives = [
        FalsePositive(i.name, i.describe(), i.firing_at - window.start)
        for i in mine
        if i.firing_at is not None and start <= i.firing_at < end
    ]
    carried = sorted({i.describe() for i in mine if carried_over(i, window)})
    return ScenarioVerdict(scenario.name, expectations, false_positives, end - start, carried)


# --- across scenarios ---------------------------------------------------------------------------


@dataclass
class AlertStats:
    """One alert (or ``component X`` for expectations by component) over a whole run."""

    alert: str
    expected: int = 0
    detected: int = 0
    ttd_s: list[float] = field(default_factory=list)
    false_positives: int = 0

    @property
    def detection_rate(self) -> float | None:
        return self.detected / self.expected if self.expected else None

    @property
    def median_ttd_s(self) -> float | None:
        return statistics.median(self.ttd_s) if self.ttd_s else None


@dataclass
class Summary:
    alerts: list[AlertStats]
    healthy_s: float
    expectations: int
    missed: int
    skipped: int

    def false_positives_per_hour(self, stats: AlertStats) -> float | None:
        return stats.false_positives / (self.healthy_s / 3600) if self.healthy_s > 0 else None


def summarize(verdicts: Sequence[ScenarioVerdict], known_alerts: Iterable[str] = ()) -> Summary:
    """Per alert: detection rate and median time to detect over the fire expectations naming it,
    false positives over all healthy traffic. ``known_alerts`` (every rule loaded) are listed too,
    so an alert no scenario exercised shows as such."""
    table: dict[str, AlertStats] = {name: AlertStats(name) for name in known_alerts}
    for v in verdicts:
        for e in v.expectations:
            if e.kind != "fire" or e.status == "skipped":
                continue
            key = e.selector.removeprefix("alert ")
            stats = table.setdefault(key, AlertStats(key))
            stats.expected += 1
            if e.status == "met" and e.ttd_s is not None:
                stats.detected += 1
                stats.ttd_s.append(e.ttd_s)
        for fp in v.false_positives:
            table.setdefault(fp.alert, AlertStats(fp.alert)).false_positives += 1
    every = [e for v in verdicts for e in v.expectations]
    return Summary(
        alerts=sorted(table.values(), key=lambda s: s.alert),
        healthy_s=sum(v.healthy_s for v in verdicts),
        expectations=len(every),
        missed=sum(1 for e in every if e.status == "missed"),
        skipped=sum(1 for e in every if e.status == "skipped"),
    )


def _no_excuse(_: AlertInterval) -> str | None:
    return None


def peers_scope(instances: Iterable[str], model: str) -> Scope:
    """Alerts about one of these replicas of ``model``: its serving or KV-cache alerts."""
    named = frozenset(instances)

    def in_scope(i: AlertInterval) -> bool:
        return (
            i.component in ("serving", "kv_cache")
            and i.labels.get("instance") in named
            and i.labels.get("model_name", model) == model
        )

    return in_scope


def target_scope(instance: str | None, model: str | None) -> Scope:
    """Keep alerts that are not about another vLLM: serving and KV-cache alerts of another
    instance, or any alert of another model, belong to a different target."""

    def in_scope(i: AlertInterval) -> bool:
        other_instance = (
            instance is not None
            and i.component in ("serving", "kv_cache")
            and "instance" in i.labels
            and i.labels["instance"] != instance
        )
        other_model = model is not None and "model_name" in i.labels and i.labels["model_name"] != model
        return not (other_instance or other_model)

    return in_scope
