"""The confinement attack suite: hostile paths and refs against Roots, safe_open and every tool.

Outside the roots lies a folder holding a canary string; whatever the input, no answer may contain
it, no call may hang, and with --allow-write nothing outside may change.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from shipcode_mcp.primitives import ToolError, inside
from shipcode_mcp.workspace import safe_open
from shipcode_mcp.workspace.roots import OutsideRoots, Roots
from workspace_support import CANARY, Tools, make_outside, make_repo, snapshot


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A root (a git repository) full of traps, a sibling whose name extends the root's, and an outside."""
    base = tmp_path_factory.mktemp("attack")
    outside = make_outside(base / "outside")
    root = make_repo(base / "root")
    sibling = base / "root-sibling"  # "root" is a string prefix of it: a naive startswith check lets it in
    sibling.mkdir()
    (sibling / "secret.txt").write_text(f"{CANARY} sibling\n")
    (root / "link-out-file").symlink_to(outside / "secret.txt")
    (root / "link-out-dir").symlink_to(outside)
    (root / "link-dangling-out").symlink_to(outside / "does-not-exist")
    (root / "link-relative-out").symlink_to("../outside/secret.txt")
    (root / "link-sibling").symlink_to(sibling)
    (root / "loop-a").symlink_to(root / "loop-b")
    (root / "loop-b").symlink_to(root / "loop-a")
    (root / "link-in").symlink_to(root / "README.md")
    (root / "nested").mkdir()
    (root / "nested" / "up").symlink_to("../..")  # the parent of the root, through a relative link
    os.mkfifo(root / "fifo")
    return {"base": base, "root": root, "outside": outside, "sibling": sibling}


def hostile_paths(world: dict[str, Path]) -> list[str]:
    root, outside = world["root"], world["outside"]
    rel_out = os.path.relpath(outside, root)
    return [
        "..", "../", "../outside/secret.txt", f"{rel_out}/secret.txt", "src/../../outside/secret.txt",
        "./../outside", "src/./../../outside/sub/deeper.txt", "a/b/../../../outside/secret.txt",
        "/", "/etc/passwd", "/etc", str(outside / "secret.txt"), f"{root}/../outside/secret.txt",
        str(world["sibling"] / "secret.txt"), str(world["sibling"]),
        "link-out-file", "link-out-dir", "link-out-dir/secret.txt", "link-out-dir/sub/deeper.txt",
        "link-dangling-out", "link-relative-out", "link-sibling/secret.txt", "nested/up",
        "nested/up/outside/secret.txt",
        f"file://{outside}/secret.txt", f"file://{root}/../outside/secret.txt",
        f"file://{quote(str(root))}/%2e%2e/outside/secret.txt", f"file://{root}/%2E%2E%2Foutside%2Fsecret.txt",
        f"file://localhost{outside}/secret.txt", f"FILE://{outside}/secret.txt", "file:///etc/passwd",
        f"file://{root}/link-out-file", "file://evil.example/share/secret.txt", "file:secret.txt",
        f"file://{root}/README.md?x=1", f"file://{root}/README.md#frag", f"file://{root}/%00README.md",
        f"file://{root}/%ff%fe", "README.md\x00/../../outside/secret.txt", "\x00", "a" * 5000,
        "x/" * 2100, "/" + "../" * 50 + str(outside)[1:] + "/secret.txt",
    ]


# -- Roots.resolve, directly -------------------------------------------------------------------------
def test_resolve_refuses_every_way_out(world: dict[str, Path]) -> None:
    roots = Roots([str(world["root"])])
    for given in hostile_paths(world):
        with pytest.raises(OutsideRoots) as caught:
            roots.resolve(given)
        message = str(caught.value)
        assert CANARY not in message and str(world["outside"]) not in message.replace(given, ""), given
        assert "\x00" not in message and len(message) < 300, given


