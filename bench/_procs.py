"""Run a command and measure its whole process tree: wall time, CPU time, peak memory.

The tree is polled every 50 ms with psutil (``pip install pcr-explore[bench]``):
every process's peak resident set (``VmHWM``, which the kernel keeps, so a
peak between two polls is not missed while the process lives) and its CPU
time. A process that starts and ends between two polls is missed; the
package's pools live for a whole step, so they are seen.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class TreeCost:
    """What one command cost, over it and every process it started."""

    wall_s: float
    cpu_s: float  # every Python process's own time, plus reaped non-Python children
    main_mb: float  # peak resident set of the command's own process
    worker_max_mb: float  # the largest peak of a Python process it started
    workers: int  # Python processes it started
    returncode: int
    other_child_max_mb: float = 0.0  # the largest peak of another program it ran (jpegtran)


def uptime() -> str:
    """The machine's load, as ``uptime`` says it (the machine may be shared)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _vm_hwm(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(argv: list[str], *, poll_s: float = 0.05) -> TreeCost:
    """Run *argv* to its end and return its :class:`TreeCost`."""
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(argv)
    peaks: dict[int, tuple[str, int]] = {}
    times: dict[int, tuple[str, int, float, float]] = {}  # name, parent, own, reaped children
    stop = threading.Event()

    def poll() -> None:
        top = psutil.Process(proc.pid)
        while not stop.is_set():
            try:
                procs = [top, *top.children(recursive=True)]
            except psutil.Error:
                procs = [top]
            for p in procs:
                try:
                    name = p.name()
                    t = p.cpu_times()
                    parent = p.ppid()
                except psutil.Error:
                    continue
                hwm = _vm_hwm(p.pid)
                if hwm > peaks.get(p.pid, ("", 0))[1]:
                    peaks[p.pid] = (name, hwm)
                times[p.pid] = (
                    name,
                    parent,
                    t.user + t.system,
                    t.children_user + t.children_system,
                )
            stop.wait(poll_s)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    rc = proc.wait()
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    # the command itself counts whatever its name (an entry-point script: pcr-explore)
    python = {pid for pid, v in times.items() if "python" in v[0] or pid == proc.pid}
    parents = {times[pid][1] for pid in python}
    cpu = sum(times[pid][2] for pid in python)
    cpu += sum(times[pid][3] for pid in python if pid not in parents)
    workers = [v for pid, (n, v) in peaks.items() if pid != proc.pid and "python" in n]
    others = [v for pid, (n, v) in peaks.items() if pid != proc.pid and "python" not in n]
    return TreeCost(
        wall_s=wall,
        cpu_s=cpu,
        main_mb=peaks.get(proc.pid, ("", 0))[1] / 2**20,
        worker_max_mb=max(workers, default=0) / 2**20,
        workers=len(workers),
        returncode=rc,
        other_child_max_mb=max(others, default=0) / 2**20,
    )
