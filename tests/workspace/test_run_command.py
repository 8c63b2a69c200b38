"""run_command through a real server over real pipes: what a command sees, may write and reach, its limits, its
output, and that nothing it starts outlives the call. Each attack is first shown to work on a plain `sh -c`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp import era
from shipcode_mcp.context import Cancelled
from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import command_sandbox, run_command, tree_limits
from shipcode_mcp.workspace.command_sandbox import RunOptions
from shipcode_mcp.workspace.roots import Roots
from support import REPO, SERVER, McpProcess
from workspace_support import Tools, context, git, make_repo

pytestmark = pytest.mark.skipif(command_sandbox.unavailable_reason() is not None,
                                reason=f"no sandbox for commands here: {command_sandbox.unavailable_reason()}")
TOOLCHAIN = ("--run-read", sys.prefix, "--run-read", sys.base_prefix)
"""The interpreter running the tests (a virtualenv, and the Python it is made from), readable to commands."""


def plain(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`command` run by a plain `sh -c`, outside any sandbox: the attack working without us."""
    return subprocess.run(["sh", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **env}, check=False)


WAITED = "for another command that may write the roots to end"
"""A writing command waits for every other of this user (one lock file): under pytest -n 2 the other worker's tests
may hold it longer than a short timeout."""


def run(tools: Tools, command: str, **arguments: Any) -> dict[str, Any]:
    """run_command's data, asked again while it is refused for the other worker's writing command (the command's
    timeout counts its wait for that lock)."""
    data: dict[str, Any] = tools.call("run_command", {"command": command, **arguments}, timeout=300,
                                      retried_while=WAITED)["structuredContent"]
    return data


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "project")
    (root / "sub").mkdir()
    return root


def test_run_command_is_offered_only_with_allow_run_and_says_how_it_ended(project: Path) -> None:
    with Tools(project) as tools:
        assert "run_command" not in tools.order
    with Tools(project, options=("--allow-run",)) as tools:
        assert tools.order[-1] == "run_command"
        annotations = tools.tools["run_command"]["annotations"]
        assert annotations["openWorldHint"] is False and annotations["readOnlyHint"] is False
        data = run(tools, "echo out; echo err >&2; pwd; exit 3", cwd="sub")
        assert data["exit_code"] == 3 and data["limits"] == []
        assert data["stdout"] == f"out\n{project / 'sub'}\n" and data["stderr"] == "err\n"
        assert data["cwd"] == "sub" and data["stdout_omitted"] == 0
        text = tools.last["content"][0]["text"]
        assert text.startswith("$ echo out; echo err >&2; pwd; exit 3\n(in sub, took ")
        assert " s)\nexit status 3\nstdout (" in text
        assert text.endswith("stderr (4 bytes):\nerr")
    with Tools(project, options=("--allow-run", "--run-network")) as tools:
        assert tools.tools["run_command"]["annotations"]["openWorldHint"] is True


