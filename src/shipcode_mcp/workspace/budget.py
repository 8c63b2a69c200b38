"""Results sized for the client: every tool result kept within a token budget (--max-result-tokens, lowered per
request by the `_meta` hint META_KEY), cut where the tool's own output can be cut.

A client cuts a result that is too long for it at its own limit (Claude Code at 25 000 tokens, Codex at 10 KB)
and the model never learns what it lost. Here a result over the budget is cut before it is sent, at a boundary
the tool understands: whole lines of a file or a patch, whole items of a list (matches, files, symbols,
references, commits, findings), never inside a line, with `truncated` set, the text and structuredContent
agreeing, and a note that says the cut was made for the budget and how to get the rest (the next offset, a
narrower path). A result within the budget is sent as the tool made it, byte for byte.

Tokens are estimated, not counted (no tokenizer is loaded): the UTF-8 bytes of the text and of the
structuredContent as compact JSON, both of which a client receives, at BYTES_PER_TOKEN bytes a token. Claude's
and OpenAI's tokenizers take 3.5 to 4 bytes a token of English and code, and Claude Code itself reckons 4
characters a token; 3 errs on the safe side (dense JSON, short identifiers and numbers run nearer 3).
"""

from __future__ import annotations

import json
import re

from ..primitives import ToolResult, text_content
from .text import plural, printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..context import Context

BYTES_PER_TOKEN = 3
"""The estimate: a token per this many bytes of text and JSON (see the module's doc)."""
DEFAULT_MAX_TOKENS = 20_000
"""--max-result-tokens' default: under Claude Code's 25 000 (its MAX_MCP_OUTPUT_TOKENS default)."""
MIN_TOKENS = 1_000
"""The smallest budget: a smaller `_meta` hint is taken as this (and the option refuses one): a line or an
item must fit. One line or item is returned even when it alone is larger."""
META_KEY = "io.github.shipcode-mcp/maxResultTokens"
"""The key in tools/call's `params._meta` by which a client asks for a smaller budget (never a larger one)."""

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)


def budget(ctx: Context, configured: int) -> int:
    """The tokens this call's result may take (0: no cap): the option, or the client's hint when it is smaller
    (an integer of at least 1; below MIN_TOKENS it counts as MIN_TOKENS). A hint that is not a positive
    integer is ignored."""
    meta = ctx.params.get("_meta")
    asked = meta.get(META_KEY) if isinstance(meta, dict) else None
    if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
        asked = max(asked, MIN_TOKENS)
        return min(configured, asked) if configured else asked
    return configured


def size(text: str, data: dict[str, Any]) -> int:
    """The bytes a client receives of a result: its text and its structuredContent (compact JSON)."""
    return len(text.encode("utf-8", "surrogatepass")) + _json_size(data)


