"""What the server writes on stderr (docs/logging.md), for the tests that read it exactly."""

from __future__ import annotations

import os
import re

STAMP = rb"\d\d:\d\d:\d\d"


def start_line(roots: list[str] | None = None, *, cwd: str = "", url: str | None = None, stateless: bool = False,
               workers: int = 1, allow_write: bool = False, watch: bool = False, sandbox_required: bool = False) -> str:
    """The start-up line's message, written out by hand for each mode (roots None: following the client's)."""
    if roots is None:
        served = f"the client's roots (or {os.path.realpath(cwd)} if it gives none)"
    else:
        served = ", ".join(os.path.realpath(root) for root in roots)
    if url is None:
        where = "over stdio"
    else:
        where = f"at {url} ({'stateless' if stateless else 'sessions'}{f', {workers} workers' if workers > 1 else ''})"
    modes = ["writes allowed" if allow_write else "read-only", "watching for changes" if watch else "not watching"]
    if sandbox_required:
        modes.append("children sandboxed")
    return f"serving {served} {where}; {', '.join([*modes, 'no auth'])}"


def messages(stderr: bytes | str, level: str | None = None) -> list[str]:
    """The messages of stderr's text lines (stamp and logger dropped), each checked to be a whole log line."""
    text = stderr.encode() if isinstance(stderr, str) else stderr
    found = []
    for line in text.decode().splitlines():
        match = re.fullmatch(rf"{STAMP.decode()} (shipcode-mcp|uvicorn|uvicorn\.access) ([A-Z]+): (.*)", line)
        assert match, f"not a log line: {line!r}"
        if level is None or match.group(2) == level:
            found.append(match.group(3))
    return found


def only_start_line(stderr: bytes | str, message: str) -> bool:
    """stderr is exactly the start-up line saying `message`."""
    text = stderr.encode() if isinstance(stderr, str) else stderr
    return re.fullmatch(STAMP + rb" shipcode-mcp NOTICE: " + re.escape(message.encode()) + rb"\n", text) is not None
