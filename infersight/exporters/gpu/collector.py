"""The prometheus_client collector: renders the sampler's latest snapshot, never touches the driver.

Device series carry dcgm-exporter's labels (``gpu, UUID, pci_bus_id, device, modelName, Hostname``)
so the bundle's GPU rules read either exporter. Process series are capped: the ``max_series``
largest processes are kept and the rest of each GPU is summed into one ``pid="other"`` series, so
``sum by (gpu)`` still equals what the processes hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from infersight import catalog
from infersight.exporters.gpu.model import DEVICE_FIELDS, ProcessIdentity, ProcessSample, Snapshot

DEVICE_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
PROCESS_MEMORY = catalog.get("infersight_gpu_process_memory_bytes")
OTHER = "other"
DEFAULT_MAX_PROCESS_SERIES = 64
assert set(DEVICE_LABELS) <= set(catalog.get("DCGM_FI_DEV_FB_USED").labels)


def cap_processes(processes: Sequence[ProcessSample], max_series: int) -> list[ProcessSample]:
    """The ``max_series`` largest processes (ties by pid), plus one summed ``other`` row per GPU
    for the remainder. The overflow rows may take the total one or more series past the cap,
    at most one per GPU, which is bounded by the node."""
    ranked = sorted(processes, key=lambda p: (-p.used_bytes, p.gpu_index, p.pid))
    kept, rest = ranked[:max_series], ranked[max_series:]
    overflow: dict[tuple[int, str], int] = {}
    for p in rest:
        overflow[(p.gpu_index, p.uuid)] = overflow.get((p.gpu_index, p.uuid), 0) + p.used_bytes
    other = ProcessIdentity(process=OTHER)
    kept.extend(ProcessSample(g, u, -1, b, other) for (g, u), b in sorted(overflow.items()))
    return kept


class GpuCollector(Collector):
    def __init__(
        self,
        latest: Callable[[], Snapshot | None],
        hostname: str,
        max_process_series: int = DEFAULT_MAX_PROCESS_SERIES,
    ):
        if max_process_series < 0:
            raise ValueError(f"max_process_series must be >= 0, got {max_process_series}")
        self._latest = latest
        self.hostname = hostname
        self.max_process_series = max_process_series

    def collect(self) -> Iterator[Metric]:
        snap = self._latest()
        if snap is None:
            return
        for name in DEVICE_FIELDS:
            entry = catalog.get(name)
            family = GaugeMetricFamily(name, entry.help, labels=DEVICE_LABELS)
            for d in snap.devices:
                if name in d.values:
                    labels = [str(d.index), d.uuid, d.pci_bus_id, d.device, d.model_name, self.hostname]
                    family.add_metric(labels, d.values[name])
            if family.samples:
                yield family
        family = GaugeMetricFamily(PROCESS_MEMORY.name, PROCESS_MEMORY.help, labels=PROCESS_MEMORY.labels)
        for p in cap_processes(snap.processes, self.max_process_series):
            ident = p.identity or ProcessIdentity()
            pid = OTHER if p.pid < 0 else str(p.pid)
            values = {
                "gpu": str(p.gpu_index),
                "UUID": p.uuid,
                "pid": pid,
                "process": ident.process,
                "model_name": ident.model_name,
                "pod": ident.pod,
                "Hostname": self.hostname,
            }
            family.add_metric([values[k] for k in PROCESS_MEMORY.labels], float(p.used_bytes))
        yield family
