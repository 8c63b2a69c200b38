"""The tasks of the `io.modelcontextprotocol/tasks` extension (SEP-2663), for 2026-07-28 requests: a tool call
that the server turns into a task is answered at once with its id, and the client polls `tasks/get`, answers
its questions with `tasks/update` and stops it with `tasks/cancel`.

A task is plain data held here, whichever request or transport made it, so that any later request of the same
caller finds it (a modern request stands alone). Its id is unguessable and bound to the caller that made it
(a token's subject): another caller is told it does not exist. A task that needs the client parks as
`input_required` with its questions; once every one is answered its handler runs again from the start with
the answers, as a multi round-trip request's does. Tasks are bounded in number, in all and per caller;
none goes before its time (a finished one stays `ttlMs` after its last change): at a bound, a call runs in
its request instead. A finished task keeps its result only, not the request that made it.

Standard library only; loaded when the first task is made or asked about.
"""

from __future__ import annotations

import secrets
import threading
import time
from datetime import datetime, timezone

from . import jsonrpc
from .context import InputRequired
from .jsonrpc import JsonRpcError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .context import Context

TTL_MS = 3_600_000
"""How long a task stays after its last change (a finished one's result, a question left unanswered)."""

POLL_INTERVAL_MS = 500
"""How often a client is asked to poll."""

MAX_TASKS = 1024
"""Tasks held at once (running, waiting on their client, or finished and within their time to live); at the
bound a call runs in its request."""

MAX_TASKS_PER_CALLER = 64
"""Tasks one caller holds at once: no caller takes every place (a token's subject; over stdio, the one client)."""

TERMINAL = frozenset(("completed", "failed", "cancelled"))


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Task:
    """One task: where it stands, and what its handler needs to run again after the client answered."""

    __slots__ = ("answers", "capabilities", "carried", "context", "created", "error", "id", "params", "pending",
                 "principal", "result", "status", "updated")

    def __init__(self, task_id: str, principal: str | None, context: Context, now: float) -> None:
        self.id = task_id
        self.principal = principal
        self.context: Context | None = context  # the run under way, if one is (None while it waits on the client)
        self.params = {key: value for key, value in context.params.items() if key not in ("requestState", "inputResponses")}
        self.capabilities = context.client_capabilities  # the client's, as the call declared them
        self.status = "working"
        self.created = self.updated = now
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.pending: dict[str, dict[str, Any]] = {}  # the questions not answered yet (key -> request)
        self.carried: dict[str, Any] = {}  # what the handler was told so far (context.Rounds)
        self.answers: dict[str, Any] = {}  # the answers given since it asked

    def shape(self) -> dict[str, Any]:
        """The fields every task answer carries (a CreateTaskResult's, a tasks/get's)."""
        return {"taskId": self.id, "status": self.status, "createdAt": _stamp(self.created),
                "lastUpdatedAt": _stamp(self.updated), "ttlMs": TTL_MS, "pollIntervalMs": POLL_INTERVAL_MS}


