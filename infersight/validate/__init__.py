"""``infersight validate``: run load scenarios with fault actions against a live stack and prove
that each expected alert fires (and how fast) and that healthy traffic raises none.

Modules, one concern each:
- ``timeline``: what was observed (alert intervals, actions done), in Unix time;
- ``controls``: the hooks that act on the stack (stop/start/kill vLLM, the fake GPU's leak);
- ``actions``: the executor that performs a scenario's ``actions:`` at their offsets;
- ``apis``: small clients of Prometheus's and Alertmanager's HTTP APIs;
- ``watcher``: polls both APIs and turns what it sees into alert intervals;
- ``evaluator``: expectations met or missed, detection rate, time to detect, false positives;
- ``series``: the recording-rule series and server-side TTFT quantiles the report shows;
- ``session``: one scenario end to end (settle, load, actions, watch, evaluate), and a suite;
- ``plots`` and ``report``: PNG plots and the HTML page;
- ``local_stack``: the stack `infersight up` starts on loopback.
"""
