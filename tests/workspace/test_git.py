"""git_status, git_log, git_diff and git_show on real repositories made by the test, through the real
process; and git kept from running anything a repository's config or attributes ask for."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from workspace_support import Tools, git, git_run, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("git") / "clean")


@pytest.fixture(scope="module")
def read_only(clean: Path) -> Any:
    with Tools(clean) as tools:
        yield tools


def _head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


# -- git_status --------------------------------------------------------------------------------------
def test_status_of_a_clean_repository(read_only: Tools, clean: Path) -> None:
    result = read_only.call("git_status")
    assert result["content"][0]["text"] == "## main\nnothing to commit, working tree clean"
    assert result["structuredContent"] == {"repositories": [{
        "root": str(clean), "repository": True, "branch": "main", "commit": _head(clean), "upstream": None,
        "ahead": 0, "behind": 0, "files": [], "truncated": False}]}


def test_status_lists_every_kind_of_change(repo: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    (repo / "docs" / "guide.md").write_text("staged\n")
    git(repo, "add", "docs/guide.md")
    git(repo, "mv", "src/helpers.py", "src/tools.py")
    (repo / "src" / "app.py").unlink()
    (repo / "new file.txt").write_text("untracked\n")
    (repo / "debug.log").write_text("ignored, not shown\n")
    with Tools(repo) as tools:
        result = tools.call("git_status")
    assert result["content"][0]["text"].splitlines() == [
        "## main", " M README.md", "M  docs/guide.md", " D src/app.py", "R  src/helpers.py -> src/tools.py",
        "?? new file.txt"]
    files = result["structuredContent"]["repositories"][0]["files"]
    assert files[3] == {"path": "src/tools.py", "index": "R", "worktree": ".", "kind": "renamed",
                        "orig_path": "src/helpers.py"}
    assert files[4] == {"path": "new file.txt", "index": "?", "worktree": "?", "kind": "untracked"}


def test_status_with_an_upstream_ahead_and_behind(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    (repo / "README.md").write_text("upstream moved\n")
    git(repo, "commit", "-qam", "Upstream change")
    git(clone, "fetch", "-q")
    (clone / "local.txt").write_text("local\n")
    git(clone, "add", "local.txt")
    git(clone, "commit", "-qm", "Local change")
    with Tools(clone) as tools:
        result = tools.call("git_status")
    assert result["content"][0]["text"] == "## main...origin/main [ahead 1, behind 1]\nnothing to commit, working tree clean"
    status = result["structuredContent"]["repositories"][0]
    assert (status["upstream"], status["ahead"], status["behind"]) == ("origin/main", 1, 1)


def test_status_detached_and_before_the_first_commit(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "trunk")
    (fresh / "a.txt").write_text("a\n")
    git(fresh, "add", "a.txt")
    with Tools(repo) as tools:
        assert tools.text("git_status").startswith(f"## HEAD (detached at {_head(repo)[:12]})")
        assert tools.data("git_status")["repositories"][0]["branch"] is None
    with Tools(fresh) as tools:
        assert tools.text("git_status") == "## No commits yet on trunk\nA  a.txt"
        assert tools.text("git_log") == "No commits yet."
        assert "+a" in tools.text("git_diff", {"staged": True})


def test_status_of_several_roots_and_of_no_repository(clean: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with Tools(plain) as tools:
        assert tools.error("git_status") == f"{plain.name} is not in a git repository".replace(plain.name, ".")
        assert tools.error("git_log") == ". is not in a git repository"
    with Tools(clean, plain) as tools:
        result = tools.call("git_status")
        text = result["content"][0]["text"]
        assert text == f"# {clean}\n## main\nnothing to commit, working tree clean\n\n# {plain}\n{plain} is not in a git repository"
        assert [r["repository"] for r in result["structuredContent"]["repositories"]] == [True, False]


# -- git_log -------------------------------------------------------------------------------------------
def test_log_newest_first_with_messages(read_only: Tools, clean: Path) -> None:
    result = read_only.call("git_log")
    lines = result["content"][0]["text"].splitlines()
    assert lines[0].endswith(" 2024-01-03 09:00 Ada Lovelace: Rename util to helpers")
    assert lines[-2:] == [f"{lines[-2][:12]} 2024-01-01 09:00 Ada Lovelace: Initial commit", "    The first version."]
    commits = result["structuredContent"]["commits"]
    assert [c["subject"] for c in commits] == ["Rename util to helpers", "Add greeting", "Initial commit"]
    assert commits[0] == {"commit": _head(clean), "parents": [commits[1]["commit"]], "author": "Ada Lovelace",
                          "email": "ada@example.com", "date": "2024-01-03T09:00:00+00:00",
                          "subject": "Rename util to helpers", "body": ""}
    assert commits[2]["parents"] == [] and commits[2]["body"] == "The first version."
    assert result["structuredContent"]["truncated"] is False


def test_log_limit_path_follow_and_ranges(read_only: Tools) -> None:
    cut = read_only.call("git_log", {"limit": 1})
    assert len(cut["structuredContent"]["commits"]) == 1 and cut["structuredContent"]["truncated"] is True
    assert cut["content"][0]["text"].endswith(
        "[Showing the 1 most recent commit; there are more. Raise limit, or narrow with path or a ref range "
        "such as main..HEAD.]")
    subjects = [c["subject"] for c in read_only.data("git_log", {"path": "src/app.py"})["commits"]]
    assert subjects == ["Add greeting", "Initial commit"]
    followed = [c["subject"] for c in read_only.data("git_log", {"path": "src/helpers.py"})["commits"]]
    assert followed == ["Rename util to helpers", "Initial commit"]  # through the rename
    assert [c["subject"] for c in read_only.data("git_log", {"path": "docs"})["commits"]] == ["Initial commit"]
    assert [c["subject"] for c in read_only.data("git_log", {"ref": "v1.0"})["commits"]] == ["Add greeting", "Initial commit"]
    assert [c["subject"] for c in read_only.data("git_log", {"ref": "v1.0.."})["commits"]] == ["Rename util to helpers"]
    assert [c["subject"] for c in read_only.data("git_log", {"ref": "HEAD~2..v1.0"})["commits"]] == ["Add greeting"]
    assert read_only.data("git_log", {"path": "never-existed.txt"})["commits"] == []
    assert read_only.error("git_log", {"ref": "nope"}) == "Unknown revision: 'nope' does not name a commit in this repository"


# -- git_diff ------------------------------------------------------------------------------------------
def test_diff_unstaged_staged_ref_and_path(repo: Path) -> None:
    (repo / "README.md").write_text("# Demo\n\nA demo project.\nMore.\n")
    (repo / "docs" / "guide.md").write_text("Guide\n")
    git(repo, "add", "docs/guide.md")
    with Tools(repo) as tools:
        unstaged = tools.call("git_diff")
        text = unstaged["content"][0]["text"]
        assert text.startswith("1 file changed (unstaged, working tree against the index), +1 -0:\n  README.md (+1 -0)\n\n"
                               "diff --git a/README.md b/README.md\n")
        assert text.endswith("@@ -1,3 +1,4 @@\n # Demo\n \n A demo project.\n+More.")
        assert unstaged["structuredContent"]["files"] == [{"path": "README.md", "added": 1, "deleted": 0}]
        staged = tools.data("git_diff", {"staged": True})
        assert staged["files"] == [{"path": "docs/guide.md", "added": 0, "deleted": 3}]
        against_head = tools.data("git_diff", {"ref": "HEAD"})
        assert [f["path"] for f in against_head["files"]] == ["README.md", "docs/guide.md"]
        assert [f["path"] for f in tools.data("git_diff", {"ref": "HEAD", "path": "docs"})["files"]] == ["docs/guide.md"]
        ranged = tools.call("git_diff", {"ref": "v1.0..HEAD"})
        assert ranged["structuredContent"]["files"] == [
            {"path": "src/helpers.py", "old_path": "src/util.py", "added": 0, "deleted": 0}]
        assert ranged["content"][0]["text"].startswith("1 file changed (v1.0..HEAD), +0 -0:\n  src/util.py -> src/helpers.py")
        assert tools.data("git_diff", {"ref": "HEAD~1...HEAD"})["files"][0]["path"] == "src/helpers.py"
        assert tools.error("git_diff", {"ref": "HEAD~1..HEAD", "staged": True}).startswith("staged compares")
        assert tools.text("git_diff", {"path": "src"}) == "No changes (unstaged, working tree against the index)."


def test_diff_of_binary_files_and_the_byte_bound(repo: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\x00\x01")
    git(repo, "add", "logo.png")
    git(repo, "commit", "-qm", "Add logo")
    (repo / "logo.png").write_bytes(b"\x89PNG\x00\x02")
    (repo / "big.txt").write_text("".join(f"line {n} {'x' * 60}\n" for n in range(6000)))
    git(repo, "add", "big.txt")
    with Tools(repo, options=("--max-result-tokens", "0")) as tools:
        assert tools.data("git_diff", {"path": "logo.png"})["files"] == [{"path": "logo.png", "added": None, "deleted": None}]
        assert "  logo.png (binary)" in tools.text("git_diff", {"path": "logo.png"})
        big = tools.call("git_diff", {"staged": True})
        data = big["structuredContent"]
        assert data["truncated"] is True and data["files"] == [{"path": "big.txt", "added": 6000, "deleted": 0}]
        assert len(data["diff"].encode()) <= 256 * 1024 and data["diff"].endswith("\n")
        assert big["content"][0]["text"].endswith(
            "[The diff is longer than 256.0 KiB and was cut here. The file list above is complete; pass path to see "
            "one file's changes.]")


def test_diff_summary_and_patch_of_odd_names_renames_and_binaries(repo: Path) -> None:
    """One git run gives both the file list and the patch: names with spaces, a line break and a byte that
    is not UTF-8, a binary file and a rename each appear once in each, as git itself lists them."""
    (repo / "sp ace.txt").write_text("one\n")
    (repo / "new\nline.txt").write_text("two\n")
    (repo / os.fsdecode(b"caf\xe9.txt")).write_text("three\n")
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02")
    git(repo, "mv", "docs/guide.md", "docs/handbook.md")
    git(repo, "add", "-A")
    with Tools(repo) as tools:
        result = tools.call("git_diff", {"staged": True})
    data = result["structuredContent"]
    assert data["files"] == [
        {"path": "blob.bin", "added": None, "deleted": None},
        {"path": "caf\udce9.txt", "added": 1, "deleted": 0},
        {"path": "docs/handbook.md", "old_path": "docs/guide.md", "added": 0, "deleted": 0},
        {"path": "new\nline.txt", "added": 1, "deleted": 0},
        {"path": "sp ace.txt", "added": 1, "deleted": 0},
    ]
    listed = git(repo, "diff", "--cached", "--numstat", "-z").split("\0")
    assert len([record for record in listed if record.count("\t") == 2]) == len(data["files"])
    headers = [line for line in data["diff"].splitlines() if line.startswith("diff --git ")]
    assert headers == ["diff --git a/blob.bin b/blob.bin", "diff --git a/caf\ufffd.txt b/caf\ufffd.txt",
                       "diff --git a/docs/guide.md b/docs/handbook.md",
                       'diff --git "a/new\\nline.txt" "b/new\\nline.txt"', "diff --git a/sp ace.txt b/sp ace.txt"]
    assert "Binary files /dev/null and b/blob.bin differ" in data["diff"] and "\0" not in data["diff"]
    text = result["content"][0]["text"]
    summary = text.split("\n\n", 1)[0].splitlines()
    assert summary[:2] + summary[3:] == ["5 files changed (staged, against HEAD), +3 -0:", "  blob.bin (binary)",
                                         "  docs/guide.md -> docs/handbook.md (+0 -0)", "  new\\nline.txt (+1 -0)",
                                         "  sp ace.txt (+1 -0)"]
    assert text.split("\n\n", 1)[1].startswith("diff --git a/blob.bin b/blob.bin\n")


def test_diff_during_a_merge_with_conflicts(repo: Path) -> None:
    """Unmerged paths: git prints their combined diff before the file list, so the two are read apart."""
    git(repo, "checkout", "-q", "-b", "side", "HEAD~1")
    (repo / "README.md").write_text("# Demo, the side\n")
    git(repo, "commit", "-q", "-am", "Side")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("# Demo, the main\n")
    git(repo, "commit", "-q", "-am", "Main")
    assert git_run(repo, "merge", "-q", "side").returncode != 0
    (repo / "docs" / "guide.md").write_text("Changed meanwhile\n")
    with Tools(repo) as tools:
        data = tools.data("git_diff")
        assert [entry["path"] for entry in data["files"]] == ["README.md", "README.md", "docs/guide.md"]  # as git lists them
        assert data["diff"].startswith("diff --cc README.md\n") and "diff --git a/docs/guide.md b/docs/guide.md\n" in data["diff"]
        assert "\0" not in data["diff"] and not data["truncated"]
        staged = tools.data("git_diff", {"staged": True})
        assert staged["files"] == [{"path": "README.md", "added": 0, "deleted": 0}] and staged["diff"] == "* Unmerged path README.md\n"


def test_diff_and_log_of_an_empty_repository_and_a_detached_head(repo: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "trunk")
    with Tools(fresh) as tools:
        assert tools.text("git_diff") == "No changes (unstaged, working tree against the index)."
        assert tools.text("git_log", {"path": "."}) == "No commits yet."
        assert tools.error("git_log", {"ref": "HEAD"}) == "Unknown revision: 'HEAD' does not name a commit in this repository"
        (fresh / "a.txt").write_text("a\n")
        git(fresh, "add", "a.txt")
        (fresh / "a.txt").write_text("a\nb\n")
        assert tools.data("git_diff")["files"] == [{"path": "a.txt", "added": 1, "deleted": 0}]
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    (repo / "README.md").write_text("# Detached\n")
    with Tools(repo) as tools:
        assert [commit["subject"] for commit in tools.data("git_log")["commits"]] == ["Add greeting", "Initial commit"]
        assert tools.data("git_diff", {"ref": "HEAD"})["files"] == [{"path": "README.md", "added": 1, "deleted": 3}]


# -- git_show ------------------------------------------------------------------------------------------
def test_show_a_commit_and_a_tag(read_only: Tools, clean: Path) -> None:
    result = read_only.call("git_show", {"ref": "HEAD~1"})
    text = result["content"][0]["text"]
    assert text.startswith(f"commit {git(clean, 'rev-parse', 'HEAD~1').strip()}\nAuthor: Ada Lovelace <ada@example.com>\n"
                           "Date:   2024-01-02 09:00:00 +0000\n\n    Add greeting\n---\n src/app.py | 4 ++++\n")
    assert "+def greet(name):" in text
    data = result["structuredContent"]
    assert (data["type"], data["path"], data["truncated"], data["ref"]) == ("commit", None, False, "HEAD~1")
    tag = read_only.call("git_show", {"ref": "v1.0"})
    assert tag["structuredContent"]["type"] == "tag"
    assert tag["content"][0]["text"].startswith("tag v1.0\nTagger: Ada Lovelace <ada@example.com>")


def test_show_a_file_or_folder_as_of_a_revision(read_only: Tools) -> None:
    old = read_only.call("git_show", {"ref": "HEAD~2", "path": "src/app.py"})
    assert old["content"][0]["text"] == "import util\n\n\ndef main():\n    return util.answer()"
    assert old["structuredContent"]["type"] == "blob" and old["structuredContent"]["path"] == "src/app.py"
    assert read_only.text("git_show", {"ref": "v1.0", "path": "src/util.py"}) == "def answer():\n    return 42"
    assert read_only.text("git_show", {"ref": "HEAD", "path": "src"}) == "app.py\nhelpers.py"
    assert read_only.text("git_show", {"ref": "HEAD", "path": "."}) == ".gitignore\nREADME.md\ndocs/\nsrc/"
    assert read_only.error("git_show", {"ref": "HEAD", "path": "src/util.py"}) == "src/util.py does not exist in HEAD"
    assert read_only.error("git_show", {"ref": "nope"}) == "Unknown revision: 'nope' does not name an object in this repository"


def test_show_refuses_binary_blobs(repo: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\x00" * 10)
    git(repo, "add", "logo.png")
    git(repo, "commit", "-qm", "Add logo")
    with Tools(repo) as tools:
        assert tools.error("git_show", {"ref": "HEAD", "path": "logo.png"}) == (
            "logo.png is a binary file in HEAD (50 bytes); git_show shows text only")


# -- confinement and hardening ---------------------------------------------------------------------------
def test_a_root_inside_a_larger_repository_sees_only_itself(repo: Path) -> None:
    (repo / "README.md").write_text("outside the root\n")
    (repo / "docs" / "guide.md").write_text("inside the root\n")
    (repo / "stray.txt").write_text("untracked, outside\n")
    with Tools(repo / "docs") as tools:
        status = tools.call("git_status")
        assert status["content"][0]["text"] == "## main\n M guide.md"
        diff = tools.call("git_diff")
        assert diff["structuredContent"]["files"] == [{"path": "guide.md", "added": 1, "deleted": 4}]
        assert "README" not in diff["content"][0]["text"] and "a/guide.md" in diff["content"][0]["text"]
        assert [c["subject"] for c in tools.data("git_log")["commits"]] == ["Initial commit"]
        assert "src/" not in tools.text("git_show", {"ref": "HEAD~1"})
        assert tools.text("git_show", {"ref": "HEAD~1", "path": "guide.md"}).startswith("Guide\n=====")


def test_a_root_inside_a_larger_repository_keeps_the_rules_from_above(repo: Path) -> None:
    """The ignore and attribute files between the larger repository's top and the root apply to the root's
    files (git reads them even in its sandbox): debug.log is ignored by the top .gitignore, and *.dat is
    binary by the top .gitattributes (not committed: git reads it from the work tree only)."""
    (repo / "docs" / "table.dat").write_text("one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Data")
    (repo / ".gitattributes").write_text("*.dat binary\n")
    (repo / "docs" / "table.dat").write_text("two\n")
    (repo / "docs" / "debug.log").write_text("ignored\n")
    (repo / "docs" / "notes.txt").write_text("untracked\n")
    with Tools(repo / "docs") as tools:
        assert tools.text("git_status") == "## main\n M table.dat\n?? notes.txt"
        assert tools.data("git_diff")["files"] == [{"path": "table.dat", "added": None, "deleted": None}]


def test_a_root_holding_several_repositories(tmp_path: Path) -> None:
    first = make_repo(tmp_path / "work" / "first")
    second = tmp_path / "work" / "second"
    second.mkdir()
    git(second, "init", "-q", "-b", "main")
    (second / "b.txt").write_text("b\n")
    git(second, "add", "b.txt")
    git(second, "commit", "-qm", "Second repository")
    (first / "README.md").write_text("changed\n")
    with Tools(tmp_path / "work") as tools:
        assert [c["subject"] for c in tools.data("git_log", {"path": "second"})["commits"]] == ["Second repository"]
        assert tools.data("git_diff", {"path": "first"})["files"] == [{"path": "first/README.md", "added": 1, "deleted": 3}]
        assert tools.text("git_show", {"ref": "HEAD", "path": "second/b.txt"}) == "b"
        assert tools.error("git_status") == ". is not in a git repository"


def test_git_runs_nothing_the_repository_asks_for(repo: Path, tmp_path: Path) -> None:
    """A hostile .git/config and .gitattributes (fsmonitor hook, pager, external diff, textconv, signature
    program) must not run; GIT_* variables in our environment must not redirect git."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\ncat\n")
    script.chmod(0o755)
    for key, value in (("core.fsmonitor", str(script)), ("core.pager", str(script)), ("diff.external", str(script)),
                       ("diff.evil.textconv", str(script)), ("diff.evil.command", str(script)),
                       ("gpg.program", str(script)), ("log.showSignature", "true"), ("pager.log", str(script)),
                       ("core.hooksPath", str(tmp_path)), ("color.ui", "always"), ("format.pretty", "%H %s %x00")):
        git(repo, "config", key, value)
    (repo / ".gitattributes").write_text("* diff=evil\n")
    (repo / "README.md").write_text("changed\n")
    other = make_repo(tmp_path / "other")
    env = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other), "GIT_EXTERNAL_DIFF": str(script),
           "GIT_PAGER": str(script), "GIT_CONFIG_PARAMETERS": f"'core.pager={script}'"}
    with Tools(repo, env=env) as tools:
        assert " M README.md" in tools.text("git_status")
        assert "+changed" in tools.text("git_diff")
        assert "\x1b[" not in tools.text("git_diff")
        assert tools.text("git_log", {"limit": 1}).splitlines()[0].endswith("Ada Lovelace: Rename util to helpers")
        assert "Rename util" in tools.text("git_show", {"ref": "HEAD"})
        assert tools.text("git_show", {"ref": "HEAD", "path": "README.md"}) == "# Demo\n\nA demo project."
        assert tools.text("git_diff", {"ref": "HEAD~1..HEAD"}).startswith("1 file changed")
    assert not marker.exists(), marker.read_text()
    assert os.listdir(other) and git(other, "status", "--porcelain") == ""
    # The traps are live: plain git walks into them.
    git(repo, "status")
    git(repo, "diff")
    assert {line.split()[1] for line in marker.read_text().splitlines()} == {"2", "README.md"}  # fsmonitor, diff.external


