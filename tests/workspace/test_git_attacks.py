"""The git attack suite: hostile repositories, as an untrusted clone or tarball delivers them, against
git_status, git_log, git_diff and git_show.

Families: programs the repository names (clean, process and smudge filters, hooks through
core.hooksPath and .git/hooks, filters pulled in by include.path and includeIf, a submodule's config,
a partial clone's lazy fetch); git metadata that leads outside (packed-refs, shallow, objects, refs,
a loose object, the index, alternates, commondir, a .git file, a linked worktree, core.worktree, a
FIFO, mailmap.file, attributes and excludes files, a submodule's .git file); a larger repository
holding the root; forged names (control and bidi characters in file names, refs and commit metadata).

Each test first proves its attack works with plain git (a secret from outside the roots in git's
output, or the canary written by a program git ran), so it cannot pass because its setup failed.
Then the server (with the kernel sandbox where the machine has one) and, where it matters, the tool
called in this process with the sandbox off (shipcode-mcp's own confinement of git alone) must refuse
or neutralise it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from attack_support import (
    ALL_TOOLS,
    Canary,
    Outside,
    count_runs,
    direct,
    everything,
    index_state,
    refused,
    sandbox_off,
    stale,
    waits_on_a_fifo,
)

from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace.git import commands as git_commands
from shipcode_mcp.workspace.git import repo as git_repo
from shipcode_mcp.workspace.git import walk as git_walk
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.text import printable
from workspace_support import Tools, context, git, git_run, make_repo, snapshot

NOT_RUN = "does not run programs a repository names"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def canary(tmp_path: Path) -> Canary:
    return Canary(tmp_path)


@pytest.fixture
def outside(tmp_path: Path) -> Outside:
    return Outside(tmp_path / "outside")


# -- programs the repository names ------------------------------------------------------------------
def _attack_works(repo: Path, canary: Canary, *command: str) -> None:
    """Plain git (`git status` unless `command` says otherwise) on a stale work tree runs the canary: the
    attack works. Then the canary is reset and the work tree made stale again, for the tools."""
    stale(repo)
    git_run(repo, *(command or ("status",)))
    assert canary.ran(), command
    canary.reset()
    stale(repo)


def _needs_the_filter(tools: Tools, repo: Path, canary: Canary, filter_name: str) -> None:
    """git_status and git_diff (work tree) refuse, naming the filter; what needs no filter still works."""
    for name, arguments in (("git_status", {}), ("git_diff", {}), ("git_diff", {"ref": "HEAD"})):
        message = tools.error(name, arguments)
        assert NOT_RUN in message and f"filter '{filter_name}'" in message, (name, message)
    subject = git(repo, "log", "-1", "--format=%s").strip()
    assert tools.data("git_log")["commits"][0]["subject"] == subject
    assert tools.text("git_show", {"ref": "HEAD", "path": "README.md"}) == "# Demo\n\nA demo project."
    assert subject in tools.text("git_show", {"ref": "HEAD"})
    assert tools.text("git_diff", {"staged": True}) == "No changes (staged, against HEAD)."
    assert not canary.ran(), canary.path.read_text()


def _refused_without_sandbox(repo: Path, canary: Canary, filter_name: str) -> None:
    stale(repo)
    for name in ("git_status", "git_diff"):
        failed, text = direct(repo, name)
        assert failed and NOT_RUN in text and f"filter '{filter_name}'" in text, (name, text)
    assert not canary.ran(), canary.path.read_text()


def _filter_never_runs(repo: Path, canary: Canary, filter_name: str) -> None:
    """Plain git status runs the filter; the tools that need it refuse, naming it, through the server and
    in this process without the sandbox, and what needs no filter still works."""
    _attack_works(repo, canary)
    with Tools(repo) as tools:
        _needs_the_filter(tools, repo, canary, filter_name)
    _refused_without_sandbox(repo, canary, filter_name)


def test_a_clean_filter_never_runs(repo: Path, canary: Canary) -> None:
    git(repo, "config", "filter.x.clean", str(canary.script))
    (repo / ".git" / "info" / "attributes").write_text("* filter=x\n")
    _filter_never_runs(repo, canary, "x")


def test_a_process_filter_never_runs(repo: Path, canary: Canary) -> None:
    """A long-running filter process, applied by a committed .gitattributes, under a name that no -c
    could spell (it holds '=' and a space)."""
    (repo / ".gitattributes").write_text("*.md filter=we=ird\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "Attributes")
    git(repo, "config", "filter.we=ird.process", str(canary.script))
    _filter_never_runs(repo, canary, "we=ird")


def test_a_smudge_filter_is_never_needed(repo: Path, canary: Canary) -> None:
    """Smudge runs on checkout only: no tool checks out, so every answer is whole and nothing runs."""
    git(repo, "config", "filter.x.smudge", str(canary.script))
    (repo / ".git" / "info" / "attributes").write_text("* filter=x\n")
    (repo / "README.md").unlink()
    git_run(repo, "checkout", "--", "README.md")
    assert canary.ran()  # the attack works on checkout
    canary.reset()
    (repo / "README.md").write_text("changed\n")
    stale(repo)
    with Tools(repo) as tools:
        assert tools.text("git_status") == "## main\n M README.md"
        assert tools.data("git_diff")["files"] == [{"path": "README.md", "added": 1, "deleted": 3}]
        assert tools.text("git_show", {"ref": "HEAD", "path": "README.md"}) == "# Demo\n\nA demo project."
        assert "Rename util" in tools.text("git_show", {"ref": "HEAD"})
    assert not direct(repo, "git_diff")[0] and not direct(repo, "git_status")[0]
    assert not canary.ran()


@pytest.mark.parametrize("include", ["include.path", "includeIf.gitdir:**.path", "includeIf.onbranch:main.path"])
def test_a_filter_pulled_in_by_an_include(repo: Path, canary: Canary, tmp_path: Path, include: str) -> None:
    """The filter is declared in a file the repository's config includes (kept inside .git, as a
    tarball would carry it): git's own reading of the configuration finds it."""
    (repo / ".git" / "extra.cfg").write_text(f'[filter "inc"]\n\tclean = {canary.script}\n')
    git(repo, "config", include, "extra.cfg")
    (repo / ".git" / "info" / "attributes").write_text("* filter=inc\n")
    _filter_never_runs(repo, canary, "inc")


