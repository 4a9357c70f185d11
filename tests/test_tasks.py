"""cancel_and_wait ends tasks whose first cancellation is swallowed (CPython gh-86296 on 3.11)."""

from __future__ import annotations

import asyncio

from hebictl.tasks import cancel_and_wait


async def _swallows_one_cancel(state: dict[str, int]) -> None:
    """Behaves like a loop whose ``asyncio.wait_for`` lost a cancellation: carries on once."""
    while True:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            state["cancels"] += 1
            if state["cancels"] == 1:
                continue
            raise


def test_a_task_that_swallows_its_first_cancel_still_ends() -> None:
    async def main() -> dict[str, int]:
        state = {"cancels": 0}
        task = asyncio.create_task(_swallows_one_cancel(state))
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait([task], retry=0.01), timeout=2.0)
        assert task.cancelled()
        return state

    assert asyncio.run(main())["cancels"] == 2


def test_a_single_cancel_and_gather_would_hang_on_it() -> None:
    """The failure mode itself: one cancel() is not enough for such a task."""
    async def main() -> bool:
        task = asyncio.create_task(_swallows_one_cancel({"cancels": 0}))
        await asyncio.sleep(0)
        task.cancel()
        _, pending = await asyncio.wait({task}, timeout=0.1)
        still_running = bool(pending)
        await cancel_and_wait([task])
        return still_running

    assert asyncio.run(main())


def test_finished_tasks_keep_their_results_and_exceptions_are_retrieved() -> None:
    async def main() -> None:
        async def fails() -> None:
            raise ValueError("boom")

        done = asyncio.create_task(asyncio.sleep(0, result=7))
        failed = asyncio.create_task(fails())
        await asyncio.sleep(0.01)
        await cancel_and_wait([done, failed])
        assert done.result() == 7 and isinstance(failed.exception(), ValueError)

    asyncio.run(main())
