"""git_status, git_log, git_diff, git_show: the real `git`, run so that no argument can become an option.

Every ref is checked (nothing that starts with '-', no control characters, no `rev:path` object
names) and resolved to a full object id with `rev-parse --verify --end-of-options` before any other
command sees it; paths are resolved inside the roots and passed after `--` as literal pathspecs.
Git runs without the environment's GIT_* variables, without optional locks, pagers, external diff
programs, textconv filters, fsmonitor hooks or signature checks, with a deadline and bounded output.
When a root is a folder inside a larger repository, output is confined to that folder (and git_show
shows only commits there). The repository is checked once (`Repo.__init__`): git only uses a `.git`
folder (never a bare repository it stumbled on), whose real path is inside the roots or is the `.git`
of the larger repository holding the root; every later command is pinned to that repository.
"""

from __future__ import annotations

import os
import re

from ..primitives import ToolError
from . import safe_open
from .text import cut_output, is_binary, plural, result, size_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..context import RequestContext
    from ..primitives import ToolResult
    from .process import Completed
    from .roots import Roots

GIT_TIMEOUT = 30.0
MAX_PATCH_BYTES = 256 * 1024
"""git_diff and git_show return at most this much patch text; the file list is always complete."""
MAX_DATA_BYTES = 8 * 1024 * 1024
"""Bound on machine-readable output (status entries, log records, numstat)."""
MAX_STATUS_ENTRIES = 2000
MAX_BODY_CHARS = 4000

# Settings that keep git from running anything but itself, whatever the repository's config says.
_SAFE_CONFIG = (
    "-c", "safe.bareRepository=explicit",  # a bare repository committed inside a project is never used (git >= 2.38)
    "-c", "core.fsmonitor=false",
    "-c", "core.quotePath=false",
    "-c", "log.showSignature=false",
    "-c", "color.ui=false",
    "-c", "core.pager=cat",
    "-c", "diff.external=",
)
_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv")
_SIDE = re.compile(r"@\{[^}]*\}")  # reflog and upstream syntax (HEAD@{1}, main@{upstream}) may hold ':'
_RANGE = re.compile(r"\.\.\.?")

_git_path: str | None = None


def _git() -> str:
    global _git_path
    if _git_path is None:
        import shutil

        found = shutil.which("git")
        if found is None:
            raise ToolError("git is not installed")
        _git_path = found
    return _git_path


