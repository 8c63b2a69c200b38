"""What a rename's result says, the same whichever way it was made (rename.py by Python's scopes,
server_rename.py by a language server): what was renamed, the uses left alone, the files not changed."""

from __future__ import annotations

from typing import Any

from ..text import plural, printable

MAX_LISTED = 200
"""Undecided uses the text lists (structuredContent has them all)."""


def headline(query: str, new_name: str, renamed: int, files: int, dry_run: bool) -> str:
    """The first line: what was (or would be) renamed, in how many files."""
    head = (f"Dry run: would rename {printable(query)} to {printable(new_name)}" if dry_run else
            f"Renamed {printable(query)} to {printable(new_name)}")
    return f"{head}: {plural(renamed, 'use')} in {plural(files, 'file')}" + ("; nothing was written." if dry_run else ".")


def undecided_lines(undecided: list[dict[str, Any]], why: str) -> list[str]:
    """The uses only the name ties to the symbol, left alone, one a line (MAX_LISTED at most); `why` says what
    they may be."""
    if not undecided:
        return []
    lines = [f"[Left alone, undecided: {plural(len(undecided), 'use')} only the name ties to it ({why}); look at each:]"]
    lines += [f"{printable(item['path'])}:{item['line']}:{item['column']}: {printable(item['text'])}"
              for item in undecided[:MAX_LISTED]]
    if len(undecided) > MAX_LISTED:
        lines.append(f"[… {len(undecided) - MAX_LISTED} more in structuredContent]")
    return lines


def outside_lines(outside: list[str], path: str, heading: str, relation: str) -> list[str]:
    """The files outside `path` the rename did not change (`heading`: "Not changed"), and how they concern it
    (`relation`: "use it")."""
    if not outside:
        return []
    return [f"[{heading}: {plural(len(outside), 'file')} outside {printable(path)} that {relation}: "
            + ", ".join(printable(item) for item in outside[:10]) + (" …" if len(outside) > 10 else "") + "]"]
