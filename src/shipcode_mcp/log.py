"""Diagnostics on stderr, never stdout; stdlib `logging` is not imported because start-up time counts."""

from __future__ import annotations

import sys
import time

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "off": 100}
_threshold = LEVELS["warning"]


def set_level(name: str) -> None:
    global _threshold
    _threshold = LEVELS[name]


def _write(level: str, message: str) -> None:
    if LEVELS[level] >= _threshold:
        stamp = time.strftime("%H:%M:%S")
        try:
            sys.stderr.write(f"{stamp} shipcode-mcp {level.upper()}: {message}\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # stderr closed: nowhere left to complain
            pass


def debug(message: str) -> None:
    _write("debug", message)


def info(message: str) -> None:
    _write("info", message)


def warning(message: str) -> None:
    _write("warning", message)


def error(message: str) -> None:
    _write("error", message)
