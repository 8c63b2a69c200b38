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

import contextlib
import os
import re
import stat
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError, inside
from .. import safe_open
from ..text import cut_output, plural, printable, result
from ..writes import is_dotgit, root_lock
from .commands import empty_tree, mask_patch, parse_numstat, parse_status, status_text
from .repo import DIFF_FLAGS, MAX_PATCH_BYTES, MAX_STATUS_ENTRIES, Repo, check_ref

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
_AUTHOR = re.compile(r"[^<>\x00-\x1f\x7f]*[^<>\s\x00-\x1f\x7f][^<>\x00-\x1f\x7f]* <[^<>\x00-\x1f\x7f]*>")
_COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "reference-transaction",
                 "post-index-change")
"""The hooks plain `git commit` runs (and post-rewrite with amend); none runs here."""
MAX_CHECKED_PATHS = 20_000
"""Files a checkout may write that are looked up for a filter (`_refuse_filtered`): more is refused."""
_CHECK_BATCH = 500


class _Changing:
    """A repository opened to change it: the Repo (made with `write`), with the write lock of every root that
    holds part of its work tree (git may write anywhere in it), taken in path order as the other writes do; a
    shared repository (core.sharedRepository) refused, and the mode of its config files kept."""

    def __init__(self, ctx: Context, roots: Roots, target: str) -> None:
        folder = target if os.path.isdir(target) and not os.path.islink(target) else os.path.dirname(target)
        self.repo = repo = Repo(ctx, roots, folder, write=True)
        if repo.shared not in (None, "", "false", "umask", "0", "no", "off"):
            repo.close()
            raise ToolError(f"Refused: this repository is shared (core.sharedRepository={printable(repo.shared)}): git "
                            "gives what it writes group permissions with chmod, which the sandbox of shipcode-mcp does "
                            "not let it do; change it with git yourself")
        self._locks = contextlib.ExitStack()
        self._roots = sorted(root for root in roots.paths if inside(root, repo.top) or inside(repo.top, root))
        self._ctx, self._all = ctx, roots
        self._modes: dict[str, int] = {}

    def __enter__(self) -> Repo:
        try:
            for root in self._roots:
                self._locks.enter_context(root_lock(self._ctx, self._all, root, self._all.display(root)))
        except BaseException:
            self._locks.close()
            self.repo.close()
            raise
        for folder in dict.fromkeys((self.repo.common_dir, self.repo.git_dir)):
            for name in ("config", "config.worktree"):
                with contextlib.suppress(OSError):
                    self._modes[os.path.join(folder, name)] = os.lstat(os.path.join(folder, name)).st_mode
        return self.repo

    def __exit__(self, *exc: Any) -> None:
        try:
            self._keep_modes()
        finally:
            try:
                self._locks.close()
            finally:
                self.repo.close()

    def _keep_modes(self) -> None:
        """git writes a config file anew and copies the old one's mode onto it with chmod, which the sandbox makes
        do nothing: a config kept private (0600: a token in a remote's URL) would come back readable by all."""
        for path, mode in self._modes.items():
            with contextlib.suppress(OSError):
                now = os.lstat(path)
                if stat.S_ISREG(now.st_mode) and stat.S_IMODE(now.st_mode) != stat.S_IMODE(mode):
                    os.chmod(path, stat.S_IMODE(mode), follow_symlinks=False)


def _repository(roots: Roots, path: str | None) -> str:
    """The folder whose repository a call changes: `path` (default: the first root), resolved in the roots."""
    return roots.resolve(path) if path is not None else roots.first


def _entries(roots: Roots, paths: list[str] | None) -> list[str]:
    """Each path named as git sees it (a link is itself: `Roots.entry`), inside the roots and outside any .git
    folder; before anything else."""
    reals = [roots.entry(given) for given in paths or ()]
    for real in reals:
        root = roots.root_of(real) or real
        if any(is_dotgit(part) for part in os.path.relpath(real, root).split(os.sep)):
            raise ToolError(f"Refused: {printable(roots.display(real))} is inside a .git folder, which git keeps for "
                            "itself")
    return reals


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


def _lines(text: str) -> list[str]:
    """git's lines, masked, a tab (before the files it lists) as spaces, its hints left out."""
    return [printable(line.replace("\t", "    ")) for line in text.strip().splitlines() if not line.startswith("hint: ")]


