"""The sans-IO MCP session: a state machine over plain data, in the spirit of h11.

`Session.receive(message)` takes one parsed JSON value and returns what to do, as a list of actions
(`Send`, `Start`, `Cancel`, `Answer`, `FollowRoots`, `AdoptRoots`, `Release`, `Report`); the other methods do the
same for the runner's events: work that finished, a question for the client, the end of input. The
session never waits, never starts a thread, never reads a clock and never writes: a runner
(`runner.py`) performs the actions and serialises the calls.

The lifecycle is one enum and one transition table (`TRANSITIONS`). Everything else a session holds
is plain data: the negotiated capabilities, the client's capabilities and roots, the log level, the
requests in flight, our own requests to the client awaiting their answers, and the subscriptions.
"""

from __future__ import annotations

import enum
import itertools
from functools import partial

from . import era, jsonrpc
from .actions import (
    AdoptRoots,
    Answer,
    Cancel,
    Deferred,
    FollowRoots,
    Job,
    Release,
    Report,
    Send,
    Start,
    input_required_in,
    refusal_of,
    traceback_of,
)
from .context import CLIENT_CAPABILITY_FOR, PROTOCOL_VERSION, ClientRequestError, Context, InputRequired, Rounds
from .envelope import declares_tasks, envelope_error, needs_tasks
from .jsonrpc import JsonRpcError
from .methods import lookup
from .primitives import inside

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .actions import Action, Outcome
    from .context import Channel
    from .jsonrpc import Id, Message
    from .methods import Method
    from .registry import Registry

ROOTS_WAIT = 5.0
"""How long deferred work waits for a roots/list under way, so it runs in the roots the client gave."""

ROOTS_INPUT = "roots"
"""The key under which a modern request asks for the client's roots, when the workspace follows them."""


class Phase(enum.Enum):
    NEW = "new"  # nothing received yet but, perhaps, requests served leniently before initialize
    INITIALIZING = "initializing"  # initialize answered; notifications/initialized not yet received
    READY = "ready"  # the client said it is initialized: we may ask it things
    CLOSED = "closed"  # no more input: requests to the client can no longer be answered
    STATELESS = "stateless"  # one message alone, no handshake, no questions to the client


TRANSITIONS: dict[tuple[Phase, str], Phase] = {
    (Phase.NEW, "initialize"): Phase.INITIALIZING,
    (Phase.NEW, "initialized"): Phase.READY,  # a client that skips initialize is served all the same
    (Phase.INITIALIZING, "initialized"): Phase.READY,
    (Phase.NEW, "close"): Phase.CLOSED,
    (Phase.INITIALIZING, "close"): Phase.CLOSED,
    (Phase.READY, "close"): Phase.CLOSED,
    (Phase.STATELESS, "close"): Phase.CLOSED,
}
"""Every change of phase. An event not listed for a phase leaves it as it is (a second initialize)."""


def _in_use(msg_id: Id) -> Send:
    """The answer to a request whose id another request in progress holds."""
    return Send(jsonrpc.error(msg_id, JsonRpcError(jsonrpc.INVALID_REQUEST, data="id is in use by a request in progress")),
                msg_id)


def _served_later(method: Method, registry: Registry, context: Context) -> dict[str, Any]:
    """A request held for the roots it brought: its handler runs off the reading loop once they are the
    server's, then its work on the same worker. Only the requests that may ask (tools/call,
    resources/read, prompts/get) bring roots, and they take no session step."""
    outcome = method.handler(registry, context, context.params)
    return outcome.work() if isinstance(outcome, Deferred) else outcome


class Listener:
    """An open `subscriptions/listen`: what it opted in to and the server agreed to, and its resources
    (URI -> what the server's subscribe check kept)."""

    __slots__ = ("agreed", "kept")

    def __init__(self, agreed: dict[str, Any], kept: dict[str, Any]) -> None:
        self.agreed = agreed
        self.kept = kept