def test_resolve_keeps_what_is_inside(world: dict[str, Path]) -> None:
    root = world["root"]
    roots = Roots([str(root)])
    assert roots.resolve("") == str(root)
    assert roots.resolve(".") == str(root)
    assert roots.resolve("src/../README.md") == str(root / "README.md")
    assert roots.resolve(str(root / "src")) == str(root / "src")
    assert roots.resolve(f"file://{quote(str(root))}/src/app.py") == str(root / "src" / "app.py")
    assert roots.resolve(f"file://localhost{root}/docs") == str(root / "docs")
    assert roots.resolve("link-in") == str(root / "README.md")  # a link inside, to inside, is fine
    assert roots.resolve("%2e%2e") == str(root / "%2e%2e")  # plain paths are not percent-decoded
    assert roots.resolve("~") == str(root / "~")  # nor expanded
    assert roots.resolve("does/not/exist") == str(root / "does" / "not" / "exist")
    assert roots.resolve("loop-a") == str(root / "loop-a")  # a loop stays inside; opening it fails cleanly
    assert roots.display(roots.resolve("src/app.py")) == "src/app.py"


def refusal(roots: Roots, given: object) -> str:
    with pytest.raises(OutsideRoots) as caught:
        roots.resolve(given)
    return str(caught.value)


def test_resolve_messages_say_nothing_about_the_outside(world: dict[str, Path]) -> None:
    roots = Roots([str(world["root"])])
    for given in ("link-out-file", "link-dangling-out", "link-out-dir/secret.txt"):
        assert refusal(roots, given) == f"Access denied: {given} is not inside the workspace roots"
    # The same answer whether or not the outside target exists.
    assert refusal(roots, "/nonexistent/x") == "Access denied: /nonexistent/x is not inside the workspace roots"
    assert refusal(roots, "/etc/passwd") == "Access denied: /etc/passwd is not inside the workspace roots"
    assert refusal(roots, "a\nb/../../../x") == "Access denied: a\\nb/../../../x is not inside the workspace roots"
    assert refusal(roots, "a" * 5000).startswith("Invalid path: longer than")
    assert "NUL" in refusal(roots, "a\x00b")
    assert "string" in refusal(roots, 42)


def test_several_roots_and_the_root_prefix_trap(world: dict[str, Path]) -> None:
    roots = Roots([str(world["root"]), str(world["outside"] / "sub")])
    assert roots.resolve(str(world["outside"] / "sub" / "deeper.txt")) == str(world["outside"] / "sub" / "deeper.txt")
    assert roots.display(str(world["outside"] / "sub" / "deeper.txt")) == str(world["outside"] / "sub" / "deeper.txt")
    with pytest.raises(OutsideRoots):
        roots.resolve(str(world["outside"] / "secret.txt"))
    with pytest.raises(OutsideRoots):
        roots.resolve(str(world["outside"] / "sub-not"))
    with pytest.raises(OutsideRoots):
        Roots([str(world["root"])]).resolve(str(world["sibling"]))


