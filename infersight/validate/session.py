"""One scenario end to end, and a suite of them:

1. settle: wait (bounded) until no alert about this target is pending, nor firing where one of
   the scenario's expectations of the target names it, so one scenario's alerts do not count
   against the next (any other alert firing then is carried over, judged neither way);
2. watch Prometheus and Alertmanager, send the scenario's load (in a thread, timed by the
   load generator's own clock) and perform its actions at their offsets;
3. after the load, keep watching until every ``fire`` and ``resolve`` deadline has passed (or every one is met)
   and the actions are done, plus a little grace for the last evaluation;
4. judge (evaluator), and read back the series the report plots.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from infersight.alerts.serving import TRAFFIC_STOP
from infersight.config import Config
from infersight.deploy import http
from infersight.durations import Duration
from infersight.loadgen import runner
from infersight.loadgen.background import BackgroundRun
from infersight.loadgen.prompts import Vocabulary
from infersight.loadgen.scenario import Scenario
from infersight.loadgen.target import TargetError
from infersight.traces.receiver import SpanReceiver
from infersight.validate import companion_stall, evaluator, monitoring_health, series, trace_view
from infersight.validate.actions import ActionExecutor
from infersight.validate.apis import AlertmanagerApi, ApiError, PrometheusApi
from infersight.validate.controls import Controls
from infersight.validate.timeline import ActionOutcome, AlertInterval
from infersight.validate.watcher import AlertWatcher

log = logging.getLogger(__name__)


class SessionError(RuntimeError):
    """The target or the monitoring stack cannot be used; nothing was judged."""


@dataclass(frozen=True)
class Target:
    url: str  # base URL, already checked by loadgen.target.check_target
    model: str
    instance: str  # its instance label in Prometheus (host:port)
    vocabulary: Vocabulary
    controls: Controls = field(default_factory=Controls)
    # A second model's server for scenarios with a companion: load; None skips that load.
    companion: Target | None = None
    # Other replicas of this model, for scenarios with peers: (the same load to each).
    peers: tuple[Target, ...] = ()


def served_model(url: str, flag: str = "--target") -> str:
    """The first model ``GET /v1/models`` lists; SessionError when the target does not answer.

    Through the deploy commands' client: a redirect is named and never followed (load goes only to
    the --target that was checked), and a reply that is not HTTP or never ends is one line."""
    try:
        answer = http.request("GET", f"{url}/v1/models", deadline=http.Deadline.after(10))
    except http.RequestFailed as exc:
        raise SessionError(f"{flag}: {exc}") from None
    if answer.status != 200:
        raise SessionError(f"{url}/v1/models answered {answer.status}; is vLLM up at {flag}?")
    try:
        return str(answer.body["data"][0]["id"])
    except (KeyError, IndexError, TypeError):
        raise SessionError(f"{url}/v1/models listed no model") from None


def instance_of(url: str) -> str:
    return urlsplit(url).netloc


@dataclass
class Monitoring:
    prometheus: PrometheusApi
    alertmanager: AlertmanagerApi | None
    cfg: Config  # names the recording rules the report reads
    time_scale: float
    settle_timeout_s: float = 45.0
    poll_s: float = 0.5
    grace_s: float = 3.0  # after the deadlines: a couple of evaluations and one Alertmanager push
    action_timeout_s: float = 330.0  # longer than a target_up's wait for vLLM's start (300 s at most)
    spans: SpanReceiver | None = None  # where the target sends its request spans, if it does

    @property
    def rate_window_s(self) -> float:
        """The rules' rate window in this run's (time-scaled) seconds."""
        return self.cfg.intervals.rate.total_seconds / self.time_scale

    def check(self) -> None:
        try:
            self.prometheus.alerts()
            if self.alertmanager is not None:
                self.alertmanager.alerts()
        except ApiError as exc:
            raise SessionError(str(exc)) from None


@dataclass
class ScenarioRun:
    scenario: Scenario
    source: str
    target: Target
    window: evaluator.RunWindow
    outcomes: list[ActionOutcome]
    intervals: list[AlertInterval]
    other_target: list[AlertInterval]  # seen, but about another vLLM
    verdict: evaluator.ScenarioVerdict
    load: dict[str, Any]  # the load generator's results.json
    results_dir: Path
    panels: list[series.PanelData]
    server_ttft: series.ServerTTFT
    traces: trace_view.TraceView | None  # None: no span receiver was running
    notes: list[str]
    poll_max_gap_s: float
    poll_errors: int


@dataclass(frozen=True)
class Settled:
    still_active: list[str]  # waited for until the timeout, and active all the same
    not_waited_for: list[str]  # firing, but no expectation of the scenario could be changed by it


def settle(mon: Monitoring, scope: evaluator.Scope, scenario: Scenario | None = None) -> Settled:
    """Wait (up to the settle timeout) until no in-scope alert is pending, nor firing where
    ``scenario`` could be judged by it (evaluator.spoils; None: any firing one).

    An in-scope alert firing that no expectation of the scenario names is not waited for: firing at
    the scenario's start, it is carried over and judged neither way, as it would be were it still
    firing after the wait, and were it to clear during the wait instead, a later firing would be a
    new one, judged in both cases. Waiting for it only cost time (say, the other scenarios' alerts
    of a suite whose next scenario expects only a target-down)."""
    deadline = time.monotonic() + mon.settle_timeout_s
    while True:
        try:
            raw = mon.prometheus.alerts()
        except ApiError as exc:
            raise SessionError(f"Prometheus stopped answering: {exc}") from None
        waited, carried = set(), set()
        for a in raw:
            interval = AlertInterval(a["labels"].get("alertname", "?"), a["labels"], 0.0)
            if not scope(interval):
                continue
            firing = a.get("state") == "firing"
            if firing and scenario is not None and not evaluator.spoils(scenario, interval):
                carried.add(interval.describe())
            else:
                waited.add(interval.describe())
        if not waited or time.monotonic() > deadline:
            return Settled(sorted(waited), sorted(carried - waited))
        time.sleep(mon.poll_s)


def run_scenario(scenario: Scenario, source: str, target: Target, mon: Monitoring, results_dir: Path) -> ScenarioRun:
    scope = evaluator.target_scope(target.instance, target.model)
    notes: list[str] = []
    settled = settle(mon, scope, scenario)
    if settled.still_active:
        notes.append(
            f"still active after {mon.settle_timeout_s:g}s of settling (carried over): "
            + ", ".join(settled.still_active)
        )
    if settled.not_waited_for:
        notes.append(
            "firing as the scenario started, not waited for as no expectation of the scenario names it "
            f"(carried over): {', '.join(settled.not_waited_for)}"
        )
    iterations_before = monitoring_health.rule_iterations(mon.prometheus.url)
    # start() polls once before it returns: an alert active now is seen before the load starts.
    watcher = AlertWatcher(mon.prometheus, mon.alertmanager, poll_s=mon.poll_s).start()
    executor = ActionExecutor(scenario.actions, target.controls)
    opts = runner.RunOptions(
        target=target.url,
        out_dir=results_dir,
        vocabulary=target.vocabulary,
        model=target.model,
        handle_signals=False,
    )
    companion: BackgroundRun | None = None
    load: BackgroundRun | None = None
    peers: list[BackgroundRun] = []
    try:
        companion = _companion(scenario, target, mon, results_dir, notes)
        peers = _peers(scenario, target, results_dir, notes)
        load = BackgroundRun(scenario, opts, executor.start).begin()
        while load.running:
            load.join(0.5)
        try:
            outcome = load.result()
        except TargetError as exc:
            raise SessionError(str(exc)) from None
        start = load.start_time
        load_end = time.time()
        _observe(scenario, mon, watcher, executor, start, load_end, scope)
    except BaseException:
        if load is not None:
            load.stop()
            load.join(30)
        executor.finish()
        watcher.stop()
        raise
    finally:
        _stop_loads({"companion": companion} | {f"peer {i}": p for i, p in enumerate(peers, start=1)}, notes)
    outcomes = executor.finish(timeout=0)
    watcher.stop()
    end = time.time()
    window = evaluator.RunWindow.of(scenario, start, load_end, end)
    every = watcher.intervals()
    companion_scope = (
        evaluator.target_scope(target.companion.instance, target.companion.model)
        if companion is not None and target.companion is not None
        else None
    )
    verdict = evaluator.evaluate(
        scenario,
        window,
        outcomes,
        every,
        scope,
        mon.alertmanager is not None,
        companion_scope,
        _companion_excuse(companion, target.companion, mon),
        evaluator.peers_scope([p.instance for p in target.peers[: len(peers)]], target.model) if peers else None,
    )
    panel_data, errors = series.fetch(mon.prometheus, series.panels(mon.cfg, target.instance), start - 5, end)
    notes += [f"series not read: {e}" for e in errors]
    ttft = series.server_ttft(mon.prometheus, target.instance, start, min(end, load_end + 2 * mon.grace_s))
    traces = None
    if mon.spans is not None:
        in_scope = [i for i in every if scope(i)]
        traces = trace_view.build(
            mon.spans.url, mon.spans.spans, results_dir, start, time.time(), in_scope, mon.rate_window_s
        )
        if (missing := traces.missing_note()) is not None:
            notes.append(missing)
    if watcher.errors:
        notes.append(f"{len(watcher.errors)} polls failed, e.g. {watcher.errors[0]}")
    iterations_after = monitoring_health.rule_iterations(mon.prometheus.url)
    failed, scrapes = monitoring_health.failed_scrapes(mon.prometheus, start, end)
    health = monitoring_health.Health(
        iterations_after - iterations_before if iterations_after and iterations_before else None, failed, scrapes
    )
    notes += health.notes()
    return ScenarioRun(
        scenario=scenario,
        source=source,
        target=target,
        window=window,
        outcomes=outcomes,
        intervals=[i for i in every if scope(i)],
        other_target=[i for i in every if not scope(i)],
        verdict=verdict,
        load=outcome.run,
        results_dir=results_dir,
        panels=panel_data,
        server_ttft=ttft,
        traces=traces,
        notes=notes,
        poll_max_gap_s=watcher.max_gap_s,
        poll_errors=len(watcher.errors),
    )


def _companion(
    scenario: Scenario, target: Target, mon: Monitoring, results_dir: Path, notes: list[str]
) -> BackgroundRun | None:
    """Start the scenario's companion load on the companion target, or note why there is none."""
    if scenario.companion is None:
        return None
    other = target.companion
    if other is None:
        notes.append("companion load skipped: no second vLLM (validate --companion-target)")
        return None
    opts = runner.RunOptions(
        target=other.url,
        out_dir=results_dir / "companion",
        vocabulary=other.vocabulary,
        model=other.model,
        handle_signals=False,
    )
    notes.append(f"companion load: {scenario.companion.rate:g} requests/s to {other.model} at {other.url}")
    companion = scenario.companion.scenario(scenario, companion_duration(scenario, mon))
    return BackgroundRun(companion, opts).begin()


