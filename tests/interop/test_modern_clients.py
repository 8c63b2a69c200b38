"""Real modern clients against the real processes: the official Python SDK 2.x `Client` (default mode:
it probes `server/discover` and speaks 2026-07-28 with a modern server; legacy mode: `initialize`) over
stdio and Streamable HTTP, and the official TypeScript SDK 2.x client over HTTP.

The same harness first meets the SDK's own dual-era server (sdk_server.py), which shows the tests can
tell the eras apart: a server that only spoke 2025-06-18 would be negotiated down and fail them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from interop.client_support import (
    LEGACY,
    MODERN,
    MRTR_SERVER,
    SCHEMA,
    SDK_SERVER,
    SHIPCODE,
    Elicitations,
    http_server,
    run_ts_client,
    shipcode_http,
    stdio_params,
)
from workspace_support import git, make_repo

WAIT = 30.0
"""How long a change notification may take on a loaded machine; one that comes early costs no more."""

TRANSPORTS = ["stdio", "http", "http-stateless"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with three commits, a tag and one uncommitted change (README.md)."""
    root = make_repo(tmp_path / "project")
    (root / "README.md").write_text("# Demo\n\nA demo project, changed.\n")
    return root


def every_tool_call(root: Path) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, text its result must contain) for every tool of `--allow-write --allow-run`, reads first."""
    return [
        ("list_files", {}, "src/app.py"),
        ("read_file", {"path": "src/app.py"}, "def greet(name):"),
        ("search_code", {"pattern": r"def \w+"}, "src/app.py:"),
        ("git_status", {}, " M README.md"),
        ("git_log", {"limit": 3}, "Rename util to helpers"),
        ("git_diff", {}, "+A demo project, changed."),
        ("git_show", {"ref": "v1.0", "path": "src/util.py"}, "return 42"),
        ("outline", {"path": "src/app.py"}, "8-9 function def greet(name)"),
        ("find_symbol", {"name": "greet"}, "src/app.py:8-9 function greet"),
        ("repo_map", {}, "src/helpers.py\n     1: def answer()"),
        ("locate", {"query": "the greeting says hello to a name"}, "src/app.py:8-9  greet"),
        ("find_references", {"name": "answer"}, "src/app.py:5:17: return util.answer()"),
        ("find_definition", {"path": "src/app.py", "line": 9, "name": "name"}, "src/app.py:8:11: def greet(name):"),
        ("find_implementations", {"name": "main"}, "main is not a class or a method of one"),
        ("diagnostics", {"path": "src"}, "Nothing found in 2 files under src"),
        ("read_symbol", {"path": "src/app.py", "name": "greet"}, "return f'Hello, {name}!'"),
        ("search_structure", {"pattern": "util.answer()", "language": "python"}, "src/app.py:5:12: util.answer()"),
        ("write_file", {"path": "notes/todo.md", "content": "- ship\n"}, "+- ship"),
        ("edit_file", {"path": "src/app.py", "old_text": "Hello", "new_text": "Hi"}, "+    return f'Hi, {name}!'"),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: src/app.py\n-    return f'Hi, {name}!'\n"
                                  "+    return f'Hey, {name}!'\n*** End Patch"}, "M src/app.py"),
        ("create_directory", {"path": "scratch/sub"}, "Created the folder scratch/sub."),
        ("move_path", {"source": "scratch/sub", "destination": "scratch/moved"}, "Moved the folder scratch/sub"),
        ("delete_path", {"path": "scratch", "recursive": True}, "Deleted scratch (2 folders)."),
        ("replace_symbol", {"path": "src/app.py", "name": "greet", "text": "def greet(name):\n    return f'Hello, {name}!'\n"},
         "Replaced the function greet"),
        ("insert_symbol", {"path": "src/app.py", "name": "greet", "position": "after",
                           "text": "def farewell(name):\n    return f'Bye, {name}!'\n"}, "Inserted the code after the function greet"),
        ("rename_symbol", {"name": "app.farewell", "new_name": "goodbye"}, "Renamed app.farewell to goodbye: 1 use in 1 file."),
        ("git_add", {"paths": ["src/app.py", "notes"]}, "A  notes/todo.md"),
        ("git_commit", {"message": "Say farewell", "author": "Ada Lovelace <ada@example.com>"}, ": Say farewell\n"),
        ("git_branch", {"action": "create", "name": "topic"}, "Created branch topic"),
        ("git_switch", {"branch": "topic"}, "Switched to branch 'topic'"),
        ("git_stash", {"action": "list"}, "No stashes."),
        ("git_restore", {"paths": ["README.md"], "dry_run": True}, "+A demo project, changed."),
        ("run_command", {"command": "git log --format=%s -1 && ls src"}, "Say farewell\napp.py\n"),
    ]


@asynccontextmanager
async def connect(transport: str, server: list[str], *args: str, mode: str = "auto",
                  **options: Any) -> AsyncIterator[Client]:
    """An SDK 2.x Client of `python SERVER ARGS` over `transport`, in negotiation `mode`."""
    if transport == "stdio":
        async with Client(stdio_params(server, *args), mode=mode, **options) as client:
            yield client
        return
    stateless = transport == "http-stateless"
    if server == SHIPCODE:
        serving = shipcode_http(*args, stateless=stateless)
    else:
        serving = http_server(server, *args, *(["--stateless"] if stateless else []))
    with serving as url:
        async with Client(url, mode=mode, **options) as client:
            yield client


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


# -- the harness against the SDK's own dual-era server ----------------------------------------------------

@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_harness_tells_the_eras_apart_on_the_sdk_server(transport: str) -> None:
    """Default mode gets 2026-07-28 and an MRTR round trip; legacy mode the handshake and a server request."""
    async def main() -> None:
        for mode, version, asked_by in (("auto", MODERN, ["mrtr"]), ("legacy", "2025-11-25", ["request"])):
            elicitations = Elicitations()
            async with connect(transport, SDK_SERVER, mode=mode, elicitation_callback=elicitations) as client:
                assert client.protocol_version == version
                result = await client.call_tool("confirm", {"question": "Proceed?"})
                assert text_of(result) == "accept: {'ok': True}"
                assert elicitations.asked_by() == asked_by and elicitations.asked[0][1] == "Proceed?"

    run(main)


def test_the_typescript_harness_tells_the_eras_apart_on_the_sdk_server() -> None:
    with http_server(SDK_SERVER) as url:
        modern = run_ts_client(url, {"mode": "auto", "calls": [{"name": "confirm", "arguments": {"question": "Go?"}}],
                                     "reads": ["file:///proof/hello.txt"]})
        legacy = run_ts_client(url, {"mode": "legacy", "calls": [{"name": "confirm", "arguments": {"question": "Go?"}}]})
    assert "error" not in modern and modern["protocolVersion"] == MODERN
    assert [(m["method"], m["hasInputResponses"]) for m in modern["wire"] if m["method"] == "tools/call"] == [
        ("tools/call", False), ("tools/call", True)]
    assert modern["reads"][0]["contents"][0]["text"] == "hello\n"
    assert "error" not in legacy and legacy["protocolVersion"] == "2025-11-25"
    assert any(m["isResponse"] for m in legacy["wire"])


# -- shipcode-mcp, Python SDK 2.x -----------------------------------------------------------------------------

@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("mode", "version"), [("auto", MODERN), ("legacy", LEGACY)])
def test_python_sdk_lists_and_calls_every_tool_and_reads_resources(repo: Path, transport: str, mode: str,
                                                                    version: str) -> None:
    calls = every_tool_call(repo)

    async def main() -> None:
        async with connect(transport, SHIPCODE, "--allow-write", "--allow-run", str(repo), mode=mode) as client:
            assert client.protocol_version == version
            assert client.server_info is not None and client.server_info.name == "shipcode-mcp"
            if version == MODERN:  # server/discover's metadata and instructions; the 2025-06-18 answer has neither
                assert (client.server_info.title, client.server_info.website_url) == (
                    "shipcode-mcp", "https://shipcode-mcp.github.io/shipcode-mcp/")
                assert client.server_info.icons and client.server_info.icons[0].mime_type == "image/svg+xml"
                assert client.instructions is not None and "find_references" in client.instructions
            else:
                assert client.server_info.title is None and client.instructions is None
            listed = await client.list_tools()
            assert sorted(tool.name for tool in listed.tools) == sorted(name for name, _, _ in calls)
            for name, arguments, expected in calls:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, text_of(result))
                assert expected in text_of(result), (name, text_of(result))
                assert result.structured_content is not None, name
            resources = await client.list_resources()
            uris = {resource.name: str(resource.uri) for resource in resources.resources}
            assert {"README.md", "src/app.py", "notes/todo.md"} <= set(uris), uris
            read = await client.read_resource(uris["README.md"])
            assert [(str(c.uri), getattr(c, "text", None)) for c in read.contents] == [
                (uris["README.md"], "# Demo\n\nA demo project, changed.\n")]
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [f"{repo.resolve().as_uri()}/{{+path}}"]

    run(main)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("mode", "version"), [("auto", MODERN), ("legacy", LEGACY)])
def test_python_sdk_gets_prompts_completions_and_links(repo: Path, transport: str, mode: str, version: str) -> None:
    """--prompts: the SDK sees the capabilities, lists the prompts, gets each and completes paths, in both eras;
    --resource-links: a result's links are the SDK's ResourceLink, and read."""
    template = f"{repo.resolve().as_uri()}/{{+path}}"

    async def main() -> None:
        async with connect(transport, SHIPCODE, "--prompts", "--resource-links", str(repo), mode=mode) as client:
            assert client.protocol_version == version
            capabilities = client.server_capabilities
            assert capabilities is not None and capabilities.prompts is not None and capabilities.completions is not None
            listed = await client.list_prompts()
            assert [prompt.name for prompt in listed.prompts] == ["review_changes", "explain_symbol", "path_history"]
            review = await client.get_prompt("review_changes")
            assert "+A demo project, changed." in review.messages[3].content.text  # type: ignore[union-attr]
            explained = await client.get_prompt("explain_symbol", {"name": "greet"})
            assert "return f'Hello, {name}!'" in explained.messages[2].content.text  # type: ignore[union-attr]
            history = await client.get_prompt("path_history", {"path": "src/app.py", "limit": "5"})
            assert "Add greeting" in history.messages[1].content.text  # type: ignore[union-attr]
            paths = await client.complete(types.ResourceTemplateReference(uri=template), {"name": "path", "value": "src/"})
            assert paths.completion.values == ["src/app.py", "src/helpers.py"]
            argument = await client.complete(types.PromptReference(name="path_history"), {"name": "path", "value": "d"})
            assert argument.completion.values == ["docs/"]
            found = await client.call_tool("find_symbol", {"name": "greet"})
            link = found.content[1]
            assert isinstance(link, types.ResourceLink) and link.name == "src/app.py"
            read = await client.read_resource(str(link.uri))
            assert "def greet(name):" in read.contents[0].text  # type: ignore[union-attr]

    run(main)


def test_typescript_client_gets_prompts_completions_and_links(repo: Path) -> None:
    """The TypeScript SDK 2.x client over HTTP, modern and legacy: the same prompts, completions and links."""
    plan = {"calls": [{"name": "find_symbol", "arguments": {"name": "greet"}}],
            "prompts": [{"name": "review_changes"}, {"name": "path_history", "arguments": {"path": "src/app.py"}}],
            "completions": [{"ref": {"type": "ref/resource", "uri": f"{repo.resolve().as_uri()}/{{+path}}"},
                             "argument": {"name": "path", "value": "src/a"}},
                            {"ref": {"type": "ref/prompt", "name": "review_changes"},
                             "argument": {"name": "staged", "value": "f"}}]}
    with shipcode_http("--prompts", "--resource-links", str(repo)) as url:
        for mode, version in (("auto", MODERN), ("legacy", LEGACY)):
            report = run_ts_client(url, {"mode": mode, **plan})
            assert "error" not in report, report["error"]
            assert report["protocolVersion"] == version
            assert [prompt["name"] for prompt in report["promptList"]] == ["review_changes", "explain_symbol", "path_history"]
            review, history = report["prompts"]
            assert "+A demo project, changed." in review["messages"][3]["content"]["text"]
            assert "Rename util to helpers" not in history["messages"][1]["content"]["text"]
            assert "Add greeting" in history["messages"][1]["content"]["text"]
            assert [c["completion"]["values"] for c in report["completions"]] == [["src/app.py"], ["false"]]
            link = report["calls"][0]["result"]["content"][1]
            assert (link["type"], link["uri"], link["name"]) == ("resource_link", (repo / "src" / "app.py").resolve().as_uri(),
                                                                 "src/app.py")


SKILL_MD = """---
name: review
description: Review a change the way this team does.
license: Apache-2.0
metadata:
  version: "1.0"
