"""rename_symbol: a Python symbol renamed across the workspace, only where Python's scopes prove the use is
that symbol's.

The uses come from find_references (references.py, pyscopes.py): a `scoped` use reaches the definition
asked for (its def, calls, imports and `from ... import` lines, `self.name` in its class and subclasses,
`module.name`, `__all__` and `__slots__` entries), and is renamed; a use that only shares the name (an
attribute of an object of unknown type: only types could tell) is listed as undecided and left alone, and
so is every use in another language (by name only there); a local, parameter or keyword argument of the
same name is not the symbol's and is not touched. Comments and strings (but `__all__` and `__slots__`)
are not changed: they are text. All files are written at once or none (patch_files.rewrite_files), each
checked for syntax errors first; dry_run returns the diff and the undecided uses only.

A language server's rename would also decide the undecided uses (by types); this one only renames what
the scopes prove, which is exact but may leave uses behind: the result says which, so they can be looked at.
"""

from __future__ import annotations

import keyword
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..patch_files import rewrite_files
from ..text import plural, printable, result
from .references import QUERY, find_references
from .symbols import language_for

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_SITES = 20_000
"""Uses a rename changes or lists at most; more is refused (narrow with path)."""
MAX_LISTED = 200
"""Undecided uses the text lists (structuredContent has them all)."""
TOOL = "rename_symbol"


def rename_symbol(ctx: Context, roots: Roots, name: str, new_name: str, path: str, dry_run: bool,
                  allow_syntax_errors: bool) -> ToolResult:
    query = name.strip().replace("::", ".")
    if not QUERY.fullmatch(query):
        raise ToolError(f"name must be an identifier or one qualified with dots (Session.get), not '{printable(name)}'")
    word = query.rsplit(".", 1)[-1]
    if not new_name.isidentifier() or keyword.iskeyword(new_name):
        raise ToolError(f"new_name must be a Python identifier that is not a keyword, not '{printable(new_name)}'")
    if new_name == word:
        raise ToolError(f"new_name is the name it has: {printable(word)}")
    if word.startswith("__") and word.endswith("__") and len(word) > 4:
        raise ToolError(f"{printable(word)} is a special method or name: Python itself uses it by that name (a "
                        "constructor call is a use of __init__), so it is not renamed")
    found = find_references(ctx, roots, query, path, MAX_SITES)
    data: dict[str, Any] = found.structured or {}
    if data.get("truncated"):
        raise ToolError(f"{printable(query)} has more than {MAX_SITES} uses under {printable(path)}: narrow the rename "
                        "with path (nothing was changed)")
    references: list[dict[str, Any]] = data.get("references", [])
    python = [item for item in references if language_for(roots.shown_path(item["path"])) == "python"]
    definitions = [item for item in python if item["definition"] and item["precision"] == "scoped"]
    if not definitions:
        other = [item for item in references if item["definition"]]
        if other:
            raise ToolError(f"{printable(query)} is defined in {printable(other[0]['path'])}, which is not Python: "
                            "rename_symbol renames Python symbols, whose uses Python's scopes can prove; find_references "
                            "lists the uses by name")
        raise ToolError(f"No Python definition of {printable(query)} under {printable(path)} (find_symbol finds "
                        "definitions); nothing was changed")
    places = {(item["path"], item["line"]) for item in definitions}
    if len(places) > 1 and "." not in query:
        listed = ", ".join(f"{printable(shown)}:{line}" for shown, line in sorted(places)[:10])
        raise ToolError(f"{printable(query)} is defined in {len(places)} places ({listed}): qualify the name (Class.method, "
                        "module.function) to say which; nothing was changed")
    scoped = [item for item in python if item["precision"] == "scoped"]
    undecided = [item for item in references if item["precision"] != "scoped"]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for item in scoped:
        by_file.setdefault(item["path"], []).append(item)
    skipped: list[dict[str, Any]] = []

    def renamer(uses: list[dict[str, Any]]) -> Any:
        def change(text: str) -> str:
            lines = text.split("\n")
            for item in sorted(uses, key=lambda use: (use["line"], use["column"]), reverse=True):
                number, start = item["line"] - 1, item["column"] - 1
                line = lines[number] if number < len(lines) else ""
                if line[start:start + len(word)] != word or _continues(line, start + len(word)) or (
                        start and _continues(line, start - 1)):
                    skipped.append(item)  # the file is not as the references read it (changed meanwhile)
                    continue
                lines[number] = line[:start] + new_name + line[start + len(word):]
            return "\n".join(lines)
        return change

    files, diff = rewrite_files(ctx, roots, {roots.shown_path(shown): renamer(uses) for shown, uses in by_file.items()},
                                TOOL, dry_run, allow_syntax_errors)
    if skipped:
        raise ToolError(f"{printable(skipped[0]['path'])} changed while the rename was being made (line "
                        f"{skipped[0]['line']} no longer holds {printable(word)} there); nothing was changed. Try again.")
    renamed = len(scoped)
    head = (f"Dry run: would rename {printable(query)} to {printable(new_name)}" if dry_run else
            f"Renamed {printable(query)} to {printable(new_name)}")
    lines = [f"{head}: {plural(renamed, 'use')} in {plural(len(files), 'file')}"
             + ("; nothing was written." if dry_run else ".")]
    if undecided:
        lines.append(f"[Left alone, undecided: {plural(len(undecided), 'use')} only the name ties to it (an attribute "
                     "of an object of unknown type, or code of another language); look at each:]")
        lines += [f"{printable(item['path'])}:{item['line']}:{item['column']}: {printable(item['text'])}"
                  for item in undecided[:MAX_LISTED]]
        if len(undecided) > MAX_LISTED:
            lines.append(f"[… {len(undecided) - MAX_LISTED} more in structuredContent]")
    if data.get("excluded"):
        lines.append(f"[Not renamed: {plural(data['excluded'], 'other use')} of the word bound to something else (a "
                     "local, a parameter, a keyword argument, another class's member).]")
    text = "\n".join(lines) + ("\n" + diff.rstrip("\n") if diff else "")
    sites = [{key: item[key] for key in ("path", "line", "column")} for item in scoped]
    return result(text, {"name": query, "new_name": new_name, "renamed": renamed, "sites": sites, "files": files,
                         "diff": diff,
                         "undecided": [{key: item[key] for key in ("path", "line", "column", "text")}
                                       for item in undecided],
                         "excluded": data.get("excluded", 0), "dry_run": dry_run})


def _continues(line: str, index: int) -> bool:
    """Whether the character at `index` would make the name part of a longer identifier."""
    return 0 <= index < len(line) and (line[index].isalnum() or line[index] == "_")