def _peers(scenario: Scenario, target: Target, results_dir: Path, notes: list[str]) -> list[BackgroundRun]:
    """Start the scenario's load on each of its peer replicas (none without enough of them)."""
    if scenario.peers == 0:
        return []
    if len(target.peers) < scenario.peers:
        notes.append(
            f"peer load skipped: the scenario needs {scenario.peers} other replicas of {target.model}, "
            f"{len(target.peers)} known (infersight up starts them)"
        )
        return []
    runs = []
    for i, peer in enumerate(target.peers[: scenario.peers], start=1):
        opts = runner.RunOptions(
            target=peer.url,
            out_dir=results_dir / f"peer-{i}",
            vocabulary=peer.vocabulary,
            model=peer.model,
            handle_signals=False,
        )
        runs.append(BackgroundRun(scenario.peer_load(), opts).begin())
    notes.append(f"the same load to {len(runs)} peer replicas: {', '.join(p.url for p in target.peers[: len(runs)])}")
    return runs


def companion_duration(scenario: Scenario, mon: Monitoring) -> Duration:
    """A bound past the end of the scenario's load (its max_duration at most) and of the watching
    after it (to the last deadline, the actions' end, the grace period); it is stopped before."""
    load = max(scenario.limits.max_duration.total_seconds, scenario.deadline().total_seconds)
    margin = 60  # polls, judging, writing: the companion is stopped explicitly well before
    return Duration.parse(f"{math.ceil(load + mon.action_timeout_s + mon.grace_s + margin)}s")


