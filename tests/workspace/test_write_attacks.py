"""Writes that plant code or leave debris (with --allow-write): planted git repositories, `.git` in
every spelling, read-only and foreign files, unbounded edits, temporary files after a kill.

Each attack first shows it works without shipcode-mcp (plain file writes make a folder git uses, and
git then runs the program its config names), so a refusal cannot pass because the setup failed.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import stat
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import writes
from shipcode_mcp.workspace.roots import Roots
from support import REPO, McpProcess, peak_rss, wait_for
from workspace_support import Tools, context


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A plain folder (not a repository): the kind a downloaded tarball gives."""
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "README.md").write_text("# Demo\n")
    return folder


@pytest.fixture
def tools(root: Path) -> Iterator[Tools]:
    with Tools(root, write=True) as server:
        yield server


def _git_env(tmp: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("GIT_") and key not in ("PAGER", "LESS", "LV")}
    return {**env, "HOME": str(tmp), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CEILING_DIRECTORIES": str(tmp)}


def _git_dir_of(folder: Path) -> str | None:
    """The git directory plain git would use in `folder`, or None when git finds no repository."""
    done = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=folder, env=_git_env(folder.parent),
                          capture_output=True, text=True, timeout=10)
    return done.stdout.strip() if done.returncode == 0 else None


