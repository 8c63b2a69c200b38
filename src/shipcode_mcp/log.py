"""Diagnostics on stderr, never stdout, in one format shared with uvicorn's logs (docs/logging.md).

A line reads `HH:MM:SS LOGGER LEVEL: message` (`--log-format text`) or is one JSON object
(`--log-format json`, for collectors). stdlib `logging` is not imported here because start-up time
counts: uvicorn, which uses it, gets the same format through `uvicorn_formatter` (see `uvicorn_log_config`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

TYPE_CHECKING = False  # typing is not imported at start
if TYPE_CHECKING:
    import logging
    from collections.abc import Callable
    from typing import Any

LEVELS = {"debug": 10, "info": 20, "notice": 30, "warning": 30, "error": 40, "off": 100}
"""`notice` is what the person running the server should see once (the start-up line): it shows at the
default level, warning, and hides with error or off; it is not a level one chooses."""
FORMATS = ("text", "json")
NAME = "shipcode-mcp"

_threshold = LEVELS["warning"]
_json = False
_lock = threading.Lock()  # one line at a time, whichever thread writes it


def set_level(name: str) -> None:
    global _threshold
    _threshold = LEVELS[name]


def set_format(name: str) -> None:
    global _json
    if name not in FORMATS:
        raise ValueError(f"no such log format: {name!r}")
    _json = name == "json"


def enabled(level: str) -> bool:
    """Whether a message at `level` would be written: what costs something to say is asked first."""
    return LEVELS[level] >= _threshold


def format_line(created: float, logger: str, level: str, message: str, fields: dict[str, Any] | None = None,
                as_json: bool | None = None) -> str:
    """One line of stderr, without its newline: ours and uvicorn's go through here (JSON: as set, unless told)."""
    if not (_json if as_json is None else as_json):
        return f"{time.strftime('%H:%M:%S', time.localtime(created))} {logger} {level.upper()}: {message}"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"
    record: dict[str, Any] = {"time": stamp, "level": level.lower(), "logger": logger, "message": message}
    if fields:
        record.update(fields)
    return json.dumps(record, ensure_ascii=False, default=str)


_first: Callable[[], None] | None = None
_first_lock = threading.RLock()  # re-entrant: the first line is itself written from inside it


def _being_said() -> None:
    """What `_first` holds while the first line is being said (by the thread holding `_first_lock`)."""


def say_first(say: Callable[[], None]) -> None:
    """Have `say` write the line that must come before any other (the start-up line, which waits for a
    check kept off the start-up path): the first line written from now on, by any thread, runs it first;
    calling `first_said()` runs it at once. It runs once."""
    global _first
    _first = say


def first_said() -> None:
    """Run the pending first line's `say` now (once; a thread that writes meanwhile waits for it)."""
    global _first
    with _first_lock:
        say = _first
        if say is None or say is _being_said:
            return
        _first = _being_said
        try:
            say()
        finally:
            _first = None


def _write(level: str, message: str, fields: dict[str, Any] | None = None) -> None:
    if _first is not None:
        first_said()
    if LEVELS[level] >= _threshold:
        line = format_line(time.time(), NAME, level, message, fields) + "\n"
        try:
            with _lock:
                sys.stderr.write(line)
                sys.stderr.flush()
        except (OSError, ValueError):  # stderr closed: nowhere left to complain
            pass


def debug(message: str, **fields: Any) -> None:
    _write("debug", message, fields)


def info(message: str, **fields: Any) -> None:
    _write("info", message, fields)


def notice(message: str, **fields: Any) -> None:
    _write("notice", message, fields)


def warning(message: str, **fields: Any) -> None:
    _write("warning", message, fields)


def error(message: str, **fields: Any) -> None:
    _write("error", message, fields)


# -- one line per request (--log-level debug) ---------------------------------------------------------
def outcome_of(response: Any) -> tuple[str, int | None]:
    """('ok' | 'tool_error' | 'input_required' | 'error', the error code) of a JSON-RPC response."""
    if isinstance(response, dict):
        error = response.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            return "error", code if isinstance(code, int) and not isinstance(code, bool) else None
        result = response.get("result")
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            return "input_required", None
        if isinstance(result, dict) and result.get("isError") is True:  # a tool that failed, as the model sees it
            return "tool_error", None
    return "ok", None


def request(method: str, request_id: Any, seconds: float, outcome: str, code: int | None = None) -> None:
    """The debug line of one request: `tools/call id=3 error -32602 1.2 ms`; its fields in JSON."""
    if not enabled("debug"):
        return
    said = outcome if code is None else f"{outcome} {code}"
    shown = json.dumps(request_id, ensure_ascii=False, default=str)
    fields: dict[str, Any] = {"method": method, "id": request_id, "outcome": outcome, "duration_ms": round(seconds * 1000, 1)}
    if code is not None:
        fields["code"] = code
    _write("debug", f"{method} id={shown} {said} {seconds * 1000:.1f} ms", fields)


