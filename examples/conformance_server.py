"""The fixtures of the official conformance suite (@modelcontextprotocol/conformance), built only with
the public API, served over our Streamable HTTP transport: those of its 2025-06-18 scenarios (0.1 and 0.2
lines) and of its 2026-07-28 ones (0.2: multi round-trip requests, the stateless probes, list changes,
JSON Schema 2020-12, Mcp-Param headers). scripts/conformance.sh runs the suite against it:

    python examples/conformance_server.py [--port 8799] [--stateless]
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from typing import Any

from shipcode_mcp import Context, Server, ToolError, audio_content, embedded_resource, image_content, text_content

# A 1x1 red PNG and a minimal WAV file, the suite's own test media.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")

server = Server("shipcode-mcp-conformance", "1.0.0", logging=True, list_changed=True, subscribe=True)


# -- tools ----------------------------------------------------------------------------------------------
@server.tool
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> dict[str, Any]:
    """Returns an image (a 1x1 red PNG)."""
    return image_content(PNG, "image/png")


@server.tool
def test_audio_content() -> dict[str, Any]:
    """Returns audio (a minimal WAV file)."""
    return audio_content(WAV, "audio/wav")


@server.tool
def test_embedded_resource() -> dict[str, Any]:
    """Returns an embedded text resource."""
    return embedded_resource("test://embedded-resource", "This is an embedded resource content.", "text/plain")


@server.tool
def test_multiple_content_types() -> list[dict[str, Any]]:
    """Returns text, an image and an embedded resource together."""
    return [
        text_content("Multiple content types test:"),
        image_content(PNG, "image/png"),
        embedded_resource("test://mixed-content-resource", json.dumps({"test": "data", "value": 123}), "application/json"),
    ]


@server.tool
def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    ctx.info("Tool execution started")
    time.sleep(0.05)
    ctx.info("Tool processing data")
    time.sleep(0.05)
    ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100 when the request carries a progress token."""
    for step in (0, 50, 100):
        if step:
            time.sleep(0.05)
        ctx.report_progress(step, 100, f"Completed step {step} of 100")
    return f"Progress reported with token {ctx.progress_token}"


@server.tool
def test_error_handling() -> str:
    """Always fails, as a tool error the model can see."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool
def test_sampling(ctx: Context, prompt: str) -> str:
    """Asks the client's model to answer `prompt` (sampling/createMessage).

    Args:
        prompt: The prompt to send to the LLM
    """
    result = ctx.sample(prompt, max_tokens=100)
    content = result.get("content", {})
    return f"LLM response: {content.get('text', '') if isinstance(content, dict) else content}"


@server.tool
def test_elicitation(ctx: Context, message: str) -> str:
    """Asks the user for a username and an email address (elicitation/create).

    Args:
        message: The message to show the user
    """
    result = ctx.elicit(message, {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    })
    return f"User response: action={result['action']}, content={json.dumps(result.get('content', {}))}"


# -- MCP 2026-07-28: questions asked in rounds (multi round-trip requests) ---------------------------------
# Each tool asks as it would over 2025-06-18; on a modern request the core answers `input_required` with the
# question under the key given here, and runs the tool again when the client retries with the answer.
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def sampled_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    return str(content.get("text", "")) if isinstance(content, dict) else ""


def accepted(answer: dict[str, Any], field: str) -> Any:
    """The field of an accepted elicitation (its content was checked against the schema), else None."""
    return answer["content"][field] if answer["action"] == "accept" else None


@server.tool
def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (input key user_name) and greets them."""
    name = accepted(ctx.elicit("What is your name?", NAME, key="user_name"), "name")
    return f"Hello, {name}!" if name is not None else "Hello, whoever you are."


@server.tool
def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's model the capital of France (input key capital_question)."""
    result = ctx.sample("What is the capital of France?", max_tokens=100, key="capital_question")
    return f"Sampling result: {sampled_text(result)}"


@server.tool
def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks the client for its roots (input key client_roots) and names them."""
    roots = ctx.list_roots(key="client_roots")
    return f"Found {len(roots)} root(s): " + ", ".join(str(root.get("uri")) for root in roots)


@server.tool
def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation (input key confirm). The answer's round brings back the signed requestState
    the question went out with; the server checked it (signature, request, expiry) before this ran."""
    ok = accepted(ctx.elicit("Please confirm", CONFIRM, key="confirm"), "ok")
    state = "state-ok: requestState verified" if "requestState" in ctx.params else "no requestState"
    return f"{state}; confirmed: {ok is True}"