def tokens(result: ToolResult) -> int:
    """The estimated tokens of a tool result (text and structuredContent)."""
    text = "".join(item.get("text", "") for item in result.content)
    return -(-(len(text.encode("utf-8", "surrogatepass")) + _json_size(result.structured or {})) // BYTES_PER_TOKEN)


def _json_size(value: Any) -> int:
    return len(_ENCODER.encode(value).encode("utf-8", "surrogatepass"))


def fit(name: str, value: Any, cap: int, arguments: dict[str, Any], again: Callable[..., Any]) -> Any:
    """`value`, tool `name`'s result, cut to `cap` tokens where the tool knows how (see CUTTERS); as it is when it
    fits, is not a plain result (an error, no structuredContent) or the tool has no way to be cut. `again` calls
    the tool again with some arguments changed (read_file reads a shorter page)."""
    if (not isinstance(value, ToolResult) or value.is_error or not isinstance(value.structured, dict)
            or len(value.content) != 1 or value.content[0].get("type") != "text"):
        return value
    cutter = CUTTERS.get(name)
    text = value.content[0]["text"]
    if cutter is None or size(text, value.structured) <= cap * BYTES_PER_TOKEN:
        return value
    cut = cutter(_Cut(name, text, value.structured, cap, arguments, again))
    return value if cut is None else cut


class _Cut:
    """One result to cut: its text and data, the budget (tokens, and bytes), the call's arguments."""

    __slots__ = ("again", "arguments", "data", "limit", "name", "text", "tokens")

    def __init__(self, name: str, text: str, data: dict[str, Any], cap: int, arguments: dict[str, Any],
                 again: Callable[..., Any]) -> None:
        self.name, self.text, self.data, self.tokens = name, text, data, cap
        self.limit = cap * BYTES_PER_TOKEN
        self.arguments, self.again = arguments, again

    def why(self) -> str:
        return f"cut to fit the client's budget of {self.tokens} tokens"

    def fits(self, text: str, data: dict[str, Any]) -> bool:
        return size(text, data) <= self.limit


def _line_bytes(line: str) -> int:
    """A line's cost as text and as a JSON string's part: its bytes twice (escapes counted), and the line ends."""
    return len(line.encode("utf-8", "surrogatepass")) + _json_size(line)


def _largest(costs: list[int], room: int) -> int:
    """How many of the first costs fit in `room` (at least 1 when there are any)."""
    used = 0
    for count, cost in enumerate(costs):
        used += cost
        if used > room:
            return max(count, 1)
    return len(costs)


def _shrink(count: int, build: Callable[[int], tuple[str, dict[str, Any]]], cut: _Cut) -> tuple[str, dict[str, Any]]:
    """build(count), or with fewer parts until it fits (down to one part)."""
    text, data = build(count)
    while count > 1 and not cut.fits(text, data):
        over = size(text, data) - cut.limit
        count -= max(1, min(count - 1, count * over // max(1, size(text, data)) // 2))
        text, data = build(count)
    return text, data


# -- lists: whole items ----------------------------------------------------------------------------------
Blocks = tuple[list[str], list[tuple[list[str], int]], list[str]]
"""A list result's text as (lines before the items, one block of lines per group of items with how many items
it shows, lines after them)."""


def _one_per_line(lines: list[str], count: int) -> Blocks | None:
    if len(lines) < count:
        return None
    return [], [([line], 1) for line in lines[:count]], lines[count:]


def _with_leaders(lines: list[str], count: int, leader: Callable[[str], bool]) -> Blocks | None:
    """One line per item, each possibly after lines `leader` tells (separators, group headings)."""
    blocks: list[tuple[list[str], int]] = []
    at = 0
    for _ in range(count):
        start = at
        while at < len(lines) and leader(lines[at]):
            at += 1
        if at >= len(lines):
            return None
        at += 1
        blocks.append((lines[start:at], 1))
    return [], blocks, lines[at:]


def _with_followers(lines: list[str], count: int, follower: Callable[[str], bool]) -> Blocks | None:
    """Items of a first line and the lines `follower` tells after it (git_log: a commit and its message)."""
    blocks: list[tuple[list[str], int]] = []
    at = 0
    for _ in range(count):
        if at >= len(lines):
            return None
        start = at
        at += 1
        while at < len(lines) and follower(lines[at]):
            at += 1
        blocks.append((lines[start:at], 1))
    return [], blocks, lines[at:]


class _List:
    """How a list tool's result is cut: its items under `key`, its text split into blocks (`split`), the notes
    of the tool that the cut makes wrong (`stale`: the counts), the counts to recount (`recount`) and where the
    rest is (`rest`, from the first item left out)."""

    def __init__(self, key: str, noun: str, split: Callable[[list[str], dict[str, Any]], Blocks | None],
                 stale: str, rest: Callable[[_Cut, Any], str],
                 recount: Callable[[dict[str, Any], list[Any], int], None] | None = None) -> None:
        self.key, self.noun, self.split, self.rest, self.recount = key, noun, split, rest, recount
        self.stale = re.compile(stale)

    def __call__(self, cut: _Cut) -> ToolResult | None:
        items = cut.data.get(self.key)
        if not isinstance(items, list) or not items:
            return None
        blocks = self.split(cut.text.split("\n"), cut.data)
        if blocks is None or sum(count for _, count in blocks[1]) != len(items):
            return None  # not as the tool writes it: left as it is
        head, parts, tail = blocks
        tail = [line for line in tail if not self.stale.match(line)]
        firsts = [0]
        for _, count in parts:
            firsts.append(firsts[-1] + count)

        def build(kept: int) -> tuple[str, dict[str, Any]]:
            shown = items[:firsts[kept]]
            data = {**cut.data, self.key: shown, "truncated": True}
            if self.recount is not None:
                self.recount(data, shown, kept)
            more = "+" if cut.data.get("truncated") else ""
            # The next item; or, where the blocks left hold none (a folder's files without symbols), the next
            # block's first line (its file's name).
            following = items[firsts[kept]] if firsts[kept] < len(items) else parts[kept][0][0]
            note = (f"[Showing the first {plural(len(shown), self.noun)} of {len(items)}{more}: {cut.why()}. "
                    f"{self.rest(cut, following)}]")
            lines = head + [line for block, _ in parts[:kept] for line in block] + [note] + tail
            return "\n".join(lines), data

        costs = [sum(len(line.encode("utf-8", "surrogatepass")) + 1 for line in block)
                 + sum(_json_size(item) + 1 for item in items[firsts[i]:firsts[i + 1]]) for i, (block, _) in enumerate(parts)]
        empty_text, empty_data = build(0)
        kept = _largest(costs, cut.limit - size(empty_text, empty_data))
        if kept >= len(parts):
            return None  # the items fit: what is over is not theirs to cut
        text, data = _shrink(kept, build, cut)
        return ToolResult([text_content(text)], data)


def _quoted(value: str) -> str:
    return repr(printable(value)) if "'" not in value else json.dumps(printable(value), ensure_ascii=False)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


def _files_rest(cut: _Cut, item: dict[str, Any]) -> str:
    if not isinstance(item, str):
        return ""
    parent = _parent(item)
    if parent == (cut.arguments.get("path") or ".").rstrip("/"):  # that listing again: only a pattern narrows it
        return f"The next file is {printable(item)}: give a pattern (or list a subfolder) to see the rest."
    return (f"The next file is {printable(item)}: list a narrower path (such as path={_quoted(parent)}) or "
            "give a pattern to see the rest.")


def _in_file(tool: str, what: str) -> Callable[[_Cut, dict[str, Any]], str]:
    def rest(cut: _Cut, item: dict[str, Any]) -> str:
        where = f"The next {what} is in {printable(item['path'])}:{item['line']}"
        if item["path"] == cut.arguments.get("path"):  # that call again: a narrower question, or the file itself
            return (f"{where}: narrow the question, or read_file with path={_quoted(item['path'])} and "
                    f"offset={item['line']} reads on there.")
        return f"{where}: call {tool} with path={_quoted(item['path'])} for that file's, or narrow path, to see the rest."
    return rest


def _search_recount(data: dict[str, Any], lines: list[dict[str, Any]], blocks: int) -> None:
    matched = [line for line in lines if line["match"]]
    data["match_count"] = len(matched)
    data["file_count"] = len({line["path"] for line in matched})


def _path_recount(data: dict[str, Any], items: list[dict[str, Any]], blocks: int) -> None:
    data["file_count"] = len({item["path"] for item in items})


def _log_rest(cut: _Cut, item: dict[str, Any]) -> str:
    ref = cut.arguments.get("ref")
    start = item["commit"]
    commits = cut.data["commits"]
    shown = commits[:commits.index(item)] if item in commits else []
    if any(len(commit["parents"]) != 1 for commit in shown) or (shown and shown[-1]["parents"] != [start]):
        # merged history: the commits left are not all reached from the next one
        return (f"The next commit is {item['commit'][:12]}: the history shown has merges, so no one ref reaches the "
                "rest; narrow with path, or a ref range (A..B), to read on.")
    if isinstance(ref, str) and ".." in ref and "..." not in ref:
        start = f"{ref.split('..', 1)[0]}..{start}"
    elif isinstance(ref, str) and "..." in ref:
        return f"The next commit is {item['commit'][:12]}: narrow with path, or a ref range ending there, to read on."
    return f"The next commit is {item['commit'][:12]}: call git_log with ref={_quoted(start)} to read on from it."


def _outline_split(lines: list[str], data: dict[str, Any]) -> Blocks | None:
    symbols = data["symbols"]
    if all(item["path"] == data["path"] for item in symbols):  # a file's outline: a line a symbol
        return _one_per_line(lines, len(symbols))
    # a folder's: a block a file, its name then its symbols indented (data["files"] of them)
    blocks: list[tuple[list[str], int]] = []
    at = 0
    for _ in range(data["files"]):
        if at >= len(lines):
            return None
        start = at
        at += 1
        while at < len(lines) and lines[at].startswith("  "):
            at += 1
        blocks.append((lines[start:at], at - start - 1))
    return [], blocks, lines[at:]


def _outline_recount(data: dict[str, Any], symbols: list[dict[str, Any]], blocks: int) -> None:
    if any(item["path"] != data["path"] for item in symbols):
        data["files"] = blocks  # a block a file outlined, with its symbols or none


def _outline_rest(cut: _Cut, item: dict[str, Any] | str) -> str:
    if isinstance(item, str):  # the name line of a file with no symbol shown
        return (f"The next file is {printable(item.strip())}: call outline with path={_quoted(item.strip())} (or a "
                "narrower folder) to see the rest.")
    if item["path"] == cut.data["path"]:
        return (f"The next symbol is {printable(item['qualified_name'])} at line {item['line']}: pass a smaller depth, "
                "or read_symbol a part.")
    return (f"The next file is {printable(item['path'])}: call outline with path={_quoted(item['path'])} (or a "
            "narrower folder) to see the rest.")


_SHOWING = r"\[(Showing the first |Showing the \d+ most recent )"

CUTTERS: dict[str, Callable[[_Cut], ToolResult | None]] = {
    "list_files": _List("files", "file", lambda lines, data: _one_per_line(lines, len(data["files"])),
                        _SHOWING, _files_rest),
    "search_code": _List("lines", "line", lambda lines, data: _with_leaders(lines, len(data["lines"]), "--".__eq__),
                         _SHOWING + r"|\[\d+ match", _in_file("search_code", "line"), _search_recount),
    "git_log": _List("commits", "commit",
                     lambda lines, data: _with_followers(lines, len(data["commits"]), lambda line: line.startswith("    ")),
                     _SHOWING, _log_rest),
    "outline": _List("symbols", "symbol", _outline_split, r"\[Outline cut after ", _outline_rest, _outline_recount),
    "find_symbol": _List("symbols", "definition", lambda lines, data: _one_per_line(lines, len(data["symbols"])),
                         _SHOWING, _in_file("find_symbol", "definition")),
    "find_references": _List("references", "reference",
                             lambda lines, data: _with_leaders(lines, len(data["references"]),
                                                               lambda line: line.startswith("[Where only the name")),
                             _SHOWING + r"|\[\d+ references? in ", _in_file("find_references", "reference"),
                             _path_recount),
    "find_implementations": _List("implementations", "implementation",
                                  lambda lines, data: _one_per_line(lines, len(data["implementations"])),
                                  _SHOWING + r"|\[Stopped after |\[\d+ implementations? of ",
                                  _in_file("find_implementations", "implementation")),
    "diagnostics": _List("findings", "finding", lambda lines, data: _one_per_line(lines, len(data["findings"])),
                         _SHOWING + r"|\[\d+ errors?, \d+ warnings? in ", _in_file("diagnostics", "finding")),
    "search_structure": _List("matches", "match", lambda lines, data: _one_per_line(lines, len(data["matches"])),
                              _SHOWING + r"|\[\d+ match(es)? in ", _in_file("search_structure", "match"),
                              _path_recount),
}


# -- text bodies: whole lines ------------------------------------------------------------------------------
def _read_file(cut: _Cut) -> ToolResult | None:
    """A shorter page, read again (the tool's own text and notes, with the offset to read on), and a note."""
    data = cut.data
    shown = data["end_line"] - data["start_line"] + 1
    if shown <= 1:
        return None
    width = max(6, len(str(data["end_line"]))) + 1
    costs = [width + _line_bytes(line) for line in data["text"].split("\n")]
    count = _largest(costs, cut.limit - 1500)  # 1500: the other fields and the notes
    smallest: ToolResult | None = None
    for _ in range(8):
        value = cut.again(limit=count)
        if not isinstance(value, ToolResult) or value.is_error or not isinstance(value.structured, dict):
            return smallest
        page = value.structured
        count = page["end_line"] - page["start_line"] + 1
        note = (f"[The page was {cut.why()}: lines {page['start_line']}-{page['end_line']} of the {shown} it would "
                f"have held. "
                f"Call read_file with offset={page['next_offset']} to read on (limit={max(count, 1)} keeps each page "
                "within it).]")
        text = f"{value.content[0]['text']}\n{note}"
        smallest = ToolResult([text_content(text)], page)
        if cut.fits(text, page) or count <= 1:
            return smallest
        count = max(1, count - max(1, count * (size(text, page) - cut.limit) // size(text, page)) - 1)
    return smallest  # still over (what is fixed, a long path, takes most of it): the smallest page tried


def _lines_of(text: str) -> list[str]:
    """Lines with their ends (only '\\n' ends a line)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    return [*out, lines[-1]] if lines[-1] else out


def _body_cut(cut: _Cut, body: str, render: Callable[[str, int], tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, Any]] | None:
    """The most whole lines of `body` that fit once `render(head, lines kept)` makes the result of them."""
    lines = _lines_of(body)
    if len(lines) <= 1:
        return None
    empty = render("", 0)
    count = _largest([_line_bytes(line) for line in lines], cut.limit - size(*empty))
    if count >= len(lines):
        return None  # the lines fit: what is over is not theirs to cut

    def build(kept: int) -> tuple[str, dict[str, Any]]:
        return render("".join(lines[:kept]), kept)

    return _shrink(count, build, cut)


_FILE_HEADER = re.compile(r"diff --(git|cc|combined) ")


def _git_diff(cut: _Cut) -> ToolResult | None:
    from .git.commands import mask_patch  # the git tools' own masking (loaded with them)

    data = cut.data
    files, diff = data["files"], data["diff"]
    summary = "\n".join(cut.text.split("\n")[:len(files) + 1])
    if not files or not cut.text.startswith(summary + "\n\n"):
        return None
    what = "pass path (as listed above) to see one file's changes"

    def render(head: str, kept: int) -> tuple[str, dict[str, Any]]:
        lines = head.split("\n")
        headers = sum(1 for line in lines if _FILE_HEADER.match(line))
        rest = diff[len(head):]
        index = headers if _FILE_HEADER.match(rest) or not rest else headers - 1
        hint = what
        if 0 <= index < len(files):
            name = files[index]["path"]
            if "old_path" in files[index]:  # a rename: the path of one name alone is another diff (an addition)
                common = _common_folder(files[index]["old_path"], name)
                name = common if common != "." else name
            hint = (f"the next changes are those of {printable(name)}: call git_diff with path={_quoted(name)} (and "
                    "the same ref and staged) to see that file's")
            if "old_path" in files[index] and name == files[index]["path"]:
                hint += (f" (renamed from {printable(files[index]['old_path'])}: with this path alone it shows as "
                         "added)")
            if cut.arguments.get("path") == name:
                hint = ("this one file's diff is larger than the budget: read the file itself with read_file, or "
                        "compare fewer changes (a nearer ref)")
        note = (f"[The diff was {cut.why()}, after {plural(kept, 'line')} of the patch; the file list above is "
                f"complete. To see the rest, {hint}.]")
        text = (summary + "\n\n" + mask_patch(head) + note).rstrip("\n")
        return text, {**data, "diff": head, "truncated": True}

    built = _body_cut(cut, diff, render)
    return None if built is None else ToolResult([text_content(built[0])], built[1])


def _common_folder(first: str, second: str) -> str:
    """The deepest folder holding both paths ("." for the root)."""
    common = []
    for one, other in zip(first.split("/")[:-1], second.split("/")[:-1], strict=False):
        if one != other:
            break
        common.append(one)
    return "/".join(common) or "."


def _git_show(cut: _Cut) -> ToolResult | None:
    from .git.commands import mask_patch  # the git tools' own masking (loaded with them)

    data = cut.data
    body, kind = data["text"], data["type"]
    if kind == "tree":
        if body.count("\n") != cut.text.count("\n") + 1 - ("\n[Cut at " in cut.text):
            return None  # a name with a line break: entries and lines do not match, left as it is

        def mask(text: str) -> str:
            return "".join(printable(line) + "\n" for line in _lines_of(text))
    else:
        mask = mask_patch if kind in ("commit", "tag") else _same

    def render(head: str, kept: int) -> tuple[str, dict[str, Any]]:
        if kind == "blob":
            hint = (f"git_show cannot page through a file: read_file with path={_quoted(data['path'] or '')} and "
                    f"offset={kept + 1} reads on in the working copy (git_diff with ref={_quoted(data['ref'])} and that "
                    "path shows whether it changed since)")
        elif kind == "tree":
            hint = "pass a path below it to see fewer entries"
        else:
            hint = (f"call git_diff with ref={_quoted(data['object'][:12] + '~1..' + data['object'][:12])} and a path "
                    "(one of the files listed above) to see one file's changes (a first commit has no ~1: git_show "
                    "with that ref and a path shows a file as it made it)")
            name = _file_at(head, body[len(head):])
            if name is not None:
                hint += f"; the next changes are those of {printable(name)}"
        note = f"[Shown {plural(kept, 'line')}: {cut.why()}. To see the rest, {hint}.]"
        return (mask(head) + note).rstrip("\n"), {**data, "text": head, "truncated": True}

    built = _body_cut(cut, body, render)
    return None if built is None else ToolResult([text_content(built[0])], built[1])


def _same(text: str) -> str:
    return text


def _file_at(head: str, rest: str) -> str | None:
    """The file whose changes the patch `head` + `rest` was cut in (or before), as git names it in its `diff --git
    a/X b/X` line (None when quoted or not that plain)."""
    lines = [rest.split("\n", 1)[0]] if _FILE_HEADER.match(rest) else reversed(head.split("\n"))
    for line in lines:
        if _FILE_HEADER.match(line):
            names = line[len("diff --git "):] if line.startswith("diff --git a/") else ""
            half = (len(names) - 1) // 2
            if len(names) % 2 and names[:half][2:] == names[half + 1:][2:] and names[half + 1:].startswith("b/"):
                return names[half + 3:]
            return None
    return None


def _read_symbol(cut: _Cut) -> ToolResult | None:
    data = cut.data
    text_lines = cut.text.split("\n")
    count = data["text"].count("\n") + 1
    if count <= 1 or len(text_lines) < count + 1:
        return None
    numbered, notes = text_lines[:count], text_lines[count:]
    heading, others = notes[0], [note for note in notes[1:] if not note.startswith("[Cut at line ")]
    body = data["text"].split("\n")

    def build(kept: int) -> tuple[str, dict[str, Any]]:
        end = data["line"] + kept - 1
        note = (f"[Cut at line {end}: {cut.why()}. read_file with path={_quoted(data['path'])} and offset={end + 1} "
                "reads on.]")
        shown = {**data, "text": "\n".join(body[:kept]), "truncated": True}
        return "\n".join([*numbered[:kept], heading, note, *others]), shown

    kept = _largest([_line_bytes(line) for line in body], cut.limit - size(*build(0)))
    if kept >= len(body):
        return None
    text, data = _shrink(kept, build, cut)
    return ToolResult([text_content(text)], data)


CUTTERS.update({"read_file": _read_file, "git_diff": _git_diff, "git_show": _git_show, "read_symbol": _read_symbol})


def _made_again(cut: _Cut) -> ToolResult | None:
    """A map (repo_map) or a list of regions (locate) over the budget is made again within it (or within the call's
    own budget, if smaller): the tool itself chooses what fits."""
    asked = cut.arguments.get("budget")
    again = cut.again(budget=min(cut.tokens, asked) if isinstance(asked, int) else cut.tokens)
    return again if isinstance(again, ToolResult) else None


CUTTERS.update({"repo_map": _made_again, "locate": _made_again})


def _run_command(cut: _Cut) -> ToolResult | None:
    """A run's output cut from the middle of each stream, its start and (most of) its end kept and the middle counted:
    never by running the command again."""
    from .run_command import render, shrunk  # (only for a run over the budget)

    tests = cut.data.get("tests")
    keep = max(len(str(cut.data.get("stdout", ""))), len(str(cut.data.get("stderr", ""))),
               len(json.dumps(tests)) if tests is not None else 0)
    while keep > 16:
        keep = keep * 3 // 4
        data = shrunk(cut.data, keep)
        text = render(data)
        if cut.fits(text, data):
            return ToolResult([text_content(text)], data)
    return None


CUTTERS["run_command"] = _run_command


def _change_diff(cut: _Cut) -> ToolResult | None:
    """A change's diff (the writing tools), in the text as it is in the data: cut at a line in both. The change
    itself is whole: only the showing of it is cut."""
    data = cut.data
    diff = data.get("diff")
    if not isinstance(diff, str) or not diff.rstrip("\n"):
        return None
    body = diff.rstrip("\n")
    at = cut.text.find(body)
    if at < 0:
        return None
    dry = bool(data.get("dry_run") or cut.arguments.get("dry_run"))
    done = "nothing was written (dry run)" if dry else "the change was made whole"
    where = "a dry run of fewer files or edits shows more of it" if dry else "git_diff (with path) or read_file shows the rest"

    def render(head: str, kept: int) -> tuple[str, dict[str, Any]]:
        note = f"[The diff was {cut.why()} after {plural(kept, 'line')}; {done}: {where}.]"
        text = cut.text[:at] + head + note + cut.text[at + len(body):]
        shown = {**data, "diff": head}
        if "truncated" in data:
            shown["truncated"] = True
        return text, shown

    built = _body_cut(cut, diff, render)
    return None if built is None else ToolResult([text_content(built[0])], built[1])


CUTTERS.update({name: _change_diff for name in ("write_file", "edit_file", "apply_patch", "replace_symbol",
                                                 "insert_symbol", "rename_symbol", "git_restore")})
