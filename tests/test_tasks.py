"""The tasks extension (io.modelcontextprotocol/tasks, SEP-2663) in the sans-IO core: a tool call that becomes a
task, polled, answered, cancelled, expired and bounded, driven by `core_support.Driver` in the test's own thread.

Every task answer is checked against the shapes the extension gives them (support.TASK_SHAPES, and `ACK`: its
Result & Task intersection, its DetailedTask, its empty acknowledgement), as the 2026-07-28 schema has no
definition of them. The official conformance suite's ten tasks scenarios run against examples/conformance_server.py
in scripts/conformance.sh.
"""

from __future__ import annotations

import threading
from typing import Any

import jsonschema
import pytest

from core_support import Driver, req
from shipcode_mcp import era, tasks
from shipcode_mcp.actions import Send
from shipcode_mcp.context import Context
from shipcode_mcp.primitives import Tool, ToolError
from shipcode_mcp.server import Server
from support import TASK_SHAPES
from test_session_modern import INFO_META, modern

DECLARED: dict[str, Any] = {"elicitation": {}, "extensions": {era.TASKS_EXTENSION: {}}}
CREATED, DETAILED = TASK_SHAPES["CreateTaskResult"], TASK_SHAPES["DetailedTask"]
ACK = {"resultType": "complete", "_meta": INFO_META}


def slow(ctx: Context, args: dict[str, Any]) -> str:
    """Becomes a task, then waits until the test lets it go (args["gate"], a threading.Event) or it is cancelled."""
    if not ctx.run_as_task():
        return "ran in its request"
    gate: threading.Event = GATES[args["gate"]]
    while not gate.wait(0.01):
        if ctx.cancelled:
            return "stopped"
    if args.get("fail") == "tool":
        raise ToolError("it did not work")
    if args.get("fail") == "bug":
        raise RuntimeError("a bug")
    return f"done {args['gate']}"


def asking(ctx: Context, args: dict[str, Any]) -> str:
    """Becomes a task, then asks two questions at once."""
    ctx.run_as_task()
    RUNS.append(dict(ctx.rounds.responses) if ctx.rounds is not None else {})
    answers = ctx.request_all({"a": ("elicitation/create", {"message": "A?", "requestedSchema": NAMED}),
                               "b": ("elicitation/create", {"message": "B?", "requestedSchema": NAMED})})
    return " and ".join(answer["content"]["name"] for answer in answers.values())


GATES: dict[str, threading.Event] = {}
LOCK = threading.RLock()  # as a runner's: one call into the session at a time, whichever thread makes it
RUNS: list[dict[str, Any]] = []
NAMED = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def server(*, limit: int | None = None, clock: list[float] | None = None) -> Server:
    made = Server("shipcode-mcp", "1.0.0")
    made.add_tool(Tool("slow", slow, {"type": "object"}, task_support="optional"))
    made.add_tool(Tool("only_task", slow, {"type": "object"}, task_support="required"))
    made.add_tool(Tool("asking", asking, {"type": "object"}, task_support="optional"))
    made.add_tool(Tool("plain", slow, {"type": "object"}))
    if limit is not None or clock is not None:
        made._tasks = tasks.Tasks((lambda: clock[0]) if clock is not None else tasks.time.time,
                                  limit=limit if limit is not None else tasks.MAX_TASKS)
    return made


@pytest.fixture(autouse=True)
def fresh_gates() -> None:
    GATES.clear()
    RUNS.clear()


def call(d: Driver, msg_id: int, tool: str, gate: str = "g", capabilities: dict[str, Any] | None = None,
         **arguments: Any) -> list[dict[str, Any]]:
    """A modern tools/call; its work started (the answer it sends once it became a task, or its result)."""
    GATES.setdefault(gate, threading.Event())
    with LOCK:
        before = len(d.sent)
        d.receive(req(msg_id, "tools/call", modern({"name": tool, "arguments": {"gate": gate, **arguments}},
                                                   DECLARED if capabilities is None else capabilities)))
        return d.sent[before:]


