"""``deploy/mixin/``: a monitoring mixin (``mixin.libsonnet``) with ``prometheusRules``,
``prometheusAlerts`` and ``grafanaDashboards``, and a ``_config`` users override in jsonnet.

The mixin is the Python build as data, with every setting that :mod:`infersight.deploy.trace`
proved reaches the output verbatim written as ``$._config['<path>']`` (the dotted path of
infersight.yaml, e.g. ``'kv_cache.alerts.saturation.usage_threshold'``, or ``'selectors.vllm'``, a
list of PromQL label matchers joined into every selector that prints it). With the default
``_config`` it evaluates to exactly what ``infersight build`` writes; overriding a key changes
every rule, alert and panel that prints it. Settings that shape the output in other ways (they
add rules, or are bucket boundaries) are not in ``_config``; change them in infersight.yaml.
"""

from __future__ import annotations

import json
from typing import Any

from infersight import evaluation_intervals
from infersight.bundle import pack_dashboards, pack_groups
from infersight.config import Config
from infersight.deploy import trace
from infersight.durations import Duration
from infersight.output import dump_json
from infersight.packs import PACKS, by_name
from infersight.rules import RecordingRule, rule_file

DIR = "deploy/mixin"


FIELDS = {"recording_rules": "prometheusRules", "alerts": "prometheusAlerts", "dashboards": "grafanaDashboards"}


def builder_names() -> tuple[str, ...]:
    """Every builder the packs have, as "<kind>/<pack>", in the order of the bundle's files."""
    return tuple(
        f"{kind}/{pack.name}"
        for kind in FIELDS
        for pack in sorted(PACKS, key=lambda p: p.name)
        if (pack.dashboards if kind == "dashboards" else pack.groups(kind)) is not None
    )


def run_builder(name: str, cfg: Config) -> Any:
    """One builder's output as plain JSON data: a list of rule groups, or {file: dashboard}."""
    kind, pack_name = name.split("/")
    pack = by_name(pack_name)
    if kind == "dashboards":
        data: Any = pack_dashboards(cfg, pack)
    else:
        data = rule_file(pack_groups(cfg, pack, kind))["groups"]
    return json.loads(json.dumps(data))


def assemble(per_builder: dict[str, Any]) -> dict[str, Any]:
    """The mixin's three fields from each builder's part (templates or plain data alike)."""
    out: dict[str, Any] = {
        "prometheusRules": {"groups": []},
        "prometheusAlerts": {"groups": []},
        "grafanaDashboards": {},
    }
    for name, part in per_builder.items():
        kind = name.split("/")[0]
        if kind == "dashboards":
            out["grafanaDashboards"].update(part)
        else:
            out[FIELDS[kind]]["groups"].extend(part)
    out["grafanaDashboards"] = dict(sorted(out["grafanaDashboards"].items()))
    return out


def core(cfg: Config) -> dict[str, Any]:
    """What the mixin evaluates to with the default _config: the Python build of this config."""
    return assemble({name: run_builder(name, cfg) for name in builder_names()})


# --- jsonnet text ----------------------------------------------------------------------------
_FORMAT_LIB = """\
// How infersight's Python generators print numbers, so the mixin renders the same text.
{
  // Python repr() of a float: the shortest text that reads back as the same number; whole
  // numbers keep ".0" (6.0, not 6).
  repr(x)::
    assert std.isNumber(x) : 'expected a number, got ' + std.type(x);
    if x == std.floor(x) && std.abs(x) < 1e16 then std.format('%d.0', [x])
    else self.shortest(x, 1),
  shortest(x, p)::
    local s = std.format('%.' + p + 'g', [x]);
    if p >= 17 || std.parseJson(s) == x then s else self.shortest(x, p + 1),
  // Python format(x, '.6g').
  g6(x)::
    assert std.isNumber(x) : 'expected a number, got ' + std.type(x);
    std.format('%.6g', [x]),
  // A fraction printed as a percentage: format(x * 100, '.6g').
  pct(x):: self.g6(x * 100),
  int(x)::
    assert std.isNumber(x) && x == std.floor(x) : 'expected a whole number, got ' + std.toString(x);
    std.format('%d', [x]),
  // Prometheus durations are text: '5m', '1h30m'.
  duration(x)::
    assert std.isString(x) : 'durations are strings such as "5m", got ' + std.toString(x);
    x,
  // A duration's seconds: '1h30m' -> 5400.
  seconds(x)::
    local units = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
    local add(acc) =
      assert acc.num != '' && std.objectHas(units, acc.unit) : 'not a duration: ' + std.toString(x);
      acc.total + std.parseInt(acc.num) * units[acc.unit];
    local step(acc, c) =
      if std.member('0123456789', c) then
        if acc.unit == '' then acc { num: acc.num + c } else { total: add(acc), num: c, unit: '' }
      else acc { unit: acc.unit + c };
    add(std.foldl(step, std.stringChars(self.duration(x)), { total: 0, num: '', unit: '' })),
  // A duration's seconds as Python's format(seconds, '.6g') prints them: '5m' -> '300'.
  seconds_g6(x):: self.g6(self.seconds(x)),
  // A selector: PromQL label matchers joined as inside {...} (infersight.promql.braces).
  matchers(x)::
    assert std.isArray(x) && std.length(x) > 0 && std.all([std.isString(m) for m in x])
           : 'selectors are non-empty lists of PromQL label matchers (strings), got ' + std.toString(x);
    std.join(', ', x),
}
"""