def test_diff_paths_are_read_as_given_whatever_the_config(repo: Path) -> None:
    """diff.relative=true in the repository's config would make git print paths relative to the folder it
    runs in (src/), which the tool reads as relative to the top."""
    git(repo, "config", "diff.relative", "true")
    (repo / "src" / "app.py").write_text("x\n")
    with Tools(repo) as tools:
        assert tools.data("git_diff", {"path": "src"})["files"] == [{"path": "src/app.py", "added": 1, "deleted": 9}]
        assert "diff --git a/src/app.py b/src/app.py" in tools.text("git_diff", {"path": "src"})
        assert [f["path"] for f in tools.data("git_diff", {"ref": "HEAD~2", "path": "src/app.py"})["files"]] == ["src/app.py"]


def test_bounds_of_status_log_and_show(repo: Path) -> None:
    (repo / "many").mkdir()
    for n in range(2005):
        (repo / "many" / f"f{n:04d}.txt").write_text("x\n")
    body = "\n".join(f"Line {n} of a long message." for n in range(200))
    (repo / "huge.txt").write_text("".join(f"{n} {'y' * 70}\n" for n in range(5000)))
    git(repo, "add", "huge.txt")
    git(repo, "commit", "-qm", f"A huge file\n\n{body}")
    with Tools(repo, options=("--max-result-tokens", "0")) as tools:
        status = tools.call("git_status")
        report = status["structuredContent"]["repositories"][0]
        assert report["files"] == [{"path": "many/", "index": "?", "worktree": "?", "kind": "untracked"}]
        git(repo, "add", "many")
        staged = tools.call("git_status")
        report = staged["structuredContent"]["repositories"][0]
        assert len(report["files"]) == 2000 and report["truncated"] is True
        assert staged["content"][0]["text"].endswith("[Only the first 2000 entries are shown.]")
        log = tools.call("git_log", {"limit": 1})
        commit = log["structuredContent"]["commits"][0]
        assert commit["subject"] == "A huge file" and len(commit["body"]) == 4001 and commit["body"].endswith("…")
        lines = log["content"][0]["text"].splitlines()
        assert lines[1:11] == [f"    Line {n} of a long message." for n in range(10)]
        assert lines[11] == "    … (190 more lines; git_show shows the whole message)"
        shown = tools.call("git_show", {"ref": "HEAD"})
        assert shown["structuredContent"]["truncated"] is True and len(shown["structuredContent"]["text"]) <= 256 * 1024
        assert shown["content"][0]["text"].endswith(
            "[Cut at 256.0 KiB; pass path to see one file as of this revision, or use git_diff with a path.]")
        blob = tools.call("git_show", {"ref": "HEAD", "path": "huge.txt"})
        assert blob["structuredContent"]["truncated"] is True
        assert blob["content"][0]["text"].endswith("[Cut at 256.0 KiB; read_file on the working copy, or search_code, can reach the rest.]")
        assert tools.error("git_show", {"ref": "HEAD~1..HEAD"}).startswith("Unknown revision")


