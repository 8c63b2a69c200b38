"""What a patch says, and the text it makes of a file: the two formats agents write, without any I/O.

- **Unified diffs** as `git diff` and `git format-patch` write them (several files, new and deleted files,
  renames and copies, mode changes, `\\ No newline at end of file`, C-quoted names), and as `diff -u` writes
  them. Paths lose their `a/` and `b/` prefixes when both sides have them (git's -p1). A hunk applies where
  its context and removed lines match the file exactly, as `git apply` places it: at its line, else at the
  nearest place above or below; a hunk at line 1 must match at the start, one without trailing context at
  the end. Hunk line counts that disagree with the body (models miscount) are counted again from the body.
- **The `*** Begin Patch` format** that Codex models emit (Add, Delete, Update with `*** Move to:`, `@@`
  context lines, `*** End of File`), applied as Codex applies it: each chunk's lines are looked for after the
  previous chunk (after its `@@` line when it has one), exactly, then ignoring trailing whitespace, then
  ignoring surrounding whitespace, then with typographic dashes, quotes and spaces read as ASCII.

Binary patches and symbolic links are refused: a text patch is what is applied here. Every failure is a
PatchError naming the file and the hunk, with what the file holds where the hunk was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .text import split_lines

CODEX_BEGIN = "*** Begin Patch"


class PatchError(Exception):
    """A patch that cannot be read or does not apply; the message says where and why."""


@dataclass
class Hunk:
    """One change to a file. Unified: `old_start` (1-based; 0 for an empty file) and the lines of each side
    with their line ends. Codex: `context` (an `@@ ...` line to find first) and the lines without ends."""

    header: str
    old: list[str]
    new: list[str]
    old_start: int = 0
    leading: int = 0
    trailing: int = 0
    context: str | None = None
    at_end: bool = False
    kinds: list[str] = field(default_factory=list)


@dataclass
class FilePatch:
    """The change to one file: `old_path` None creates it, `new_path` None deletes it, both different moves
    (or copies, with `copy`) it. `content` is a Codex Add File's whole text. `mode`: 0o755 or 0o644 when the
    patch sets the executable bit or clears it."""

    old_path: str | None
    new_path: str | None
    codex: bool = False
    hunks: list[Hunk] = field(default_factory=list)
    content: str | None = None
    copy: bool = False
    mode: int | None = None
    line: int = 0

    @property
    def shown(self) -> str:
        return self.new_path if self.new_path is not None else self.old_path or ""


def parse(text: str) -> list[FilePatch]:
    """The file changes of a patch in either format, in order; PatchError if it holds none or is malformed."""
    stripped = text.strip()
    if stripped.startswith(("<<EOF", "<<'EOF'", '<<"EOF"')) and stripped.endswith("EOF"):  # a heredoc left around it
        stripped = stripped.split("\n", 1)[-1].rsplit("\n", 1)[0].strip()
    if stripped.startswith(CODEX_BEGIN):
        return _parse_codex(stripped)
    patches = _parse_unified(text.split("\n"))
    if not patches:
        raise PatchError("No file changes found: the patch must be a unified diff (`--- a/path`, `+++ b/path`, "
                         "then `@@ -l,n +l,n @@` hunks, as git diff writes it) or a `*** Begin Patch` ... "
                         "`*** End Patch` block")
    return patches


# -- the *** Begin Patch format -------------------------------------------------------------------------
_ADD, _DELETE, _UPDATE, _MOVE, _END_OF_FILE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: ", "*** End of File"


def _parse_codex(text: str) -> list[FilePatch]:
    lines = text.split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if lines[-1].strip() != "*** End Patch":
        raise PatchError("The last line of the patch must be '*** End Patch'")
    body = lines[1:-1]
    patches: list[FilePatch] = []
    index = 0
    while index < len(body):
        number = index + 2
        head = body[index].strip()
        index += 1
        if not head:
            continue
        if head.startswith(_ADD):
            added: list[str] = []
            while index < len(body) and body[index].startswith("+"):
                added.append(body[index][1:] + "\n")
                index += 1
            patches.append(FilePatch(None, _codex_path(head, _ADD, number), codex=True, content="".join(added),
                                     line=number))
        elif head.startswith(_DELETE):
            patches.append(FilePatch(_codex_path(head, _DELETE, number), None, codex=True, line=number))
        elif head.startswith(_UPDATE):
            path = _codex_path(head, _UPDATE, number)
            target = path
            if index < len(body) and body[index].startswith(_MOVE):
                target = _codex_path(body[index].strip(), _MOVE, index + 2)
                index += 1
            hunks, index = _codex_chunks(body, index, path)
            if not hunks and target == path:
                raise PatchError(f"line {number}: Update File {path} has no changes")
            patches.append(FilePatch(path, target, codex=True, hunks=hunks, line=number))
        else:
            raise PatchError(f"line {number}: '{head[:200]}' is not a file header; each file starts with "
                             "'*** Add File: PATH', '*** Delete File: PATH' or '*** Update File: PATH'")
    return patches


def _codex_path(line: str, marker: str, number: int) -> str:
    path = line[len(marker):].strip()
    if not path:
        raise PatchError(f"line {number}: '{marker.strip()}' names no file")
    return path


def _codex_chunks(body: list[str], index: int, path: str) -> tuple[list[Hunk], int]:
    """The chunks of an Update File section from `index`, and where the section ends."""
    hunks: list[Hunk] = []
    while index < len(body):
        line = body[index]
        if not line.strip():  # a blank line between chunks
            if hunks and index + 1 < len(body) and body[index + 1][:1] in (" ", "+", "-"):
                hunks[-1].old.append("")  # a blank line inside a chunk: context
                hunks[-1].new.append("")
                hunks[-1].kinds.append(" ")
            index += 1
            continue
        if line.startswith("*** ") and line.strip() != _END_OF_FILE:
            break
        context: str | None = None
        header = f"chunk {len(hunks) + 1}"
        if line.strip() == "@@" or line.startswith("@@ "):
            context = line[3:] if line.startswith("@@ ") and line[3:].strip() else None
            header = f"chunk {len(hunks) + 1} ({line.strip()[:200]})"
            index += 1
        elif hunks:
            raise PatchError(f"line {index + 2}: '{line[:200]}' in {path}: each line of a chunk starts with ' ' "
                             "(context), '-' (removed) or '+' (added), and a new chunk with '@@'")
        hunk = Hunk(header, [], [], context=context)
        while index < len(body):
            line = body[index]
            if line.strip() == _END_OF_FILE:
                hunk.at_end = True
                index += 1
                break
            marker = line[:1] or " "
            if marker == " ":
                hunk.old.append(line[1:])
                hunk.new.append(line[1:])
            elif marker == "-":
                hunk.old.append(line[1:])
            elif marker == "+":
                hunk.new.append(line[1:])
            else:
                break
            hunk.kinds.append(marker)
            index += 1
        while hunk.old and hunk.new and hunk.old[-1] == "" and hunk.new[-1] == "" and index < len(body) \
                and not body[index - 1]:  # blank lines before the next header are not context
            hunk.old.pop()
            hunk.new.pop()
            hunk.kinds.pop()
        if not hunk.old and not hunk.new:
            raise PatchError(f"{path}: {header} has no lines")
        hunks.append(hunk)
    return hunks, index


_PUNCTUATION = str.maketrans({**dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
                              **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
                              **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
                              **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f"
                                              "\u205f\u3000", " ")})
_LOOSER = (lambda line: line, str.rstrip, str.strip, lambda line: line.strip().translate(_PUNCTUATION))


def _seek(lines: list[str], pattern: list[str], start: int, at_end: bool) -> int | None:
    """Where `pattern` first occurs in `lines` at or after `start` (at the end first when `at_end`), each
    looser comparison tried only when the stricter ones found nothing."""
    if not pattern:
        return start
    last = len(lines) - len(pattern)
    if last < 0:
        return None
    first = last if at_end else start
    for loosen in _LOOSER:
        wanted = [loosen(line) for line in pattern]
        for at in range(first, last + 1):
            if all(loosen(lines[at + k]) == wanted[k] for k in range(len(wanted))):
                return at
    return None


def _keeping_context(kinds: list[str], region: list[str], new: list[str]) -> list[str]:
    """The chunk's new lines with each context line as the file has it (matched maybe ignoring whitespace or
    punctuation: the patch changes only the lines it adds and removes)."""
    kept = list(new)
    at_old = at_new = 0
    for kind in kinds:
        if kind == " " and at_old < len(region) and at_new < len(kept):
            kept[at_new] = region[at_old]
        at_old += kind != "+"
        at_new += kind != "-"
    return kept


def _apply_codex(patch: FilePatch, text: str) -> str:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    crlf = bool(lines) and all(line.endswith("\r") for line in lines)
    if crlf:
        lines = [line[:-1] for line in lines]
    edits: list[tuple[int, int, list[str]]] = []
    at = 0
    for hunk in patch.hunks:
        if hunk.context is not None:
            found = _seek(lines, [hunk.context], at, False)
            if found is None:
                raise PatchError(f"{patch.old_path}: {hunk.header} does not apply: its line '{hunk.context.strip()[:200]}' "
                                 f"was not found{' after the previous chunk' if at else ''}")
            at = found + 1
        if not hunk.old:
            edits.append((len(lines), 0, hunk.new))
            continue
        old, new = hunk.old, hunk.new
        found = _seek(lines, old, at, hunk.at_end)
        if found is None and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, old, at, hunk.at_end)
        if found is None:
            raise PatchError(f"{patch.old_path}: {hunk.header} does not apply: these lines were not found"
                             f"{' after the previous chunk' if at else ''}:\n" + "\n".join(hunk.old[:20]))
        edits.append((found, len(old), _keeping_context(hunk.kinds, lines[found:found + len(old)], new)))
        at = found + len(old)
    for start, length, new in sorted(edits, key=lambda edit: edit[0], reverse=True):
        lines[start:start + length] = new
    end = "\r\n" if crlf else "\n"
    return end.join(lines) + end if lines else ""


# -- unified diffs --------------------------------------------------------------------------------------
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


def _unquote(name: str) -> str:
    """A name as git writes it: C-quoted (octal bytes of UTF-8) when it holds special characters."""
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    out = bytearray()
    body = name[1:-1]
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            nxt = body[index + 1]
            if nxt in "0123" and re.fullmatch(r"[0-7]{3}", body[index + 1:index + 4]):
                out.append(int(body[index + 1:index + 4], 8))
                index += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            index += 2
            continue
        out += char.encode()
        index += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError(f"the name {name[:200]} is not UTF-8") from None


def _header_path(rest: str) -> str | None:
    """The path of a ---/+++ line (after the marker): unquoted, without a diff -u timestamp; None: /dev/null."""
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        end = rest.find('"', 1)
        while end > 0 and rest[end - 1] == "\\" and not rest[:end].endswith("\\\\"):
            end = rest.find('"', end + 1)
        name = _unquote(rest[:end + 1]) if end > 0 else rest
    else:
        name = rest.split("\t", 1)[0].rstrip(" ")
    return None if name == "/dev/null" else name


def _git_names(rest: str) -> tuple[str, str] | None:
    """The two names of `diff --git a/X b/Y` where they can be told apart (quoted, or the same name)."""
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        end = rest.index('"', 1) if '"' in rest[1:] else -1
        while end > 0 and rest[end - 1] == "\\":
            end = rest.find('"', end + 1)
        if end < 0:
            return None
        return _unquote(rest[:end + 1]), _unquote(rest[end + 1:].strip())
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return (rest[:start], _unquote(rest[start + 1:])) if start > 0 else None
    for at in range(len(rest)):
        if rest[at] == " " and rest[:at][2:] == rest[at + 1:][2:]:
            return rest[:at], rest[at + 1:]
    return None


def _strip(old: str | None, new: str | None, git: bool, line: int) -> tuple[str | None, str | None]:
    """The paths a header names, as git apply -p1 reads them: a `diff --git` patch's names lose their first
    component (`a/`, `b/`, or whatever a reversed or --src-prefix diff put there). A plain diff's lose it
    when both name the same file that way (`--- a/x`, `+++ b/x`; `diff -ru old/x new/x`), or when the one
    side named starts with `a/` or `b/`; otherwise they are kept as written (`--- x.py`). A plain diff never
    moves a file: two different names are refused."""
    def first_off(name: str | None) -> str | None:
        if name is None or "/" not in name:
            return name
        return name.split("/", 1)[1]
    if git:
        return first_off(old), first_off(new)
    if old is not None and new is not None:
        if old == new:
            return old, new
        if "/" in old and "/" in new and first_off(old) == first_off(new):
            return first_off(old), first_off(new)
        raise PatchError(f"line {line}: the ---/+++ lines name two files ({old[:200]}, {new[:200]}); a plain diff "
                         "changes one file (a move needs a `diff --git` header with `rename from`/`rename to`)")
    name = old if old is not None else new
    if name is not None and name.startswith(("a/", "b/")):
        name = name[2:]
    return (name, None) if old is not None else (None, name)


def _is_file_start(lines: list[str], index: int) -> bool:
    line = lines[index]
    return line.startswith("diff --git ") or (line.startswith("--- ") and index + 1 < len(lines)
                                               and lines[index + 1].startswith("+++ "))


def _parse_unified(lines: list[str]) -> list[FilePatch]:
    patches: list[FilePatch] = []
    index = 0
    while index < len(lines):
        if not _is_file_start(lines, index):
            index += 1  # a commit message, a mail header, `index ...` of a diff we do not read: git skips them too
            continue
        patch, index = _parse_file(lines, index)
        patches.append(patch)
    return patches


def _parse_file(lines: list[str], index: int) -> tuple[FilePatch, int]:
    start = index
    old: str | None = None
    new: str | None = None
    names: tuple[str, str] | None = None
    created = deleted = copy = False
    mode: int | None = None
    binary = False
    if lines[index].startswith("diff --git "):
        names = _git_names(lines[index][len("diff --git "):])
        index += 1
        while index < len(lines) and not lines[index].startswith(("--- ", "@@ ", "diff --git ")):
            line = lines[index].rstrip("\r")
            if line.startswith("new file mode "):
                created = True
                mode = _mode(line, start)
            elif line.startswith("deleted file mode "):
                deleted = True
            elif line.startswith(("rename from ", "copy from ")):
                old = "a/" + _unquote(line.split(" from ", 1)[1])  # given without a prefix: one for _strip
                copy = line.startswith("copy")
            elif line.startswith(("rename to ", "copy to ")):
                new = "b/" + _unquote(line.split(" to ", 1)[1])
            elif line.startswith("new mode "):
                mode = _mode(line, start)
            elif line.startswith(("GIT binary patch", "Binary files ")):
                binary = True
            index += 1
        if names is not None and old is None and new is None:
            old, new = names
    if index < len(lines) and lines[index].startswith("--- ") and index + 1 < len(lines) \
            and lines[index + 1].startswith("+++ "):
        minus, plus = _header_path(lines[index][4:]), _header_path(lines[index + 1][4:])
        old = minus if minus is not None or created or names is None else old
        new = plus if plus is not None or deleted or names is None else new
        if minus is None:
            created = True
        if plus is None:
            deleted = True
        index += 2
    if created:
        old = None
    if deleted:
        new = None
    if old is None and new is None:
        raise PatchError(f"line {start + 1}: a file header that names no file (both sides /dev/null, or a "
                         "`diff --git` line whose names cannot be told apart)")
    old, new = _strip(old, new, names is not None or lines[start].startswith("diff --git "), start + 1)
    shown = new if new is not None else old
    if binary:
        raise PatchError(f"line {start + 1}: the change to {shown} is a binary patch; apply_patch applies text "
                         "patches only (write_file can replace a text file whole)")
    if mode == 0o120000 or mode == 0o160000:
        raise PatchError(f"line {start + 1}: {shown} would be a {'symbolic link' if mode == 0o120000 else 'submodule'}; "
                         "apply_patch writes regular files only")
    patch = FilePatch(old, new, copy=copy, mode=mode, line=start + 1)
    while index < len(lines) and lines[index].startswith("@@ "):
        hunk, index = _parse_hunk(lines, index, shown or "")
        patch.hunks.append(hunk)
    return patch, index


def _mode(line: str, start: int) -> int:
    text = line.rsplit(" ", 1)[-1]
    try:
        value = int(text, 8)
    except ValueError:
        raise PatchError(f"line {start + 1}: '{line[:100]}' is not a file mode") from None
    kind = value & 0o170000
    if kind in (0o120000, 0o160000):
        return kind
    return 0o755 if value & 0o111 else 0o644


def _parse_hunk(lines: list[str], index: int, shown: str) -> tuple[Hunk, int]:
    header = lines[index].rstrip("\r")
    found = _HUNK.match(header)
    if found is None:
        raise PatchError(f"line {index + 1}: '{header[:200]}' is not a hunk header (@@ -l,n +l,n @@)")
    old_start = int(found[1])
    old_count = int(found[2]) if found[2] is not None else 1
    new_count = int(found[4]) if found[4] is not None else 1
    index += 1
    body_start = index
    counted = _counted(lines, index, old_count, new_count)
    if counted is None:  # the counts do not fit the body: count the body instead
        index = body_start
        while index < len(lines) and not _ends_body(lines, index):
            index += 1
        body = lines[body_start:index]
        while body and body[-1] in ("", "\r"):
            body.pop()
    else:
        body = lines[body_start:counted]
        index = counted
        while index < len(lines) and lines[index].startswith("\\"):
            body.append(lines[index])
            index += 1
    old: list[str] = []
    new: list[str] = []
    kinds: list[str] = []
    for line in body:
        marker = line[:1]
        if marker == "\\":
            if kinds:  # `\ No newline at end of file`: the line before has no line end
                if kinds[-1] in (" ", "-") and old and old[-1].endswith("\n"):
                    old[-1] = old[-1][:-1]
                if kinds[-1] in (" ", "+") and new and new[-1].endswith("\n"):
                    new[-1] = new[-1][:-1]
            continue
        text = line[1:] + "\n"
        if marker in (" ", "") or line == "\r":
            text = "\n" if marker == "" else text
            old.append(text)
            new.append(text)
            kinds.append(" ")
        elif marker == "-":
            old.append(text)
            kinds.append("-")
        elif marker == "+":
            new.append(text)
            kinds.append("+")
        else:
            raise PatchError(f"line {body_start + 1}: in {shown}, hunk '{header[:200]}' has a line that is not context, "
                             f"removed or added: '{line[:200]}'")
    leading = next((at for at, kind in enumerate(kinds) if kind != " "), len(kinds))
    trailing = next((at for at, kind in enumerate(reversed(kinds)) if kind != " "), len(kinds))
    return Hunk(header, old, new, old_start=old_start, leading=leading, trailing=trailing), index


def _counted(lines: list[str], index: int, old_count: int, new_count: int) -> int | None:
    """Where a hunk body of these counts ends, if its lines fit them and nothing that looks like more of the
    body follows; None otherwise."""
    while old_count > 0 or new_count > 0:
        if index >= len(lines):
            return None
        marker = lines[index][:1]
        if marker in (" ", ""):
            old_count -= 1
            new_count -= 1
        elif marker == "-":
            old_count -= 1
        elif marker == "+":
            new_count -= 1
        elif marker != "\\":
            return None
        if old_count < 0 or new_count < 0:
            return None
        index += 1
    while index < len(lines) and lines[index].startswith("\\"):
        index += 1
    if index < len(lines) and lines[index][:1] in ("+", "-") and not _ends_body(lines, index) \
            and lines[index].rstrip("\r") != "-- ":
        return None  # more changed lines than the header counted
    return index


def _ends_body(lines: list[str], index: int) -> bool:
    line = lines[index]
    if line.startswith(("@@ ", "diff ")) or _is_file_start(lines, index) or line.rstrip("\r") == "-- ":
        return True
    return line[:1] not in (" ", "+", "-", "\\", "") and line != "\r"


def _apply_unified(patch: FilePatch, text: str) -> str:
    lines = split_lines(text)
    at_least = 0
    shift = 0
    for number, hunk in enumerate(patch.hunks, 1):
        old, new = hunk.old, hunk.new
        found = _place(lines, hunk, old, shift, at_least)
        if found is None and lines and all(line.endswith("\r\n") for line in lines) \
                and not any(line.endswith("\r\n") for line in old):
            old, new = _crlf(old), _crlf(new)
            found = _place(lines, hunk, old, shift, at_least)
        if found is None:
            raise PatchError(_mismatch(patch, number, hunk, lines, shift))
        lines[found:found + len(old)] = new
        shift = found - max(hunk.old_start - 1, 0) + len(new) - len(old)
        at_least = found + len(new)
    return "".join(lines)


def _crlf(lines: list[str]) -> list[str]:
    return [line[:-1] + "\r\n" if line.endswith("\n") else line for line in lines]


def _place(lines: list[str], hunk: Hunk, old: list[str], shift: int, at_least: int) -> int | None:
    """Where the hunk's old lines are, as git apply finds them: a hunk at line 0 or 1 only at the start, one
    without trailing context only at the end (both: the whole file), any other at the place nearest its
    header's line (moved by the hunks before). A hunk without any context (diff -U0) is placed by its line."""
    zero_context = hunk.leading == 0 and hunk.trailing == 0
    last = len(lines) - len(old)
    at_start = hunk.old_start == 0 or (hunk.old_start == 1 and not zero_context)
    at_end = hunk.trailing == 0 and not zero_context
    if at_start or at_end:
        at = 0 if at_start else last
        ok = at >= at_least and (not at_start or at == 0) and (not at_end or at == last) and _matches(lines, old, at)
        return at if ok else None
    expected = hunk.old_start - 1 + shift
    for distance in range(max(expected - at_least, last - expected) + 1):
        for at in (expected - distance, expected + distance) if distance else (expected,):
            if at_least <= at <= last and _matches(lines, old, at):
                return at
    return None