class Session:
    """One client's legacy (2025-06-18) session with a `Server`: lifecycle and plain data.

    Not thread-safe, like h11's Connection: the runner makes one call at a time.
    """

    def __init__(self, registry: Registry, channel: Channel | None = None, *, stateless: bool = False) -> None:
        """`registry` is what the server offers (a `Server`); `channel` is what the runner gives each
        request's context to send and ask through."""
        self.registry = registry
        self.channel = channel
        self.phase = Phase.STATELESS if stateless else Phase.NEW
        self.client_info: dict[str, Any] = {}
        self.client_capabilities: dict[str, Any] = {}
        self.capabilities: dict[str, Any] | None = None  # what our first initialize result declared
        self.log_level: str | None = None
        self.principal: str | None = None  # who the transport says is calling (a token's subject); binds request states
        self.may_call: Callable[[Any], bool] | None = None  # the tools the caller may call (tools/list lists those only)
        self.in_flight: dict[Id, Context] = {}
        self.cancelled: set[Id] = set()  # in flight, and the client cancelled them: no answer, no change
        self.outgoing: dict[int, Id | None] = {}  # our requests to the client -> the client request each serves
        self._next_id = itertools.count(1)
        self.subscriptions: dict[str, Any] = {}  # URI -> what the server's subscribe check kept for it
        self._subscription_turns: dict[str, int] = {}  # URI -> turn of the latest subscribe/unsubscribe under way
        self._turns = itertools.count(1)
        self.roots: list[dict[str, Any]] | None = None  # the client's roots, once listed
        self.roots_listing = False  # a FollowRoots is under way
        self._adopting = 0  # AdoptRoots under way: roots a modern client gave, on their way to the server
        self._roots_stale = False  # the roots changed again while it was
        self.listeners: dict[Id, Listener] = {}  # open subscriptions/listen requests (modern)
        self.held: list[Job] = []  # deferred work waiting for the roots listing under way
        self._hold = 0  # which holding that is: a Release of an earlier one releases nothing

    @property
    def server(self) -> Registry:
        """Deprecated: `registry` (what the server offers). Roots callbacks and notification handlers are given
        the session, and read it by this name before 1.1."""
        import warnings  # only a caller of the old name pays for the warning

        warnings.warn("Session.server is deprecated: use Session.registry", DeprecationWarning, stacklevel=2)
        return self.registry

    @property
    def stateless(self) -> bool:
        return self.phase is Phase.STATELESS

    @property
    def ready(self) -> bool:
        return self.phase is Phase.READY

    def _advance(self, event: str) -> None:
        self.phase = TRANSITIONS.get((self.phase, event), self.phase)

    # -- input ----------------------------------------------------------------------------------
    def receive(self, message: Any) -> list[Action]:
        """Take one parsed JSON value; return what to do, replies in order."""
        kind = jsonrpc.classify(message)
        if kind == "invalid":
            if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
                return self._receive_response(message)  # malformed, but if it answers our request, it does
            if isinstance(message, dict) and "method" in message and "id" not in message:
                return []  # a malformed notification: there is nobody to tell
            return [Send(jsonrpc.invalid_request(message))]
        if kind == "response":
            return self._receive_response(message)
        if kind == "notification":
            return self._receive_notification(message["method"], message.get("params", {}))
        return self._receive_request(message["id"], message["method"], message.get("params", {}))

    def _receive_request(self, msg_id: Id, method: str, params: dict[str, Any]) -> list[Action]:
        if "_meta" in params and (meta := era.modern_meta(params)) is not None:
            return self._receive_modern(msg_id, method, params, meta)
        entry = lookup(self.registry, method, self.capabilities)
        if entry is None:
            return [Send(jsonrpc.error(msg_id, JsonRpcError(jsonrpc.METHOD_NOT_FOUND)), msg_id)]
        context = Context(self.channel, msg_id, method, params, client_capabilities=self.client_capabilities,
                          log_threshold=self._log_threshold(), protocol_version=PROTOCOL_VERSION)
        return self._serve(entry, context)

    def _serve(self, entry: Method, context: Context) -> list[Action]:
        """Call the handler of a request; answer at once (after its step), or start its deferred work."""
        msg_id = context.request_id
        if msg_id in self.in_flight:
            self._settle(context, answered=False)
            return [_in_use(msg_id)]
        context.may_call = self.may_call
        context.on_loop = True
        outcome: dict[str, Any] | Deferred | InputRequired
        try:
            outcome = entry.handler(self.registry, context, context.params)
        except (Exception, SystemExit) as err:  # a handler's sys.exit() is a bug, not a shutdown
            refused = refusal_of(err)
            if refused is not None:
                return [Send(self._response(context, refused), msg_id)]
            failed = jsonrpc.error(msg_id, JsonRpcError(jsonrpc.INTERNAL_ERROR))
            return [Report(traceback_of(f"{context.method} failed")), Send(failed, msg_id)]
        except BaseException as err:
            need = input_required_in(err)
            if need is None:
                raise
            outcome = need
        finally:
            context.on_loop = False
        if entry.step is not None:
            return self.STEPS[entry.step](self, context, outcome)
        if not isinstance(outcome, Deferred):
            if context.protocol_version == PROTOCOL_VERSION and type(outcome) is dict:  # the legacy answer, at once
                return [Send(jsonrpc.result(msg_id, outcome), msg_id)]
            if entry.shaped and type(outcome) is dict:  # a modern result in its final shape (server/discover)
                return [Send(jsonrpc.result(msg_id, outcome), msg_id)]
            return [Send(self._response(context, outcome), msg_id)]
        self.in_flight[msg_id] = context
        return self._start(Job(context, outcome))

    def _start(self, job: Job) -> list[Action]:
        """Start deferred work, or hold it while the client's roots are on their way (a little)."""
        if self.roots_listing or self._adopting:
            self.held.append(job)
            if len(self.held) > 1:
                return []
            self._hold += 1
            return [Release(ROOTS_WAIT, self._hold)]
        return [Start(job)]

    def _settle(self, context: Context, *, answered: bool) -> None:
        """The round a modern request's `requestState` resumed is over (request_state.py: a state is spent once
        its request is answered, so its last round cannot run the handler again)."""
        state = context.params.get("requestState") if context.rounds is not None else None
        if isinstance(state, str):
            self.registry.request_states.settle(state, answered=answered)

    def _response(self, context: Context, outcome: dict[str, Any] | JsonRpcError | InputRequired) -> Message:
        """The response to a request, in the era it was sent in."""
        msg_id = context.request_id
        if context.protocol_version == PROTOCOL_VERSION:  # legacy: exactly as 2025-06-18 says
            if isinstance(outcome, JsonRpcError):
                return jsonrpc.error(msg_id, outcome)
            return jsonrpc.result(msg_id, outcome)  # type: ignore[arg-type]  # no rounds, so never InputRequired
        self._settle(context, answered=not isinstance(outcome, InputRequired))
        if isinstance(outcome, InputRequired):
            return jsonrpc.result(msg_id, self._input_required(context, outcome))
        if isinstance(outcome, JsonRpcError):
            if outcome.code == jsonrpc.RESOURCE_NOT_FOUND:  # 2026-07-28 answers it as invalid params
                outcome = JsonRpcError(jsonrpc.INVALID_PARAMS, outcome.message, outcome.data)
            return jsonrpc.error(msg_id, outcome)
        hint = self.registry.cache_hint(context.method)
        if hint is not None and context.method == "tools/list" and self.may_call is not None:
            hint = hint[0], "private"  # this caller's list: not one to share with others
        return jsonrpc.result(msg_id, era.complete(outcome, self.registry.server_info(), hint))

    # -- the modern era (2026-07-28): every request stands alone --------------------------------
    def _receive_modern(self, msg_id: Id, method: str, params: dict[str, Any], meta: dict[str, Any]) -> list[Action]:
        """Serve a request from what it carries (`_meta`), whatever this session negotiated, if anything."""
        try:
            context = self._modern_context(msg_id, method, params, meta)
        except JsonRpcError as err:
            return [Send(jsonrpc.error(msg_id, err), msg_id)]
        entry = lookup(self.registry, method, modern=True)
        if entry is None:
            return [Send(jsonrpc.error(msg_id, JsonRpcError(jsonrpc.METHOD_NOT_FOUND)), msg_id)]
        if context.rounds is not None and self.roots is None and self.registry.follows_roots:
            adopting = self._modern_roots(context)
            if isinstance(adopting, InputRequired):
                return [Send(self._response(context, adopting), msg_id)]
            if adopting:  # the whole request waits for the roots it brought, its handler included
                if msg_id in self.in_flight:
                    self._settle(context, answered=False)
                    return [*adopting, _in_use(msg_id)]
                self.in_flight[msg_id] = context
                return adopting + self._start(Job(context, Deferred(partial(_served_later, entry, self.registry, context))))
        return self._serve(entry, context)

    def _modern_context(self, msg_id: Id, method: str, params: dict[str, Any], meta: dict[str, Any]) -> Context:
        refused = envelope_error(meta)
        if refused is not None:
            raise refused
        version, capabilities, level = meta[era.VERSION_KEY], meta[era.CAPABILITIES_KEY], meta.get(era.LOG_LEVEL_KEY)
        declared = declares_tasks(capabilities)
        if method.startswith("tasks/") and not declared:
            raise needs_tasks()  # the tasks extension says so, whether or not this server offers tasks
        if method not in era.MODERN_METHODS and self.registry.extension_method(method) is None and not (
                method in era.TASK_METHODS and self.registry.offers_tasks):
            raise JsonRpcError(jsonrpc.METHOD_NOT_FOUND, data=f"{method} is not a method of MCP {version}"
                               if method in ("initialize", "ping", "logging/setLevel", "resources/subscribe",
                                             "resources/unsubscribe") else None)
        context = Context(self.channel, msg_id, method, params, client_capabilities=capabilities,
                          log_threshold=level if self.registry.logging_enabled else None, protocol_version=version)
        context.principal = self.principal
        if method == "tools/call" and declared and self.registry.offers_tasks:
            context.task_offer = partial(self._task_made, context)  # the tool decides (methods._call_tool, run_as_task)
        if method in era.ASKING_METHODS:
            responses: dict[str, Any] = {}
            if "inputResponses" in params:
                responses = params["inputResponses"]
                if type(responses) is not dict or not all(type(answer) is dict for answer in responses.values()):
                    raise JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: inputResponses must map keys to results")
            carried = {}
            if "requestState" in params:
                carried = self.registry.request_states.open(params["requestState"], method, params, self.principal)
            context.rounds = Rounds(carried, responses)
        return context

    def _modern_roots(self, context: Context) -> InputRequired | list[Action]:
        """When the server follows the client's roots and they are not known yet, a request that may ask
        the client asks for them first. The answer travels on with the request's later rounds; the
        server's roots callbacks run off the reading loop, and the request's work waits for them."""
        rounds = context.rounds
        if "roots" not in context.client_capabilities or rounds is None:
            return []
        record = rounds.carried.get(ROOTS_INPUT)
        answer = record.get("a") if isinstance(record, dict) else rounds.responses.get(ROOTS_INPUT)
        roots = answer.get("roots") if isinstance(answer, dict) else None
        if not isinstance(roots, list):
            return InputRequired({ROOTS_INPUT: {"method": "roots/list"}}, rounds.carried)
        rounds.carried[ROOTS_INPUT] = {"q": "roots/list", "a": answer}
        self.roots = [root for root in roots if isinstance(root, dict) and isinstance(root.get("uri"), str)]
        self._adopting += 1  # held work starts once the callbacks ran (roots_adopted), or after ROOTS_WAIT
        return [AdoptRoots(self.roots)]

    def _input_required(self, context: Context, need: InputRequired) -> dict[str, Any]:
        """The questions for the client (one, or several asked together); what it carries to the next round
        (the questions asked, the answers given) travels signed in `requestState` (a lone roots question
        carries nothing, so no state)."""
        out: dict[str, Any] = {"resultType": "input_required", "inputRequests": dict(need.requests)}
        if need.carried:
            out["requestState"] = self.registry.request_states.seal(context.method, context.params, need.carried,
                                                                  self.principal)
        out["_meta"] = {era.SERVER_INFO_KEY: self.registry.server_info()}
        return out

    # -- the tasks extension (io.modelcontextprotocol/tasks): a tool call answered before it ends ------
    def _task_made(self, context: Context) -> tuple[Any, Message] | None:
        """Context.run_as_task, from the worker running the call: its task, made in the registry's store (not
        in this session, which another thread owns), and the CreateTaskResult that answers the call."""
        made = self.registry.tasks.open(context, context.principal)
        if made is None:
            return None
        task, created = made
        created["_meta"] = {era.SERVER_INFO_KEY: self.registry.server_info()}
        return task, jsonrpc.result(context.request_id, created)

    def _task_update(self, context: Context, resume: Any) -> list[Action]:
        """The step of tasks/update: acknowledged; once every question of the task is answered, its handler
        runs again with the answers (under the task's id, with this session's runner)."""
        actions: list[Action] = [Send(self._response(context, {}), context.request_id)]
        if resume is None:
            return actions
        task = resume
        run = Context(self.channel, task.id, "tools/call", task.params, client_capabilities=task.capabilities,
                      protocol_version=era.MODERN_VERSION)
        run.principal, run.task, run.may_call = task.principal, task, self.may_call
        run.rounds = Rounds(task.carried, task.answers)
        entry = lookup(self.registry, "tools/call", modern=True)
        try:
            if entry is None:
                raise JsonRpcError(jsonrpc.METHOD_NOT_FOUND)
            outcome = entry.handler(self.registry, run, run.params)
        except JsonRpcError as err:
            self.registry.tasks.settle(task, err)
            return actions
        if not isinstance(outcome, Deferred):
            self.registry.tasks.settle(task, outcome)
            return actions
        if task.id in self.in_flight:  # a client request under the task's id: the run waits for nothing
            self.registry.tasks.settle(task, JsonRpcError(jsonrpc.INTERNAL_ERROR, "the task's id is in use"))
            return actions
        if not self.registry.tasks.resume(task, run):  # cancelled since its last answer came
            return actions
        self.in_flight[task.id] = run
        return [*actions, Start(Job(run, outcome))]

    def _task_cancel(self, context: Context, running: Any) -> list[Action]:
        """The step of tasks/cancel: acknowledged; the run under way, if any, is stopped."""
        actions: list[Action] = [Send(self._response(context, {}), context.request_id)]
        return [*actions, Cancel(running)] if running is not None else actions

    def _stop_tasks(self) -> list[Action]:
        """The input ended: the tasks this session runs are cancelled, as nobody is left to poll them."""
        actions: list[Action] = []
        for context in self.in_flight.values():
            if context.task is not None and self.registry.tasks.cancel(context.task) is not None:
                actions.append(Cancel(context))
        return actions

    # -- subscriptions/listen: a request that stays open --------------------------------------------
    def _listen(self, context: Context, outcome: Any) -> list[Action]:
        """The step of subscriptions/listen: its handler said what is agreed and which resources it may have
        (at once, or once the server's checks ran off the reading loop); open it."""
        if isinstance(outcome, Deferred):
            self.in_flight[context.request_id] = context
            outcome.then = lambda found: self._listening(context, found["agreed"], found["kept"])
            return [Start(Job(context, outcome))]
        return self._listening(context, outcome["agreed"], outcome["kept"])

    def _listening(self, context: Context, agreed: dict[str, Any], kept: dict[str, Any]) -> list[Action]:
        """Open the subscription: acknowledge what is honoured; what it opted in to is tagged with its id. One
        that nothing is honoured for is refused: it would hold its stream (a connection over HTTP) for nothing.
        What it keeps is what it needs: the rest of its request (any size the client sent) is let go."""
        msg_id = context.request_id
        if kept:
            agreed["resourceSubscriptions"] = list(kept)
        if not agreed:
            return [Send(jsonrpc.error(msg_id, JsonRpcError(jsonrpc.INVALID_PARAMS, (
                "Invalid params: nothing to listen for (no list change or resource this server offers was asked "
                "for)"))), msg_id)]
        context.params = {}
        self.in_flight[msg_id] = context
        self.listeners[msg_id] = Listener(agreed, kept)
        acknowledged = jsonrpc.notification("notifications/subscriptions/acknowledged", {
            "_meta": {era.SUBSCRIPTION_ID_KEY: msg_id}, "notifications": agreed})
        if self.phase is Phase.CLOSED:  # the input ended while its resources were checked: it ends at once
            return [Send(acknowledged, msg_id), *self._stop_listening(graceful=True)]
        return [Send(acknowledged, msg_id)]

    def _stop_listening(self, graceful: bool) -> list[Action]:
        """End every subscription: with its result when the server ends it, silently when the client did."""
        listening, self.listeners = list(self.listeners), {}
        actions: list[Action] = []
        for msg_id in listening:
            self.in_flight.pop(msg_id, None)
            if graceful:
                ended = {"resultType": "complete", "_meta": {era.SUBSCRIPTION_ID_KEY: msg_id}}
                actions.append(Send(jsonrpc.result(msg_id, ended), msg_id))
        return actions

    def announce(self, method: str, params: dict[str, Any] | None = None, within: bool = True) -> list[Action]:
        """A list change or a resource update, to whoever here asked for it: the legacy session as it
        negotiated, and each subscription that opted in, tagged with its id."""
        if method == "notifications/resources/updated":
            assert params is not None
            uri = params["uri"]

            def wants(subscribed: dict[str, Any]) -> bool:
                return uri in subscribed or (within and any(inside(uri, s) for s in subscribed))

            legacy = self.ready and wants(self.subscriptions)
            tagged = [msg_id for msg_id, listener in self.listeners.items() if wants(listener.kept)]
        else:
            registry = method.split("/")[1]
            legacy = self.ready and bool((self.capabilities or {}).get(registry, {}).get("listChanged"))
            key = next(key for key, name in era.LIST_FILTERS.items() if name == registry)
            tagged = [msg_id for msg_id, listener in self.listeners.items() if listener.agreed.get(key)]
        actions: list[Action] = [Send(jsonrpc.notification(method, params))] if legacy else []
        for msg_id in tagged:
            actions.append(Send(jsonrpc.notification(method, {"_meta": {era.SUBSCRIPTION_ID_KEY: msg_id}, **(params or {})}),
                                msg_id))
        return actions

    def subscribed(self) -> dict[str, Any]:
        """Every URI subscribed to here, either way, with what the server's subscribe check kept for it."""
        found = dict(self.subscriptions)
        for listener in self.listeners.values():
            found.update(listener.kept)
        return found

    def finish(self, job: Job, outcome: Outcome) -> list[Action]:
        """The work of `job` is over (`outcome` from `Job.run`): its response, unless it was cancelled."""
        context = job.context
        self.in_flight.pop(context.request_id, None)
        cancelled = context.cancelled
        if context.request_id in self.cancelled:
            self.cancelled.discard(context.request_id)
            cancelled = True
        if job.deferred.settle is not None:
            job.deferred.settle(None if cancelled else isinstance(outcome, dict))
        actions: list[Action] = []
        if context.failure is not None:
            actions.append(Report(context.failure))
        if context.task is not None:  # its call was answered when it became a task: the task keeps the outcome
            self._settle(context, answered=True)
            self.registry.tasks.settle(context.task, None if cancelled else outcome)
            return actions
        if cancelled:
            self._settle(context, answered=False)
            return actions
        if outcome is None:  # the work said "cancelled", but the client cancelled nothing
            outcome = JsonRpcError(jsonrpc.INTERNAL_ERROR)
        if job.deferred.then is not None and isinstance(outcome, dict):
            return actions + job.deferred.then(outcome)
        actions.append(Send(self._response(context, outcome), context.request_id))
        return actions

    def _receive_notification(self, method: str, params: dict[str, Any]) -> list[Action]:
        actions: list[Action] = []
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            if not jsonrpc.is_valid_id(request_id) or request_id not in self.in_flight or request_id in self.cancelled:
                return []
            if self.listeners.pop(request_id, None) is not None:  # a subscription: it just ends, unanswered
                return [Cancel(self.in_flight.pop(request_id))]
            context = self.in_flight[request_id]
            if context.task is not None:  # a task is stopped by tasks/cancel, never by this (the extension says so)
                return []
            self.cancelled.add(request_id)
            return [Cancel(context)]
        if method == "notifications/initialized":
            self._advance("initialized")
            actions += self._follow_roots()
        elif method == "notifications/roots/list_changed" and self.ready:
            actions += self._follow_roots()
        for handler in self.registry.notification_handlers(method):
            try:
                handler(self, params)
            except Exception:
                actions.append(Report(traceback_of(f"{method} failed")))
        return actions

    def _receive_response(self, message: Message) -> list[Action]:
        msg_id = message.get("id")
        if not isinstance(msg_id, int) or msg_id not in self.outgoing:
            return []  # not ours, or answered already: nothing waits for it
        del self.outgoing[msg_id]
        return [Answer(msg_id, message)]

    # -- lifecycle ------------------------------------------------------------------------------
    def _initialize(self, context: Context, result: Any) -> list[Action]:
        """The step of initialize: the first one's capabilities are this session's for good (a second
        initialize is answered the same and changes nothing)."""
        if self.capabilities is None and not self.stateless:
            self.client_capabilities = context.params.get("capabilities", {})
            self.client_info = context.params.get("clientInfo", {})
            self.capabilities = result["capabilities"]
            self._advance("initialize")
        return [Send(jsonrpc.result(context.request_id, result), context.request_id)]

    def _set_log_level(self, context: Context, result: Any) -> list[Action]:
        """The step of logging/setLevel: the level its handler checked is this session's from now on."""
        self.log_level = result["level"]
        return [Send(jsonrpc.result(context.request_id, {}), context.request_id)]

    def close(self) -> list[Action]:
        """No more input will come: fail our requests to the client, so no handler waits forever.

        Requests already read are still answered.
        """
        self._advance("close")
        outgoing, self.outgoing = self.outgoing, {}
        actions: list[Action] = self._stop_listening(graceful=True)
        actions += self._stop_tasks()
        actions += [Answer(request_id, None) for request_id in outgoing]
        if self._adopting:  # roots in hand are on their way to the server: what waits for them waits on
            return actions
        return actions + self.release_held()  # the roots will not come now; what waited for them runs

    def cancel_all(self) -> list[Action]:
        """The client is gone (its stream closed): everything under way stops, subscriptions end unanswered."""
        self._stop_listening(graceful=False)
        fresh = [request_id for request_id in self.in_flight if request_id not in self.cancelled]
        self.cancelled.update(fresh)
        return [Cancel(self.in_flight[request_id]) for request_id in fresh]

    # -- requests to the client -----------------------------------------------------------------
    def ask(self, method: str, params: dict[str, Any] | None, parent: Context | None) -> Message:
        """Our request to the client, registered to await its answer; ClientRequestError if we may not ask."""
        if self.stateless:
            raise ClientRequestError(JsonRpcError(
                jsonrpc.INVALID_REQUEST, f"Cannot send {method}: a stateless server has no session to carry the answer"))
        needed = CLIENT_CAPABILITY_FOR.get(method)
        if needed is not None and needed not in self.client_capabilities:
            raise ClientRequestError(JsonRpcError(jsonrpc.METHOD_NOT_FOUND, f"The client does not support {method}"))
        if self.phase is Phase.CLOSED:
            raise ClientRequestError(JsonRpcError(jsonrpc.INTERNAL_ERROR, "The client is gone"))
        if method != "ping" and not self.ready:
            raise ClientRequestError(JsonRpcError(jsonrpc.INVALID_REQUEST, "The client has not finished initialization"))
        request_id = next(self._next_id)
        self.outgoing[request_id] = parent.request_id if parent is not None else None
        return jsonrpc.request(request_id, method, params)

    def give_up(self, request_id: int, reason: str) -> list[Action]:
        """We stopped waiting for our request (timeout, cancellation): tell the client, if it is still ours."""
        if request_id not in self.outgoing:
            return []
        related = self.outgoing.pop(request_id)
        if self.phase is Phase.CLOSED:
            return []
        return [Send(jsonrpc.notification("notifications/cancelled", {"requestId": request_id, "reason": reason}), related)]

    # -- the client's roots ---------------------------------------------------------------------
    def _follow_roots(self) -> list[Action]:
        """List the client's roots in the background, if anything on the server follows them."""
        if not (self.registry.follows_roots and "roots" in self.client_capabilities and not self.stateless):
            return []
        if self.roots_listing:  # one refresh at a time: a flood of list_changed costs one more listing
            self._roots_stale = True
            return []
        self.roots_listing = True
        return [FollowRoots()]

    def roots_listed(self, roots: list[dict[str, Any]] | None) -> list[Action]:
        """A FollowRoots is over (`roots` None: the listing failed, so keep what was known)."""
        if roots is not None:
            self.roots = roots
        if self._roots_stale:
            self._roots_stale = False
            return [FollowRoots()]
        self.roots_listing = False
        return [] if self._adopting else self.release_held()

    def roots_adopted(self) -> list[Action]:
        """An AdoptRoots is over: the server has the roots a modern client gave."""
        self._adopting -= 1
        return [] if self._adopting or self.roots_listing else self.release_held()

    def release_held(self, hold: int | None = None) -> list[Action]:
        """Start the work that waited for the roots: they came, or (`hold`, from its Release) it waited
        long enough. A Release of a holding already over releases nothing."""
        if hold is not None and hold != self._hold:
            return []
        held, self.held = self.held, []
        return [Start(job) for job in held]

    # -- subscriptions --------------------------------------------------------------------------
    def _subscription(self, context: Context, outcome: Any) -> list[Action]:
        """The step of resources/subscribe and unsubscribe. Each takes a turn for its URI as it arrives; a
        subscribe whose check runs off the reading loop is recorded only if no later subscribe or
        unsubscribe of the URI came meanwhile, so the client's last word stands whatever order the work
        finishes in. A refused subscribe leaves the URI unsubscribed; a cancelled one leaves it as it was."""
        uri = context.params["uri"]
        turn = self._subscription_turns[uri] = next(self._turns)
        msg_id = context.request_id
        if not isinstance(outcome, Deferred):
            self._settle_subscription(uri, turn, outcome["subscribed"], outcome["kept"])
            return [Send(jsonrpc.result(msg_id, {}), msg_id)]

        def settle(ok: bool | None) -> None:
            if not ok:
                self._settle_subscription(uri, turn, ok)

        def then(found: dict[str, Any]) -> list[Action]:
            self._settle_subscription(uri, turn, True, found["kept"])
            return [Send(jsonrpc.result(msg_id, {}), msg_id)]

        outcome.settle, outcome.then = settle, then
        self.in_flight[msg_id] = context
        return self._start(Job(context, outcome))

    def _settle_subscription(self, uri: str, turn: int, subscribed: bool | None, data: Any = None) -> None:
        """End `turn`: if it is still the latest for `uri`, record the subscription (`subscribed`, None to
        leave it as it is); a turn overtaken by a later one changes nothing."""
        if self._subscription_turns.get(uri) != turn:
            return
        del self._subscription_turns[uri]
        if subscribed:
            self.subscriptions[uri] = data
        elif subscribed is not None:
            self.subscriptions.pop(uri, None)

    STEPS: dict[str, Callable[[Session, Context, Any], list[Action]]] = {
        "initialize": _initialize,
        "log level": _set_log_level,
        "subscription": _subscription,
        "listen": _listen,
        "task update": _task_update,
        "task cancel": _task_cancel,
    }
    """The session's step of each method that changes it (methods.py: `Method.step`), given the handler's outcome."""

    # -- output ---------------------------------------------------------------------------------
    def _log_threshold(self) -> str | None:
        if not self.registry.logging_enabled:
            return None
        return self.log_level or self.registry.default_log_level