def _env() -> dict[str, str]:
    """The environment without GIT_* (which could point git at another repository or program)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat",
               GIT_LITERAL_PATHSPECS="1", GIT_NO_LAZY_FETCH="1", LC_ALL="C")
    return env


class Repo:
    """The git repository holding a path of the workspace, ready to run git confined to the roots.

    Git runs in the folder of the path (so a root that holds several repositories works), entered
    through a descriptor opened without following links. When the repository reaches outside the
    roots (the root is a folder inside a larger repository), every command is confined to the root.
    """

    def __init__(self, ctx: RequestContext, roots: Roots, target: str) -> None:
        self.ctx = ctx
        self.roots = roots
        root = roots.root_of(target)
        assert root is not None
        self.root = root
        directory = target
        while directory != root and not os.path.isdir(directory):  # a path that is gone: its nearest folder
            directory = os.path.dirname(directory)
        self.directory = directory
        self._fd = safe_open.open_dir(roots, directory, roots.display(directory))
        self.cwd = safe_open.proc_path(self._fd, directory)
        self._env = _env()
        try:
            self._discover()
        except BaseException:
            self.close()
            raise
        self.confined = roots.root_of(self.top) is None
        # Diff paths (--relative) are relative to the root when confined, else to the repository top.
        self.diff_base = root if self.confined else self.top

    def _discover(self) -> None:
        """Find the repository, refuse one that is not ours to read, and pin every later command to it.

        Pinning (GIT_DIR, GIT_WORK_TREE) means a `.git` or bare repository appearing meanwhile is not used.
        """
        shown = self.roots.display(self.directory)
        done = self.run(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"], limit=64 * 1024)
        if done.returncode != 0:
            message = done.stderr.strip().splitlines()
            if message and "safe.bareRepository" in message[-1]:
                raise ToolError(f"Refused: {shown} is in a bare repository (a folder holding HEAD, objects/ and refs/ "
                                "that is not a .git folder); git tools use only repositories with a .git folder")
            if message and "not a git repository" not in message[-1]:
                raise ToolError(f"git failed: {message[-1].removeprefix('fatal: ')}")
            raise ToolError(f"{shown} is not in a git repository")
        lines = done.stdout.decode("utf-8", "surrogateescape").split("\n")
        if len(lines) != 4 or lines[3]:
            raise ToolError(f"git failed: unexpected output of rev-parse in {shown}")
        self.top, git_dir, common_dir = (os.path.realpath(os.path.join(self.directory, line)) for line in lines[:3])
        if (os.path.commonpath([self.top, self.directory]) != self.top
                or not (self._trusted(git_dir) and self._trusted(common_dir))):
            raise ToolError(f"Refused: the git repository of {shown} is not a .git folder inside the workspace roots "
                            "(a .git link or file pointing elsewhere, a linked worktree of an outside repository, "
                            "or a bare repository inside the project)")
        self._env.update(GIT_DIR=git_dir, GIT_WORK_TREE=self.top)

    def _trusted(self, real: str) -> bool:
        """A git folder git may use: a `.git` folder (or one under it: submodules, worktrees) inside a root,
        or `<top>/.git` itself, a real folder, when the root is inside that larger repository.

        Only git makes `.git` folders (write_file refuses them), so a repository built by writing files, or
        an embedded bare repository on git older than 2.38, is refused.
        """
        root = self.roots.root_of(real)
        if root is not None:
            return ".git" in os.path.relpath(real, root).split(os.sep)
        own = os.path.join(self.top, ".git")
        return real == own and not os.path.islink(own) and os.path.isdir(own)

    def __enter__(self) -> Repo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def run(self, args: list[str], *, limit: int = MAX_DATA_BYTES) -> Completed:
        from .process import run

        return run(self.ctx, [_git(), *_SAFE_CONFIG, *args], cwd=self.cwd, env=self._env, pass_fds=(self._fd,),
                   limit=limit, timeout=GIT_TIMEOUT, what="git")

    def check(self, args: list[str], *, limit: int = MAX_DATA_BYTES) -> Completed:
        """Run and fail with git's own message (the last line of it) when git fails."""
        done = self.run(args, limit=limit)
        if done.returncode != 0 and not done.truncated:
            lines = done.stderr.strip().splitlines()
            why = lines[-1].removeprefix("fatal: ") if lines else f"exit status {done.returncode}"
            raise ToolError(f"git {args[0]} failed: {why}")
        return done

    def pathspec(self, real: str | None) -> list[str]:
        """`--` then the literal pathspec of `real`, or of the root when confined (relative to the cwd)."""
        if real is None and not self.confined:
            return ["--"]
        relative = os.path.relpath(real if real is not None else self.root, self.directory)
        return ["--", relative.replace(os.sep, "/")]

    def relative(self) -> list[str]:
        """The diff option that keeps diff output inside the root when confined."""
        if not self.confined:
            return []
        return [f"--relative={os.path.relpath(self.root, self.top).replace(os.sep, '/')}"]

    def has_commits(self) -> bool:
        return self.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).returncode == 0

    def resolve(self, ref: str, peel: str = "commit") -> str:
        """The full object id `ref` names (a commit, unless `peel` says otherwise); refs are checked first."""
        check_ref(ref)
        done = self.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{{peel}}}"])
        object_id = done.stdout.decode("ascii", "replace").strip()
        if done.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", object_id):
            what = "an object" if peel == "object" else f"a {peel}"
            raise ToolError(f"Unknown revision: {ref!r} does not name {what} in this repository")
        return object_id

    def revisions(self, ref: str) -> str:
        """A revision or a range (A..B, A...B; an empty side is HEAD) with every side resolved."""
        check_ref(ref)
        separator = _RANGE.search(ref)
        if separator is None:
            return self.resolve(ref)
        left, right = ref[: separator.start()], ref[separator.end():]
        return f"{self.resolve(left or 'HEAD')}{separator.group()}{self.resolve(right or 'HEAD')}"

    def display(self, base: str, name: str) -> str:
        """A path git printed relative to `base` (the top, or diff_base), as the roots show it.

        Only a rename's old name can lie outside the roots (git confines the rest): it is not shown.
        """
        real = os.path.normpath(os.path.join(base, name))
        if self.roots.root_of(real) is None:
            return "(outside the workspace roots)"
        return self.roots.display(real) + ("/" if name.endswith("/") else "")  # an untracked folder keeps its '/'



