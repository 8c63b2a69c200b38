"""The diff after a write, against the change that makes difflib quadratic (issue 23, finding 4): a
`replace_all` rename changes every other line, and difflib looks for the longest match in every gap it
leaves (16 000 lines took 14 s; 32 such edits left none answered). The control runs difflib in a
subprocess; then the same edits through the real server over real pipes are answered, with their diff,
and pings under 100 ms throughout. linediff's own answers are checked against difflib's."""

from __future__ import annotations

import difflib
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.transports.stdio import ORDER_GRACE
from shipcode_mcp.workspace import linediff, writes
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.writes import MAX_DIFF_INPUT
from support import McpProcess, assert_pinged_within, pinged_within_in_a_round, request_while_pinging
from workspace_support import context

LINES = 24_000


def renamed(name: str) -> str:
    """A file of LINES lines where every other one calls `name`, under MAX_DIFF_INPUT (with the same line
    between them, `pass`, difflib is quick: autojunk leaves it out; linediff's test below takes that case too)."""
    return "".join(f"    value_{i} = {name}(value_{i})\n" if i % 2 else f"    step({i})\n" for i in range(LINES))


def test_difflib_takes_longer_than_seconds_on_the_rename(tmp_path: Path) -> None:
    (tmp_path / "old").write_text(renamed("old_name"))
    (tmp_path / "new").write_text(renamed("new_name"))
    assert (tmp_path / "old").stat().st_size < MAX_DIFF_INPUT
    program = ("import difflib, sys\nold, new = (open(path).read().splitlines(True)[:int(sys.argv[3])] for path in sys.argv[1:3])\n"
               "for line in difflib.unified_diff(old, new, 'a', 'b', n=3): pass\n")
    command = [sys.executable, "-c", program, str(tmp_path / "old"), str(tmp_path / "new")]
    assert subprocess.run([*command, "200"], timeout=60, check=False).returncode == 0  # (the program works)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([*command, str(LINES)], timeout=5, check=False)


@pytest.mark.measures
@pytest.mark.timeout(300)
def test_rename_edits_are_answered_with_their_diff_and_ping_meanwhile(tmp_path: Path) -> None:
    pinged_within_in_a_round(lambda number: rename_scenario(tmp_path / f"round {number}"))


def rename_scenario(root: Path) -> None:
    root.mkdir()
    (root / "big.py").write_text(renamed("old_name"))
    # the diff's own cut (its time budget) is what is looked at, not the client's budget
    with McpProcess(str(root), "--allow-write", "--max-result-tokens", "0") as process:
        process.initialize()
        for number in range(6):
            old, new = ("old_name", "new_name") if number % 2 == 0 else ("new_name", "old_name")
            reply, took, latencies = request_while_pinging(process, "tools/call", {"name": "edit_file", "arguments": {
                "path": "big.py", "old_text": old, "new_text": new, "replace_all": True}}, timeout=30,
                start_after=ORDER_GRACE + 0.01)
            print(f"edit {number}: {took:.2f} s, {len(latencies)} pings, slowest {max(latencies) * 1000:.1f} ms")
            assert_pinged_within(0.1, latencies, f"edit {number}")
            result = reply["result"]
            assert not result.get("isError"), result
            diff = result["structuredContent"]["diff"]
            assert diff.startswith("--- a/big.py\n+++ b/big.py\n@@ -1,") and f"-    value_1 = {old}(value_1)\n" in diff
            assert "[diff cut after" in diff and "not minimal" not in diff
        assert (root / "big.py").read_text() == renamed("old_name")


AT_ONCE = 32
"""Rename edits sent at once, each to a file of its own (the issue's 32)."""
CONCURRENT = ("import sys, threading\nfrom shipcode_mcp.workspace import writes\n"
              "writes.DIFFING = threading.Semaphore({diffs})\nfrom shipcode_mcp.cli import main\nsys.exit(main())\n")


