"""Lanes: calls run at most `per_lane` at a time per lane, lanes take turns for free threads, and a call
withdrawn before it starts never runs. Real threads; each call says when it runs through an event."""

from __future__ import annotations

import threading
from collections.abc import Callable

from shipcode_mcp.transports.http.lanes import Lanes


class Recorder:
    def __init__(self) -> None:
        self.order: list[str] = []
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.done = threading.Condition(self.lock)

    def call(self, tag: str, *, blocking: bool = False) -> Callable[[], None]:
        def work() -> None:
            if blocking:
                assert self.gate.wait(30)
            with self.done:
                self.order.append(tag)
                self.done.notify_all()
        return work

    def wait(self, count: int) -> list[str]:
        with self.done:
            assert self.done.wait_for(lambda: len(self.order) >= count, 30), self.order
            return list(self.order)


def test_lanes_take_turns_for_the_one_thread() -> None:
    """One thread: lane a has queued three calls before lane b's one; b runs second, not last."""
    lanes = Lanes(1, per_lane=0)
    recorder = Recorder()
    try:
        lanes.submit("a", recorder.call("a1", blocking=True))
        for tag in ("a2", "a3"):
            lanes.submit("a", recorder.call(tag))
        lanes.submit("b", recorder.call("b1"))
        assert lanes.waiting("a") == 2 and lanes.waiting("b") == 1
        recorder.gate.set()
        assert recorder.wait(4) == ["a1", "a2", "b1", "a3"]
    finally:
        lanes.shutdown()


def test_a_lane_runs_no_more_than_its_limit_while_threads_are_free() -> None:
    lanes = Lanes(8, per_lane=2)
    recorder = Recorder()
    try:
        for n in range(5):
            lanes.submit("hog", recorder.call(f"hog{n}", blocking=True))
        assert lanes.running("hog") == 2 and lanes.waiting("hog") == 3
        lanes.submit("other", recorder.call("other"))
        assert recorder.wait(1) == ["other"]  # not behind the hog's backlog
        recorder.gate.set()
        assert sorted(recorder.wait(6)) == ["hog0", "hog1", "hog2", "hog3", "hog4", "other"]
    finally:
        lanes.shutdown()


def test_a_withdrawn_call_never_runs_and_one_that_started_cannot_be_withdrawn() -> None:
    lanes = Lanes(1, per_lane=1)
    recorder = Recorder()
    try:
        first = lanes.submit("a", recorder.call("first", blocking=True))
        second = lanes.submit("a", recorder.call("second"))
        assert not lanes.withdraw(first)  # running already
        assert lanes.withdraw(second) and not lanes.withdraw(second)
        lanes.submit("a", recorder.call("third"))
        recorder.gate.set()
        assert recorder.wait(2) == ["first", "third"]  # the lane is in order: second would have run before third
    finally:
        lanes.shutdown()
