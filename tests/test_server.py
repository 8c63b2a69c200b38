"""The library API: decorators, capabilities derived from what is registered, and what clients see."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from typing import Any, TypedDict

import pytest

from core_support import Driver
from shipcode_mcp import (
    Context,
    Prompt,
    Resource,
    Server,
    Tool,
    ToolError,
    ToolResult,
    embedded_resource,
    image_content,
    text_content,
)
from support import REPO, McpProcess, validate_definition


class Client:
    """A session driven like a client would, deferred work run at once."""

    def __init__(self, server: Server) -> None:
        self.driver = Driver(server)
        self.session = self.driver.session
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        self.driver.receive({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        return self.driver.request(self.next_id, method, params)

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.request(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        result = self.result("tools/call", {"name": tool, "arguments": arguments})
        validate_definition("CallToolResult", result)
        return result


class Weather(TypedDict):
    city: str
    high: float


@dataclasses.dataclass
class Reading:
    value: float
    unit: str = "C"


def build() -> Server:
    server = Server("lib", "2.0", title="Library test", instructions="Be nice.")

    @server.tool
    def add(a: int, b: int = 1) -> int:
        """Add two integers."""
        return a + b

    @server.tool(name="weather", title="Weather", annotations={"readOnlyHint": True})
    def get_weather(city: str) -> Weather:
        """Today's weather."""
        return {"city": city, "high": 21.5}

    @server.tool
    def reading() -> Reading:
        return Reading(3.5)

    @server.tool
    def greet(name: str) -> str:
        return f"hello {name}"

    @server.tool
    def picture() -> list[dict[str, Any]]:
        return [text_content("a picture:"), image_content(b"\x89PNG", "image/png")]

    @server.tool
    def refuse() -> str:
        raise ToolError("no, and here is why")

    @server.tool
    def crash() -> str:
        raise RuntimeError("a bug")

    @server.tool
    def liar() -> int:
        return "not a number"  # type: ignore[return-value]

    @server.tool
    def explicit_result() -> ToolResult:
        return ToolResult([text_content("partial")], is_error=True)

    @server.tool(input_schema={"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}},
                 output_schema={"type": "object", "properties": {"doubled": {"type": "integer"}}})
    def double(**arguments: Any) -> dict[str, int]:
        return {"doubled": 2 * arguments.get("n", 0)}

    @server.tool
    async def slow_echo(ctx: Context, text: str) -> str:
        await asyncio.sleep(0.01)
        ctx.report_progress(1, 1)
        return text

    return server


def test_tools_list_shows_derived_schemas_and_every_tool_fits_the_spec() -> None:
    tools = {t["name"]: t for t in Client(build()).result("tools/list")["tools"]}
    for tool in tools.values():
        validate_definition("Tool", tool)
    assert tools["add"] == {
        "name": "add", "description": "Add two integers.",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 1}},
                        "required": ["a"]},
        "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
    }
    assert list(tools["weather"]) == ["name", "title", "description", "inputSchema", "outputSchema", "annotations"]
    assert tools["weather"]["annotations"] == {"readOnlyHint": True}
    assert "outputSchema" not in tools["greet"] and "outputSchema" not in tools["picture"]
    assert tools["double"]["inputSchema"]["properties"]["n"]["minimum"] == 0


def test_tool_results() -> None:
    client = Client(build())
    assert client.call("add", a=2) == {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3},
                                        "isError": False}
    assert client.call("weather", city="Lima")["structuredContent"] == {"city": "Lima", "high": 21.5}
    assert client.call("reading")["structuredContent"] == {"value": 3.5, "unit": "C"}
    assert client.call("greet", name="Ann") == {"content": [{"type": "text", "text": "hello Ann"}], "isError": False}
    assert [c["type"] for c in client.call("picture")["content"]] == ["text", "image"]
    assert client.call("refuse") == {"content": [{"type": "text", "text": "no, and here is why"}], "isError": True}
    assert client.call("explicit_result") == {"content": [{"type": "text", "text": "partial"}], "isError": True}
    assert client.call("double", n=4)["structuredContent"] == {"doubled": 8}
    assert client.call("slow_echo", text="hi")["content"] == [{"type": "text", "text": "hi"}]


