"""run_command's `report: "tests"`: the test runner writes JUnit XML into a folder of the command's scratch, and
the failures come back as data (test id, file and line, message, a bounded traceback), not only as text to
read out of the output.

The runners are told through their own environment variables, never by rewriting the command line: pytest
(`PYTEST_ADDOPTS`), gotestsum (`GOTESTSUM_JUNITFILE`), jest-junit (`JEST_JUNIT_OUTPUT_DIR`); any other runner
can be pointed at `$JUNIT_REPORT_DIR` by the command itself (`vitest --reporter=junit --outputFile=...`, a
copy of maven's surefire reports, cargo nextest's junit path). The folder is the command's to write, so what
is read from it is hostile: no link is followed, only regular files are read, each and all of them bounded,
and the XML is parsed by defusedxml (no entity, no DTD, no external reference).
"""

from __future__ import annotations

import os
import shlex
import stat
from typing import Any

from .text import printable

FOLDER = "reports"
"""The folder of the scratch folder the runners write into."""

MAX_FILES = 256
"""Reports read (a surefire run writes one per test class); past them, and past MAX_BYTES, files are named, not read."""
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_BYTES = 16 * 1024 * 1024
"""Of all the reports together: the parsing is the server's time and memory, after the command's."""
MAX_ENTRIES = 10_000
"""Entries of the folder looked at (a command may leave millions)."""
MAX_NAMED = 20
"""Files not read that are named (the rest counted)."""
MAX_FAILURES = 50
"""Failures listed (the first ones, in the reports' order); the rest are counted."""
MAX_MESSAGE = 500
MAX_TRACEBACK = 2000
"""Characters of a failure's message and of its traceback (the traceback's start and end, the middle cut)."""


def environment(shown: str, given: dict[str, str]) -> dict[str, str]:
    """The variables that make the known runners write JUnit XML into `shown` (the folder as the command sees
    it), beside those the command already has (`given`: a PYTEST_ADDOPTS of the call's is kept, after ours)."""
    pytest = f"--junitxml={shlex.quote(shown + '/pytest.xml')} -o junit_family=xunit1"  # xunit1: file and line
    if given.get("PYTEST_ADDOPTS"):
        pytest += " " + given["PYTEST_ADDOPTS"]  # after ours: a --junitxml of the call's own wins
    return {"JUNIT_REPORT_DIR": shown, "PYTEST_ADDOPTS": pytest, "GOTESTSUM_JUNITFILE": f"{shown}/go.xml",
            "JEST_JUNIT_OUTPUT_DIR": shown, "JEST_JUNIT_OUTPUT_NAME": "jest.xml", "JEST_JUNIT_ADD_FILE_ATTRIBUTE": "true",
            "JEST_JUNIT_REPORT_TEST_SUITE_ERRORS": "true"}  # a test file that fails to load is a failure too


def available() -> bool:
    """Whether the reports can be read here (defusedxml, of the run extra), asked before the command runs."""
    from importlib.util import find_spec  # (only for a call that asks for a report)

    return find_spec("defusedxml") is not None


def read(folder: str) -> dict[str, Any]:
    """What the reports in `folder` say: counts, and the failures (each test that failed or broke)."""
    from defusedxml import ElementTree  # type: ignore[import-untyped]  # (the run extra) only when a report is asked

    out: dict[str, Any] = {"reports": 0, "total": 0, "failed": 0, "errors": 0, "skipped": 0, "failures": [],
                           "failures_omitted": 0, "unreadable": [], "unreadable_omitted": 0}
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return out
    unread: list[str] = []
    try:
        names: list[str] = []
        with os.scandir(fd) as entries:
            for looked, entry in enumerate(entries):
                if looked >= MAX_ENTRIES:
                    break
                if entry.name.endswith(".xml"):
                    names.append(entry.name)
        budget = MAX_BYTES
        for name in sorted(names):
            data = _regular(fd, name, min(MAX_FILE_BYTES, budget)) if out["reports"] < MAX_FILES else None
            if data is None:
                unread.append(name)
                continue
            budget -= len(data)
            try:
                cases = _cases(ElementTree.fromstring(data, forbid_dtd=True), name == "pytest.xml")
            except Exception:  # malformed, an entity or DTD refused, a value out of shape: said, not trusted
                unread.append(name)
                continue
            out["reports"] += 1
            for key in ("total", "failed", "errors", "skipped"):
                out[key] += cases[key]
            room = MAX_FAILURES - len(out["failures"])
            out["failures"] += cases["failures"][:room]
            out["failures_omitted"] += len(cases["failures"][room:]) + cases["failures_omitted"]
    finally:
        os.close(fd)
    out["unreadable"] = [printable(name)[:200] for name in unread[:MAX_NAMED]]
    out["unreadable_omitted"] = len(unread) - len(out["unreadable"])
    return out


