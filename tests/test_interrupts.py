"""Commands that clean up on Ctrl-C must see it even when started with SIGINT ignored, as a shell
without job control starts background jobs (CI runners do): the inherited SIG_IGN would otherwise
swallow the interrupt and the clean-up would never run."""

from __future__ import annotations

import os
import signal

import pytest

from infersight.interrupts import Terminated, interrupts_raise


@pytest.mark.parametrize(
    ("sig", "raised"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)], ids=["SIGINT", "SIGTERM"]
)
def test_an_inherited_ignore_does_not_swallow_the_interrupt(sig: signal.Signals, raised: type[BaseException]) -> None:
    previous = signal.signal(sig, signal.SIG_IGN)
    try:
        with pytest.raises(raised), interrupts_raise():
            os.kill(os.getpid(), sig)  # the handler runs before the next line of Python
        assert signal.getsignal(sig) == signal.SIG_IGN  # the block puts back what it found
    finally:
        signal.signal(sig, previous)
