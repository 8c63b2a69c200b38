"""Where each hunk of a patch goes in a file, and the text that results (patch_text.py reads the patches).

- A **unified** hunk goes where `git apply` puts it: a hunk at line 0 or 1 only at the start, one without
  trailing context only at the end (both: the whole file), any other at the place nearest the line its
  header gives in the file as the hunks before it left it (the next line first, then the one before, then
  two after, ...). A hunk without any context (`diff -U0`) is placed by its line alone. The context and
  removed lines must match exactly (a CRLF file also takes them written with plain newlines).
- A **`*** Begin Patch`** chunk goes where Codex puts it: the first place at or after the end of the
  chunk before (after its `@@` line when it has one; only the end with `*** End of File`), found
  exactly, else ignoring whitespace at the ends of lines, else at both ends, else reading typographic
  dashes, quotes and spaces as ASCII. Its context lines keep the file's own text.

Every hunk is placed in the file as it was (the hunks are never placed on each other's lines) and all
are applied at once. Candidates come from an index of the file's lines, made once (the rarest of a hunk's
lines gives the places to try), and the comparisons a file may cost are bounded: a hostile patch or file
cannot hold the write lock for long. PatchError says which hunk does not apply and why.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator

from .patch_text import FilePatch, Hunk, PatchError
from .text import split_lines

MAX_COMPARED = 20_000_000
"""Lines compared while placing the hunks of one file, at most (some seconds of work)."""

_PUNCTUATION = str.maketrans({**dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
                              **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
                              **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
                              **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f"
                                              "\u205f\u3000", " ")})
_LOOSER: tuple[Callable[[str], str], ...] = (
    lambda line: line, str.rstrip, str.strip, lambda line: line.strip().translate(_PUNCTUATION))
"""Codex's four comparisons of a chunk's lines with the file's, strictest first."""


def apply(patch: FilePatch, text: str | None, check: Callable[[], None] | None = None) -> str:
    """The new text of the file `patch` changes, from its current `text` (None: it does not exist);
    `check` is called between hunks (cancellation)."""
    if patch.content is not None:
        return patch.content
    if text is None:
        text = ""
    if patch.codex:
        return _apply_codex(patch, text, check) if patch.hunks else text
    return _apply_unified(patch, text, check)


class _Budget:
    """The lines compared so far while placing one file's hunks, refused past MAX_COMPARED."""

    def __init__(self) -> None:
        self.compared = 0

    def spend(self, lines: int, where: str) -> None:
        self.compared += lines
        if self.compared > MAX_COMPARED:
            raise PatchError(f"{where}: placing it compared more than {MAX_COMPARED} lines (the file has too many "
                             "places like it); give the hunk lines that are found in fewer places")


class _Lines:
    """A file's lines and, made when first asked, where each distinct line is."""

    def __init__(self, lines: list[str], budget: _Budget) -> None:
        self.lines = lines
        self.budget = budget
        self._where: dict[str, list[int]] | None = None

    def where(self, line: str) -> list[int]:
        if self._where is None:
            self._where = {}
            for at, each in enumerate(self.lines):
                self._where.setdefault(each, []).append(at)
        return self._where.get(line, [])

    def starts(self, pattern: list[str]) -> tuple[list[int], int]:
        """The places of the pattern's rarest line, and that line's index in the pattern: a start is a place
        less the index."""
        _, rarest = min((len(self.where(line)), index) for index, line in enumerate(pattern))
        return self.where(pattern[rarest]), rarest

    def matches(self, pattern: list[str], at: int, where: str) -> bool:
        self.budget.spend(len(pattern), where)
        return 0 <= at <= len(self.lines) - len(pattern) and self.lines[at:at + len(pattern)] == pattern


# -- *** Begin Patch ------------------------------------------------------------------------------------
def _apply_codex(patch: FilePatch, text: str, check: Callable[[], None] | None) -> str:
    lines = text.split("\n")
    ended = lines[-1] == ""
    if ended:
        lines.pop()
    ends = lines if ended else lines[:-1]  # a last line without a line end says nothing of the others'
    crlf = bool(ends) and all(line.endswith("\r") for line in ends)
    if crlf:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    levels: list[_Lines | None] = [None] * len(_LOOSER)
    budget = _Budget()

    def seek(pattern: list[str], start: int, at_end: bool, where: str) -> int | None:
        """Where `pattern` first occurs at or after `start` (only at the end when `at_end`), each looser
        comparison tried only when the stricter ones found nothing."""
        if not pattern:
            return start
        last = len(lines) - len(pattern)
        if last < 0:
            return None
        for level, loosen in enumerate(_LOOSER):
            loose = levels[level]
            if loose is None:
                loose = levels[level] = _Lines(lines if level == 0 else [loosen(line) for line in lines], budget)
            wanted = [loosen(line) for line in pattern]
            if at_end:
                if loose.matches(wanted, last, where):
                    return last
                continue
            places, offset = loose.starts(wanted)
            for place in places[bisect_left(places, start + offset):]:
                if place - offset > last:
                    break
                if loose.matches(wanted, place - offset, where):
                    return place - offset
        return None

    edits: list[tuple[int, int, int, list[str]]] = []
    at = 0
    for number, hunk in enumerate(patch.hunks):
        if check is not None:
            check()
        where = f"{patch.old_path}: {hunk.header}"
        if hunk.context is not None:
            found = seek([hunk.context], at, False, where)
            if found is None:
                raise PatchError(f"{where} does not apply: its line '{hunk.context.strip()[:200]}' was not found"
                                 f"{' after the previous chunk' if at else ''}")
            at = found + 1
        if not hunk.old:
            edits.append((len(lines), number, 0, hunk.new))
            continue
        old, new = hunk.old, hunk.new
        found = seek(old, at, hunk.at_end, where)
        if found is None and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = seek(old, at, hunk.at_end, where)
        if found is None:
            raise PatchError(f"{where} does not apply: these lines were not found"
                             f"{' after the previous chunk' if at else ''}:\n" + "\n".join(hunk.old[:20]))
        edits.append((found, number, len(old), _keeping_context(hunk.kinds, lines[found:found + len(old)], new)))
        at = found + len(old)
    for start, _, length, new in sorted(edits, reverse=True):
        lines[start:start + length] = new
    end = "\r\n" if crlf else "\n"
    return end.join(lines) + end if lines else ""


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


