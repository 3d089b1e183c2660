"""The helpers of the browser and notebook tests: the limit of their waits, ending processes.

A wait's limit is the time left to the test under pytest-timeout (``tests/_budget.py``),
never a fixed time; ``tests/_procs.py`` ends a process with everything it started,
including what runs in a session of its own (as jupyter_client starts kernels).
"""

from __future__ import annotations

import subprocess
import sys

import _budget
import _procs
import pytest

psutil = pytest.importorskip("psutil")


@pytest.mark.timeout(600)
def test_a_wait_may_take_the_time_left_to_the_test() -> None:
    left = _budget.seconds_left()
    if left is None:
        pytest.skip("pytest-timeout is not timing this test")
    # the test's 600 s less the margin kept for its ending (a failure's screenshot, servers)
    assert 600 - _budget.MARGIN_S - 60 < left <= 600 - _budget.MARGIN_S
    assert 0 < _budget.ms() <= left * 1000 and not _budget.out_of_time()


def test_outside_a_test_nothing_limits_a_wait() -> None:
    saved = _budget._deadline
    _budget.stop()
    try:
        assert _budget.seconds_left() is None and _budget.ms() == 0
        assert _budget.whole_seconds() == _budget.NO_LIMIT_S and not _budget.out_of_time()
    finally:
        _budget._deadline = saved


# A parent that starts a child in a session of its own (as a server starts a kernel), which
# starts a grandchild in its process group (as a kernel starts a worker), then waits.
_TREE = """
import subprocess, sys, time
kernel = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', " \\
    "'import time; time.sleep(600)']); print('ready', flush=True); time.sleep(600)"
p = subprocess.Popen([sys.executable, "-c", kernel], start_new_session=True,
                     stdout=subprocess.PIPE, text=True)
p.stdout.readline()
print("ready", flush=True)
time.sleep(600)
"""


def test_ending_a_process_ends_what_it_started() -> None:
    root = subprocess.Popen([sys.executable, "-c", _TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert root.stdout is not None and root.stdout.readline().strip() == "ready"
        started = _procs.watch(root.pid)
        assert len(started.procs) == 3  # the parent, its child and the child's worker
        assert len(started.groups) == 1  # the child leads a group of its own
        root.kill()  # as a server killed after its grace period: its kernel stays
        root.wait()
        left = started.running()
        assert len(left) == 2, left  # the child and the grandchild, both still running
        assert len(started.end()) == 2
        assert started.running() == []
    finally:
        root.kill()
        root.wait()
        if root.stdout is not None:
            root.stdout.close()
