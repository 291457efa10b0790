"""Serving alerts: multi-window multi-burn-rate SLO alerts, target health, and the incidents no
fixed threshold sees: an engine that stopped making progress, a model whose traffic stopped and a
replica much slower than its peers."""

from __future__ import annotations

from infersight import conventions, promql
from infersight.alerts.common import num, on, tuned_alert
from infersight.config import Config
from infersight.recording_rules import kv_cache as kv_rules
from infersight.recording_rules import serving as serving_rules
from infersight.rules import Alert, RuleGroup

TARGET_DOWN = "InfersightVLLMTargetDown"
NO_TARGETS = "InfersightVLLMNoTargets"
METRICS_ABSENT = "InfersightVLLMMetricsAbsent"
HUNG_ENGINE = "InfersightVLLMHungEngine"
TRAFFIC_STOP = "InfersightVLLMTrafficStop"
OUTLIER_REPLICA = "InfersightVLLMOutlierReplica"
ENGINE_UNHEALTHY = "InfersightVLLMEngineUnhealthy"

# Counters an engine with work advances at every step: decode tokens, finished prefills, finished requests.
_PROGRESS = ("vllm:generation_tokens_total", "vllm:prompt_tokens_total", "vllm:request_success_total")


def burn_alert_name(slo: str) -> str:
    title = {"availability": "Availability", "ttft": "TTFT", "itl": "ITL"}[slo]
    return f"InfersightVLLM{title}BudgetBurn"


def _burn_rate(window_rule: str, slo: str) -> str:
    """Error ratio over a window divided by the error budget: 1 means on track to use exactly the budget."""
    match = [promql.label_matcher("slo", "=", slo)]
    return f"{promql.recorded(window_rule, match)} / (1 - {promql.recorded(serving_rules.SLO_OBJECTIVE, match)})"


def _burn_alerts(cfg: Config) -> list[Alert]:
    alerts = []
    base = cfg.alerts.runbook_base_url
    for spec in serving_rules.slo_specs(cfg):
        name = burn_alert_name(spec.name)
        for severity in ("critical", "warning"):
            rows = [bw for bw in cfg.slo.burn_windows if bw.severity == severity]
            if not rows:
                continue
            clauses = [
                f"(\n  {_burn_rate(serving_rules.slo_errors(bw.long), spec.name)} > {bw.factor}\nand\n"
                f"  {_burn_rate(serving_rules.slo_errors(bw.short), spec.name)} > {bw.factor}\n)"
                for bw in rows
            ]
            windows = ", ".join(f"{bw.long}/{bw.short} at {bw.factor}x" for bw in rows)
            alerts.append(
                Alert(
                    alert=name,
                    expr="\nor\n".join(clauses),
                    severity=severity,
                    component="serving",
                    summary=f"{spec.title} SLO error budget of a vLLM model is burning too fast.",
                    description=(
                        f"{{{{ $labels.model_name }}}} (job {{{{ $labels.job }}}}) is burning its {spec.title} "
                        f"error budget at {{{{ $value | humanize }}}}x the sustainable rate "
                        f"(windows {windows})."
                    ),
                    runbook_url=conventions.runbook_url(base, name),
                    burn_rate=True,
                )
            )
    return alerts


def _health_alerts(cfg: Config) -> list[Alert]:
    sel = cfg.selectors.vllm
    a = cfg.alerts.serving
    base = cfg.alerts.runbook_base_url
    out = []
    if a.target_down.enabled:
        out.append(
            Alert(
                alert=TARGET_DOWN,
                expr=f"{promql.series('up', sel)} == 0",
                for_=cfg.scaled(a.target_down.for_),
                severity=a.target_down.severity,
                component="serving",
                summary="A vLLM target cannot be scraped.",
                description="vLLM target {{ $labels.instance }} of job {{ $labels.job }} has failed every scrape "
                f"for {cfg.scaled(a.target_down.for_)}: the engine is down, restarting or unreachable.",
                runbook_url=conventions.runbook_url(base, TARGET_DOWN),
            )
        )
        out.append(
            Alert(
                alert=NO_TARGETS,
                expr=f"absent({promql.series('up', sel)})",
                for_=cfg.scaled(a.target_down.for_),
                severity="warning",
                component="serving",
                summary="Prometheus has no vLLM targets at all.",
                description="No up series match the vLLM selector of job {{ $labels.job }}: service discovery "
                "lost every vLLM target, or the selector in infersight.yaml is wrong.",
                runbook_url=conventions.runbook_url(base, NO_TARGETS),
            )
        )
    if a.metrics_absent.enabled:
        out.append(
            Alert(
                alert=METRICS_ABSENT,
                expr=f"{promql.series('up', sel)} == 1\nunless on (job, instance)\n"
                + promql.series("vllm:num_requests_running", sel),
                for_=cfg.scaled(a.metrics_absent.for_),
                severity=a.metrics_absent.severity,
                component="serving",
                summary="A vLLM target is up but exposes no vLLM engine metrics.",
                description="Target {{ $labels.instance }} (job {{ $labels.job }}) answers scrapes but has no "
                "vllm:num_requests_running: the engine failed to start, metrics are disabled, or "
                "the job scrapes something that is not vLLM.",
                runbook_url=conventions.runbook_url(base, METRICS_ABSENT),
            )
        )
    return out