def test_a_filter_in_a_submodules_config(repo: Path, canary: Canary, tmp_path: Path) -> None:
    """git status and git diff recurse into a submodule (a child git, with the submodule's own config):
    its filter names are not the superproject's, and are neutralised as well."""
    library = make_repo(tmp_path / "library")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    git(repo, "commit", "-qm", "Add lib")
    git(repo / "lib", "config", "filter.sub.clean", str(canary.script))
    (repo / ".git" / "modules" / "lib" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "modules" / "lib" / "info" / "attributes").write_text("* filter=sub\n")
    _filter_never_runs(repo, canary, "sub")
    with Tools(repo) as tools:  # the submodule's own files and history, which need no filter
        assert tools.text("git_show", {"ref": "HEAD", "path": "lib/README.md"}) == "# Demo\n\nA demo project."
        assert tools.data("git_log", {"path": "lib"})["commits"][0]["subject"] == "Rename util to helpers"
    assert not canary.ran(), canary.path.read_text()


def test_a_filter_in_a_submodule_of_the_old_layout(repo: Path, canary: Canary, tmp_path: Path) -> None:
    """A gitlink whose submodule keeps its .git folder in its work tree (the layout before git 1.7.8, or
    a crafted tarball): its config is not under .git/modules, so its filter names are not neutralised.
    The kernel sandbox stops the filter; git says so on stderr, and the tool refuses."""
    library = make_repo(tmp_path / "library")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    git(repo, "commit", "-qm", "Add lib")
    (repo / "lib" / ".git").unlink()
    (repo / ".git" / "modules" / "lib").rename(repo / "lib" / ".git")
    git(repo, "config", "--file", "lib/.git/config", "--unset", "core.worktree")
    git(repo / "lib", "config", "filter.old.clean", str(canary.script))
    (repo / "lib" / ".git" / "info" / "attributes").write_text("* filter=old\n")
    _attack_works(repo, canary)
    with Tools(repo) as tools:
        message = tools.error("git_status")
        assert NOT_RUN in message and "evil.sh" in message, message
    assert not canary.ran(), canary.path.read_text()


