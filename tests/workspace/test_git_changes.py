"""git_add, git_commit, git_branch, git_switch, git_restore and git_stash on real repositories made by the
test, through the real server process, each result checked against what the real git says afterwards."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspace_support import Tools, git, git_env, git_run, make_committer_repo, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_committer_repo(tmp_path / "repo")


@pytest.fixture
def tools(repo: Path) -> Iterator[Tools]:
    with Tools(repo, write=True) as tools:
        yield tools


def git_bytes(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, env=git_env(), capture_output=True, check=True).stdout


def _status(repo: Path) -> list[str]:
    return git(repo, "-c", "core.quotePath=false", "status", "--porcelain", "--untracked-files=all").splitlines()


def _head(repo: Path, what: str = "%H") -> str:
    return git(repo, "log", "-1", f"--format={what}").strip()


# -- git_add ---------------------------------------------------------------------------------------------
def test_add_stages_new_changed_and_deleted_files(repo: Path, tools: Tools) -> None:
    (repo / "README.md").write_text("changed\n")
    (repo / "new file.txt").write_text("new\n")
    (repo / "src" / "app.py").unlink()
    (repo / "docs" / "extra.md").write_text("more\n")
    result = tools.call("git_add", {"paths": ["README.md", "new file.txt", "src/app.py", "docs"]})
    assert _status(repo) == ["M  README.md", "A  docs/extra.md", "A  \"new file.txt\"", "D  src/app.py"]
    assert result["content"][0]["text"] == ("Staged README.md, new file.txt, src/app.py, docs.\n\nStatus now:\n"
                                            "## main\nM  README.md\nA  docs/extra.md\nA  new file.txt\nD  src/app.py")
    status = result["structuredContent"]["status"]
    assert status["branch"] == "main" and [entry["path"] for entry in status["files"]] == [
        "README.md", "docs/extra.md", "new file.txt", "src/app.py"]


def test_add_takes_absolute_paths_uris_and_the_root_itself(repo: Path, tools: Tools) -> None:
    (repo / "a.txt").write_text("a\n")
    (repo / "src" / "b.txt").write_text("b\n")
    tools.call("git_add", {"paths": [str(repo / "a.txt")]})
    tools.call("git_add", {"paths": [(repo / "src" / "b.txt").as_uri()]})
    (repo / "c.txt").write_text("c\n")
    tools.call("git_add", {"paths": ["."]})
    assert _status(repo) == ["A  a.txt", "A  c.txt", "A  src/b.txt"]


def test_add_stages_a_link_itself_never_where_it_leads(repo: Path, tools: Tools) -> None:
    os.symlink("src/app.py", repo / "alias.py")
    tools.call("git_add", {"paths": ["alias.py"]})
    assert git(repo, "ls-files", "-s", "alias.py").startswith("120000 ")  # a link, as plain git add stages it
    assert _status(repo) == ["A  alias.py"]


def test_add_refuses_an_ignored_file_and_a_missing_one_and_stages_nothing(repo: Path, tools: Tools) -> None:
    (repo / "debug.log").write_text("ignored\n")
    (repo / "README.md").write_text("changed\n")
    message = tools.error("git_add", {"paths": ["README.md", "debug.log"]})
    assert "ignored by one of your .gitignore files" in message and "debug.log" in message
    assert "hint:" not in message
    assert "did not match any files" in tools.error("git_add", {"paths": ["missing.txt"]})
    assert _status(repo) == [" M README.md"]


def test_add_takes_paths_in_one_repository_only(tmp_path: Path) -> None:
    first, second = make_repo(tmp_path / "work" / "one"), make_repo(tmp_path / "work" / "two")
    (first / "a.txt").write_text("a\n")
    (second / "b.txt").write_text("b\n")
    with Tools(tmp_path / "work", write=True) as tools:
        message = tools.error("git_add", {"paths": ["one/a.txt", "two/b.txt"]})
        assert "two/b.txt is not in the git repository of one" in message
        tools.call("git_add", {"paths": ["two/b.txt"]})
    assert _status(first) == ["?? a.txt"] and _status(second) == ["A  b.txt"]


# -- git_commit --------------------------------------------------------------------------------------------
def test_commit_records_the_staged_changes(repo: Path, tools: Tools) -> None:
    parent = _head(repo)
    (repo / "README.md").write_text("# Demo\n\nChanged.\n")
    git(repo, "add", "README.md")
    (repo / "src" / "app.py").write_text("unstaged\n")
    result = tools.call("git_commit", {"message": "Change the readme\n\nWith a body."})
    data = result["structuredContent"]
    assert data["commit"] == _head(repo) and data["parents"] == [parent] and data["branch"] == "main"
    assert git(repo, "log", "-1", "--format=%B").strip() == "Change the readme\n\nWith a body."
    assert _head(repo, "%an <%ae>|%cn <%ce>") == "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>"
    assert (data["subject"], data["files_changed"], data["insertions"], data["deletions"]) == (
        "Change the readme", 1, 1, 1)
    assert data["stat"] == "1 file changed, 1 insertion(+), 1 deletion(-)"
    assert data["hooks_skipped"] == []
    assert result["content"][0]["text"] == (
        f"Committed {data['commit'][:12]} on main: Change the readme\n1 file changed, 1 insertion(+), 1 deletion(-)\n"
        "No hook ran: shipcode-mcp runs no program a repository names.\n\nStatus now:\n## main\n M src/app.py")
    assert _status(repo) == [" M src/app.py"]  # the unstaged change stays out


def test_commit_all_paths_amend_and_empty(repo: Path, tools: Tools) -> None:
    (repo / "README.md").write_text("one\n")
    (repo / "src" / "app.py").write_text("two\n")
    (repo / "untracked.txt").write_text("stays out\n")
    tools.call("git_commit", {"message": "Only the readme", "paths": ["README.md"]})
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["README.md"]
    assert _status(repo) == [" M src/app.py", "?? untracked.txt"]
    tools.call("git_commit", {"message": "Everything tracked", "all": True})
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["src/app.py"]
    assert _status(repo) == ["?? untracked.txt"]
    before = _head(repo, "%P")
    data = tools.data("git_commit", {"message": "Everything tracked, reworded", "amend": True})
    assert _head(repo, "%s|%P") == f"Everything tracked, reworded|{before}" and data["parents"] == [before]
    assert "Nothing to commit" in tools.error("git_commit", {"message": "Nothing"})
    data = tools.data("git_commit", {"message": "Empty", "allow_empty": True})
    assert data["files_changed"] == 0 and data["stat"] == ""
    assert "either all" in tools.error("git_commit", {"message": "x", "all": True, "paths": ["README.md"]})


def test_commit_with_an_author_and_without_an_identity(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"  # no global configuration, so no identity but the repository's
    home.mkdir()
    with Tools(repo, write=True, env={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}) as tools:
        _commit_with_an_author_and_without_an_identity(repo, tools)


def _commit_with_an_author_and_without_an_identity(repo: Path, tools: Tools) -> None:
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    git(repo, "config", "user.useConfigOnly", "true")  # no guess from the machine's user and host names
    (repo / "README.md").write_text("changed\n")
    git(repo, "add", "README.md")
    message = tools.error("git_commit", {"message": "Who?"})
    assert "no identity to commit as" in message and "pass author" in message
    tools.call("git_commit", {"message": "Me", "author": "Grace Hopper <grace@example.com>"})
    assert _head(repo, "%an <%ae>|%cn <%ce>") == "Grace Hopper <grace@example.com>|Grace Hopper <grace@example.com>"
    git(repo, "config", "user.name", "Ada Lovelace")
    git(repo, "config", "user.email", "ada@example.com")
    tools.call("git_commit", {"message": "For her", "author": "Grace Hopper <grace@example.com>", "allow_empty": True})
    assert _head(repo, "%an|%cn") == "Grace Hopper|Ada Lovelace"  # a configured committer stays the committer
    for bad in ("Grace", "Grace <a> <b>", "<grace@example.com>", "Grace\n<x>"):
        assert "Name <email>" in tools.error("git_commit", {"message": "x", "author": bad, "allow_empty": True}), bad


def test_commit_messages_that_are_refused(tools: Tools, repo: Path) -> None:
    head = _head(repo)
    assert "empty" in tools.error("git_commit", {"message": "  \n", "allow_empty": True})
    assert "control characters" in tools.error("git_commit", {"message": "a\x1b[31mred", "allow_empty": True})
    assert "longer than" in tools.error("git_commit", {"message": "é" * 60_000, "allow_empty": True})
    data = tools.data("git_commit", {"message": "--amend", "allow_empty": True})  # a message, never an option
    assert data["subject"] == "--amend" and data["parents"] == [head]


def test_commit_says_which_hooks_it_skipped(repo: Path, tools: Tools) -> None:
    for name in ("pre-commit", "commit-msg"):
        (repo / ".git" / "hooks" / name).write_text("#!/bin/sh\nexit 1\n")
        (repo / ".git" / "hooks" / name).chmod(0o755)
    result = tools.call("git_commit", {"message": "Skips", "allow_empty": True})
    assert result["structuredContent"]["hooks_skipped"] == ["pre-commit", "commit-msg"]
    assert "No hook ran: shipcode-mcp runs no program a repository names (skipped: pre-commit, commit-msg; run them " \
           "yourself if the project relies on them)." in result["content"][0]["text"]
    assert git_run(repo, "commit", "--allow-empty", "-m", "plain").returncode == 1  # plain git runs pre-commit


# -- git_branch and git_switch ---------------------------------------------------------------------------
def test_branch_list_create_and_delete(repo: Path, tools: Tools, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "config", "user.name", "Ada")
    git(clone, "config", "user.email", "ada@example.com")
    with Tools(clone, write=True) as cloned:
        data = cloned.data("git_branch", {})
        assert data["branches"] == [{"name": "main", "commit": _head(clone), "current": True, "upstream": "origin/main",
                                     "track": None, "subject": "Rename util to helpers"}]
        git(clone, "commit", "-q", "--allow-empty", "-m", "Ahead")
        assert cloned.text("git_branch", {}).startswith("* main ") and "[origin/main: ahead 1]" in cloned.text(
            "git_branch", {})
        names = [branch["name"] for branch in cloned.data("git_branch", {"remotes": True})["branches"]]
        assert names == ["main", "origin/HEAD", "origin/main"]
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    data = tools.data("git_branch", {"action": "create", "name": "old", "start": "v1.0"})
    assert data["commit"] == git(repo, "rev-parse", "v1.0^{commit}").strip()
    tools.call("git_branch", {"action": "create", "name": "feature"})
    assert git(repo, "branch", "--show-current").strip() == "main"  # created, not switched to
    assert git(repo, "rev-parse", "feature").strip() == _head(repo)
    assert "already exists" in tools.error("git_branch", {"action": "create", "name": "feature"})
    assert "not a valid branch name" in tools.error("git_branch", {"action": "create", "name": "a..b"})
    assert "starts with '-'" in tools.error("git_branch", {"action": "create", "name": "-D"})
    assert "does not name a commit" in tools.error("git_branch", {"action": "create", "name": "x", "start": "nowhere"})
    git(repo, "branch", "unmerged", first)
    git(repo, "checkout", "-q", "unmerged")
    git(repo, "commit", "-q", "--allow-empty", "-m", "Only here")
    git(repo, "checkout", "-q", "main")
    message = tools.error("git_branch", {"action": "delete", "name": "unmerged"})
    assert "not fully merged" in message
    assert "Deleted branch feature" in tools.text("git_branch", {"action": "delete", "name": "feature"})
    assert "checked out" in tools.error("git_branch", {"action": "delete", "name": "main"})
    assert git(repo, "branch", "--format=%(refname:short)").split() == ["main", "old", "unmerged"]


def test_switch_to_a_branch_create_one_and_detach(repo: Path, tools: Tools) -> None:
    git(repo, "branch", "feature", "v1.0")
    (repo / "notes.txt").write_text("carried over\n")
    result = tools.call("git_switch", {"branch": "feature"})
    assert result["content"][0]["text"] == "Switched to branch 'feature'\n\nStatus now:\n## feature\n?? notes.txt"
    assert git(repo, "branch", "--show-current").strip() == "feature"
    assert (repo / "src" / "util.py").exists() and (repo / "notes.txt").read_text() == "carried over\n"
    tools.call("git_switch", {"branch": "topic", "create": True, "start": "main"})
    assert git(repo, "branch", "--show-current").strip() == "topic"
    assert git(repo, "rev-parse", "topic").strip() == git(repo, "rev-parse", "main").strip()
    data = tools.data("git_switch", {"branch": "v1.0", "detach": True})
    assert data["detached"] and data["status"]["branch"] is None
    assert git(repo, "rev-parse", "HEAD").strip() == git(repo, "rev-parse", "v1.0^{commit}").strip()
    assert "invalid reference" in tools.error("git_switch", {"branch": "nowhere"})
    assert "only for create" in tools.error("git_switch", {"branch": "main", "start": "v1.0"})


def test_switch_never_overwrites_a_change(repo: Path, tools: Tools) -> None:
    git(repo, "branch", "old", "v1.0")
    (repo / "src" / "helpers.py").write_text("my unsaved work\n")  # not in the old branch: git would delete it
    message = tools.error("git_switch", {"branch": "old"})
    assert "would be overwritten" in message and "src/helpers.py" in message and "Nothing was changed" in message
    assert (repo / "src" / "helpers.py").read_text() == "my unsaved work\n"
    assert git(repo, "branch", "--show-current").strip() == "main"


def test_switch_creates_a_branch_tracking_a_remote_one(repo: Path, tmp_path: Path) -> None:
    git(repo, "branch", "release", "v1.0")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    with Tools(clone, write=True) as tools:
        tools.call("git_switch", {"branch": "release"})
    assert git(clone, "rev-parse", "--abbrev-ref", "release@{upstream}").strip() == "origin/release"


# -- git_restore -----------------------------------------------------------------------------------------
def test_restore_the_working_tree_returns_what_it_discarded(repo: Path, tools: Tools) -> None:
    (repo / "README.md").write_text("# Demo\n\nMy work.\n")
    (repo / "untracked.txt").write_text("kept\n")
    dry = tools.call("git_restore", {"paths": ["README.md", "untracked.txt"], "dry_run": True})
    assert (repo / "README.md").read_text() == "# Demo\n\nMy work.\n"
    assert dry["structuredContent"]["status"] is None and dry["structuredContent"]["dry_run"] is True
    assert "did not match" in tools.error("git_restore", {"paths": ["untracked.txt"]})
    result = tools.call("git_restore", {"paths": ["README.md"]})
    assert (repo / "README.md").read_text() == "# Demo\n\nA demo project.\n"
    assert (repo / "untracked.txt").read_text() == "kept\n"
    data = result["structuredContent"]
    assert data["files"] == [{"path": "README.md", "added": 1, "deleted": 1}]
    assert "-A demo project.\n+My work.\n" in data["diff"]
    assert result["content"][0]["text"].startswith(
        "Restored the working tree of 1 path from the index: 1 file changed back. The changes discarded:\n\n"
        "diff --git a/README.md b/README.md\n")
    # The discarded diff puts the work back, as it was.
    (repo / "lost.patch").write_text(data["diff"])
    git(repo, "apply", "lost.patch")
    assert (repo / "README.md").read_text() == "# Demo\n\nMy work.\n"


def test_restore_staged_both_and_from_a_source(repo: Path, tools: Tools) -> None:
    (repo / "README.md").write_text("staged\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("worktree\n")
    tools.call("git_restore", {"paths": ["README.md"], "target": "staged"})
    assert _status(repo) == [" M README.md"] and (repo / "README.md").read_text() == "worktree\n"
    git(repo, "add", "README.md")
    tools.call("git_restore", {"paths": ["README.md"], "target": "both"})
    assert _status(repo) == [] and (repo / "README.md").read_text() == "# Demo\n\nA demo project.\n"
    data = tools.data("git_restore", {"paths": ["src/app.py"], "source": "HEAD~2"})
    assert "def greet" not in (repo / "src" / "app.py").read_text()
    assert data["files"] == [{"path": "src/app.py", "added": 4, "deleted": 0}]
    assert _status(repo) == [" M src/app.py"]


# -- git_stash -------------------------------------------------------------------------------------------
def test_stash_push_list_pop_and_apply(repo: Path, tools: Tools) -> None:
    (repo / "README.md").write_text("wip\n")
    (repo / "new.txt").write_text("untracked\n")
    tools.call("git_stash", {"message": "first"})
    assert _status(repo) == ["?? new.txt"]
    tools.call("git_stash", {"include_untracked": True, "message": "second"})
    assert _status(repo) == []
    listed = tools.data("git_stash", {"action": "list"})["stashes"]
    assert [(entry["name"], entry["message"]) for entry in listed] == [
        ("stash@{0}", "On main: second"), ("stash@{1}", "On main: first")]
    result = tools.call("git_stash", {"action": "pop", "index": 1})
    assert result["content"][0]["text"].startswith("Applied stash@{1}: On main: first\n")
    assert (repo / "README.md").read_text() == "wip\n"
    assert len(tools.data("git_stash", {"action": "list"})["stashes"]) == 1
    git(repo, "checkout", "--", "README.md")
    tools.call("git_stash", {"action": "apply"})
    assert (repo / "new.txt").read_text() == "untracked\n"
    assert len(tools.data("git_stash", {"action": "list"})["stashes"]) == 1
    assert "no stash 3" in tools.error("git_stash", {"action": "pop", "index": 3})
    assert "only for push" in tools.error("git_stash", {"action": "pop", "message": "x"})


def test_stash_push_of_some_paths_and_a_conflicting_pop_keeps_the_stash(repo: Path, tools: Tools) -> None:
    (repo / "README.md").write_text("stashed\n")
    (repo / "docs" / "guide.md").write_text("stays\n")
    tools.call("git_stash", {"paths": ["README.md"]})
    assert _status(repo) == [" M docs/guide.md"]
    assert "No local changes to save" in tools.text("git_stash", {"paths": ["src"]})
    (repo / "README.md").write_text("conflicting\n")
    git(repo, "commit", "-qam", "Conflicting change")
    message = tools.error("git_stash", {"action": "pop"})
    assert "CONFLICT" in message and "The stash was kept." in message
    assert len(tools.data("git_stash", {"action": "list"})["stashes"]) == 1
    assert "needs merge" in tools.error("git_stash", {})  # git's own refusal, with a conflict in the index


# -- where git writes ---------------------------------------------------------------------------------
def test_a_root_inside_a_larger_repository_is_not_changed(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("changed\n")
    with Tools(repo / "src", write=True) as tools:
        assert tools.text("git_status") == "## main\n M app.py"  # reading works there
        message = tools.error("git_add", {"paths": ["app.py"]})
        assert "inside a larger git repository" in message
    assert _status(repo) == [" M src/app.py"]


def test_the_git_write_tools_need_allow_write(repo: Path) -> None:
    with Tools(repo) as tools:
        assert not {"git_add", "git_commit", "git_branch", "git_switch", "git_restore", "git_stash"} & set(tools.order)


# -- nothing lost, nothing misreported ------------------------------------------------------------------
def test_restore_keeps_what_it_discards_binary_or_beyond_the_diff(repo: Path, tools: Tools) -> None:
    """A restore's diff may be binary or cut: each discarded file's content is kept as a git object first, and
    git_show gives it back, byte for byte."""
    (repo / "logo.bin").write_bytes(bytes(range(256)) * 4)
    git(repo, "add", "logo.bin")
    git(repo, "commit", "-qm", "Logo")
    changed_binary = bytes(reversed(range(256))) * 4
    (repo / "logo.bin").write_bytes(changed_binary)
    big = "".join(f"my line {number}\n" for number in range(40_000))
    (repo / "README.md").write_text(big)
    data = tools.data("git_restore", {"paths": ["logo.bin", "README.md"]})
    assert data["truncated"] is True and {"path": "logo.bin", "added": None, "deleted": None} in data["files"]
    saved = {entry["path"]: entry["blob"] for entry in data["saved"]}
    assert set(saved) == {"logo.bin", "README.md"}
    assert git_bytes(repo, "cat-file", "blob", saved["logo.bin"]) == changed_binary
    assert git_bytes(repo, "cat-file", "blob", saved["README.md"]) == big.encode()
    assert tools.text("git_show", {"ref": saved["README.md"]}).startswith("my line 0\nmy line 1\n")
    assert (repo / "README.md").read_text() == "# Demo\n\nA demo project.\n"
    dry = tools.data("git_restore", {"paths": ["logo.bin"], "dry_run": True})
    assert dry["saved"] == [] and dry["files"] == []  # nothing left to discard


def test_restore_from_a_commit_never_writes_over_an_untracked_file(repo: Path, tools: Tools) -> None:
    git(repo, "rm", "-q", "--cached", "docs/guide.md")
    (repo / "docs" / "guide.md").write_text("precious untracked work\n")
    for arguments in ({"paths": ["docs/guide.md"], "source": "HEAD~1"}, {"paths": ["docs"], "target": "both"}):
        message = tools.error("git_restore", arguments)
        assert "write over files git does not track (docs/guide.md)" in message, message
    assert (repo / "docs" / "guide.md").read_text() == "precious untracked work\n"


def test_restore_before_the_first_commit(tmp_path: Path) -> None:
    root = tmp_path / "new"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    with Tools(root, write=True) as tools:
        for dry_run in (True, False):
            message = tools.error("git_restore", {"paths": ["a.txt"], "target": "staged", "dry_run": dry_run})
            assert "no commits yet" in message.lower() and "git rm --cached" in message


def test_a_private_config_stays_private_and_a_shared_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    git(repo, "branch", "release", "v1.0")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    (clone / ".git" / "config").chmod(0o600)  # a token in a remote's URL
    with Tools(clone, write=True) as tools:
        tools.call("git_switch", {"branch": "release"})  # writes the branch's upstream into the config
        assert "[branch \"release\"]" in (clone / ".git" / "config").read_text()
        assert (clone / ".git" / "config").stat().st_mode & 0o777 == 0o600
        git(clone, "config", "core.sharedRepository", "group")
        assert "is shared (core.sharedRepository=group)" in tools.error("git_branch", {"action": "create", "name": "x"})


def test_commit_reports_hooks_where_git_would_run_them(repo: Path, tools: Tools) -> None:
    (repo / ".husky").mkdir()
    (repo / ".husky" / "pre-commit").write_text("#!/bin/sh\nexit 1\n")
    (repo / ".husky" / "pre-commit").chmod(0o755)
    (repo / ".husky" / "commit-msg").write_text("#!/bin/sh\nexit 1\n")  # not executable: git ignores it
    git(repo, "config", "core.hooksPath", ".husky")
    data = tools.data("git_commit", {"message": "Husky", "allow_empty": True})
    assert data["hooks_skipped"] == ["pre-commit"]
    git(repo, "config", "log.decorate", "full")
    git(repo, "config", "log.excludeDecoration", "refs/heads/*")
    assert tools.data("git_commit", {"message": "Decorated", "allow_empty": True})["branch"] == "main"


def test_paths_that_are_links_to_folders_and_paths_in_git(repo: Path, tools: Tools) -> None:
    os.symlink("src", repo / "linkdir")
    tools.call("git_add", {"paths": ["linkdir"]})
    assert git(repo, "ls-files", "-s", "linkdir").startswith("120000 ")
    for name in ("git_add", "git_restore"):
        assert "inside a .git folder" in tools.error(name, {"paths": [".git/config"]})


def test_arguments_a_tool_does_not_use_are_refused(repo: Path, tools: Tools) -> None:
    assert "list takes remotes" in tools.error("git_branch", {"name": "x"})
    assert "remotes is for list" in tools.error("git_branch", {"action": "create", "name": "x", "remotes": True})
    assert "index is for pop and apply" in tools.error("git_stash", {"action": "list", "index": 1})
    assert "not both" in tools.error("git_stash", {"paths": ["README.md"], "path": "."})
    for author in ("Ada\x00 <a@b>", "Ada\r <a@b>"):
        assert "Name <email>" in tools.error("git_commit", {"message": "x", "author": author, "allow_empty": True})


def test_the_branch_list_on_a_detached_head(repo: Path, tools: Tools) -> None:
    git(repo, "checkout", "-q", "--detach", "v1.0")
    data = tools.data("git_branch", {})
    assert [branch["name"] for branch in data["branches"]] == ["main"] and not data["branches"][0]["current"]
    assert tools.text("git_branch", {}).splitlines()[0] == f"(HEAD detached at {git(repo, 'rev-parse', 'HEAD')[:12]})"


def test_a_change_waits_for_every_root_its_work_tree_spans(repo: Path) -> None:
    """Roots `repo/src` and `repo`: a stash asked through the first still writes all of repo's work tree, so it
    waits for a write holding the second root's lock (as write_file on repo/x would)."""
    import fcntl
    import threading

    from shipcode_mcp.workspace.roots import Roots
    from shipcode_mcp.workspace.tools import run
    from workspace_support import context

    (repo / "untracked.txt").write_text("someone is writing here\n")
    (repo / "src" / "app.py").write_text("changed\n")
    held, released = threading.Event(), threading.Event()

    def writer() -> None:
        fd = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held.set()
            threading.Event().wait(1.0)
            released.set()
        finally:
            os.close(fd)

    thread = threading.Thread(target=writer)
    thread.start()
    held.wait(10)
    run("git_stash", context(), Roots([str(repo / "src"), str(repo)]), action="push", message=None,
        include_untracked=True, index=0, paths=None, path=str(repo / "src"))
    assert released.is_set()  # it ran only once the other write was done
    thread.join()
    assert not (repo / "untracked.txt").exists() and (repo / "src" / "app.py").read_text() != "changed\n"
