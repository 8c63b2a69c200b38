"""junit_reports: JUnit XML read from a folder a hostile command wrote, and cut to a budget."""

from __future__ import annotations

import os
from pathlib import Path

from shipcode_mcp.workspace import junit_reports


def junit(cases: int, failing: int) -> str:
    body = "".join(f'<testcase classname="m" name="t{n}" file="m.py" line="{n}">'
                   + (f'<failure message="m{n}">{"x" * 5000}\nE   the end of {n}</failure>' if n < failing else "")
                   + "</testcase>" for n in range(cases))
    return f'<?xml version="1.0"?><testsuites><testsuite name="s">{body}</testsuite></testsuites>'


def test_many_failures_are_listed_up_to_a_bound_with_tracebacks_cut_keeping_their_end(tmp_path: Path) -> None:
    (tmp_path / "pytest.xml").write_text(junit(80, 60))  # pytest counts its lines from 0
    report = junit_reports.read(str(tmp_path))
    assert (report["total"], report["failed"], len(report["failures"]), report["failures_omitted"]) == (80, 60, 50, 10)
    first = report["failures"][0]
    assert (first["id"], first["file"], first["line"], first["message"]) == ("m::t0", "m.py", 1, "m0")
    assert len(first["traceback"]) < 2100 and first["traceback"].endswith("the end of 0")
    small = junit_reports.shrunk(report, 2000)
    assert len(small["failures"]) == 4 and small["failures_omitted"] == 56 and small["failed"] == 60
    assert all(len(f["traceback"]) < 400 and f["traceback"].endswith(f"the end of {n}")
               for n, f in enumerate(small["failures"]))
    assert junit_reports.render(small)[-1] == "[… 56 more failures …]"


def test_no_report_says_so_and_a_folder_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    assert junit_reports.render(junit_reports.read(str(tmp_path / "missing")))[0].startswith("tests: no JUnit report")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.xml").write_text(junit(1, 1))
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert junit_reports.read(str(tmp_path / "real"))["total"] == 1  # the same folder, reached without the link
    assert junit_reports.read(str(tmp_path / "link"))["reports"] == 0


def test_a_file_over_the_bound_and_files_beyond_the_count_are_named_not_read(tmp_path: Path) -> None:
    (tmp_path / "big.xml").write_bytes(b"<testsuite>" + b" " * (junit_reports.MAX_FILE_BYTES + 1) + b"</testsuite>")
    for n in range(junit_reports.MAX_FILES + 2):
        (tmp_path / f"r{n:03}.xml").write_text(junit(1, 0))
    report = junit_reports.read(str(tmp_path))
    assert report["reports"] == junit_reports.MAX_FILES and "big.xml" in report["unreadable"]
    assert len(report["unreadable"]) == 3 and report["total"] == junit_reports.MAX_FILES


def test_what_a_hostile_report_holds_never_loses_the_result(tmp_path: Path) -> None:
    """Lines that are digits only to str.isdigit, or too long for int(); a name flood; a passing run cut small."""
    cases = "".join(f'<testcase classname="m" name="t{n}" line="{line}"><failure message="f"/></testcase>'
                    for n, line in enumerate(["\u00b2", "\u0661\u0662", "1" * 5000, "-3", "7"]))
    (tmp_path / "pytest.xml").write_text(f"<testsuite>{cases}</testsuite>")
    for n in range(100):
        (tmp_path / f"bad{n:03}.xml").write_text("<testsuite>")
    report = junit_reports.read(str(tmp_path))
    assert [failure["line"] for failure in report["failures"]] == [None, None, None, None, 8]  # pytest's count from 0
    assert len(report["unreadable"]) == junit_reports.MAX_NAMED and report["unreadable_omitted"] == 80
    assert junit_reports.render(report)[1].startswith("100 report files not read: bad000.xml, ")
    passing = {**report, "failures": [], "failures_omitted": 0}
    assert junit_reports.shrunk(passing, 100)["failures_omitted"] == 0
    assert junit_reports.shrunk(report, 100)["failures"] == [] and junit_reports.shrunk(report, 100)["failures_omitted"] == 5
