"""What a patch says: the two formats agents write, read into file changes and hunks, without any I/O
(hunk_placing.py puts the hunks in a file, patch_files.py writes the files).

- **Unified diffs** as `git diff` and `git format-patch` write them (several files, new and deleted files,
  renames and copies, mode changes, `\\ No newline at end of file`, C-quoted names; text before the first
  file skipped), and as `diff -u` writes them. A `diff --git` patch's names lose their first component as
  `git apply -p1` reads them; a plain diff's only when both sides have one to lose. Hunk line counts that
  disagree with the body (models miscount) are counted again from the body.
- **The `*** Begin Patch` format** that Codex models emit: Add File, Delete File, Update File with an
  optional `*** Move to:`, chunks after optional `@@` context lines, `*** End of File`.

A `GIT binary patch` (git diff --binary) is read into its forward hunk (binary_patch.py applies it);
a `Binary files ... differ` line, which holds no content, symbolic links and submodules are refused.
Every failure is a PatchError naming the line of the patch or the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .binary_patch import BinaryHunk, BinaryPatchError, read_hunk

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
    new_start: int = 0
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
    binary: BinaryHunk | None = None
    ids: tuple[str, str] | None = None
    """The `index OLD..NEW` line's object ids."""

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


MAX_NAME_LINE = 8192
"""A header line naming a file is at most this long (a name longer than any filesystem allows is an error)."""


def _quoted_end(text: str) -> int:
    """The index of the quote that closes the C-quoted name `text` starts with (-1: none), in one pass."""
    index = 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index
        index += 1
    return -1


def _header_path(rest: str) -> str | None:
    """The path of a ---/+++ line (after the marker): unquoted, without a diff -u timestamp; None: /dev/null."""
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        end = _quoted_end(rest)
        name = _unquote(rest[:end + 1]) if end > 0 else rest
    else:
        name = rest.split("\t", 1)[0].rstrip(" ")
    return None if name == "/dev/null" else name


def _git_names(rest: str) -> tuple[str, str] | None:
    """The two names of `diff --git a/X b/Y` where they can be told apart: quoted, or the same name (then the
    space between them is the one in the middle)."""
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        end = _quoted_end(rest)
        if end < 0:
            return None
        second = rest[end + 1:].strip()
        return _unquote(rest[:end + 1]), _unquote(second) if second.startswith('"') else second
    if rest.endswith('"'):
        start = rest.rfind(' "')
        return (rest[:start], _unquote(rest[start + 1:])) if start > 0 else None
    middle = len(rest) // 2
    if len(rest) % 2 and rest[middle] == " " and rest[:middle][2:] == rest[middle + 1:][2:]:
        return rest[:middle], rest[middle + 1:]
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
    for line in lines[index:index + 2]:
        if len(line) > MAX_NAME_LINE:
            raise PatchError(f"line {index + 1}: a file header of {len(line)} characters (at most {MAX_NAME_LINE})")
    old: str | None = None
    new: str | None = None
    names: tuple[str, str] | None = None
    created = deleted = copy = False
    mode: int | None = None
    binary: BinaryHunk | None = None
    ids: tuple[str, str] | None = None
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
            elif line.startswith("index ") and ".." in line:
                old_id, _, new_id = line[len("index "):].split(" ", 1)[0].partition("..")
                ids = (old_id.lower(), new_id.lower())
            elif line.startswith("Binary files "):
                raise PatchError(f"line {index + 1}: the change to a binary file is not in the patch ('{line[:80]}'): "
                                 "make it with git diff --binary")
            elif line == "GIT binary patch":
                try:
                    binary, index = read_hunk(lines, index + 1)
                    if index < len(lines) and lines[index].startswith(("literal ", "delta ")):
                        index = read_hunk(lines, index)[1]  # the reverse hunk: not needed forwards
                except BinaryPatchError as err:
                    raise PatchError(f"line {index + 1}: {err}") from None
                continue
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
    if mode == 0o120000 or mode == 0o160000:
        raise PatchError(f"line {start + 1}: {shown} would be a {'symbolic link' if mode == 0o120000 else 'submodule'}; "
                         "apply_patch writes regular files only")
    patch = FilePatch(old, new, copy=copy, mode=mode, line=start + 1, binary=binary, ids=ids)
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
    return Hunk(header, old, new, old_start=old_start, new_start=int(found[3]), leading=leading, trailing=trailing), index


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
