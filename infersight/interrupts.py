"""Ctrl-C and SIGTERM for commands that must clean up: SIGTERM becomes an exception, like Ctrl-C's
KeyboardInterrupt, so one ``except`` runs the same clean-up for both; the clean-up itself cannot be
cut short by a second signal."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(BaseException):
    """SIGTERM arrived. A BaseException, like KeyboardInterrupt, so ``except Exception`` lets it pass."""


def signal_of(exc: BaseException) -> signal.Signals | None:
    """The signal an interrupt exception stands for; None for any other exception."""
    if isinstance(exc, KeyboardInterrupt):
        return signal.SIGINT
    if isinstance(exc, Terminated):
        return signal.SIGTERM
    return None


def _main_thread() -> bool:
    # Python runs signal handlers in the main thread only, and only it may install them.
    return threading.current_thread() is threading.main_thread()


@contextmanager
def interrupts_raise() -> Iterator[None]:
    """Within the block, Ctrl-C raises KeyboardInterrupt and SIGTERM raises :class:`Terminated`,
    whatever was inherited: a shell without job control starts background jobs with SIGINT
    ignored, and the clean-up these commands promise on Ctrl-C must still run."""
    if not _main_thread():
        yield
        return

    def terminated(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
        signal.SIGTERM: signal.signal(signal.SIGTERM, terminated),
    }
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextmanager
def uninterruptible() -> Iterator[None]:
    """Clean-up must finish: Ctrl-C and SIGTERM are ignored until it has."""
    if not _main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
