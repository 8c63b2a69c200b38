"""A sans-IO driver of the session for tests: what a runner does, in the calling thread, no I/O.

Deferred work waits in `jobs` until the test runs it, so a test decides every interleaving itself.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import support
from shipcode_mcp import jsonrpc, log
from shipcode_mcp.actions import AdoptRoots, Answer, Cancel, FollowRoots, Job, Release, Report, Send, Start
from shipcode_mcp.context import Channel, Context
from shipcode_mcp.server import Server
from shipcode_mcp.session import Session

if TYPE_CHECKING:
    from shipcode_mcp.actions import Action

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
INITIALIZED = json.loads(support.INITIALIZED)


req = jsonrpc.request  # a request message, as the package builds its own (tests also pass params of the wrong shape)


class Driver(Channel):
    """Performs a session's actions the plain way: `Send` is collected, `Start` waits in `jobs`, the rest
    is kept in `actions` (and, as a runner does, Cancel cancels its context and Report goes to stderr)."""

    def __init__(self, server: Server, *, stateless: bool = False) -> None:
        self.session = Session(server, self, stateless=stateless)
        self.sent: list[dict[str, Any]] = []  # everything sent, in order
        self.jobs: list[Job] = []
        self.actions: list[Action] = []  # the actions other than Send and Start

    # Channel: what handlers send on the way (progress, log messages).
    def send(self, message: dict[str, Any], related: Any) -> None:
        self.sent.append(message)

    def ask(self, method: str, params: dict[str, Any] | None, timeout: float, parent: Context | None) -> Any:
        raise AssertionError("asking the client needs a runner: see tests/test_runner.py")

    def perform(self, actions: list[Action]) -> list[dict[str, Any]]:
        """Do `actions`; returns the messages they sent."""
        out: list[dict[str, Any]] = []
        for action in actions:
            if isinstance(action, Send):
                out.append(action.message)
            elif isinstance(action, Start):
                self.jobs.append(action.job)
            elif isinstance(action, AdoptRoots):  # what the runner does in the background, done at once
                self.session.registry.roots_changed(self.session, action.roots)
                out += self.perform(self.session.roots_adopted())
            else:
                if isinstance(action, Cancel):
                    action.context.cancel()
                elif isinstance(action, Report):
                    log.error(action.text)
                self.actions.append(action)
        self.sent += out
        return out

    def receive(self, message: Any) -> list[dict[str, Any]]:
        """The messages sent at once in answer to `message`."""
        return self.perform(self.session.receive(message))

    def run(self, job: Job | None = None) -> list[dict[str, Any]]:
        """Run one waiting job (the oldest by default) to its end; the messages it sent."""
        job = job or self.jobs[0]
        self.jobs.remove(job)
        before = len(self.sent)
        outcome = job.run()
        actions = self.session.finish(job, outcome)

        def send() -> None:
            self.perform(actions)

        job.context.finish(send)
        return self.sent[before:]

    def run_all(self) -> list[dict[str, Any]]:
        before = len(self.sent)
        while self.jobs:
            self.run()
        return self.sent[before:]

    def request(self, msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and run whatever work it started: its one response."""
        before = len(self.sent)
        self.receive(req(msg_id, method, params))
        self.run_all()
        replies = [m for m in self.sent[before:] if m.get("id") == msg_id and "method" not in m]
        assert len(replies) == 1, self.sent[before:]
        return replies[0]

    def handshake(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": capabilities or {},
                                               "clientInfo": {"name": "t", "version": "1"}})
        self.receive(INITIALIZED)
        return reply

    def of_kind(self, kind: type) -> list[Any]:
        return [action for action in self.actions if isinstance(action, kind)]


__all__ = ["INIT", "INITIALIZED", "Answer", "Driver", "FollowRoots", "Release", "Report", "req"]