def _companion_excuse(companion: BackgroundRun | None, other: Target | None, mon: Monitoring) -> evaluator.Excuse:
    """Why a TrafficStop about the companion's model was right: its own requests stopped finishing.
    The scrape and evaluation intervals are Prometheus's own (the config's, scaled, if it cannot say)."""
    if companion is None or companion.outcome is None or other is None:
        return lambda _: None
    try:
        scrape_s = mon.prometheus.scrape_interval_s(other.instance)
        evaluation_s = mon.prometheus.evaluation_interval_s(TRAFFIC_STOP)
    except ApiError:
        scrape_s = evaluation_s = None
    intervals = mon.cfg.intervals
    rule = companion_stall.StallRule.of(
        mon.cfg,
        mon.time_scale,
        scrape_s or intervals.scrape.scaled(mon.time_scale).total_seconds,
        evaluation_s or intervals.evaluation.scaled(mon.time_scale).total_seconds,
    )
    try:
        done = companion_stall.read_completions(companion.outcome.csv_path, companion.start_time)
    except (OSError, ValueError, KeyError):  # its results unreadable: nothing excuses the alert
        return lambda _: None
    return companion_stall.excuse(rule, done, companion.start_time)


def _stop_loads(loads: dict[str, BackgroundRun | None], notes: list[str]) -> None:
    """Stop the side loads (companion, peers) and note any that failed."""
    started = {what: run for what, run in loads.items() if run is not None}
    for run in started.values():
        run.stop()
    for what, run in started.items():
        run.join(60)
        try:
            run.result()
        except (TargetError, RuntimeError, OSError) as exc:  # the scenario is judged all the same
            notes.append(f"{what} load failed: {exc}")


