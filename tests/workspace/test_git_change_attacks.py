"""The git tools that change a repository, against hostile repositories (as an untrusted clone delivers them).

A commit, a switch or a restore in plain git runs programs the repository names: hooks (in .git/hooks or
where core.hooksPath says), clean and smudge filters, the fsmonitor, the signing program, the editor; and
core.worktree points its writes at another folder. Each test first proves its attack works with plain git
(the canary written, or a file written outside), then the tools, through the server with the kernel sandbox
and in this process without it (shipcode-mcp's own settings alone), must not run it and must not write
outside the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from attack_support import Canary, direct, stale

from workspace_support import Tools, git, git_run, make_committer_repo, snapshot

NOT_RUN = "does not run programs a repository names"
HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-rewrite", "reference-transaction",
         "post-index-change", "post-checkout", "pre-auto-gc")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_committer_repo(tmp_path / "repo")


@pytest.fixture
def canary(tmp_path: Path) -> Canary:
    return Canary(tmp_path)


def _hooks(folder: Path, canary: Canary) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        hook = folder / name
        hook.write_text(f"#!/bin/sh\necho \"hook {name}\" >> '{canary.path}'\n")
        hook.chmod(0o755)


def _every_change(call: Any, repo: Path) -> None:
    """One call of each changing tool, each expected to succeed: add, commit (plain, all, amend), branch
    create and delete, switch there and back, restore, stash push and pop."""
    (repo / "README.md").write_text("changed\n")
    call("git_add", {"paths": ["README.md"]})
    call("git_commit", {"message": "Changed"})
    (repo / "README.md").write_text("again\n")
    call("git_commit", {"message": "Again", "all": True})
    call("git_commit", {"message": "Again, amended", "amend": True, "allow_empty": True})
    call("git_branch", {"action": "create", "name": "side", "start": "v1.0"})
    call("git_switch", {"branch": "side"})
    call("git_switch", {"branch": "main"})
    call("git_branch", {"action": "delete", "name": "side"})
    (repo / "README.md").write_text("discarded\n")
    call("git_restore", {"paths": ["README.md"]})
    (repo / "README.md").write_text("stashed\n")
    call("git_stash", {"action": "push"})
    call("git_stash", {"action": "pop"})


def _through_the_server(repo: Path) -> None:
    with Tools(repo, write=True) as tools:
        _every_change(tools.call, repo)


def _without_the_sandbox(repo: Path) -> None:
    def call(name: str, arguments: dict[str, Any]) -> None:
        failed, text = direct(repo, name, arguments)
        assert not failed, (name, text)

    _every_change(call, repo)


@pytest.mark.parametrize("where", ["core.hooksPath", ".git/hooks"])
def test_no_hook_runs_on_any_change(repo: Path, canary: Canary, tmp_path: Path, where: str) -> None:
    if where == "core.hooksPath":
        _hooks(repo / "tools" / "hooks", canary)  # committed with the project, as hook managers do
        git(repo, "config", "core.hooksPath", "tools/hooks")
    else:
        _hooks(repo / ".git" / "hooks", canary)
    (repo / "README.md").write_text("plain\n")
    git_run(repo, "commit", "-qam", "Plain")
    git_run(repo, "checkout", "-q", "HEAD~1")
    ran = canary.path.read_text()
    assert all(f"hook {name}" in ran for name in ("pre-commit", "commit-msg", "post-commit", "post-checkout"))
    canary.reset()
    git(repo, "-c", "core.hooksPath=/dev/null", "checkout", "-q", "main")
    _through_the_server(repo)
    _without_the_sandbox(repo)
    assert not canary.ran(), canary.path.read_text()
    assert git(repo, "log", "-1", "--format=%s").strip() == "Again, amended"


def test_a_clean_filter_never_runs_on_add_or_commit(repo: Path, canary: Canary) -> None:
    git(repo, "config", "filter.x.clean", str(canary.script))
    (repo / ".git" / "info" / "attributes").write_text("*.md filter=x\n")
    (repo / "README.md").write_text("changed\n")
    git_run(repo, "add", "--dry-run", "README.md")
    git_run(repo, "add", "README.md")
    assert canary.ran()  # the attack works: git add cleans the file through the filter
    canary.reset()
    git(repo, "-c", "filter.x.clean=", "reset", "-q")
    stale(repo)
    with Tools(repo, write=True) as tools:
        for name, arguments in (("git_add", {"paths": ["README.md"]}), ("git_commit", {"message": "x", "all": True}),
                                ("git_stash", {})):
            message = tools.error(name, arguments)
            assert (NOT_RUN in message or "shipcode-mcp does not run" in message) and "filter 'x'" in message, (
                name, message)
    failed, text = direct(repo, "git_add", {"paths": ["README.md"]})
    assert failed and NOT_RUN in text
    assert not canary.ran(), canary.path.read_text()
    assert git(repo, "-c", "filter.x.clean=", "diff", "--cached", "--name-only") == ""  # nothing was staged


@pytest.mark.parametrize("required", [False, True])
def test_a_smudge_filter_never_runs_on_switch_restore_or_stash(repo: Path, canary: Canary, required: bool) -> None:
    """A checkout that would write a file needing the filter is refused before anything is written (with a
    required filter, git itself would stop midway, some files switched and some not); what needs no filter
    still goes through."""
    git(repo, "config", "filter.x.smudge", str(canary.script))
    if required:
        git(repo, "config", "filter.x.required", "true")
    (repo / ".git" / "info" / "attributes").write_text("app.py filter=x\n")
    (repo / "src" / "app.py").write_text("changed\n")
    git_run(repo, "restore", "src/app.py")
    assert canary.ran()  # the attack works: restoring a file smudges it through the filter
    canary.reset()
    git(repo, "branch", "side", "HEAD~2")  # src/app.py differs there
    (repo / "src" / "app.py").write_text("changed\n")
    before = snapshot(repo)
    with Tools(repo, write=True) as tools:
        for name, arguments in (("git_restore", {"paths": ["src/app.py"]}), ("git_switch", {"branch": "side"}),
                                ("git_switch", {"branch": "HEAD~2", "detach": True}), ("git_stash", {})):
            message = tools.error(name, arguments)
            # Refused before any change: by the check of what it writes, or (a required filter) as the reading
            # tools refuse, when git reads the file to diff it.
            assert ("src/app.py, which needs the filter 'x'" in message and "nothing was changed" in message) or (
                required and "clean filter 'x' failed" in message), message
        assert snapshot(repo) == before
        (repo / "README.md").write_text("needs no filter\n")
        tools.call("git_restore", {"paths": ["README.md"]})
        (repo / "README.md").write_text("needs no filter either\n")
        assert "Saved working directory" in tools.text("git_stash", {"paths": ["README.md"]})
    assert not canary.ran(), canary.path.read_text()
    assert git(repo, "branch", "--show-current").strip() == "main"


def test_no_signing_program_fsmonitor_or_editor_runs(repo: Path, canary: Canary) -> None:
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "gpg.program", str(canary.command))
    assert git_run(repo, "commit", "--allow-empty", "-m", "signed?").returncode != 0
    assert canary.ran()  # the attack works: a commit runs the signing program (which fails here)
    canary.reset()
    git(repo, "config", "--unset", "commit.gpgSign")
    git(repo, "config", "core.editor", str(canary.command))
    git_run(repo, "commit", "--allow-empty")
    assert canary.ran()  # without a message, git opens the editor
    canary.reset()
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "core.fsmonitor", str(canary.command))
    git_run(repo, "status")
    assert canary.ran()  # the fsmonitor runs on every index read
    canary.reset()
    _through_the_server(repo)
    _without_the_sandbox(repo)
    assert not canary.ran(), canary.path.read_text()
    assert git(repo, "log", "-1", "--format=%G?").strip() == "N"  # not signed


def test_a_work_tree_configured_outside_is_never_written(repo: Path, tmp_path: Path) -> None:
    """core.worktree points git's checkout at another folder: plain git switch writes the project's files
    there. The repository is refused (as for the reading tools), and nothing outside changes."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine\n")
    git(repo, "config", "core.worktree", str(elsewhere))
    git_run(repo, "checkout", "-q", "-f", "v1.0")
    assert (elsewhere / "src" / "util.py").exists()  # the attack works: git wrote outside
    git(repo, "config", "--unset", "core.worktree")
    git(repo, "checkout", "-q", "-f", "main")
    git(repo, "config", "core.worktree", str(elsewhere))
    for path in list(elsewhere.rglob("*")):
        if path.is_file() and path.name != "keep.txt":
            path.unlink()
    before = snapshot(elsewhere)
    with Tools(repo, write=True) as tools:
        for name, arguments in (("git_switch", {"branch": "v1.0", "detach": True}), ("git_restore", {"paths": ["."]}),
                                ("git_stash", {}), ("git_commit", {"message": "x", "allow_empty": True})):
            assert "Refused" in tools.error(name, arguments), name
    assert snapshot(elsewhere) == before