def test_bad_arguments_are_a_tool_error_and_bugs_an_internal_error(capsys: pytest.CaptureFixture[str]) -> None:
    client = Client(build())
    assert client.call("add", a="two")["isError"] is True
    assert client.call("double", n=-1)["isError"] is True
    assert client.request("tools/call", {"name": "crash"})["error"] == {"code": -32603, "message": "Internal error"}
    assert "RuntimeError: a bug" in capsys.readouterr().err
    liar = client.call("liar")
    assert liar["isError"] is True and "outputSchema" in liar["content"][0]["text"]


def test_capabilities_are_exactly_what_is_registered_and_asked_for() -> None:
    assert Client(Server("s", "1")).request("initialize")["result"]["capabilities"] == {}
    server = Server("s", "1", logging=True, list_changed=True, subscribe=True)
    assert Client(server).request("initialize")["result"]["capabilities"] == {"logging": {}}
    server.tool(lambda: None, name="t")
    server.resource("test://r")(lambda: "r")
    server.prompt(lambda: "p", name="p")
    assert Client(server).request("initialize")["result"] == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
                         "prompts": {"listChanged": True}, "logging": {}},
        "serverInfo": {"name": "s", "version": "1"}}
    server.completion(prompt="p", argument="x")(lambda value: [])
    assert "completions" in Client(server).request("initialize")["result"]["capabilities"]
    result = Client(build()).request("initialize")["result"]
    assert result["serverInfo"] == {"name": "lib", "version": "2.0", "title": "Library test"}
    assert result["instructions"] == "Be nice."


def resources_server() -> Server:
    server = Server("s", "1")

    @server.resource("memo://readme", title="Read me", mime_type="text/markdown", size=7)
    def readme() -> str:
        """The project's notes."""
        return "# Notes"

    @server.resource("memo://logo", mime_type="image/png")
    def logo() -> bytes:
        return b"\x89PNG"

    @server.resource("memo://users/{user}/notes/{+path}", mime_type="text/plain")
    def note(user: str, path: str, uri: str) -> str:
        return f"{user}:{path} ({uri})"

    @server.resource("memo://many", inline=True)
    def many(ctx: Context) -> list[dict[str, Any]]:
        return [{"uri": "memo://many/1", "text": "one"}, {"uri": "memo://many/2", "blob": "AA=="}]

    return server


def test_resources_templates_and_reads() -> None:
    client = Client(resources_server())
    listed = client.result("resources/list")
    validate_definition("ListResourcesResult", listed)
    assert listed["resources"][0] == {"uri": "memo://readme", "name": "readme", "title": "Read me",
                                      "description": "The project's notes.", "mimeType": "text/markdown", "size": 7}
    templates = client.result("resources/templates/list")
    validate_definition("ListResourceTemplatesResult", templates)
    assert templates["resourceTemplates"] == [{"uriTemplate": "memo://users/{user}/notes/{+path}", "name": "note",
                                               "mimeType": "text/plain"}]
    assert client.result("resources/read", {"uri": "memo://readme"}) == {
        "contents": [{"uri": "memo://readme", "mimeType": "text/markdown", "text": "# Notes"}]}
    assert client.result("resources/read", {"uri": "memo://logo"})["contents"][0]["blob"] == "iVBORw=="
    uri = "memo://users/a%20b/notes/x/y.txt"
    assert client.result("resources/read", {"uri": uri})["contents"][0]["text"] == f"a b:x/y.txt ({uri})"
    assert len(client.driver.receive({"jsonrpc": "2.0", "id": 99, "method": "resources/read",
                                       "params": {"uri": "memo://many"}})[0]["result"]["contents"]) == 2  # inline
    missing = client.request("resources/read", {"uri": "memo://nothing"})
    assert missing["error"] == {"code": -32002, "message": "Resource not found", "data": {"uri": "memo://nothing"}}


def test_a_template_function_must_take_the_templates_variables() -> None:
    server = Server("s", "1")
    with pytest.raises(TypeError, match="unused variables: \\['id'\\]"):
        server.resource("x://{id}")(lambda: "x")
    with pytest.raises(TypeError, match="unbound parameters: \\['other'\\]"):
        server.resource("x://{id}")(lambda id, other: "x")


