"""What a handler sees of the request it serves: cancellation, progress, logging, asking the client.

This is the runner's side of the core: handlers call it from worker threads or coroutines while the
reading loop cancels, so it is thread-safe; the session only creates it.
"""

from __future__ import annotations

import json
import sys
import threading

from . import jsonrpc, log
from .validation import schema_validator

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future
    from typing import Any

    Question = tuple[str | None, str, dict[str, Any] | None]  # (key or None, method, params): one question to the client

PROTOCOL_VERSION = "2025-06-18"
"""The MCP version this server speaks."""

ASK_BACKSTOP = 5.0
"""How long past its timeout a blocking ask waits, should the runner's timer not fire (a closed event loop)."""

CLIENT_CAPABILITY_FOR = {
    "roots/list": "roots",
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
}
"""Which client capability each server->client request needs."""

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""RFC 5424 severities, least to most severe, as MCP names them."""


class Cancelled(Exception):
    """Raised inside a handler whose request the client cancelled; no response is sent."""


class InputRequired(BaseException):
    """Raised by an ask on the modern path that the client has not answered yet: the request ends with
    `input_required` and resumes when the client retries with the answers. A BaseException, so that no
    handler's `except Exception` mistakes it for a failure."""

    def __init__(self, requests: dict[str, dict[str, Any]], carried: dict[str, Any]) -> None:
        super().__init__(", ".join(requests))
        self.requests = requests  # key -> {"method", "params"?}: what the client is asked, in one round
        self.carried = carried  # what the client carries to the next round (see Rounds): signed into requestState


class Rounds:
    """A modern request's questions to the client, asked in rounds (MCP's multi round-trip requests).

    The handler runs again from the start on every round; its n-th question gets the key `KIND-n`, unless
    it names its own. What the client carries between rounds (signed, in `requestState`) is, for each key,
    a digest of the question asked (`q`) and, once given, its answer (`a`): an answer holds only for the
    very question it answered, so if a handler asks something else in a later round (the workspace
    changed), it asks again. Questions asked together (`ask_all`) are asked in one round.
    """

    __slots__ = ("_asked", "_keys", "carried", "responses")

    def __init__(self, carried: dict[str, Any], responses: dict[str, Any]) -> None:
        self.carried = carried
        self.responses = responses  # this round's inputResponses
        self._asked = 0
        self._keys: set[str] = set()  # the keys this run asked: one key, one question

    def ask(self, method: str, params: dict[str, Any] | None, client_capabilities: dict[str, Any],
            key: str | None = None) -> dict[str, Any]:
        return self.ask_all([(key, method, params)], client_capabilities)[0]

    def ask_all(self, questions: list[Question], client_capabilities: dict[str, Any]) -> list[dict[str, Any]]:
        """The answers to `questions`, in order, once the client gave them all; until then each round asks
        every one not answered yet, together (-32021 if the client lacks a capability one of them needs)."""
        answers: list[dict[str, Any]] = []
        unanswered: dict[str, tuple[dict[str, Any], str]] = {}
        for key, method, params in questions:
            self._asked += 1
            if key is None:
                key = f"{method.partition('/')[0]}-{self._asked}"
            elif not isinstance(key, str) or not key:
                raise ValueError(f"an input key is a non-empty string, not {key!r}")
            if key in self._keys:
                raise ValueError(f"the input key {key!r} names two questions of one request")
            self._keys.add(key)
            request: dict[str, Any] = {"method": method}
            if params is not None:
                request["params"] = params
            question = _digest(request)
            record = self.carried.get(key)
            if not isinstance(record, dict) or record.get("q") == question:
                answer = record.get("a") if isinstance(record, dict) else None
                if not isinstance(answer, dict):
                    answer = self.responses.get(key)  # the answer to the last round's question
                if isinstance(answer, dict):
                    self.carried[key] = {"q": question, "a": answer}
                    answers.append(dict(answer))
                    continue
            unanswered[key] = request, question
        if not unanswered:
            return answers
        for request, _ in unanswered.values():
            needed = CLIENT_CAPABILITY_FOR.get(request["method"])
            if needed is not None and needed not in client_capabilities:
                raise ClientRequestError(jsonrpc.JsonRpcError(
                    jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY, f"The client does not support {request['method']}",
                    {"requiredCapabilities": {needed: {}}}))
        for key, (_, question) in unanswered.items():
            self.carried[key] = {"q": question}
        raise InputRequired({key: request for key, (request, _) in unanswered.items()}, self.carried)