def _failed(command: str, done: Completed, hint: str = "") -> ToolError:
    """git's own words when it refused (all of them, masked: a switch lists the files in the way), and a hint."""
    lines = _lines(done.stderr) or _lines(done.stdout.decode("utf-8", "replace"))
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


def _finish(ctx: Context, roots: Roots, repo: Repo, said: str, data: dict[str, Any], *runs: Completed) -> ToolResult:
    """The result of a change: what was done, what git complained of while succeeding (`runs`), the status. The
    status is asked of the repository opened again (the change may have switched to a branch whose
    configuration differs: includeIf onbranch), and a status that cannot be given does not undo the change's
    success: it says so."""
    complaints = [line for done in runs for line in _lines(done.stderr)
                  if line.startswith(("error: ", "warning: "))][:MAX_ERROR_LINES]
    if complaints:
        said += "\ngit said, and went on:\n" + "\n".join(complaints)
    try:
        with Repo(ctx, roots, repo.directory) as again:
            text, report = _status(again)
    except ToolError as err:
        return result(f"{said}\n\nThe change was made; the status after it could not be shown: {err}",
                      {**data, "status": None})
    return result(f"{said}\n\nStatus now:\n{text}", {**data, "status": report})


def _refuse_filtered(repo: Repo, names: list[str], command: str) -> None:
    """Refuse, before anything is written, a checkout that would write a file needing a filter the
    configuration gives a program (neutralised here: git would stop midway, some files written and some not,
    or write the file unfiltered). `names` are the files it may write, relative to the top; only looked up
    when the configuration has such filters."""
    if not repo.filters or not names:
        return
    if len(names) > MAX_CHECKED_PATHS:
        raise ToolError(f"Refused: git {command} would write {len(names)} files in a repository that configures "
                        f"filters ({', '.join(sorted(repo.filters))}), too many to check for one; nothing was changed")
    for start in range(0, len(names), _CHECK_BATCH):
        batch = {os.path.relpath(os.path.join(repo.top, name), repo.directory): name
                 for name in names[start:start + _CHECK_BATCH]}  # as git names them here (from its folder): from the top
        done = repo.check(["check-attr", "-z", "filter", "--", *batch])
        fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        for path, _, value in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
            if value in repo.filters:
                shown = repo.display(repo.top, batch.get(path, path))
                raise ToolError(f"Refused: git {command} would write {printable(shown)}, which needs the filter "
                                f"'{printable(value)}', a program this repository configures and shipcode-mcp does not "
                                f"run; nothing was changed. Run git {command} yourself if you trust this repository.")


