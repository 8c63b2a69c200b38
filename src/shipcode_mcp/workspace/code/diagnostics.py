"""diagnostics: what is wrong in the code of a file or a folder, as its text alone tells (lint.py, in the
parse worker): syntax errors in every language the code tools read, and in Python pyflakes' findings
(undefined names, unused imports and variables, redefinitions, misused formats). What an agent checks
after an edit, before it runs anything.

Files are checked in path order, several at once (a parse worker each, as find_references reads them),
until `limit` findings; the result says how many files were checked and when it stopped early.

With --precise and the language server ready, up to MAX_TYPE_CHECKED Python files of a call are checked by it
instead (its errors and warnings: types, attributes, calls, imports, undefined names, syntax), the rest by
pyflakes; the result says which.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..lsp.servers import NotReady
from ..text import place, plural, printable, result
from . import precise
from .parsers import POOL, Failed
from .references import Ahead
from .source import Folder, check_parsable, known_language, parse_failed, read_source

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

SEVERITIES = ("error", "warning")
MAX_TYPE_CHECKED = 25
"""Python files a call has the language server check at most: each is a type check (some 0.1 s warm), and a
folder of thousands would be the whole workspace's; the others get pyflakes."""


class _TypeChecks:
    """The language server's part of one call: whether it answers, how many files it checked, and why not."""

    def __init__(self, roots: Roots) -> None:
        self.server: str | None = None
        self.note: str | None = None
        self.checked = self.left = 0
        self._lock = threading.Lock()
        if precise.enabled():
            try:
                self.server = precise.server_name(roots, "python")
            except NotReady as err:
                self.note = err.note

    def take(self) -> bool:
        """Whether the next Python file is the server's to check."""
        with self._lock:
            if self.server is None or self.note is not None:
                return False
            if self.checked >= MAX_TYPE_CHECKED:
                self.left += 1
                return False
            self.checked += 1
            return True

    def failed(self, note: str) -> None:
        with self._lock:
            self.checked -= 1
            self.note = self.note or note


def diagnostics(ctx: Context, roots: Roots, path: str, severity: str, limit: int) -> ToolResult:
    """The findings in the code files under `path` (or in the file), errors only for `severity` "error"."""
    folder = Folder(roots, path)
    if not folder.is_dir:
        known_language(folder.real, folder.shown)  # a file of another language: say so
    names = folder.files(ctx)
    places = [folder.file(name) if folder.is_dir else (folder.real, folder.shown) for name in names]
    found: list[dict[str, Any]] = []
    checked = 0
    truncated = False
    counts = {"error": 0, "warning": 0}
    unflaked: dict[str, list[str]] = {}  # why pyflakes did not look -> the files
    typed = _TypeChecks(roots)
    with Ahead(lambda real, shown, check: _findings(roots, real, shown, check, typed), places, ctx.check_cancelled) as ahead:
        for shown, answer in folder.parsed(ctx, names, "file", lambda real, _: ahead.take(real), code_only=True,
                                           doing="checking"):
            checked += 1
            if answer["checked"].startswith("python (") and not answer["findings"]:
                unflaked.setdefault(answer["checked"][len("python ("):-1], []).append(shown)
            for line, column, level, code, message in answer["findings"]:
                if severity == "error" and level != "error":
                    continue
                counts[level] += 1
                if len(found) < limit:
                    found.append({"path": shown, "line": line, "column": column, "severity": level, "code": code,
                                  "message": message})
                else:
                    truncated = True
            if truncated:
                break
    ctx.report_progress(len(names), len(names), f"done: {plural(len(found), 'finding')}")
    out = [f"{printable(item['path'])}:{item['line']}:{item['column']}: {item['severity']} [{item['code']}] "
           f"{printable(item['message'])}" for item in found]
    files = plural(checked, "file")
    if not found:
        what = "No error" if severity == "error" else "Nothing found"
        out.append(f"{what} in {files} under {place(folder.shown)} (syntax errors; in Python, "
                   + (f"{typed.server}'s type checks" if typed.checked else "pyflakes' findings") + " too).")
    elif truncated:
        out.append(f"[Showing the first {plural(len(found), 'finding')}, in the first {files} checked, in path order; "
                   "there are more. Narrow with path or severity, or raise limit.]")
    else:
        out.append(f"[{plural(counts['error'], 'error')}, {plural(counts['warning'], 'warning')} in {files} checked.]")
    for why, names in unflaked.items():
        out.append(f"[Syntax only in {plural(len(names), 'Python file')} ({printable(', '.join(names[:5]))}"
                   f"{', ...' if len(names) > 5 else ''}): {why}.]")
    if typed.checked:
        out.append(f"[Type-checked by {typed.server}: {plural(typed.checked, 'Python file')}"
                   + (f"; {typed.left} more got pyflakes only (at most {MAX_TYPE_CHECKED} a call: narrow path)"
                      if typed.left else "") + ".]")
    if typed.note is not None:
        out.append(f"[Not type-checked: {typed.note}; pyflakes' findings instead.]")
    out += folder.skipped_note()
    return result("\n".join(out), {"path": folder.shown, "findings": found, "errors": counts["error"],
                                   "warnings": counts["warning"], "files_checked": checked, "truncated": truncated,
                                   "skipped": folder.skipped, "skipped_files": folder.skipped_files,
                                   "type_checked": typed.checked, "language_server": typed.server if typed.checked else None,
                                   "language_server_note": typed.note})


def _findings(roots: Roots, real: str, shown: str, check: Callable[[], None], typed: _TypeChecks) -> dict[str, Any]:
    """One file's findings, from the language server or the parse worker (a file too large, binary or unreadable
    is Skipped)."""
    source = read_source(roots, real, shown)
    if source.language == "python" and typed.take():
        try:
            return {"checked": "type-checked",
                    "findings": precise.diagnostics(roots, "python", {real: source.text}, check)[real]}
        except NotReady as err:
            typed.failed(err.note)
    if source.language != "python":
        check_parsable(source)  # (CPython's parser takes any line; tree-sitter is given none too long)
    try:
        answer: dict[str, Any] = POOL.ask({"op": "findings", "text": source.text, "language": source.language,
                                           "name": os.path.basename(real)}, check)
    except Failed as err:
        raise parse_failed(source, err) from None
    return answer