def test_a_command_reads_nothing_of_the_home_folder_or_outside_the_roots(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text("PRIVATE KEY\n")
    (project / "link").symlink_to(secret)
    key = tmp_path / "state.key"  # the server's own secret (the key that signs what modern clients carry)
    key.write_text("SERVER KEY " + "k" * 32 + "\n")
    attack = f"cat {secret}; cat link; cat {key}; ls {tmp_path}"
    done = plain(attack, project).stdout
    assert done.count("PRIVATE KEY") == 2 and "SERVER KEY" in done  # the attack works without the sandbox
    with Tools(project, options=("--allow-run", "--state-key-file", str(key)),
               env={"HOME": str(tmp_path / "home")}) as tools:
        data = run(tools, attack + "; ls ~; echo $HOME")
        assert "PRIVATE KEY" not in data["stdout"] + data["stderr"] and "SERVER KEY" not in data["stdout"]
        assert "No such file or directory" in data["stderr"]
        # the roots' parent folder shows only the way to the roots; HOME is its own, empty
        assert data["stdout"].split() == ["project", "/tmp/home"]


def test_a_command_writes_the_roots_only_with_allow_write_and_never_a_git_folder(project: Path) -> None:
    nested = make_repo(project / "vendor" / "lib")
    (project / "sub" / "hidden").mkdir()
    (project / "sub" / "hidden" / "gitdir").mkdir()
    os.symlink("hidden/gitdir", project / "sub" / ".git")  # a .git that is a link into the root
    plant = ("echo evil > .git/hooks/pre-commit; echo evil > vendor/lib/.git/config; "
             "mkdir sub/.git/hooks; echo evil > sub/.git/hooks/post-checkout; echo made > made.txt")
    copy = project.parent / "copy"
    subprocess.run(["cp", "-a", str(project), str(copy)], check=True)
    plain(plant, copy)
    assert (copy / ".git" / "hooks" / "pre-commit").read_text() == "evil\n"  # the attack works without the sandbox
    assert (copy / "vendor" / "lib" / ".git" / "config").read_text() == "evil\n"
    assert (copy / "sub" / "hidden" / "gitdir" / "hooks" / "post-checkout").exists()
    config = (nested / ".git" / "config").read_text()
    with Tools(project, options=("--allow-run",)) as tools:
        data = run(tools, "echo made > made.txt")
        assert "Read-only file system" in data["stderr"] and not (project / "made.txt").exists()
    with Tools(project, write=True, options=("--allow-run",)) as tools:
        data = run(tools, plant)
    assert (project / "made.txt").read_text() == "made\n"  # the work tree is writable
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert (nested / ".git" / "config").read_text() == config
    assert not (project / "sub" / "hidden" / "gitdir" / "hooks").exists()
    assert data["stderr"].count("Read-only file system") == 3  # and the hook of sub/.git: its folder could not be made


def test_git_works_in_the_sandbox_on_a_read_only_git_folder(project: Path) -> None:
    with Tools(project, write=True, options=("--allow-run",)) as tools:
        data = run(tools, "git log --format=%s && git status --short && echo changed >> README.md && git diff --stat")
        assert data["exit_code"] == 0, data
        assert git(project, "log", "--format=%s").strip() in data["stdout"]
        assert "1 file changed" in data["stdout"]


def test_no_network_but_a_private_loopback_unless_allowed(project: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            server.accept()[0].close()

    threading.Thread(target=serve, daemon=True).start()
    connect = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"connected\")'"
    assert plain(connect, project).stdout == "connected\n"  # the attack works without the sandbox
    loopback = ("python3 -c 'import socket; s = socket.create_server((\"127.0.0.1\", 0)); "
                "socket.create_connection(s.getsockname(), 5); print(\"local\")'")
    try:
        with Tools(project, options=("--allow-run",)) as tools:
            data = run(tools, connect)
            assert data["exit_code"] != 0 and "connected" not in data["stdout"]
            assert "Network is unreachable" in data["stderr"] or "Connection refused" in data["stderr"]
            assert run(tools, loopback)["stdout"] == "local\n"  # a test's own server still works
        with Tools(project, options=("--allow-run", "--run-network")) as tools:
            assert run(tools, connect)["stdout"] == "connected\n"
    finally:
        server.close()


def test_the_environment_holds_nothing_of_the_servers_but_what_is_named(project: Path) -> None:
    show = "echo token=$SHIPCODE_TEST_TOKEN extra=$EXTRA named=$NAMED"
    assert "token=s3cret" in plain(show, project, SHIPCODE_TEST_TOKEN="s3cret").stdout
    env = {"SHIPCODE_TEST_TOKEN": "s3cret", "NAMED": "from-server"}
    with Tools(project, options=("--allow-run", "--run-env", "NAMED", "--run-env", "FIXED=1"), env=env) as tools:
        data = run(tools, show + " fixed=$FIXED; env | cut -d= -f1 | sort | tr '\\n' ' '", env=["EXTRA=x y"])
        assert data["stdout"].startswith("token= extra=x y named=from-server fixed=1\n")
        assert data["stdout"].splitlines()[1].split() == ["EXTRA", "FIXED", "HOME", "LANG", "NAMED", "PATH", "PWD",
                                                         "TMPDIR"]
        assert "does not match" in tools.error("run_command", {"command": "true", "env": ["=x"]})
        assert "holds a NUL" in tools.error("run_command", {"command": "true", "env": ["A=\x00"]})


def test_other_processes_are_out_of_sight_and_reach(project: Path) -> None:
    me = os.getpid()
    assert plain(f"kill -0 {me} && echo reached", project).stdout == "reached\n"  # the attack works without us
    with Tools(project, options=("--allow-run",)) as tools:
        data = run(tools, f"kill -0 {me} && echo reached; kill -0 {tools.process.proc.pid} && echo reached; "
                          "ls /proc | grep -c '^[0-9]'")
        assert "reached" not in data["stdout"]
        assert int(data["stdout"].split()[-1]) <= 6  # bubblewrap's init, the shell, ls and grep


def _ticking(folder: Path) -> bool:
    """Whether something still rewrites folder/tick (the clock of a process left behind)."""
    tick = folder / "tick"
    before = tick.read_text() if tick.exists() else None
    time.sleep(0.5)
    return tick.exists() and tick.read_text() != before


def daemon(mark: str = "") -> str:
    """A process that leaves its shell (a double fork, setsid, nohup) and ticks; `mark` is in its command line, so
    that exactly it can be found and killed (tests run side by side)."""
    return (f"(setsid nohup sh -c 'while :; do date +%s%N > tick; sleep 0.05; done # {mark}' > /dev/null 2>&1 &) ; "
            "sleep 0.3")


def marked(mark: str) -> list[int]:
    """The processes of the machine whose command line holds `mark` (a pid scan of /proc)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                    if mark.encode() in cmdline.read():
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_nothing_the_command_started_outlives_it(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    mark = f"shipcode-test-daemon-{os.getpid()}-{time.monotonic_ns()}"
    subprocess.run(["sh", "-c", daemon(mark)], cwd=outside, check=True, timeout=30)
    try:
        assert _ticking(outside) and marked(mark)  # the attack works without the sandbox: the daemon outlives sh
    finally:
        subprocess.run(["pkill", "-f", mark], check=False)
    with Tools(project, write=True, options=("--allow-run",)) as tools:
        assert run(tools, daemon(mark))["exit_code"] == 0
        assert (project / "tick").exists() and not _ticking(project) and marked(mark) == []
        data = run(tools, daemon(mark) + "; sleep 60", timeout=2)
        assert data["limits"] == ["timeout"] and data["exit_code"] is None and 1900 <= data["duration_ms"] < 10000
        assert not _ticking(project) and marked(mark) == []
        closed = run(tools, "exec > /dev/null 2>&1; sleep 60", timeout=2)  # no pipe left to wait on: the shell is
        assert closed["limits"] == ["timeout"] and 1900 <= closed["duration_ms"] < 10000


def test_a_cancelled_call_kills_the_tree_at_once(project: Path) -> None:
    roots = Roots([str(project)])
    roots.run_options = RunOptions(writable=True)
    ctx = context()
    mark = f"shipcode-test-cancelled-{os.getpid()}-{time.monotonic_ns()}"
    seen: list[int] = []

    cancelled: list[float] = []

    def cancel() -> None:  # once the daemon runs (the command may first wait for the other worker's writing one)
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            time.sleep(0.2)
            seen.extend(marked(mark))  # (the scan sees the sandbox's processes: it would see one left behind)
        cancelled.append(time.monotonic())
        ctx.cancel()

    threading.Thread(target=cancel, daemon=True).start()
    with pytest.raises(Cancelled):
        run_command.run_command(ctx, roots, daemon(mark) + "; sleep 60", None, 60, None, None)
    assert time.monotonic() - cancelled[0] < 10
    assert seen and not _ticking(project) and marked(mark) == []


def test_output_keeps_its_start_and_end_and_counts_the_middle(project: Path) -> None:
    with Tools(project, options=("--allow-run",)) as tools:
        data = run(tools, "seq 1 200000; seq 1 10 >&2")
    total = len("".join(f"{n}\n" for n in range(1, 200001)))
    assert data["stdout_bytes"] == total and data["stderr"] == "".join(f"{n}\n" for n in range(1, 11))
    head, marker, tail = data["stdout"].partition(f"[… {data['stdout_omitted']} bytes left out …]\n")
    assert marker and head.startswith("1\n2\n3\n") and tail.endswith("199999\n200000\n")
    assert len(head) <= run_command.HEAD and len(tail) <= run_command.TAIL
    assert len(head) + len(tail) + data["stdout_omitted"] == total
    # whole lines only: the kept start and end are runs of consecutive numbers
    first, last = [int(n) for n in head.split()], [int(n) for n in tail.split()]
    assert first == list(range(1, len(first) + 1)) and last == list(range(200001 - len(last), 200001))


def test_a_result_over_the_budget_is_cut_from_the_middle_without_running_again(project: Path) -> None:
    with Tools(project, write=True, options=("--allow-run",)) as tools:
        result = tools.call("run_command", {"command": "echo once >> runs.txt; seq 1 50000"},
                            meta={"io.github.shipcode-mcp/maxResultTokens": 1000})
    assert (project / "runs.txt").read_text() == "once\n"
    data, text = result["structuredContent"], result["content"][0]["text"]
    assert len(text.encode()) + len(str(data).encode()) <= 1000 * 3 * 1.1
    assert data["stdout"].startswith("1\n2\n") and data["stdout"].endswith("49999\n50000\n")
    assert data["stdout_bytes"] == len("".join(f"{n}\n" for n in range(1, 50001)))
    assert f"[… {data['stdout_omitted']} bytes left out …]" in text


def test_a_tests_report_over_the_budget_lists_fewer_failures_however_quiet_the_output(project: Path) -> None:
    case = '<testcase classname="m" name="t{0}"><failure message="f{0}">{1}</failure></testcase>'
    report = "<testsuite>" + "".join(case.format(n, "x" * 3000) for n in range(50)) + "</testsuite>"
    (project / "report.xml").write_text(report)
    with Tools(project, options=("--allow-run",)) as tools:
        result = tools.call("run_command", {"command": "cp report.xml $JUNIT_REPORT_DIR/", "report": "tests"},
                            meta={"io.github.shipcode-mcp/maxResultTokens": 2000})
    data, text = result["structuredContent"], result["content"][0]["text"]
    assert len(text.encode()) + len(str(data).encode()) <= 2000 * 3 * 1.1
    tests = data["tests"]
    assert tests["failed"] == 50 and 0 < len(tests["failures"]) < 50
    assert len(tests["failures"]) + tests["failures_omitted"] == 50


def test_progress_notifications_carry_the_lines_as_they_come(project: Path) -> None:
    roots = Roots([str(project)])
    roots.run_options = RunOptions()
    ctx = context(progress_token="run-1")
    result = run_command.run_command(ctx, roots, "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.2; done", None, 30,
                                     None, None)
    assert result.structured is not None and result.structured["stdout"].count("line") == 6
    progress = [message["params"] for message in ctx.sent if message.get("method") == "notifications/progress"]
    assert len(progress) >= 3 and all(params["progressToken"] == "run-1" for params in progress)
    assert [params["progress"] for params in progress] == sorted({params["progress"] for params in progress})
    assert all(params["message"].startswith("line ") for params in progress)


def _bounds(what: str) -> bool:
    """Whether this machine lets the server bound a command's tree (`what`: "memory" or "processes")."""
    limits = tree_limits.TreeLimits()
    try:
        return bool(getattr(limits, f"bounds_{what}"))
    finally:
        limits.close()


@pytest.mark.skipif(not _bounds("processes"), reason="no cgroup for the process count here")
def test_a_fork_bomb_ends_as_a_result_that_says_so(project: Path) -> None:
    with Tools(project, options=("--allow-run", "--run-processes", "64")) as tools:
        data = run(tools, "bomb() { bomb | bomb & }; bomb; sleep 1", timeout=30)
    assert "processes" in data["limits"] and data["duration_ms"] < 30000


@pytest.mark.skipif(not _bounds("memory"), reason="no cgroup for memory here")
def test_memory_is_bounded_for_the_whole_tree(project: Path) -> None:
    grow = "python3 -c 'b = bytearray(120 << 20); import time; time.sleep(3)'"
    with Tools(project, options=("--allow-run", "--run-memory", "256")) as tools:
        assert run(tools, grow)["exit_code"] == 0  # one alone fits
        data = run(tools, f"{grow} & {grow} & {grow} & wait")  # three together do not
    assert data["limits"] == ["memory"]


def test_the_commands_tmp_cannot_fill_the_disk(project: Path, tmp_path: Path) -> None:
    """/tmp (HOME, TMPDIR) is a tmpfs of half --run-memory, gone with the call: a command writing more than that is
    told the device is full; nothing of it reaches the server's disk. (Writes to the roots, with --allow-write, are
    the user's grant, bounded per file.)"""
    fill = "head -c 40000000 /dev/zero > $TMPDIR/big && echo written; ls -l $TMPDIR/big"
    outside = tmp_path / "plain"
    outside.mkdir()
    assert "written" in plain(fill, project, TMPDIR=str(outside)).stdout  # without us: 40 MB on the server's disk
    assert (outside / "big").stat().st_size == 40_000_000
    scratch = tmp_path / "tmp"  # the server's temporary folder
    scratch.mkdir()
    with Tools(project, options=("--allow-run", "--run-memory", "64"), env={"TMPDIR": str(scratch)}) as tools:
        data = run(tools, fill + "; cd ~ && head -c 40000000 /dev/zero > big2 && echo home-written")
        assert "written" not in data["stdout"] and "No space left on device" in data["stderr"], data
        assert f" {32 << 20} " in data["stdout"]  # what was written stopped at the size of /tmp: 32 MiB
        assert os.listdir(scratch) == []
        devices = run(tools, "touch /dev/made && echo made; echo x > /dev/null && echo null; ls /dev/shm")
        assert devices["stdout"] == "null\n" and "Read-only file system" in devices["stderr"]  # /dev: no room either
        data = run(tools, "head -c 1000000 /dev/zero > $TMPDIR/small && echo written; ls $TMPDIR; ls -A ~")
        listed = data["stdout"].split()
        assert listed[0] == "written" and "small" in listed  # a new /tmp, the last call's files gone:
        assert "big" not in listed and "big2" not in listed and listed[-1] == "small"  # (~ is empty)


def test_a_real_test_suite_runs_and_its_failure_comes_back(project: Path) -> None:
    (project / "test_sample.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n\n\n"
                                            "def test_broken():\n    assert 'abc'.upper() == 'abd'\n")
    with Tools(project, options=("--allow-run", *TOOLCHAIN)) as tools:
        data = run(tools, f"{sys.executable} -m pytest -q -p no:cacheprovider test_sample.py", timeout=120)
    assert data["exit_code"] == 1, data
    assert "1 failed, 1 passed" in data["stdout"] and "assert 'ABC' == 'abd'" in data["stdout"]
    assert data["tests"] is None  # not asked for


def test_report_tests_returns_a_real_runners_failures_as_data(project: Path) -> None:
    """pytest, told by its own variable, writes its JUnit report into the scratch folder; the failures come back
    with their test id, file, line, message and traceback. A runner pointed at $JUNIT_REPORT_DIR by the command
    itself counts too; what the command plants there (a link out, a FIFO, an entity bomb) is not read."""
    (project / "tests").mkdir()
    (project / "tests" / "test_sample.py").write_text(
        "import pytest\n\n\ndef test_ok():\n    assert 1 + 1 == 2\n\n\n"
        "def test_broken():\n    assert 'abc'.upper() == 'abd'\n\n\n"
        "@pytest.fixture\ndef bad():\n    raise RuntimeError('no fixture')\n\n\n"
        "def test_error(bad):\n    pass\n\n\n@pytest.mark.skip\ndef test_skipped():\n    pass\n")
    bomb = ('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
            '<testsuite><testcase name="x"><failure message="&b;"/></testcase></testsuite>')
    plant = (f"ln -s /etc/passwd $JUNIT_REPORT_DIR/link.xml; mkfifo $JUNIT_REPORT_DIR/fifo.xml; "
             f"printf '%s' '{bomb}' > $JUNIT_REPORT_DIR/bomb.xml; "
             "printf '<testsuite><testcase classname=\"other\" name=\"t\"><failure message=\"boom\">trace</failure>"
             "</testcase></testsuite>' > $JUNIT_REPORT_DIR/other.xml")
    import xml.etree.ElementTree as PlainXml  # (the attack working without us: the standard parser expands it)

    assert PlainXml.fromstring(bomb).find("testcase/failure").get("message") == "a" * 80  # type: ignore[union-attr]
    planted = project.parent / "planted"
    planted.mkdir()
    (planted / "link.xml").symlink_to("/etc/passwd")
    assert "root:" in (planted / "link.xml").read_text()  # and a plain open follows a planted link out
    with Tools(project, options=("--allow-run", *TOOLCHAIN)) as tools:
        data = run(tools, f"{sys.executable} -m pytest -q -p no:cacheprovider tests; {plant}", timeout=120,
                   report="tests")
        text = tools.last["content"][0]["text"]
    report = data["tests"]
    assert report["reports"] == 2 and sorted(report["unreadable"]) == ["bomb.xml", "fifo.xml", "link.xml"]
    assert (report["total"], report["failed"], report["errors"], report["skipped"]) == (5, 2, 1, 1)
    other, broken, error = report["failures"]  # the reports in name order: other.xml, pytest.xml
    assert broken["id"] == "tests.test_sample::test_broken" and broken["kind"] == "failure"
    assert (broken["file"], broken["line"]) == ("tests/test_sample.py", 8)
    assert "AssertionError" in broken["message"] and "assert 'ABC' == 'abd'" in broken["traceback"]
    assert error["id"] == "tests.test_sample::test_error" and error["kind"] == "error"
    assert "no fixture" in error["traceback"]
    assert other == {"id": "other::t", "kind": "failure", "file": None, "line": None, "message": "boom",
                     "traceback": "trace"}
    assert "tests: 5 run, 2 failed, 1 broke, 1 skipped" in text
    assert "FAILED tests.test_sample::test_broken (tests/test_sample.py:8): AssertionError" in text


def test_bad_calls_are_refused_clearly(project: Path, tmp_path: Path) -> None:
    (project / "out").symlink_to(tmp_path)
    with Tools(project, options=("--allow-run", "--run-timeout", "5")) as tools:
        assert "not inside the workspace roots" in tools.error("run_command", {"command": "true", "cwd": "/etc"})
        assert "not inside the workspace roots" in tools.error("run_command", {"command": "true", "cwd": "out"})
        assert "is not a folder" in tools.error("run_command", {"command": "true", "cwd": "a.txt"})
        assert "at most 5 s" in tools.error("run_command", {"command": "true", "timeout": 6})
        assert "NUL" in tools.error("run_command", {"command": "true\x00"})


def test_scratch_folders_and_cgroups_are_removed_after_each_call(project: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"  # the server's temporary folder: its commands' scratch folders go there
    scratch.mkdir()
    with Tools(project, options=("--allow-run",), env={"TMPDIR": str(scratch)}) as tools:
        data = run(tools, "echo kept > $TMPDIR/x; mkdir -p ~/d; chmod 0 ~/d; ls $TMPDIR")
        assert "x" in data["stdout"].split()
        pid = tools.process.proc.pid
        assert os.listdir(scratch) == []
    cgroups = [os.path.join(folder, name) for folder, names, _ in os.walk("/sys/fs/cgroup") for name in names
               if name.startswith(f"shipcode-run-{pid}-")]
    assert cgroups == []


def test_a_scratch_folder_replaced_by_a_link_is_left_alone_and_nothing_it_leads_to_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a root holds /tmp, the command's /tmp is a tmpfs on an empty scratch folder of the server's temporary
    folder, in the root: the command may replace that folder by a link (or rename what holds it) before the call
    ends. Its removal is by descriptor: this folder only, else nothing."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    victim = tmp_path / "victim"
    (victim / "inner").mkdir(parents=True)
    (victim / "inner" / "kept").write_text("kept\n")
    scratch = run_command.Scratch()
    assert scratch.path.startswith(f"{os.path.realpath(tmp_path)}/shipcode-run-") and os.listdir(scratch.path) == []
    swapped = f"{scratch.path}.swapped"
    os.rename(scratch.path, swapped)
    os.symlink(victim / "inner", scratch.path)
    subprocess.run(["rm", "-rf", f"{scratch.path}/"], check=True, timeout=30)  # a removal by path follows it
    assert not (victim / "inner" / "kept").exists()
    (victim / "inner" / "kept").write_text("kept\n")
    scratch.remove()
    assert (victim / "inner" / "kept").read_text() == "kept\n" and os.path.islink(scratch.path)
    fine = run_command.Scratch()
    fine.remove()
    assert not os.path.lexists(fine.path)
    fine.remove()  # (twice: nothing more)


ROOT_TMP = ("mount -t tmpfs -o size=256m shipcode-test /tmp && exec \"$@\"")
"""A server in a mount namespace of its own whose /tmp is a fresh tmpfs, given /tmp as its root."""


def private_tmp() -> bool:
    """Whether this process may make a mount namespace of its own with a fresh /tmp (root, unshare, mounts allowed)
    in which the server still runs (its interpreter, packages and sources are not under /tmp, which it hides)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    needed = {REPO, Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve()}
    if any(Path(os.path.realpath(path)).is_relative_to("/tmp") for path in needed):
        return False
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", ROOT_TMP, "sh", "true"],
                          capture_output=True, timeout=30, check=False)
    return done.returncode == 0


@pytest.mark.skipif(not private_tmp(), reason="needs root, a mount namespace of its own (unshare, mount), and the "
                                               "server's interpreter and sources outside /tmp")
def test_where_the_root_holds_tmp_the_commands_tmp_is_a_bounded_tmpfs_there_too(tmp_path: Path) -> None:
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", ROOT_TMP, "sh", *SERVER]
    with McpProcess("--allow-run", "--allow-write", "--run-memory", "64", "/tmp", command=command) as server:
        server.initialize()
        view = Path(f"/proc/{server.proc.pid}/root/tmp")  # the server's /tmp, the root
        (view / "kept").write_text("kept\n")
        first = server.call_tool("run_command", {"command": "echo $TMPDIR; echo hi > $TMPDIR/x && cat $TMPDIR/x; "
                                                            "ls -A /tmp; cat /tmp/kept; mv $TMPDIR /tmp/moved"})
        data = first["structuredContent"]
        scratch, hi, *listed = data["stdout"].split()
        assert scratch.startswith("/tmp/shipcode-run-") and hi == "hi" and listed[-1] == "kept"
        assert os.path.basename(scratch) in listed and "Device or resource busy" in data["stderr"]
        assert sorted(os.listdir(view)) == ["kept"]  # the mount point removed, nothing of x on the disk
        full = server.call_tool("run_command", {"command": "head -c 40000000 /dev/zero > $TMPDIR/big; ls -l $TMPDIR/big"})
        assert "No space left on device" in full["structuredContent"]["stderr"]
        assert f" {32 << 20} " in full["structuredContent"]["stdout"]
        report = ('<testsuite><testcase classname="c" name="t"><failure message="boom"/></testcase></testsuite>')
        tests = server.call_tool("run_command", {"command": f"echo '{report}' > $JUNIT_REPORT_DIR/r.xml",
                                                 "report": "tests"})
        assert tests["structuredContent"]["tests"]["failed"] == 1, tests
        assert sorted(os.listdir(view)) == ["kept"]


def test_the_kernels_settings_and_nested_namespaces_are_out_of_reach(project: Path) -> None:
    rewrite = "cat /proc/sys/kernel/printk_ratelimit > /proc/sys/kernel/printk_ratelimit && echo written"
    if os.geteuid() == 0:  # a root command writes the host's settings unless /proc/sys is read-only
        assert plain(rewrite, project).stdout == "written\n"
    with Tools(project, options=("--allow-run",)) as tools:
        data = run(tools, f"{rewrite}; echo > /proc/sysrq-trigger; unshare -U true && echo nested; touch /made; "
                          "ls /etc/ssl; cat /proc/kcore | head -c 1 | wc -c")
    assert "written" not in data["stdout"] and "nested" not in data["stdout"]
    assert data["stderr"].count("Read-only file system") == 2 and "cannot create /proc/sysrq-trigger" in data["stderr"]
    assert data["stdout"].split() == ["certs", "openssl.cnf", "0"]  # no ssl/private; kcore covered


def test_no_socket_or_fifo_file_in_a_root_reaches_a_host_service(project: Path) -> None:
    (project / "bare" / "objects").mkdir(parents=True)  # a folder git takes for a repository
    (project / "bare" / "refs").mkdir()
    (project / "bare" / "HEAD").write_text("ref: refs/heads/main\n")
    places = ["service.sock", ".git/service.sock", "bare/service.sock"]
    servers = []
    for place in places:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(project / place))
        server.listen()
        servers.append(server)
    os.mkfifo(project / "control.fifo")
    connect = ("python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
               "print(\"reached\")' ")
    attack = "; ".join(connect + place for place in places) + "; echo sent > control.fifo; echo done"
    try:
        assert plain(connect + places[1], project).stdout == "reached\n"  # the attack works without the sandbox
        for mode in ((), ("--allow-write",)):
            with Tools(project, options=("--allow-run", *mode)) as tools:
                data = run(tools, attack, timeout=20)
            assert "reached" not in data["stdout"] and data["stdout"].endswith("done\n"), data
            assert data["stderr"].count("Connection refused") == 3
    finally:
        for server in servers:
            server.close()


def test_what_the_scan_meets_never_blocks_it_and_too_many_repositories_are_refused(project: Path,
                                                                                      tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "outside.fifo")
    (project / "a").mkdir()
    (project / "a" / ".git").symlink_to(tmp_path / "outside.fifo")  # out of the roots: never opened
    (project / "b").mkdir()
    os.mkfifo(project / "b" / ".git")  # in the roots, not a file: never read
    with Tools(project, write=True, options=("--allow-run",)) as tools:
        assert run(tools, "echo ran", timeout=10)["stdout"] == "ran\n"
        for i in range(300):
            (project / "many" / str(i) / ".git").mkdir(parents=True)
        assert "more than the 256" in tools.error("run_command", {"command": "echo ran"})


def test_the_lock_of_writing_commands_is_the_users_whatever_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    first = run_command._lock_file()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    second = run_command._lock_file()
    try:
        assert os.readlink(f"/proc/self/fd/{first}") == os.readlink(f"/proc/self/fd/{second}")
        assert os.readlink(f"/proc/self/fd/{first}").endswith("/shipcode-mcp/run.lock")
    finally:
        os.close(first)
        os.close(second)


def test_repositories_by_any_name_stay_read_only(project: Path) -> None:
    (project / "meta").mkdir()
    git(project, "init", "-q", "--separate-git-dir=meta/sub.git", "sub")
    git(project, "init", "-q", "--bare", "bare.git")
    with Tools(project, write=True, options=("--allow-run",)) as tools:
        data = run(tools, "echo '[core]' >> meta/sub.git/config; touch bare.git/hooks/post-receive; "
                          "touch sub/.git; echo done")
    assert data["stdout"] == "done\n" and data["stderr"].count("Read-only file system") == 3
    assert "[core]\n" not in (project / "meta" / "sub.git" / "config").read_text().splitlines()[-1:]
    assert not (project / "bare.git" / "hooks" / "post-receive").exists()


def test_a_tree_too_deep_to_check_is_refused_and_scratch_trees_of_any_depth_are_removed(project: Path,
                                                                                       tmp_path: Path) -> None:
    fd = os.open(project, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(20):  # 20 folders of 250 characters: deeper than a path can name
            os.mkdir("d" * 250, dir_fd=fd)
            deeper = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = deeper
    finally:
        os.close(fd)
    scratch = tmp_path / "tmp"  # the server's temporary folder: its commands' scratch folders go there
    scratch.mkdir()
    with Tools(project, write=True, options=("--allow-run",), env={"TMPDIR": str(scratch)}) as tools:
        assert "too long to be checked" in tools.error("run_command", {"command": "echo ran"})
        subprocess.run(["rm", "-rf", str(project / ("d" * 250))], check=True)
        deep = "cd $TMPDIR && for i in $(seq 1500); do mkdir d && cd d || exit 1; done; chmod 0 ..; echo deep"
        assert run(tools, deep)["stdout"] == "deep\n"
        assert "d" not in run(tools, "ls $TMPDIR")["stdout"].split()  # each call's scratch folder is new
        assert os.listdir(scratch) == []  # and removed after it


def test_binary_output_is_counted_in_bytes(project: Path) -> None:
    binary = "head -c 40000 /dev/zero | tr '\\000' '\\377'"
    with Tools(project, options=("--allow-run", "--max-result-tokens", "0")) as tools:
        data = run(tools, binary)
    assert data["stdout_bytes"] == 40000 and 40000 - run_command.HEAD - run_command.TAIL == data["stdout_omitted"]
    assert data["stdout"].count("\ufffd") == run_command.HEAD + run_command.TAIL
    with Tools(project, options=("--allow-run", "--max-result-tokens", "2000")) as tools:
        cut = run(tools, binary)  # cut again to the budget: still counted, never below what was left out before
    shown = cut["stdout"].count("\ufffd")
    assert 0 < shown < run_command.HEAD + run_command.TAIL and cut["stdout_omitted"] == 40000 - shown


def test_waiting_for_a_turn_is_not_the_commands_time(project: Path) -> None:
    roots = Roots([str(project)])
    roots.run_options = RunOptions()
    for _ in range(run_command.MAX_RUNS):
        run_command._turns.acquire()

    def give_back() -> None:
        for _ in range(run_command.MAX_RUNS):
            run_command._turns.release()

    threading.Timer(1.5, give_back).start()
    result = run_command.run_command(context(), roots, "sleep 1; echo finished", None, 2, None, None)
    assert result.structured is not None and result.structured["stdout"] == "finished\n"
    assert result.structured["limits"] == []


def _side_by_side(project: Path, write: bool) -> list[tuple[float, float]]:
    """Two servers on the same roots each run a command at once: when each command ran (its own clock's start and
    end, read in the sandbox)."""
    timed = "date +%s.%N; sleep 2; date +%s.%N"
    with Tools(project, write=write, options=("--allow-run",)) as first, \
            Tools(project, write=write, options=("--allow-run",)) as second:
        spans: list[tuple[float, float]] = []

        def one(tools: Tools) -> None:
            start, end = run(tools, timed, timeout=60)["stdout"].split()
            spans.append((float(start), float(end)))

        thread = threading.Thread(target=one, args=(second,))
        thread.start()
        one(first)
        thread.join()
    return sorted(spans)


def test_commands_that_may_write_run_one_at_a_time(project: Path) -> None:
    (one, other) = _side_by_side(project, write=True)
    assert one[1] <= other[0]  # two servers, one lock file: one after the other
    (one, other) = _side_by_side(project, write=False)
    assert other[0] < one[1]  # read-only roots: nothing to race, side by side


def test_a_folder_swapped_for_a_link_while_the_sandbox_is_made_is_refused(project: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "sub" / "inner").mkdir()
    git(project / "sub" / "inner", "init", "-q")
    (project / "decoy").mkdir()
    opened = command_sandbox.Jail.open

    def swap_after_opening(jail: command_sandbox.Jail) -> None:
        opened(jail)  # the descriptors hold the real folders; now the path to one leads elsewhere
        os.rename(project / "sub", project / "sub.real")
        os.symlink("decoy", project / "sub")

    monkeypatch.setattr(command_sandbox.Jail, "open", swap_after_opening)
    roots = Roots([str(project)])
    roots.run_options = RunOptions(writable=True)
    with pytest.raises(ToolError, match="changed while the command's sandbox was made"):
        run_command.run_command(context(), roots, "touch sub/inner/.git/hooks/planted", None, 10, None, None)
    assert not (project / "sub.real" / "inner" / ".git" / "hooks" / "planted").exists()


def test_exit_statuses_over_128_are_explained_not_guessed(project: Path) -> None:
    with Tools(project, options=("--allow-run",)) as tools:
        data = run(tools, "exit 153")
        assert data["exit_code"] == 153 and data["limits"] == []
        assert "exit status 153 (128 + 25: SIGXFSZ, if a signal ended it)" in tools.last["content"][0]["text"]


def test_a_server_stopped_mid_command_kills_it_and_cleans_up(project: Path) -> None:
    mark = f"shipcode-test-stopped-{os.getpid()}-{time.monotonic_ns()}"
    server = McpProcess("--allow-run", str(project))
    server.initialize()
    server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                 "params": {"name": "run_command", "arguments": {"command": f"sleep 60 # {mark}"}}})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not marked(mark):
        time.sleep(0.05)
    assert marked(mark)  # the command runs
    time.sleep(0.5)
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(20) == 0
    assert marked(mark) == []
    cgroups = [os.path.join(folder, name) for folder, names, _ in os.walk("/sys/fs/cgroup") for name in names
               if name.startswith(f"shipcode-run-{server.proc.pid}-")]
    assert cgroups == []


def test_no_abstract_socket_udp_or_environment_of_the_host_is_reached(project: Path) -> None:
    abstract = socket.socket(socket.AF_UNIX)
    name = f"shipcode-test-{os.getpid()}"
    abstract.bind("\0" + name)
    abstract.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(1.0)
    port = udp.getsockname()[1]
    attack = (f"python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0{name}\"); "
              f"print(\"abstract\")'; python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
              f".sendto(b\"udp\", (\"127.0.0.1\", {port}))'; cat /proc/{os.getpid()}/environ | tr \"\\0\" \"\\n\" "
              "| grep -c ^PATH=")
    try:
        done = plain(attack, project)
        assert done.stdout == "abstract\n1\n" and udp.recv(16) == b"udp"  # the attack works without us
        with Tools(project, options=("--allow-run",)) as tools:
            data = run(tools, attack)
        assert "abstract" not in data["stdout"] and "Connection refused" in data["stderr"]
        with pytest.raises(socket.timeout):
            udp.recv(16)  # nothing reached the host's loopback
        assert "No such file or directory" in data["stderr"]  # no /proc entry of the host's processes
    finally:
        abstract.close()
        udp.close()


TRACE = ("import ctypes, os, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
         "for pid in map(int, sys.argv[1:]):\n"
         "    print('attached' if libc.ptrace(16, pid, 0, 0) == 0 else 'refused', pid)\n"  # PTRACE_ATTACH
         "    try:\n"
         "        with open(f'/proc/{pid}/mem', 'rb') as mem: print('mem', pid)\n"
         "    except OSError as err: print('no mem', pid, err.strerror)\n")
"""Attach to each pid given (ptrace) and open its memory (/proc/PID/mem): what a debugger does, and malware."""
TRACEABLE = ("import ctypes, time\nctypes.CDLL(None).prctl(0x59616d61, ctypes.c_ulong(-1), 0, 0, 0)\n"  # PR_SET_PTRACER_ANY
             "print('ready', flush=True)\ntime.sleep(120)\n")
"""A victim any process of its user may trace (whatever Yama's ptrace_scope, 1 at most), so the attack can be shown."""


def test_a_command_neither_traces_nor_reads_the_memory_of_another_process(project: Path) -> None:
    victim = subprocess.Popen([sys.executable, "-c", TRACEABLE], stdout=subprocess.PIPE, text=True)
    try:
        assert victim.stdout is not None and victim.stdout.readline() == "ready\n"
        attack = f"python3 -c \"$TRACE\" {victim.pid}"
        done = plain(attack, project, TRACE=TRACE)
        if f"attached {victim.pid}" not in done.stdout:
            pytest.skip(f"ptrace is refused here even without the sandbox (Yama's ptrace_scope 2 or 3): {done}")
        assert f"mem {victim.pid}" in done.stdout  # the attack works without us
    finally:
        victim.kill()
        victim.wait()
    victim = subprocess.Popen([sys.executable, "-c", TRACEABLE], stdout=subprocess.PIPE, text=True)
    try:
        assert victim.stdout is not None and victim.stdout.readline() == "ready\n"
        with Tools(project, options=("--allow-run", "--run-env", f"TRACE={TRACE}")) as tools:
            server = tools.process.proc.pid
            data = run(tools, f"python3 -c \"$TRACE\" {victim.pid} {server} {os.getpid()}")
        assert "attached" not in data["stdout"], data
        for pid in (victim.pid, server, os.getpid()):
            assert f"refused {pid}" in data["stdout"] and f"no mem {pid} No such file or directory" in data["stdout"]
        assert victim.poll() is None  # not stopped (an attached tracee stops) nor killed
    finally:
        victim.kill()
        victim.wait()


def test_a_2026_client_of_the_tasks_extension_polls_a_run_and_tasks_cancel_kills_its_tree(project: Path) -> None:
    """Over real pipes: a modern tools/call that declares the tasks extension is answered at once with a task;
    tasks/get tells it running, then inlines the command's result; tasks/cancel stops a run with everything it
    started. A client that did not declare the extension gets the result in its request, as before."""
    from support import McpProcess  # (as the test above does)

    def meta(capabilities: dict[str, Any]) -> dict[str, Any]:
        return {era.VERSION_KEY: era.MODERN_VERSION, era.CAPABILITIES_KEY: capabilities,
                era.CLIENT_INFO_KEY: {"name": "t", "version": "1"}}

    declared = meta({"extensions": {era.TASKS_EXTENSION: {}}})

    def task_of(command: str) -> str:
        created = server.request("tools/call", {"name": "run_command", "arguments": {"command": command},
                                                "_meta": declared}, timeout=30)["result"]
        assert created["resultType"] == "task" and created["status"] == "working" and "content" not in created
        return str(created["taskId"])

    def polled(task_id: str, until: tuple[str, ...] = ("completed", "failed", "cancelled")) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while True:
            got: dict[str, Any] = server.request("tasks/get", {"taskId": task_id, "_meta": declared})["result"]
            if got["status"] in until or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    with McpProcess("--allow-run", "--allow-write", str(project)) as server:
        discovered = server.request("server/discover", {"_meta": meta({})})["result"]
        assert discovered["capabilities"]["extensions"] == {era.TASKS_EXTENSION: {}}
        quick = task_of("echo out; exit 3")
        done = polled(quick)
        assert done["status"] == "completed" and done["result"]["structuredContent"]["exit_code"] == 3
        assert done["result"]["structuredContent"]["stdout"] == "out\n" and done["result"]["isError"] is False
        mark = f"shipcode-task-daemon-{os.getpid()}-{time.monotonic_ns()}"
        running = task_of(daemon(mark) + "; sleep 60")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not _ticking(project):  # the tree runs, its daemon ticks
            time.sleep(0.1)
        assert polled(running, ("working",))["status"] == "working" and _ticking(project)
        acknowledged = server.request("tasks/cancel", {"taskId": running, "_meta": declared})["result"]
        assert acknowledged["resultType"] == "complete" and list(acknowledged) == ["resultType", "_meta"]
        assert polled(running)["status"] == "cancelled"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _ticking(project):
            time.sleep(0.1)
        assert not _ticking(project)
        assert subprocess.run(["pgrep", "-f", mark], capture_output=True, check=False).returncode == 1  # none left
        plain_call = server.request("tools/call", {"name": "run_command", "arguments": {"command": "echo here"},
                                                   "_meta": meta({})})["result"]
        assert plain_call["resultType"] == "complete" and plain_call["structuredContent"]["stdout"] == "here\n"
