"""What ``infersight bench fleet`` prints, from a report whose numbers are given: the baseline
without rules, and a dashboard ratio that is only a floor when a raw query failed."""

from __future__ import annotations

from infersight import lint
from infersight.fleet import bench, cpu, measure


def _report(**changes: object) -> bench.Report:
    report = bench.Report(servers=10, models=2, moe_servers=1, nodes=4, gpus=32, waited_s=360, machine="2 CPUs")
    report.series = measure.SeriesSplit(raw=1000, recorded=40, alerts=2, recorded_by_level={"model": 40})
    report.head_series, report.rss_bytes = 1100.0, 220 * 2**20
    for key, value in changes.items():
        setattr(report, key, value)
    return report


def _cost(samples: int, error: str = "") -> measure.QueryCost:
    return measure.QueryCost(series=1, samples=samples, seconds=0.01, error=error)


def test_the_baseline_gives_what_the_bundle_adds() -> None:
    text = bench.render(_report(baseline_head_series=1000.0, baseline_rss_bytes=200 * 2**20))
    assert "without the bundle (same fleet, as long, no rules): head series 1000, RSS 200 MiB" in text
    assert "the bundle adds 10.0% head series and 10.0% RSS" in text


def test_without_a_baseline_nothing_is_claimed() -> None:
    assert "without the bundle" not in bench.render(_report())


def test_a_failed_raw_query_makes_the_whole_dashboard_ratio_a_floor() -> None:
    costs = [
        bench.DashboardCost("kv.json", "panel 'a'", _cost(10), _cost(1000)),
        bench.DashboardCost("kv.json", "panel 'b'", _cost(10), _cost(0, error="query timed out")),
        bench.DashboardCost("gpu.json", "panel 'c'", _cost(10), _cost(200)),
    ]
    text = bench.render(_report(dashboards={3600.0: costs}, steps={3600.0: 15.0}))
    kv = next(line for line in text.splitlines() if line.startswith("kv.json "))
    gpu = next(line for line in text.splitlines() if line.startswith("gpu.json "))
    # samples: compared 1000/10, whole (1000 + 10 counted for the failed one) / 20; equal times
    assert kv.endswith("|  100.0x    1.0x | >=50.5x (raw failed on 1 of its panels)"), kv
    assert gpu.endswith("|   20.0x    1.0x |   20.0x"), gpu


def test_the_slowest_rules_are_listed_under_the_groups() -> None:
    slowest = [measure.RuleCost("infersight-gpu.alerts", "InfersightGPUMemoryLeak", 4.25)]
    lines = bench.render(_report(slowest=slowest)).splitlines()
    row = next(line for line in lines if line.startswith("InfersightGPUMemoryLeak "))
    assert "infersight-gpu.alerts" in row and row.endswith("4.250s")
    assert lines.index(row) > next(i for i, line in enumerate(lines) if line.startswith("missed iterations"))


def test_cpu_with_and_without_the_rules_gives_the_rules_own_cores() -> None:
    with_rules = cpu.CpuUse(120.0, {"prometheus": 1.5, "fleet server": 0.1}, host_busy=0.9, cpus=2)
    without = cpu.CpuUse(120.0, {"prometheus": 0.75, "fleet server": 0.1}, host_busy=0.45, cpus=2)
    text = bench.render(_report(cpu_use=with_rules, baseline_cpu_use=without))
    assert "CPU over the last 120 s (cores of 2): prometheus 1.50, fleet server 0.10; host busy 90%" in text
    assert "the rules' own CPU: 0.75 cores = 75% of one core's interval" in text
    assert "without rules the host was 45% busy" in text


def test_each_group_prints_its_median_longest_and_share() -> None:
    groups = [measure.GroupCost("kv.yaml", "infersight-kv-cache.rules", 17, 30.0, 1.5, max_s=6.0, evaluations=4)]
    lines = bench.render(_report(groups=groups)).splitlines()
    row = next(line for line in lines if line.startswith("infersight-kv-cache.rules "))
    assert row.split() == ["infersight-kv-cache.rules", "17", "30s", "4", "1.500s", "6.000s", "5.00%"]
    total = next(line for line in lines if line.startswith("all groups (sum of shares)"))
    assert total.endswith(" 5.00%")


