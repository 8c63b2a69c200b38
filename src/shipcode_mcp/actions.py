"""What a session tells its runner to do, and the work it hands over: plain data, no I/O.

`Session` returns lists of actions (`Send` ... `Report`); a handler returns a result or a `Deferred`, which
the session binds to its request as a `Job` for the runner to run off the reading loop.
"""

from __future__ import annotations

from . import jsonrpc
from .context import Cancelled, ClientRequestError, InputRequired
from .jsonrpc import JsonRpcError

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator
    from typing import Any

    from .context import Context
    from .jsonrpc import Id, Message


class Send:
    """Write `message`; `related` is the id of the client request it belongs to, if any."""

    __slots__ = ("message", "related")

    def __init__(self, message: Message, related: Id | None = None) -> None:
        self.message = message
        self.related = related

    def __repr__(self) -> str:
        return f"Send({self.message!r}, related={self.related!r})"


class Start:
    """Run `job` off the reading loop (a worker thread, or a task for async work), then give its outcome to
    `Session.finish`."""

    __slots__ = ("job",)

    def __init__(self, job: Job) -> None:
        self.job = job


class Cancel:
    """The client cancelled `context`: run its cancel callbacks (kill a child, wake a wait)."""

    __slots__ = ("context",)

    def __init__(self, context: Context) -> None:
        self.context = context


class Answer:
    """The client answered our request `request_id` (`response` None: it never will)."""

    __slots__ = ("request_id", "response")

    def __init__(self, request_id: int, response: Message | None) -> None:
        self.request_id = request_id
        self.response = response


class FollowRoots:
    """Ask the client for its roots (roots/list, in the background), give them to the registry (`Registry.roots_changed`),
    then `Session.roots_listed`."""

    __slots__ = ()


class AdoptRoots:
    """A modern client gave its roots with a request: tell the registry (`Registry.roots_changed`) off the
    reading loop, then `Session.roots_adopted()`."""

    __slots__ = ("roots",)

    def __init__(self, roots: list[dict[str, Any]]) -> None:
        self.roots = roots


class Release:
    """Work waits for the roots: call `Session.release_held(hold)` after `seconds`, whether or not they came."""

    __slots__ = ("hold", "seconds")

    def __init__(self, seconds: float, hold: int) -> None:
        self.seconds = seconds
        self.hold = hold


class Report:
    """A failure of ours for the operator (stderr), never for the client."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


if TYPE_CHECKING:
    Action = Send | Start | Cancel | Answer | FollowRoots | AdoptRoots | Release | Report
    Outcome = dict[str, Any] | JsonRpcError | InputRequired | None


class Deferred:
    """Returned by a handler whose work must run off the reading loop (a tool that takes time).

    A handler knows no session; the session sets `settle` and `then` on the deferred work of a method
    that changes its state (session.py: subscribe, listen). `settle(ok)` runs inside `Session.finish`,
    with the session's other calls, once the work is over (`ok` True when it succeeded, False when it
    failed, None when it was cancelled); `then(result)` says what a successful outcome means instead of
    answering with it (a subscription that stays open).
    """

    __slots__ = ("awork", "settle", "then", "work")

    def __init__(self, work: Callable[[], dict[str, Any]], *,
                 awork: Callable[[], Awaitable[dict[str, Any]]] | None = None) -> None:
        """`awork`, when given, is the same work as a coroutine: an asyncio runner awaits it on its loop."""
        self.work = work
        self.awork = awork
        self.settle: Callable[[bool | None], None] | None = None
        self.then: Callable[[dict[str, Any]], list[Action]] | None = None


class Job:
    """Deferred work bound to its request. A runner calls `run()` on a worker (or awaits `arun()`), then
    `Session.finish`."""

    __slots__ = ("context", "deferred")

    def __init__(self, context: Context, deferred: Deferred) -> None:
        self.context = context
        self.deferred = deferred

    def run(self) -> Outcome:
        """The work's result, the error to answer with, the question for the client (a modern request),
        or None when the request was cancelled.

        Whatever the work raises (SystemExit included: a handler's sys.exit() is a bug) becomes an
        answer; a bug's traceback is kept on the context for the runner to report.
        """
        if self.context.cancelled:
            return None
        try:
            return self.deferred.work()
        except (Exception, SystemExit) as err:
            return self._failed(err)
        except BaseException as err:  # a question for the client, maybe inside a task group's exception group
            need = input_required_in(err)
            if need is None:
                raise
            return need

    async def arun(self) -> Outcome:
        """`run` for an asyncio runner: awaits the work's coroutine (`awork`); cancelling the task is
        cancelling the request."""
        import asyncio  # off the start-up budget; only an asyncio runner (HTTP) awaits a job

        assert self.deferred.awork is not None
        if self.context.cancelled:
            return None
        try:
            return await self.deferred.awork()
        except asyncio.CancelledError as err:
            if self.context.cancelled:
                return None
            return self._failed(err)  # not the client's cancellation: a bug to answer and report
        except (Exception, SystemExit) as err:
            return self._failed(err)
        except BaseException as err:
            need = input_required_in(err)
            if need is None:
                raise
            return need

    def _failed(self, err: BaseException) -> JsonRpcError | None:
        if isinstance(err, Cancelled):
            return None
        refused = refusal_of(err)
        if refused is not None:
            return refused
        self.context.failure = traceback_of(f"{self.context.method} failed")
        return JsonRpcError(jsonrpc.INTERNAL_ERROR)


def refusal_of(err: BaseException) -> JsonRpcError | None:
    """The error answer a handler's exception stands for, if it is not a bug: a JsonRpcError it raised,
    or (modern era) the client's missing capability, which the spec answers with -32021."""
    if isinstance(err, JsonRpcError):
        return err
    if isinstance(err, ClientRequestError) and err.error.code == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY:
        return err.error
    return None

def input_required_in(err: BaseException) -> InputRequired | None:
    """The question for the client `err` carries: itself, or one inside an exception group (a handler's
    task group wraps what its tasks raise), unless the group also holds something that must stop the
    server (KeyboardInterrupt, SystemExit, ...): that goes on."""
    leaves = list(_leaves(err))
    if any(not isinstance(leaf, (Exception, InputRequired)) for leaf in leaves):
        return None
    return next((leaf for leaf in leaves if isinstance(leaf, InputRequired)), None)


def _leaves(err: BaseException) -> Iterator[BaseException]:
    inner = getattr(err, "exceptions", None)
    if not isinstance(inner, tuple):
        yield err
        return
    for each in inner:
        if isinstance(each, BaseException):
            yield from _leaves(each)


def traceback_of(what: str) -> str:
    import traceback  # off the start-up budget: only a failure needs it

    return f"{what}\n{traceback.format_exc()}"
