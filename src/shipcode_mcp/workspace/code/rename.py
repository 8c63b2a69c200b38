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

import ast
import builtins
import io
import keyword
import tokenize
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError, inside
from ..lsp.installed import backend
from ..lsp.servers import NotReady
from ..patch_files import rewrite_files
from ..text import plural, printable
from ..writes import checked_result
from . import precise
from .implementations import find_implementations
from .names import word_regex
from .parsers import POOL, Failed
from .pyscopes import LABELS, SCOPED
from .references import EXACT, QUERY, definition_places, find_references
from .rename_text import headline, outside_lines, undecided_lines
from .server_rename import renamed_by_server, server_rename
from .source import Folder, read_source
from .symbols import language_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

MAX_SITES = 20_000
"""Uses a rename changes or lists at most; more is refused (narrow with path)."""
TOOL = "rename_symbol"
TIED = (EXACT, LABELS[SCOPED])
"""The uses a rename changes: those the language server or the scopes tie to the symbol."""
BUILTINS = frozenset(dir(builtins))
"""Names a module sees without binding them: a symbol renamed to one would shadow it."""


def rename_symbol(ctx: Context, roots: Roots, name: str, new_name: str, path: str, dry_run: bool,
                  allow_syntax_errors: bool) -> ToolResult:
    query = name.strip().replace("::", ".")
    if not QUERY.fullmatch(query):
        raise ToolError(f"name must be an identifier or one qualified with dots (Session.get), not '{printable(name)}'")
    word = query.rsplit(".", 1)[-1]
    if "." not in query:
        raise ToolError(f"Qualify {printable(query)} with its module or class (core.{printable(query)}, "
                        f"Session.{printable(query)}): a bare name reaches every attribute of that name too")
    if new_name == word:
        raise ToolError(f"new_name is the name it has: {printable(word)}")
    found = find_references(ctx, roots, query, path, MAX_SITES)
    data: dict[str, Any] = found.structured or {}
    if data.get("truncated"):
        raise ToolError(f"{printable(query)} has more than {MAX_SITES} uses; nothing was changed")
    defined = {item["path"]: language_for(roots.shown_path(item["path"])) or "" for item in data.get("references", [])
               if item["definition"]}
    if defined and "python" not in defined.values():
        cannot = sorted(shown for shown, language in defined.items() if not renamed_by_server(language))
        if not cannot and len({backend(language) for language in defined.values()}) > 1:
            raise ToolError(f"{printable(query)} is defined in files of several languages ("
                            + ", ".join(printable(shown) for shown in sorted(defined)[:5])
                            + "): narrow path to the one to rename; nothing was changed")
        if not cannot:
            return server_rename(ctx, roots, query, new_name, path, min(defined.values()), dry_run,
                                 allow_syntax_errors, data.get("references", []), data.get("excluded", 0))
        raise ToolError(f"{printable(query)} is defined in {printable(cannot[0])}, a language rename_symbol does not "
                        "rename (Python by its scopes; TypeScript, JavaScript, C and C++ through their language "
                        "servers); find_references lists the uses by name")
    if not new_name.isidentifier() or keyword.iskeyword(new_name) or _special(new_name) or new_name in BUILTINS:
        raise ToolError(f"new_name must be a Python identifier that is not a keyword, a builtin or a special name "
                        f"(__x__), not '{printable(new_name)}'")
    if _special(word):
        raise ToolError(f"{printable(word)} is a special method or name: Python itself uses it by that name (a "
                        "constructor call is a use of __init__), so it is not renamed")
    if data.get("skipped"):
        unread = ", ".join(printable(item["path"]) for item in data.get("skipped_files", [])[:5])
        raise ToolError(f"Refused: {plural(data['skipped'], 'file')} that may use {printable(word)} could not be read "
                        f"({unread}: too large, binary, or unparsable), so a rename could leave uses behind; nothing was "
                        "changed")
    references: list[dict[str, Any]] = data.get("references", [])
    python = [item for item in references if language_for(roots.shown_path(item["path"])) == "python"]
    definitions = [item for item in python if item["definition"] and item["precision"] in TIED]
    if not definitions:
        raise ToolError(f"No definition of {printable(query)} under {printable(path)} that rename_symbol can rename "
                        "(find_symbol finds definitions; one inside a function is its own business); nothing was changed")
    overrides = _overrides(ctx, roots, query, path)
    if overrides:
        listed = ", ".join(printable(item) for item in overrides[:10])
        raise ToolError(f"Refused: {printable(query)} is overridden in {listed}; renaming it alone would change which "
                        "method runs. Rename the overrides first (each by its qualified name); nothing was changed")
    note = data.get("language_server_note")
    # (find_references may have asked another language's server too: the rename is Python's, basedpyright's)
    server = _python_server(roots) if data.get("language_server") is not None else None
    scoped = [item for item in python if item["precision"] in TIED]
    outside: list[str] | None = None
    if server is not None:
        try:
            exact, outside = _server_sites(ctx, roots, query, new_name, path)
        except NotReady as err:  # (it answered the references a moment ago: rare)
            server, note = None, err.note
        else:  # and the scopes' uses in files the server left out (find_references keeps them `scoped`)
            made = {(item["path"], item["line"], item["column"]) for item in exact}
            scoped = exact + [item for item in python if item["precision"] == LABELS[SCOPED]
                              and (item["path"], item["line"], item["column"]) not in made]
    ours = {id(item) for item in python}  # (another language's uses are never renamed here: listed, whatever their label)
    undecided = [item for item in references if item["precision"] not in TIED or id(item) not in ours]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for item in scoped:
        by_file.setdefault(item["path"], []).append(item)

    def renamer(shown: str, uses: list[dict[str, Any]]) -> Callable[[str], str]:
        def change(text: str) -> str:
            names = _names(text, shown)
            taken = names.get(new_name)
            if taken:
                raise ToolError(f"Refused: {printable(new_name)} is already a name in {printable(shown)} (line "
                                f"{taken[0]}): the renamed uses could mean it. Pick another name; nothing was changed")
            lines = text.split("\n")
            for item in sorted(uses, key=lambda use: (use["line"], use["column"]), reverse=True):
                number, start = item["line"] - 1, item["column"] - 1
                line = lines[number] if number < len(lines) else ""
                if ((item["line"], start) not in names.get(word, ()) or line[start:start + len(word)] != word) and \
                        not _in_fstring(names, line, item["line"], start, word):
                    raise ToolError(f"Refused: {printable(shown)}:{item['line']}:{item['column']} does not hold the "
                                    f"name {printable(word)} as Python reads it there (the file changed meanwhile, or "
                                    "writes it in another form); nothing was changed")
                lines[number] = line[:start] + new_name + line[start + len(word):]
            return _checked("\n".join(lines), text, shown, new_name, ctx)
        return change

    changes = {roots.shown_path(shown): renamer(shown, uses) for shown, uses in by_file.items()}
    files, diff, edited = rewrite_files(ctx, roots, changes, TOOL, dry_run, allow_syntax_errors)
    if outside is None:
        outside = _outside(ctx, roots, path, word)
    renamed = len(scoped)
    lines = [headline(query, new_name, renamed, len(files), dry_run)]
    if server is not None:
        lines.append(f"[Exact: {server}'s rename.]")
    elif note is not None:
        lines.append(f"[Not exact: {note}; the uses renamed are those Python's scopes prove.]")
    lines += undecided_lines(undecided, "an attribute of an object of unknown type, or code of another language")
    lines += (outside_lines(outside, path, "Not changed", "use it") if server else
              outside_lines(outside, path, "Not looked at", f"mention {printable(word)}"))
    if data.get("excluded"):
        lines.append(f"[Not renamed: {plural(data['excluded'], 'other use')} of the word bound to something else (a "
                     "local, a parameter, a keyword argument, another class's member).]")
    text = "\n".join(lines) + ("\n" + diff.rstrip("\n") if diff else "")
    sites = [{key: item[key] for key in ("path", "line", "column")} for item in scoped]
    return checked_result(ctx, roots, text, {
        "name": query, "new_name": new_name, "renamed": renamed, "sites": sites, "files": files, "diff": diff,
        "language_server": server, "language_server_note": note,
        "undecided": [{key: item[key] for key in ("path", "line", "column", "text")} for item in undecided],
        "outside": outside, "excluded": data.get("excluded", 0), "dry_run": dry_run}, edited)


