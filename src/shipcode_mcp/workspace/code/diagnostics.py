"""diagnostics: what is wrong in the code of a file or a folder, as its text alone tells (lint.py, in the
parse worker): syntax errors in every language the code tools read, and in Python pyflakes' findings
(undefined names, unused imports and variables, redefinitions, misused formats). What an agent checks
after an edit, before it runs anything.

Files are checked in path order, several at once (a parse worker each, as find_references reads them),
until `limit` findings; the result says how many files were checked and when it stopped early.

With --precise and a language server ready, up to MAX_TYPE_CHECKED files of a call (Python; TypeScript and
JavaScript) are checked by it instead (its errors and warnings: types, attributes, calls, imports, undefined
names, syntax), the rest from the syntax tree; the result says which.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..lsp.installed import backend
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
"""Files a call has the language servers check at most: each is a type check (some 0.1 s warm), and a folder of
thousands would be the whole workspace's; the others get the syntax tree's findings (pyflakes' in Python)."""


_FILES = {"python": "Python file", "typescript": "TypeScript or JavaScript file"}
"""What a backend's files are called in the result's text."""


class _TypeChecks:
    """The language servers' part of one call: which answer (each asked on the first file of its language), how
    many files each checked, and why one does not."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self.enabled = precise.enabled()
        self.servers: dict[str, str | None] = {}
        """The name of each backend's server that answers, None for one that does not (`notes` says why)."""
        self.notes: dict[str, str] = {}
        self.checked: dict[str, int] = {}
        self.left = 0
        self._lock = threading.Lock()

    def take(self, language: str | None) -> str | None:
        """The backend whose server checks the next file of `language`, None when none does (not ready, not
        installed, or MAX_TYPE_CHECKED files checked already)."""
        of = backend(language)
        if not self.enabled or of is None or of not in precise.offered():
            return None
        with self._lock:
            if of not in self.servers:
                try:
                    self.servers[of] = precise.server_name(self.roots, of, present=True)
                except NotReady as err:
                    self.servers[of], self.notes[of] = None, err.note
            if self.servers[of] is None or of in self.notes:  # (one failed in this call: the rest are not waited on)
                return None
            if sum(self.checked.values()) >= MAX_TYPE_CHECKED:
                self.left += 1
                return None
            self.checked[of] = self.checked.get(of, 0) + 1
            return of

    def failed(self, of: str, note: str) -> None:
        with self._lock:
            self.checked[of] -= 1
            self.notes.setdefault(of, note)

    @property
    def total(self) -> int:
        return sum(self.checked.values())

    @property
    def server(self) -> str | None:
        """The servers that checked files, as the result names them."""
        return " and ".join(str(self.servers[of]) for of, count in self.checked.items() if count) or None

    @property
    def note(self) -> str | None:
        return "; ".join(self.notes.values()) or None

    def said(self) -> str:
        """Which server checked how many files, for the result's text."""
        return "; ".join(f"{self.servers[of]}: {plural(count, _FILES.get(of, 'file'))}"
                         for of, count in self.checked.items() if count)


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
        out.append(f"{what} in {files} under {place(folder.shown)} (syntax errors; "
                   + (f"{typed.server}'s type checks" if typed.total else "in Python, pyflakes' findings") + " too).")
    elif truncated:
        out.append(f"[Showing the first {plural(len(found), 'finding')}, in the first {files} checked, in path order; "
                   "there are more. Narrow with path or severity, or raise limit.]")
    else:
        out.append(f"[{plural(counts['error'], 'error')}, {plural(counts['warning'], 'warning')} in {files} checked.]")
    for why, names in unflaked.items():
        out.append(f"[Syntax only in {plural(len(names), 'Python file')} ({printable(', '.join(names[:5]))}"
                   f"{', ...' if len(names) > 5 else ''}): {why}.]")
    if typed.total:
        out.append(f"[Type-checked by {typed.said()}"
                   + (f"; {typed.left} more got the syntax tree's findings only (at most {MAX_TYPE_CHECKED} a call: "
                      "narrow path)" if typed.left else "") + ".]")
    if typed.note is not None:
        out.append(f"[Not type-checked: {typed.note}; the syntax tree's findings instead (in Python, pyflakes').]")
    out += folder.skipped_note()
    return result("\n".join(out), {"path": folder.shown, "findings": found, "errors": counts["error"],
                                   "warnings": counts["warning"], "files_checked": checked, "truncated": truncated,
                                   "skipped": folder.skipped, "skipped_files": folder.skipped_files,
                                   "type_checked": typed.total, "language_server": typed.server,
                                   "language_server_note": typed.note})


def _findings(roots: Roots, real: str, shown: str, check: Callable[[], None], typed: _TypeChecks) -> dict[str, Any]:
    """One file's findings, from the language server or the parse worker (a file too large, binary or unreadable
    is Skipped)."""
    source = read_source(roots, real, shown)
    of = typed.take(source.language)
    if of is not None:
        try:
            return {"checked": "type-checked",
                    "findings": precise.diagnostics(roots, of, {real: source.text}, check)[real]}
        except NotReady as err:
            typed.failed(of, err.note)
    if source.language != "python":
        check_parsable(source)  # (CPython's parser takes any line; tree-sitter is given none too long)
    try:
        answer: dict[str, Any] = POOL.ask({"op": "findings", "text": source.text, "language": source.language,
                                           "name": os.path.basename(real)}, check)
    except Failed as err:
        raise parse_failed(source, err) from None
    return answer