class Tasks:
    """Every task of a server, thread-safe; `clock` is injected, as the core's one clock."""

    def __init__(self, clock: Callable[[], float] = time.time, *, limit: int = MAX_TASKS,
                 per_caller: int = MAX_TASKS_PER_CALLER) -> None:
        self.clock = clock
        self.limit = limit
        self.per_caller = per_caller
        self._lock = threading.Lock()
        self._tasks: dict[str, Task] = {}
        self._held: dict[str | None, int] = {}  # caller -> tasks held

    # -- made by a tool call -------------------------------------------------------------------
    def open(self, context: Context, principal: str | None) -> tuple[Task, dict[str, Any]] | None:
        """A task for the call `context` serves, and the CreateTaskResult that answers the call; None at a bound
        (MAX_TASKS, MAX_TASKS_PER_CALLER): the call then runs in its request."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            if len(self._tasks) >= self.limit or self._held.get(principal, 0) >= self.per_caller:
                return None
            task = Task(secrets.token_urlsafe(18), principal, context, now)
            self._tasks[task.id] = task
            self._held[principal] = self._held.get(principal, 0) + 1
            return task, {"resultType": "task", **task.shape()}

    def settle(self, task: Task, outcome: dict[str, Any] | JsonRpcError | InputRequired | None) -> None:
        """The run of `task` ended: with a tool result, a protocol error, questions for the client, or
        cancelled (None). A task cancelled meanwhile stays cancelled."""
        with self._lock:
            task.context = None
            if task.status in TERMINAL:
                return
            task.updated = self.clock()
            if isinstance(outcome, InputRequired):
                task.status = "input_required"
                task.carried = outcome.carried
                task.pending = dict(outcome.requests)
                task.answers = {}
                return
            if isinstance(outcome, JsonRpcError):
                task.status, task.error = "failed", jsonrpc.error(None, outcome)["error"]
            elif outcome is None:
                task.status = "cancelled"
            else:  # the call's own result, as a 2026-07-28 tools/call answers it (the task's id is the envelope's)
                meta = outcome.get("_meta")
                if isinstance(meta, dict) and "io.modelcontextprotocol/related-task" in meta:
                    outcome = {**outcome, "_meta": {k: v for k, v in meta.items() if k != "io.modelcontextprotocol/related-task"}}
                task.status, task.result = "completed", {"resultType": "complete", **outcome}
            _ended(task)

    # -- the extension's methods ---------------------------------------------------------------
    def find(self, params: dict[str, Any], principal: str | None) -> Task:
        """The task `params.taskId` names, if this caller made it; -32602 otherwise (another caller's task
        is as unknown as one that never was)."""
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: taskId must be a string")
        with self._lock:
            self._expire(self.clock())
            task = self._tasks.get(task_id)
        if task is None or task.principal != principal:
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: no such task (unknown, or expired)")
        return task

    def detailed(self, task: Task) -> dict[str, Any]:
        """tasks/get: the task, with its result, its error or its open questions inlined."""
        with self._lock:
            out = task.shape()
            if task.status == "completed" and task.result is not None:
                out["result"] = task.result
            elif task.status == "failed" and task.error is not None:
                out["error"] = task.error
            elif task.status == "input_required":
                out["inputRequests"] = dict(task.pending)
            return out

    def answer(self, task: Task, responses: dict[str, Any]) -> bool:
        """tasks/update: take the answers to open questions (others are ignored); True when the last one came
        and the handler must run again."""
        with self._lock:
            if task.status != "input_required":
                return False
            for key, answer in responses.items():
                if key in task.pending:
                    del task.pending[key]
                    task.answers[key] = answer
                    task.updated = self.clock()
            if task.pending:
                return False
            task.status = "working"
            return True

    def resume(self, task: Task, context: Context) -> bool:
        """The run that continues `task` after its answers; False if the task ended meanwhile (cancelled)."""
        with self._lock:
            if task.status != "working" or task.context is not None:
                return False
            task.context = context
            return True

    def cancel(self, task: Task) -> Context | None:
        """tasks/cancel: the task ends cancelled at once (if it had not ended); the run to stop, if one is under way."""
        with self._lock:
            if task.status in TERMINAL:
                return None
            task.status, task.updated = "cancelled", self.clock()
            running, task.context = task.context, None
            _ended(task)
            return running

    def _expire(self, now: float) -> None:
        """Drop what has not changed for its time to live, unless a run of it is under way."""
        cutoff = now - TTL_MS / 1000
        for task in [task for task in self._tasks.values() if task.context is None and task.updated <= cutoff]:
            del self._tasks[task.id]
            self._held[task.principal] -= 1
            if not self._held[task.principal]:
                del self._held[task.principal]


def _ended(task: Task) -> None:
    """A task that ended keeps what tasks/get tells, not the request and answers that made it (they may be large)."""
    task.params, task.capabilities, task.carried, task.answers, task.pending = {}, {}, {}, {}, {}
