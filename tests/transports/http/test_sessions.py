"""The session table of an HTTP endpoint, alone: no sockets, no event loop, the clock a test's. Which session
ends to make room, who may push whom out, which ones idled out (the same rules tests/transports/http/test_endpoint.py
and test_front.py check over real HTTP)."""

from __future__ import annotations

from typing import Any

import pytest

from shipcode_mcp.transports.http import sessions as http_sessions
from shipcode_mcp.transports.http.limits import HttpLimits
from shipcode_mcp.transports.http.sessions import Full, SessionTable


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Fake:
    """A session as the table reads it."""

    def __init__(self, session_id: str, owner: str | None = None) -> None:
        self.id: str | None = session_id
        self.owner = owner
        self.last_seen = 0.0
        self.get_open = False
        self.requests: dict[Any, Any] = {}
        self.tasks: set[Any] = set()
        self.ended = False

    def end(self) -> None:
        self.ended = True


def table(clock: Clock, **limits: Any) -> SessionTable[Fake]:
    return SessionTable(HttpLimits(**limits), clock)


def admitted(sessions: SessionTable[Fake], clock: Clock, *fakes: Fake) -> list[Fake]:
    for fake in fakes:
        clock.now += 1
        assert not isinstance(sessions.room_for(fake.owner), Full)
        sessions.admit(fake)
    return list(fakes)


def test_at_the_cap_the_least_recently_seen_idle_session_makes_room() -> None:
    clock = Clock()
    sessions = table(clock, max_sessions=3)
    a, b, c = admitted(sessions, clock, Fake("a"), Fake("b"), Fake("c"))
    clock.now += 1
    assert sessions.find("a", None) is a  # seen now: b is the least recently seen
    assert sessions.room_for(None) == "b"
    b.requests["1"] = object()  # busy: never ended for room
    assert sessions.room_for(None) == "c"
    admitted(sessions, clock, Fake("d"))
    assert c.ended and not a.ended and not b.ended
    assert set(sessions) == {"a", "b", "d"}
    assert sessions.ended_for_room("c", None) and not sessions.ended_for_room("c", "someone else")
    assert not sessions.ended_for_room("a", None)  # still there


def test_when_every_session_is_busy_there_is_no_room_and_it_says_why() -> None:
    clock = Clock()
    sessions = table(clock, max_sessions=2)
    a, b = admitted(sessions, clock, Fake("a"), Fake("b"))
    a.get_open, b.tasks = True, {object()}
    room = sessions.room_for(None)
    assert isinstance(room, Full) and room.why == "2 sessions, none of them idle and free to end"
    assert not a.ended and not b.ended


def test_a_caller_at_its_quota_makes_room_among_its_own_only_and_cannot_push_others_out() -> None:
    clock = Clock()
    sessions = table(clock, max_sessions=40, max_sessions_per_caller=2)
    other = admitted(sessions, clock, Fake("o1", "other"))[0]
    mine = admitted(sessions, clock, Fake("m1", "me"), Fake("m2", "me"))
    assert sessions.room_for("me") == "m1"  # its own oldest, not the other caller's older one
    for fake in mine:
        fake.requests["1"] = object()
    room = sessions.room_for("me")
    assert isinstance(room, Full) and room.why == "this caller's 2 sessions (at most 2) are all busy"
    assert not other.ended and sessions.room_for("other") is None  # the other caller is below its quota


def test_at_the_cap_another_callers_session_ends_only_if_that_caller_holds_its_quota() -> None:
    clock = Clock()
    sessions = table(clock, max_sessions=3, max_sessions_per_caller=2)
    admitted(sessions, clock, Fake("a1", "a"), Fake("b1", "b"), Fake("b2", "b"))
    assert sessions.room_for("c") == "b1"  # b holds its quota: its oldest goes, never a's (older) one
    sessions["b1"].requests["1"] = object()
    sessions["b2"].requests["1"] = object()
    assert isinstance(sessions.room_for("c"), Full)


def test_sessions_idle_past_the_timeout_end_and_busy_ones_stay() -> None:
    clock = Clock()
    sessions = table(clock, session_idle_timeout=60.0)
    idle, streaming, working, recent = admitted(sessions, clock, Fake("idle"), Fake("streaming"), Fake("working"),
                                                Fake("recent"))
    streaming.get_open = True
    working.requests["1"] = object()
    clock.now += 58
    assert sessions.find("recent", None) is recent
    clock.now += 5
    assert sessions.end_idle() == ["idle"]
    assert idle.ended and not (streaming.ended or working.ended or recent.ended)
    clock.now += 61
    assert sessions.end_idle() == ["recent"]


def test_another_callers_session_is_not_found_and_not_touched() -> None:
    clock = Clock()
    sessions = table(clock)
    mine = admitted(sessions, clock, Fake("s", "me"))[0]
    seen = mine.last_seen
    clock.now += 10
    assert sessions.find("s", "someone else") is None and mine.last_seen == seen
    assert sessions.find("s", "me") is mine and mine.last_seen == clock.now
    assert sessions.find("nothing", "me") is None


def test_the_ids_ended_for_room_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_sessions, "EVICTED_MEMORY", 3)
    clock = Clock()
    sessions = table(clock, max_sessions=1)
    admitted(sessions, clock, *(Fake(f"s{number}") for number in range(6)))
    assert [sessions.ended_for_room(f"s{number}", None) for number in range(6)] == [False, False, True, True, True, False]
    assert set(sessions) == {"s5"}