def prompts_server() -> Server:
    server = Server("s", "1")

    @server.prompt
    def review(code: str, language: str = "python") -> str:
        """Review some code.

        Args:
            code: the code to review
            language: its language
        """
        return f"Review this {language}: {code}"

    @server.prompt(title="Show")
    def show(ctx: Context) -> list[Any]:
        return [image_content(b"img", "image/png"), "What is this?",
                {"role": "assistant", "content": text_content("A picture.")},
                embedded_resource("memo://x", "text")]

    @server.prompt
    def whole() -> dict[str, Any]:
        return {"description": "custom", "messages": [{"role": "user", "content": text_content("hi")}]}

    @server.prompt
    def broken() -> Any:
        return [{"role": "narrator", "content": text_content("x")}]

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return [lang for lang in ("python", "perl", "php", "rust") if lang.startswith(value)]

    @server.completion(prompt="review", argument="code")
    def many(value: str, chosen: dict[str, str]) -> list[str]:
        return [f"{chosen.get('language', '?')}{n}" for n in range(150)]

    @server.resource("memo://users/{user}")
    def user(user: str) -> str:
        return user

    @server.completion(resource="memo://users/{user}", argument="user")
    def users(value: str) -> list[str]:
        return ["ann", "bob"]

    return server


def test_prompts_list_and_get() -> None:
    client = Client(prompts_server())
    listed = client.result("prompts/list")
    validate_definition("ListPromptsResult", listed)
    assert listed["prompts"][0] == {"name": "review", "description": "Review some code.", "arguments": [
        {"name": "code", "description": "the code to review", "required": True},
        {"name": "language", "description": "its language"}]}
    assert listed["prompts"][1] == {"name": "show", "title": "Show"}
    got = client.result("prompts/get", {"name": "review", "arguments": {"code": "x = 1"}})
    validate_definition("GetPromptResult", got)
    assert got == {"description": "Review some code.",
                   "messages": [{"role": "user", "content": {"type": "text", "text": "Review this python: x = 1"}}]}
    shown = client.result("prompts/get", {"name": "show"})
    validate_definition("GetPromptResult", shown)
    assert [(m["role"], m["content"]["type"]) for m in shown["messages"]] == [
        ("user", "image"), ("user", "text"), ("assistant", "text"), ("user", "resource")]
    assert client.result("prompts/get", {"name": "whole"})["description"] == "custom"


@pytest.mark.parametrize(("params", "code"), [
    ({"name": "review"}, -32602), ({"name": "review", "arguments": {"code": 5}}, -32602), ({"name": "nope"}, -32602),
    ({"name": "broken"}, -32603),
])
def test_prompt_errors(params: dict[str, Any], code: int) -> None:
    assert Client(prompts_server()).request("prompts/get", params)["error"]["code"] == code