def _changed_between(repo: Repo, old: str, new: str) -> list[str]:
    """The files that differ between two trees (commits), relative to the top: what a checkout writes."""
    done = repo.check(["diff", "--no-renames", "--name-only", "-z", "--no-ext-diff", "--no-textconv", "--no-relative",
                       old, new, "--"], limit=MAX_PATCH_BYTES * 64)
    return [name for name in done.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


# -- git_add -------------------------------------------------------------------------------------------
def git_add(ctx: Context, roots: Roots, paths: list[str]) -> ToolResult:
    reals = _entries(roots, paths)
    with _Changing(ctx, roots, reals[0]) as repo:
        specs = _pathspecs(roots, repo, reals)
        # All or nothing: git add stages the paths it can and then fails on an ignored or missing one.
        _change(repo, "add", ["--dry-run", *specs], "Nothing was staged.")
        done = _change(repo, "add", specs)
        named = ", ".join(printable(roots.display(real)) for real in reals[:10]) + (" …" if len(reals) > 10 else "")
        return _finish(ctx, roots, repo, f"Staged {named}.", {"paths": paths}, done)


# -- git_commit ----------------------------------------------------------------------------------------
def git_commit(ctx: Context, roots: Roots, message: str, all: bool, paths: list[str] | None, amend: bool,
               allow_empty: bool, author: str | None, path: str | None) -> ToolResult:
    _check_message(message)
    if author is not None and not _AUTHOR.fullmatch(author):
        raise ToolError("author must be written 'Name <email>' (one line, no control characters, no other '<' or '>')")
    if all and paths:
        raise ToolError("Pass either all (every change of tracked files) or paths (only these), not both")
    reals = _entries(roots, paths)
    with _Changing(ctx, roots, reals[0] if reals else _repository(roots, path)) as repo:
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
        hooks = _skipped_hooks(repo, amend)
        commit["hooks_skipped"] = hooks
        said = (f"Committed {commit['commit'][:12]}" + (f" on {printable(commit['branch'])}" if commit["branch"] else
                                                        " (detached HEAD)")
                + f": {printable(commit['subject'])}\n{commit['stat'] or 'no files changed'}\n"
                + "No hook ran: shipcode-mcp runs no program a repository names"
                + (f" (skipped: {', '.join(hooks)}; run them yourself if the project relies on them)." if hooks else "."))
        return _finish(ctx, roots, repo, said, commit, done)


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
    """HEAD after a commit: its id, parents, subject and `--shortstat` line, and the branch HEAD is on (asked
    of symbolic-ref: decorations depend on log.decorate and log.excludeDecoration)."""
    done = repo.check(["log", "-1", "--no-color", "--format=%H%n%P%n%s", "--shortstat", "--end-of-options", "HEAD"])
    lines = done.stdout.decode("utf-8", "replace").split("\n")
    if len(lines) < 3:
        raise ToolError("git log failed: unexpected output after the commit")
    branch = repo.run(["symbolic-ref", "--quiet", "--short", "HEAD"]).stdout.decode("utf-8", "replace").strip()
    stat_line = next((line.strip() for line in lines[3:] if " changed" in line), "")
    numbers = {word: int(count) for count, word in re.findall(r"(\d+) (file|insertion|deletion)", stat_line)}
    return {"commit": lines[0], "parents": lines[1].split(), "branch": branch or None, "subject": lines[2],
            "stat": stat_line, "files_changed": numbers.get("file", 0), "insertions": numbers.get("insertion", 0),
            "deletions": numbers.get("deletion", 0)}


def _skipped_hooks(repo: Repo, amend: bool) -> list[str]:
    """The hooks plain `git commit` would have run here: executable files of those names in the hooks folder
    (core.hooksPath's, relative to the top, or the repository's own)."""
    folder = (os.path.join(repo.top, os.path.expanduser(repo.hooks_path)) if repo.hooks_path
              else os.path.join(repo.common_dir, "hooks"))
    names = (*_COMMIT_HOOKS, "post-rewrite") if amend else _COMMIT_HOOKS
    return [name for name in names if os.path.isfile(os.path.join(folder, name))
            and os.access(os.path.join(folder, name), os.X_OK)]


# -- git_branch ----------------------------------------------------------------------------------------
_BRANCH_FORMAT = "%(HEAD)%00%(refname)%00%(objectname)%00%(upstream:short)%00%(upstream:track,nobracket)%00%(contents:subject)"


def git_branch(ctx: Context, roots: Roots, action: str, name: str | None, start: str | None, remotes: bool,
               path: str | None) -> ToolResult:
    folder = _repository(roots, path)
    if action == "list":
        if name is not None or start is not None:
            raise ToolError("name and start are for create and delete; list takes remotes")
        with Repo(ctx, roots, folder) as repo:
            return _branches(repo, remotes)
    if name is None:
        raise ToolError(f"{action} needs the name of the branch")
    if remotes:
        raise ToolError("remotes is for list")
    check_ref(name)
    if action == "delete":
        if start is not None:
            raise ToolError("start is only for create")
        with _Changing(ctx, roots, folder) as repo:
            done = _change(repo, "branch", ["--delete", "--end-of-options", name],
                           "(Only a branch merged into its upstream or HEAD is deleted; the current branch never is.)")
            said = done.stdout.decode("utf-8", "replace").strip() or f"Deleted branch {name}"
            return _finish(ctx, roots, repo, printable(said),
                           {"action": action, "branches": [], "name": name, "commit": None}, done)
    with _Changing(ctx, roots, folder) as repo:
        if start is not None:
            repo.resolve(start)  # checked, and known to name a commit
        done = _change(repo, "branch", ["--end-of-options", name, *([start] if start is not None else [])])
        commit = repo.resolve(f"refs/heads/{name}")
        return _finish(ctx, roots, repo, f"Created branch {printable(name)} at {commit[:12]} (HEAD stays where it was; "
                                         "git_switch moves to it).",
                       {"action": action, "branches": [], "name": name, "commit": commit}, done)


def _branches(repo: Repo, remotes: bool) -> ToolResult:
    done = repo.check(["branch", "--list", "--no-color", f"--format={_BRANCH_FORMAT}", *(["--all"] if remotes else [])])
    branches = []
    lines = []
    for record in done.stdout.decode("utf-8", "replace").split("\n"):
        fields = record.split("\0")
        if len(fields) != 6 or not fields[1].startswith(("refs/heads/", "refs/remotes/")):
            continue  # a detached HEAD's line: "(HEAD detached at ...)" is no branch
        head, ref, commit, upstream, track, subject = fields
        branch = ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")
        branches.append({"name": branch, "commit": commit, "current": head == "*", "upstream": upstream or None,
                         "track": track or None, "subject": subject})
        tracking = f" [{printable(upstream)}{': ' + printable(track) if track else ''}]" if upstream else ""
        lines.append(f"{'*' if head == '*' else ' '} {printable(branch)} {commit[:12]}{tracking} {printable(subject)}")
    if not repo.run(["symbolic-ref", "--quiet", "HEAD"]).returncode == 0 and repo.has_commits():
        lines.insert(0, f"(HEAD detached at {repo.resolve('HEAD')[:12]})")
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
        if create:
            target = repo.resolve(start) if start is not None else None
        elif detach or not repo.filters:
            target = repo.resolve(branch) if detach else None
        else:  # a branch to check out, in a repository with filters: which files change must be known
            try:
                target = repo.resolve(f"refs/heads/{branch}")
            except ToolError:
                raise ToolError(f"Refused: {printable(branch)} is not a local branch, and this repository configures "
                                "filters, so what a switch writes must be checked first: create the branch (create, with "
                                "start naming the remote-tracking branch), then switch") from None
        if target is not None and repo.filters:
            current = repo.resolve("HEAD") if repo.has_commits() else empty_tree(repo)
            _refuse_filtered(repo, _changed_between(repo, current, target), "switch")
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
        return _finish(ctx, roots, repo, printable(said or f"Switched to {branch}"), {"branch": branch, "detached": detach},
                       done)


# -- git_restore ---------------------------------------------------------------------------------------
def git_restore(ctx: Context, roots: Roots, paths: list[str], target: str, source: str | None, dry_run: bool) -> ToolResult:
    reals = _entries(roots, paths)
    with _Changing(ctx, roots, reals[0]) as repo:
        specs = _pathspecs(roots, repo, reals)
        plain = _pathspecs(roots, repo, reals, changing=False)
        source_id = repo.resolve(source) if source is not None else None
        if source_id is None and target != "worktree" and not repo.has_commits():
            raise ToolError("There are no commits yet, so no HEAD to restore from; git rm --cached unstages a new file "
                            "before the first commit")
        writes_files = target != "staged"
        if writes_files and (source_id is not None or target == "both"):
            _refuse_untracked(repo, plain, source_id or repo.resolve("HEAD"))
        # What is discarded, as a diff (the working tree's changes, or the index's), before it is discarded.
        if target == "staged":
            compare = ["--cached", *([source_id] if source_id else [])]
        elif target == "both":
            compare = [source_id or "HEAD"]
        else:
            compare = [source_id] if source_id else []
        summary, patch = _diff(repo, compare, plain)
        files = parse_numstat(repo, summary)
        reals_changed = [roots.shown_path(entry["path"]) for entry in files]
        if writes_files:
            _refuse_filtered(repo, [os.path.relpath(real, repo.top) for real in reals_changed], "restore")
        diff = cut_output(patch.stdout, patch.truncated)
        saved = _save_contents(repo, files, reals_changed) if writes_files and files and not dry_run else []
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
        if saved:
            said += ("\nThe discarded contents are kept as git objects (until git gc prunes unreachable ones, two weeks "
                     "by default); git_show with one of these as ref gives it back:\n"
                     + "\n".join(f"  {entry['blob']} {printable(entry['path'])}" for entry in saved))
        data = {"target": target, "files": files, "diff": diff, "truncated": patch.truncated, "saved": saved,
                "dry_run": dry_run}
        if dry_run:
            return result(said, {**data, "status": None})
        return _finish(ctx, roots, repo, said, data, done)


def _diff(repo: Repo, compare: list[str], specs: list[str]) -> tuple[bytes, Completed]:
    args = ["diff", *DIFF_FLAGS, "--no-relative", "--numstat", "-z", "--patch", *compare, *specs]
    both = repo.diff(args)
    if both is None:  # unmerged paths
        raise ToolError("These paths have merge conflicts; resolve them (or restore with target both) first")
    return both


def _refuse_untracked(repo: Repo, specs: list[str], source: str) -> None:
    """Refuse a restore from a commit that would write over untracked or ignored files (git does, and their
    content is in no commit): the files of `specs` that git does not track but `source` holds."""
    done = repo.check(["status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored=matching", *specs])
    loose = [record[2:] for record in done.stdout.decode("utf-8", "surrogateescape").split("\0")
             if record[:2] in ("? ", "! ")]
    if not loose:
        return
    tree = repo.check(["ls-tree", "-r", "-z", "--name-only", "--full-tree", "--end-of-options", source, "--",
                       *loose[:_CHECK_BATCH]])  # (--full-tree: paths from the top, as status gave them)
    overwritten = [name for name in tree.stdout.decode("utf-8", "surrogateescape").split("\0") if name]
    if overwritten:
        shown = ", ".join(printable(repo.display(repo.top, name)) for name in overwritten[:10])
        raise ToolError(f"Refused: restoring would write over files git does not track ({shown}{' …' if len(overwritten) > 10 else ''}), "
                        "whose content is in no commit and would be lost; move them away or add them first. Nothing "
                        "was changed.")


def _save_contents(repo: Repo, files: list[dict[str, Any]], reals: list[str]) -> list[dict[str, str]]:
    """Write the working tree's version of each regular file about to be discarded into the object store
    (`hash-object -w`, as it is: no filter), so that nothing a restore discards is lost, binary or beyond
    the diff's cut: the files and the ids of their contents."""
    saved: list[tuple[str, str]] = []
    for entry, real in zip(files, reals, strict=True):
        if os.path.isfile(real) and not os.path.islink(real):
            saved.append((entry["path"], os.path.relpath(real, repo.directory)))
    ids: list[str] = []
    for start in range(0, len(saved), _CHECK_BATCH):
        done = repo.change(["hash-object", "-w", "--no-filters", "--", *(name for _, name in saved[start:start + _CHECK_BATCH])])
        if done.returncode != 0:
            raise _failed("hash-object", done, "Nothing was changed: the contents could not be kept before discarding them.")
        ids += done.stdout.decode("ascii", "replace").split()
    return [{"path": path, "blob": blob} for (path, _), blob in zip(saved, ids, strict=True)]


# -- git_stash -----------------------------------------------------------------------------------------
def git_stash(ctx: Context, roots: Roots, action: str, message: str | None, include_untracked: bool,
              index: int, paths: list[str] | None, path: str | None) -> ToolResult:
    if action != "push" and (message is not None or include_untracked or paths):
        raise ToolError("message, include_untracked and paths are only for push")
    if action not in ("pop", "apply") and index != 0:
        raise ToolError("index is for pop and apply")
    if paths and path is not None:
        raise ToolError("Pass paths (what to stash) or path (the repository), not both")
    reals = _entries(roots, paths)
    folder = reals[0] if reals else _repository(roots, path)
    if action == "list":
        with Repo(ctx, roots, folder) as repo:
            return _stashes(repo)
    with _Changing(ctx, roots, folder) as repo:
        if action == "push":
            if message is not None:
                _check_message(message)
            if repo.filters and repo.has_commits():  # push puts the files back as HEAD has them
                summary = repo.check(["diff", *DIFF_FLAGS, "--no-relative", "--name-only", "-z", "HEAD",
                                      *_pathspecs(roots, repo, reals, changing=False)]).stdout
                _refuse_filtered(repo, [name for name in summary.decode("utf-8", "surrogateescape").split("\0") if name],
                                 "stash")
            done = _change(repo, "stash", ["push", *(["--include-untracked"] if include_untracked else []),
                                           *([f"--message={message}"] if message is not None else []),
                                           *(_pathspecs(roots, repo, reals) if reals else [])])
            said = done.stdout.decode("utf-8", "replace").strip().splitlines()
            return _finish(ctx, roots, repo, printable(said[-1] if said else "Saved"),
                           {"action": action, "stashes": [], "stash": None}, done)
        entries = list(_stash_entries(repo))
        if index >= len(entries):
            raise ToolError(f"There is no stash {index}: the repository has {plural(len(entries), 'stash')}")
        if repo.merge_drivers:
            raise ToolError(f"Refused: this repository configures merge drivers ({', '.join(sorted(repo.merge_drivers))}), "
                            "programs shipcode-mcp does not run, and applying a stash merges it; nothing was changed. "
                            f"Run git stash {action} yourself if you trust this repository.")
        stash = entries[index]["commit"]
        if repo.filters:
            untracked = repo.run(["rev-parse", "--verify", "--quiet", f"{stash}^3"])
            names = _changed_between(repo, f"{stash}^1", stash)
            if untracked.returncode == 0:
                names += _changed_between(repo, empty_tree(repo), untracked.stdout.decode("ascii").strip())
            _refuse_filtered(repo, names, f"stash {action}")
        done = repo.change(["stash", action, "--end-of-options", f"stash@{{{index}}}"])
        if done.returncode != 0:
            raise _failed(f"stash {action}", done, "The stash was kept." if action == "pop" else "")
        kept = " (kept in the list)" if action == "apply" else ""
        return _finish(ctx, roots, repo, f"Applied stash@{{{index}}}: {printable(entries[index]['message'])}{kept}",
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


# -- what a commit would record (for --confirm-writes) ----------------------------------------------------
def commit_preview(ctx: Context, roots: Roots, all: bool, paths: list[str] | None, amend: bool,
                   path: str | None) -> tuple[str, str]:
    """What git_commit with these arguments would record, as the user is to read it (the diff of the whole
    commit against its parent: with amend, the commit replaced included), and a fingerprint of it (object ids,
    and the working tree files it would take, hashed) that changes whenever the commit would differ."""
    reals = _entries(roots, paths)
    with Repo(ctx, roots, reals[0] if reals else _repository(roots, path)) as repo:
        if amend and repo.has_commits():
            parent = repo.run(["rev-parse", "--verify", "--quiet", "HEAD^"])
            base = parent.stdout.decode("ascii").strip() if parent.returncode == 0 else empty_tree(repo)
        else:
            base = repo.resolve("HEAD") if repo.has_commits() else empty_tree(repo)
        head = repo.resolve("HEAD") if repo.has_commits() else "none"
        specs = _pathspecs(roots, repo, reals, changing=False) if reals else ["--"]
        compared = [base] if (all or reals) else ["--cached", base]
        parts: list[tuple[str, list[str]]] = [("", compared + specs)]
        if amend and reals:  # the commit replaced keeps its other changes; these paths come as they are now
            parts = [("The commit amended holds:\n", [base, head, "--"]),
                     ("and these paths are taken as they are now:\n", [head, *specs])]
        texts: list[str] = []
        marks: list[str] = [head]
        for title, args in parts:
            raw = repo.check(["diff", *DIFF_FLAGS, "--no-relative", "--raw", "-z", "--full-index", *args]).stdout
            marks.append(raw.decode("utf-8", "surrogateescape"))
            records = raw.decode("utf-8", "surrogateescape").split("\0")
            for meta, name in zip(records[0::2], records[1::2], strict=False):
                fields = meta.split()
                if len(fields) >= 4 and set(fields[3]) == {"0"}:  # the working tree's side: its content, hashed
                    marks.append(safe_open.content_mark(roots, os.path.join(repo.top, name)))
            summary, patch = _diff(repo, args, [])
            files = parse_numstat(repo, summary)
            counts = ", ".join(f"{printable(entry['path'])} (+{entry['added']} -{entry['deleted']})"
                               if entry["added"] is not None else f"{printable(entry['path'])} (binary)" for entry in files)
            texts.append(f"{title}{plural(len(files), 'file')}: {counts or 'none'}\n{cut_output(patch.stdout, patch.truncated)}"
                         + ("\n[the diff is longer and was cut here; the file list is complete]" if patch.truncated else ""))
        return "\n".join(texts), "\0".join(marks)