def test_a_partial_clones_lazy_fetch_runs_no_transport(tmp_path: Path, canary: Canary) -> None:
    """A blob missing from a partial clone makes git fetch it, running the configured upload-pack
    (remote.origin.uploadpack: any command). GIT_NO_LAZY_FETCH is git 2.44+; the repository also tries
    to allow the file transport again (protocol.file.allow=always)."""
    upstream = make_repo(tmp_path / "upstream")
    git(upstream, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-local", "--filter=blob:none", "--no-checkout", f"file://{upstream}", str(clone))
    git(clone, "config", "remote.origin.url", str(upstream))
    git(clone, "config", "remote.origin.uploadpack", str(canary.command))
    git(clone, "config", "protocol.file.allow", "always")
    _attack_works(clone, canary, "show", "HEAD:README.md")
    with Tools(clone) as tools:
        message = tools.error("git_show", {"ref": "HEAD", "path": "README.md"})
        assert "partial clone" in message and "shipcode-mcp runs no program a repository names" in message, message
        assert tools.data("git_log")["commits"][0]["subject"] == "Rename util to helpers"
    failed, text = direct(clone, "git_show", {"ref": "HEAD", "path": "README.md"})
    assert failed and "partial clone" in text
    assert not canary.ran()


def _hook(folder: Path, canary: Canary) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("post-index-change", "reference-transaction", "post-checkout", "pre-auto-gc", "post-rewrite"):
        hook = folder / name
        hook.write_text(f"#!/bin/sh\necho \"hook {name}\" >> '{canary.path}'\n")
        hook.chmod(0o755)


@pytest.mark.parametrize("where", ["core.hooksPath", ".git/hooks", ".git/hooks linked to a shared folder"])
def test_no_hook_runs_and_the_index_is_never_rewritten(repo: Path, canary: Canary, tmp_path: Path, where: str) -> None:
    """With a stale index, plain git status and git diff refresh and rewrite it (GIT_OPTIONAL_LOCKS=0 does
    not stop git diff), which runs post-index-change. No tool may write the index, so no hook runs. A
    hooks folder linked outside the roots is no reason to refuse the repository: git reads nothing there."""
    if where == "core.hooksPath":
        _hook(tmp_path / "hooks", canary)
        git(repo, "config", "core.hooksPath", str(tmp_path / "hooks"))
    elif where == ".git/hooks":
        _hook(repo / ".git" / "hooks", canary)
    else:
        _hook(tmp_path / "shared-hooks", canary)
        _link(repo / ".git" / "hooks", tmp_path / "shared-hooks")
    (repo / "README.md").write_text("changed\n")
    stale(repo)
    before = index_state(repo / ".git")
    git_run(repo, "diff")
    assert canary.ran() and index_state(repo / ".git") != before  # the attack works: git diff rewrote the index
    canary.reset()
    stale(repo)
    before = index_state(repo / ".git")
    with Tools(repo) as tools:
        for name, arguments in ALL_TOOLS:
            tools.call(name, arguments)
        assert tools.data("git_diff")["files"] == [{"path": "README.md", "added": 1, "deleted": 3}]
        assert tools.text("git_status") == "## main\n M README.md"
    for name, arguments in ALL_TOOLS:
        assert not direct(repo, name, arguments)[0], name
    assert not canary.ran(), canary.path.read_text()
    assert index_state(repo / ".git") == before


def test_nothing_in_the_git_folder_changes(repo: Path) -> None:
    """A stale index, with settings that make git write when it reads (untracked cache, split index,
    index version 4): after every tool the git folder is exactly as it was."""
    for key, value in (("core.untrackedCache", "true"), ("core.splitIndex", "true"), ("feature.manyFiles", "true"),
                       ("index.version", "4")):
        git(repo, "config", key, value)
    git(repo, "update-index", "--split-index")
    (repo / "src" / "app.py").write_text("changed\n")
    (repo / "new.txt").write_text("untracked\n")
    stale(repo)
    before = snapshot(repo / ".git")
    with Tools(repo) as tools:
        for name, arguments in ALL_TOOLS:
            tools.call(name, arguments)
    for name, arguments in ALL_TOOLS:
        direct(repo, name, arguments)
    assert snapshot(repo / ".git") == before
    git_run(repo, "status")
    assert snapshot(repo / ".git") != before  # plain git does write here


# -- metadata that leads outside ----------------------------------------------------------------------
def _link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target)


LEADS_OUT = "is a symbolic link that leads there"


@pytest.mark.parametrize("name", ["packed-refs", "shallow"])
def test_a_linked_packed_refs_or_shallow_file(repo: Path, outside: Outside, name: str) -> None:
    """git puts the first line of a malformed packed-refs or shallow file in its error message."""
    _link(repo / ".git" / name, outside.secret_file)
    assert outside.secret in git_run(repo, "for-each-ref" if name == "packed-refs" else "log").stderr
    refused(repo, f".git/{name} {LEADS_OUT}", outside.secret)


def test_a_linked_object_store(repo: Path, outside: Outside) -> None:
    _link(repo / ".git" / "objects", outside.git_dir / "objects")
    (repo / ".git" / "refs" / "heads" / "main").write_text(f"{outside.commit}\n")
    assert outside.secret in git_run(repo, "log", "-1").stdout
    refused(repo, f".git/objects {LEADS_OUT}", outside.secret)


def test_linked_refs_and_a_linked_loose_object(repo: Path, outside: Outside) -> None:
    """refs/ linked to an outside repository's refs; then one loose object linked to an outside one."""
    _link(repo / ".git" / "refs", outside.git_dir / "refs")
    assert git_run(repo, "rev-parse", "main").stdout.strip() == outside.commit
    refused(repo, f".git/refs {LEADS_OUT}", outside.commit)
    (repo / ".git" / "refs").unlink()  # back to a folder of its own, whose main is the outside commit
    (repo / ".git" / "refs" / "heads").mkdir(parents=True)
    (repo / ".git" / "refs" / "tags").mkdir()
    (repo / ".git" / "refs" / "heads" / "main").write_text(f"{outside.commit}\n")
    loose = f"{outside.commit[:2]}/{outside.commit[2:]}"
    (repo / ".git" / "objects" / outside.commit[:2]).mkdir(exist_ok=True)
    _link(repo / ".git" / "objects" / loose, outside.git_dir / "objects" / loose)
    assert outside.secret in git_run(repo, "cat-file", "-p", outside.commit).stdout
    refused(repo, f".git/objects/{loose} {LEADS_OUT}", outside.secret)


def test_a_linked_index(repo: Path, outside: Outside) -> None:
    """Another repository's index lists its file names (here one holds the secret)."""
    (outside.repo / f"notes-{outside.secret}.txt").write_text("x\n")
    git(outside.repo, "add", ".")
    _link(repo / ".git" / "index", outside.git_dir / "index")
    assert outside.secret in git_run(repo, "ls-files").stdout
    refused(repo, f".git/index {LEADS_OUT}", outside.secret)