def _pings_while_renaming(tmp_path: Path, diffs: int) -> tuple[list[float], list[dict[str, Any]]]:
    """AT_ONCE rename edits sent at once to a server that computes `diffs` diffs at a time, then a ping every
    10 ms until all are answered: the pings' latencies and the edits' results."""
    for number in range(AT_ONCE):
        (tmp_path / f"big{number}.py").write_text(renamed("old_name"))
    command = [sys.executable, "-c", CONCURRENT.format(diffs=diffs)]
    with McpProcess(str(tmp_path), "--allow-write", command=command) as process:
        process.initialize()
        for number in range(AT_ONCE):
            process.send({"jsonrpc": "2.0", "id": f"edit {number}", "method": "tools/call", "params": {
                "name": "edit_file", "arguments": {"path": f"big{number}.py", "old_text": "old_name",
                                                   "new_text": "new_name", "replace_all": True,
                                                   # not the syntax check's parse in the parse workers, which
                                                   # spreads the edits out: the 32 diffs start together
                                                   "allow_syntax_errors": True}}})
        time.sleep(ORDER_GRACE + 0.01)
        latencies: list[float] = []
        results: list[dict[str, Any]] = []
        while len(results) < AT_ONCE:
            sent = time.monotonic()
            process.send({"jsonrpc": "2.0", "id": len(latencies), "method": "ping"})
            while (reply := process.read(timeout=60)).get("id") != len(latencies):
                results.append(reply["result"])
            latencies.append(time.monotonic() - sent)
            time.sleep(max(0.0, 0.01 - latencies[-1]))
    return latencies, results


CONTROL_TRIES = 8
"""Tries of the control (each about 5 s): on a busy machine the scheduler sometimes serves the pings in time even
while the 32 diffs are computed at once (three tries were not always enough: p99 96 ms, CI of 2026-12-06)."""


@pytest.mark.measures
@pytest.mark.timeout(300)
def test_rename_edits_sent_at_once_are_answered_and_ping_meanwhile(tmp_path: Path) -> None:
    """The issue's 32 edits at once. Computed all at once on as many threads (the control; a few tries, as
    the harm is the machine's scheduling), pings wait behind them: p99 over 100 ms. One diff at a time
    (writes.DIFFING), the pings' p99 stays under 100 ms and every edit is answered with its whole, minimal
    diff (or, past writes.DIFF_WAIT in the queue on a loaded machine, a line saying why there is none)."""
    for attempt in range(CONTROL_TRIES):
        (tmp_path / f"control {attempt}").mkdir()
        control, _ = _pings_while_renaming(tmp_path / f"control {attempt}", AT_ONCE)
        shutil.rmtree(tmp_path / f"control {attempt}")
        if p99(control) > 0.1:
            break
    else:
        pytest.fail(f"the control's pings stayed fast: p99 {p99(control) * 1000:.0f} ms")
    (tmp_path / "defended").mkdir()
    latencies, results = _pings_while_renaming(tmp_path / "defended", 1)
    print(f"{len(latencies)} pings, p99 {p99(latencies) * 1000:.1f} ms, slowest {max(latencies) * 1000:.1f} ms")
    assert p99(latencies) < 0.1
    diffs = [result["structuredContent"]["diff"] for result in results if not result.get("isError")]
    assert len(diffs) == AT_ONCE
    shown = [diff for diff in diffs if not diff.startswith("(no diff: the server is computing other large diffs")]
    assert len(shown) > AT_ONCE // 2, diffs
    for diff in shown:
        assert "-    value_1 = old_name(value_1)\n" in diff and "not minimal" not in diff