def test_inside_compares_whole_components(tmp_path: Path) -> None:
    """The one "inside a root" test of the package: a string prefix is not enough, '/' holds everything,
    and a trailing '/' changes nothing."""
    cases = {
        ("/a/b", "/a/b"): True, ("/a/b/c", "/a/b"): True, ("/a/b/c/d", "/a/b"): True,
        ("/a/bc", "/a/b"): False, ("/a/b.c", "/a/b"): False, ("/a", "/a/b"): False, ("/x/a/b", "/a/b"): False,
        ("/a/b", "/a/b/"): True, ("/a/b/", "/a/b"): True, ("/a/b/c", "/a/b/"): True, ("/a/bc", "/a/b/"): False,
        ("/", "/"): True, ("/a", "/"): True, ("/a/b", "/"): True, ("/", "/a"): False,
    }
    assert {case: inside(*case) for case in cases} == cases
    for folder in ("a", "a/b", "ab"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    a, ab, nested = str(tmp_path / "a"), str(tmp_path / "ab"), str(tmp_path / "a" / "b")
    roots = Roots([a, nested, ab])
    assert roots.containing(f"{nested}/x") == [a, nested] and roots.root_of(f"{nested}/x") == a
    assert roots.containing(f"{ab}/x") == [ab] and roots.root_of(f"{ab}/x") == ab
    assert roots.containing(str(tmp_path)) == [] and roots.root_of(str(tmp_path)) is None
    everything = Roots(["/"])
    assert everything.root_of("/etc") == "/" and everything.resolve("/etc") == os.path.realpath("/etc")
    assert everything.display(os.path.realpath("/etc")) == os.path.realpath("/etc")[1:]


# -- safe_open: the race between resolving and opening -----------------------------------------------
def test_a_folder_swapped_for_a_link_after_resolving_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "file.txt").write_text("inside\n")
    outside = make_outside(tmp_path / "outside")
    (outside / "file.txt").write_text(CANARY)
    roots = Roots([str(root)])
    real = roots.resolve("dir/file.txt")
    (root / "dir").rename(root / "dir-old")
    (root / "dir").symlink_to(outside)  # the attacker wins the race
    with pytest.raises(ToolError, match=r"changed while it was being opened"):
        safe_open.open_file(roots, real, "dir/file.txt")
    with pytest.raises(ToolError):
        safe_open.open_dir(roots, str(root / "dir"), "dir")
    with pytest.raises(ToolError):
        safe_open.open_parent(roots, real, "dir/file.txt", create=True)


def test_a_file_swapped_for_a_link_or_a_fifo_after_resolving_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = make_outside(tmp_path / "outside")
    roots = Roots([str(root)])
    (root / "f").write_text("inside\n")
    real = roots.resolve("f")
    (root / "f").unlink()
    (root / "f").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="symbolic link"):
        safe_open.open_file(roots, real, "f")
    (root / "f").unlink()
    os.mkfifo(root / "f")
    started = time.monotonic()
    with pytest.raises(ToolError, match="FIFO"):
        safe_open.open_file(roots, real, "f")
    assert time.monotonic() - started < 1