@server.tool
def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks three things in one round: the user's name, a greeting from the client's model, the client's roots."""
    answers = ctx.request_all({
        "user_name": ("elicitation/create", {"message": "What is your name?", "requestedSchema": NAME}),
        "greeting": ("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}], "maxTokens": 50}),
        "client_roots": ("roots/list", None),
    })
    elicited = answers["user_name"]
    name = elicited.get("content", {}).get("name") if elicited.get("action") == "accept" else None
    roots = answers["client_roots"].get("roots")
    if not isinstance(name, str) or not isinstance(roots, list):
        raise ToolError("The answers do not say a name and a list of roots")
    return f"Name: {name}; Greeting: {sampled_text(answers['greeting'])}; Roots: {len(roots)}"


@server.tool
def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks the user's name (step1), then their favourite colour (step2): three rounds."""
    name = accepted(ctx.elicit("Step 1: What is your name?", NAME, key="step1"), "name")
    colour = accepted(ctx.elicit("Step 2: What is your favorite color?", {
        "type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}, key="step2"), "color")
    return f"Multi-round complete for {name} who likes {colour}"


@server.tool
def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Asks for a confirmation (input key confirm); its requestState is signed (HMAC-SHA256), so a retry
    that alters it is refused (-32602) before this runs again."""
    ok = accepted(ctx.elicit("Please confirm", CONFIRM, key="confirm"), "ok")
    return f"integrity-ok: state verified; confirmed: {ok is True}"


@server.tool
def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only what the client declared it can answer: its user (elicitation), its model (sampling)."""
    questions: dict[str, tuple[str, dict[str, Any] | None]] = {}
    if "elicitation" in ctx.client_capabilities:
        questions["elicit_input"] = ("elicitation/create", {"message": "Elicitation input", "requestedSchema": {
            "type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}})
    if "sampling" in ctx.client_capabilities:
        questions["sample_input"] = ("sampling/createMessage", {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Sample request"}}], "maxTokens": 50})
    if not questions:
        return "No supported capabilities declared"
    return f"capabilities-ok: received {','.join(ctx.request_all(questions))}"


@server.prompt(title="Prompt Asking For Context")
def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user what context to use (input key user_context)."""
    context = accepted(ctx.elicit("What context should the prompt use?", {
        "type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}, key="user_context"), "context")
    return f"Answer with this context in mind: {context or 'none given'}."


# -- MCP 2026-07-28: the stateless probes (server-stateless) --------------------------------------------------
@server.tool
def test_missing_capability(ctx: Context) -> str:
    """Needs the client's model (sampling): a modern client that did not declare it gets -32021."""
    return f"Sampled: {sampled_text(ctx.sample('Say hello.', max_tokens=20))}"


@server.tool
def test_streaming_elicitation(ctx: Context) -> str:
    """Reports progress (with a progress token), then asks the user's name: a modern response stream carries
    the progress and then the round's input_required result, never a request to the client."""
    ctx.report_progress(50, 100, "Asking the user")
    name = accepted(ctx.elicit("What is your name?", NAME, key="user_name"), "name")
    ctx.report_progress(100, 100, "Answered")
    return f"Streaming complete: {name}"


@server.tool
def test_logging_tool(ctx: Context) -> str:
    """Logs at info and debug: a modern request gets the messages only if its _meta asks (logLevel)."""
    ctx.info("Diagnostic trace logging activated")
    ctx.debug("Diagnostic detail")
    return "Logging evaluated"


def test_dynamic_tool() -> str:
    """A tool that test_trigger_tool_change adds and removes in turn."""
    return "Here for now."


def test_dynamic_prompt() -> str:
    """A prompt that test_trigger_prompt_change adds and removes in turn."""
    return "A prompt that comes and goes."


@server.tool
def test_trigger_tool_change() -> str:
    """Adds the tool test_dynamic_tool, or removes it if it is there: clients that listen hear of the change."""
    if "test_dynamic_tool" in server.tools:
        server.remove_tool("test_dynamic_tool")
        return "Removed test_dynamic_tool"
    server.tool(test_dynamic_tool)
    return "Added test_dynamic_tool"


@server.tool
def test_trigger_prompt_change() -> str:
    """Adds the prompt test_dynamic_prompt, or removes it if it is there: clients that listen hear of the change."""
    if "test_dynamic_prompt" in server.prompts:
        server.remove_prompt("test_dynamic_prompt")
        return "Removed test_dynamic_prompt"
    server.prompt(test_dynamic_prompt)
    return "Added test_dynamic_prompt"


# -- MCP 2026-07-28: schemas and headers ----------------------------------------------------------------------
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(name: str | None = None, address: dict[str, str] | None = None, contactMethod: str | None = None,
                             phone: str | None = None, email: str | None = None) -> str:
    """Tool with JSON Schema 2020-12 features ($defs, $ref, allOf/anyOf, if/then/else): arguments are checked against it."""
    given = {key: value for key, value in (("name", name), ("address", address), ("contactMethod", contactMethod),
                                           ("phone", phone), ("email", email)) if value is not None}
    return f"JSON Schema 2020-12 tool called with: {json.dumps(given)}"


@server.tool(input_schema={"type": "object", "properties": {"region": {
    "type": "string", "description": "Where to route the call", "x-mcp-header": "Region"}}, "required": ["region"]})
def test_header_routed(region: str) -> str:
    """Echoes its region, which a 2026-07-28 client mirrors in the Mcp-Param-Region header (checked against it)."""
    return f"Routed to region {region}"


# -- the tasks extension (io.modelcontextprotocol/tasks, SEP-2663): calls that become tasks ----------------
# A tool registered with `tasks=` becomes a task where its handler calls `ctx.run_as_task()`: the client gets
# the task's id at once and polls tasks/get; what the handler returns is the task's result, what it raises
# (other than ToolError) fails the task, and a question it asks parks the task until tasks/update answers it.
@server.tool
def greet(name: str) -> str:
    """Greets by name, at once (never a task)."""
    return f"Hello, {name}!"


@server.tool(tasks="optional")
def slow_compute(ctx: Context, seconds: float, label: str = "") -> str:
    """Sleeps `seconds` (a task when the client has tasks; at once for 0), then says so; cancellable."""
    if seconds > 0 and ctx.run_as_task() and ctx.wait_cancelled(seconds):
        return "cancelled"
    return f"Computed {label or 'result'} after {seconds:g} s"


@server.tool(tasks="required")
def failing_job(ctx: Context) -> str:
    """A task that fails as a tool does (isError) after about a second."""
    ctx.run_as_task()
    ctx.wait_cancelled(1.0)
    raise ToolError("failing_job failed, as it always does")


@server.tool(tasks="required")
def protocol_error_job(ctx: Context) -> str:
    """A task whose handler breaks (a protocol-level error: the task fails)."""
    ctx.run_as_task()
    raise RuntimeError("protocol_error_job broke, as it always does")


@server.tool(tasks="optional")
def confirm_delete(ctx: Context, filename: str) -> str:
    """A task that asks the user to confirm before it "deletes" `filename` (nothing is deleted)."""
    ctx.run_as_task()
    answer = ctx.elicit(f"Delete {filename}?", {"type": "object", "properties": {"confirm": {"type": "boolean"}}},
                        key="confirm")
    confirmed = answer["action"] == "accept" and answer.get("content", {}).get("confirm") is True
    return f"Deleted {filename}" if confirmed else f"Kept {filename}"


@server.tool(tasks="optional")
def multi_input(ctx: Context) -> str:
    """A task that asks two questions at once and answers with both."""
    ctx.run_as_task()
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}}
    answers = ctx.request_all({
        "first": ("elicitation/create", {"message": "First name?", "requestedSchema": schema}),
        "second": ("elicitation/create", {"message": "Second name?", "requestedSchema": schema}),
    })
    names = [answer.get("content", {}).get("name") for answer in (answers["first"], answers["second"])]
    return f"Got {names[0]} and {names[1]}"


@server.tool(tasks="required")
def test_tool_with_task(ctx: Context) -> str:
    """Asks the user's name in rounds (multi round-trip), then goes on as a task that greets them."""
    name = accepted(ctx.elicit("What is your name?", NAME, key="user_name"), "name")
    ctx.run_as_task()
    return f"Hello, {name}, from a task!"


# -- resources --------------------------------------------------------------------------------------------
@server.resource("test://static-text", title="Static Text Resource", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", title="Static Binary Resource", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return PNG


@server.resource("test://template/{id}/data", title="Resource Template", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for any id, substituted from the URI."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", title="Watched Resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# -- prompts ----------------------------------------------------------------------------------------------
@server.prompt(title="Simple Test Prompt")
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt(title="Prompt With Arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(title="Prompt With Embedded Resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed
    """
    return [embedded_resource(resourceUri, "Embedded resource content for testing.", "text/plain"),
            "Please process the embedded resource above."]


@server.prompt(title="Prompt With Image")
def test_prompt_with_image() -> list[Any]:
    """A prompt that includes an image."""
    return [image_content(PNG, "image/png"), "Please analyze the image above."]


@server.completion(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str) -> list[str]:
    return [word for word in ("paris", "park", "party", "test", "testing") if word.startswith(value)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--stateless", action="store_true")
    args = parser.parse_args()
    raise SystemExit(server.run(transport="http", port=args.port, stateless=args.stateless))
