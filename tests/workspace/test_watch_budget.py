"""Attack test: `--watch` on a tree of many folders does not take the user's whole inotify budget.

One watch per folder: 30 000 empty folders took 30 001 watches, 200 000 every one of the machine, and every
other watcher of that user then failed. Shown first with the watcher as the server used it (one native
watch per folder), then through the server: at most MAX_WATCHES, polling beyond them, said on stderr, and
changes still heard.
"""

from __future__ import annotations

import os
from pathlib import Path

from shipcode_mcp.workspace import watch
from shipcode_mcp.workspace.uris import file_uri
from support import McpProcess, wait_for

FOLDERS = watch.MAX_WATCHES + 500


def inotify_watches(pid: int) -> int:
    """The inotify watches process `pid` holds (its inotify descriptors' fdinfo, a line each)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                    count += sum(line.startswith("inotify wd:") for line in info)
        except OSError:
            continue
    return count


def test_many_folders_are_polled_beyond_the_cap(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for number in range(FOLDERS):
        (root / f"d{number}").mkdir()
    (root / "watched.txt").write_text("v1\n")
    from watchfiles._rust_notify import RustNotify

    folders = [str(root), *(str(root / f"d{number}") for number in range(FOLDERS))]
    before = inotify_watches(os.getpid())
    native = RustNotify(folders, False, False, 500, False, True)  # as the server opened them, one watch a folder
    try:
        assert inotify_watches(os.getpid()) - before >= FOLDERS  # the attack works: a watch per folder
    finally:
        native.close()
    server = McpProcess("--watch", str(root))
    try:
        server.initialize()
        assert "result" in server.request("resources/list", timeout=60)
        assert inotify_watches(server.proc.pid) <= watch.MAX_WATCHES
        uri = file_uri(str((root / "watched.txt").resolve()))
        assert server.request("resources/subscribe", {"uri": uri})["result"] == {}
        (root / "watched.txt").write_text("v2, a change polling must see\n")
        message = server.read(timeout=30)
        assert message == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
    finally:
        server.close()
    wait_for(lambda: server.proc.poll() is not None, 10, "the server to end")
    said = server.stderr.decode()
    assert f"more than the {watch.MAX_WATCHES} watched at most" in said and "polling every" in said, said