allowed-tools: read_file git_diff
---
# Review

Read references/CHECKLIST.md first.
"""


def test_typescript_skills_client_lists_gets_and_verifies_the_workspaces_skills(repo: Path) -> None:
    """--skills, against the official TypeScript client of the Skills extension: it finds the declaration in
    server/discover, lists and gets the skill, and reads SKILL.md and a supporting file, checking each one's
    size and SHA-256 digest and the frontmatter against its own YAML reading, and reads the skill's folder
    (resources/directory/read). An invalid skill is not listed."""
    skill = repo / ".claude" / "skills" / "review"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "references" / "CHECKLIST.md").write_text("- tests\n- docs\n")
    (repo / "tools" / "misnamed").mkdir(parents=True)
    (repo / "tools" / "misnamed" / "SKILL.md").write_text("---\nname: other\ndescription: Its folder is not its name.\n---\n")
    with shipcode_http("--skills", str(repo)) as url:
        report = run_ts_client(url, {"mode": "auto", "skills": ["references/CHECKLIST.md"]})
    assert "error" not in report, report["error"]
    assert report["skillsSupported"] is True and report["skillsInvalid"] == []
    assert report["skills"] == [{
        "uri": "skill://project/.claude/skills/review/SKILL.md", "name": "review", "cacheScope": "private",
        "files": [{"ref": "SKILL.md", "verified": True, "uri": "skill://project/.claude/skills/review/SKILL.md",
                   "frontmatter": {"name": "review", "description": "Review a change the way this team does.",
                                   "license": "Apache-2.0", "metadata": {"version": "1.0"},
                                   "allowed-tools": "read_file git_diff"},
                   "text": SKILL_MD},
                  {"ref": "references/CHECKLIST.md", "verified": True,
                   "uri": "skill://project/.claude/skills/review/references/CHECKLIST.md", "frontmatter": None,
                   "text": "- tests\n- docs\n"}],
        "directory": [["SKILL.md", "text/markdown"], ["references", "inode/directory"]]}]


FRONTMATTERS = {  # YAML the official reader and the server both read, each its own way of writing
    "comments": "# a comment\nname: comments  # after the value\ndescription: 'a # in quotes'\n",
    "block-literal": "name: block-literal\ndescription: |\n  First line.\n  Second line.\n",
    "block-folded": "name: block-folded\ndescription: >-\n  Folded\n  into one.\n",
    "plain-lines": "name: plain-lines\ndescription: a plain value\n  over two lines\n",
    "flow": "name: flow\ndescription: Flow values.\ntags: [a, 'b c', 3]\nmetadata: {owner: team, tier: '1'}\n",
    "typed": "name: typed\ndescription: Typed.\nflags: [yes, on, true, ~, 012, 0x1F, 1e3, -2.5, .5]\n",
    "nested": "name: nested\ndescription: Nested.\nx:\n  - a: 1\n    b: [2]\n  - - deep\n",
    "escapes": "name: escapes\ndescription: \"tab\\there \\u00e9 \\\"quoted\\\"\"\n",
    "unicode": "name: unicode\ndescription: Émoji ✓ and 中文\n",
    "crlf": "name: crlf\r\ndescription: Windows line ends.\r\n",
}


def test_the_official_skills_client_verifies_every_skill_the_server_lists(tmp_path: Path) -> None:
    """Each frontmatter the server serves, the official client reads again and finds identical to the entry (a
    frontmatter PyYAML reads otherwise than the official reader is no skill: tests/workspace/test_skills.py)."""
    root = tmp_path / "forms"
    for name, yaml_text in FRONTMATTERS.items():
        (root / name).mkdir(parents=True)
        body = "---\r\n" if name == "crlf" else "---\n"
        (root / name / "SKILL.md").write_bytes(("\ufeff" if name == "unicode" else "").encode() + (
            body + yaml_text + body + "# Body\n").encode())
    with shipcode_http("--skills", str(root)) as url:
        report = run_ts_client(url, {"mode": "auto", "skills": []})
    assert "error" not in report, report["error"]
    assert report["skillsInvalid"] == []
    assert sorted(skill["uri"] for skill in report["skills"]) == sorted(f"skill://forms/{name}/SKILL.md" for name in FRONTMATTERS)
    assert [skill for skill in report["skills"] if "error" in skill or skill["files"][0]["verified"] is not True] == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_sdk_listens_for_resource_updates(repo: Path, transport: str) -> None:
    """subscriptions/listen with --watch: a change to a subscribed file and a new file are both heard."""
    async def main() -> None:
        async with connect(transport, SHIPCODE, "--watch", str(repo)) as client:
            assert client.protocol_version == MODERN
            listed = await client.list_resources(cache_mode="bypass")
            uri = next(str(r.uri) for r in listed.resources if r.name == "src/app.py")
            async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as subscription:
                assert subscription.honored.resource_subscriptions == [uri]
                assert subscription.honored.resources_list_changed is True
                # A listing returns once the watcher runs: the changes below cannot come too early.
                await client.list_resources(cache_mode="bypass")
                with (repo / "src" / "app.py").open("a") as changed:
                    changed.write("# changed\n")
                (repo / "src" / "new.py").write_text("x = 1\n")
                heard: list[object] = []
                with anyio.fail_after(WAIT):
                    async for event in subscription:
                        heard.append(event)
                        if ResourceUpdated(uri=uri) in heard and ResourcesListChanged() in heard:
                            break
                assert all(event in (ResourceUpdated(uri=uri), ResourcesListChanged()) for event in heard), heard

    run(main)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_sdk_mrtr_round_trip_with_our_library(transport: str) -> None:
    """A tool that calls ctx.elicit: a modern client gets input_required, answers, and gets the result."""
    async def main() -> None:
        elicitations = Elicitations()
        async with connect(transport, MRTR_SERVER, elicitation_callback=elicitations) as client:
            assert client.protocol_version == MODERN
            result = await client.call_tool("confirm", {"question": "Ship it?"})
            assert not result.is_error and text_of(result) == "accept: ok=True"
            assert elicitations.asked_by() == ["mrtr"] and elicitations.asked[0][1] == "Ship it?"

    run(main)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_python_sdk_legacy_mode_elicits_with_a_server_request(transport: str) -> None:
    async def main() -> None:
        elicitations = Elicitations()
        async with connect(transport, MRTR_SERVER, mode="legacy", elicitation_callback=elicitations) as client:
            assert client.protocol_version == LEGACY
            result = await client.call_tool("confirm", {"question": "Ship it?"})
            assert not result.is_error and text_of(result) == "accept: ok=True"
            assert elicitations.asked_by() == ["request"]

    run(main)


# -- shipcode-mcp, TypeScript SDK 2.x over HTTP ---------------------------------------------------------------

@pytest.mark.parametrize("stateless", [False, True], ids=["http", "http-stateless"])
def test_typescript_client_negotiates_modern_calls_every_tool_reads_and_listens(repo: Path, stateless: bool) -> None:
    calls = every_tool_call(repo)
    app = repo / "src" / "app.py"
    with shipcode_http("--allow-write", "--allow-run", "--watch", str(repo), stateless=stateless) as url:
        report = run_ts_client(url, {
            "mode": "auto",
            "calls": [{"name": name, "arguments": arguments} for name, arguments, _ in calls],
            "reads": [(repo / "README.md").resolve().as_uri()],
            "listen": {"uri": app.resolve().as_uri(), "touch": str(app)},
        })
    assert "error" not in report, report.get("error")
    assert report["protocolVersion"] == MODERN
    assert report["serverInfo"]["name"] == "shipcode-mcp"
    assert report["serverInfo"]["description"].startswith("Files, code search and git history")
    assert report["serverInfo"]["icons"][0]["sizes"] == ["any"]
    assert "edit_file" in report["instructions"] and "find_symbol" in report["instructions"]
    assert sorted(tool["name"] for tool in report["tools"]) == sorted(name for name, _, _ in calls)
    for (name, _, expected), call in zip(calls, report["calls"], strict=True):
        assert call["name"] == name and call["result"]["isError"] is False, call
        assert expected in call["result"]["content"][0]["text"], call
    assert report["reads"][0]["contents"][0]["text"] == "# Demo\n\nA demo project, changed.\n"
    assert report["honoredFilter"]["resourceSubscriptions"] == [app.resolve().as_uri()]
    listen_ids = [m["id"] for m in report["wire"] if m.get("method") == "subscriptions/listen"]
    assert report["events"][0] == {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_ids[0]},
                                   "uri": app.resolve().as_uri()}
    # Every message the client sent was a modern request: no initialize, no session.
    assert {m["method"] for m in report["wire"]} >= {"server/discover", "tools/list", "tools/call", "resources/read",
                                                   "subscriptions/listen"}
    assert "initialize" not in {m["method"] for m in report["wire"]}
    assert all(m["protocolVersionMeta"] == MODERN for m in report["wire"] if not m["isResponse"] and m["id"] is not None)
    assert not any("mcp-session-id" in m["headers"] for m in report["wire"])


@pytest.mark.parametrize("stateless", [False, True], ids=["http", "http-stateless"])
def test_typescript_client_mrtr_round_trip_with_our_library(stateless: bool) -> None:
    with http_server(MRTR_SERVER, *(["--stateless"] if stateless else [])) as url:
        report = run_ts_client(url, {"mode": "auto", "calls": [{"name": "confirm", "arguments": {"question": "Ship it?"}}]})
    assert "error" not in report, report.get("error")
    assert report["protocolVersion"] == MODERN
    assert report["calls"][0]["result"]["content"][0]["text"] == "accept: ok=True"
    assert report["elicitations"] == [{"message": "Ship it?", "requestedSchema": SCHEMA}]
    # The round trip on the wire: the call is answered input_required, then its retry carries the answer
    # (and the requestState, exactly when the server gave one) and is answered complete.
    first, final = (message["result"] for message in report["received"])
    assert first["resultType"] == "input_required" and list(first["inputRequests"].values()) == [{
        "method": "elicitation/create", "params": {"message": "Ship it?", "requestedSchema": SCHEMA}}]
    assert final["resultType"] == "complete" and final["content"][0]["text"] == "accept: ok=True"
    assert [(m["hasInputResponses"], m["hasRequestState"]) for m in report["wire"] if m["method"] == "tools/call"] == [
        (False, False), (True, "requestState" in first)]
    assert not any(m["isResponse"] for m in report["wire"])


def test_typescript_client_legacy_mode_keeps_working() -> None:
    with http_server(MRTR_SERVER) as url:
        report = run_ts_client(url, {"mode": "legacy", "calls": [{"name": "confirm", "arguments": {"question": "Ship it?"}}]})
    assert "error" not in report, report.get("error")
    assert report["protocolVersion"] == LEGACY
    assert report["calls"][0]["result"]["content"][0]["text"] == "accept: ok=True"
    assert [m["method"] for m in report["wire"] if not m["isResponse"]][:2] == ["initialize", "notifications/initialized"]
    assert sum(m["isResponse"] for m in report["wire"]) == 1  # the elicitation's answer, POSTed back


def test_git_history_of_the_fixture(repo: Path) -> None:
    """The fixture is what the tool expectations above assume."""
    assert git(repo, "status", "--porcelain") == " M README.md\n"
    assert git(repo, "log", "--format=%s").splitlines() == ["Rename util to helpers", "Add greeting", "Initial commit"]