def test_completions() -> None:
    client = Client(prompts_server())

    def complete(ref: dict[str, Any], name: str, value: str, chosen: dict[str, str] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
        if chosen is not None:
            params["context"] = {"arguments": chosen}
        result = client.result("completion/complete", params)
        validate_definition("CompleteResult", result)
        return result["completion"]

    prompt = {"type": "ref/prompt", "name": "review"}
    assert complete(prompt, "language", "p") == {"values": ["python", "perl", "php"], "total": 3, "hasMore": False}
    many = complete(prompt, "code", "", {"language": "go"})
    assert many["values"][:2] == ["go0", "go1"] and len(many["values"]) == 100
    assert many["total"] == 150 and many["hasMore"] is True
    assert complete(prompt, "unknown-argument", "") == {"values": [], "total": 0, "hasMore": False}
    assert complete({"type": "ref/resource", "uri": "memo://users/{user}"}, "user", "") == {
        "values": ["ann", "bob"], "total": 2, "hasMore": False}
    for ref in ({"type": "ref/prompt", "name": "nope"}, {"type": "ref/resource", "uri": "memo://none/{x}"}, {"type": "x"}):
        reply = client.request("completion/complete", {"ref": ref, "argument": {"name": "a", "value": ""}})
        assert reply["error"]["code"] == -32602


def test_completion_needs_exactly_one_target() -> None:
    with pytest.raises(TypeError):
        Server("s", "1").completion(argument="a")
    with pytest.raises(TypeError):
        Server("s", "1").completion(argument="a", prompt="p", resource="r")


def test_run_refuses_an_unknown_transport() -> None:
    with pytest.raises(ValueError, match="unknown transport"):
        Server("s", "1").run(transport="carrier-pigeon")


def test_the_fifteen_line_example_serves_over_stdio() -> None:
    example = REPO / "examples" / "hello_server.py"
    assert len(example.read_text().splitlines()) == 15
    with McpProcess(command=[sys.executable, str(example)]) as server:
        init = server.initialize()
        assert init["result"]["capabilities"] == {"tools": {}, "resources": {}, "logging": {}}
        result = server.call_tool("forecast", {"city": "Lima", "days": 2})
        assert result["structuredContent"] == {"result": [18.0, 20.5]}
        assert server.notifications[0]["params"] == {"level": "info", "data": "forecasting 2 days for Lima"}
        text = server.request("resources/read", {"uri": "weather://cities"})["result"]["contents"][0]["text"]
        assert text == "Paris\nTokyo\nLima"
        assert server.close() == 0


def test_importing_the_library_loads_nothing_it_does_not_use() -> None:
    code = ("import sys, shipcode_mcp; from shipcode_mcp import Server; s = Server('s', '1'); "
            "print(sorted(m for m in ('typing', 'inspect', 'asyncio', 'dataclasses', 'starlette', 'uvicorn') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(REPO / "src")})
    assert done.stdout.strip() == "[]"


def test_plain_decorated_handlers_start_without_typing_inspect_or_dataclasses() -> None:
    """typing, inspect and dataclasses stay out of start-up (docs/performance.md: the fast paths): plain functions are read without them."""
    code = """
import sys
from shipcode_mcp import Context, Server

server = Server("s", "1")

@server.tool(inline=True)
def echo(text: str) -> str:
    "Return the text you send."
    return text

@server.tool
async def pick(ctx: Context, items: list[int], limit: int | None = None, *, tags: dict[str, float] = {}) -> list[int]:
    "Pick items.\\n\\n    Args:\\n        items: the items\\n    "
    return items

@server.resource("notes://{name}")
def note(name: str) -> str:
    return name

@server.prompt
def review(code: str, style: str = "short") -> str:
    return code

assert server.tools["pick"].input_schema["properties"]["items"] == {"type": "array", "items": {"type": "integer"},
                                                                    "description": "the items"}
print(sorted(m for m in ("typing", "inspect", "dataclasses") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(REPO / "src")})
    assert done.stdout.strip() == "[]"


def test_the_echo_example_answers_without_typing_inspect_or_dataclasses() -> None:
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}]
    done = subprocess.run([sys.executable, "-X", "importtime", str(REPO / "examples" / "echo_server.py")],
                          input="".join(json.dumps(r) + "\n" for r in requests), capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": str(REPO / "src")}, timeout=30)
    assert json.loads(done.stdout.splitlines()[-1])["result"]["content"] == [{"type": "text", "text": "hi"}]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "shipcode_mcp.signature" in imported
    assert not imported & {"typing", "inspect", "dataclasses"}


def test_offers_agrees_with_capabilities_in_every_configuration() -> None:
    """`Server.offers` answers what `capabilities()` says, without building it (the modern path asks on
    every request): every combination of what can be registered and enabled."""
    import itertools

    from shipcode_mcp.methods import METHODS

    needs = {entry.needs for entry in METHODS.values() if entry.needs} | {
        ("tools", "listChanged"), ("resources", "listChanged"), ("prompts", "listChanged"), ("experimental",)}
    for tool, resource, prompt, completer, logging, list_changed, subscribe in itertools.product((False, True), repeat=7):
        server = Server("s", "1", logging=logging, list_changed=list_changed, subscribe=subscribe)
        if tool:
            server.add_tool(Tool("t", lambda ctx, args: "x"))
        if resource:
            server.add_resource(Resource("mem://r", "r", reader=lambda ctx, uri: "x"))
        if prompt:
            server.add_prompt(Prompt("p", lambda ctx, args: "x"))
        if completer:
            server.add_completer("ref/prompt", "p", "a", lambda value, known: [])
        capabilities = server.capabilities()
        for need in needs:
            offered = capabilities.get(need[0])
            expected = offered is not None and (len(need) == 1 or bool(offered.get(need[1])))
            assert server.offers(*need) is expected, (need, capabilities)