def _busy() -> str:
    """Requests running or waiting per (job, instance, model_name)."""
    running, waiting = (conventions.gauge_sum(g) for g in ("vllm:num_requests_running", "vllm:num_requests_waiting"))
    return f"{running} + {waiting}"


def _hung_engine(cfg: Config) -> Alert:
    a = cfg.alerts.serving.hung_engine
    window = cfg.scaled(a.window)
    by_instance = conventions.INSTANCE
    # "== 0" needs two samples of each counter in the window: right after a restart (or with the
    # counters missing) there is no verdict rather than a false one. rate() spans counter resets.
    progress = "\n  + ".join(promql.sum_by(by_instance, promql.rate(m, window, cfg.selectors.vllm)) for m in _PROGRESS)
    expr = f"(\n  {_busy()}\n) > 0\nand {on(by_instance)}\n(\n  {progress}\n) == 0"
    return tuned_alert(
        cfg,
        "serving",
        HUNG_ENGINE,
        a,
        expr,
        "A vLLM engine holds requests but makes no progress.",
        "{{ $value }} requests are running or waiting on the {{ $labels.model_name }} engine of "
        "{{ $labels.instance }} (job {{ $labels.job }}), yet it generated no token, finished no prefill and "
        f"finished no request in {window}: the engine is hung while its API server still answers.",
    )


def _traffic_stop(cfg: Config) -> Alert:
    a = cfg.alerts.serving.traffic_stop
    current = serving_rules.requests(cfg, "model")
    baseline = promql.over_time("avg", current, cfg.scaled(a.baseline_window))
    by_model = on(conventions.MODEL)
    # The engine gauges exist only while a target is scraped: a model whose targets are all down
    # is TargetDown's to report.
    serving = promql.agg("group", conventions.MODEL, conventions.gauge_sum("vllm:num_requests_running"))
    expr = (
        f"{current}\n< {num(1 - a.drop_fraction)} * {baseline}\n"
        f"and {by_model}\n{baseline} > {num(a.min_requests_per_second)}\n"
        f"and {by_model}\n{serving}"
    )
    return tuned_alert(
        cfg,
        "serving",
        TRAFFIC_STOP,
        a,
        expr,
        "A vLLM model's traffic stopped while its servers are up.",
        '{{ $labels.model_name }} (job {{ $labels.job }}) finished {{ $value | printf "%.2f" }} requests/s over the '
        f"last {cfg.scaled(cfg.intervals.rate)}, under {num((1 - a.drop_fraction) * 100)}% of its average over "
        f"the last {cfg.scaled(a.baseline_window)}, while its vLLM targets are up: whatever routes requests "
        "to it likely stopped sending.",
    )


def outlier_signals(cfg: Config, itl_window: str = "") -> list[tuple[str, str, float]]:
    """(signal label, per-instance expression in seconds, the floor below which it never counts).
    The mean ITL is not recorded (a series per instance for one alert); a dashboard passes
    ``$__rate_interval`` as its window."""
    a = cfg.alerts.serving.outlier_replica
    itl = "vllm:inter_token_latency_seconds"
    w, sel = itl_window or cfg.scaled(cfg.intervals.rate), cfg.selectors.vllm
    itl_mean = promql.ratio(
        promql.sum_by(conventions.INSTANCE, promql.rate(itl, w, sel, "_sum")),
        promql.sum_by(conventions.INSTANCE, promql.rate(itl, w, sel, "_count")),
    )
    return [
        (
            "ttft_p99",
            conventions.quantile(cfg, serving_rules.TTFT, "instance", 0.99),
            a.min_ttft_seconds,
        ),
        ("queue_p95", conventions.quantile(cfg, kv_rules.QUEUE_TIME, "instance", 0.95), a.min_queue_seconds),
        ("itl_mean", itl_mean, a.min_itl_seconds),
    ]