def _git_at_a_terminal(folder: Path, *args: str) -> None:
    """Run plain git in `folder` the way a user does, on a terminal (so git starts its pager)."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(["git", *args], cwd=folder, env=_git_env(folder.parent),
                                stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
        slave = -1
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # drain the terminal until git (and its pager) are done
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    if not os.read(master, 4096):
                        break
                except OSError:  # EIO: every writer has closed the terminal
                    break
            elif proc.poll() is not None:
                break
        proc.wait(timeout=10)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def _pager_config(canary: Path) -> str:
    return f'[core]\n\tpager = "touch {canary}; cat"\n'


# -- the attack, without shipcode-mcp ---------------------------------------------------------------
def test_plain_file_writes_make_a_repository_whose_config_git_runs(tmp_path: Path) -> None:
    """HEAD, objects/ and refs/ made by ordinary writes: git takes the folder for a (bare) repository and
    runs its core.pager on a plain `git branch` at a terminal (`git log` too, once a commit exists). The
    same with HEAD and a commondir file naming a folder that holds objects/ and refs/. (`git status`
    there refuses to run, "must be run in a work tree": git ignores core.worktree in a repository it
    found by itself, so a pager, an alias or a hook is the way in, not core.fsmonitor.)"""
    canary = tmp_path / "canary-bare"
    evil = tmp_path / "evil"
    for relative, content in (("HEAD", "ref: refs/heads/main\n"), ("objects/info/keep", ""),
                              ("refs/heads/keep", ""), ("config", _pager_config(canary))):
        (evil / relative).parent.mkdir(parents=True, exist_ok=True)
        (evil / relative).write_text(content)
    assert _git_dir_of(evil) == str(evil)
    _git_at_a_terminal(evil, "branch")
    assert canary.exists()

    canary = tmp_path / "canary-commondir"
    store, worktree = tmp_path / "store", tmp_path / "wt"
    for relative, content in (("objects/info/keep", ""), ("refs/heads/keep", ""), ("config", _pager_config(canary))):
        (store / relative).parent.mkdir(parents=True, exist_ok=True)
        (store / relative).write_text(content)
    worktree.mkdir()
    (worktree / "HEAD").write_text("ref: refs/heads/main\n")
    assert _git_dir_of(worktree) is None and _git_dir_of(store) is None  # neither half is one alone
    (worktree / "commondir").write_text("../store\n")
    assert _git_dir_of(worktree) == str(worktree)
    _git_at_a_terminal(worktree, "branch")
    assert canary.exists()


# -- planted repositories ---------------------------------------------------------------------------
_PIECES = (("HEAD", "ref: refs/heads/main\n"), ("objects/info/keep", ""), ("refs/heads/keep", ""))


def test_no_order_of_writes_completes_a_repository(tools: Tools, root: Path, tmp_path: Path) -> None:
    """Whatever the order, the write that would complete HEAD + objects/ + refs/ is refused, nothing of it
    lands, and git finds no repository there; the first two writes are ordinary files and succeed."""
    for number, order in enumerate(itertools.permutations(_PIECES)):
        folder = f"evil{number}"
        for relative, content in order[:2]:
            tools.call("write_file", {"path": f"{folder}/{relative}", "content": content})
        last, content = order[2]
        message = tools.error("write_file", {"path": f"{folder}/{last}", "content": content})
        piece = last.split("/")[0]
        assert message == (f"Refused: writing {piece} would make {folder} a git repository (HEAD with objects/ and "
                           "refs/, or with commondir, is what git takes for one), whose config could name programs "
                           "the next git command there runs; write_file does not plant repositories")
        assert not (root / folder / piece).exists()
        tools.call("write_file", {"path": f"{folder}/config", "content": _pager_config(tmp_path / "canary")})
        assert _git_dir_of(root / folder) is None
        _git_at_a_terminal(root / folder, "branch")
    assert not (tmp_path / "canary").exists()


def test_the_root_itself_and_case_variants_are_guarded(tools: Tools, root: Path) -> None:
    tools.call("write_file", {"path": "objects/info/keep", "content": ""})
    tools.call("write_file", {"path": "refs/heads/keep", "content": ""})
    assert "would make the workspace root a git repository" in tools.error(
        "write_file", {"path": "HEAD", "content": "ref: refs/heads/main\n"})
    # On a case-insensitive filesystem these are HEAD and objects: refused everywhere, to be safe.
    assert "would make the workspace root a git repository" in tools.error("write_file", {"path": "head", "content": "x"})
    (root / "half").mkdir()
    (root / "half" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "half" / "refs").mkdir()
    assert "would make half a git repository" in tools.error(
        "write_file", {"path": "half/Objects/x", "content": "x"})
    assert not (root / "HEAD").exists() and not (root / "head").exists() and not (root / "half" / "Objects").exists()
    assert _git_dir_of(root) is None and _git_dir_of(root / "half") is None


def test_commondir_completes_a_repository_too(tools: Tools, root: Path) -> None:
    (root / "store" / "objects").mkdir(parents=True)
    (root / "store" / "refs").mkdir()
    tools.call("write_file", {"path": "wt/HEAD", "content": "ref: refs/heads/main\n"})
    assert "would make wt a git repository" in tools.error("write_file", {"path": "wt/commondir", "content": "../store\n"})
    tools.call("write_file", {"path": "wt2/commondir", "content": "../store\n"})
    assert "would make wt2 a git repository" in tools.error(
        "write_file", {"path": "wt2/HEAD", "content": "ref: refs/heads/main\n"})
    assert _git_dir_of(root / "wt") is None and _git_dir_of(root / "wt2") is None
    (root / "wt" / "commondir").write_text("../store\n")  # the proof that the refused write was the last piece
    assert _git_dir_of(root / "wt") == str(root / "wt")


def test_nothing_is_written_inside_an_existing_repository(tools: Tools, root: Path, tmp_path: Path) -> None:
    """A bare repository shipped inside the project: its config, hooks and refs are not ours to write."""
    bare = root / "vendor" / "lib.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, env=_git_env(tmp_path), timeout=10)
    assert _git_dir_of(bare) == str(bare)
    before = (bare / "config").read_text()
    for relative in ("config", "hooks/post-checkout", "refs/heads/main", "objects/info/alternates", "info/x"):
        message = tools.error("write_file", {"path": f"vendor/lib.git/{relative}", "content": "x\n"})
        assert message == ("Refused: git takes vendor/lib.git for a repository (it holds HEAD with objects/ and "
                           "refs/, or with commondir), and write_file does not write inside one: its config could "
                           "name programs git would run")
    assert "edit_file does not write inside one" in tools.error(
        "edit_file", {"path": "vendor/lib.git/config", "old_text": "[core]", "new_text": "[core]\n\tpager = x"})
    assert (bare / "config").read_text() == before and not (bare / "hooks" / "post-checkout").exists()
    tools.call("write_file", {"path": "vendor/notes.txt", "content": "beside it is fine\n"})


@pytest.mark.parametrize("path", [
    ".git/config", ".GIT/x", "sub/.Git/config", "sub/.git", ".git", "a/b/.git/HEAD", ".git./config", ".git /config",
    "git~1/config", ".g\u200cit/config", ".gi\ufefft/hooks/x",
])
def test_git_folders_and_gitfiles_in_every_spelling_are_refused(tools: Tools, root: Path, path: str) -> None:
    """A `.git` file is a gitfile (`gitdir: …`), as good as a folder; NTFS and HFS+ read these spellings as .git."""
    message = tools.error("write_file", {"path": path, "content": "gitdir: /elsewhere\n"})
    assert message.startswith("Refused: write_file does not write inside .git folders (")
    assert sorted(os.listdir(root)) == ["README.md"]


def test_concurrent_writes_cannot_each_complete_half(tmp_path: Path) -> None:
    """Two writes at once, one making objects/ and one refs/ next to a HEAD: the root's lock makes the check
    and the write one step, so at most one of them lands."""
    roots = Roots([str(tmp_path)])
    for round_ in range(20):
        folder = tmp_path / f"race{round_}"
        folder.mkdir()
        (folder / "HEAD").write_text("ref: refs/heads/main\n")
        outcomes: list[str] = []
        start = threading.Barrier(2)

        def write(relative: str, folder: Path = folder, outcomes: list[str] = outcomes,
                  start: threading.Barrier = start) -> None:
            start.wait()
            try:
                writes.write_file(context(), roots, f"{folder.name}/{relative}", "x", False, False, None)
                outcomes.append("written")
            except Exception as err:
                outcomes.append(str(err))

        threads = [threading.Thread(target=write, args=(name,)) for name in ("objects/x", "refs/x")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert outcomes.count("written") == 1 and any("would make" in outcome for outcome in outcomes), outcomes
        assert _git_dir_of(folder) is None


def test_a_write_waits_for_the_root_lock(tmp_path: Path) -> None:
    """The lock is flock on the root folder: held elsewhere (another server process), a write waits for it."""
    import fcntl

    roots = Roots([str(tmp_path)])
    holder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    done = threading.Event()
    def write() -> None:
        writes.write_file(context(), roots, "f.txt", "x", False, False, None)
        done.set()

    def opened() -> int:  # descriptors of this process on the root: ours, and the write's once it is at the lock
        count = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                count += os.readlink(f"/proc/self/fd/{fd}") == os.path.realpath(tmp_path)
            except OSError:  # closed meanwhile
                pass
        return count

    thread = threading.Thread(target=write)
    thread.start()
    try:
        wait_for(lambda: opened() == 2, 10, "the write to open the root to lock it")
        assert not done.is_set() and not (tmp_path / "f.txt").exists()
    finally:
        os.close(holder)  # releases the lock
    assert done.wait(10)
    thread.join(10)
    assert (tmp_path / "f.txt").read_text() == "x"


# -- bounded results --------------------------------------------------------------------------------
@pytest.mark.measures
def test_replace_all_cannot_grow_a_file_without_bound(tools: Tools, root: Path) -> None:
    """The issue's case: 200 KB of short lines, each 'a' replaced by 10,000 characters, would be 2 GB.
    Refused from the predicted size, before the result is built: the server's memory stays small."""
    original = "a\n" * 100_000
    (root / "small.txt").write_text(original)
    started = time.monotonic()
    message = tools.error("edit_file", {"path": "small.txt", "old_text": "a", "new_text": "b" * 10_000,
                                        "replace_all": True})
    assert message == ("Refused: replacing 100000 occurrences would make small.txt 953.8 MiB; edit_file leaves files "
                       "of at most 16.0 MiB (the limit of write_file too). Nothing was written.")
    assert time.monotonic() - started < 5
    assert peak_rss(tools.process.proc.pid) < 300 * 1024 * 1024
    assert (root / "small.txt").read_text() == original


