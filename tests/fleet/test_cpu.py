"""CPU accounting from /proc: a process's user + system time, the host's busy share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from infersight.fleet import cpu


def _fake_proc(tmp_path: Path, pid: int, utime: int, stime: int, host: tuple[int, ...]) -> Path:
    (tmp_path / str(pid)).mkdir(exist_ok=True)
    # comm with a space and a ')' as the kernel may write it; fields 14 and 15 are utime, stime
    rest = ["S", "1", "1", "1", "0", "-1", "0", "0", "0", "0", "0", str(utime), str(stime), "0", "0"]
    (tmp_path / str(pid) / "stat").write_text(f"{pid} (a b) c) " + " ".join(rest) + "\n")
    (tmp_path / "stat").write_text("cpu  " + " ".join(map(str, host)) + " 0 0 0\ncpu0 1 1 1 1\n")
    return tmp_path


def test_a_window_gives_cores_per_process_and_the_host_busy_share(tmp_path: Path) -> None:
    hz = cpu.TICKS_PER_SECOND
    proc = _fake_proc(tmp_path, 42, utime=0, stime=0, host=(0, 0, 0, 0, 0, 0, 0))
    before = cpu.snapshot({"p": 42}, proc)
    # 3 s of user and 1 s of system time; the host: 6 s busy (user 4, system 2), 2 s idle, 2 s iowait
    _fake_proc(tmp_path, 42, utime=3 * hz, stime=1 * hz, host=(4 * hz, 0, 2 * hz, 2 * hz, 2 * hz, 0, 0))
    after = cpu.snapshot({"p": 42}, proc)
    after = cpu.CpuSnapshot(before.at + 8.0, after.host_busy, after.host_total, after.processes)
    use = cpu.between(before, after)
    assert use.cores == {"p": 0.5}
    assert use.host_busy == 0.6


def test_a_gone_process_reads_zero_not_an_error(tmp_path: Path) -> None:
    assert cpu.process_cpu_seconds(999_999_999) == 0.0
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "stat").write_text("7 (x) S")  # cut short
    assert cpu.process_cpu_seconds(7, tmp_path) == 0.0


def test_a_real_child_reads_the_cpu_time_it_burnt() -> None:
    burn = (
        "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
        "print(flush=True)\ntime.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", burn], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        child.stdout.readline()  # it has burnt 0.3 s and now sleeps
        used = cpu.process_cpu_seconds(child.pid)
    finally:
        child.kill()
        child.wait(timeout=30)
    assert 0.3 <= used < 5.0