def _observe(
    scenario: Scenario,
    mon: Monitoring,
    watcher: AlertWatcher,
    executor: ActionExecutor,
    start: float,
    load_end: float,
    scope: evaluator.Scope,
) -> None:
    """Keep watching after the load until the fire deadlines pass (or all are met) and the actions
    are done (bounded), then for the grace period."""
    deadline = start + scenario.deadline().total_seconds
    actions_deadline = time.time() + mon.action_timeout_s
    while True:
        now = time.time()
        window = evaluator.RunWindow.of(scenario, start, load_end, now)
        verdict = evaluator.evaluate(
            scenario, window, executor.outcomes, watcher.intervals(), scope, mon.alertmanager is not None
        )
        timed = [e for e in verdict.expectations if e.kind in ("fire", "resolve")]
        all_met = all(e.status == "met" for e in timed)
        if (now >= deadline or all_met) and (not executor.busy or now >= actions_deadline):
            break
        time.sleep(mon.poll_s)
    time.sleep(mon.grace_s)


def run_suite(
    scenarios: Sequence[tuple[Scenario, str, Target]],
    mon: Monitoring,
    results_root: Path,
    on_done: Callable[[ScenarioRun], None] = lambda _: None,
) -> list[ScenarioRun]:
    """Run each (scenario, source, target) in turn; ``on_done`` sees each result as it lands."""
    mon.check()
    runs = []
    for scenario, source, target in scenarios:
        log.info("scenario %s against %s", scenario.name, target.url)
        run = run_scenario(scenario, source, target, mon, results_root / scenario.name)
        on_done(run)
        runs.append(run)
    return runs