def _embed_bare_repository(repo: Path, marker: Path) -> None:
    """Commit into `repo` a bare repository `emb` (HEAD, config, objects/, refs/, none named .git) whose
    config runs `marker`-touching clean filter on its work tree `emb/wt` (info/attributes: `* filter=x`)."""
    emb = repo / "emb"
    git(repo, "init", "-q", "--bare", "-b", "main", "emb")
    git(emb, "config", "core.bare", "false")
    git(emb, "config", "core.worktree", "wt")
    (emb / "wt").mkdir()
    (emb / "wt" / "f.txt").write_text("one\n")
    git(emb, "add", "f.txt")
    git(emb, "commit", "-qm", "Inner")  # refs/heads/main: refs/ must hold a file to be committed
    git(emb, "config", "filter.x.clean", f"sh -c 'echo ran >> {marker}; cat'")
    (emb / "info" / "attributes").write_text("* filter=x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Vendor a bare repository")


def test_an_embedded_bare_repository_is_never_used(repo: Path, tmp_path: Path) -> None:
    """A bare repository committed inside a project survives a clone; git must not discover it (and run
    the filter its config and attributes ask for) when a tool runs in its folder."""
    marker = tmp_path / "ran"
    _embed_bare_repository(repo, marker)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    (clone / "emb" / "wt" / "f.txt").write_text("two\n")
    with Tools(clone) as tools:
        for tool, arguments in (("git_diff", {"path": "emb"}), ("git_log", {"path": "emb"}),
                                ("git_show", {"ref": "HEAD", "path": "emb/wt"}), ("git_diff", {"path": "emb/wt"})):
            folder = arguments["path"]
            assert tools.error(tool, arguments) == (
                f"Refused: {folder} is in a bare repository (a folder holding HEAD, objects/ and refs/ that is not "
                "a .git folder); git tools use only repositories with a .git folder"), tool
        assert "?? emb/wt/f.txt" not in tools.text("git_status")  # the project's own repository still works
        assert [f["path"] for f in tools.data("git_diff")["files"]] == ["emb/wt/f.txt"]
    assert not marker.exists()
    git(clone / "emb" / "wt", "diff")  # the trap is live: plain git walks into it
    assert marker.exists()


