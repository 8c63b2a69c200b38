"""The git tools that change a repository (with --allow-write): git_add, git_commit, git_branch, git_switch,
git_restore, git_stash.

They run the real git in the sandbox of the reading tools (`repo.Repo`: the repository checked, every
program it names neutralised, no hook, filter, fsmonitor, editor, pager or signing program can run), with
one right more: git may write in the work tree and the git folders of that repository (`Repo.change`), and
nowhere else, so only in a repository whose .git folder is inside the roots. Refs and names are checked as
the reading tools check them; paths are resolved inside the roots (a link is itself, as git sees it) and
passed after `--` as literal pathspecs. Each change holds the root's write lock (writes.root_lock), so it
never interleaves with write_file, edit_file or apply_patch. No push, fetch or pull: nothing leaves the
machine. Each result ends with the repository's status after the change.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError, inside
from ..text import cut_output, plural, printable, result
from ..writes import root_lock
from .commands import mask_patch, parse_numstat, parse_status, status_text
from .repo import DIFF_FLAGS, MAX_STATUS_ENTRIES, Repo, check_ref

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ...context import Context
    from ...primitives import ToolResult
    from ..process import Completed
    from ..roots import Roots

MAX_MESSAGE_BYTES = 100_000
"""A commit or stash message travels as one argument; the kernel takes at most 128 KiB in one."""
MAX_ERROR_LINES = 40
_IDENTITY_UNKNOWN = re.compile(r"Author identity unknown|Committer identity unknown|unable to auto-detect email address"
                               r"|empty ident name|no email was given|invalid ident name")
_AUTHOR = re.compile(r"[^<>\n]*[^<>\s][^<>\n]* <[^<>\n]*>")
_COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-rewrite", "reference-transaction",
                 "post-index-change", "post-checkout", "pre-auto-gc")
"""The hooks a commit, switch, restore or stash would run in plain git (none runs here)."""


class _Changing:
    """A repository opened to change it: the Repo (made with `write`) with its root's write lock held."""

    def __init__(self, ctx: Context, roots: Roots, target: str) -> None:
        self.repo = Repo(ctx, roots, target, write=True)
        self._lock = root_lock(ctx, roots, self.repo.root, roots.display(self.repo.root))

    def __enter__(self) -> Repo:
        try:
            self._lock.__enter__()
        except BaseException:
            self.repo.close()
            raise
        return self.repo

    def __exit__(self, *exc: Any) -> None:
        try:
            self._lock.__exit__(*exc)
        finally:
            self.repo.close()


def _repository(roots: Roots, path: str | None) -> str:
    """The folder whose repository a call changes: `path` (default: the first root), resolved in the roots."""
    return roots.resolve(path) if path is not None else roots.first


def _entries(roots: Roots, paths: list[str] | None) -> list[str]:
    """Each path named as git sees it (a link is itself: `Roots.entry`), inside the roots; before anything else."""
    return [roots.entry(given) for given in paths or ()]


def _pathspecs(roots: Roots, repo: Repo, reals: list[str], *, changing: bool = True) -> list[str]:
    """`--` and each path (`_entries`) as a literal pathspec relative to git's folder, inside the repository's
    work tree: marked `:(literal)` for a command that changes (`Repo.change`: pathspec magic is on there), as
    it is for the others (GIT_LITERAL_PATHSPECS)."""
    specs = []
    for real in reals:
        if not inside(real, repo.top):
            raise ToolError(f"{printable(roots.display(real))} is not in the git repository of "
                            f"{printable(roots.display(repo.top))}; one call changes one repository")
        relative = os.path.relpath(real, repo.directory).replace(os.sep, "/")
        specs.append(f":(literal){relative}" if changing else relative)
    return ["--", *specs]


