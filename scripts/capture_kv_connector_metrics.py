"""List the metric families of vLLM's GPU KV connectors (NixlConnector, OffloadingConnector with
a CPU tier, SimpleCPUOffloadConnector) as the installed vLLM's own classes declare them, into
tests/data/reference/. No connector runs here (they need CUDA or NIXL); declaring their metrics
does not, so the names, types, labels and bucket bounds in the file are vLLM's, not transcribed.

    .venv/bin/python scripts/capture_kv_connector_metrics.py [--check]

Each connector's ``build_prom_metrics`` is called as vLLM's KVConnectorProm calls it, with the
prometheus_client classes wrapped to record every declaration. ``--check`` compares with the file
instead of writing it: after a vLLM upgrade that renames or relabels a family,
tests/test_bundle_static.py fails until this is rerun and the diff reviewed."""

from __future__ import annotations

import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "reference" / "vllm-0.32.0-kv-connector-families.txt"
# connector -> kv_connector_extra_config: store_threshold >= 2 declares the CPU tier's skipped stores.
CONNECTORS = {
    "NixlConnector": {},
    "OffloadingConnector": {"store_threshold": 2},
    "SimpleCPUOffloadConnector": {},
}


def render() -> str:
    """One line per family: its name as scraped, type, label names and histogram bounds."""
    from prometheus_client import Counter, Gauge, Histogram
    from vllm.config import KVTransferConfig
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

    declared: dict[str, str] = {}

    def recording(base: type, kind: str) -> type:
        # Connectors create most label children only when they first observe a transfer, so the
        # registry's text would lack their labels: record each declaration as it is made.
        class Recorded(base):  # type: ignore[valid-type,misc]
            def __init__(self, name: str, documentation: str, labelnames=(), buckets=None, **kwargs):
                scraped = name.removesuffix("_total") + "_total" if kind == "counter" else name
                bounds = ",".join(repr(float(b)) for b in (buckets or ()) if b != float("inf"))
                declared[scraped] = f"{scraped} {kind} labels={','.join(labelnames)}" + (
                    f" buckets={bounds}" if kind == "histogram" else ""
                )
                if buckets is not None:
                    kwargs["buckets"] = buckets
                super().__init__(name, documentation, labelnames, **kwargs)

        return Recorded

    metric_types = {Gauge: recording(Gauge, "gauge"), Counter: recording(Counter, "counter")}
    metric_types[Histogram] = recording(Histogram, "histogram")
    for name, extra in CONNECTORS.items():
        transfer = KVTransferConfig(kv_connector=name, kv_role="kv_both", kv_connector_extra_config=extra)
        vllm_config = types.SimpleNamespace(kv_transfer_config=transfer)  # all build_prom_metrics reads
        connector = KVConnectorFactory.get_connector_class(transfer)
        connector.build_prom_metrics(vllm_config, metric_types, ["model_name", "engine"], {0: ["m", "0"]})
    header = (
        "# vLLM 0.32.0's KV connector metric families as its own classes declare them:\n"
        "# scripts/capture_kv_connector_metrics.py\n"
        "# format: <family name as scraped> <type> labels=<names> [buckets=<bounds>]\n"
    )
    return header + "".join(f"{line}\n" for _, line in sorted(declared.items()))


def main() -> int:
    text = render()
    if "--check" in sys.argv[1:]:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(REPO)} differs from what the installed vLLM renders; rerun this script")
            return 1
        return 0
    sys.path.insert(0, str(REPO))
    from infersight.output import write_atomic

    write_atomic(OUT, text)
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
