"""Ending everything a test started, also what a process it stopped leaves behind.

A JupyterLab or Voila server starts kernels, each in a session and process group of
its own (jupyter_client starts them so), and a kernel may start workers in its group;
Playwright's driver starts Chromium and its helpers. Stopping the server or closing the
browser should end them all, and on a busy machine or after a failure it may not.
:func:`watch` notes a process, its descendants and the process groups they lead;
:meth:`Started.end` then ends whatever of them still runs: SIGTERM, then SIGKILL for
what is left after the grace period.

psutil finds the processes (a dependency of ipykernel, so present wherever a kernel
can run); without it, nothing is noted and nothing is ended.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

try:
    import psutil
except ImportError:  # no kernel can run here either
    psutil = None

GRACE_S = 20.0  # to stop after SIGTERM, before SIGKILL


@dataclass
class Started:
    """Processes noted by :func:`watch`, with the process groups they lead."""

    procs: dict[int, Any] = field(default_factory=dict)  # pid -> psutil.Process
    groups: set[int] = field(default_factory=set)
    since: float = float("inf")  # the earliest start time noted (seconds since the epoch)

    def add(self, pid: int) -> Started:
        """Note *pid* and its descendants as they are now (more calls note more)."""
        if psutil is None:
            return self
        try:
            root = psutil.Process(pid)
            found = [root, *root.children(recursive=True)]
        except psutil.Error:
            return self
        for p in found:
            try:
                self.since = min(self.since, p.create_time())
                if os.getpgid(p.pid) == p.pid:
                    self.groups.add(p.pid)
            except (psutil.Error, OSError):
                continue
            self.procs.setdefault(p.pid, p)
        return self

    def running(self) -> list[Any]:
        """What still runs of the processes noted and of the groups they led."""
        if psutil is None:
            return []
        found = {pid: p for pid, p in self.procs.items() if _running(p)}
        if self.groups:
            for p in psutil.process_iter():
                try:
                    if (
                        p.pid not in found
                        and p.pid != os.getpid()
                        and os.getpgid(p.pid) in self.groups
                        and p.create_time() >= self.since
                        and _running(p)
                    ):
                        found[p.pid] = p
                except (psutil.Error, OSError):
                    continue
        return list(found.values())

    def end(self, grace: float = GRACE_S) -> list[str]:
        """End what still runs (SIGTERM, SIGKILL after *grace* s); name what was ended."""
        left = self.running()
        if not left:
            return []
        names = [_name(p) for p in left]
        for p in left:
            try:
                p.terminate()
            except psutil.Error:
                pass
        _, stuck = psutil.wait_procs(left, timeout=grace)
        for p in stuck:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(stuck, timeout=grace)
        return names


def children(pid: int) -> list[int]:
    """The processes *pid* started that run now (empty without psutil)."""
    if psutil is None:
        return []
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def watch(pid: int) -> Started:
    """Note the process *pid* and what it has started so far."""
    return Started().add(pid)


def _running(p: Any) -> bool:
    try:
        return bool(p.is_running()) and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _name(p: Any) -> str:
    try:
        return f"{p.pid} {' '.join(p.cmdline())[:120]}"
    except psutil.Error:
        return str(p.pid)