def test_the_opened_descriptor_is_checked_against_the_roots(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = make_outside(tmp_path / "outside")
    fd = os.open(outside / "secret.txt", os.O_RDONLY)
    try:
        with pytest.raises(OutsideRoots):
            safe_open.verify(Roots([str(root)]), fd)
        safe_open.verify(Roots([str(outside)]), fd)
    finally:
        os.close(fd)


def test_device_files_are_refused_without_being_opened(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    try:
        os.mknod(root / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except (PermissionError, OSError):
        pytest.skip("cannot make device nodes here")
    with pytest.raises(ToolError, match="character device"):
        safe_open.open_file(Roots([str(root)]), str(root / "zero"), "zero")


# -- every tool, through the real process -------------------------------------------------------------
PATH_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("list_files", {}, "path"),
    ("read_file", {}, "path"),
    ("search_code", {"pattern": "CANARY"}, "path"),
    ("git_log", {}, "path"),
    ("git_diff", {}, "path"),
    ("git_show", {"ref": "HEAD"}, "path"),
    ("write_file", {"content": "pwned\n"}, "path"),
    ("edit_file", {"old_text": "CANARY", "new_text": "pwned"}, "path"),
    ("create_directory", {}, "path"),
    ("delete_path", {"recursive": True}, "path"),
    ("move_path", {"destination": "moved"}, "source"),
    ("move_path", {"source": "README.md"}, "destination"),
    ("git_add", {}, "paths[]"),
    ("git_commit", {"message": "pwned"}, "paths[]"),
    ("git_commit", {"message": "pwned", "allow_empty": True}, "path"),
    ("git_branch", {"action": "create", "name": "pwned"}, "path"),
    ("git_switch", {"branch": "main"}, "path"),
    ("git_restore", {}, "paths[]"),
    ("git_stash", {}, "paths[]"),
    ("git_stash", {}, "path"),
    ("rename_symbol", {"name": "app.greet", "new_name": "pwned"}, "path"),
    ("repo_map", {}, "path"),
    ("locate", {"query": "CANARY"}, "path"),
    ("run_command", {"command": "echo pwned"}, "cwd"),
]
"""Each tool and argument that names a path (`paths[]`: one item of a list of paths)."""


@pytest.fixture(scope="module")
def attacked(world: dict[str, Path]) -> Any:
    with Tools(world["root"], write=True, options=("--allow-run",)) as tools:
        yield tools


def _no_canary(tools: Tools) -> None:
    text = repr(tools.last)
    assert CANARY not in text and "pwned" not in text, text[:500]


@pytest.mark.parametrize(("tool", "base", "key"), PATH_ARGUMENTS, ids=[p[0] for p in PATH_ARGUMENTS])
def test_every_path_argument_refuses_every_way_out(world: dict[str, Path], attacked: Tools, tool: str,
                                                   base: dict[str, Any], key: str) -> None:
    before = snapshot(world["outside"]), snapshot(world["sibling"])
    parent_before = sorted(os.listdir(world["base"]))
    for given in hostile_paths(world):
        if "\x00" in given and tool != "read_file":
            continue  # the same check for all; keeps the suite quick
        message = attacked.error(tool, {**base, key.removesuffix("[]"): [given] if key.endswith("[]") else given})
        assert message.startswith(("Access denied", "Invalid path", "Invalid arguments")), (given, message)
        _no_canary(attacked)
    assert (snapshot(world["outside"]), snapshot(world["sibling"])) == before
    assert sorted(os.listdir(world["base"])) == parent_before


def test_apply_patch_refuses_every_way_out_in_every_place_a_patch_names_a_path(world: dict[str, Path],
                                                                              attacked: Tools) -> None:
    before = snapshot(world["outside"]), snapshot(world["sibling"]), snapshot(world["root"])
    for given in hostile_paths(world):
        if "\x00" in given:
            continue  # no line of a patch holds one
        for patch in (f"*** Begin Patch\n*** Add File: {given}\n+pwned\n*** End Patch",
                      f"*** Begin Patch\n*** Update File: README.md\n*** Move to: {given}\n@@\n-# Demo\n+pwned\n"
                      "*** End Patch",
                      f"*** Begin Patch\n*** Delete File: {given}\n*** End Patch",
                      f"--- /dev/null\n+++ b/{given}\n@@ -0,0 +1 @@\n+pwned\n",
                      f"diff --git a/README.md b/README.md\nrename from README.md\nrename to {given}\n"):
            message = attacked.error("apply_patch", {"patch": patch})
            assert message.startswith(("Access denied", "Invalid path", "Nothing was written", "Refused")), (
                given, patch, message)
            _no_canary(attacked)
    assert (snapshot(world["outside"]), snapshot(world["sibling"]), snapshot(world["root"])) == before


def test_special_files_do_not_hang_any_tool(world: dict[str, Path], attacked: Tools) -> None:
    started = time.monotonic()
    assert "named pipe" in attacked.error("read_file", {"path": "fifo"})
    assert "named pipe" in attacked.error("search_code", {"pattern": "x", "path": "fifo"})
    assert "named pipe" in attacked.error("write_file", {"path": "fifo", "content": "x"})
    assert "named pipe" in attacked.error("edit_file", {"path": "fifo", "old_text": "x", "new_text": "y"})
    assert "fifo" not in attacked.data("list_files", {})["files"]
    assert attacked.data("search_code", {"pattern": "."})["match_count"] > 0  # the walk skips it too
    for loop in ("loop-a", "loop-a/x"):
        attacked.error("read_file", {"path": loop})
        attacked.error("write_file", {"path": loop, "content": "x"})
    assert time.monotonic() - started < 10
    assert stat.S_ISFIFO(os.lstat(world["root"] / "fifo").st_mode)


def test_symlinks_inside_the_root_are_never_listed_or_searched_out(world: dict[str, Path], attacked: Tools) -> None:
    files = attacked.data("list_files", {})["files"]
    assert not any(name.startswith(("link-", "loop-", "nested/up")) for name in files)
    assert attacked.data("search_code", {"pattern": "CANARY"})["match_count"] == 0
    _no_canary(attacked)


def test_a_link_to_inside_is_written_through_and_stays_a_link(world: dict[str, Path], attacked: Tools) -> None:
    readme = world["root"] / "README.md"
    original = readme.read_text()
    try:
        attacked.data("write_file", {"path": "link-in", "content": "# Demo\n\nRewritten.\n"})
        assert (world["root"] / "link-in").is_symlink()
        assert readme.read_text() == "# Demo\n\nRewritten.\n"
    finally:
        readme.write_text(original)


HOSTILE_REFS = [
    "--output=/tmp/shipcode-written-by-git", "-p", "--all", "-", "--end-of-options", "HEAD..--all", "--all..HEAD",
    "HEAD...-x", "HEAD:../outside/secret.txt", "HEAD:README.md", ":/Initial", "v1.0:src", "HEAD\n--all", "HEAD\x00",
    "HEAD\t", "main@{upstream}:x", "a" * 300, "",
]


@pytest.mark.parametrize("tool", ["git_log", "git_diff", "git_show"])
def test_refs_cannot_become_options_or_reach_paths(world: dict[str, Path], attacked: Tools, tool: str) -> None:
    for ref in HOSTILE_REFS:
        message = attacked.error(tool, {"ref": ref})
        assert message.startswith(("Refused", "A ref", "Invalid arguments", "Unknown revision")), (ref, message)
        _no_canary(attacked)
    assert not Path("/tmp/shipcode-written-by-git").exists()
    # What a ref may legitimately hold still works.
    assert attacked.data("git_log", {"ref": "HEAD@{0}", "limit": 1})["commits"]
    assert attacked.data("git_log", {"ref": "v1.0..HEAD"})["commits"][0]["subject"] == "Rename util to helpers"


def test_git_show_path_cannot_read_outside_the_root_from_the_repository(tmp_path: Path) -> None:
    """The root is a folder inside a larger repository: files of the repository outside the root
    are as unreachable through git as through the file system."""
    repo = make_repo(tmp_path / "repo")
    (repo / "src" / "secret.txt").write_text(f"{CANARY}\n")
    from workspace_support import git

    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"Add {CANARY}")
    with Tools(repo / "docs") as tools:
        assert tools.error("git_show", {"ref": "HEAD", "path": "../src/secret.txt"}).startswith("Access denied")
        assert tools.error("git_show", {"ref": "HEAD:src/secret.txt"}).startswith("Refused")
        shown = tools.text("git_show", {"ref": "HEAD~1"})  # the rename commit touches only src/
        assert "src" not in shown.split("\n\n", 2)[-1]
        _no_canary(tools)
        head = tools.text("git_show", {"ref": "HEAD"})
        assert "secret" not in head.split("\n\n", 2)[-1]
        status_log = [tools.text("git_status"), tools.text("git_log"), tools.text("git_diff", {"ref": "HEAD~3"})]
        assert all(CANARY not in text and "secret.txt" not in text for text in status_log)


def test_nothing_is_written_inside_git_folders(world: dict[str, Path], attacked: Tools) -> None:
    hooks = world["root"] / ".git" / "hooks"
    for path in (".git/hooks/pre-commit", ".git/config", "src/../.git/HEAD", ".GIT/x", "sub/.git/config"):
        assert attacked.error("write_file", {"path": path, "content": "#!/bin/sh\necho pwned\n"}).startswith("Refused")
    assert not (hooks / "pre-commit").exists()
    assert "pwned" not in (world["root"] / ".git" / "config").read_text()
    assert attacked.error("write_file", {"path": ".", "content": "x"}).endswith("folder; write_file writes files")


def test_racing_symlink_swaps_never_leak_the_outside(tmp_path: Path) -> None:
    """A thread swaps a folder and a link to the outside back and forth while the server reads,
    lists, searches and writes through that path: whatever wins each race, the canary never shows
    and nothing outside changes."""
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "secret.txt").write_text("inside\n")
    outside = make_outside(tmp_path / "outside")
    before = snapshot(outside)
    stop = threading.Event()

    swaps = [0]

    def swap() -> None:
        def clear() -> None:  # write_file may make the missing folder anew in a gap: fine, it is inside
            if (root / "dir").is_symlink():
                os.unlink(root / "dir")
            elif (root / "dir").exists():
                shutil.rmtree(root / "dir", ignore_errors=True)

        def retry(step: Any) -> None:  # the server may recreate "dir" between clear() and the step
            while True:
                clear()
                try:
                    return step()
                except OSError:
                    continue

        while not stop.is_set():
            os.rename(root / "dir", root / "dir-real")
            retry(lambda: os.symlink(outside, root / "dir"))
            time.sleep(0.0005)
            retry(lambda: os.rename(root / "dir-real", root / "dir"))
            swaps[0] += 1

    with Tools(root, write=True) as tools:
        swapper = threading.Thread(target=swap)
        swapper.start()
        try:
            start, calls = time.monotonic(), 0
            while (elapsed := time.monotonic() - start) < 2.0 or ((calls <= 10 or swaps[0] <= 100) and elapsed < 60):  # the race run
                for name, arguments in (("read_file", {"path": "dir/secret.txt"}), ("list_files", {"path": "dir"}),
                                        ("search_code", {"pattern": "CANARY", "path": "dir"}),
                                        ("write_file", {"path": "dir/secret.txt", "content": "inside\n"})):
                    result = tools.process.call_tool(name, arguments)
                    assert CANARY not in repr(result)
                    calls += 1
        finally:
            stop.set()
            swapper.join()
        assert calls > 10 and swaps[0] > 100 and swapper.is_alive() is False
    assert snapshot(outside) == before