def test_a_merge_driver_never_runs_on_stash_pop(repo: Path, canary: Canary) -> None:
    """A merge driver (merge.NAME.driver, applied by `merge=NAME` in the attributes) runs when a stash is applied
    over a conflicting change: refused before anything is changed, the stash kept."""
    git(repo, "config", "merge.evil.driver", f"{canary.command} %O %A %B")
    (repo / ".git" / "info" / "attributes").write_text("* merge=evil\n")

    def conflicting_stash() -> None:
        (repo / "README.md").write_text("stashed\n")
        git(repo, "stash", "push", "-q")
        (repo / "README.md").write_text("committed\n")
        git(repo, "commit", "-qam", "Conflicting")

    conflicting_stash()
    git_run(repo, "stash", "pop")
    assert canary.ran()  # the attack works: applying the stash runs the driver
    canary.reset()
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    git(repo, "stash", "clear")
    conflicting_stash()
    with Tools(repo, write=True) as tools:
        for action in ("pop", "apply"):
            message = tools.error("git_stash", {"action": action})
            assert "merge drivers (evil)" in message and "nothing was changed" in message, message
    failed, text = direct(repo, "git_stash", {"action": "pop"})
    assert failed and "merge drivers (evil)" in text
    assert not canary.ran(), canary.path.read_text()
    assert git(repo, "stash", "list").count("stash@") == 1 and (repo / "README.md").read_text() == "committed\n"


