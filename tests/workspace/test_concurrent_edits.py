"""Two clients editing the same file at once never lose a change: edits that each re-read the file under
the root's write lock (edit_file, the symbol edits) both land, in order; a change made on a version read
earlier (read_file's `sha256`, passed back as `expected_sha256`) is refused once the file changed since.
Real servers: two over stdio and one over HTTP with two worker processes, all on one workspace."""

from __future__ import annotations

import hashlib
import json
import signal
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from transports.http.support import free_port, start_process
from workspace_support import Tools

CLIENT_EDITS = 25


def _http_call(port: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """tools/call over Streamable HTTP (stateless: each request stands alone)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        result: dict[str, Any] = json.loads(answer.read())["result"]
        return result


def test_edits_from_stdio_and_http_workers_at_once_all_land_in_order(tmp_path: Path) -> None:
    """Four clients (two stdio servers, two threads on an HTTP server with two workers) each add 25 lines,
    one edit_file call per line, at the same marker at once: all 100 land, each client's in its order."""
    (tmp_path / "log.txt").write_text("start\nEND\n")
    port = free_port()
    http = start_process(["-m", "shipcode_mcp", "--http", f"127.0.0.1:{port}", "--stateless", "--workers", "2",
                          "--allow-write", str(tmp_path)], port)
    failures: list[str] = []
    try:
        with Tools(tmp_path, write=True) as first, Tools(tmp_path, write=True) as second:
            def stdio_client(tools: Tools, name: str) -> None:
                for number in range(CLIENT_EDITS):
                    result = tools.process.call_tool("edit_file", {"path": "log.txt", "old_text": "END\n",
                                                                   "new_text": f"{name} {number}\nEND\n"}, 60)
                    if result["isError"]:
                        failures.append(result["content"][0]["text"])

            def http_client(name: str) -> None:
                for number in range(CLIENT_EDITS):
                    result = _http_call(port, "edit_file", {"path": "log.txt", "old_text": "END\n",
                                                            "new_text": f"{name} {number}\nEND\n"})
                    if result["isError"]:
                        failures.append(result["content"][0]["text"])

            threads = [threading.Thread(target=stdio_client, args=(first, "a")),
                       threading.Thread(target=stdio_client, args=(second, "b")),
                       threading.Thread(target=http_client, args=("c",)), threading.Thread(target=http_client, args=("d",))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
    finally:
        http.send_signal(signal.SIGTERM)
        http.wait(30)
    assert not failures, failures[:3]
    lines = (tmp_path / "log.txt").read_text().splitlines()
    assert lines[0] == "start" and lines[-1] == "END" and len(lines) == 2 + 4 * CLIENT_EDITS
    for name in "abcd":
        assert [line for line in lines if line.startswith(f"{name} ")] == [f"{name} {n}" for n in range(CLIENT_EDITS)]


def test_a_change_on_a_stale_version_is_refused(tmp_path: Path) -> None:
    """Two clients read the file, both rewrite it: without expected_sha256 the second write silently replaces
    the first (the lost update, shown); with the version each read, the second is refused and the first kept."""
    target = tmp_path / "notes.txt"
    with Tools(tmp_path, write=True) as first, Tools(tmp_path, write=True) as second:
        for guarded in (False, True):
            target.write_text("shared\n")
            seen_first = first.data("read_file", {"path": "notes.txt"})["sha256"]
            seen_second = second.data("read_file", {"path": "notes.txt"})["sha256"]
            assert seen_first == seen_second == hashlib.sha256(b"shared\n").hexdigest()
            first.call("write_file", {"path": "notes.txt", "content": "shared\nfrom the first\n",
                                      **({"expected_sha256": seen_first} if guarded else {})})
            arguments = {"path": "notes.txt", "content": "shared\nfrom the second\n"}
            if not guarded:
                second.call("write_file", arguments)
                assert target.read_text() == "shared\nfrom the second\n"  # the first client's line is lost
                continue
            message = second.error("write_file", {**arguments, "expected_sha256": seen_second})
            now = hashlib.sha256(b"shared\nfrom the first\n").hexdigest()
            assert message.startswith("Refused: notes.txt changed since it was read") and now in message, message
            assert target.read_text() == "shared\nfrom the first\n"
            again = second.data("read_file", {"path": "notes.txt"})["sha256"]
            assert again == now
            second.call("write_file", {**arguments, "expected_sha256": again.upper()})  # hex in either case
            assert target.read_text() == "shared\nfrom the second\n"


def test_every_editing_tool_checks_the_version(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("def greet(name):\n    return name\n")
    with Tools(tmp_path, write=True) as tools:
        read = tools.data("read_file", {"path": "app.py"})["sha256"]
        target.write_text("def greet(name):\n    return name.title()\n")  # the user changed it meanwhile
        calls: list[tuple[str, dict[str, Any]]] = [("edit_file", {"old_text": "name", "new_text": "who", "replace_all": True}),
                 ("write_file", {"content": "x = 1\n"}),
                 ("replace_symbol", {"name": "greet", "text": "def greet(name):\n    return 1\n"}),
                 ("insert_symbol", {"position": "end", "text": "def bye():\n    pass\n"})]
        for name, arguments in calls:
            for dry_run in (False, True):
                message = tools.error(name, {"path": "app.py", **arguments, "expected_sha256": read, "dry_run": dry_run})
                assert "changed since it was read" in message, (name, message)
        assert target.read_text() == "def greet(name):\n    return name.title()\n"
        current = hashlib.sha256(target.read_bytes()).hexdigest()
        tools.call("edit_file", {"path": "app.py", "old_text": "title", "new_text": "upper", "expected_sha256": current})
        assert target.read_text() == "def greet(name):\n    return name.upper()\n"
        assert "does not exist" in tools.error("write_file", {"path": "gone.txt", "content": "x", "expected_sha256": read})
        assert not (tmp_path / "gone.txt").exists()
        assert "Invalid arguments" in tools.error("edit_file", {"path": "app.py", "old_text": "a", "new_text": "b",
                                                                "expected_sha256": "abc"})


@pytest.mark.parametrize(("size", "hashed"), [(1000, True), (3 * 1024 * 1024, False)])
def test_read_file_gives_the_version_when_it_read_the_whole_file(tmp_path: Path, size: int, hashed: bool) -> None:
    data = b"".join(b"line %d\n" % number for number in range(size // 8))
    (tmp_path / "big.txt").write_bytes(data)
    with Tools(tmp_path) as tools:
        sha = tools.data("read_file", {"path": "big.txt", "limit": 5})["sha256"]
        assert sha == (hashlib.sha256(data).hexdigest() if hashed else None)


def _threads_editing(root: Path) -> tuple[list[str], list[str]]:
    """Four threads of this process each add 25 lines at the marker through edit_file: the lines that landed,
    and the errors."""
    from shipcode_mcp.primitives import ToolError
    from shipcode_mcp.workspace.roots import Roots
    from shipcode_mcp.workspace.tools import run
    from workspace_support import context

    (root / "log.txt").write_text("start\nEND\n")
    roots = Roots([str(root)])
    errors: list[str] = []

    def client(name: str) -> None:
        for number in range(CLIENT_EDITS):
            try:
                run("edit_file", context(), roots, path="log.txt", old_text="END\n", new_text=f"{name} {number}\nEND\n")
            except ToolError as err:
                errors.append(str(err))

    threads = [threading.Thread(target=client, args=(name,)) for name in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return [line for line in (root / "log.txt").read_text().splitlines() if line not in ("start", "END")], errors


def test_without_the_write_lock_edits_at_once_are_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the lock closes: with the root's write lock made a no-op, edits made at once read the same
    text, and the later one either drops the earlier line or, where the replace sees the file changed under
    it, fails (tried until it happens, at most 20 rounds); with it, every line lands."""
    from contextlib import contextmanager

    from shipcode_mcp.workspace import writes

    real_lock = writes.root_lock

    @contextmanager
    def no_lock(*args: Any) -> Any:
        yield -1

    monkeypatch.setattr(writes, "root_lock", no_lock)
    for _ in range(20):
        landed, errors = _threads_editing(tmp_path)
        if len(landed) < 4 * CLIENT_EDITS:
            assert len(landed) + len(errors) <= 4 * CLIENT_EDITS
            break
    else:
        pytest.fail("20 rounds of edits at once without the lock lost nothing: the race was never won")
    monkeypatch.setattr(writes, "root_lock", real_lock)
    landed, errors = _threads_editing(tmp_path)
    assert not errors and len(landed) == 4 * CLIENT_EDITS
