"""The PostgreSQL store's announcer (``postgres/_notes.py``) gathers the entries committed close
together into one announcement, and sends what is pending at once when it closes."""

from __future__ import annotations

import threading
import time

from batonflow.postgres._notes import Announcer


class Sent:
    """A ``send`` that keeps each batch it was given."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.arrived = threading.Event()

    def __call__(self, payloads: list[str]) -> None:
        self.batches.append(payloads)
        self.arrived.set()


def test_entries_committed_close_together_go_in_one_announcement():
    """A run's entry, another run's and the first run's end become one batch, newest seqs."""
    sent = Sent()
    announcer = Announcer(sent, linger=0.5)
    try:
        announcer.announce("a", 1)  # a run's StopEvent entry ...
        announcer.announce("b", 3)
        announcer.announce("a", 2)  # ... and its end, a statement later
        assert sent.arrived.wait(30), "nothing was announced"
    finally:
        announcer.close()
    assert sent.batches == [["a 2", "b 3"]]


def test_close_sends_what_is_pending_without_lingering():
    """Closing sends the pending entries at once, not after the linger."""
    sent = Sent()
    announcer = Announcer(sent, linger=60.0)
    announcer.announce("a", 1)
    closing = threading.Thread(target=announcer.close, daemon=True)
    began = time.monotonic()
    closing.start()
    closing.join(30)
    assert not closing.is_alive(), "close() waited out the linger"
    assert time.monotonic() - began < 30
    assert sent.batches == [["a 1"]]