def _python_server(roots: Roots) -> str | None:
    """The name of Python's language server, None when it is not ready (the scopes rename)."""
    try:
        return precise.server_name(roots, "python")
    except NotReady:
        return None


def _server_sites(ctx: Context, roots: Roots, query: str, new_name: str, path: str,
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    """The sites of the language server's rename of `query`'s definitions under `path` (path, 1-based line and
    column), and the files outside `path` it would change too (left alone, listed); ToolError when an edit is
    not the name replaced by `new_name`."""
    word = query.rsplit(".", 1)[-1]
    inner = roots.resolve(path)
    places, _ = definition_places(ctx, roots, query)
    found, ignored = precise.rename_edits(roots, "python", places, new_name, ctx.check_cancelled)
    sites: list[dict[str, Any]] = []
    outside = {roots.display(real) for real in ignored}  # (files the walk leaves out: every tool leaves them alone)
    lines_of: dict[str, list[str]] = {}
    for edit in sorted(set(found), key=lambda edit: (edit.place.real, edit.place.line, edit.place.units)):
        shown = roots.display(edit.place.real)
        if not inside(edit.place.real, inner):
            outside.add(shown)
            continue
        if edit.place.real not in lines_of:
            text = read_source(roots, edit.place.real, shown, "python").text
            _names(text, shown)  # (a file Python and the tools would read otherwise: refused as by the scopes)
            lines_of[edit.place.real] = text.split("\n")
        lines = lines_of[edit.place.real]
        line = lines[edit.place.line] if edit.place.line < len(lines) else ""
        column = precise.column_of(line, edit.place.units)
        if edit.text != new_name or precise.column_of(line, edit.end_units) - column != len(word) \
                or line[column:column + len(word)] != word:
            raise ToolError(f"Refused: the language server's rename changes {printable(shown)}:{edit.place.line + 1} "
                            f"otherwise than {printable(word)} to {printable(new_name)}; nothing was changed")
        sites.append({"path": shown, "line": edit.place.line + 1, "column": column + 1})
    return sites, sorted(outside)


def _special(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _in_fstring(names: dict[str, list[tuple[int, int]]], line: str, row: int, start: int, word: str) -> bool:
    """Whether (row, start) is `word` inside an f-string's replacement field, as a whole identifier (before
    Python 3.12 the tokenizer reads an f-string as one STRING token, whose spans `_names` keeps under "")."""
    spans = names.get("", [])
    inside_one = any(spans[index] <= (row, start) < spans[index + 1] for index in range(0, len(spans) - 1, 2))
    before = line[start - 1:start] if start else ""
    after = line[start + len(word):start + len(word) + 1]
    return inside_one and line[start:start + len(word)] == word and not (before.isalnum() or before == "_") \
        and not (after.isalnum() or after == "_")


def _string_names(token: tokenize.TokenInfo) -> list[tuple[str, tuple[int, int]]]:
    """The names a one-line string holds when its text is a Python expression: a string annotation
    (`"ProgressBar[V]"`), an `__all__` or `__slots__` entry (`"greet"`); none in prose (`'we greet here'`
    does not parse) or where escapes would shift the columns."""
    if token.start[0] != token.end[0]:
        return []
    quote = token.string.lstrip("rRbBuU")
    prefix = len(token.string) - len(quote)
    width = 3 if quote[:3] in ('"""', "\'\'\'") else 1
    text = quote[width:-width]
    if "\\" in text or not text.strip():
        return []
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return []
    column = token.start[1] + prefix + width
    found: list[tuple[str, tuple[int, int]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.lineno == 1:
            found.append((node.id, (token.start[0], column + node.col_offset)))
        elif isinstance(node, ast.Attribute) and node.end_lineno == 1 and node.end_col_offset is not None:
            found.append((node.attr, (token.start[0], column + node.end_col_offset - len(node.attr))))
    return found


def _names(text: str, shown: str) -> dict[str, list[tuple[int, int]]]:
    """Every identifier of a Python text as its tokenizer reads it (comments are not names; a string's are when
    its text is an expression: `_string_names`; an f-string's spans are kept under "" for `_in_fstring`), with
    where each occurs (line, 0-based column); a file with lone CR line ends (Python's parser breaks lines
    there, the tools' positions do not) or that does not tokenize is refused."""
    if "\r" in text.replace("\r\n", ""):
        raise ToolError(f"Refused: {printable(shown)} has lone CR line ends; rename_symbol leaves such files to an "
                        "editor. Nothing was changed")
    names: dict[str, list[tuple[int, int]]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NAME:
                names.setdefault(token.string, []).append(token.start)
            elif token.type == tokenize.STRING and "f" in token.string.split("'")[0].split('"')[0].lower():
                names.setdefault("", []).extend((token.start, token.end))  # an f-string: names inside (`_in_fstring`)
            elif token.type == tokenize.STRING:
                for identifier, where in _string_names(token):
                    names.setdefault(identifier, []).append(where)
    except (tokenize.TokenError, SyntaxError) as err:
        raise ToolError(f"Refused: {printable(shown)} does not tokenize as Python ({err}); nothing was changed") from None
    return names


def _checked(new: str, old: str, shown: str, new_name: str, ctx: Context) -> str:
    """`new`, unless the rename made Python read it otherwise: it no longer compiles (a `nonlocal` left
    behind), or pyflakes finds a name now unbound that was not (a binding or `global` line not renamed)."""
    try:
        compile(new, shown, "exec", dont_inherit=True)
    except SyntaxError as err:
        raise ToolError(f"Refused: renamed, {printable(shown)} would not compile: {printable(str(err.msg))} (line "
                        f"{err.lineno}); nothing was changed") from None
    except ValueError:
        pass  # (a NUL in the text: the syntax check tells)
    before, after = _unbound(old, shown, ctx), _unbound(new, shown, ctx)
    added = [item for item in after if item not in before]
    if added:
        line, message = added[0]
        raise ToolError(f"Refused: renamed, {printable(shown)} would have {printable(message)} (line {line}): a binding "
                        f"of the name that the scopes could not tie to the symbol (an import alias, a `global` line, "
                        f"a fallback definition) would be left behind; nothing was changed")
    return new


def _unbound(text: str, shown: str, ctx: Context) -> list[tuple[int, str]]:
    """pyflakes' unbound-name findings of a text (undefined names, locals read before assignment, exports)."""
    try:
        answer = POOL.ask({"op": "findings", "text": text, "language": "python", "name": shown}, ctx.check_cancelled)
    except Failed:
        return []
    return [(item[0], str(item[4]).split(" (")[0].replace(str(item[0]), "")) for item in answer["findings"]
            if item[3] in ("UndefinedName", "UndefinedLocal", "UndefinedExport")]


def _overrides(ctx: Context, roots: Roots, query: str, path: str) -> list[str]:
    """The overrides of method `query` (Class.method) in subclasses: where renaming it alone changes dispatch."""
    try:
        found = find_implementations(ctx, roots, query, path, 100).structured or {}
    except ToolError:
        return []
    return [f"{item['qualified_name']} ({item['path']}:{item['line']})" for item in found.get("implementations", [])
            if item.get("kind") in ("method", "function", "property")]  # (a class's are its subclasses: no dispatch)


def _outside(ctx: Context, roots: Roots, path: str, word: str) -> list[str]:
    """The Python files of the roots outside `path` whose text has the word: the rename did not look at them."""
    inner = roots.resolve(path)
    out: list[str] = []
    for root in roots.paths:
        if inside(root, inner):
            continue  # all of it was looked at
        folder = Folder(roots, root)
        for name in folder.candidates(ctx, word_regex(word), "python"):
            real, shown = folder.file(name)
            if not inside(real, inner):
                out.append(shown)
    return out
