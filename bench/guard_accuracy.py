"""The syntax check of every write (code/guard.py) on real third-party Python code: how often it refuses a
change that is fine, and how often it lets through one that breaks the file.

The corpora are references_precision.py's sdists (requests, click, attrs; pinned by hash). For every .py
file, with CPython's own parser (`compile`) as the truth:

- harmless changes, which must never be refused: a comment appended; a line duplicated where it leaves
  the file valid (a blank line, an import repeated);
- breaking changes, which must be refused: a closing bracket deleted, a colon deleted from a `def` line, an
  unmatched opening bracket inserted, a line indented by one space; each kept only when CPython indeed
  refuses the result (a mutation that still compiles is not a breakage).

`added_syntax_errors` is asked in-process as every write asks it (the parse worker, tree-sitter and CPython).
Run: `python bench/guard_accuracy.py [--corpus NAME] [--smoke]`.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import run as harness  # bench/run.py: tables, machine facts
from references_precision import CORPORA, Corpus, Unreachable, corpus_main, fetch

FALSE_REFUSALS_TARGET = 0.0
DETECTION_TARGET = 0.98
SEED = 26
ROUNDS = 5
"""Breaking mutations made of each kind in each file, each at another random place."""


def _compiles(text: str) -> bool:
    try:
        compile(text, "<mutation>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _breakages(text: str, chooser: random.Random) -> list[tuple[str, str]]:
    """Breaking mutations of `text` (kind, new text), each checked to break it as CPython reads it."""
    lines = text.split("\n")
    made: list[tuple[str, str]] = []
    closing = [index for index, char in enumerate(text) if char in ")]}"]
    if closing:
        at = chooser.choice(closing)
        made.append(("a closing bracket deleted", text[:at] + text[at + 1:]))
    defs = [number for number, line in enumerate(lines) if line.lstrip().startswith("def ") and line.rstrip().endswith(":")]
    if defs:
        number = chooser.choice(defs)
        made.append(("a def's colon deleted", "\n".join([*lines[:number], lines[number].rstrip()[:-1], *lines[number + 1:]])))
    code = [number for number, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    if code:
        number = chooser.choice(code)
        made.append(("an opening bracket inserted", "\n".join([*lines[:number], lines[number] + " (", *lines[number + 1:]])))
        number = chooser.choice(code)
        made.append(("a line indented by one space", "\n".join([*lines[:number], " " + lines[number], *lines[number + 1:]])))
    return [(kind, new) for kind, new in made if not _compiles(new)]


def _harmless(text: str) -> list[tuple[str, str]]:
    """Changes that leave `text` valid (checked with CPython)."""
    made = [("a comment appended", text + ("" if text.endswith("\n") else "\n") + "# edited by the bench\n"),
            ("a blank line added at the top", "\n" + text)]
    return [(kind, new) for kind, new in made if _compiles(new)]


def measure(corpus: Corpus, cache: Path, every: int = 1) -> dict[str, Any]:
    """One corpus: every .py file (one in `every`) that CPython compiles, its harmless and breaking changes."""
    from shipcode_mcp.workspace.code.guard import added_syntax_errors

    root = fetch(corpus, cache)
    files = [path for path in sorted(root.rglob("*.py")) if _compiles(path.read_text(encoding="utf-8"))][::every]
    chooser = random.Random(SEED)
    refused_harmless: list[str] = []
    missed: list[str] = []
    harmless = breaking = 0
    unchecked = 0
    start = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        shown = path.relative_to(root).as_posix()
        for kind, new in _harmless(text):
            harmless += 1
            errors = added_syntax_errors(str(path), text, new, None)
            if isinstance(errors, list) and errors:
                refused_harmless.append(f"{shown}: {kind}: {errors[0]}")
        for kind, new in (item for _ in range(ROUNDS) for item in _breakages(text, chooser)):
            breaking += 1
            errors = added_syntax_errors(str(path), text, new, None)
            if isinstance(errors, str):
                unchecked += 1  # not checked (the file's size, or a parse that failed): said so, not refused
            if not (isinstance(errors, list) and errors):
                missed.append(f"{shown}: {kind}")
    return {"corpus": f"{corpus.name} {corpus.version}", "files": len(files), "harmless": harmless,
            "breaking": breaking, "false_refusals": len(refused_harmless), "missed": len(missed),
            "unchecked": unchecked, "false_refusal_rate": len(refused_harmless) / harmless if harmless else 0.0,
            "detection": (breaking - len(missed)) / breaking if breaking else 1.0,
            "seconds": time.perf_counter() - start, "examples": {"refused": refused_harmless[:10], "missed": missed[:10]}}


def evaluate(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    for report in reports:
        checks.append({"target": f"{report['corpus']}: harmless changes refused = {FALSE_REFUSALS_TARGET:.0%}",
                       "measured": f"{report['false_refusals']} of {report['harmless']}",
                       "met": report["false_refusal_rate"] <= FALSE_REFUSALS_TARGET})
        checks.append({"target": f"{report['corpus']}: breaking changes refused >= {DETECTION_TARGET:.0%}",
                       "measured": f"{report['detection']:.3f} ({report['breaking'] - report['missed']} of "
                                   f"{report['breaking']})", "met": report["detection"] >= DETECTION_TARGET})
    return checks


def render(reports: list[dict[str, Any]], checks: list[dict[str, Any]]) -> str:
    rows = [[r["corpus"], str(r["files"]), f"{r['false_refusals']} / {r['harmless']}",
             f"{r['breaking'] - r['missed']} / {r['breaking']} ({r['detection']:.3f})", str(r["unchecked"]),
             f"{r['seconds']:.1f} s"] for r in reports]
    lines = [harness.markdown_table(["corpus", "files", "harmless changes refused", "breaking changes refused",
                                     "not checked", "time"], rows), ""]
    lines.append(harness.markdown_table(["target", "measured", "verdict"],
                                        [[c["target"], c["measured"], "met" if c["met"] else "MISSED"] for c in checks]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    checks = corpus_main(argv, __doc__.split("\n", 1)[0], "guard_accuracy", measure, evaluate, render)
    return 0 if all(check["met"] for check in checks) else 1


__all__ = ["CORPORA", "Unreachable", "fetch", "measure"]

if __name__ == "__main__":
    sys.exit(main())
