"""What each request needs: `shipcode:read` for everything, `shipcode:write` as well for a tool that is not
marked read-only, read from the real workspace tools' annotations (so a new write tool needs write
without anyone remembering to list it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp import Server
from shipcode_mcp.auth.scopes import READ, SUPPORTED, WRITE, missing, needed, offered
from shipcode_mcp.cli import build_server


def call(name: Any, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": {}} if params is None else params}


def test_the_scopes_are_read_and_write() -> None:
    assert (READ, WRITE) == ("shipcode:read", "shipcode:write") == SUPPORTED


def test_the_workspace_write_tools_need_write_and_every_other_tool_read_only(tmp_path: Path) -> None:
    server = build_server([str(tmp_path)], allow_write=True)
    names = sorted(server.tools)
    writers = [name for name in names if needed(server, call(name)) == (READ, WRITE)]
    readers = [name for name in names if needed(server, call(name)) == (READ,)]
    assert writers == ["apply_patch", "create_directory", "delete_path", "edit_file", "git_add", "git_branch",
                       "git_commit", "git_restore", "git_stash", "git_switch", "insert_symbol", "move_path",
                       "rename_symbol", "replace_symbol", "write_file"]
    assert len(readers) == len(names) - 15 and "read_file" in readers and "git_status" in readers
    for name in readers:
        assert server.tools[name].annotations["readOnlyHint"] is True  # type: ignore[index]


def test_a_tool_is_read_only_only_when_its_annotations_say_so() -> None:
    server = Server("scopes", "1")

    @server.tool(annotations={"readOnlyHint": True})
    def look() -> str:
        return "seen"

    @server.tool(annotations={"readOnlyHint": False, "destructiveHint": False})
    def touch() -> str:
        return "touched"

    @server.tool
    def unmarked() -> str:
        """No annotations: it may write, as far as anyone can tell."""
        return "?"

    @server.tool(annotations={"destructiveHint": False})
    def harmless_but_not_read_only() -> str:
        return "added"

    assert needed(server, call("look")) == (READ,)
    assert needed(server, call("touch")) == (READ, WRITE)
    assert needed(server, call("unmarked")) == (READ, WRITE)
    assert needed(server, call("harmless_but_not_read_only")) == (READ, WRITE)


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "file:///x"}},
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    call("no_such_tool"),  # fails on its own, with the error a reader gets too
    call(None, {"name": 42}),
    call(None, ["write_file"]),
    call(None, {}),
], ids=["tools-list", "resources-read", "initialize", "ping", "unknown-tool", "name-not-a-string", "params-not-an-object",
        "no-name"])
def test_everything_else_needs_read(message: dict[str, Any], tmp_path: Path) -> None:
    server = build_server([str(tmp_path)], allow_write=True)
    assert needed(server, message) == (READ,)


def test_missing_names_what_a_token_lacks_in_the_order_wanted() -> None:
    assert missing(frozenset({READ}), (READ, WRITE)) == (WRITE,)
    assert missing(frozenset({WRITE}), (READ, WRITE)) == (READ,)
    assert missing(frozenset(), (READ, WRITE)) == (READ, WRITE)
    assert missing(frozenset({READ, WRITE, "other"}), (READ, WRITE)) == ()


def test_a_401_asks_for_what_the_offered_tools_need_between_them(tmp_path: Path) -> None:
    assert offered(build_server([str(tmp_path)], allow_write=True)) == (READ, WRITE)
    assert offered(build_server([str(tmp_path)])) == (READ,)
    assert offered(Server("empty", "1")) == (READ,)