def _digest(request: dict[str, Any]) -> str:
    import hashlib  # off the start-up budget: only modern questions pay for it

    text = json.dumps(request, separators=(",", ":"), ensure_ascii=True, sort_keys=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


class ClientRequestError(Exception):
    """The client answered our request with an error, never answered it, or could not be asked."""

    def __init__(self, error: jsonrpc.JsonRpcError) -> None:
        super().__init__(error.message)
        self.error = error


def _client_error(message: str) -> ClientRequestError:
    return ClientRequestError(jsonrpc.JsonRpcError(jsonrpc.INVALID_PARAMS, message))


class _Flag:
    """`threading.Event` at a fraction of the cost: the Event (a Condition and its lock) is made only
    when somebody waits, which a request answered on the reading loop never does. Allocating two
    Events per request took a third of the reading loop's time in a pipelined ping benchmark."""

    __slots__ = ("_event", "_set")
    _creating = threading.Lock()

    def __init__(self) -> None:
        self._set = False
        self._event: threading.Event | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        event = self._event
        if event is not None:
            event.set()

    def wait(self, timeout: float | None = None) -> bool:
        if self._set:
            return True
        with _Flag._creating:
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        if self._set:  # set() ran before the event existed, so it could not set it
            event.set()
        return event.wait(timeout)


class Channel:
    """What a runner gives each request's context: the way out, and the way to ask the client.

    The interface of a runner as a handler's context sees it; `runner.Runner` implements it.
    """

    def send(self, message: jsonrpc.Message, related: jsonrpc.Id | None) -> None:
        raise NotImplementedError

    def ask(self, method: str, params: dict[str, Any] | None, timeout: float,
            parent: Context | None) -> Future[dict[str, Any]]:
        """Send our request to the client; the future resolves to its result (or raises ClientRequestError)."""
        raise NotImplementedError

    def event_loop(self) -> Any:
        """The event loop that reads the client's answers, if the runner has one: blocking on it would
        stop the answer coming."""
        return None


class Context:
    """One request in flight, with what it needs travelling with it: the client's capabilities, the log
    threshold, its own progress and cancellation.

    The lock orders the response against progress: once `finish` has run, nothing more about this
    request goes out, so progress can never follow the response (a MUST of the spec).
    """

    def __init__(self, channel: Channel | None, request_id: jsonrpc.Id, method: str, params: dict[str, Any], *,
                 client_capabilities: dict[str, Any] | None = None, log_threshold: str | None = None,
                 protocol_version: str = PROTOCOL_VERSION) -> None:
        self.channel = channel
        self.request_id = request_id
        self.method = method
        self.params = params
        self.client_capabilities = client_capabilities or {}
        self.log_threshold = log_threshold  # None: logging is not offered
        self.protocol_version = protocol_version  # the version the request is served in
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        self.progress_token: str | int | None = token if token is not None and jsonrpc.is_valid_id(token) else None
        self._cancelled = _Flag()
        # Set when the handler finishes or starts waiting on the client, so a transport that waits
        # for quick handlers (to keep responses in request order) stops waiting.
        self.settled = _Flag()
        self._lock = threading.RLock()  # reentrant: what a write does may come back to cancel this request
        self._done = False
        self._last_progress: float | None = None
        self._cancel_callbacks: list[Callable[[], None]] = []
        self.on_loop = False  # the handler runs on the reading loop (inline): it must not wait on the client
        self.failure: str | None = None  # the traceback of a bug in the handler, for the operator
        self.rounds: Rounds | None = None  # a modern request: its asks are answered in rounds, not by waiting
        self.may_call: Callable[[Any], bool] | None = None  # the tools the caller may call (the session's, set per request)
        # A modern tools/call of a client that declared the tasks extension, to a tool that offers tasks: makes
        # its task and the CreateTaskResult that answers the call (set by the session, kept by the tool call).
        self.task_offer: Callable[[], tuple[Any, jsonrpc.Message] | None] | None = None
        self.task: Any = None  # the task (tasks.Task) this run serves, once it became one: no response of its own
        self.principal: str | None = None  # who the transport says is calling (modern requests): owns its tasks

    # -- cancellation -------------------------------------------------------------------------
    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check_cancelled(self) -> None:
        """Call between steps of long work; raises Cancelled once the client gave up on it."""
        if self._cancelled.is_set():
            raise Cancelled()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Run `callback` when the request is cancelled (at once if it already is): kill a child process, say."""
        with self._lock:
            if not self._cancelled.is_set():
                self._cancel_callbacks.append(callback)
                return
        callback()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        return self._cancelled.wait(timeout)

    def cancel(self) -> None:
        with self._lock:
            if self._done or self._cancelled.is_set():
                return
            self._cancelled.set()
            callbacks, self._cancel_callbacks = self._cancel_callbacks, []
        stop: BaseException | None = None
        for callback in callbacks:  # every one runs (one may kill a child), whatever another raised
            try:
                callback()
            except Exception:  # a failing cleanup must not take the reading loop down
                import traceback  # off the start-up budget: only a failing callback needs it

                log.error(f"cancel callback failed\n{traceback.format_exc()}")
            except BaseException as err:  # the server is stopping: still clean up, then stop
                stop = stop or err
        if stop is not None:
            raise stop

    # -- tasks (the io.modelcontextprotocol/tasks extension) -------------------------------------
    def run_as_task(self) -> bool:
        """From here on this tool call is a task: the client is answered at once with the task's id and
        polls for the result, which is what this handler returns (its questions to the client park the task
        until the client answers them with tasks/update). False when the call cannot be one (a 2025-06-18
        request, a client that did not declare the extension, a tool that offers no tasks, too many tasks
        held): it then goes on in its request, as any call. True again if it already is one."""
        with self._lock:
            if self.task is not None:  # (a run resumed after tasks/update, or a second call)
                self.settled.set()
                return True
            if self.task_offer is None or self._done or self._cancelled.is_set():
                return False
            made = self.task_offer()
            if made is None:
                return False
            self.task, response = made
            self._send(response)
        self.settled.set()  # a transport that waits for quick handlers has its answer
        return True

    # -- progress -----------------------------------------------------------------------------
    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send notifications/progress if the client asked for it; returns whether it was sent.

        Values that do not increase are dropped, since the spec requires progress to go up.
        """
        if self.progress_token is None:
            return False
        with self._lock:
            if self._done or self._cancelled.is_set() or self.task is not None:
                return False
            if self._last_progress is not None and progress <= self._last_progress:
                return False
            self._last_progress = progress
            params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            self._send(jsonrpc.notification("notifications/progress", params))
        return True

    def _send(self, message: jsonrpc.Message) -> None:
        if self.channel is not None:
            self.channel.send(message, self.request_id)

    # -- logging and requests to the client ------------------------------------------------------
    def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send notifications/message to the client, if logging is on and `level` passes its threshold."""
        threshold = self.log_threshold
        if threshold is None or level not in LOG_LEVELS or LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return False
        params: dict[str, Any] = {"level": level}
        if logger is not None:
            params["logger"] = logger
        params["data"] = data
        with self._lock:
            if self._done or self.task is not None:
                return False
            self._send(jsonrpc.notification("notifications/message", params))
        return True

    def debug(self, data: Any, logger: str | None = None) -> bool:
        return self.log("debug", data, logger)

    def info(self, data: Any, logger: str | None = None) -> bool:
        return self.log("info", data, logger)

    def warning(self, data: Any, logger: str | None = None) -> bool:
        return self.log("warning", data, logger)

    def error(self, data: Any, logger: str | None = None) -> bool:
        return self.log("error", data, logger)

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0, *,
                key: str | None = None) -> dict[str, Any]:
        """Ask the client (sampling/createMessage, elicitation/create, roots/list) and wait for its result.

        Raises `ClientRequestError` when the client lacks the capability, refuses or does not answer
        in time (it is then sent notifications/cancelled), and `Cancelled` if this request is.
        An async handler awaits `arequest` instead, which does not block its event loop.
        On a modern (2026-07-28) request nothing waits: the request answers `input_required` and the
        handler runs again, from the start, when the client retries with the answer (see `Rounds`);
        `key` names the question in `inputRequests` (default `KIND-n` for the n-th question).
        """
        if self.protocol_version != PROTOCOL_VERSION:
            return self._ask_in_rounds([(key, method, params)])[0]
        import concurrent.futures  # off the start-up budget; loaded already by the runner's ask

        future = self._ask(method, params, timeout, blocking=True)
        try:
            return future.result(timeout + ASK_BACKSTOP)  # the runner's timer ends it first; this, if the timer never runs
        except concurrent.futures.TimeoutError:
            raise ClientRequestError(jsonrpc.JsonRpcError(
                jsonrpc.REQUEST_TIMEOUT, f"The client did not answer {method} within {timeout:g} s")) from None

    async def arequest(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0, *,
                       key: str | None = None) -> dict[str, Any]:
        """`request` for an async handler: awaits the answer."""
        if self.protocol_version != PROTOCOL_VERSION:
            return self._ask_in_rounds([(key, method, params)])[0]
        import asyncio  # off the start-up budget; loaded already: an async handler runs on an event loop

        return await asyncio.wrap_future(self._ask(method, params, timeout))

    def request_all(self, questions: dict[str, tuple[str, dict[str, Any] | None]],
                    timeout: float = 60.0) -> dict[str, dict[str, Any]]:
        """Several questions at once, by key: `{"name": ("elicitation/create", params), ...}` gives
        `{"name": result, ...}` (results as `request` returns them). On a modern request they are one
        round: the client is asked every one it has not answered yet, together. On a legacy one they are
        asked one after another, each as `request` asks it."""
        if self.protocol_version != PROTOCOL_VERSION:
            return self._in_one_round(questions)
        return {key: self.request(method, params, timeout) for key, (method, params) in questions.items()}

    async def arequest_all(self, questions: dict[str, tuple[str, dict[str, Any] | None]],
                           timeout: float = 60.0) -> dict[str, dict[str, Any]]:
        """`request_all` for an async handler."""
        if self.protocol_version != PROTOCOL_VERSION:
            return self._in_one_round(questions)
        return {key: await self.arequest(method, params, timeout) for key, (method, params) in questions.items()}

    def _in_one_round(self, questions: dict[str, tuple[str, dict[str, Any] | None]]) -> dict[str, dict[str, Any]]:
        asked: list[Question] = [(key, method, params) for key, (method, params) in questions.items()]
        return dict(zip(questions, self._ask_in_rounds(asked), strict=True))

    def _ask_in_rounds(self, questions: list[Question]) -> list[dict[str, Any]]:
        """A modern request asks in rounds; only the requests the spec lets answer input_required may."""
        if self.rounds is None:
            raise ClientRequestError(jsonrpc.JsonRpcError(jsonrpc.INVALID_REQUEST, (
                f"Cannot send {', '.join(method for _, method, _ in questions)}: in MCP {self.protocol_version} "
                "only tools/call, resources/read and prompts/get may ask the client")))
        return self.rounds.ask_all(questions, self.client_capabilities)

    def _ask(self, method: str, params: dict[str, Any] | None, timeout: float, *,
             blocking: bool = False) -> Future[dict[str, Any]]:
        if self.on_loop:
            raise ClientRequestError(jsonrpc.JsonRpcError(
                jsonrpc.INTERNAL_ERROR, f"Cannot send {method} from an inline handler: it would block the reading loop"))
        if self.channel is None:
            raise ClientRequestError(jsonrpc.JsonRpcError(jsonrpc.INTERNAL_ERROR, f"Cannot send {method}: no client to ask"))
        if blocking and (loop := _running_loop()) is not None and loop is self.channel.event_loop():
            raise ClientRequestError(jsonrpc.JsonRpcError(jsonrpc.INTERNAL_ERROR, (
                f"Cannot wait for {method} on the event loop that reads the answer: "
                "an async handler awaits ctx.arequest, ctx.asample, ctx.aelicit or ctx.alist_roots")))
        self.settled.set()
        return self.channel.ask(method, params, timeout, self)

    def sample(self, messages: str | list[dict[str, Any]], *, max_tokens: int, system_prompt: str | None = None,
               temperature: float | None = None, stop_sequences: list[str] | None = None,
               model_preferences: dict[str, Any] | None = None, include_context: str | None = None,
               metadata: dict[str, Any] | None = None, timeout: float = 60.0, key: str | None = None) -> dict[str, Any]:
        """sampling/createMessage: let the client's model answer; a string is one user text message.

        Returns the CreateMessageResult: `{"role", "content", "model", "stopReason"?}`. `key`, here and in
        `elicit` and `list_roots`: the question's key in a modern request's `inputRequests` (see `request`).
        """
        params = _sampling_params(messages, max_tokens, system_prompt, temperature, stop_sequences, model_preferences,
                                  include_context, metadata)
        return self.request("sampling/createMessage", params, timeout, key=key)

    async def asample(self, messages: str | list[dict[str, Any]], *, max_tokens: int, system_prompt: str | None = None,
                      temperature: float | None = None, stop_sequences: list[str] | None = None,
                      model_preferences: dict[str, Any] | None = None, include_context: str | None = None,
                      metadata: dict[str, Any] | None = None, timeout: float = 60.0,
                      key: str | None = None) -> dict[str, Any]:
        """`sample` for an async handler."""
        params = _sampling_params(messages, max_tokens, system_prompt, temperature, stop_sequences, model_preferences,
                                  include_context, metadata)
        return await self.arequest("sampling/createMessage", params, timeout, key=key)

    def elicit(self, message: str, schema: dict[str, Any], timeout: float = 600.0, *,
               key: str | None = None) -> dict[str, Any]:
        """elicitation/create: ask the user for input shaped by `schema` (flat primitive properties).

        Returns `{"action": "accept"|"decline"|"cancel", "content"?: {...}}`; accepted content is
        checked against `schema`, so a handler can trust it. The long default timeout leaves a human
        time to answer.
        """
        return _checked_elicitation(self.request("elicitation/create", {"message": message, "requestedSchema": schema},
                                                 timeout, key=key), schema)

    async def aelicit(self, message: str, schema: dict[str, Any], timeout: float = 600.0, *,
                      key: str | None = None) -> dict[str, Any]:
        """`elicit` for an async handler."""
        return _checked_elicitation(await self.arequest(
            "elicitation/create", {"message": message, "requestedSchema": schema}, timeout, key=key), schema)

    def list_roots(self, timeout: float = 60.0, *, key: str | None = None) -> list[dict[str, Any]]:
        """roots/list: the client's roots, `[{"uri": "file:///...", "name"?: ...}]`."""
        return _roots_of(self.request("roots/list", None, timeout, key=key))

    async def alist_roots(self, timeout: float = 60.0, *, key: str | None = None) -> list[dict[str, Any]]:
        """`list_roots` for an async handler."""
        return _roots_of(await self.arequest("roots/list", None, timeout, key=key))

    # -- completion ----------------------------------------------------------------------------
    def finish(self, send: Callable[[], None] | None = None) -> None:
        """The request is over: call `send` (which sends its response) unless it was cancelled, and
        drop anything reported about it later."""
        with self._lock:
            if self._done:
                return
            self._done = True
            self._cancel_callbacks.clear()
            if send is not None and not self._cancelled.is_set():
                send()
        self.settled.set()


def _running_loop() -> Any:
    asyncio = sys.modules.get("asyncio")  # not imported: certainly no loop runs
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def answer_of(method: str, response: jsonrpc.Message | None) -> dict[str, Any] | ClientRequestError:
    """What the client's response to our request means for the handler that asked."""
    if response is None:
        return ClientRequestError(jsonrpc.JsonRpcError(jsonrpc.INTERNAL_ERROR, "The client is gone"))
    if "error" in response:
        err = response["error"] if isinstance(response["error"], dict) else {}
        code = err.get("code")
        return ClientRequestError(jsonrpc.JsonRpcError(
            code if isinstance(code, int) else jsonrpc.INTERNAL_ERROR, str(err.get("message", "Error")), err.get("data")))
    value = response.get("result")
    return value if isinstance(value, dict) else {}


def _sampling_params(messages: str | list[dict[str, Any]], max_tokens: int, system_prompt: str | None,
                     temperature: float | None, stop_sequences: list[str] | None, model_preferences: dict[str, Any] | None,
                     include_context: str | None, metadata: dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
    params: dict[str, Any] = {"messages": messages}
    optional: tuple[tuple[str, Any], ...] = (
        ("modelPreferences", model_preferences), ("systemPrompt", system_prompt), ("includeContext", include_context),
        ("temperature", temperature), ("maxTokens", max_tokens), ("stopSequences", stop_sequences), ("metadata", metadata))
    for key, value in optional:  # in the schema's order
        if value is not None:
            params[key] = value
    return params


def _checked_elicitation(result: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if result.get("action") not in ("accept", "decline", "cancel"):
        raise _client_error("The client answered elicitation/create without a valid action")
    if result["action"] == "accept":
        content = result.get("content", {})
        try:
            validator = schema_validator(schema)
        except ValueError as err:
            raise _client_error(f"The elicitation schema is not usable here: {err}") from None
        problems = [err.message for err in validator.iter_errors(content)]
        if problems:
            raise _client_error("The client's elicitation content does not fit the schema: " + "; ".join(problems))
    return result


def _roots_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    roots = result.get("roots")
    if not isinstance(roots, list):
        raise _client_error("The client answered roots/list without a roots array")
    return roots