def test_the_growth_table_gives_each_size_per_engine_and_per_1000_engines() -> None:
    def sized(servers: int, raw: int, recorded: int, seconds: float) -> bench.Report:
        report = _report(servers=servers, rss_bytes=servers * 4 * 2**20, baseline_rss_bytes=servers * 3 * 2**20)
        report.series = measure.SeriesSplit(raw=raw, recorded=recorded, alerts=0, recorded_by_level={})
        report.head_series = float(raw + recorded)
        report.groups = [measure.GroupCost("x.yaml", "infersight-x.rules", 1, 30.0, seconds, seconds, 3)]
        report.cpu_use = cpu.CpuUse(120.0, {"prometheus": servers / 1000}, host_busy=0.5, cpus=2)
        report.dashboards = {3600.0: [bench.DashboardCost("o.json", "panel 'a'", _cost(servers * 50), None)]}
        return report

    text = bench.render_growth([sized(10, 7000, 700, 0.3), sized(1000, 700_000, 35_000, 3.0)])
    rows = {line.split()[0]: line.split() for line in text.splitlines()[2:4]}
    # models, raw/eng, rec/eng, rec % raw, head/eng, RSS KiB/eng, without rules, rules %, per 1,000 engines,
    # cores/1k, dash
    assert rows["10"][1:] == ["2", "700", "70.0", "10.0%", "770", "4096.0", "3072.0", "1.00%", "100.00%", "1.00", "50"]
    assert rows["1000"][1:] == ["2", "700", "35.0", "5.0%", "735", "4096.0", "3072.0", "10.00%", "10.00%", "1.00", "50"]


def test_rules_whose_windows_outlast_the_run_are_named_as_measured_before_they_filled() -> None:
    files = {
        "alerts/gpu.yaml": """groups:
- name: g.alerts
  rules:
  - alert: EccInTheLastHour
    expr: increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[1h]) > 0
  - alert: XidChanged
    expr: changes(DCGM_FI_DEV_XID_ERRORS[5m] offset 10m) > 0
  - alert: Busy
    expr: rate(vllm:request_success_total[5m]) > 1
  - alert: BurnFromRecordings
    expr: avg_over_time(model:errors:ratio_rate5m[30d]) > 0.01
""",
        "recording_rules/serving.yaml": """groups:
- name: g.rules
  rules:
  - record: model:errors:ratio_rate5m
    expr: sum(rate(vllm:request_success_total[5m]))
""",
    }
    windows = measure.long_windows(measure.rules_of(files), held_s=360)
    # raw windows first, longest first; the 5 m rate fits in the run; a recording's 30 d window is cheap
    assert [(w.rule, w.seconds, w.raw) for w in windows] == [
        ("EccInTheLastHour", 3600.0, True),
        ("XidChanged", 900.0, True),
        ("BurnFromRecordings", 30 * 86400.0, False),
    ]
    assert measure.long_windows(measure.rules_of(files), held_s=4000) == [windows[-1]]
    text = bench.render(_report(long_windows=windows))
    assert (
        "2 rules read scraped series further back than this run's 360 s, so their cost above is below their "
        "steady state (a --duration past 1h measures it): EccInTheLastHour (1h), XidChanged (15m)"
    ) in text
    assert "1 more read only recordings further back (up to 30d)" in text
    assert "further back" not in bench.render(_report())


def test_how_far_back_a_rule_reads_adds_ranges_offsets_and_subqueries() -> None:
    back = lint.history_read_s(
        'increase(a{job="x"}[1h] offset 5m) > on (u) b offset 2h or max_over_time(rate(c[5m])[30m:1m] offset 10m) or a'
    )
    assert back == {"a": 3900.0, "b": 7200.0, "c": 2700.0}


def test_the_machine_speed_is_printed_beside_the_fleet() -> None:
    text = bench.render(_report(yardstick_s=0.0142))
    assert "machine speed: one instant read of every GPU (count(DCGM_FI_DEV_FB_USED)) took 0.014 s" in text
    assert "machine speed: not measured" in bench.render(_report(yardstick_s=None))
