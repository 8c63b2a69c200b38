"""What the server writes on stderr (docs/logging.md), for the tests that read it exactly."""

from __future__ import annotations

import re

STAMP = rb"\d\d:\d\d:\d\d"


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
