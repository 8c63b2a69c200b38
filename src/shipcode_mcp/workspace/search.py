"""search_code: ripgrep's `--json` output, read as it streams, bounded, with progress and cancellation.

rg walks with the same flags as the listing (so search and list_files agree on which files exist)
and sorts by path, so the same question always gets the same answer and the first `limit` matches
are the first in path order. With a progress token, a quick walk first counts the files, and every
file rg reports tells how far along the sorted list it is. Cancelling kills rg at once.
"""

from __future__ import annotations

import json
import os
import re
import time

from ..primitives import ToolError
from . import safe_open
from .roots import join_display
from .text import SNIFF_BYTES, cut_line, is_binary, place, plural, result

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..context import RequestContext
    from ..primitives import ToolResult
    from .roots import Roots

MAX_LINE_CHARS = 500
"""A longer matching line is shown as a window of this many characters around the match."""
PROGRESS_INTERVAL = 0.1
"""At most this often (seconds) a progress notification goes out."""
SEARCH_TIMEOUT = 120.0


class _Collector:
    """The lines to report: matches up to `limit`, their context, and whether more matches exist."""

    def __init__(self, limit: int, context: int) -> None:
        self.limit = limit
        self.context = context
        self.lines: list[dict[str, Any]] = []
        self.matches = 0
        self.files: set[str] = set()
        self.truncated = False
        self._last_match: tuple[str, int] | None = None

    @property
    def full(self) -> bool:
        return self.matches >= self.limit

    def add(self, kind: str, path: str, data: dict[str, Any]) -> bool:
        """Take one rg message; False once nothing more is wanted."""
        number = data.get("line_number") or 0
        if self.full:
            # Only the trailing context of the last match still belongs; any other match means "more".
            if kind == "match" or self._last_match is None or path != self._last_match[0]:
                self.truncated = kind == "match" or self.truncated
                return kind != "match"
            if not self._last_match[1] < number <= self._last_match[1] + self.context:
                return True  # before-context of a match that is not shown
        text = _line_text(data)
        focus = 0
        if kind == "match":
            self.matches += 1
            self.files.add(path)
            self._last_match = (path, number)
            submatches = data.get("submatches") or []
            if submatches:
                focus = len(_raw(data.get("lines", {}))[: submatches[0].get("start", 0)].decode("utf-8", "ignore"))
        self.lines.append({"path": path, "line": number, "text": cut_line(text, MAX_LINE_CHARS, focus), "match": kind == "match"})
        return True


def _raw(value: dict[str, Any]) -> bytes:
    """rg's {"text": ...}, or {"bytes": base64} for what is not UTF-8, as bytes."""
    if "text" in value:
        return str(value["text"]).encode("utf-8", "surrogateescape")
    import base64

    return base64.b64decode(value.get("bytes", ""))


def _text(value: dict[str, Any]) -> str:
    return str(value["text"]) if "text" in value else _raw(value).decode("utf-8", "replace")


def _line_text(data: dict[str, Any]) -> str:
    return _text(data.get("lines", {})).rstrip("\n").rstrip("\r")


class _Progress:
    """How far through the sorted file list rg is; sent at most every PROGRESS_INTERVAL seconds."""

    def __init__(self, ctx: RequestContext, names: list[str]) -> None:
        self.ctx = ctx
        # rg --sort path orders by path components, bytewise: a/x before a.txt.
        self.keys = sorted(name.encode("utf-8", "surrogateescape").split(b"/") for name in names)
        self.total = len(self.keys)
        self._sent = 0.0
        ctx.report_progress(0, self.total, f"searching {plural(self.total, 'file')}")

    def at(self, raw: bytes, collector: _Collector) -> None:
        now = time.monotonic()
        if now - self._sent < PROGRESS_INTERVAL:
            return
        import bisect

        done = bisect.bisect_right(self.keys, _strip_dot(raw).split(b"/"))
        if done and self.ctx.report_progress(done, self.total, f"{plural(collector.matches, 'match')} so far"):
            self._sent = now

    def finish(self, collector: _Collector) -> None:
        self.ctx.report_progress(self.total, self.total, f"done: {plural(collector.matches, 'match')}")


def _strip_dot(raw: bytes) -> bytes:
    return raw[2:] if raw.startswith(b"./") else raw


