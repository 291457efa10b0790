"""vLLM's request spans joined to the load generator's requests by W3C trace context.

The load generator sends a ``traceparent`` per request (:mod:`.context`); vLLM, started with
``--otlp-traces-endpoint``, sends one ``llm_request`` span per request under that trace. A small
OTLP/HTTP receiver (:mod:`.receiver`) keeps each span's timings (:mod:`.spans`), and
:mod:`.join` matches them to ``requests.csv`` rows by trace ID.
"""