# -- unified diffs --------------------------------------------------------------------------------------
def _apply_unified(patch: FilePatch, text: str, check: Callable[[], None] | None) -> str:
    lines = split_lines(text)
    file = _Lines(lines, _Budget())
    ended = [line for line in lines if line.endswith("\n")]
    crlf = bool(ended) and all(line.endswith("\r\n") for line in ended)
    taken: list[tuple[int, int]] = []
    edits: list[tuple[int, int, int, list[str]]] = []
    delta = 0
    for number, hunk in enumerate(patch.hunks, 1):
        if check is not None:
            check()
        where = f"{patch.old_path}: hunk {number} ({hunk.header.split(' @@')[0]} @@)"
        old, new = hunk.old, hunk.new
        found = _place(file, hunk, old, delta, taken, where)
        if found is None and crlf and not any(line.endswith("\r\n") for line in old):
            old, new = _crlf(old), _crlf(new)
            found = _place(file, hunk, old, delta, taken, where)
        if found is None:
            raise PatchError(_mismatch(where, hunk, lines, delta))
        taken.append((found, found + len(old)))
        edits.append((found, number, len(old), new))
        delta += len(new) - len(old)
    for start, _, length, new in sorted(edits, reverse=True):
        lines[start:start + length] = new
    return "".join(lines)


def _crlf(lines: list[str]) -> list[str]:
    return [line[:-1] + "\r\n" if line.endswith("\n") else line for line in lines]


def _place(file: _Lines, hunk: Hunk, old: list[str], delta: int, taken: list[tuple[int, int]], where: str) -> int | None:
    """Where the hunk's old lines are in the file as it was (`delta`: the lines the hunks before added), not
    on the lines of another hunk."""
    lines = file.lines
    last = len(lines) - len(old)

    def free(at: int) -> bool:
        end = at + len(old)
        return all(end <= start or at >= stop if end > at else not start < at < stop for start, stop in taken)

    zero_context = hunk.leading == 0 and hunk.trailing == 0
    at_start = hunk.old_start == 0 or (hunk.old_start == 1 and not zero_context)
    at_end = hunk.trailing == 0 and not zero_context
    if at_start or at_end:
        at = 0 if at_start else last
        ok = at >= 0 and (not at_end or at == last) and free(at) and file.matches(old, at, where)
        return at if ok else None
    expected = max(hunk.new_start - 1, 0) - delta
    if not old:
        at = min(max(expected, 0), len(lines))
        return at if free(at) else None
    places, offset = file.starts(old)
    for at in _nearest(places, offset, expected, last):
        if free(at) and file.matches(old, at, where):
            return at
    return None


def _nearest(places: list[int], offset: int, expected: int, last: int) -> Iterator[int]:
    """The starts `places` less `offset` within 0..last, in git's order around `expected`: the same line,
    then one after, one before, two after, two before, ..."""
    split = bisect_left(places, expected + offset)
    after, before = split, split - 1
    while True:
        ahead = places[after] - offset if after < len(places) else None
        behind = places[before] - offset if before >= 0 else None
        if ahead is not None and ahead > last:
            ahead = None
        if behind is not None and behind < 0:
            behind = None
        if ahead is None and behind is None:
            return
        if behind is None or (ahead is not None and ahead - expected <= expected - behind):
            yield ahead  # type: ignore[misc]
            after += 1
        else:
            yield behind
            before -= 1


def _mismatch(where: str, hunk: Hunk, lines: list[str], delta: int) -> str:
    """Why a hunk does not apply: the first of its lines that differs where it was expected."""
    expected = max(0, hunk.new_start - 1 - delta) if hunk.old_start > 1 else 0
    for offset, wanted in enumerate(hunk.old):
        have = lines[expected + offset] if expected + offset < len(lines) else None
        if have != wanted:
            shown_have = "the end of the file" if have is None else repr(have.rstrip("\n"))
            return (f"{where} does not apply: its line {offset + 1} ({wanted.rstrip(chr(10))!r}) is not at line "
                    f"{expected + offset + 1}, where the file has {shown_have}, and its lines were not found "
                    "together anywhere else (the context and removed lines must match exactly)")
    return (f"{where} does not apply: its lines are in the file but not where a hunk of its kind must be (the "
            "start or the end), or on the lines of another hunk")
