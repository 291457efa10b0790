"""Stand-ins for the GPU drivers: an NVML module that raises the REAL pynvml error classes, a DCGM
binding set shaped like DcgmReader/dcgm_fields/dcgm_structs, and certificate helpers."""

from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pynvml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

MIB = 1024 * 1024


@dataclass
class StandInGpu:
    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    bus_id: str = "00000000:07:00.0"
    minor: int = 0
    total: int = 80 * 1024 * MIB
    used: int = 10 * 1024 * MIB
    reserved: int = 512 * MIB
    util_gpu: int = 50
    util_mem: int = 20
    power_mw: int = 300_500
    enforced_limit_mw: int = 650_000
    default_limit_mw: int = 700_000
    temp_c: int = 60
    sm_clock: int = 1980
    mem_clock: int = 2619
    memory_temp_c: int = 45
    ecc_sbe: int = 0
    ecc_dbe: int = 0
    remapped_uncorrectable: int = 0
    throttle_reasons: int = 0
    # (pid, usedGpuMemory in bytes or None)
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    # NVML function name -> exception raised by it for this GPU ("*" = every per-device call).
    errors: dict[str, Exception] = field(default_factory=dict)


class StandInNvml:
    """The pynvml surface NvmlBackend uses. Unknown attributes (error classes, NVML_* constants) are
    the real pynvml's, so the backend's error handling is exercised against the real classes."""

    def __init__(self, gpus: list[StandInGpu]):
        self.gpus = gpus
        self.init_error: Exception | None = None
        self.count_error: Exception | None = None
        self.memory_v2_error: Exception | None = None
        self.events: list[tuple[int, int]] = []  # (gpu index, xid) waiting to be read
        self.init_calls = 0
        self.shutdown_calls = 0
        self.registered: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(pynvml, name)

    def _gpu(self, handle: int, fn: str) -> StandInGpu:
        gpu = self.gpus[handle]
        err = gpu.errors.get(fn) or gpu.errors.get("*")
        if err is not None:
            raise err
        return gpu

    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.shutdown_calls += 1

    def nvmlDeviceGetCount(self) -> int:
        if self.count_error is not None:
            raise self.count_error
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._gpu(index, "nvmlDeviceGetHandleByIndex")
        return index

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self._gpu(h, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return self._gpu(h, "nvmlDeviceGetName").name.encode()  # older pynvml returns bytes

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        return SimpleNamespace(busId=self._gpu(h, "nvmlDeviceGetPciInfo").bus_id.encode())

    def nvmlDeviceGetMinorNumber(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetMinorNumber").minor

    def nvmlDeviceGetMemoryInfo(self, h: int, version: int | None = None) -> Any:
        g = self._gpu(h, "nvmlDeviceGetMemoryInfo")
        if version is not None:
            if self.memory_v2_error is not None:
                raise self.memory_v2_error
            free = g.total - g.used - g.reserved
            return SimpleNamespace(total=g.total, used=g.used, free=free, reserved=g.reserved)
        return SimpleNamespace(total=g.total, used=g.used + g.reserved, free=g.total - g.used - g.reserved)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        g = self._gpu(h, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=g.util_gpu, memory=g.util_mem)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetPowerUsage").power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetEnforcedPowerLimit").enforced_limit_mw

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetPowerManagementDefaultLimit").default_limit_mw

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        assert sensor == pynvml.NVML_TEMPERATURE_GPU
        return self._gpu(h, "nvmlDeviceGetTemperature").temp_c

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        g = self._gpu(h, "nvmlDeviceGetClockInfo")
        return {pynvml.NVML_CLOCK_SM: g.sm_clock, pynvml.NVML_CLOCK_MEM: g.mem_clock}[clock]

    def nvmlDeviceGetFieldValues(self, h: int, field_ids: list[int]) -> list[Any]:
        assert field_ids == [pynvml.NVML_FI_DEV_MEMORY_TEMP]
        g = self._gpu(h, "nvmlDeviceGetFieldValues")
        err = g.errors.get("NVML_FI_DEV_MEMORY_TEMP")  # per-field status, as NVML reports it
        status = getattr(err, "value", pynvml.NVML_SUCCESS)
        value = SimpleNamespace(uiVal=g.memory_temp_c)
        return [SimpleNamespace(fieldId=field_ids[0], valueType=1, nvmlReturn=status, value=value)]

    def nvmlDeviceGetTotalEccErrors(self, h: int, error_type: int, counter_type: int) -> int:
        assert counter_type == pynvml.NVML_VOLATILE_ECC
        g = self._gpu(h, "nvmlDeviceGetTotalEccErrors")
        return g.ecc_dbe if error_type == pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED else g.ecc_sbe

    def nvmlDeviceGetRemappedRows(self, h: int) -> tuple[int, int, int, int]:
        return (0, self._gpu(h, "nvmlDeviceGetRemappedRows").remapped_uncorrectable, 0, 0)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetCurrentClocksEventReasons").throttle_reasons

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        g = self._gpu(h, "nvmlDeviceGetComputeRunningProcesses")
        return [SimpleNamespace(pid=pid, usedGpuMemory=b) for pid, b in g.processes]

    def nvmlEventSetCreate(self) -> str:
        return "event-set"

    def nvmlEventSetFree(self, event_set: str) -> None:
        pass

    def nvmlDeviceRegisterEvents(self, h: int, types: int, event_set: str) -> None:
        assert types & pynvml.nvmlEventTypeXidCriticalError
        self._gpu(h, "nvmlDeviceRegisterEvents")
        self.registered.append(h)

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> Any:
        assert timeout_ms == 0, "the sampler must never block on events"
        if not self.events:
            raise pynvml.NVMLError_Timeout()
        index, xid = self.events.pop(0)
        return SimpleNamespace(device=index, eventType=pynvml.nvmlEventTypeXidCriticalError, eventData=xid)


# --- DCGM ------------------------------------------------------------------------------------
class DCGMError(Exception):
    def __init__(self, value: int):
        super().__init__(f"DCGM error {value}")
        self.value = value


dcgm_structs = SimpleNamespace(
    DCGMError=DCGMError,
    DCGM_ST_CONNECTION_NOT_VALID=-6,
    DCGM_ST_GPU_IS_LOST=-33,
    DCGM_ST_NO_PERMISSION=-12,
    DCGM_ST_LIBRARY_NOT_FOUND=-26,
)
dcgm_fields = SimpleNamespace(
    DCGM_FI_DEV_SM_CLOCK=100,
    DCGM_FI_DEV_GPU_TEMP=150,
    DCGM_FI_DEV_POWER_USAGE=155,
    DCGM_FI_DEV_GPU_UTIL=203,
    DCGM_FI_DEV_MEM_COPY_UTIL=204,
    DCGM_FI_DEV_XID_ERRORS=230,
    DCGM_FI_DEV_FB_FREE=251,
    DCGM_FI_DEV_FB_USED=252,
    DCGM_FI_DEV_FB_RESERVED=253,
    DCGM_FI_PROF_GR_ENGINE_ACTIVE=1001,
    DCGM_FI_PROF_PIPE_TENSOR_ACTIVE=1004,
    DCGM_FI_PROF_DRAM_ACTIVE=1005,
)


class StandInDcgmReader:
    """Shaped like DcgmReader.DcgmReader: Init() leaves m_dcgmHandle None when the engine is down."""

    engine_up = True
    values: ClassVar[dict[int, dict[int, float]]] = {}
    raise_on_read: Exception | None = None
    instances: ClassVar[list[StandInDcgmReader]] = []

    def __init__(self, hostname: str | None = None, fieldIds: list[int] | None = None, **kwargs: Any):
        self.hostname = hostname
        self.field_ids = fieldIds or []
        self.kwargs = kwargs
        self.m_dcgmHandle: object | None = None
        self.m_gpuIdToUUId = {0: "GPU-dcgm-0", 1: "GPU-dcgm-1"}
        self.m_gpuIdToBusId = {0: "00000000:07:00.0", 1: "00000000:0A:00.0"}
        attrs = SimpleNamespace(identifiers=SimpleNamespace(deviceName="NVIDIA H200"))
        self.m_dcgmSystem = SimpleNamespace(discovery=SimpleNamespace(GetGpuAttributes=lambda gpu_id: attrs))
        StandInDcgmReader.instances.append(self)

    def Init(self, libpath: str | None = None) -> None:
        self.m_dcgmHandle = object() if StandInDcgmReader.engine_up else None

    def GetLatestGpuValuesAsFieldIdDict(self) -> dict[int, dict[int, float]]:
        if StandInDcgmReader.raise_on_read is not None:
            raise StandInDcgmReader.raise_on_read
        if not StandInDcgmReader.engine_up:
            self.m_dcgmHandle = None  # as DcgmReader does after DCGM_ST_CONNECTION_NOT_VALID
            return {}
        return {g: dict(v) for g, v in StandInDcgmReader.values.items()}

    def Shutdown(self) -> None:
        self.m_dcgmHandle = None


# --- certificates ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CertFiles:
    ca: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def make_certs(folder: Path) -> CertFiles:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate, all signed by it."""
    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: Any, ca: bool) -> Any:
        b = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            b = b.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        return b.sign(signer, hashes.SHA256())

    folder.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "infersight test CA")])
    ca_cert = build("infersight test CA", ca_key, ca_name, ca_key, True)
    files = CertFiles(
        folder / "ca.crt", folder / "server.crt", folder / "server.key", folder / "client.crt", folder / "client.key"
    )
    files.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    for cert_path, key_path, cn in ((files.cert, files.key, "server"), (files.client_cert, files.client_key, "client")):
        key = ec.generate_private_key(ec.SECP256R1())
        _write_key(key_path, key)
        cert_path.write_bytes(build(cn, key, ca_name, ca_key, False).public_bytes(serialization.Encoding.PEM))
    return files


def https_get(
    port: int,
    ca: Path,
    auth: tuple[str, str] | None,
    path: str = "/metrics",
    cert: tuple[Path, Path] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """GET over TLS verified against ``ca``, with optional basic auth and client certificate."""
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        ctx.load_cert_chain(*cert)
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    headers: dict[str, str] = {}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()
