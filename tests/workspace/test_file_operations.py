"""create_directory, move_path and delete_path through the server: what each does, and what each refuses."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from support import REPO
from workspace_support import Tools, make_repo, snapshot


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def tools(repo: Path) -> Any:
    with Tools(repo, write=True) as server:
        yield server


def test_create_directory_makes_the_missing_folders_once(tools: Tools, repo: Path) -> None:
    assert tools.text("create_directory", {"path": "a/b/c", "dry_run": True}).startswith("Dry run: would create")
    assert not (repo / "a").exists()
    assert tools.data("create_directory", {"path": "a/b/c"}) == {"path": "a/b/c", "created": True, "dry_run": False}
    assert (repo / "a" / "b" / "c").is_dir()
    assert tools.text("create_directory", {"path": "a/b/c"}) == "a/b/c already exists; nothing to do."
    assert "README.md exists and is a file, not a folder" in tools.error("create_directory", {"path": "README.md"})


def test_move_renames_files_folders_and_links_themselves(tools: Tools, repo: Path) -> None:
    data = tools.data("move_path", {"source": "src/helpers.py", "destination": "lib/deep/helpers.py"})
    assert data == {"source": "src/helpers.py", "destination": "lib/deep/helpers.py", "kind": "file", "replaced": False,
                    "dry_run": False}
    assert (repo / "lib" / "deep" / "helpers.py").read_text() == "def answer():\n    return 42\n"
    assert not (repo / "src" / "helpers.py").exists()
    tools.call("move_path", {"source": "lib", "destination": "library"})
    assert (repo / "library" / "deep" / "helpers.py").is_file() and not (repo / "lib").exists()
    os.symlink("library/deep/helpers.py", repo / "link.py")
    assert tools.data("move_path", {"source": "link.py", "destination": "other.py"})["kind"] == "link"
    assert os.readlink(repo / "other.py") == "library/deep/helpers.py"  # the link moved, its target untouched
    assert (repo / "library" / "deep" / "helpers.py").is_file()


def test_move_never_replaces_unless_asked_and_then_only_a_file(tools: Tools, repo: Path) -> None:
    before = snapshot(repo)
    assert tools.error("move_path", {"source": "src/app.py", "destination": "README.md"}) == (
        "README.md already exists; move_path does not replace it unless overwrite is true")
    assert "only a file by a file" in tools.error("move_path", {"source": "src", "destination": "docs",
                                                                  "overwrite": True})
    assert "only a file by a file" in tools.error("move_path", {"source": "README.md", "destination": "docs",
                                                                  "overwrite": True})
    assert "cannot move into itself" in tools.error("move_path", {"source": "src", "destination": "src/inner"})
    assert snapshot(repo) == before
    data = tools.data("move_path", {"source": "src/app.py", "destination": "README.md", "overwrite": True})
    assert data["replaced"] is True and (repo / "README.md").read_text().startswith("import util")


def test_delete_files_links_and_folders_only_when_asked(tools: Tools, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    (repo / "tree" / "sub").mkdir(parents=True)
    (repo / "tree" / "a.txt").write_text("a\n")
    (repo / "tree" / "sub" / "b.txt").write_text("b\n")
    os.symlink(outside, repo / "tree" / "sub" / "out")  # a link out: removed, never followed
    os.symlink(outside / "keep.txt", repo / "link-out.txt")  # leads out: refused like the path it leads to
    assert tools.error("delete_path", {"path": "link-out.txt"}).startswith("Access denied")
    os.symlink("src/app.py", repo / "link-in.py")  # leads in: the link itself is deleted
    assert tools.text("delete_path", {"path": "link-in.py"}) == "Deleted link-in.py (1 file)."
    assert not os.path.lexists(repo / "link-in.py") and (repo / "src" / "app.py").is_file()
    assert (outside / "keep.txt").read_text() == "keep\n" and os.path.islink(repo / "link-out.txt")
    assert tools.error("delete_path", {"path": "tree"}) == (
        "tree is a folder holding 4 items; delete_path deletes a folder and what it holds only when recursive is true")
    dry = tools.data("delete_path", {"path": "tree", "recursive": True, "dry_run": True})
    assert dry == {"path": "tree", "files": 3, "folders": 2, "dry_run": True} and (repo / "tree").is_dir()  # a link: a file
    tools.call("delete_path", {"path": "tree", "recursive": True})
    assert not (repo / "tree").exists() and (outside / "keep.txt").read_text() == "keep\n"
    (repo / "empty").mkdir()
    assert tools.text("delete_path", {"path": "empty"}) == "Deleted empty (1 folder)."
    tools.call("delete_path", {"path": "src/app.py"})
    assert not (repo / "src" / "app.py").exists()


def test_roots_git_folders_and_nested_repositories_are_never_touched(tools: Tools, repo: Path) -> None:
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    (nested / ".git").mkdir()
    (nested / ".git" / "config").write_text("[core]\n")
    before = snapshot(repo)
    refusals: list[tuple[str, dict[str, Any], str]] = [
        ("delete_path", {"path": ".", "recursive": True}, "is a workspace root"),
        ("delete_path", {"path": str(repo), "recursive": True}, "is a workspace root"),
        ("delete_path", {"path": ".git", "recursive": True}, "does not touch .git folders"),
        ("delete_path", {"path": ".GIT/config"}, "does not touch .git folders"),
        ("delete_path", {"path": "vendor", "recursive": True}, "holds a git repository (vendor/lib/.git)"),
        ("move_path", {"source": "vendor", "destination": "elsewhere"}, "holds a git repository"),
        ("move_path", {"source": "README.md", "destination": ".git/hooks/pre-commit"}, "does not touch .git folders"),
        ("move_path", {"source": ".git/config", "destination": "config"}, "does not touch .git folders"),
        ("move_path", {"source": ".", "destination": "x"}, "is a workspace root"),
        ("delete_path", {"path": "missing"}, "Not found: missing"),
        ("delete_path", {"path": "../repo", "recursive": True}, "is a workspace root"),
        ("delete_path", {"path": "..", "recursive": True}, "Access denied"),
        ("create_directory", {"path": ".git/x"}, "does not touch .git folders"),
    ]
    for tool, arguments, expected in refusals:
        assert expected in tools.error(tool, arguments), (tool, arguments)
    assert snapshot(repo) == before


def test_no_folder_or_move_completes_a_git_repository(tools: Tools, repo: Path) -> None:
    fake = repo / "fake"
    fake.mkdir()
    (fake / "HEAD").write_text("ref: refs/heads/main\n")
    (fake / "objects").mkdir()
    (repo / "refs").mkdir()
    before = snapshot(repo)
    assert "git repository" in tools.error("create_directory", {"path": "fake/refs"})
    assert "git repository" in tools.error("create_directory", {"path": "fake/REFS/heads"})
    assert "git repository" in tools.error("move_path", {"source": "refs", "destination": "fake/refs"})
    assert snapshot(repo) == before


def test_paths_outside_the_roots_are_refused(tools: Tools, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    os.symlink(outside, repo / "door")
    for tool, arguments in [("delete_path", {"path": "door/secret.txt"}),
                            ("delete_path", {"path": str(outside / "secret.txt")}),
                            ("move_path", {"source": "door/secret.txt", "destination": "stolen.txt"}),
                            ("move_path", {"source": "README.md", "destination": "door/planted.md"}),
                            ("move_path", {"source": "README.md", "destination": "../planted.md"}),
                            ("create_directory", {"path": "door/new"}),
                            ("create_directory", {"path": "../new"})]:
        assert tools.error(tool, arguments).startswith("Access denied"), (tool, arguments)
    assert sorted(os.listdir(outside)) == ["secret.txt"] and (outside / "secret.txt").read_text() == "secret\n"
    assert (repo / "README.md").exists()


def test_a_move_racing_a_new_file_at_its_destination_never_replaces_it(repo: Path) -> None:
    """RENAME_NOREPLACE: a file written at the destination while the move runs is never replaced. Whichever comes
    first, the writer's text ends at the destination (written before: the move is refused and the source kept;
    after: it overwrites the moved file), and the source is either kept or moved; never both lost."""
    refused = 0
    with Tools(repo, write=True) as tools:
        for round_number in range(40):
            source, destination = repo / f"s{round_number}.txt", repo / f"d{round_number}.txt"
            source.write_text("moved\n")
            writer = threading.Thread(target=lambda path=destination: path.write_text("theirs\n"))
            writer.start()
            reply = tools.process.request("tools/call", {"name": "move_path", "arguments": {
                "source": source.name, "destination": destination.name}})
            writer.join()
            assert destination.read_text() == "theirs\n", reply
            if reply["result"]["isError"]:
                refused += 1
                assert source.read_text() == "moved\n", reply
            else:
                assert not source.exists(), reply
    print(f"{refused} of 40 moves found the writer's file first and kept it")
    assert stat.S_ISDIR(os.stat(repo).st_mode)


def test_nested_roots_and_bare_repositories_are_never_deleted_or_moved(tmp_path: Path) -> None:
    outer = make_repo(tmp_path / "outer")
    (outer / "inner").mkdir()
    (outer / "inner" / "keep.txt").write_text("keep\n")
    (outer / "x" / "deeper").mkdir(parents=True)
    os.symlink(outer / "inner", outer / "to-inner")
    subprocess.run(["git", "clone", "-q", "--bare", str(outer), str(outer / "fixture.git")], check=True)
    with Tools(outer, outer / "inner", outer / "x" / "deeper", write=True) as tools:
        before = snapshot(outer)
        refusals: list[tuple[str, dict[str, Any], str]] = [
            ("delete_path", {"path": "inner", "recursive": True}, "is a workspace root"),
            ("delete_path", {"path": "to-inner", "recursive": True}, "is a workspace root"),
            ("move_path", {"source": "x", "destination": "y"}, "holds the workspace root x/deeper"),
            ("delete_path", {"path": "x", "recursive": True}, "holds the workspace root x/deeper"),
            ("delete_path", {"path": "fixture.git", "recursive": True}, "is a git repository"),
            ("move_path", {"source": "fixture.git", "destination": "elsewhere.git"}, "is a git repository"),
            ("delete_path", {"path": "fixture.git/HEAD"}, "for a repository"),
            ("delete_path", {"path": "fixture.git/refs", "recursive": True}, "for a repository"),
            ("move_path", {"source": "fixture.git/config", "destination": "stolen"}, "for a repository"),
        ]
        for tool, arguments, expected in refusals:
            assert expected in tools.error(tool, arguments), (tool, arguments)
        assert snapshot(outer) == before


def test_overwrite_is_a_file_by_a_file_and_never_a_file_by_itself(tools: Tools, repo: Path) -> None:
    os.symlink("README.md", repo / "link.md")
    os.link(repo / "README.md", repo / "hard.md")
    before = snapshot(repo)
    assert "only a file by a file" in tools.error("move_path", {"source": "link.md", "destination": "docs/guide.md",
                                                                "overwrite": True})
    assert "are the same file" in tools.error("move_path", {"source": "hard.md", "destination": "README.md",
                                                            "overwrite": True})
    assert snapshot(repo) == before
    data = tools.data("delete_path", {"path": "src", "recursive": True, "dry_run": True})
    assert (data["files"], data["folders"]) == (2, 1)


MOUNTED = """
import json, shutil, subprocess, sys
sys.path.insert(0, {tests!r})
from workspace_support import Tools
root, outside = {root!r}, {outside!r}
subprocess.run(["mount", "--bind", outside, root + "/d/mnt"], check=True)
with Tools(root, write=True) as tools:
    refusals = [tools.error("delete_path", {{"path": "d", "recursive": True}}),
                tools.error("move_path", {{"source": "d", "destination": "e"}})]
kept = open(outside + "/precious.txt").read()
shutil.rmtree(root + "/d", ignore_errors=True)  # the same deletion without us: through the bind mount
print(json.dumps({{"refusals": refusals, "kept": kept, "after_rmtree": __import__("os").listdir(outside)}}))
"""


def test_a_bind_mount_inside_a_folder_stops_its_deletion(tmp_path: Path) -> None:
    """A bind mount of the same filesystem has the same device number: the kernel's mount table tells. The
    attack first without us: rmtree through the mount empties the folder outside."""
    root, outside = tmp_path / "w", tmp_path / "outside"
    (root / "d" / "mnt").mkdir(parents=True)
    outside.mkdir()
    (outside / "precious.txt").write_text("x\n")
    script = MOUNTED.format(tests=str(REPO / "tests"), root=str(root), outside=str(outside))
    done = subprocess.run(["unshare", "-m", sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and ("unshare" in done.stderr or "mount" in done.stderr):
        pytest.skip(f"no private mount namespace here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert all("is a mount point at or inside d" in message for message in report["refusals"]), report
    assert report["kept"] == "x\n"
    assert report["after_rmtree"] == []  # without us, the file outside is gone