@pytest.mark.parametrize("quick_area", [0, writes.QUICK_DIFF_AREA])
def test_a_small_change_to_a_large_file_never_waits_behind_large_diffs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick_area: int) -> None:
    """DIFFING held (as by a queue of large diffs): an edit of one line in a 1 MiB file answers at once with its
    diff, its changed area being one line; a large diff waits at most DIFF_WAIT, or until its call is
    cancelled, and the write answers without it. The control (every diff waits for DIFFING, quick_area 0):
    the one-line edit waits out DIFF_WAIT and gets no diff."""
    monkeypatch.setattr(writes, "DIFF_WAIT", 1.0)
    monkeypatch.setattr(writes, "QUICK_DIFF_AREA", quick_area)
    text = renamed("old_name")
    (tmp_path / "big.py").write_text(text)
    roots = Roots([str(tmp_path)])
    assert writes.DIFFING.acquire(timeout=30)
    try:
        started = time.monotonic()
        small = writes.edit_file(context(), roots, "big.py", "    step(0)\n", "    step(-1)\n", False, None, False, False, None)
        took = time.monotonic() - started
        assert small.structured is not None
        diff = small.structured["diff"]
        if quick_area == 0:
            assert took >= 1.0 and diff.startswith("(no diff: the server is computing other large diffs"), diff
            return
        assert took < 1.0 and "-    step(0)\n+    step(-1)\n" in diff, (took, diff)
        started = time.monotonic()
        large = writes.edit_file(context(), roots, "big.py", "old_name", "new_name", True, None, False, False, None)
        assert 1.0 <= time.monotonic() - started < 10
        assert large.structured is not None
        assert large.structured["diff"].startswith("(no diff: the server is computing other large diffs; git_diff")
        cancelled = context()
        cancelled.cancel()
        started = time.monotonic()
        late = writes.edit_file(cancelled, roots, "big.py", "new_name", "old_name", True, None, False, False, None)
        assert time.monotonic() - started < 1.0 and late.structured is not None
        assert late.structured["diff"].startswith("(no diff: the call was cancelled")
        assert (tmp_path / "big.py").read_text() == text.replace("    step(0)\n", "    step(-1)\n")
    finally:
        writes.DIFFING.release()


def p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _reconstructs(a: list[str], b: list[str]) -> bool:
    matcher = linediff.BoundedMatcher(a, b)
    rebuilt: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        rebuilt += a[i1:i2] if tag == "equal" else b[j1:j2]
    return rebuilt == b


def test_linediff_is_a_true_diff_and_the_same_as_difflib_on_a_few_edits() -> None:
    chance = random.Random(23)
    for _ in range(300):
        a = [chance.choice("abcdefg") + "\n" for _ in range(chance.randint(0, 400))]
        b = list(a)
        for _ in range(chance.randint(0, 12)):
            at = chance.randint(0, len(b))
            step = chance.random()
            if step < 0.4:
                b.insert(at, chance.choice("abxyz") + "\n")
            elif b:
                del b[min(at, len(b) - 1)]
        assert _reconstructs(a, b)
    a = [f"line {i}\n" for i in range(3000)]
    b = [*a[:10], "x\n", *a[11:500], *a[503:2000], "new\n", *a[2000:], "end"]
    mine, cut = linediff.unified(a, b, "a/f", "b/f")
    assert mine == list(difflib.unified_diff(a, b, "a/f", "b/f", n=3)) and not cut


def test_past_its_budget_the_diff_is_still_true_and_says_it_is_not_minimal(monkeypatch: pytest.MonkeyPatch) -> None:
    from shipcode_mcp.workspace.writes import unified_diff

    old, new = renamed("old_name"), renamed("new_name")
    same = [f"    value_{i} = old_name(value_{i})\n" if i % 2 else "    pass\n" for i in range(LINES)]
    monkeypatch.setattr(linediff, "DIFF_SECONDS", 60.0)  # within its step budget, whatever else the machine runs
    lines, cut = linediff.unified(same, [line.replace("old_name", "new_name") for line in same], "a", "b")
    assert not cut and sum(line.startswith("-") for line in lines) == 1 + LINES // 2  # (the --- line)
    monkeypatch.setattr(linediff, "DIFF_SECONDS", 0.0)
    assert _reconstructs(old.splitlines(True), new.splitlines(True))
    assert linediff.matching_blocks(old.splitlines(True), new.splitlines(True))[1]
    assert "[diff not minimal" in unified_diff(old, new, "big.py", created=False)