def _regular(folder: int, name: str, most: int) -> bytes | None:
    """The file's bytes if it is a regular file of at most `most` bytes, reached without a link."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > most:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= most:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        return None
    finally:
        os.close(fd)


def _cases(root: Any, zero_based: bool) -> dict[str, Any]:
    """The counts and failures of one report (pytest's lines count from 0, others' from 1)."""
    out: dict[str, Any] = {"total": 0, "failed": 0, "errors": 0, "skipped": 0, "failures": [], "failures_omitted": 0}
    for case in root.iter("testcase"):
        out["total"] += 1
        problem = next((child for child in case if child.tag in ("failure", "error")), None)
        if problem is None:
            if any(child.tag == "skipped" for child in case):
                out["skipped"] += 1
            continue
        out["failed" if problem.tag == "failure" else "errors"] += 1
        if len(out["failures"]) >= MAX_FAILURES:
            out["failures_omitted"] += 1
            continue
        name, owner = case.get("name", ""), case.get("classname", "")
        line = case.get("line", "")
        number = int(line) + zero_based if line.isascii() and line.isdigit() and len(line) <= 9 else None
        out["failures"].append({
            "id": printable(f"{owner}::{name}" if owner else name)[:500],
            "kind": problem.tag,
            "file": printable(case.get("file", ""))[:500] or None,
            "line": number if number else None,
            "message": printable(problem.get("message", ""))[:MAX_MESSAGE],
            "traceback": _cut(problem.text or ""),
        })
    return out


def _cut(text: str, most: int = MAX_TRACEBACK) -> str:
    """`text` within `most` characters: a quarter from its start, the rest from its end (where the error is)."""
    text = text.strip("\n")
    if len(text) <= most:
        return text
    head, tail = text[:most // 4], text[-(most - most // 4):]
    return f"{head}\n[… {len(text) - len(head) - len(tail)} characters left out …]\n{tail}"


def shrunk(report: dict[str, Any], keep: int) -> dict[str, Any]:
    """The report within about `keep` characters: fewer failures listed (the rest counted), shorter tracebacks."""
    failures = report["failures"]
    listed = min(len(failures), keep // 500)
    traceback = max(100, keep // max(1, 2 * listed))
    kept = [{**failure, "traceback": _cut(failure["traceback"], traceback)} for failure in failures[:listed]]
    return {**report, "failures": kept, "failures_omitted": report["failures_omitted"] + len(failures) - listed}


def render(report: dict[str, Any]) -> list[str]:
    """The report as lines of the result's text."""
    unread = len(report["unreadable"]) + report["unreadable_omitted"]
    skipped = [f"{unread} report file{'s' if unread != 1 else ''} not read: {', '.join(report['unreadable'])}"
               + (" …" if report["unreadable_omitted"] else "")] if unread else []
    if not report["reports"]:
        return ["tests: no JUnit report was read (see docs/tools.md for the runners that write one)", *skipped]
    counts = (f"tests: {report['total']} run, {report['failed']} failed, {report['errors']} broke, "
              f"{report['skipped']} skipped")
    lines = [counts, *skipped]
    for failure in report["failures"]:
        where = f" ({failure['file']}:{failure['line']})" if failure["file"] and failure["line"] else ""
        lines.append(f"{'FAILED' if failure['kind'] == 'failure' else 'BROKE'} {failure['id']}{where}: {failure['message']}")
    if report["failures_omitted"]:
        lines.append(f"[… {report['failures_omitted']} more failures …]")
    return lines