def _ref(ref: trace.Ref) -> str:
    value = f"$._config[{json.dumps(ref.key)}]"
    if ref.fmt == "number":
        return value
    if ref.fmt == "complement":
        return f"(1 - {value})"
    return f"f.{ref.fmt}({value})"


def to_jsonnet(node: Any, indent: int = 0) -> str:
    """Jsonnet source for a template: JSON where it is data, expressions where it holds settings."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(node, dict):
        if not node:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {to_jsonnet(v, indent + 1)}," for k, v in node.items()]
        return "{\n" + "\n".join(items) + f"\n{pad}}}"
    if isinstance(node, list):
        if not node:
            return "[]"
        items = [f"{inner}{to_jsonnet(v, indent + 1)}," for v in node]
        return "[\n" + "\n".join(items) + f"\n{pad}]"
    if isinstance(node, trace.Text):
        return " + ".join(
            _ref(p) if isinstance(p, trace.Ref) else json.dumps(p, ensure_ascii=False) for p in node.parts
        )
    if isinstance(node, trace.Ref):
        return _ref(node)
    return json.dumps(node, ensure_ascii=False)


def files(cfg: Config, header: str) -> dict[str, str]:
    traced = trace.trace(cfg, builder_names(), run_builder)
    template = assemble(traced.templates)
    comment = "".join(f"// {line}\n" for line in header.splitlines())
    settings = {leaf.key: list(leaf.value) if isinstance(leaf.value, tuple) else leaf.value for leaf in traced.settings}
    patient, prompt = _for_keys(cfg, template)
    guarded = bool(patient or prompt)
    out = {
        f"{DIR}/mixin.libsonnet": comment
        + "// The infersight monitoring mixin: prometheusRules, prometheusAlerts, grafanaDashboards.\n"
        + (_for_guard(cfg, patient, prompt) if guarded else "")
        + "(import 'config.libsonnet') +\n(import 'rules.libsonnet') +\n"
        + "(import 'alerts.libsonnet') +\n(import 'dashboards.libsonnet')"
        + (" + guard\n" if guarded else "\n"),
        f"{DIR}/config.libsonnet": comment
        + "// Every setting of infersight.yaml that the rules and dashboards print verbatim, by its\n"
        + "// dotted path. Override with: mixin + { _config+:: { 'slo.availability.objective': 0.999,\n"
        + "//   'selectors.vllm': ['job=\"my-vllm\"', 'namespace=\"llm\"'] } }\n"
        + "{\n  _config+:: "
        + to_jsonnet(settings, 1)
        + ",\n}\n",
        f"{DIR}/lib/format.libsonnet": comment + _FORMAT_LIB,
        f"{DIR}/jsonnetfile.json": dump_json({"version": 1, "dependencies": [], "legacyImports": True}),
    }
    for name, field in (("rules", "prometheusRules"), ("alerts", "prometheusAlerts")):
        # groups+: so the mixin composes with others (kubernetes-mixin + infersight).
        body = "{\n    groups+: " + to_jsonnet(template[field]["groups"], 2) + ",\n  }"
        out[f"{DIR}/{name}.libsonnet"] = _field_file(comment, field, body)
    dashboards = to_jsonnet(template["grafanaDashboards"], 1)
    out[f"{DIR}/dashboards.libsonnet"] = _field_file(comment, "grafanaDashboards", dashboards)
    return out


def _for_keys(cfg: Config, template: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The _config keys of the for: of every alert whose group a for: across PROMPT_FOR would change
    (infersight.evaluation_intervals), as (patient, prompt):

    - patient as built (for: of PROMPT_FOR or more), evaluated at the dashboard interval or reading,
      directly or through other recordings, a recording that moved there: under PROMPT_FOR it would
      fire or read a minute late;
    - prompt as built (a for: under PROMPT_FOR) and evaluated at the evaluation interval: at
      PROMPT_FOR or more the build would move it, and maybe what it reads, to the dashboard interval.

    Both empty where nothing moves (the two intervals are equal)."""
    slow = cfg.scaled(cfg.intervals.dashboard_evaluation)
    fast = cfg.scaled(cfg.intervals.evaluation)
    if slow <= fast:
        return [], []
    built = core(cfg)
    recording = [g for p in PACKS for g in pack_groups(cfg, p, "recording_rules")]
    moved = {r.record for g in recording if g.interval == slow for r in g.rules if isinstance(r, RecordingRule)}

    def reads_a_moved_recording(expr: str) -> bool:
        return bool(evaluation_intervals.read_by(recording, [expr]) & moved)

    patient_keys, prompt_keys = set(), set()
    # The template is the same build with settings traced: its groups and rules in the same order.
    pairs = zip(template["prometheusAlerts"]["groups"], built["prometheusAlerts"]["groups"], strict=False)
    for tmpl_group, group in pairs:
        interval = Duration.parse(group["interval"])
        for tmpl, rule in zip(tmpl_group["rules"], group["rules"], strict=False):
            ref = tmpl.get("for")
            if isinstance(ref, trace.Text) and len(ref.parts) == 1:
                ref = ref.parts[0]
            if not isinstance(ref, trace.Ref):
                continue
            if Duration.parse(rule["for"]) >= cfg.scaled(evaluation_intervals.PROMPT_FOR):
                if interval == slow or reads_a_moved_recording(rule["expr"]):
                    patient_keys.add(ref.key)
            elif interval == fast:
                prompt_keys.add(ref.key)
    return sorted(patient_keys), sorted(prompt_keys)