def check_ref(ref: str) -> None:
    """Refuse what could be an option, or an object name that reaches a path (`rev:path`)."""
    if not ref or len(ref) > 256:
        raise ToolError("A ref must be 1 to 256 characters long")
    if any(ord(c) < 32 or ord(c) == 127 for c in ref):
        raise ToolError("A ref cannot contain control characters")
    if any(side.startswith("-") for side in _RANGE.split(ref)):
        raise ToolError(f"Refused: the ref {ref!r} starts with '-' and would be read as an option")
    if ":" in _SIDE.sub("", ref):
        raise ToolError(f"Refused: the ref {ref!r} contains ':'. To see a file as of a revision, "
                        "call git_show with that revision as ref and the file as path")


def _repo_for(ctx: RequestContext, roots: Roots, path: str | None) -> tuple[Repo, str | None]:
    """The repository of `path` (default: the first root) and the resolved path, if one was given."""
    real = roots.resolve(path) if path is not None else None
    return Repo(ctx, roots, real if real is not None else roots.first), real


# -- git_status ---------------------------------------------------------------------------------------
def git_status(ctx: RequestContext, roots: Roots) -> ToolResult:
    reports: list[dict[str, Any]] = []
    texts: list[str] = []
    for root in roots.paths:
        try:
            repo = Repo(ctx, roots, root)
        except ToolError as err:
            if len(roots.paths) == 1:
                raise
            reports.append({"root": root, "repository": False, "branch": None, "commit": None, "upstream": None,
                            "ahead": 0, "behind": 0, "files": [], "truncated": False})
            texts.append(f"# {root}\n{err}")
            continue
        with repo:
            done = repo.check(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", *repo.pathspec(None)])
            report = _parse_status(repo, done.stdout, done.truncated)
        report["root"] = root
        reports.append(report)
        text = _status_text(report)
        texts.append(f"# {root}\n{text}" if len(roots.paths) > 1 else text)
    if not any(report["repository"] for report in reports):
        raise ToolError("None of the workspace roots is in a git repository")
    return result("\n\n".join(texts), {"repositories": reports})


def _parse_status(repo: Repo, output: bytes, cut: bool) -> dict[str, Any]:
    report: dict[str, Any] = {"root": repo.root, "repository": True, "branch": None, "commit": None,
                              "upstream": None, "ahead": 0, "behind": 0, "files": [], "truncated": cut}
    records = output.decode("utf-8", "surrogateescape").split("\0")
    if cut:
        records = records[:-1]  # the last one may be partial
    files: list[dict[str, Any]] = report["files"]
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        if record.startswith("# "):
            _status_header(report, record[2:])
            continue
        kind = record[:1]
        entry: dict[str, Any]
        if kind in ("1", "2", "u"):
            fields = record.split(" ", {"1": 8, "2": 9, "u": 10}[kind])
            entry = {"path": repo.display(repo.top, fields[-1]), "index": fields[1][0], "worktree": fields[1][1]}
            if kind == "2":
                entry["kind"] = "renamed" if fields[8].startswith("R") else "copied"
                entry["orig_path"] = repo.display(repo.top, records[index]) if index < len(records) else ""
                index += 1
            else:
                entry["kind"] = "unmerged" if kind == "u" else "changed"
        elif kind in ("?", "!"):
            entry = {"path": repo.display(repo.top, record[2:]), "index": kind, "worktree": kind,
                     "kind": "untracked" if kind == "?" else "ignored"}
        else:
            continue
        if len(files) >= MAX_STATUS_ENTRIES:
            report["truncated"] = True
            break
        files.append(entry)
    return report


def _status_header(report: dict[str, Any], header: str) -> None:
    name, _, value = header.partition(" ")
    if name == "branch.oid":
        report["commit"] = None if value == "(initial)" else value
    elif name == "branch.head":
        report["branch"] = None if value == "(detached)" else value
    elif name == "branch.upstream":
        report["upstream"] = value
    elif name == "branch.ab":
        ahead, _, behind = value.partition(" ")
        report["ahead"], report["behind"] = int(ahead.lstrip("+") or 0), int(behind.lstrip("-") or 0)


def _status_text(report: dict[str, Any]) -> str:
    if report["branch"] is None:
        head = "HEAD (detached at " + (report["commit"] or "?")[:12] + ")"
    elif report["commit"] is None:
        head = f"No commits yet on {report['branch']}"
    else:
        head = report["branch"]
    if report["upstream"]:
        head += f"...{report['upstream']}"
        counts = [f"{word} {n}" for word, n in (("ahead", report["ahead"]), ("behind", report["behind"])) if n]
        if counts:
            head += f" [{', '.join(counts)}]"
    lines = [f"## {head}"]
    for entry in report["files"]:
        code = "??" if entry["kind"] == "untracked" else "!!" if entry["kind"] == "ignored" else (
            entry["index"] + entry["worktree"]).replace(".", " ")
        moved = f"{entry['orig_path']} -> " if "orig_path" in entry else ""
        lines.append(f"{code} {moved}{entry['path']}")
    if not report["files"]:
        lines.append("nothing to commit, working tree clean")
    if report["truncated"]:
        lines.append(f"[Only the first {len(report['files'])} entries are shown.]")
    return "\n".join(lines)


# -- git_log -------------------------------------------------------------------------------------------
_LOG_FIELDS = ("commit", "parents", "author", "email", "date", "subject", "body")
_LOG_FORMAT = "%x00%H%x00%P%x00%an%x00%ae%x00%aI%x00%s%x00%b"


def git_log(ctx: RequestContext, roots: Roots, limit: int = 20, path: str | None = None,
            ref: str | None = None) -> ToolResult:
    repo, real = _repo_for(ctx, roots, path)
    with repo:
        if ref is None and not repo.has_commits():
            return result("No commits yet.", {"commits": [], "truncated": False})
        revision = repo.revisions(ref) if ref is not None else "HEAD"
        follow = ["--follow"] if real is not None and not os.path.isdir(real) else []
        done = repo.check(["log", "--no-color", f"--format={_LOG_FORMAT}", f"--max-count={limit + 1}", *follow,
                           "--end-of-options", revision, *repo.pathspec(real)])
    fields = done.stdout.decode("utf-8", "replace").split("\0")[1:]
    commits: list[dict[str, Any]] = []
    lines: list[str] = []
    for start in range(0, len(fields) - len(_LOG_FIELDS) + 1, len(_LOG_FIELDS)):
        record = dict(zip(_LOG_FIELDS, fields[start:start + len(_LOG_FIELDS)], strict=True))
        if len(commits) == limit:  # the one asked for beyond the limit: it only tells that there are more
            break
        body = record["body"].strip()
        commits.append({
            "commit": record["commit"],
            "parents": record["parents"].split(),
            "author": record["author"],
            "email": record["email"],
            "date": record["date"],
            "subject": record["subject"],
            "body": body[:MAX_BODY_CHARS] + ("…" if len(body) > MAX_BODY_CHARS else ""),
        })
        lines.append(f"{record['commit'][:12]} {record['date'][:16].replace('T', ' ')} {record['author']}: {record['subject']}")
        body_lines = body.splitlines()
        lines.extend(f"    {line}" for line in body_lines[:10])
        if len(body_lines) > 10:
            lines.append(f"    … ({len(body_lines) - 10} more lines; git_show shows the whole message)")
    truncated = len(fields) // len(_LOG_FIELDS) > limit or done.truncated
    if not commits:
        lines.append("No commits match.")
    elif truncated:
        lines.append(f"[Showing the {plural(len(commits), 'most recent commit')}; there are more. "
                     "Raise limit, or narrow with path or a ref range such as main..HEAD.]")
    return result("\n".join(lines), {"commits": commits, "truncated": truncated})


# -- git_diff ------------------------------------------------------------------------------------------
def git_diff(ctx: RequestContext, roots: Roots, ref: str | None = None, staged: bool = False,
             path: str | None = None) -> ToolResult:
    repo, real = _repo_for(ctx, roots, path)
    with repo:
        options = [*_DIFF_FLAGS, *repo.relative(), *(["--cached"] if staged else [])]
        revisions: list[str] = []  # after every option: once --end-of-options is given, nothing is one
        if ref is not None:
            revision = repo.revisions(ref)
            if staged and _RANGE.search(revision):
                raise ToolError("staged compares the index with one revision; a range cannot be combined with it")
            revisions = ["--end-of-options", revision]
        elif staged and not repo.has_commits():
            revisions = ["--end-of-options", _empty_tree(repo)]
        spec = repo.pathspec(real)
        numstat = repo.check(["diff", *options, "--numstat", "-z", *revisions, *spec])
        patch = repo.check(["diff", *options, "--patch", *revisions, *spec], limit=MAX_PATCH_BYTES)
        files = _parse_numstat(repo, numstat.stdout)
    diff = cut_output(patch.stdout, patch.truncated)
    what = _diff_subject(ref, staged)
    if not files:
        text = f"No changes ({what})."
    else:
        added = sum(f["added"] or 0 for f in files)
        deleted = sum(f["deleted"] or 0 for f in files)
        summary = [f"{plural(len(files), 'file')} changed ({what}), +{added} -{deleted}:"]
        for entry in files:
            counts = "binary" if entry["added"] is None else f"+{entry['added']} -{entry['deleted']}"
            moved = f"{entry['old_path']} -> " if "old_path" in entry else ""
            summary.append(f"  {moved}{entry['path']} ({counts})")
        text = "\n".join(summary) + "\n\n" + diff
        if patch.truncated:
            text += (f"\n[The diff is longer than {size_text(MAX_PATCH_BYTES)} and was cut here. The file list "
                     "above is complete; pass path to see one file's changes.]")
    return result(text.rstrip("\n"), {"files": files, "diff": diff, "truncated": patch.truncated})


def _empty_tree(repo: Repo) -> str:
    """The id of the empty tree in this repository's hash (staged changes before the first commit)."""
    done = repo.check(["hash-object", "-t", "tree", "/dev/null"])
    return done.stdout.decode("ascii").strip()


def _diff_subject(ref: str | None, staged: bool) -> str:
    if staged:
        return f"staged, against {ref}" if ref else "staged, against HEAD"
    if ref is None:
        return "unstaged, working tree against the index"
    return ref if _RANGE.search(ref) else f"working tree against {ref}"


def _parse_numstat(repo: Repo, output: bytes) -> list[dict[str, Any]]:
    records = output.decode("utf-8", "surrogateescape").split("\0")
    files: list[dict[str, Any]] = []
    index = 0
    while index < len(records):
        record = records[index]
        index += 1
        parts = record.split("\t", 2)
        if len(parts) != 3:
            continue
        added, deleted, name = parts
        entry: dict[str, Any] = {}
        if name == "" and index + 1 < len(records):  # a rename: old and new path follow
            entry["old_path"] = _diff_path(repo, records[index])
            name = records[index + 1]
            index += 2
        entry = {"path": _diff_path(repo, name), **entry,
                 "added": None if added == "-" else int(added), "deleted": None if deleted == "-" else int(deleted)}
        files.append(entry)
    return files


def _diff_path(repo: Repo, name: str) -> str:
    return repo.display(repo.diff_base, name)


# -- git_show ------------------------------------------------------------------------------------------
def git_show(ctx: RequestContext, roots: Roots, ref: str, path: str | None = None) -> ToolResult:
    repo, real = _repo_for(ctx, roots, path)
    with repo:
        if real is None:
            # Confined, only a commit (a tag peeled): a tree or blob would show files outside the root.
            object_id = repo.resolve(ref, "commit" if repo.confined else "object")
            object_type = repo.check(["cat-file", "-t", object_id]).stdout.decode("ascii").strip()
            done = repo.check(["show", *_DIFF_FLAGS, "--format=medium", "--date=iso", "--stat", "--patch",
                               *repo.relative(), "--end-of-options", object_id, *repo.pathspec(None)],
                              limit=MAX_PATCH_BYTES)
            text, truncated, shown = cut_output(done.stdout, done.truncated), done.truncated, None
        else:
            object_id = repo.resolve(ref)
            shown = roots.display(real)
            object_type, text, truncated = _file_at(repo, object_id, real, shown, ref)
    note = ""
    if truncated:
        hint = ("pass path to see one file as of this revision, or use git_diff with a path" if shown is None
                else "read_file on the working copy, or search_code, can reach the rest")
        note = f"\n[Cut at {size_text(MAX_PATCH_BYTES)}; {hint}.]"
    data = {"ref": ref, "object": object_id, "type": object_type, "path": shown, "text": text, "truncated": truncated}
    return result((text.rstrip("\n") + note) or "(empty)", data)


def _file_at(repo: Repo, commit: str, real: str, shown: str, ref: str) -> tuple[str, str, bool]:
    """A file's text, or a folder's entries, as of `commit`: (type, text, cut)."""
    relative = os.path.relpath(real, repo.top).replace(os.sep, "/")
    name = f"{commit}:{relative}" if relative != "." else f"{commit}^{{tree}}"
    kind = repo.run(["cat-file", "-t", "--end-of-options", name], limit=1024)
    object_type = kind.stdout.decode("ascii", "replace").strip()
    if kind.returncode != 0 or object_type not in ("blob", "tree"):
        raise ToolError(f"{shown} does not exist in {ref}")
    if object_type == "tree":
        done = repo.check(["ls-tree", "-z", "--full-tree", "--end-of-options", name], limit=MAX_PATCH_BYTES)
        entries = [entry.decode("utf-8", "replace").split("\t", 1) for entry in done.stdout.split(b"\0") if b"\t" in entry]
        listing = [f"{name}/" if " tree " in meta else name for meta, name in entries]
        return object_type, "\n".join(listing) + "\n", done.truncated
    done = repo.check(["cat-file", "blob", "--end-of-options", name], limit=MAX_PATCH_BYTES)
    if is_binary(done.stdout):
        size = repo.check(["cat-file", "-s", "--end-of-options", name]).stdout.decode("ascii").strip()
        raise ToolError(f"{shown} is a binary file in {ref} ({size_text(int(size or 0))}); git_show shows text only")
    return object_type, cut_output(done.stdout, done.truncated), done.truncated