@pytest.mark.parametrize("relative", [False, True])
def test_alternates_outside_the_roots(repo: Path, outside: Outside, relative: bool) -> None:
    store = outside.git_dir / "objects"
    line = os.path.relpath(store, repo / ".git" / "objects") if relative else str(store)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"# borrowed\n{line}\n")
    assert outside.secret in git_run(repo, "show", outside.commit).stdout
    (repo / ".git" / "refs" / "heads" / "stolen").write_text(f"{outside.commit}\n")
    expected = "reads objects from outside the workspace roots (.git/objects/info/alternates lists an object store there)"
    refused(repo, expected, outside.secret)


def test_alternates_of_alternates(tmp_path: Path, outside: Outside) -> None:
    """The store an alternate names may itself borrow from outside: git follows that too."""
    work = tmp_path / "work"
    repo = make_repo(work / "repo")
    middle = work / "middle-objects"
    (middle / "info").mkdir(parents=True)
    (middle / "info" / "alternates").write_text(f"{outside.git_dir / 'objects'}\n")
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{middle}\n")
    assert outside.secret in git_run(repo, "show", outside.commit).stdout
    with Tools(work) as tools:
        for name, arguments in (("git_log", {"path": "repo"}), ("git_show", {"ref": "HEAD", "path": "repo/README.md"})):
            message = tools.error(name, arguments)
            assert "middle-objects/info/alternates lists an object store there" in message, message


def test_a_linked_object_store_inside_the_roots_is_looked_at_too(tmp_path: Path, outside: Outside) -> None:
    """.git/objects is a link to a folder inside the root: allowed, and looked at as git reads it (its
    info/alternates is the repository's, wherever the link leads)."""
    work = tmp_path / "work"
    repo = make_repo(work / "repo")
    (repo / ".git" / "objects").rename(work / "store")
    (repo / ".git" / "objects").symlink_to(work / "store")
    with Tools(work) as tools:
        assert tools.data("git_log", {"path": "repo", "limit": 1})["commits"][0]["subject"] == "Rename util to helpers"
    (work / "store" / "info" / "alternates").write_text(f"{outside.git_dir / 'objects'}\n")
    assert outside.secret in git_run(repo, "show", outside.commit).stdout
    with Tools(work) as tools:
        message = tools.error("git_log", {"path": "repo"})
        assert message.endswith("reads objects from outside the workspace roots (store/info/alternates lists an "
                                "object store there)"), message


def test_alternates_inside_the_roots_work(tmp_path: Path) -> None:
    """A repository cloned with --shared from one beside it: both inside the root, so allowed."""
    work = tmp_path / "work"
    origin = make_repo(work / "origin")
    git(work, "clone", "-q", "--shared", str(origin), "shared")
    assert (work / "shared" / ".git" / "objects" / "info" / "alternates").exists()
    with Tools(work) as tools:
        assert [c["subject"] for c in tools.data("git_log", {"path": "shared", "limit": 1})["commits"]] == [
            "Rename util to helpers"]
        assert tools.text("git_show", {"ref": "HEAD", "path": "shared/src/helpers.py"}) == "def answer():\n    return 42"


def test_a_commondir_outside(repo: Path, outside: Outside) -> None:
    (repo / ".git" / "commondir").write_text(f"{outside.git_dir}\n")
    assert outside.secret in git_run(repo, "log", "-1").stdout
    refused(repo, "is not a .git folder inside the workspace roots", outside.secret)


def test_a_git_file_pointing_outside(tmp_path: Path, outside: Outside) -> None:
    """The root's .git is a file (`gitdir: PATH`), as submodules and worktrees have, naming an outside repository."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n\nA demo project.\n")
    (root / ".git").write_text(f"gitdir: {outside.git_dir}\n")
    assert outside.secret in git_run(root, "log", "-1").stdout
    refused(root, "is not a .git folder inside the workspace roots", outside.secret)


def test_a_linked_worktree_of_an_outside_repository(repo: Path, outside: Outside) -> None:
    git(outside.repo, "worktree", "add", "-q", "-b", "side", str(outside.path / "side"))
    (repo / "wt").mkdir()
    (repo / "wt" / ".git").write_text((outside.path / "side" / ".git").read_text())
    assert outside.secret in git_run(repo / "wt", "log", "-1").stdout
    with Tools(repo) as tools:
        for name, arguments in (("git_log", {"path": "wt"}), ("git_diff", {"path": "wt"}),
                                ("git_show", {"ref": "HEAD", "path": "wt"})):
            result = tools.call(name, arguments, error=True)
            assert "is not a .git folder inside the workspace roots" in result["content"][0]["text"]
            assert outside.secret not in everything(result)


def test_a_work_tree_configured_outside(repo: Path, outside: Outside) -> None:
    """core.worktree makes git list and diff another folder's files."""
    git(repo, "config", "core.worktree", str(outside.path))
    assert "secret.txt" in git_run(repo, "status", "--porcelain").stdout
    with Tools(repo) as tools:
        for name, arguments in ALL_TOOLS:
            result = tools.call(name, arguments, error=True)
            assert "secret.txt" not in everything(result) and outside.secret not in everything(result)


@pytest.mark.parametrize(("fifo", "command"), [("packed-refs", "for-each-ref"), ("rebase-merge/head-name", "status"),
                                               ("sequencer/todo", "status"), ("remotes/up", "status")])