def _for_guard(cfg: Config, patient: list[str], prompt: list[str]) -> str:
    """A jsonnet check that refuses an override moving one of ``patient`` under PROMPT_FOR, or one
    of ``prompt`` to PROMPT_FOR or more: the groups were split by the built values, and the mixin
    cannot regroup."""
    limit = evaluation_intervals.PROMPT_FOR
    seconds = f"{limit.total_seconds:g}"
    return (
        "local f = import 'lib/format.libsonnet';\n"
        f"// The for: of each alert evaluated every {cfg.intervals.dashboard_evaluation}, or reading recordings"
        f" evaluated then, as {limit} or more\n// when the groups were built (patient), and of each alert"
        f" evaluated every {cfg.intervals.evaluation} (prompt):\n// neither may cross {limit}.\n"
        f"local patient = {to_jsonnet(patient)};\n"
        f"local prompt = {to_jsonnet(prompt)};\n"
        # On the three output fields, not as an object assert: that would run again on every
        # $._config lookup inside the templates (100 times slower to evaluate).
        "local guard = {\n"
        f"  local moved = [k for k in patient if f.seconds(self._config[k]) < {seconds}]\n"
        f"    + [k for k in prompt if f.seconds(self._config[k]) >= {seconds}],\n"
        f"  local checked(x) = if moved == [] then x else error 'a for: across {limit} moves its alert, or "
        "what it reads, '\n"
        f"    + 'between the {cfg.intervals.evaluation} and {cfg.intervals.dashboard_evaluation} groups, which the "
        "mixin cannot regroup; set it in infersight.yaml and rebuild: ' + std.join(', ', moved),\n"
        "  prometheusRules:: checked(super.prometheusRules),\n"
        "  prometheusAlerts:: checked(super.prometheusAlerts),\n"
        "  grafanaDashboards:: checked(super.grafanaDashboards),\n"
        "};\n"
    )


def _field_file(comment: str, field: str, body: str) -> str:
    return comment + "local f = import 'lib/format.libsonnet';\n\n{\n" + f"  {field}+:: {body},\n}}\n"