def started(d: Driver) -> threading.Thread:
    """The oldest job run on a thread of its own, as a runner's worker runs it (runner.Runner.finish_job): it
    sends its answer, if it becomes a task, while it goes on."""
    with LOCK:
        job = d.jobs.pop(0)

    def work() -> None:
        outcome = job.run()
        with LOCK:
            actions = d.session.finish(job, outcome)
        def send() -> None:
            d.perform([action for action in actions if isinstance(action, Send)])

        job.context.finish(send)
        with LOCK:
            d.perform([action for action in actions if not isinstance(action, Send)])

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def answered(d: Driver, before: int, msg_id: int) -> dict[str, Any]:
    for _ in range(500):
        replies = [m for m in d.sent[before:] if m.get("id") == msg_id and "method" not in m]
        if replies:
            assert len(replies) == 1
            return replies[0]
        threading.Event().wait(0.01)
    raise AssertionError(d.sent[before:])


def ask(d: Driver, msg_id: int, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    with LOCK:
        before = len(d.sent)
        d.receive(req(msg_id, method, modern(params, DECLARED if capabilities is None else capabilities)))
        replies = [m for m in d.sent[before:] if m.get("id") == msg_id]
    assert len(replies) == 1, d.sent[before:]
    return replies[0]


def get(d: Driver, task_id: str, msg_id: int = 90) -> dict[str, Any]:
    reply = ask(d, msg_id, "tasks/get", {"taskId": task_id})
    assert "result" in reply, reply
    jsonschema.validate(reply["result"], DETAILED)
    assert reply["result"]["taskId"] == task_id and reply["result"]["_meta"] == INFO_META
    return dict(reply["result"])


def create(d: Driver, msg_id: int, tool: str = "slow", gate: str = "g", **arguments: Any) -> tuple[str, threading.Thread]:
    before = len(d.sent)
    call(d, msg_id, tool, gate, **arguments)
    thread = started(d)
    reply = answered(d, before, msg_id)
    jsonschema.validate(reply["result"], CREATED)
    assert reply["result"]["_meta"] == INFO_META
    assert list(reply["result"])[:2] == ["resultType", "taskId"] and reply["result"]["status"] == "working"
    return reply["result"]["taskId"], thread


def settled(d: Driver, task_id: str, thread: threading.Thread) -> dict[str, Any]:
    thread.join(10)
    assert not thread.is_alive()
    return get(d, task_id)


def test_a_call_becomes_a_task_answered_at_once_then_polled_to_its_result() -> None:
    d = Driver(server())
    task_id, thread = create(d, 2)
    assert get(d, task_id)["status"] == "working"
    GATES["g"].set()
    done = settled(d, task_id, thread)
    assert done["status"] == "completed" and "error" not in done and "inputRequests" not in done
    assert done["result"] == {"resultType": "complete", "content": [{"type": "text", "text": "done g"}], "isError": False}
    assert len([m for m in d.sent if m.get("id") == 2]) == 1  # the call's one answer, the task
    assert d.session.in_flight == {}


def test_without_the_extension_a_call_runs_in_its_request_and_a_task_only_tool_is_32021() -> None:
    d = Driver(server())
    undeclared: list[dict[str, Any]] = [{}, {"extensions": {"example.test/other": {}}}]
    for capabilities in undeclared:
        assert call(d, 3, "slow", capabilities=capabilities) == []
        assert d.run_all() == [{"jsonrpc": "2.0", "id": 3, "result": {
            "resultType": "complete", "content": [{"type": "text", "text": "ran in its request"}], "isError": False,
            "_meta": INFO_META}}]
        assert call(d, 4, "only_task", capabilities=capabilities) == [{"jsonrpc": "2.0", "id": 4, "error": {
            "code": -32021, "message": "Missing required client capability",
            "data": {"requiredCapabilities": {"extensions": {era.TASKS_EXTENSION: {}}}}}}]
    call(d, 5, "plain")  # a tool that offers no tasks never becomes one, whatever the client declared
    assert d.run_all()[0]["result"]["content"][0]["text"] == "ran in its request"
    d.handshake()  # 2025-06-18 has no tasks: every call runs in its request
    assert d.request(6, "tools/call", {"name": "only_task", "arguments": {"gate": "g"}})["result"]["content"][0]["text"] \
        == "ran in its request"


def test_a_tool_error_completes_the_task_a_bug_fails_it_with_the_protocol_error() -> None:
    d = Driver(server())
    tool_error, first = create(d, 2, gate="t", fail="tool")
    bug, second = create(d, 3, gate="b", fail="bug")
    GATES["t"].set()
    GATES["b"].set()
    failed_tool = settled(d, tool_error, first)
    assert failed_tool["status"] == "completed" and failed_tool["result"]["isError"] is True
    assert failed_tool["result"]["content"] == [{"type": "text", "text": "it did not work"}]
    broken = settled(d, bug, second)
    assert broken["status"] == "failed" and "result" not in broken
    assert broken["error"] == {"code": -32603, "message": "Internal error"}  # the traceback is the operator's only


def test_cancel_stops_the_run_at_once_answers_an_empty_ack_and_holds_whatever_the_run_returns() -> None:
    d = Driver(server())
    task_id, thread = create(d, 2)
    reply = ask(d, 3, "tasks/cancel", {"taskId": task_id})
    assert reply == {"jsonrpc": "2.0", "id": 3, "result": ACK}
    assert get(d, task_id)["status"] == "cancelled"
    thread.join(10)  # the run saw its cancellation (the runner's Cancel ran its context's callbacks)
    assert not thread.is_alive() and get(d, task_id)["status"] == "cancelled"
    assert ask(d, 4, "tasks/cancel", {"taskId": task_id}) == {"jsonrpc": "2.0", "id": 4, "result": ACK}  # idempotent
    finished, other = create(d, 5, gate="f")
    GATES["f"].set()
    assert settled(d, finished, other)["status"] == "completed"
    assert ask(d, 6, "tasks/cancel", {"taskId": finished})["result"] == ACK
    assert get(d, finished)["status"] == "completed"  # a finished task stays as it ended


def test_notifications_cancelled_never_stops_a_task_and_the_end_of_input_does() -> None:
    d = Driver(server())
    task_id, thread = create(d, 2)
    d.receive({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    assert not d.session.in_flight[2].cancelled and get(d, task_id)["status"] == "working"
    d.perform(d.session.close())  # nobody is left to poll it (stdio's end of input)
    thread.join(10)
    assert not thread.is_alive() and get(d, task_id)["status"] == "cancelled"


def test_questions_park_the_task_answers_come_one_by_one_and_the_handler_runs_again_with_them() -> None:
    d = Driver(server())
    task_id, thread = create(d, 2, tool="asking")
    parked = settled(d, task_id, thread)
    assert parked["status"] == "input_required" and set(parked["inputRequests"]) == {"a", "b"}
    assert parked["inputRequests"]["a"] == {"method": "elicitation/create",
                                            "params": {"message": "A?", "requestedSchema": NAMED}}
    reply = ask(d, 3, "tasks/update", {"taskId": task_id, "inputResponses": {
        "a": {"action": "accept", "content": {"name": "Ada"}}, "unknown": {"ignored": True}}})
    assert reply == {"jsonrpc": "2.0", "id": 3, "result": ACK}
    assert d.jobs == []  # one question is still open: nothing runs
    still = get(d, task_id)
    assert still["status"] == "input_required" and list(still["inputRequests"]) == ["b"]
    ask(d, 4, "tasks/update", {"taskId": task_id, "inputResponses": {"b": {"action": "accept", "content": {"name": "Bo"}}}})
    assert get(d, task_id)["status"] == "working"
    settled_run = started(d)
    done = settled(d, task_id, settled_run)
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "Ada and Bo"
    assert RUNS == [{}, {"a": {"action": "accept", "content": {"name": "Ada"}},
                         "b": {"action": "accept", "content": {"name": "Bo"}}}]
    assert ask(d, 5, "tasks/update", {"taskId": task_id, "inputResponses": []})["error"]["code"] == -32602


def test_a_task_is_its_callers_alone_and_unknown_ids_are_invalid_params() -> None:
    d = Driver(server())
    d.session.principal = "alice"
    task_id, thread = create(d, 2)
    d.session.principal = "bob"
    for msg_id, method in enumerate(("tasks/get", "tasks/cancel"), 3):
        assert ask(d, msg_id, method, {"taskId": task_id})["error"] == {
            "code": -32602, "message": "Invalid params: no such task (unknown, or expired)"}
    assert ask(d, 5, "tasks/update", {"taskId": "nothing", "inputResponses": {}})["error"]["code"] == -32602
    assert ask(d, 6, "tasks/get", {"taskId": 7})["error"]["code"] == -32602
    d.session.principal = "alice"
    assert get(d, task_id)["status"] == "working"
    GATES["g"].set()
    thread.join(10)


def test_the_extensions_methods_and_its_removed_ones() -> None:
    d = Driver(server())
    for msg_id, method in enumerate(("tasks/get", "tasks/update", "tasks/cancel", "tasks/list", "tasks/result"), 2):
        assert ask(d, msg_id, method, {"taskId": "x"}, {})["error"]["code"] == -32021
    for msg_id, method in enumerate(("tasks/list", "tasks/result"), 10):
        assert ask(d, msg_id, method, {"taskId": "x"})["error"] == {"code": -32601, "message": "Method not found"}
    discovered = ask(d, 20, "server/discover", {}, {})["result"]["capabilities"]
    assert discovered == {"tools": {}, "extensions": {era.TASKS_EXTENSION: {}}}
    assert d.handshake()["result"]["capabilities"] == {"tools": {}}  # 2025-06-18 has no extensions


def test_tasks_expire_only_after_their_ttl_and_at_a_bound_calls_run_in_their_requests() -> None:
    clock = [1_000_000.0]
    d = Driver(server(limit=2, clock=clock))
    first, thread = create(d, 2, gate="one")
    GATES["one"].set()
    assert settled(d, first, thread)["createdAt"] == "1970-01-12T13:46:40.000Z"
    second, running = create(d, 3, gate="two")
    call(d, 4, "slow", gate="three")  # full: no task goes before its time, so the call runs in its request
    late = started(d)
    GATES["three"].set()
    assert answered(d, 0, 4)["result"]["content"][0]["text"] == "ran in its request"
    late.join(10)
    assert get(d, first)["status"] == "completed"
    clock[0] += tasks.TTL_MS / 1000 - 1
    assert get(d, first)["status"] == "completed"
    clock[0] += 1  # its time to live since it last changed is over; a running task never expires
    assert ask(d, 5, "tasks/get", {"taskId": first})["error"]["code"] == -32602
    assert get(d, second)["status"] == "working"
    third, other = create(d, 6, gate="four")  # room again
    GATES["two"].set()
    GATES["four"].set()
    running.join(10)
    other.join(10)
    assert get(d, third)["status"] == "completed"


def test_one_caller_cannot_take_every_place_or_end_another_callers_tasks() -> None:
    made = server()
    made._tasks = tasks.Tasks(per_caller=2)
    d = Driver(made)
    d.session.principal = "alice"
    kept, thread = create(d, 2, gate="a")
    GATES["a"].set()
    assert settled(d, kept, thread)["status"] == "completed"
    d.session.principal = "bob"
    bobs = [create(d, msg_id, gate=f"b{msg_id}") for msg_id in (3, 4)]
    call(d, 5, "slow", gate="b5")  # bob is at his bound: his call runs in its request
    late = started(d)
    GATES["b5"].set()
    assert answered(d, 0, 5)["result"]["content"][0]["text"] == "ran in its request"
    late.join(10)
    assert ask(d, 6, "tasks/update", {"taskId": kept, "inputResponses": {}})["error"]["code"] == -32602
    d.session.principal = "alice"
    assert get(d, kept)["result"]["content"][0]["text"] == "done a"  # alice's result stays hers
    other, running = create(d, 7, gate="a2")  # and she still has her places
    for gate in ("b3", "b4", "a2"):
        GATES[gate].set()
    for _, bob_thread in bobs:
        bob_thread.join(10)
    running.join(10)
    assert get(d, other)["status"] == "completed"


def test_a_finished_task_keeps_its_result_not_the_request_that_made_it() -> None:
    d = Driver(server())
    task_id, thread = create(d, 2, padding="x" * 100_000)
    task = d.session.registry.tasks.find({"taskId": task_id}, None)
    assert task.params["arguments"]["padding"] == "x" * 100_000
    GATES["g"].set()
    settled(d, task_id, thread)
    assert task.params == {} and task.capabilities == {} and task.carried == {} and task.answers == {}


def test_a_token_that_may_not_call_the_tool_cannot_run_it_again_through_tasks_update() -> None:
    d = Driver(server())
    task_id, thread = create(d, 2, tool="asking")
    assert settled(d, task_id, thread)["status"] == "input_required"
    d.session.may_call = lambda tool: tool.name != "asking"  # a later token of the same caller, with less
    refused = ask(d, 3, "tasks/update", {"taskId": task_id, "inputResponses": {
        "a": {"action": "accept", "content": {"name": "A"}}, "b": {"action": "accept", "content": {"name": "B"}}}})
    assert refused["error"]["code"] == -32602 and "asking" in refused["error"]["message"]
    assert d.jobs == [] and get(d, task_id)["status"] == "input_required"


def test_a_task_cancelled_once_answered_and_before_its_run_started_does_not_run() -> None:
    d = Driver(server())
    task_id, thread = create(d, 2, tool="asking")
    settled(d, task_id, thread)
    store = d.session.registry.tasks
    task = store.find({"taskId": task_id}, None)
    answers = {"a": {"action": "accept", "content": {"name": "A"}}, "b": {"action": "accept", "content": {"name": "B"}}}
    assert store.answer(task, answers)  # tasks/update took the last answer; a tasks/cancel comes in between
    assert store.cancel(task) is None
    assert not store.resume(task, Context(None, task_id, "tools/call", {}))
    assert get(d, task_id)["status"] == "cancelled"


def test_what_a_handler_sends_stops_once_its_call_is_a_task_and_asking_twice_is_one_task() -> None:
    seen: list[bool] = []

    def chatty(ctx: Context, args: dict[str, Any]) -> str:
        seen.append(ctx.report_progress(1))
        assert ctx.run_as_task() and ctx.run_as_task()
        seen.append(ctx.report_progress(2))
        return "ok"

    made = server()
    made.add_tool(Tool("chatty", chatty, {"type": "object"}, task_support="optional"))
    d = Driver(made)
    before = len(d.sent)
    d.receive(req(2, "tools/call", modern({"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}, DECLARED)))
    d.run_all()
    sent = d.sent[before:]
    assert seen == [True, False]
    assert [m.get("method") or m["result"]["resultType"] for m in sent] == ["notifications/progress", "task"]
    assert get(d, sent[1]["result"]["taskId"])["result"]["content"][0]["text"] == "ok"
    with pytest.raises(ValueError, match="cannot become a task"):
        Tool("quick", chatty, {"type": "object"}, inline=True, task_support="optional")
    with pytest.raises(ValueError, match="task_support"):
        Tool("odd", chatty, {"type": "object"}, task_support="always")


def test_tasks_update_of_a_task_that_waits_on_nothing_is_acknowledged_and_changes_nothing() -> None:
    d = Driver(server())
    task_id, thread = create(d, 2)
    assert ask(d, 3, "tasks/update", {"taskId": task_id, "inputResponses": {"x": {}}}) == {
        "jsonrpc": "2.0", "id": 3, "result": ACK}
    assert d.jobs == [] and get(d, task_id)["status"] == "working"
    GATES["g"].set()
    assert settled(d, task_id, thread)["status"] == "completed"


def test_a_server_of_several_processes_offers_no_tasks() -> None:
    made = server()
    made.tasks_offered = False  # what the CLI sets for --workers above 1
    d = Driver(made)
    assert "extensions" not in ask(d, 2, "server/discover", {}, {})["result"]["capabilities"]
    call(d, 3, "slow")
    assert d.run_all()[0]["result"]["content"][0]["text"] == "ran in its request"
    assert ask(d, 4, "tasks/get", {"taskId": "x"})["error"]["code"] == -32601
