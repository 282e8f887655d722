"""Running a run's coroutine from synchronous code: ``asyncio.run``, or, inside a running loop
(Jupyter), a fresh loop in a helper thread that Ctrl-C (the kernel's interrupt) still reaches."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_coro"]

T = TypeVar("T")


def run_coro(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, also from inside a running loop (Jupyter) via a helper thread.

    There the kernel's interrupt lands in this thread, not in the loop: the first cancels the run
    (which then drains, as Ctrl-C does under ``asyncio.run``), the second every task in it.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    loop = asyncio.new_event_loop()
    main = loop.create_task(coro)
    interrupts = 0
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        done = pool.submit(_run_until_complete, loop, main)
        while True:
            try:
                return done.result()
            except KeyboardInterrupt:
                interrupts += 1
                cancel = main.cancel if interrupts == 1 else lambda: [t.cancel() for t in asyncio.all_tasks(loop)]
                try:
                    loop.call_soon_threadsafe(cancel)
                except RuntimeError:  # the loop has just closed: the result is there
                    pass
            except asyncio.CancelledError:
                raise KeyboardInterrupt from None


def _run_until_complete(loop: asyncio.AbstractEventLoop, main: asyncio.Task[T]) -> T:
    """Run ``main`` on ``loop`` in this thread, then clean up as ``asyncio.run`` does."""
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()
