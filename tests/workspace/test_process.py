"""Child processes of tools: cancellation kills the whole process group, deadlines and output bounds hold.

The children here are Python itself, which the sandbox lets read its own installation (PYTHON_HOME)
and start only itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from shipcode_mcp.context import Cancelled
from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace.process import Child, run, stat_fields
from support import wait_for
from workspace_support import context


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    return state != "Z"


PYTHON_HOME = sorted({sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))})


def test_cancelling_kills_the_child_and_everything_it_started() -> None:
    ctx = context()
    script = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
              "print(p.pid, flush=True); time.sleep(30)")
    with Child(ctx, [sys.executable, "-c", script], cwd="/", readable=PYTHON_HOME) as child:
        lines = child.lines()
        grandchild = int(next(lines))
        assert _alive(grandchild)
        threading.Timer(0.1, ctx.cancel).start()
        started = time.monotonic()
        with pytest.raises(Cancelled):
            list(lines)
        assert time.monotonic() - started < 2
        assert child.proc.wait(5) == -signal.SIGKILL
    wait_for(lambda: not _alive(grandchild), 10, "the grandchild to be killed")


def test_a_request_cancelled_before_the_start_kills_at_once() -> None:
    ctx = context()
    ctx.cancel()
    with pytest.raises(Cancelled):
        run(ctx, ["sleep", "30"], cwd="/", readable=[], limit=100)


def test_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"took longer than 0\.3 s"):
        run(context(), ["sleep", "30"], cwd="/", readable=[], limit=100, timeout=0.3, what="sleep")
    assert time.monotonic() - started < 3


def test_output_is_bounded_and_stderr_kept() -> None:
    done = run(context(), ["sh", "-c", "echo oops >&2; while :; do echo y; done"], cwd="/", readable=[], limit=1000)
    assert done.truncated and len(done.stdout) == 1000 and done.stdout.startswith(b"y\ny\n")
    assert done.stderr == "oops\n"
    whole = run(context(), ["printf", "a\\nb"], cwd="/", readable=[], limit=1000)
    assert (whole.stdout, whole.truncated, whole.returncode) == (b"a\nb", False, 0)


def test_what_the_child_said_on_stderr_is_kept_when_its_reader_stops_early() -> None:
    """A reader that stops at the first line of stdout still gets the stderr written before it: a child that
    printed both before the first read (a loaded machine) has stdout reported first, and the reader stops
    before stderr is read (a search's note on unreadable files was lost so)."""
    with Child(context(), ["sh", "-c", "echo unreadable >&2; while :; do echo more; done"], cwd="/",
               readable=[]) as child:
        time.sleep(0.5)  # both pipes hold data before the first look at them
        for _ in child.lines():
            break
        child.kill()
        child.wait()
        assert child.stderr == "unreadable\n"


def test_lines_split_across_chunks() -> None:
    script = "import sys; sys.stdout.write('x' * 200000 + '\\n' + 'y\\n\\nz')"
    with Child(context(), [sys.executable, "-c", script], cwd="/", readable=PYTHON_HOME) as child:
        assert [len(line) for line in child.lines()] == [200000, 1, 0, 1]


def test_a_program_that_cannot_start_is_a_clean_error() -> None:
    with pytest.raises(ToolError, match="Could not start nothing-here: No such file or directory"):
        run(context(), ["/nonexistent/nothing-here"], cwd="/", readable=[], limit=10)


def test_a_long_line_is_held_only_up_to_the_limit() -> None:
    """Only the head of a line past the limit is kept (with its size and tail): memory follows the limit."""
    from shipcode_mcp.workspace.process import TAIL_BYTES, CutLine

    script = "import sys; w = sys.stdout.write; w('short\\n'); w('a' * 300000 + 'END\\n'); w('x' * 10); w('\\n\\nlast')"
    with Child(context(), [sys.executable, "-c", script], cwd="/", readable=PYTHON_HOME) as child:
        lines = list(child.lines(1000))
    assert lines[0] == b"short" and not isinstance(lines[0], CutLine)
    cut = lines[1]
    assert isinstance(cut, CutLine) and cut == b"a" * 1000 and cut.size == 300003
    assert cut.tail == b"a" * (TAIL_BYTES - 3) + b"END"
    assert lines[2:] == [b"x" * 10, b"", b"last"]


def test_at_most_max_children_run_at_once_and_a_waiting_one_can_be_cancelled() -> None:
    """A flood of requests does not become a flood of processes: the rest wait, cancellable."""
    from shipcode_mcp.workspace.process import MAX_CHILDREN

    held = [Child(context(), [sys.executable, "-c", "import time; time.sleep(30)"], cwd="/", readable=PYTHON_HOME)
            for _ in range(MAX_CHILDREN)]
    try:
        waiting = context()
        started = time.monotonic()  # before the timer starts, so the cancel comes 0.3 s after it at the earliest
        threading.Timer(0.3, waiting.cancel).start()
        with pytest.raises(Cancelled):
            run(waiting, ["true"], cwd="/", readable=[], limit=10)
        assert 0.25 < time.monotonic() - started < 3  # it waited for a slot until it was cancelled
        with pytest.raises(ToolError, match=r"waited longer than 0\.2 s for its turn"):
            run(context(), ["true"], cwd="/", readable=[], limit=10, timeout=0.2)
    finally:
        for child in held:
            child.__exit__()
    assert run(context(), ["true"], cwd="/", readable=[], limit=10).returncode == 0  # the slots came back


def test_stat_fields_read_past_a_name_that_looks_like_fields(tmp_path: Path) -> None:
    """A process may name itself anything (its executable's file name): one holding ') Z 1 (' must not be read
    as a zombie whose parent is init."""
    program = tmp_path / "a) Z 1 (b"
    shutil.copy(sys.executable, program)
    child = subprocess.Popen([str(program), "-c", "import time; time.sleep(30)"])
    try:
        fields = stat_fields(child.pid)
        assert fields[0] in ("S", "R", "D")
        assert int(fields[1]) == os.getpid()
    finally:
        child.kill()
        child.wait()
    with pytest.raises(OSError):
        stat_fields(child.pid)