# -- uvicorn's logs in our format ------------------------------------------------------------------------
def uvicorn_log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging configuration: its messages and its access log on stderr, formatted as ours (in
    the format set now, which each --workers process gets with the configuration)."""
    formatter = {"()": f"{__name__}.uvicorn_formatter", "as_json": _json}
    handler = {"formatter": "shipcode", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"shipcode": formatter},
        "handlers": {"default": handler, "access": dict(handler)},
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": ["access"], "level": level.upper(), "propagate": False},
        },
    }


_ACCESS_FIELDS = ("client", "http_method", "path", "http_version", "status")


def _without_token(path: str) -> str:
    """`path` with the value of any query parameter named access_token redacted, the name read as the
    server reads it (percent-decoded, `+` as a space), so `access%5Ftoken=...` is caught too."""
    from urllib.parse import unquote_plus  # off the start-up budget: only uvicorn's access lines

    base, _, query = path.partition("?")
    fields = [field.partition("=") for field in query.split("&")]
    if not any(unquote_plus(name) == "access_token" for name, _, _ in fields):
        return path
    return base + "?" + "&".join(name + "=[redacted]" if unquote_plus(name) == "access_token" else name + sep + value
                                 for name, sep, value in fields)


def uvicorn_formatter(as_json: bool = False) -> logging.Formatter:
    """A `logging.Formatter` writing our lines (named in `uvicorn_log_config`, so each --workers process
    makes its own). uvicorn's main logger, `uvicorn.error`, is shown as `uvicorn`; an access line keeps
    uvicorn's text and, in JSON, adds its parts as fields."""
    import logging  # not at start (see the module's docstring): only uvicorn's logs need it

    class Formatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            fields: dict[str, Any] = {}
            if record.name == "uvicorn.access" and isinstance(record.args, tuple) and len(record.args) == 5:
                if isinstance(record.args[2], str) and "?" in record.args[2]:  # a token in the URL: refused, never logged
                    record.args = (*record.args[:2], _without_token(record.args[2]), *record.args[3:])
                fields = dict(zip(_ACCESS_FIELDS, record.args, strict=True))
            if record.exc_info and as_json:
                fields["exception"] = self.formatException(record.exc_info)
            logger = "uvicorn" if record.name == "uvicorn.error" else record.name
            line = format_line(record.created, logger, record.levelname, record.getMessage(), fields, as_json)
            if record.exc_info and not as_json:
                line += "\n" + self.formatException(record.exc_info)
            return line

    return Formatter()


# -- how to install an extra, for how this copy was installed ------------------------------------------------
def install_hint(extra: str) -> str:
    """A command that adds `extra` to this installation: pip of the running interpreter, or pipx, uv or uvx
    when one of them made its environment; from the folder it was installed from, if it was."""
    import shlex  # off the start-up budget: only when an extra is missing

    requirement = f"shipcode-mcp[{extra}]"
    editable = False
    try:
        import importlib.metadata  # off the start-up budget: only when an extra is missing

        direct = importlib.metadata.distribution("shipcode-mcp").read_text("direct_url.json")
        origin = json.loads(direct) if direct else {}
        url = origin.get("url", "")
        if url.startswith("file://") and "dir_info" in origin:  # installed from a folder (a checkout)
            from urllib.parse import unquote, urlsplit  # off the start-up budget: only an install from a folder

            requirement = f"{unquote(urlsplit(url).path)}[{extra}]"
            editable = bool(origin["dir_info"].get("editable"))
    except Exception:  # not installed (run from its source), or unreadable metadata: the published name
        pass
    quoted = shlex.quote(requirement)
    prefix = sys.prefix.replace(os.sep, "/")
    with_uv = _made_by_uv()
    if "/pipx/venvs/" in prefix:
        return f"pipx install --force {'-e ' if editable else ''}{quoted}"
    if with_uv and "/uv/tools/" in prefix:
        return f"uv tool install --force {'-e ' if editable else ''}{quoted}"
    if with_uv and ("/archive-v" in prefix or "/builds-v" in prefix):  # uvx: an environment in uv's cache
        return f"uvx --from {quoted} shipcode-mcp"
    command = f"uv pip install --python {shlex.quote(sys.executable)}" if with_uv else \
        f"{shlex.quote(sys.executable)} -m pip install"
    return f"{command} {'-e ' if editable else ''}{quoted}"


def _made_by_uv() -> bool:
    """uv writes `uv = VERSION` into the pyvenv.cfg of the environments it makes (which have no pip)."""
    try:
        with open(os.path.join(sys.prefix, "pyvenv.cfg"), encoding="utf-8") as cfg:
            return any(line.split("=")[0].strip() == "uv" for line in cfg)
    except OSError:
        return False
