"""Progress plumbing: Ctrl-C is never lost inside interrupt_guard, and the tally of kept work."""

from __future__ import annotations

import os
import signal

import pytest

from negvocab.core.progress import Progress, check_interrupt, forget_kept, interrupt_guard, kept_work, note_kept


def _swallowed_sigint() -> None:
    """A SIGINT whose KeyboardInterrupt is dropped on its way up, as Python drops an exception
    raised inside a fork hook ("Exception ignored in: <function _releaseLock>")."""
    try:
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, in the main thread
    except KeyboardInterrupt:
        pass


def test_a_swallowed_ctrl_c_ends_the_run_at_the_next_progress_step():
    with interrupt_guard():
        _swallowed_sigint()
        bar = Progress(10, "encoding", bar=False)
        with pytest.raises(KeyboardInterrupt):
            bar.update(1)  # before: the run went on to the end, exit 0
        bar.update(1)  # raised once, then cleared
        _swallowed_sigint()
        with pytest.raises(KeyboardInterrupt):
            check_interrupt()  # between phases without a bar
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_outside_the_guard_nothing_changes():
    """Outside interrupt_guard the default handler stays, and a swallowed Ctrl-C leaves nothing pending."""
    from negvocab.core import progress as P

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    _swallowed_sigint()  # the default handler: swallowed and gone, as before
    assert not P._pending_interrupt.is_set()
    bar = Progress(3, "x", bar=False)
    bar.update(3)  # no KeyboardInterrupt: nothing was pending
    assert bar.n == 3
    check_interrupt()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and not P._pending_interrupt.is_set()


def test_kept_work_is_tallied_by_kind():
    forget_kept()
    assert kept_work() == {}
    note_kept("text embeddings in the cache", 256)
    note_kept("text embeddings in the cache", 44)
    note_kept("answers in the LLM run journal", 0)
    assert kept_work() == {"text embeddings in the cache": 300, "answers in the LLM run journal": 0}
    forget_kept()
    assert kept_work() == {}
