"""LoRA adapters per server, from ``vllm:lora_requests_info``: how many adapters are running and
how many wait, one series per (job, instance, state).

vLLM's info gauge puts the adapter names in comma-separated labels (``running_lora_adapters``,
``waiting_lora_adapters``). It starts a new series for every combination it meets, never removes
one, and sets the value to the Unix time of the last update, so the newest series of a server is
its current state. These rules keep only that series and turn each list into a count, matching
the list against "n names" regexes (``n`` up to :data:`MAX_COUNTED`, then "that many or more"):
the names never leave the raw series, and the recorded series stay one per server and state
however many combinations vLLM has made. The series has no ``model_name``.
"""

from __future__ import annotations

from infersight import conventions, promql
from infersight.config import Config
from infersight.rules import RecordingRule

INFO = "vllm:lora_requests_info"
BY = ("job", "instance")
MAX_COUNTED = 16  # vLLM's --max-loras is 1 by default; a server with more shows "16 or more"
STATES = {"running": "running_lora_adapters", "waiting": "waiting_lora_adapters"}
ADAPTERS = conventions.record_name("instance", "vllm:lora_adapters", "count")


def _names(n: int) -> str:
    """A regex for a list of exactly ``n`` comma-separated names (at least ``n`` at the cap)."""
    if n == 0:
        return ""
    if n == 1:
        return "[^,]+"
    repeat = f"{{{n - 1},}}" if n == MAX_COUNTED else f"{{{n - 1}}}"
    return f"[^,]+(,[^,]+){repeat}"


def _count(cfg: Config, label: str) -> str:
    sel = cfg.selectors.vllm
    # Inline, not a recording: a scrape landing between two rules of a group would make the raw
    # newest value exceed a recorded max, and no clause would match for that evaluation.
    newest = promql.agg("max", BY, promql.series(INFO, sel))
    clauses = []
    for n in range(MAX_COUNTED + 1):
        # An empty label is an absent one: "=" "" matches a server with no adapter in that state.
        matcher = promql.label_matcher(label, "=~" if n else "=", _names(n))
        newest_matching = f"{promql.series(INFO, [*sel, matcher])}\n  == on ({', '.join(BY)}) group_left ()\n  {newest}"
        clauses.append(promql.agg("max", BY, f"({newest_matching})\n  * 0 + {n}"))
    return "\nor\n".join(clauses)


def rules(cfg: Config) -> list[RecordingRule]:
    return [RecordingRule(ADAPTERS, _count(cfg, label), {"state": state}) for state, label in STATES.items()]
