"""What the language server tests share: a Python interpreter a sandboxed child can run (the program, and what
it reads to start), the LSP framing every fake language server written in Python starts with, the
measures of what a hostile server costs us (this process's memory, a thread it killed), and the waits for a
real server's first precise answers."""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from support import family, wait_for
from workspace_support import Tools

READY_WAIT = 120.0
"""The longest a test waits for a language server's first precise answer (a loaded CI machine)."""

PYTHON = os.path.realpath(sys.executable)
"""The interpreter itself, not the virtualenv's link to it: what the sandbox lets a child run (with -I -S it
needs nothing of the virtualenv)."""


def _python_readable() -> tuple[str, ...]:
    """What PYTHON reads to start and import the standard library: its stdlib folders and, where it is built
    shared, libpython (beside the stdlib, not in the system's library folders the sandbox opens anyway)."""
    base = {"base": sys.base_prefix, "platbase": sys.base_prefix, "installed_base": sys.base_prefix,
            "installed_platbase": sys.base_prefix}
    found = {os.path.realpath(sysconfig.get_path(name, vars=base)) for name in ("stdlib", "platstdlib")}
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        library = os.path.join(str(sysconfig.get_config_var("LIBDIR")), str(sysconfig.get_config_var("LDLIBRARY")))
        if os.path.exists(library):
            found.add(os.path.realpath(library))
    return tuple(sorted(found))


PYTHON_READABLE = _python_readable()

FRAMING = r'''
import json, os, sys, time

_in, _out = sys.stdin.buffer, sys.stdout.buffer
last_body = b""


def read():
    """The client's next message, None at the end of its input. Its body is exactly Content-Length bytes of
    UTF-8 (a miscounted frame fails here: the fake server then dies, and the client sees it gone)."""
    global last_body
    length = None
    while True:
        line = _in.readline(65536)
        if not line:
            return None
        if line == b"\r\n":
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise SystemExit("fake language server: a frame without Content-Length")
    last_body = _in.read(length)
    if len(last_body) < length:
        return None
    return json.loads(last_body.decode("utf-8"))


def write(data):
    """Bytes to the client as they are: a frame, part of one, or anything."""
    _out.write(data)
    _out.flush()


def frame(body):
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def send(message):
    write(frame(json.dumps(message, ensure_ascii=False).encode("utf-8")))


def answer(request, result):
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def notify(method, params):
    send({"jsonrpc": "2.0", "method": method, "params": params})


def hold():
    """Stay, reading nothing more, until killed."""
    while True:
        time.sleep(60)
'''
"""The start of a fake language server's script: read() and send() speak LSP's base protocol on stdin and
stdout; write() writes raw bytes; hold() stays without reading."""


def rss() -> int:
    """This process's resident bytes now."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class PeakRss:
    """The highest resident size of this process (not of its children: a fake server's own memory is not
    ours) above what it was on entry, sampled every few milliseconds while in use."""

    def __init__(self) -> None:
        self.base = rss()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss())
            self._stop.wait(0.002)

    @property
    def growth(self) -> int:
        return self.peak - self.base

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.peak = max(self.peak, rss())


def record_thread_deaths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The exceptions that end a thread from now on, said (a reader thread's death, for a test to fail on
    it by name rather than by pytest's warning about it)."""
    died: list[str] = []

    def record(args: threading.ExceptHookArgs) -> None:
        died.append(f"{args.thread.name if args.thread else '?'}: {args.exc_type.__name__}: {str(args.exc_value)[:200]}")

    monkeypatch.setattr(threading, "excepthook", record)
    return died


def written(root: Path, files: dict[str, str]) -> Path:
    """`root` made, with `files` (relative path: text) written in it: a language server test's project."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def wait_ready(server: Any) -> None:
    """Wait for a LanguageServer to be ready (READY_WAIT at most), failing at once if it fails."""
    from shipcode_mcp.workspace.lsp.servers import NotReady  # (the fake servers' tests import this module first)

    def ready() -> bool:
        try:
            server.ready()
        except NotReady:
            assert server.state != "failed", server.failure
            return False
        return True
    wait_for(ready, READY_WAIT, "the language server")


def sites(data: dict[str, Any], label: str) -> set[tuple[str, int]]:
    """(path, line) of the references of a find_references result labelled `label`."""
    return {(item["path"], item["line"]) for item in data["references"] if item["precision"] == label}


def exact(tools: Tools, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """find_references of `name` once the language server answers it (earlier calls answer from the syntax tree
    and say why: each is checked to say so)."""
    def answered() -> dict[str, Any] | None:
        data = tools.data("find_references", {"name": name, **(arguments or {})})
        if data["language_server"] is None:
            assert data["language_server_note"] and "Not exact" in tools.last["content"][0]["text"], data
            time.sleep(0.2)
            return None
        return data
    return wait_for(answered, READY_WAIT, "the language server's answer")


def type_checked(tools: Tools, arguments: dict[str, Any]) -> dict[str, Any]:
    """diagnostics once the language server type-checks (earlier calls say why it does not yet)."""
    def answered() -> dict[str, Any] | None:
        data = tools.data("diagnostics", arguments)
        if not data["type_checked"]:
            assert "Not type-checked" in tools.last["content"][0]["text"], data
            time.sleep(0.2)
            return None
        return data
    return wait_for(answered, READY_WAIT, "the language server's type checks")


def descendants_running(server_pid: int, *markers: bytes) -> list[int]:
    """The server's descendants whose command line holds one of `markers` (a language server's script)."""
    found = []
    for pid in family(server_pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if any(marker in command for marker in markers):
            found.append(pid)
    return found
