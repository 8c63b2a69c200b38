"""The syntax check of a write: an edit that adds syntax errors to a file of a language the code tools read
is refused, with the errors and their lines, before anything is written (SWE-agent's ablation: an editor
that refuses such edits raised the tasks solved from 15.0 % to 18.0 %). A file that had errors may keep
them: only more errors than before count. The texts are parsed in the sandboxed parse worker, like every
parse of workspace text: CPython's parser for Python (an error counts only when the tree-sitter grammar
sees one too, so that code newer than the server's Python is not refused), the tree-sitter grammar
elsewhere. A grammar can misread valid code, so a refusal is made only on changes to existing files
outside Python, and never in C, C++ or PHP (UNCHECKED)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .parsers import POOL, Failed
from .source import MAX_PARSE_LINE, MAX_SOURCE_BYTES
from .symbols import language_for

SHOWN_ERRORS = 5
"""A refusal quotes at most this many of the new errors."""
UNCHECKED = {"c": "a preprocessor line or a macro call", "cpp": "a preprocessor line or a macro call",
             "php": "template text around <?php"}
"""Languages whose grammar misreads valid code too often to refuse a change on its word (what it misreads):
in real system headers, about half of the C and C++ files read as having errors."""


def added_syntax_errors(real: str, old: str | None, new: str, check: Callable[[], None] | None) -> list[list[Any]] | str:
    """The syntax errors `new` has where `old` (None: a new file) had fewer: [line, column, message] each (an
    empty list: none added). A text that cannot be checked gives why instead (not a language the code tools
    read, too large or with a line too long to parse, the parse worker failing on it)."""
    language = language_for(real)
    if language is None:
        return "not a language the code tools read"
    if language in UNCHECKED:
        return f"not checked in {language}: its grammar misreads {UNCHECKED[language]}"
    if old is None and language != "python":
        return "a new file is checked only in Python (a grammar's misreading would refuse a whole file)"
    errors = _syntax_errors(new, language, os.path.basename(real), check)
    if isinstance(errors, str) or not errors:
        return errors
    before = _syntax_errors(old, language, os.path.basename(real), check) if old is not None else []
    if isinstance(before, str):
        return before
    return errors if len(errors) > len(before) else []


def _syntax_errors(text: str, language: str, name: str, check: Callable[[], None] | None) -> list[list[Any]] | str:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        return f"larger than {MAX_SOURCE_BYTES // 1024} KiB"
    if language != "python" and max(map(len, text.split("\n"))) > MAX_PARSE_LINE:
        return f"a line over {MAX_PARSE_LINE} characters"
    try:
        answer = POOL.ask({"op": "findings", "text": text, "language": language, "name": name, "syntax_only": True},
                          check)
    except Failed as err:
        return f"the parse {err}"
    return [[line, column, message] for line, column, level, code, message in answer["findings"]
            if code == "syntax-error"]