def test_a_fifo_in_the_git_folder(repo: Path, fifo: str, command: str) -> None:
    """git blocks reading a FIFO packed-refs (until our deadline): refused at once instead. So in the folders
    git status reads beyond rev-parse's list (a rebase's or a cherry-pick's state, a remote's file)."""
    (repo / ".git" / fifo).parent.mkdir(exist_ok=True)
    (repo / ".git" / fifo).unlink(missing_ok=True)
    os.mkfifo(repo / ".git" / fifo)
    if fifo.startswith("remotes/"):  # the upstream's remote has no config: git looks for .git/remotes/up
        git(repo, "config", "branch.main.remote", "up")
        git(repo, "config", "branch.main.merge", "refs/heads/main")
    waits_on_a_fifo(repo, "git", command)
    with Tools(repo) as tools:
        for name, arguments in ALL_TOOLS:
            message = tools.call(name, arguments, error=True, timeout=10)["content"][0]["text"]
            assert f".git/{fifo} is a named pipe (FIFO)" in message, message


@pytest.mark.parametrize(("name", "linked"), [("config", False), ("commondir", False), ("config", True)])
def test_a_fifo_where_git_starts(repo: Path, name: str, linked: bool) -> None:
    """git reads config and commondir before anything else, and so did the repository check (on commondir its
    worker thread waited for ever: a plain open() waits for a writer). A FIFO there, or a link to one inside
    the roots (only where it leads tells), is refused at once, before git starts, not after its deadline."""
    (repo / ".git" / name).unlink(missing_ok=True)
    os.mkfifo(repo / "pipe" if linked else repo / ".git" / name)
    if linked:
        (repo / ".git" / name).symlink_to("../pipe")
    waits_on_a_fifo(repo, "git", "status")
    what = "a symbolic link to a named pipe (FIFO)" if linked else "a named pipe (FIFO)"
    with Tools(repo) as tools:
        for tool, arguments in ALL_TOOLS:
            message = tools.call(tool, arguments, error=True, timeout=5)["content"][0]["text"]
            assert message.endswith(f"is not one git can read: .git/{name} is {what}"), message


def test_a_fifo_named_head_on_the_way_to_the_git_folder(repo: Path) -> None:
    """Walking up to the .git, git asks of each folder whether it is a bare repository and opens its HEAD."""
    (repo / "docs" / "deep").mkdir()
    os.mkfifo(repo / "docs" / "HEAD")
    waits_on_a_fifo(repo / "docs" / "deep", "git", "status")
    with Tools(repo) as tools:
        message = tools.call("git_log", {"path": "docs/deep"}, error=True, timeout=5)["content"][0]["text"]
        assert message == ("Refused: the git repository of docs/deep is not one git can read: "
                           "docs/HEAD is a named pipe (FIFO)"), message
        assert tools.data("git_log", {"limit": 1})["commits"][0]["subject"] == "Rename util to helpers"


def test_a_fifo_git_file(repo: Path) -> None:
    """A submodule's `.git` file swapped for a FIFO: git stats it and passes on, but reading it as a gitfile
    (as the check did, after a racy isfile) waits for a writer for ever. Refused at once, naming it."""
    (repo / "lib").mkdir()
    os.mkfifo(repo / "lib" / ".git")
    waits_on_a_fifo(repo, "cat", str(repo / "lib" / ".git"))
    with Tools(repo) as tools:
        message = tools.call("git_log", {"path": "lib"}, error=True, timeout=5)["content"][0]["text"]
        assert message == "Refused: the git repository of lib is not one git can read: lib/.git is a named pipe (FIFO)"
        assert tools.data("git_log", {"limit": 1})["commits"][0]["subject"] == "Rename util to helpers"


def test_a_mailmap_file_outside(repo: Path, outside: Outside) -> None:
    """mailmap.file names an outside file; git show would put its names on Author lines."""
    (outside.path / "mailmap").write_text(f"{outside.secret} <ada@example.com>\n")
    git(repo, "config", "mailmap.file", str(outside.path / "mailmap"))
    git(repo, "config", "mailmap.blob", "HEAD:README.md")
    assert outside.secret in git_run(repo, "show", "-s", "HEAD").stdout
    with Tools(repo) as tools:
        for name, arguments in (*ALL_TOOLS, ("git_show", {"ref": "v1.0"})):
            result = tools.call(name, arguments)
            assert outside.secret not in everything(result), name
        assert "Author: Ada Lovelace <ada@example.com>" in tools.text("git_show", {"ref": "HEAD"})


def test_attributes_and_excludes_files_outside(repo: Path, outside: Outside) -> None:
    """The repository's config points core.attributesFile and core.excludesFile at outside files: git
    echoes bad attribute lines (their content) on stderr, and an excludes file decides what is listed."""
    (outside.path / "attributes").write_text(f"* {outside.secret}$\n")
    (outside.path / "ignore").write_text("guess.txt\n")
    git(repo, "config", "core.attributesFile", str(outside.path / "attributes"))
    git(repo, "config", "core.excludesFile", str(outside.path / "ignore"))
    (repo / "guess.txt").write_text("untracked\n")
    assert outside.secret in git_run(repo, "check-attr", "-a", "README.md").stderr
    assert "guess.txt" not in git_run(repo, "status", "--porcelain").stdout
    with Tools(repo) as tools:
        assert tools.text("git_status") == "## main\n?? guess.txt"
    with sandbox_off(), git_repo.Repo(context(), Roots([str(repo)]), str(repo)) as ours:
        done = ours.run(["check-attr", "-a", "--", "README.md"])
    assert outside.secret not in done.stderr and outside.secret not in done.stdout.decode()


