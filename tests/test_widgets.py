"""What the explorers share: the debounce that waits for a drag to stop.

Each explorer has its own tests (tests/test_scan_explorer.py,
test_tuner_dashboard.py, ...); in a browser, tests/test_browser*.py.
"""

from __future__ import annotations

from pcr_explore.widgets._module_widget import Debounced


def test_debounced_runs_once_after_the_calls_stop() -> None:
    import asyncio

    calls: list[int] = []
    d = Debounced(lambda: calls.append(1), delay=0.05)
    d()  # no running loop: at once
    assert calls == [1]

    async def drag() -> None:
        for _ in range(5):
            d()
            assert d.pending
            await asyncio.sleep(0.01)
        assert calls == [1]  # still moving
        await asyncio.sleep(0.1)
        assert calls == [1, 1] and not d.pending
        d()
        d.flush()
        assert calls == [1, 1, 1] and not d.pending

    asyncio.run(drag())