def test_the_repository_check_alone_refuses_a_bare_repository(repo: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """As on git older than 2.38, which ignores safe.bareRepository: the check of the git folder refuses."""
    from shipcode_mcp.primitives import ToolError
    from shipcode_mcp.workspace.git import commands
    from shipcode_mcp.workspace.git import repo as git_repo
    from shipcode_mcp.workspace.roots import Roots
    from workspace_support import context

    marker = tmp_path / "ran"
    _embed_bare_repository(repo, marker)
    (repo / "emb" / "wt" / "f.txt").write_text("two\n")
    config = list(git_repo._SAFE_CONFIG)
    if "safe.bareRepository=explicit" in config:
        at = config.index("safe.bareRepository=explicit")
        del config[at - 1:at + 1]
    monkeypatch.setattr(git_repo, "_SAFE_CONFIG", tuple(config))
    with pytest.raises(ToolError, match=r"^Refused: the git repository of emb is not a \.git folder inside"):
        commands.git_diff(context(), Roots([str(repo)]), None, False, "emb")
    assert not marker.exists()


def test_submodules_and_linked_worktrees_inside_the_root_work(repo: Path, tmp_path: Path) -> None:
    """Their git folders live under the root's .git (.git/modules/…, .git/worktrees/…): allowed."""
    library = make_repo(tmp_path / "library")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    git(repo, "commit", "-qm", "Add lib")
    git(repo, "worktree", "add", "-q", "-b", "feature", "wt")
    (repo / "lib" / "README.md").write_text("changed in the submodule\n")
    with Tools(repo) as tools:
        assert [c["subject"] for c in tools.data("git_log", {"path": "lib", "limit": 1})["commits"]] == [
            "Rename util to helpers"]
        assert tools.data("git_diff", {"path": "lib"})["files"] == [{"path": "lib/README.md", "added": 1, "deleted": 3}]
        assert [c["subject"] for c in tools.data("git_log", {"path": "wt", "limit": 1})["commits"]] == ["Add lib"]
        assert tools.text("git_show", {"ref": "HEAD", "path": "wt/src"}) == "app.py\nhelpers.py"
        assert tools.text("git_status").splitlines() == ["## main", " M lib", "?? wt/"]


def test_folders_git_never_reads_are_not_walked(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .git/lfs folder (Git LFS keeps its objects there) with more entries than the check may walk: git
    never reads it for these tools, so it is not walked and the repository is not refused. The same entries
    in objects/, which git reads, are refused: the cap is live."""
    from shipcode_mcp.primitives import ToolError
    from shipcode_mcp.workspace.git import repo as git_repo
    from shipcode_mcp.workspace.git import walk
    from shipcode_mcp.workspace.roots import Roots
    from workspace_support import context

    monkeypatch.setattr(walk, "MAX_GIT_ENTRIES", 10_000)
    lfs = repo / ".git" / "lfs" / "objects" / "ab" / "cd"
    lfs.mkdir(parents=True)
    for number in range(20_000):
        (lfs / f"{number:064x}").touch()
    with git_repo.Repo(context(), Roots([str(repo)]), str(repo)) as ours:
        assert ours.check(["rev-parse", "HEAD"]).stdout.decode().strip() == _head(repo)
    (repo / ".git" / "lfs").rename(repo / ".git" / "objects" / "lfs")
    with pytest.raises(ToolError, match="hold more than 10000 entries"):
        git_repo.Repo(context(), Roots([str(repo)]), str(repo))


def test_a_configuration_naming_too_many_filters_or_transports_is_refused(repo: Path) -> None:
    """Each filter or transport the configuration names costs overrides in every git command's environment:
    up to MAX_FILTERS of them (counted as filters and transports, whatever each costs) are neutralised, more
    are refused."""
    from shipcode_mcp.workspace.git.repo import MAX_FILTERS

    config = repo / ".git" / "config"
    base = config.read_text()
    config.write_text(base + "".join(f'[filter "f{number}"]\n\tsmudge = cat\n' for number in range(MAX_FILTERS)))
    with Tools(repo) as tools:
        assert tools.data("git_log", {"limit": 1})["commits"][0]["subject"] == "Rename util to helpers"
    config.write_text(base + "".join(f'[filter "f{number}"]\n\tsmudge = cat\n' for number in range(MAX_FILTERS - 10))
                      + "".join(f'[protocol "p{number}"]\n\tallow = always\n' for number in range(11)))
    with Tools(repo) as tools:
        assert tools.error("git_log") == (f"Refused: the git configuration of . names more than {MAX_FILTERS} "
                                          "filters or transports")


def test_a_git_file_git_cannot_read_gets_gits_own_answer(repo: Path) -> None:
    """A .git file that is not `gitdir: PATH`: nothing to walk there; git says what is wrong with it."""
    (repo / "lib").mkdir()
    (repo / "lib" / ".git").write_text("not a gitfile\n")
    with Tools(repo) as tools:
        assert tools.error("git_log", {"path": "lib"}).startswith("git failed: invalid gitfile format: ")
