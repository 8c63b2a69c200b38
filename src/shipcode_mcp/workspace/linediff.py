"""A line diff within a budget: the matching lines of two texts in O(n log n) steps, never difflib's O(n^2).

difflib.SequenceMatcher looks for the longest match in every gap it leaves, so a change to every other
line (what a `replace_all` rename does) costs it the square of the lines: 16 000 lines took 14 s, and a
write's answer waited for it. Here each gap between matches is split by the lines that occur there
least often, equally often on both sides (once on each side first: patience diff's unique lines), paired
in order and kept along a longest increasing run; the gaps between them are split the same way. A small
gap is left to difflib (a minimal answer, cheaply). Every step is counted: past the budget, or past
DIFF_SECONDS, what is left is shown replaced whole, and the caller says the diff is not minimal.
"""

from __future__ import annotations

import bisect
import difflib
import time
from collections.abc import Sequence

SMALL_GAP = 10_000
"""A gap whose sides' product is at most this is matched by difflib (minimal, and quick at that size)."""
WORK_PER_LINE = 64
"""Steps allowed for each line of the two texts (a gap costs its lines, a small gap its product)."""
DIFF_SECONDS = 1.0
"""And at most this long, whatever the steps."""

Block = tuple[int, int, int]


def matching_blocks(a: Sequence[str], b: Sequence[str]) -> tuple[list[Block], bool]:
    """The matches (i, j, size) of `a` and `b` in order, ending with (len(a), len(b), 0) as difflib's do,
    and whether the budget ran out (some gap then matched nothing, though it might have)."""
    budget = WORK_PER_LINE * (len(a) + len(b)) + SMALL_GAP
    deadline = time.monotonic() + DIFF_SECONDS
    matches: list[Block] = []
    cut = False
    gaps = [(0, len(a), 0, len(b))]
    while gaps:
        alo, ahi, blo, bhi = gaps.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:  # the same lines at both ends
            matches.append((alo, blo, 1))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            matches.append((ahi, bhi, 1))
        if alo == ahi or blo == bhi:
            continue
        if budget <= 0 or time.monotonic() > deadline:
            cut = True
            continue
        product = (ahi - alo) * (bhi - blo)
        if product <= SMALL_GAP:
            budget -= product
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            matches.extend((alo + i, blo + j, size) for i, j, size in matcher.get_matching_blocks() if size)
            continue
        budget -= (ahi - alo) + (bhi - blo)
        anchors = _anchors(a, alo, ahi, b, blo, bhi)
        last_a, last_b = alo, blo
        for i, j in anchors:
            matches.append((i, j, 1))
            gaps.append((last_a, i, last_b, j))
            last_a, last_b = i + 1, j + 1
        if anchors:
            gaps.append((last_a, ahi, last_b, bhi))
    return _merged(matches, len(a), len(b)), cut


def _anchors(a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int) -> list[tuple[int, int]]:
    """Pairs (i, j) of equal lines to split a gap at, increasing in both: of the lines both sides hold,
    those held least often (on the side that holds them more; once on each side first, patience diff's
    unique lines), the k-th on one side paired with the k-th on the other, then the longest run
    increasing in both. None only when the sides share no line: the gap is then a replacement whole."""
    count_a: dict[str, int] = {}
    for line in a[alo:ahi]:
        count_a[line] = count_a.get(line, 0) + 1
    count_b: dict[str, int] = {}
    for line in b[blo:bhi]:
        if line in count_a:
            count_b[line] = count_b.get(line, 0) + 1
    fewest = min((max(count, count_a[line]) for line, count in count_b.items()), default=0)
    if not fewest:
        return []
    chosen = {line for line, count in count_b.items() if max(count, count_a[line]) == fewest}
    seen: dict[str, list[int]] = {}
    for j in range(blo, bhi):
        if b[j] in chosen:
            seen.setdefault(b[j], []).append(j)
    taken: dict[str, int] = {}
    pairs: list[tuple[int, int]] = []
    for i in range(alo, ahi):
        line = a[i]
        if line in chosen:
            k = taken.get(line, 0)
            taken[line] = k + 1
            if k < len(seen[line]):
                pairs.append((i, seen[line][k]))
    return _increasing(pairs)


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of `pairs` (increasing in i already) increasing in j too (patience sorting)."""
    tails: list[int] = []  # the j ending the best run of each length
    ends: list[int] = []  # the index in pairs of that end
    before = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tails, j)
        if length == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[length] = j
            ends[length] = index
        before[index] = ends[length - 1] if length else -1
    run: list[tuple[int, int]] = []
    index = ends[-1] if ends else -1
    while index >= 0:
        run.append(pairs[index])
        index = before[index]
    run.reverse()
    return run


def _merged(matches: list[Block], size_a: int, size_b: int) -> list[Block]:
    """The matches sorted, adjacent ones joined, and difflib's closing (len(a), len(b), 0)."""
    matches.sort()
    out: list[Block] = []
    for i, j, size in matches:
        if out and out[-1][0] + out[-1][2] == i and out[-1][1] + out[-1][2] == j:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + size)
        else:
            out.append((i, j, size))
    out.append((size_a, size_b, 0))
    return out


class BoundedMatcher(difflib.SequenceMatcher[str]):
    """difflib's opcodes and hunks (get_opcodes, get_grouped_opcodes) over matching_blocks' matches."""

    def __init__(self, a: Sequence[str], b: Sequence[str]) -> None:
        super().__init__(None, a, b, autojunk=False)  # (difflib indexes b here: one pass, linear)
        self.blocks, self.cut = matching_blocks(a, b)

    def get_matching_blocks(self) -> list[difflib.Match]:
        return [difflib.Match(i, j, size) for i, j, size in self.blocks]


def unified(a: Sequence[str], b: Sequence[str], from_name: str, to_name: str, context: int = 3) -> tuple[list[str], bool]:
    """The lines of a unified diff (as difflib.unified_diff writes them), and whether it is not minimal
    (the budget ran out: some lines are shown replaced though they are the same)."""
    matcher = BoundedMatcher(a, b)
    out: list[str] = []
    for group in matcher.get_grouped_opcodes(context):
        if not out:
            out += [f"--- {from_name}\n", f"+++ {to_name}\n"]
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in a[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                out += ["-" + line for line in a[i1:i2]]
            if tag in ("replace", "insert"):
                out += ["+" + line for line in b[j1:j2]]
    return out, matcher.cut


def _range(start: int, stop: int) -> str:
    """A hunk's range as unified diffs write it (difflib's and git's form)."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    if not length:
        return f"{start},0"
    return f"{start + 1},{length}"