def test_a_submodules_git_file_pointing_outside(repo: Path, outside: Outside, tmp_path: Path) -> None:
    """The submodule's .git file names an outside repository; with diff.submodule=log (set by the
    repository) plain git diff prints that repository's commit subjects."""
    first = git(outside.repo, "rev-list", "--max-parents=0", "HEAD").strip()
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(outside.repo), "lib")
    git(repo / "lib", "checkout", "-q", first)
    git(repo, "commit", "-qam", "Add lib")
    (outside.repo / "more.txt").write_text("more\n")
    git(outside.repo, "add", "more.txt")
    git(outside.repo, "commit", "-qm", f"Later work {outside.secret}")
    git(repo, "config", "diff.submodule", "log")
    (repo / "lib" / ".git").write_text(f"gitdir: {outside.git_dir}\n")
    assert outside.secret in git_run(repo, "diff").stdout
    with Tools(repo) as tools:
        for name, arguments in ALL_TOOLS:  # an answer, or (in the sandbox) an error: never the subjects
            result = tools.process.call_tool(name, arguments, 30)
            assert outside.secret not in everything(result), name
        assert tools.error("git_log", {"path": "lib"}).endswith("(a .git link or file pointing elsewhere, a linked "
                                                                "worktree of an outside repository, or a bare "
                                                                "repository inside the project)")


# -- a root inside a larger repository ------------------------------------------------------------------
def test_a_larger_repository_is_used_only_through_its_own_git_folder(repo: Path, outside: Outside) -> None:
    """The root is a folder of a larger repository: its .git lies outside the roots, legitimately, but
    what git reads must be that .git's own: no link out of it, no alternates at all."""
    (repo / "docs" / "guide.md").write_text("changed\n")
    with Tools(repo / "docs") as tools:
        assert tools.text("git_status") == "## main\n M guide.md"
    own = repo / ".git" / "info" / "exclude"
    own.unlink()
    own.symlink_to("../description")  # a link that stays inside the .git: fine
    with Tools(repo / "docs") as tools:
        assert tools.text("git_status") == "## main\n M guide.md"
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{outside.git_dir / 'objects'}\n")
    assert outside.secret in git_run(repo / "docs", "show", outside.commit).stdout
    with Tools(repo / "docs") as tools:
        for name, arguments in ALL_TOOLS[:3]:
            message = tools.error(name, arguments)
            assert "borrows objects from another store (.git/objects/info/alternates)" in message, message
    (repo / ".git" / "objects" / "info" / "alternates").unlink()
    _link(repo / ".git" / "packed-refs", outside.secret_file)
    with Tools(repo / "docs") as tools:
        message = tools.error("git_log")
        assert message.endswith("reads outside its own .git folder: .git/packed-refs is a symbolic link that leads there")
        assert outside.secret not in message


def test_a_larger_repository_whose_work_tree_is_elsewhere(tmp_path: Path, outside: Outside) -> None:
    """A .git inside the root whose core.worktree is a folder above the root: git would treat the root
    as a folder of a larger work tree. Refused: a larger repository is only used through its own .git."""
    root = tmp_path / "root"
    repo = make_repo(root)
    git(repo, "config", "core.worktree", str(tmp_path))
    assert git_run(root, "rev-parse", "--show-toplevel").stdout.strip() == str(tmp_path)
    with Tools(root) as tools:
        assert "is not a .git folder inside the workspace roots" in tools.error("git_status")


# -- forged names ---------------------------------------------------------------------------------------
FORGED = "evil\n?? fake.txt\u202etxt.exe"
SUBJECT = "Subject \x1b[2J\u202ereversed"
AUTHOR = "Mallory\u202e"
BRANCH = "ma\u202ein"


