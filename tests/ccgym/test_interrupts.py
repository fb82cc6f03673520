import os
import signal

import pytest

from ccgym.interrupts import handlers_kept, interrupt_after, sigterm_as_interrupt


def test_a_signal_in_the_block_calls_back_and_interrupts_only_once_the_block_has_ended():
    calls, finished = [], []
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with interrupt_after(lambda: calls.append("killed"), [signal.SIGTERM]):
            os.kill(os.getpid(), signal.SIGTERM)
            finished.append(True)  # the block runs on past the signal
    assert calls == ["killed"] and finished == [True]
    assert signal.getsignal(signal.SIGTERM) is before


def test_without_a_signal_the_block_ends_normally():
    with interrupt_after(lambda: pytest.fail("called back without a signal"), [signal.SIGTERM]):
        pass


def test_handlers_kept_puts_back_the_handler_the_block_replaced():
    with sigterm_as_interrupt():
        ours = signal.getsignal(signal.SIGTERM)
        with handlers_kept():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as ray.init replaces it
        assert signal.getsignal(signal.SIGTERM) is ours
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