def _matches(lines: list[str], old: list[str], at: int) -> bool:
    return 0 <= at <= len(lines) - len(old) and lines[at:at + len(old)] == old


def _mismatch(patch: FilePatch, number: int, hunk: Hunk, lines: list[str], shift: int) -> str:
    """Why hunk `number` does not apply: the first of its lines that differs where it was expected."""
    expected = max(hunk.old_start - 1, 0) + shift
    where = f"{patch.old_path}: hunk {number} ({hunk.header.split(' @@')[0]} @@) does not apply"
    for offset, wanted in enumerate(hunk.old):
        have = lines[expected + offset] if expected + offset < len(lines) else None
        if have != wanted:
            shown_have = "the end of the file" if have is None else repr(have.rstrip("\n"))
            return (f"{where}: its line {offset + 1} ({wanted.rstrip(chr(10))!r}) is not at line "
                    f"{expected + offset + 1}, where the file has {shown_have}, and its lines were not found "
                    "together anywhere else (the context and removed lines must match exactly)")
    return f"{where}: its lines are in the file but not where a hunk of its kind must match (the start or the end)"


def apply(patch: FilePatch, text: str | None) -> str:
    """The new text of the file `patch` changes, from its current `text` (None: it does not exist)."""
    if patch.content is not None:
        return patch.content
    if text is None:
        text = ""
    if patch.codex:
        return _apply_codex(patch, text) if patch.hunks else text
    return _apply_unified(patch, text)
