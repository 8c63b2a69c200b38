"""The sessions of one Streamable HTTP endpoint: who owns each, which one ends to make room for a new one,
which ones were idle too long. No sockets, no event loop, and an injected clock, so the rules are tested
alone (tests/transports/http/test_sessions.py); the endpoint (endpoint.py) turns their verdicts into answers.

At `max_sessions`, the least recently used idle session (no request in flight, no GET stream, no task)
ends to make room. With tokens checked, a caller at its quota (`HttpLimits.sessions_per_caller`) makes room
among its own sessions only, and at the cap another caller's session ends only when that caller holds its
quota or more: no caller can push the others out by opening sessions.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from ... import log
from .limits import HttpLimits

EVICTED_MEMORY = 10000
"""Ids of sessions ended to make room, remembered (with their owner) for a clear 404."""


class Kept(Protocol):
    """What the table reads of a session (http.HttpSession)."""

    last_seen: float  # by the table's clock

    @property
    def id(self) -> str | None: ...

    @property
    def owner(self) -> str | None:
        """The caller (Principal.key) it belongs to, when tokens are checked."""

    @property
    def get_open(self) -> bool:
        """A GET stream is open."""

    @property
    def requests(self) -> Mapping[Any, Any]:
        """Its requests in flight."""

    @property
    def tasks(self) -> Collection[Any]:
        """Its async handlers running."""

    def end(self) -> None: ...


S = TypeVar("S", bound=Kept)


class Full:
    """No room for a session: every one that could end is busy (`why`, for the 503)."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


class SessionTable(Generic[S]):
    """The sessions kept, by id, within `limits`; `clock` gives seconds (time.monotonic, or a test's)."""

    def __init__(self, limits: HttpLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self.quota = limits.sessions_per_caller()
        self._sessions: dict[str, S] = {}
        self._evicted: collections.OrderedDict[str, str | None] = collections.OrderedDict()  # id -> owner

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def __getitem__(self, session_id: str) -> S:
        return self._sessions[session_id]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._sessions))

    def find(self, session_id: str, owner: str | None) -> S | None:
        """The session `session_id` of `owner`, seen now; None when there is none (another caller's session is
        none: its id reveals nothing)."""
        found = self._sessions.get(session_id)
        if found is None or found.owner != owner:
            return None
        found.last_seen = self.clock()
        return found

    def ended_for_room(self, session_id: str, owner: str | None) -> bool:
        """Whether `owner`'s session `session_id` was ended to make room (its 404 says so)."""
        return session_id not in self._sessions and session_id in self._evicted and self._evicted[session_id] == owner

    def room_for(self, owner: str | None) -> str | Full | None:
        """Whether a session of `owner` fits: None (room), the id of the session to end to make room once the
        new one is made (`admit`), or Full when that would cut work in progress."""
        quota = self.quota if owner is not None else 0
        sessions = self._sessions.values()
        mine = [s for s in sessions if s.owner == owner] if quota > 0 else []
        if quota > 0 and len(mine) >= quota:
            candidates = mine
            why = f"this caller's {len(mine)} sessions (at most {quota}) are all busy"
        elif self.limits.max_sessions > 0 and len(self._sessions) >= self.limits.max_sessions:
            held = collections.Counter(s.owner for s in sessions) if quota > 0 else None
            candidates = [s for s in sessions if held is None or s.owner == owner or s.owner is None or held[s.owner] >= quota]
            why = f"{len(self._sessions)} sessions, none of them idle and free to end"
        else:
            return None
        idle = [(s.last_seen, s.id) for s in candidates if s.id is not None and not (s.get_open or s.requests or s.tasks)]
        if not idle:
            return Full(why)
        return min(idle)[1]

    def admit(self, session: S) -> None:
        """Keep the new `session` (its initialize succeeded): first end the one `room_for` names, if any (its id
        is remembered for a clear 404). Only now, so a failed initialize ends nobody's session."""
        assert session.id is not None
        ending = self.room_for(session.owner)
        if isinstance(ending, str):
            self._evicted[ending] = self._sessions[ending].owner
            while len(self._evicted) > EVICTED_MEMORY:
                self._evicted.popitem(last=False)
            log.info(f"session {ending} ended to make room ({self.limits.max_sessions} sessions at most, "
                     f"{self.quota or 'no limit'} per caller)")
            self.end(ending)
        session.last_seen = self.clock()
        self._sessions[session.id] = session

    def end_idle(self) -> list[str]:
        """End the sessions unused (no request, no open stream) for `session_idle_timeout` seconds; their ids."""
        now, timeout = self.clock(), self.limits.session_idle_timeout
        ended = [session_id for session_id, s in self._sessions.items()
                 if not s.get_open and not s.requests and now - s.last_seen > timeout]
        for session_id in ended:
            log.info(f"session {session_id} idle for {timeout:g} s: ended")
            self.end(session_id)
        return ended

    def end(self, session_id: str) -> None:
        found = self._sessions.pop(session_id, None)
        if found is not None:
            found.end()

    def end_all(self) -> None:
        for session_id in list(self._sessions):
            self.end(session_id)
