"""The time left to the running test: the limit of every wait of the browser and notebook tests.

No wait there has a fixed limit. ``tests/conftest.py`` starts this clock when
pytest-timeout starts a test's timer (``timeout`` in ``pyproject.toml``, or the test's
``timeout`` mark; setup, call and teardown share it) and stops it with the timer. A wait
gets the time left less a margin: what never happens then fails the wait itself, with
Playwright's or nbclient's message naming what it waited for, and the test still has
the margin to take its failure screenshot, close its pages and stop its servers. On a
busy machine a wait simply takes longer. Outside pytest (``bench/``) or under
``--timeout=0`` nothing limits a wait.
"""

from __future__ import annotations

import time

# What a test keeps for its own ending after a wait fails, at most (a tenth of its limit
# where that is less): a full-page screenshot, closing the page, stopping JupyterLab and
# its kernels (tests/_procs.py gives each 20 s to stop before it is killed).
MARGIN_S = 60.0
# For the settings that have no "no limit" value (nbclient's startup and IOPub waits).
NO_LIMIT_S = 7 * 24 * 3600

_deadline: float | None = None


def start(seconds: float) -> None:
    """A test's timer of *seconds* has started."""
    global _deadline
    _deadline = time.monotonic() + seconds - min(MARGIN_S, seconds / 10)


def stop() -> None:
    """The test's timer is cancelled: no limit until the next one starts."""
    global _deadline
    _deadline = None


def seconds_left() -> float | None:
    """Seconds a wait may take now (at least one), or None for no limit."""
    if _deadline is None:
        return None
    return max(1.0, _deadline - time.monotonic())


def out_of_time() -> bool:
    """Whether the test's time for waiting has run out (never without a limit)."""
    return _deadline is not None and time.monotonic() >= _deadline


def ms() -> int:
    """A Playwright ``timeout``: the milliseconds a wait may take now; 0 is no limit."""
    left = seconds_left()
    return 0 if left is None else int(left * 1000)


def whole_seconds() -> int:
    """For an integer setting in seconds that cannot say "no limit" (a week then)."""
    left = seconds_left()
    return NO_LIMIT_S if left is None else int(left)