def test_edit_results_are_bounded_exactly_at_the_write_limit(tmp_path: Path) -> None:
    roots = Roots([str(tmp_path)])
    limit = writes.MAX_WRITE_BYTES
    (tmp_path / "f.txt").write_text("x" * 1000 + "END")
    writes.edit_file(context(), roots, "f.txt", "END", "é" * ((limit - 1000) // 2), False, None, False, False, None)  # exactly the limit
    assert (tmp_path / "f.txt").stat().st_size == limit
    (tmp_path / "g.txt").write_text("x" * 1000 + "END")
    with pytest.raises(ToolError, match=r"would make g.txt 16.0 MiB; edit_file leaves files of at most 16.0 MiB"):
        writes.edit_file(context(), roots, "g.txt", "END", "é" * ((limit - 1000) // 2) + "!", False, None, False, False, None)
    assert (tmp_path / "g.txt").read_text() == "x" * 1000 + "END"


def test_write_file_content_is_bounded_in_bytes_too(tools: Tools, root: Path) -> None:
    """16 Mi characters are allowed by the schema; in UTF-8 they may be 64 MiB. One limit, in bytes, for both tools."""
    message = tools.error("write_file", {"path": "big.txt", "content": "€" * (6 * 1024 * 1024)})
    assert message == ("The content is 18.0 MiB as UTF-8; write_file writes files up to 16.0 MiB "
                       "(and edit_file leaves none larger)")
    assert not (root / "big.txt").exists()


# -- files their owner could not write in place -----------------------------------------------------
@pytest.mark.parametrize("mode", [0o444, 0o400, 0o044, 0o555])
def test_a_read_only_file_is_not_replaced(tools: Tools, root: Path, mode: int) -> None:
    target = root / "locked.txt"
    target.write_text("keep me\n")
    target.chmod(mode)
    expected = (f"Refused: locked.txt is read-only (mode {mode:04o}: not even its owner may write it), and "
                "{tool} does not replace such a file. Make it writable first if it should change.")
    assert tools.error("write_file", {"path": "locked.txt", "content": "x"}) == expected.format(tool="write_file")
    assert tools.error("edit_file", {"path": "locked.txt", "old_text": "keep", "new_text": "lose"}) == (
        expected.format(tool="edit_file"))
    assert target.read_text() == "keep me\n" and stat.S_IMODE(target.stat().st_mode) == mode
    assert sorted(os.listdir(root)) == ["README.md", "locked.txt"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a file of another user and keep its owner")
def test_as_root_another_users_file_keeps_its_owner_group_and_mode(tools: Tools, root: Path) -> None:
    """The owner and group are set before the mode: a chown clears set-user-ID bits."""
    target = root / "theirs.sh"
    target.write_text("#!/bin/sh\necho one\n")
    os.chown(target, 12345, 23456)
    target.chmod(0o6754)
    tools.call("write_file", {"path": "theirs.sh", "content": "#!/bin/sh\necho two\n"})
    tools.call("edit_file", {"path": "theirs.sh", "old_text": "two", "new_text": "three"})
    info = target.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (12345, 23456, 0o6754)
    assert target.read_text() == "#!/bin/sh\necho three\n"


def _system_python() -> str | None:
    """A Python the unprivileged user can run (the test venv's may sit in root's home), of our version."""
    for candidate in (f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}", "/usr/bin/python3"):
        if os.access(candidate, os.X_OK):
            version = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                     capture_output=True, text=True, timeout=10).stdout.strip()
            if version == str(tuple(sys.version_info[:2])):
                return candidate
    return None


@pytest.mark.skipif(os.geteuid() != 0 or not os.access("/usr/bin/setpriv", os.X_OK) or _system_python() is None,
                    reason="needs root (to run the server as another user), setpriv and a system Python")
def test_an_unprivileged_server_refuses_files_whose_owner_or_group_it_cannot_keep() -> None:
    """Run as nobody: a root-owned file in a folder nobody may write to would become nobody's if replaced;
    so would a file of nobody's whose group is root's. Both refused; nobody's own file is written."""
    import shutil
    import tempfile

    python = _system_python()
    assert python is not None
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        base.chmod(0o755)
        root = base / "root"
        root.mkdir()
        root.chmod(0o777)
        for name, uid, gid in (("roots.txt", 0, 0), ("group.txt", 65534, 0), ("mine.txt", 65534, 65534)):
            (root / name).write_text("before\n")
            (root / name).chmod(0o666)
            os.chown(root / name, uid, gid)
        paths = sysconfig.get_paths()  # the test environment's packages (jsonschema_rs), for the system Python
        pythonpath = os.pathsep.join(dict.fromkeys([str(REPO / "src"), paths["purelib"], paths["platlib"]]))
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", f"PYTHONPATH={pythonpath}",
                   python]
        probe = subprocess.run([*command, "-c", "import jsonschema_rs, shipcode_mcp.cli"], cwd="/tmp",
                               capture_output=True, timeout=30)
        if probe.returncode != 0:
            pytest.skip(f"the unprivileged user cannot load the server here: {probe.stderr[-300:]!r}")
        command += ["-m", "shipcode_mcp"]
        with McpProcess("--allow-write", str(root), command=command, cwd="/tmp") as server:
            server.initialize()

            def answer(name: str) -> dict[str, Any]:
                reply: dict[str, Any] = server.call_tool("write_file", {"path": name, "content": "after\n"})
                return reply

            refused = answer("roots.txt")
            assert refused["isError"] and refused["content"][0]["text"] == (
                "Refused: roots.txt belongs to another user (uid 0); replacing it would make it this server's "
                "(uid 65534), so write_file does not write it.")
            refused = answer("group.txt")
            assert refused["isError"] and refused["content"][0]["text"] == (
                "Refused: group.txt could not keep its group (gid 0) if replaced, so write_file does not write it.")
            assert not answer("mine.txt")["isError"]
        assert (root / "roots.txt").read_text() == "before\n" and (root / "roots.txt").stat().st_uid == 0
        assert (root / "group.txt").read_text() == "before\n" and (root / "group.txt").stat().st_gid == 0
        assert (root / "mine.txt").read_text() == "after\n"
        assert sorted(os.listdir(root)) == ["group.txt", "mine.txt", "roots.txt"]  # no temporary file left
    finally:
        shutil.rmtree(base)


# -- no temporary files after a kill -----------------------------------------------------------------
def _ours(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.startswith(".shipcode-") and name.endswith(".tmp")]


def _unnamed_file_open(pid: int, folder: Path) -> bool:
    """Whether process `pid` holds an O_TMPFILE file of `folder` open (the kernel shows '/folder/#inode (deleted)')."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{folder}/#") and target.endswith(" (deleted)"):
            return True
    return False


@pytest.mark.skipif(not writes.USE_TMPFILE, reason="O_TMPFILE and /proc are Linux's")
def test_a_server_killed_during_a_large_write_leaves_no_temporary_file(root: Path) -> None:
    """SIGKILL while the server writes 16 MiB: the unnamed O_TMPFILE file goes with the process."""
    original = "original\n"
    (root / "big.txt").write_text(original)
    content = "0123456789abcde\n" * (writes.MAX_WRITE_BYTES // 16)
    for _ in range(3):  # a fast disk may finish before we look: a few tries, each a real kill
        with Tools(root, write=True) as tools:
            pid = tools.process.proc.pid
            tools.process.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                "params": {"name": "write_file", "arguments": {"path": "big.txt", "content": content}}})
            deadline = time.monotonic() + 30
            seen = False
            while time.monotonic() < deadline and tools.process.proc.poll() is None:
                if _unnamed_file_open(pid, root):
                    os.kill(pid, signal.SIGSTOP)  # then look again: the kill must come while the file is open
                    seen = _unnamed_file_open(pid, root)
                    os.kill(pid, signal.SIGKILL if seen else signal.SIGCONT)
                    if seen:
                        break
                if not tools.process._lines.empty():  # answered: the write finished before we saw it
                    break
        if seen:
            break
        (root / "big.txt").write_text(original)
    assert seen, "never caught the server in the middle of the write"
    assert sorted(os.listdir(root)) == ["README.md", "big.txt"]
    assert (root / "big.txt").read_text() in (original, content)  # the old file or the new one, never a part


def test_a_killed_writer_without_o_tmpfile_leaves_a_name_the_next_write_removes(root: Path) -> None:
    """Where there is no O_TMPFILE the temporary file has a name: a writer killed mid-write (a real process,
    told to use the named way) leaves it; the next write to that folder removes it once it is stale, and
    never removes a fresh one (another writer's, still working) or a name that is not ours."""
    (root / "big.txt").write_text("original\n")
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = {json.dumps([str(REPO / "src"), str(REPO / "tests")])}
        from shipcode_mcp.workspace import writes
        from shipcode_mcp.workspace.roots import Roots
        from workspace_support import context
        writes.USE_TMPFILE = False
        content = "0123456789abcde\\n" * (writes.MAX_WRITE_BYTES // 16)
        while True:
            writes.write_file(context(), Roots([{str(root)!r}]), "big.txt", content, False, False, None)
    """)
    writer = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and writer.poll() is None:
            if _ours(root):
                writer.send_signal(signal.SIGSTOP)  # then look again: the kill must come while the file is there
                if _ours(root):
                    break
                writer.send_signal(signal.SIGCONT)
            time.sleep(0.001)
        writer.kill()
    finally:
        writer.wait(10)
    left = _ours(root)
    assert len(left) == 1, os.listdir(root)  # the debris a kill leaves without O_TMPFILE
    stale = root / left[0]
    fresh = root / ".shipcode-0123456789abcdef.tmp"
    fresh.write_text("another writer, still at work")
    not_ours = [root / ".big.txt.tmp", root / "x.shipcode-0123456789abcdef.tmp", root / ".shipcode-123.tmp"]
    old = time.time() - writes.STALE_TEMP_SECONDS - 60
    for path in [*not_ours]:
        path.write_text("a user's file")
    for path in [stale, *not_ours]:
        os.utime(path, (old, old))
    with Tools(root, write=True) as tools:
        tools.call("write_file", {"path": "other.txt", "content": "x"})
    assert not stale.exists() and fresh.exists() and all(path.exists() for path in not_ours)
    assert sorted(os.listdir(root)) == sorted(["README.md", "big.txt", "other.txt", fresh.name,
                                               *(path.name for path in not_ours)])