def test_a_filter_included_only_on_the_branch_switched_to_never_runs(repo: Path, canary: Canary) -> None:
    """includeIf onbranch: the configuration on the branch switched to names a clean filter. The status after
    the switch is asked of the repository read again (its filters neutralised; a status that cannot be given
    would not turn the switch, which was made, into an error)."""
    included = repo / ".git" / "side.config"  # inside the roots: the sandbox lets git read it
    included.write_text(f"[filter \"x\"]\n\tclean = {canary.script}\n")
    git(repo, "config", "includeIf.onbranch:side.path", str(included))
    (repo / ".git" / "info" / "attributes").write_text("*.md filter=x\n")
    git(repo, "branch", "side")
    git_run(repo, "checkout", "-q", "side")
    stale(repo)
    git_run(repo, "status")
    assert canary.ran()  # the attack works: on side, git status runs the filter
    canary.reset()
    git(repo, "checkout", "-q", "main")
    stale(repo)
    with Tools(repo, write=True) as tools:
        result = tools.call("git_switch", {"branch": "side"})
        assert result["structuredContent"]["status"] is None or result["structuredContent"]["status"]["branch"] == "side"
        tools.call("git_switch", {"branch": "main"})
    stale(repo)
    failed, text = direct(repo, "git_switch", {"branch": "side"})
    assert not failed, text
    assert not canary.ran(), canary.path.read_text()
    assert git(repo, "branch", "--show-current").strip() == "side"