def _failed(command: str, done: Completed, hint: str = "") -> ToolError:
    """git's own words when it refused (all of them, masked: a switch lists the files in the way), and a hint."""
    lines = [printable(line) for line in done.stderr.strip().splitlines() if not line.startswith("hint: ")]
    if not lines:
        lines = [printable(line) for line in done.stdout.decode("utf-8", "replace").strip().splitlines()]
    if len(lines) > MAX_ERROR_LINES:
        lines = [*lines[:MAX_ERROR_LINES], f"… ({len(lines) - MAX_ERROR_LINES} more lines)"]
    said = "\n".join(lines) or f"exit status {done.returncode}"
    return ToolError(f"git {command} failed:\n{said}" + (f"\n{hint}" if hint else ""))


def _change(repo: Repo, command: str, args: list[str], hint: str = "") -> Completed:
    done = repo.change([command, *args])
    if done.returncode != 0:
        raise _failed(command, done, hint)
    return done


def _status(repo: Repo) -> tuple[str, dict[str, Any]]:
    """The repository's status (as git_status shows it), after a change."""
    done = repo.check(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", *repo.pathspec(None)])
    report = parse_status(repo, done.stdout, done.truncated)
    return status_text(report), report


def _finish(repo: Repo, said: str, data: dict[str, Any], *runs: Completed) -> ToolResult:
    """The result of a change: what was done, what git complained of while succeeding (`runs`), the status."""
    complaints = [printable(line) for done in runs for line in done.stderr.splitlines()
                  if line.startswith(("error: ", "warning: "))][:MAX_ERROR_LINES]
    if complaints:
        said += "\ngit said, and went on:\n" + "\n".join(complaints)
    text, report = _status(repo)
    return result(f"{said}\n\nStatus now:\n{text}", {**data, "status": report})


def _skipped_hooks(repo: Repo) -> list[str]:
    """The hooks installed in the repository's hooks folder that plain git would have run for these commands."""
    folder = os.path.join(repo.common_dir, "hooks")
    return [name for name in _COMMIT_HOOKS if os.path.isfile(os.path.join(folder, name))]


# -- git_add -------------------------------------------------------------------------------------------
def git_add(ctx: Context, roots: Roots, paths: list[str]) -> ToolResult:
    reals = _entries(roots, paths)
    with _Changing(ctx, roots, reals[0]) as repo:
        specs = _pathspecs(roots, repo, reals)
        # All or nothing: git add stages the paths it can and then fails on an ignored or missing one.
        _change(repo, "add", ["--dry-run", *specs], "Nothing was staged.")
        done = _change(repo, "add", specs)
        return _finish(repo, f"Staged {plural(len(paths), 'path')}.", {"paths": paths}, done)


# -- git_commit ----------------------------------------------------------------------------------------
def git_commit(ctx: Context, roots: Roots, message: str, all: bool, paths: list[str] | None, amend: bool,
               allow_empty: bool, author: str | None, path: str | None) -> ToolResult:
    _check_message(message)
    if author is not None and not _AUTHOR.fullmatch(author):
        raise ToolError("author must be written 'Name <email>' (one line, no other '<' or '>')")
    if all and paths:
        raise ToolError("Pass either all (every change of tracked files) or paths (only these), not both")
    reals = _entries(roots, paths)
    with _Changing(ctx, roots, _repository(roots, path)) as repo:
        args = ["--no-verify", "--no-gpg-sign", f"--message={message}", *(["--all"] if all else []),
                *(["--amend"] if amend else []), *(["--allow-empty"] if allow_empty else []),
                *([f"--author={author}"] if author is not None else []),
                *(_pathspecs(roots, repo, reals) if reals else [])]
        done = repo.change(["commit", *args])
        if done.returncode != 0 and author is not None and _IDENTITY_UNKNOWN.search(done.stderr):
            # No committer configured: the author commits. (A configured committer, which env would override, is kept.)
            name, _, email = author.rpartition(" <")
            done = repo.change(["commit", *args], env={"GIT_COMMITTER_NAME": name.strip(),
                                                       "GIT_COMMITTER_EMAIL": email.rstrip(">")})
        if done.returncode != 0:
            raise _commit_failed(done)
        commit = _commit_summary(repo)
        hooks = _skipped_hooks(repo)
        commit["hooks_skipped"] = hooks
        said = (f"Committed {commit['commit'][:12]}" + (f" on {printable(commit['branch'])}" if commit["branch"] else
                                                        " (detached HEAD)")
                + f": {printable(commit['subject'])}\n{commit['stat'] or 'no files changed'}\n"
                + "No hook ran: shipcode-mcp runs no program a repository names"
                + (f" (skipped: {', '.join(hooks)}; run them yourself if the project relies on them)." if hooks else "."))
        return _finish(repo, said, commit, done)


def _check_message(message: str) -> None:
    if not message.strip():
        raise ToolError("The message is empty")
    if any((ord(c) < 32 and c not in "\n\t") or ord(c) == 127 for c in message):
        raise ToolError("The message holds control characters (other than line breaks and tabs)")
    if len(message.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
        raise ToolError(f"The message is longer than {MAX_MESSAGE_BYTES} bytes")


def _commit_failed(done: Completed) -> ToolError:
    said = done.stdout.decode("utf-8", "replace") + done.stderr
    if _IDENTITY_UNKNOWN.search(said):
        return ToolError("git has no identity to commit as: set user.name and user.email in the repository's or your "
                         "git configuration (git config user.name 'Name'; git config user.email 'name@example.com'), "
                         "or pass author as 'Name <email>'")
    if "nothing to commit" in said or "no changes added to commit" in said or "nothing added to commit" in said:
        return ToolError("Nothing to commit: no change is staged. git_add stages changes; all commits every change of "
                         "tracked files; allow_empty makes a commit without changes")
    return _failed("commit", done)


def _commit_summary(repo: Repo) -> dict[str, Any]:
    """HEAD after a commit: its id, parents, branch, subject and `--shortstat` line, from one git run."""
    done = repo.check(["log", "-1", "--no-color", "--format=%H%n%P%n%D%n%s", "--shortstat", "--end-of-options", "HEAD"])
    lines = done.stdout.decode("utf-8", "replace").split("\n")
    if len(lines) < 4:
        raise ToolError("git log failed: unexpected output after the commit")
    heads = [name.removeprefix("HEAD -> ") for name in lines[2].split(", ") if name.startswith("HEAD -> ")]
    stat = next((line.strip() for line in lines[4:] if " changed" in line), "")
    numbers = {word: int(count) for count, word in re.findall(r"(\d+) (file|insertion|deletion)", stat)}
    return {"commit": lines[0], "parents": lines[1].split(), "branch": heads[0] if heads else None, "subject": lines[3],
            "stat": stat, "files_changed": numbers.get("file", 0), "insertions": numbers.get("insertion", 0),
            "deletions": numbers.get("deletion", 0)}


# -- git_branch ----------------------------------------------------------------------------------------
_BRANCH_FORMAT = "%(HEAD)%00%(refname:short)%00%(objectname)%00%(upstream:short)%00%(upstream:track,nobracket)%00%(contents:subject)"


def git_branch(ctx: Context, roots: Roots, action: str, name: str | None, start: str | None, remotes: bool,
               path: str | None) -> ToolResult:
    folder = _repository(roots, path)
    if action == "list":
        with Repo(ctx, roots, folder) as repo:
            return _branches(repo, remotes)
    if name is None:
        raise ToolError(f"{action} needs the name of the branch")
    check_ref(name)
    if action == "delete":
        if start is not None:
            raise ToolError("start is only for create")
        with _Changing(ctx, roots, folder) as repo:
            done = _change(repo, "branch", ["--delete", "--end-of-options", name],
                           "(Only a branch merged into its upstream or HEAD is deleted; the current branch never is.)")
            said = done.stdout.decode("utf-8", "replace").strip() or f"Deleted branch {name}"
            return _finish(repo, printable(said), {"action": action, "branches": [], "name": name, "commit": None}, done)
    with _Changing(ctx, roots, folder) as repo:
        if start is not None:
            repo.resolve(start)  # checked, and known to name a commit
        done = _change(repo, "branch", ["--end-of-options", name, *([start] if start is not None else [])])
        commit = repo.resolve(f"refs/heads/{name}")
        return _finish(repo, f"Created branch {printable(name)} at {commit[:12]} (HEAD stays where it was; "
                             "git_switch moves to it).", {"action": action, "branches": [], "name": name,
                                                                  "commit": commit}, done)


def _branches(repo: Repo, remotes: bool) -> ToolResult:
    done = repo.check(["branch", "--list", "--no-color", f"--format={_BRANCH_FORMAT}", *(["--all"] if remotes else [])])
    branches = []
    lines = []
    for record in done.stdout.decode("utf-8", "replace").split("\n"):
        fields = record.split("\0")
        if len(fields) != 6:
            continue
        head, branch, commit, upstream, track, subject = fields
        branches.append({"name": branch, "commit": commit, "current": head == "*", "upstream": upstream or None,
                         "track": track or None, "subject": subject})
        tracking = f" [{printable(upstream)}{': ' + printable(track) if track else ''}]" if upstream else ""
        lines.append(f"{'*' if head == '*' else ' '} {printable(branch)} {commit[:12]}{tracking} {printable(subject)}")
    return result("\n".join(lines) or "No branches yet (no commit).",
                  {"action": "list", "branches": branches, "name": None, "commit": None, "status": None})


# -- git_switch ----------------------------------------------------------------------------------------
def git_switch(ctx: Context, roots: Roots, branch: str, create: bool, start: str | None, detach: bool,
               path: str | None) -> ToolResult:
    check_ref(branch)
    if start is not None and not create:
        raise ToolError("start is only for create (a new branch starts there)")
    if create and detach:
        raise ToolError("Pass either create or detach, not both")
    with _Changing(ctx, roots, _repository(roots, path)) as repo:
        if start is not None:
            repo.resolve(start)
        if detach:
            args = ["--detach", "--end-of-options", repo.resolve(branch)]
        elif create:
            args = [f"--create={branch}", "--end-of-options", *([start] if start is not None else [])]
        else:
            args = ["--end-of-options", branch]
        done = repo.change(["switch", "--no-recurse-submodules", "--no-progress", *args])
        if done.returncode != 0:
            raise _failed("switch", done, "Nothing was changed. Commit, stash (git_stash) or restore the files in the "
                          "way, then switch." if "would be overwritten" in done.stderr else "")
        said = next((line for line in reversed(done.stderr.strip().splitlines()) if line.startswith(("Switched", "HEAD",
                                                                                                     "Already"))), "")
        return _finish(repo, printable(said or f"Switched to {branch}"), {"branch": branch, "detached": detach}, done)


# -- git_restore ---------------------------------------------------------------------------------------
def git_restore(ctx: Context, roots: Roots, paths: list[str], target: str, source: str | None, dry_run: bool) -> ToolResult:
    reals = _entries(roots, paths)
    with _Changing(ctx, roots, reals[0]) as repo:
        specs = _pathspecs(roots, repo, reals)
        source_id = repo.resolve(source) if source is not None else None
        # What is discarded, as a diff (the working tree's changes, or the index's), before it is discarded.
        if target == "staged":
            compare = ["--cached", *([f"{source_id}"] if source_id else [])]
        elif target == "both":
            compare = [source_id or "HEAD"]
        else:
            compare = [source_id] if source_id else []
        summary, patch = _diff(repo, compare, _pathspecs(roots, repo, reals, changing=False))
        files = parse_numstat(repo, summary)
        diff = cut_output(patch.stdout, patch.truncated)
        where = {"worktree": "working tree", "staged": "index", "both": "index and working tree"}[target]
        from_what = printable(source) if source is not None else ("HEAD" if target != "worktree" else "the index")
        if not dry_run:
            flags = {"worktree": ["--worktree"], "staged": ["--staged"], "both": ["--staged", "--worktree"]}[target]
            done = _change(repo, "restore", [*flags, *([f"--source={source_id}"] if source_id else []), "--no-progress",
                                      "--no-recurse-submodules", *specs])
        verb = "Would restore" if dry_run else "Restored"
        said = (f"{verb} the {where} of {plural(len(paths), 'path')} from {from_what}: "
                + (f"{plural(len(files), 'file')} changed back" if files else "nothing differed"))
        if files:
            said += (". The changes discarded:" if not dry_run else ". The changes it would discard:") + \
                "\n\n" + mask_patch(diff).rstrip("\n")
            if patch.truncated:
                said += "\n[The diff was cut; the file list is complete.]"
        data = {"target": target, "files": files, "diff": diff, "truncated": patch.truncated, "dry_run": dry_run}
        if dry_run:
            return result(said, {**data, "status": None})
        return _finish(repo, said, data, done)


def _diff(repo: Repo, compare: list[str], specs: list[str]) -> tuple[bytes, Completed]:
    args = ["diff", *DIFF_FLAGS, "--no-relative", "--numstat", "-z", "--patch", *compare, *specs]
    both = repo.diff(args)
    if both is None:  # unmerged paths
        raise ToolError("These paths have merge conflicts; resolve them (or restore with target both) first")
    return both


# -- git_stash -----------------------------------------------------------------------------------------
def git_stash(ctx: Context, roots: Roots, action: str, message: str | None, include_untracked: bool,
              index: int, paths: list[str] | None, path: str | None) -> ToolResult:
    if action != "push" and (message is not None or include_untracked or paths):
        raise ToolError("message, include_untracked and paths are only for push")
    reals = _entries(roots, paths)
    folder = reals[0] if reals else _repository(roots, path)
    if action == "list":
        with Repo(ctx, roots, folder) as repo:
            return _stashes(repo)
    with _Changing(ctx, roots, folder) as repo:
        if action == "push":
            if message is not None:
                _check_message(message)
            done = _change(repo, "stash", ["push", *(["--include-untracked"] if include_untracked else []),
                                           *([f"--message={message}"] if message is not None else []),
                                           *(_pathspecs(roots, repo, reals) if reals else [])])
            said = done.stdout.decode("utf-8", "replace").strip().splitlines()
            return _finish(repo, printable(said[-1] if said else "Saved"), {"action": action, "stashes": [], "stash": None}, done)
        entries = list(_stash_entries(repo))
        if index >= len(entries):
            raise ToolError(f"There is no stash {index}: the repository has {plural(len(entries), 'stash')}")
        done = repo.change(["stash", action, "--end-of-options", f"stash@{{{index}}}"])
        if done.returncode != 0:
            raise _failed(f"stash {action}", done, "The stash was kept." if action == "pop" else "")
        kept = " (kept in the list)" if action == "apply" else ""
        return _finish(repo, f"Applied stash@{{{index}}}: {printable(entries[index]['message'])}{kept}",
                       {"action": action, "stashes": [], "stash": entries[index]}, done)


def _stash_entries(repo: Repo) -> Iterator[dict[str, Any]]:
    done = repo.check(["stash", "list", "--no-color", "--format=%gd%x00%H%x00%gs"])
    for record in done.stdout.decode("utf-8", "replace").split("\n"):
        fields = record.split("\0")
        if len(fields) == 3:
            yield {"name": fields[0], "commit": fields[1], "message": fields[2]}


def _stashes(repo: Repo) -> ToolResult:
    entries = list(_stash_entries(repo))[:MAX_STATUS_ENTRIES]
    text = "\n".join(f"{printable(entry['name'])} {entry['commit'][:12]} {printable(entry['message'])}"
                     for entry in entries)
    return result(text or "No stashes.", {"action": "list", "stashes": entries, "stash": None, "status": None})