def replicas_judged(cfg: Config) -> str:
    """The replicas with enough traffic to judge, per (job, instance, model_name): the rate of the
    requests they started (a first token), not of those they finished. A replica slow enough
    finishes its requests in bursts, and judged by completions it would leave the comparison in
    every window without one, so the for: would never pass while it is at its worst (seen on a
    slow VM: 0 to 23 completions per window while it streamed every request). Read from a
    recording: the alert uses it about nine times per evaluation."""
    a = cfg.alerts.serving.outlier_replica
    return f"{serving_rules.requests_started(cfg)} > {num(a.min_requests_per_second)}"


def _outlier_replica(cfg: Config) -> Alert:
    a = cfg.alerts.serving.outlier_replica
    judged = replicas_judged(cfg)
    enough = f"count by ({', '.join(conventions.MODEL)}) ({judged}) >= {a.min_replicas}"
    by_model = ", ".join(conventions.MODEL)
    branches = []
    for signal, value, floor in outlier_signals(cfg):
        # Only replicas with traffic count, in the median too: an idle replica's latency is no peer.
        # A comparison keeps its left side's value, so the alert's value is the slow replica's.
        median = f"quantile by ({by_model}) (0.5, {value}\n    and {on(conventions.INSTANCE)} ({judged}))"
        branches.append(
            f"label_replace(\n  (\n    {value}\n    > {on(conventions.MODEL)} group_left ()\n"
            f"    ({num(a.factor)} * {median})\n  ) > {num(floor)}\n"
            f"  and {on(conventions.INSTANCE)} ({judged})\n  and {on(conventions.MODEL)} ({enough}),\n"
            f'  "signal", "{signal}", "", ""\n)'
        )
    return tuned_alert(
        cfg,
        "serving",
        OUTLIER_REPLICA,
        a,
        "\nor\n".join(branches),
        "One vLLM replica is much slower than the other replicas of its model.",
        "{{ $labels.instance }} (job {{ $labels.job }}) serves {{ $labels.model_name }} with {{ $labels.signal }} "
        '{{ $value | printf "%.3f" }} s, over '
        f"{num(a.factor)}x the median of the model's replicas with traffic ({a.min_replicas} at least), "
        "while its peers are not: a bad node, GPU or configuration on that replica, not the model's load.",
    )


def _engine_unhealthy(cfg: Config) -> Alert:
    """The engine rank's own verdict under vLLM's fault tolerance; the series exists only with it on.
    It carries no model_name: vLLM serves it from the API server's registry, per rank."""
    a = cfg.alerts.serving.engine_unhealthy
    return tuned_alert(
        cfg,
        "serving",
        ENGINE_UNHEALTHY,
        a,
        f"{promql.series('vllm:engine_healthy', cfg.selectors.vllm)} == 0",
        "A vLLM engine rank reports itself unhealthy.",
        "Engine rank {{ $labels.engine }} of {{ $labels.instance }} (job {{ $labels.job }}) has reported "
        f"unhealthy under vLLM's fault tolerance for {cfg.scaled(a.for_)}: requests it holds fail or wait, "
        "and a router should stop sending to this server.",
    )


def groups(cfg: Config) -> list[RuleGroup]:
    interval = cfg.scaled(cfg.intervals.evaluation)
    a = cfg.alerts.serving
    progress = tuple(
        make(cfg)
        for rule, make in (
            (a.hung_engine, _hung_engine),
            (a.traffic_stop, _traffic_stop),
            (a.outlier_replica, _outlier_replica),
            (a.engine_unhealthy, _engine_unhealthy),
        )
        if rule.enabled
    )
    return [
        RuleGroup("infersight-serving-slo.alerts", interval, tuple(_burn_alerts(cfg))),
        RuleGroup("infersight-serving.alerts", interval, tuple(_health_alerts(cfg)) + progress),
    ]