def search_code(ctx: RequestContext, roots: Roots, pattern: str, path: str = ".", glob: str | None = None,
                ignore_case: bool = False, fixed_strings: bool = False, context: int = 0,
                limit: int = 200) -> ToolResult:
    from .listing import RG_WALK_FLAGS, GlobFilter, rg_executable, walk

    if "\x00" in pattern or (glob and "\x00" in glob):
        raise ToolError("pattern and glob cannot contain NUL characters")
    real = roots.resolve(path)
    shown = roots.display(real)
    options = ["--ignore-case" if ignore_case else "--case-sensitive"]
    if fixed_strings:
        options.append("--fixed-strings")
    if context:
        options.append(f"--context={context}")
    is_dir = os.path.isdir(real)
    if is_dir:
        fd = safe_open.open_dir(roots, real, shown)
        cwd, target = safe_open.proc_path(fd, real), "./"
    else:
        fd, _ = safe_open.open_file(roots, real, shown)
        cwd, target = roots.root_of(real) or real, safe_open.proc_path(fd, real)

    def display(raw: bytes) -> str:
        return join_display(shown, _strip_dot(raw).decode("utf-8", "surrogateescape")) if is_dir else shown

    collector = _Collector(limit, context)
    try:
        if not is_dir and is_binary(os.pread(fd, SNIFF_BYTES, 0)):
            raise ToolError(f"{shown} is a binary file; search_code searches text")
        with GlobFilter([glob] if glob else []) as narrow:
            progress = None
            if ctx.progress_token is not None:
                progress = _Progress(ctx, walk(ctx, cwd, narrow, pass_fds=(fd,)) if is_dir else [shown])
            command = [rg_executable(), "--json", *RG_WALK_FLAGS, *narrow, "--sort=path", *options,
                       f"--regexp={pattern}", "--", target]
            problems = _run(ctx, command, cwd, fd, collector, progress, display)
        if progress is not None:
            progress.finish(collector)
    finally:
        os.close(fd)
    return _render(pattern, shown, collector, context, problems)


def _run(ctx: RequestContext, command: list[str], cwd: str, fd: int, collector: _Collector,
         progress: _Progress | None, display: Callable[[bytes], str]) -> bool:
    """Drive rg; returns whether some files could not be searched."""
    from .process import Child

    saw_output = False
    with Child(ctx, command, cwd=cwd, pass_fds=(fd,), timeout=SEARCH_TIMEOUT, what="the search") as child:
        for line in child.lines():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            kind = message.get("type")
            data = message.get("data") or {}
            saw_output = True
            if kind in ("match", "context"):
                raw = _raw(data.get("path", {}))
                if not collector.add(kind, display(raw), data):
                    break
            elif kind == "begin" and progress is not None:
                progress.at(_raw(data.get("path", {})), collector)
        child.kill()
        code = child.wait()
        stderr = child.stderr
    if code == 2 and not saw_output:
        raise ToolError(_rg_error(stderr))
    return code == 2


def _rg_error(stderr: str) -> str:
    """rg's complaint about the pattern, without its advice about flags this tool does not have."""
    advice = re.compile(r"--[a-z]|pcre2", re.IGNORECASE)
    lines = [line.removeprefix("rg: ") for line in stderr.strip().splitlines() if not advice.search(line)]
    message = "\n".join(lines[:20]) or "ripgrep failed"
    return f"The search failed: {message}"


def _render(pattern: str, shown: str, collector: _Collector, context: int, problems: bool) -> ToolResult:
    out: list[str] = []
    previous: tuple[str, int] | None = None
    for entry in collector.lines:
        if context and previous is not None and (entry["path"] != previous[0] or entry["line"] != previous[1] + 1):
            out.append("--")
        mark = ":" if entry["match"] else "-"
        out.append(f"{entry['path']}{mark}{entry['line']}{mark}{entry['text']}")
        previous = (entry["path"], entry["line"])
    found = f"{plural(collector.matches, 'match')} in {plural(len(collector.files), 'file')}"
    if not collector.matches:
        out.append(f"No matches for {pattern!r} in {place(shown)}.")
    elif collector.truncated:
        out.append(f"[Showing the first {found}; there are more. Narrow the search with path or glob, or raise limit.]")
    else:
        out.append(f"[{found[0].upper()}{found[1:]}.]")
    if problems:
        out.append("[Some files could not be read and were skipped.]")
    data = {
        "pattern": pattern,
        "path": shown,
        "lines": collector.lines,
        "match_count": collector.matches,
        "file_count": len(collector.files),
        "truncated": collector.truncated,
    }
    return result("\n".join(out), data)