def test_names_and_metadata_cannot_forge_lines(repo: Path) -> None:
    """A file name with a line break and a bidi override, a branch and a commit whose subject and author
    hold controls: tool text shows them masked (one line per entry), structuredContent keeps them."""
    (repo / FORGED).write_text("content\twith a tab\n")
    git(repo, "add", "--", FORGED)
    git(repo, "commit", "-qm", SUBJECT, "--author", f"{AUTHOR} <m@example.com>")
    git(repo, "branch", "-m", "main", BRANCH)
    (repo / FORGED).write_text("content\twith a tab\nmore\n")
    (repo / f"new{FORGED}").write_text("untracked\n")
    shown = printable(FORGED)
    with Tools(repo) as tools:
        status = tools.call("git_status")
        assert status["content"][0]["text"].split("\n") == [
            f"## {printable(BRANCH)}", f" M {shown}", f"?? new{shown}"]
        files = status["structuredContent"]["repositories"][0]["files"]
        assert [f["path"] for f in files] == [FORGED, f"new{FORGED}"]

        diff = tools.call("git_diff")
        text = diff["content"][0]["text"]
        assert "\u202e" not in text and "fake.txt" in text
        assert text.split("\n")[:2] == ["1 file changed (unstaged, working tree against the index), +1 -0:",
                                        f"  {shown} (+1 -0)"]
        assert " content\twith a tab" in text.split("\n") and "+more" in text.split("\n")  # content lines as they are
        assert not any(line.startswith("?? ") for line in text.split("\n"))
        assert diff["structuredContent"]["files"][0]["path"] == FORGED

        log = tools.text("git_log", {"limit": 1})
        assert "\u202e" not in log and "\x1b" not in log and len(log.split("\n")) == 2
        assert log.split("\n")[0].endswith(f"{printable(AUTHOR)}: {printable(SUBJECT)}")

        show = tools.call("git_show", {"ref": "HEAD"})
        text = show["content"][0]["text"]
        assert "\u202e" not in text and "\x1b" not in text
        assert not any(line.startswith("?? ") for line in text.split("\n"))
        assert any("fake.txt" in line and line.endswith("| 1 +") for line in text.split("\n"))  # --stat
        assert " content\twith a tab" not in text and "+content\twith a tab" in text
        assert "fake.txt\u202etxt.exe" in show["structuredContent"]["text"]  # as git wrote it

        listing = tools.text("git_show", {"ref": "HEAD", "path": "."})
        assert shown in listing.split("\n") and "\u202e" not in listing

        assert "\u202e" not in tools.error("git_show", {"ref": "v\u202e1"})
        missing = tools.error("git_show", {"ref": "HEAD~1", "path": FORGED})
        assert missing == f"{shown} does not exist in HEAD~1"


def test_the_patch_masker_keeps_content_and_masks_headers() -> None:
    patch = ("diff --git a/x\u202ey b/x\u202ey\nindex 1..2 100644\n--- a/x\u202ey\n+++ b/x\u202ey\n"
             "@@ -1,2 +1,2 @@ def f(\u202e):\n \tkeep\u202e\n-old\x1b[0m\n+new\r\n\\ No newline at end of file\n\n"
             " last\ndiff --git a/z b/z\nrename from z\u202e\n")
    masked = git_commands.mask_patch(patch).split("\n")
    assert masked[0] == printable("diff --git a/x\u202ey b/x\u202ey") and masked[3] == printable("+++ b/x\u202ey")
    assert masked[4] == printable("@@ -1,2 +1,2 @@ def f(\u202e):")
    assert masked[5:11] == [" \tkeep\u202e", "-old\x1b[0m", "+new\r", "\\ No newline at end of file", "", " last"]
    assert masked[12] == printable("rename from z\u202e")


def test_the_check_comes_before_any_command_reads_refs(repo: Path, outside: Outside) -> None:
    """The check runs before any command that reads refs or objects: even a git that would print what it
    read (the first line of packed-refs) is never started on such a repository."""
    _link(repo / ".git" / "packed-refs", outside.secret_file)
    with sandbox_off(), pytest.raises(ToolError, match="packed-refs is a symbolic link"):
        git_repo.Repo(context(), Roots([str(repo)]), str(repo))
    assert stat.S_ISLNK(os.lstat(repo / ".git" / "packed-refs").st_mode)