def test_a_hard_link_to_an_outside_file_is_replaced_not_written_through(world: dict[str, Path], attacked: Tools) -> None:
    """A hard link is a file of the workspace like any other, but writing replaces it with a new file
    (temporary file and rename), so the outside file it shares an inode with never changes."""
    link = world["root"] / "hard-link.txt"
    os.link(world["outside"] / "secret.txt", link)
    try:
        attacked.call("edit_file", {"path": "hard-link.txt", "old_text": "CANARY", "new_text": "replaced"})
        attacked.call("write_file", {"path": "hard-link.txt", "content": "rewritten\n"})
        assert link.read_text() == "rewritten\n" and link.stat().st_nlink == 1
        assert (world["outside"] / "secret.txt").read_text() == f"{CANARY}\n"
    finally:
        link.unlink()


# -- repositories git must not use -------------------------------------------------------------------
@pytest.fixture
def outside_repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository outside the roots with the canary committed, and the id of that commit."""
    from workspace_support import git

    repo = make_repo(tmp_path / "outside-repo")
    (repo / "secret.txt").write_text(f"{CANARY}\n")
    git(repo, "add", "secret.txt")
    git(repo, "commit", "-qm", f"Add {CANARY}")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def _refused_repository(folder: str) -> str:
    return (f"Refused: the git repository of {folder} is not a .git folder inside the workspace roots (a .git link "
            "or file pointing elsewhere, a linked worktree of an outside repository, or a bare repository inside "
            "the project)")


def test_a_git_link_gitfile_or_worktree_pointing_outside_is_refused(tmp_path: Path,
                                                                    outside_repo: tuple[Path, str]) -> None:
    """A `.git` that is a symbolic link or a gitfile to an outside repository, or a linked worktree of one,
    would let git read that repository: refused, saying nothing about it."""
    from workspace_support import git

    outside, _ = outside_repo
    root = make_repo(tmp_path / "root")
    for name in ("link", "gitfile"):
        (root / name).mkdir()
        (root / name / "a.txt").write_text("a\n")
    (root / "link" / ".git").symlink_to(outside / ".git")
    (root / "gitfile" / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    git(outside, "worktree", "add", "-q", str(root / "linked"))
    for folder in ("link", "gitfile", "linked"):
        with Tools(root / folder) as alone:
            assert alone.error("git_status") == _refused_repository(".")
        with Tools(root) as tools:
            for tool, arguments in (("git_log", {"path": folder}), ("git_diff", {"path": folder}),
                                    ("git_diff", {"path": folder, "ref": "HEAD~1"}),
                                    ("git_show", {"ref": "HEAD", "path": f"{folder}/a.txt"}),
                                    ("git_show", {"ref": "HEAD", "path": folder})):
                assert tools.error(tool, arguments) == _refused_repository(folder), (folder, tool)
                _no_canary(tools)
            assert tools.data("git_log", {"limit": 1})["commits"][0]["subject"] == "Rename util to helpers"


def test_a_bare_repository_planted_in_the_project_is_never_used(tmp_path: Path, outside_repo: tuple[Path, str]) -> None:
    """A folder that looks like a bare repository: HEAD, refs/, a config with core.worktree and an
    [include] of any file, objects/info/alternates or a commondir pointing outside. write_file refuses to
    complete one (test_write_attacks.py), so here the files are written directly, as a checkout could
    bring them. Git must not use it: no outside object is read, and the include is no oracle for outside files."""
    outside, commit = outside_repo
    root = make_repo(tmp_path / "root")
    before = snapshot(outside)
    targets = [outside / "secret.txt", outside / "nope.txt", Path("/etc/passwd"), outside / ".git" / "config"]
    with Tools(root, write=True) as tools:
        def write(path: str, content: str) -> None:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(content)

        write("common/HEAD", "ref: refs/heads/main\n")
        write("common/commondir", f"{outside / '.git'}\n")
        for n, target in enumerate(targets):
            folder = f"evil{n}"
            write(f"{folder}/HEAD", "ref: refs/heads/main\n")
            write(f"{folder}/refs/heads/main", f"{commit}\n")
            write(f"{folder}/objects/info/alternates", f"{outside / '.git' / 'objects'}\n")
            write(f"{folder}/config", f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = "
                                      f"{root / folder}\n[include]\n\tpath = {target}\n")
        answers = set()
        for folder in ["common"] + [f"evil{n}" for n in range(len(targets))]:
            for tool, arguments in (("git_log", {"path": folder}), ("git_diff", {"path": folder}),
                                    ("git_show", {"ref": commit[:7], "path": folder}),
                                    ("git_show", {"ref": "HEAD", "path": f"{folder}/secret.txt"})):
                answers.add(tools.error(tool, arguments).replace(folder, "FOLDER"))
                _no_canary(tools)
        assert len(answers) == 1, answers  # the same refusal whatever the include names
        assert answers.pop().startswith("Refused: FOLDER is in a bare repository")
        assert tools.error("git_show", {"ref": commit}).startswith("Unknown revision")
        _no_canary(tools)
        assert "?? evil0/" in tools.text("git_status")  # to the root's repository, only files
    assert snapshot(outside) == before


def test_git_show_in_a_root_inside_a_larger_repository_shows_only_commits(tmp_path: Path) -> None:
    """Trees, blobs (by id or by a short prefix) and tags of them would print files outside the root:
    confined, git_show accepts only commits (a tag peeled to its commit), shown through the root."""
    from workspace_support import git

    repo = make_repo(tmp_path / "repo")
    (repo / "src" / "secret.txt").write_text(f"{CANARY}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add a secret")
    blob = git(repo, "rev-parse", "HEAD:src/secret.txt").strip()
    tree = git(repo, "rev-parse", "HEAD:src").strip()
    git(repo, "tag", "blob-tag", blob)
    git(repo, "tag", "-a", "-m", "A tree", "tree-tag", "HEAD^{tree}")
    with Tools(repo / "docs") as tools:
        for ref in ("HEAD^{tree}", "HEAD~0^{tree}", "v1.0^{tree}", blob, blob[:7], blob[:4], tree, tree[:6],
                    "blob-tag", "tree-tag", "tree-tag^{}", "HEAD^{tree}^{}"):
            assert tools.error("git_show", {"ref": ref}) == (
                f"Unknown revision: {ref!r} does not name a commit in this repository"), ref
            _no_canary(tools)
        tag = tools.data("git_show", {"ref": "v1.0"})
        assert tag["type"] == "commit" and tag["object"] == git(repo, "rev-parse", "v1.0^{commit}").strip()
        assert "src/" not in tag["text"]
        assert "Guide" in tools.text("git_show", {"ref": "HEAD~3"})  # the first commit, through the root only
        assert "src/" not in tools.last["content"][0]["text"]
        assert tools.text("git_show", {"ref": "HEAD", "path": "guide.md"}).startswith("Guide")
    with Tools(repo) as whole:  # not confined: any object of the repository (all of it is in the root)
        assert CANARY in whole.text("git_show", {"ref": blob})
        assert whole.data("git_show", {"ref": "v1.0"})["type"] == "tag"


def test_a_way_through_the_outside_is_refused_whatever_is_there(tmp_path: Path) -> None:
    """`probe/X/../../root/f`: the answer must not depend on X being a folder, a link, or missing."""
    root, probe = tmp_path / "ws", tmp_path / "probe"
    root.mkdir()
    (root / "README.md").write_text("inside\n")
    (probe / "realdir").mkdir(parents=True)
    (probe / "linkdir").symlink_to(make_outside(tmp_path / "outside") / "sub")
    roots = Roots([str(root)])
    answers = set()
    for name in ("realdir", "linkdir", "missing"):
        for given in (f"{probe}/{name}/../../ws/README.md", f"file://{root}/../probe/{name}/../../ws/README.md",
                      f"../probe/{name}/../../ws/README.md"):
            answers.add(refusal(roots, given).replace(name, "X"))
    assert len(answers) == 3  # one message per spelling, the same for the three kinds of X
    # Going up to a folder above the root and down again stays fine.
    assert roots.resolve(f"{root}/../ws/README.md") == str(root / "README.md")
    assert roots.resolve("../ws/./README.md") == str(root / "README.md")


def test_a_root_given_through_a_link_accepts_paths_through_that_link(tmp_path: Path) -> None:
    """A root given as /home/u/proj -> /data/proj: the client may use either spelling."""
    real = make_repo(tmp_path / "data" / "proj")
    (tmp_path / "home").mkdir()
    alias = tmp_path / "home" / "proj"
    alias.symlink_to(real)
    roots = Roots([str(alias)])
    assert roots.paths == [str(real)]
    for given in (str(alias / "README.md"), f"file://{alias}/README.md", str(real / "README.md"),
                  f"{alias}/../proj/README.md", "README.md"):
        assert roots.resolve(given) == str(real / "README.md"), given
    assert roots.resolve(f"{alias}/../../data/proj/README.md") == str(real / "README.md")  # above a root: fine
    with pytest.raises(OutsideRoots):
        roots.resolve(f"{alias}/../other/../proj/README.md")  # through home/other: outside
