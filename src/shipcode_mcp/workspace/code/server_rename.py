"""rename_symbol in TypeScript, JavaScript, C and C++: the language server's own rename (tsserver's, clangd's),
exact, or nothing.

Python has a rename the syntax tree can prove (rename.py); these languages have none here: which `x.area()`
is which class's needs types, and a rename by name would change what only shares the name. So the rename is
the server's (with `--precise`, once it is ready), with an override renamed alongside the method it overrides
as both servers do, and every edit checked before anything is written: on one line of a file the workspace
lists, the name replaced by the new one, or by the forms TypeScript writes to keep what a file exports or an
object's keys unchanged (`make: build` in `{ make }`, `build as make` in `export { make }`). The servers do
not check that the new name is free: a file the rename changes that already has the word is refused, since a
use could come to mean it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError, inside
from ..lsp.installed import backend
from ..lsp.servers import NotReady
from ..patch_files import rewrite_files
from ..text import plural, printable
from ..writes import checked_result
from . import precise
from .references import EXACT, code_definitions, definition_places
from .rename_text import headline, undecided_lines
from .source import Folder, read_source

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...context import Context
    from ...primitives import ToolResult
    from ..roots import Roots

LANGUAGES = frozenset({"typescript", "tsx", "javascript", "c", "cpp"})
"""The languages renamed through their language server (the rest has no rename but Python's)."""
_NAMES = {"typescript": "TypeScript", "tsx": "TypeScript", "javascript": "JavaScript", "c": "C", "cpp": "C++"}
"""How each language is named to the user."""
JS_RESERVED = frozenset(
    "break case catch class const continue debugger default delete do else enum export extends false finally for "
    "function if import in instanceof new null return super switch this throw true try typeof var void while with "
    "yield let static implements interface package private protected public await arguments eval undefined".split())
"""Words a JavaScript or TypeScript binding cannot be named (reserved, or reserved in strict code)."""
JS_SPECIAL = frozenset("constructor prototype __proto__ then toString valueOf toJSON toLocaleString hasOwnProperty "
                       "isPrototypeOf propertyIsEnumerable length name caller callee default".split())
"""Names JavaScript itself calls or reads by name (a member renamed to one changes what the runtime does, and one
renamed from one stops being called)."""
CPP_KEYWORDS = frozenset(
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class "
    "compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype "
    "default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline "
    "int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register "
    "reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast struct switch "
    "template this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile "
    "wchar_t while xor xor_eq _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn "
    "_Static_assert _Thread_local".split())
"""C's and C++'s keywords (and alternative operator names): never a name."""


def renamed_by_server(language: str) -> bool:
    """Whether a symbol of `language` is renamed by its language server (server_rename)."""
    return language in LANGUAGES


def server_rename(ctx: Context, roots: Roots, query: str, new_name: str, path: str, language: str, dry_run: bool,
                  allow_syntax_errors: bool, references: list[dict[str, Any]], excluded: int) -> ToolResult:
    """rename_symbol of `query`, defined in a file of `language` (LANGUAGES), through its language server;
    `references` are find_references' uses of it (those the server does not rename are listed as undecided),
    `excluded` how many it found bound to something else."""
    served = backend(language) or language
    word = query.rsplit(".", 1)[-1]
    _check_name(new_name, served)
    if served == "typescript" and word in JS_SPECIAL:
        raise ToolError(f"{printable(word)} is a name JavaScript itself uses (the runtime calls or reads it by that "
                        "name), so it is not renamed")
    if not precise.enabled():
        raise ToolError(f"{printable(query)} is a {_NAMES[language]} symbol: rename_symbol renames it through its "
                        "language server, which this server runs only with --precise (find_references lists its uses by name); "
                        "nothing was changed")
    _check_free(ctx, roots, new_name, served)
    try:
        server = precise.server_name(roots, served, present=True)
        places = [place for place in definition_places(ctx, roots, query, (served,))[0] if not _private_field(roots, place)]
        if not places:
            raise ToolError(f"No definition of {printable(query)} that code elsewhere can reach; nothing was changed")
        for real in {place.real for place in places}:  # (positions after such a break are on other lines)
            _lsp_lines(read_source(roots, real, roots.display(real)).text, roots.display(real))
        found, ignored = precise.rename_edits(roots, served, places, new_name, ctx.check_cancelled)
    except NotReady as err:
        raise ToolError(f"{printable(query)} is a {_NAMES[language]} symbol, renamed only through its language "
                        f"server, which cannot now: {err.note}; nothing was changed") from None
    inner = roots.resolve(path)
    by_file: dict[str, list[precise.Edit]] = {}
    outside = {roots.display(real) for real in ignored}  # (files the walk leaves out: no tool changes them)
    for edit in set(found):
        if inside(edit.place.real, inner):
            by_file.setdefault(edit.place.real, []).append(edit)
        else:
            outside.add(roots.display(edit.place.real))
    if outside:  # (a rename made in part leaves the code broken: all of it, or none)
        raise ToolError(f"Refused: the {server} language server's rename also changes "
                        + ", ".join(printable(item) for item in sorted(outside)[:10])
                        + f", outside {printable(path)} or in files the workspace ignores (.gitignore), which "
                        "rename_symbol does not change; rename with a path that holds them all; nothing was changed")
    missing = [place for place in places if not any(edit.place.line == place.line and edit.place.units == place.units
                                                    for edit in by_file.get(place.real, ()))]
    if missing:
        raise ToolError(f"Refused: the {server} language server's rename does not change the definition at "
                        f"{printable(roots.display(missing[0].real))}:{missing[0].line + 1}; nothing was changed")
    sites = _sites(roots, by_file)
    made = {(site["path"], site["line"], site["column"]) for site in sites}
    left = [item for item in references if item["precision"] == EXACT and (item["path"], item["line"], item["column"])
            not in made and inside(roots.shown_path(item["path"]), inner)]
    if left and served == "cpp":  # (clangd reports a macro's use where the macro is used, and renames nothing in
        # the macro's body; TypeScript's rename keeps an exported or imported name by an alias, which is no use left)
        raise ToolError(f"Refused: the {server} language server's rename leaves behind "
                        f"{plural(len(left), 'use')} it reports itself, so the code would no longer build: "
                        + ", ".join(f"{printable(item['path'])}:{item['line']}:{item['column']}" for item in left[:10])
                        + " (a use through a macro: rename it in the macro's definition by hand); nothing was changed")

    def renamer(real: str, edits: list[precise.Edit]) -> Callable[[str], str]:
        shown = roots.display(real)

        def change(text: str) -> str:
            taken = _word_at(text, new_name)
            if taken:
                raise ToolError(f"Refused: {printable(new_name)} is already a word in {printable(shown)} (line {taken}): "
                                f"the {server} language server does not check that a renamed use cannot come to mean "
                                "it. Pick another name; nothing was changed")
            _lsp_lines(text, shown)
            lines = text.split("\n")
            for edit in sorted(edits, key=lambda edit: (edit.place.line, edit.place.units), reverse=True):
                line = lines[edit.place.line] if edit.place.line < len(lines) else ""
                start, end = precise.column_of(line, edit.place.units), precise.column_of(line, edit.end_units)
                if line[start:end] != word or edit.text not in _forms(word, new_name) \
                        or _WORD.match(line[end:end + 1]) or (start > 0 and _WORD.match(line[start - 1])):
                    raise ToolError(f"Refused: the {server} language server's rename changes {printable(shown)}:"
                                    f"{edit.place.line + 1} otherwise than {printable(word)} to {printable(new_name)} "
                                    "(or the file changed meanwhile); nothing was changed")
                lines[edit.place.line] = line[:start] + edit.text + line[end:]
            return "\n".join(lines)
        return change

    changes = {real: renamer(real, edits) for real, edits in sorted(by_file.items())}
    files, diff, edited = rewrite_files(ctx, roots, changes, "rename_symbol", dry_run, allow_syntax_errors)
    if dry_run and served == "cpp":  # (clangd reads a header from disk, not our text: every use would be an error)
        edited = []
    undecided = [{key: item[key] for key in ("path", "line", "column", "text")} for item in references
                 if (item["path"], item["line"], item["column"]) not in made and inside(roots.shown_path(item["path"]), inner)]
    lines = [headline(query, new_name, len(sites), len(files), dry_run), f"[Exact: {server}'s rename.]"]
    lines += undecided_lines(undecided, "another symbol of that name, or code the server does not compile: an "
                                        "inactive #if branch, a file outside its project")
    if dry_run and served == "cpp":
        lines.append("[new_diagnostics: not asked of a dry run in C or C++ (clangd reads the headers from disk)]")
    text = "\n".join(lines) + ("\n" + diff.rstrip("\n") if diff else "")
    return checked_result(ctx, roots, text, {
        "name": query, "new_name": new_name, "renamed": len(sites), "sites": sites, "files": files, "diff": diff,
        "language_server": server, "language_server_note": None, "undecided": undecided, "outside": sorted(outside),
        "excluded": excluded, "dry_run": dry_run}, edited)


def _sites(roots: Roots, by_file: dict[str, list[precise.Edit]]) -> list[dict[str, Any]]:
    """Where each edit is, as the tools show a place (path, 1-based line and character column), in path order."""
    sites = []
    for real, edits in by_file.items():
        shown = roots.display(real)
        source = read_source(roots, real, shown)
        _lsp_lines(source.text, shown)
        lines = source.lines()
        for edit in edits:
            line = lines[edit.place.line] if edit.place.line < len(lines) else ""
            sites.append({"path": shown, "line": edit.place.line + 1, "column": precise.column_of(line, edit.place.units) + 1})
    return sorted(sites, key=lambda site: (site["path"], site["line"], site["column"]))


def _check_name(new_name: str, served: str) -> None:
    """ToolError unless `new_name` is a name the language can give a symbol."""
    if served == "typescript":
        if not new_name.replace("$", "_").isidentifier() or new_name in JS_RESERVED or new_name in JS_SPECIAL:
            raise ToolError(f"new_name must be a JavaScript identifier that is not a reserved word or a name the "
                            f"runtime uses (constructor, then, toString, ...), not '{printable(new_name)}'")
    elif not re.fullmatch(r"[A-Za-z_]\w*", new_name, re.ASCII) or new_name in CPP_KEYWORDS:
        raise ToolError(f"new_name must be a C or C++ identifier that is not a keyword, not '{printable(new_name)}'")
    elif new_name.startswith("__") or re.match(r"_[A-Z]", new_name):
        raise ToolError(f"new_name must not be a name reserved to the compiler and its library (__x, _X): "
                        f"'{printable(new_name)}'")


def _forms(word: str, new_name: str) -> tuple[str, ...]:
    """What an edit of a rename may write in place of `word`: the new name, or TypeScript's forms that keep an
    object's key, a destructured property or a module's export as they were."""
    return new_name, f"{word}: {new_name}", f"{new_name}: {word}", f"{new_name} as {word}", f"{word} as {new_name}"


_WORD = re.compile(r"[\w$]")
_LINE_BREAKS = re.compile(r"\r(?!\n)|[\u2028\u2029\x85]")


def _lsp_lines(text: str, shown: str) -> None:
    """ToolError for a file with a line break the language server counts and the tools do not (a lone CR, U+2028,
    U+2029, NEL): its positions would land on other lines."""
    found = _LINE_BREAKS.search(text)
    if found:
        raise ToolError(f"Refused: {printable(shown)} has a line break other than LF or CRLF (line "
                        f"{text.count(chr(10), 0, found.start()) + 1}), which the language server counts as a line and "
                        "the tools do not; rename_symbol leaves such files alone; nothing was changed")


def _private_field(roots: Roots, place: precise.Place) -> bool:
    """Whether the definition at `place` is a JavaScript private member (`#area`): another name than `area`."""
    try:
        line = read_source(roots, place.real, roots.display(place.real)).lines()[place.line]
    except (ToolError, OSError, IndexError):
        return False
    column = precise.column_of(line, place.units)
    return column > 0 and line[column - 1] == "#"


def _check_free(ctx: Context, roots: Roots, new_name: str, served: str) -> None:
    """ToolError when a file of the server's languages already defines `new_name`: a renamed use could come to mean
    it (a subclass's method it would override, an overload it would join, a member that hides a function, an
    export it would shadow), which the servers do not check."""
    languages = frozenset(language for language in LANGUAGES if backend(language) == served)
    for root in roots.paths:
        for shown, symbol, _, _ in code_definitions(ctx, roots, Folder(roots, root), (new_name,), languages):
            raise ToolError(f"Refused: {printable(new_name)} is already defined in {printable(shown)}:"
                            f"{symbol.def_line}; a renamed use could come to mean it (an override, an overload, a "
                            "member that hides it), which the language server does not check. Pick another name; "
                            "nothing was changed")


def _word_at(text: str, word: str) -> int | None:
    """The first line (1-based) where `word` stands as a whole word (`$` is a word character, as in
    JavaScript), None where it does not."""
    found = re.search(rf"(?<![\w$]){re.escape(word)}(?![\w$])", text)
    return text.count("\n", 0, found.start()) + 1 if found else None