# -- a remembered repository -----------------------------------------------------------------------
def test_a_filter_configured_after_the_repository_was_remembered_never_runs(
        repo: Path, canary: Canary, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the files git locates a repository and reads its configuration from are unchanged, a call runs
    git once, for its own command. A filter configured afterwards changes .git/config: read again, and
    neutralised. Checked without the kernel sandbox, shipcode-mcp's own confinement alone."""
    monkeypatch.setattr(git_walk, "RACY_NS", 0)  # every file settled: remembered at once
    started = count_runs(monkeypatch)
    assert direct(repo, "git_status")[0] is False
    assert started == ["rev-parse", "config", "status"]
    started.clear()
    assert direct(repo, "git_status")[0] is False and direct(repo, "git_log")[0] is False
    assert direct(repo, "git_diff")[0] is False
    assert started == ["status", "log", "diff"]
    started.clear()
    git(repo, "config", "filter.x.clean", str(canary.script))
    (repo / ".git" / "info" / "attributes").write_text("* filter=x\n")
    stale(repo)
    for name in ("git_status", "git_diff"):
        failed, text = direct(repo, name)
        assert failed and NOT_RUN in text and "filter 'x'" in text, (name, text)
    assert started[:2] == ["rev-parse", "config"]
    assert not canary.ran(), canary.path.read_text()


def test_a_configuration_with_includes_is_never_remembered(repo: Path, canary: Canary,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The files a configuration includes are not watched, so such a configuration is read on every call: a
    filter that appears in an included file alone is neutralised."""
    monkeypatch.setattr(git_walk, "RACY_NS", 0)
    included = repo / ".git" / "more.config"
    included.write_text("[core]\n\tabbrev = 12\n")
    git(repo, "config", "include.path", "more.config")
    started = count_runs(monkeypatch)
    assert direct(repo, "git_status")[0] is False and direct(repo, "git_status")[0] is False
    assert started == ["rev-parse", "config", "status"] * 2
    included.write_text(f"[filter \"y\"]\n\tclean = {canary.script}\n")
    (repo / ".git" / "info" / "attributes").write_text("* filter=y\n")
    _attack_works(repo, canary)
    failed, text = direct(repo, "git_status")
    assert failed and NOT_RUN in text and "filter 'y'" in text, text
    assert not canary.ran(), canary.path.read_text()


@pytest.mark.parametrize("where", ["packed-refs", "a loose object", "a link whose target moves", "alternates",
                                   "a FIFO among the refs", "a folder moved in from hooks",
                                   "a folder replaced, its times set back"])
def test_a_remembered_repository_is_still_checked_on_every_call(repo: Path, outside: Outside, where: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The git folders are looked at on every call: a folder is read again once it changed (its findings are
    remembered only while its entries are the same), so a link to the outside that appears later, at the
    top of .git or deep in objects/, is refused at once."""
    monkeypatch.setattr(git_walk, "RACY_NS", 0)
    loose = f"{outside.commit[:2]}/{outside.commit[2:]}"
    (repo / ".git" / "objects" / outside.commit[:2]).mkdir(exist_ok=True)
    if where == "a link whose target moves":  # .git/packed-refs leads into the root, at first
        (repo / "store").mkdir()
        (repo / "store" / "packed-refs").write_text("")
        (repo / ".git" / "packed-refs").symlink_to(repo / "store" / "packed-refs")
    assert direct(repo, "git_status")[0] is False
    assert any(key[0] == str(repo / ".git" / "objects" / outside.commit[:2]) for key in git_walk._scanned)
    if where != "a link whose target moves":  # no link in .git: the whole walk is remembered, and used as it is
        tree = git_walk._trees[(str(repo / ".git"), False)]
        assert direct(repo, "git_status")[0] is False and git_walk._trees[(str(repo / ".git"), False)] is tree
    if where == "a link whose target moves":  # nothing in .git changes: the folder on the way is swapped
        (outside.path / "packed-refs").write_text(f"{outside.secret}\n")
        (repo / "store").rename(repo / "store-before")
        (repo / "store").symlink_to(outside.path)
        expected = f".git/packed-refs {LEADS_OUT}"
    elif where == "packed-refs":
        _link(repo / ".git" / "packed-refs", outside.secret_file)
        expected = f".git/packed-refs {LEADS_OUT}"
    elif where == "alternates":
        (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{outside.git_dir / 'objects'}\n")
        (repo / ".git" / "refs" / "heads" / "stolen").write_text(f"{outside.commit}\n")
        expected = "reads objects from outside the workspace roots (.git/objects/info/alternates lists an object store there)"
    elif where == "a FIFO among the refs":
        os.mkfifo(repo / ".git" / "refs" / "heads" / "waiting")
        expected = ".git/refs/heads/waiting is a named pipe (FIFO)"
    elif where == "a folder moved in from hooks":  # made where the walk never looks, then moved over objects/xx
        stash = repo / ".git" / "hooks" / "stash"
        stash.mkdir()
        for entry in (repo / ".git" / "objects" / outside.commit[:2]).iterdir():  # the repository's own objects there
            entry.rename(stash / entry.name)
        (stash / outside.commit[2:]).symlink_to(outside.git_dir / "objects" / loose)
        stash.rename(repo / ".git" / "objects" / outside.commit[:2])
        (repo / ".git" / "refs" / "heads" / "main").write_text(f"{outside.commit}\n")
        expected = f".git/objects/{loose} {LEADS_OUT}"
    elif where == "a folder replaced, its times set back":  # only its inode and change time tell it apart
        objects, folder = repo / ".git" / "objects", repo / ".git" / "objects" / outside.commit[:2]
        times = {path: (path.stat().st_atime_ns, path.stat().st_mtime_ns) for path in (objects, folder)}
        saved = repo / ".git" / "hooks" / "saved"
        saved.mkdir()
        for entry in folder.iterdir():  # the repository's own objects there, put back in the new folder
            entry.rename(saved / entry.name)
        folder.rmdir()
        folder.mkdir()
        for entry in saved.iterdir():
            entry.rename(folder / entry.name)
        (folder / outside.commit[2:]).symlink_to(outside.git_dir / "objects" / loose)
        for path, (atime, mtime) in times.items():
            os.utime(path, ns=(atime, mtime))
        assert folder.stat().st_mtime_ns == times[folder][1]
        (repo / ".git" / "refs" / "heads" / "main").write_text(f"{outside.commit}\n")
        expected = f".git/objects/{loose} {LEADS_OUT}"
    else:
        (repo / ".git" / "refs" / "heads" / "main").write_text(f"{outside.commit}\n")
        _link(repo / ".git" / "objects" / loose, outside.git_dir / "objects" / loose)
        expected = f".git/objects/{loose} {LEADS_OUT}"
    for name, arguments in ALL_TOOLS:
        failed, text = direct(repo, name, arguments)
        assert failed and expected in text and outside.secret not in text, (name, text)


def test_a_file_changed_just_now_is_not_trusted_to_be_remembered(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A config written less than _RACY_NS ago could change again within the same timestamp: until it
    settles, every call asks git again."""
    git(repo, "config", "core.abbrev", "12")  # now: racy
    started = count_runs(monkeypatch)
    assert direct(repo, "git_status")[0] is False and direct(repo, "git_status")[0] is False
    assert started == ["rev-parse", "config", "status"] * 2
