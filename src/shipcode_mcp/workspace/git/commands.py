"""The four git tools (git_status, git_log, git_diff, git_show): each resolves its refs and paths through
`repo.Repo`, runs its one command and parses git's machine-readable output into text and data within the
output limits."""

from __future__ import annotations

import os
import re
import secrets
from typing import TYPE_CHECKING, Any

from ...primitives import ToolError
from ..text import cut_output, is_binary, plural, printable, result, size_text
from .repo import (
    DIFF_FLAGS,
    MAX_BODY_CHARS,
    MAX_PATCH_BYTES,
    MAX_STATUS_ENTRIES,
    RANGE,
    SEVERAL,
    Repo,
    checked,
    repo_for,
)

if TYPE_CHECKING:
    from ...context import Context
    from ...primitives import ToolResult
    from ..process import Completed
    from ..roots import Roots


# -- git_status ---------------------------------------------------------------------------------------
def git_status(ctx: Context, roots: Roots) -> ToolResult:
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
            texts.append(f"# {printable(root)}\n{err}")
            continue
        with repo:
            done = repo.check(["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", *repo.pathspec(None)])
            report = parse_status(repo, done.stdout, done.truncated)
        report["root"] = root
        reports.append(report)
        text = status_text(report)
        texts.append(f"# {printable(root)}\n{text}" if len(roots.paths) > 1 else text)
    if not any(report["repository"] for report in reports):
        raise ToolError("None of the workspace roots is in a git repository")
    return result("\n\n".join(texts), {"repositories": reports})


def parse_status(repo: Repo, output: bytes, cut: bool) -> dict[str, Any]:
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


def status_text(report: dict[str, Any]) -> str:
    if report["branch"] is None:
        head = "HEAD (detached at " + (report["commit"] or "?")[:12] + ")"
    elif report["commit"] is None:
        head = f"No commits yet on {printable(report['branch'])}"
    else:
        head = printable(report["branch"])
    if report["upstream"]:
        head += f"...{printable(report['upstream'])}"
        counts = [f"{word} {n}" for word, n in (("ahead", report["ahead"]), ("behind", report["behind"])) if n]
        if counts:
            head += f" [{', '.join(counts)}]"
    lines = [f"## {head}"]
    for entry in report["files"]:
        code = "??" if entry["kind"] == "untracked" else "!!" if entry["kind"] == "ignored" else (
            entry["index"] + entry["worktree"]).replace(".", " ")
        moved = f"{printable(entry['orig_path'])} -> " if "orig_path" in entry else ""
        lines.append(f"{code} {moved}{printable(entry['path'])}")
    if not report["files"]:
        lines.append("nothing to commit, working tree clean")
    if report["truncated"]:
        lines.append(f"[Only the first {len(report['files'])} entries are shown.]")
    return "\n".join(lines)


# -- git_log -------------------------------------------------------------------------------------------
_LOG_FIELDS = ("commit", "parents", "author", "email", "date", "subject", "body")
_LOG_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%aI%x00%s%x00%b"
_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def git_log(ctx: Context, roots: Roots, limit: int, path: str | None, ref: str | None) -> ToolResult:
    repo, real = repo_for(ctx, roots, path)
    # Each record starts with a mark no commit can hold (it is made now): whatever a subject or body holds,
    # it cannot start a record of its own; the id and parents, git's own, come first in each.
    mark = "%x00" + secrets.token_hex(16) + "%x00"
    with repo:
        revision = repo.revision_names(ref) if ref is not None else "HEAD"
        follow = ["--follow"] if real is not None and not os.path.isdir(real) else []
        # --relative keeps a larger repository's commits outside the root out, renames followed there too.
        args = ["log", "--no-color", "--encoding=UTF-8", f"--format={mark}{_LOG_FORMAT}", f"--max-count={limit + 1}",
                *follow, *repo.relative(), "--end-of-options", revision, *repo.pathspec(real)]
        done = repo.run(args)
        # Whether there are commits at all is asked only when the log failed: one git run in the usual case.
        if done.returncode != 0 and not done.truncated:
            if ref is None and not repo.has_commits():
                return result("No commits yet.", {"commits": [], "truncated": False})
            if ref is not None:
                repo.revisions(ref)  # the message of a ref that names no commit, where that is why
        checked("log", done)
    records = done.stdout.decode("utf-8", "replace").split(mark.replace("%x00", "\0"))[1:]
    if done.truncated and records:
        records.pop()  # the last one may be partial
    commits: list[dict[str, Any]] = []
    lines: list[str] = []
    for text in records:
        fields = text.split("\0", len(_LOG_FIELDS) - 1)
        if len(fields) != len(_LOG_FIELDS) or not _OBJECT_ID.fullmatch(fields[0]):
            continue  # not as git writes one
        record = dict(zip(_LOG_FIELDS, fields, strict=True))
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
        lines.append(f"{record['commit'][:12]} {printable(record['date'][:16].replace('T', ' '))} "
                     f"{printable(record['author'])}: {printable(record['subject'])}")
        body_lines = body.splitlines()
        lines.extend(f"    {printable(line)}" for line in body_lines[:10])
        if len(body_lines) > 10:
            lines.append(f"    … ({len(body_lines) - 10} more lines; git_show shows the whole message)")
    truncated = len(records) > limit or done.truncated
    if not commits:
        lines.append("No commits match.")
    elif truncated:
        lines.append(f"[Showing the {plural(len(commits), 'most recent commit')}; there are more. "
                     "Raise limit, or narrow with path or a ref range such as main..HEAD.]")
    return result("\n".join(lines), {"commits": commits, "truncated": truncated})


# -- git_diff ------------------------------------------------------------------------------------------
def git_diff(ctx: Context, roots: Roots, ref: str | None, staged: bool, path: str | None) -> ToolResult:
    repo, real = repo_for(ctx, roots, path)
    with repo:
        options = [*DIFF_FLAGS, *repo.relative(), *(["--cached"] if staged else [])]
        revisions: list[str] = []  # after every option: once --end-of-options is given, nothing is one
        if ref is not None:
            if staged and RANGE.search(ref):
                raise ToolError("staged compares the index with one revision; a range cannot be combined with it")
            revisions = ["--end-of-options", repo.revision_names(ref)]
        # (staged before the first commit: git diff --cached compares the index with the empty tree itself)
        spec = repo.pathspec(real)

        def run_diff(revisions: list[str]) -> tuple[bytes, Completed]:
            both = repo.diff(["diff", *options, "--numstat", "-z", "--patch", *revisions, *spec])
            if both is not None:
                return both
            # during a merge with conflicts
            numstat = repo.check(["diff", *options, "--numstat", "-z", *revisions, *spec]).stdout
            return numstat, repo.check(["diff", *options, "--patch", *revisions, *spec], limit=MAX_PATCH_BYTES)

        try:
            numstat, patch = run_diff(revisions)
        except ToolError:
            if ref is not None or not staged or repo.has_commits():
                if ref is not None:
                    repo.revisions(ref)  # the message of a ref that names no commit, where that is why
                raise
            numstat, patch = run_diff(["--end-of-options", empty_tree(repo)])  # HEAD names a blob (a hostile HEAD)
        files = parse_numstat(repo, numstat)
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
            moved = f"{printable(entry['old_path'])} -> " if "old_path" in entry else ""
            summary.append(f"  {moved}{printable(entry['path'])} ({counts})")
        text = "\n".join(summary) + "\n\n" + mask_patch(diff)
        if patch.truncated:
            text += (f"\n[The diff is longer than {size_text(MAX_PATCH_BYTES)} and was cut here. The file list "
                     "above is complete; pass path to see one file's changes.]")
    return result(text.rstrip("\n"), {"files": files, "diff": diff, "truncated": patch.truncated})


def empty_tree(repo: Repo) -> str:
    """The id of the empty tree in this repository's hash (staged changes before the first commit)."""
    done = repo.check(["hash-object", "-t", "tree", "/dev/null"])
    return done.stdout.decode("ascii").strip()


def _diff_subject(ref: str | None, staged: bool) -> str:
    if staged:
        return f"staged, against {ref}" if ref else "staged, against HEAD"
    if ref is None:
        return "unstaged, working tree against the index"
    return ref if RANGE.search(ref) else f"working tree against {ref}"


def parse_numstat(repo: Repo, output: bytes) -> list[dict[str, Any]]:
    """`--numstat -z` records: `ADDED\tDELETED\tPATH`, or for a rename `ADDED\tDELETED\t` then the old and
    the new path as records of their own; `-` counts for a binary file. A partial last record (a summary
    cut at MAX_DATA_BYTES) is left out."""
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
            if not name:
                break  # a rename cut after its old path: no path is empty
        entry = {"path": _diff_path(repo, name), **entry,
                 "added": None if added == "-" else int(added), "deleted": None if deleted == "-" else int(deleted)}
        files.append(entry)
    return files


def _diff_path(repo: Repo, name: str) -> str:
    return repo.display(repo.diff_base, name)


# -- git_show ------------------------------------------------------------------------------------------
def git_show(ctx: Context, roots: Roots, ref: str, path: str | None) -> ToolResult:
    repo, real = repo_for(ctx, roots, path)
    with repo:
        repo.check_revision(ref)
        shown = roots.display(real) if real is not None else None
        fast = _show_commit(repo, ref) if real is None else _file_at_once(repo, ref, real, shown or "")
        if fast is not None:
            object_id, object_type, text, masked, truncated = fast
        elif real is None:
            # Confined, only a commit (a tag peeled): a tree or blob would show files outside the root.
            object_id = repo.resolve(ref, "commit" if repo.confined else "object")
            object_type = repo.check(["cat-file", "-t", object_id]).stdout.decode("ascii").strip()
            if object_type == "tree":  # as `git show` prints one, each name masked on its own (a name may hold a line break)
                names, truncated = _tree_names(repo, object_id)
                text = f"tree {object_id}\n\n" + "".join(f"{name}\n" for name in names)
                masked = f"tree {object_id}\n\n" + "".join(f"{printable(name)}\n" for name in names)
            else:
                done = repo.check(["show", *DIFF_FLAGS, "--format=medium", "--date=iso", "--stat", "--patch",
                                   *repo.relative(), "--end-of-options", object_id, *repo.pathspec(None)],
                                  limit=MAX_PATCH_BYTES)
                text, truncated = cut_output(done.stdout, done.truncated), done.truncated
                # A blob is file content, shown as it is; a commit or tag is names and metadata around a patch.
                masked = text if object_type == "blob" else mask_patch(text)
        else:
            assert shown is not None
            object_id = repo.resolve(ref)
            object_type, text, masked, truncated = _file_at(repo, object_id, real, shown, ref)
    note = ""
    if truncated:
        hint = ("pass path to see one file as of this revision, or use git_diff with a path" if shown is None
                else "read_file on the working copy, or search_code, can reach the rest")
        note = f"\n[Cut at {size_text(MAX_PATCH_BYTES)}; {hint}.]"
    data = {"ref": ref, "object": object_id, "type": object_type, "path": shown, "text": text, "truncated": truncated}
    return result((masked.rstrip("\n") + note) or "(empty)", data)


MAX_ASKED = 4096
"""`cat-file --batch`'s input, written before it starts: within a pipe's buffer."""
MAX_COMMIT_BYTES = 1024 * 1024
"""A commit object larger than this (a message of megabytes, packed small) is not read by the one-run path."""


def _show_commit(repo: Repo, ref: str) -> tuple[str, str, str, str, bool] | None:
    """A commit as git_show shows it, from one git run: (id, "commit", text, text for the model, cut); None
    when `ref` is not a commit (a tag, a tree, a blob: git_show asks what it is first) or git failed (asked
    again that way for the precise message). Every line git prints for a commit starts with a mark made now
    (`--line-prefix`); a tag's own header, a tree's listing or a blob do not, so none can pass for one."""
    if SEVERAL.search(ref) or RANGE.search(ref):
        return None  # several commits: refused the other way
    mark = secrets.token_hex(8).encode("ascii")
    size = len(mark)

    def enough(out: bytearray) -> bool:
        if len(out) >= size and not out.startswith(mark):
            return True  # not a commit
        return len(out) - size * (out.count(b"\n") + 1) > MAX_PATCH_BYTES

    # Confined, only a commit (a tag peeled): a tree or blob would show files outside the root.
    name = f"{ref}^{{commit}}" if repo.confined else ref
    # (--stat=80: the width git gives a --stat without a terminal, which a line prefix would narrow)
    done = repo.read(["show", *DIFF_FLAGS, "--format=medium", "--date=iso", "--stat=80", "--patch",
                      f"--line-prefix={mark.decode()}", *repo.relative(), "--end-of-options", name,
                      *repo.pathspec(None)], enough)
    if (done.returncode != 0 and not done.truncated) or not done.stdout.startswith(mark + b"commit "):
        return None
    lines = done.stdout.split(b"\n")
    last = lines.pop()  # what follows the last line end: nothing, unless cut or git ended without one
    if not done.truncated and last:
        lines.append(last)
    if not all(line.startswith(mark) for line in lines):
        return None
    data = b"\n".join(line[size:] for line in lines) + (b"\n" if done.stdout.endswith(b"\n") or done.truncated else b"")
    truncated = done.truncated or len(data) > MAX_PATCH_BYTES
    found = re.match(rb"commit ([0-9a-f]{40}(?:[0-9a-f]{24})?)\b", data)
    if found is None:
        return None
    text = cut_output(data[:MAX_PATCH_BYTES], truncated)
    return found.group(1).decode("ascii"), "commit", text, mask_patch(text), truncated


def _file_at_once(repo: Repo, ref: str, real: str, shown: str) -> tuple[str, str, str, str, bool] | None:
    """A file's text, or a folder's entries, as of the commit `ref` names, from one git run (`cat-file
    --batch`: the commit, then the object at the path): (commit id, type, text, text for the model, cut).
    None when that run cannot tell (a name git would not read in one line, a missing object, a tree over
    the limit): `_file_at` then asks step by step, with its messages."""
    relative = os.path.relpath(real, repo.top).replace(os.sep, "/")
    commit = f"{ref}^{{commit}}"
    # git splits `REV:PATH` at the first ':' outside braces: a brace in the ref (an unclosed `@{{`) could move
    # that split into the path, to a path outside the root. cat-file reads a line, less a CR before its end.
    if "{" in ref or "}" in ref or "\n" in relative or "\r" in relative:
        return None
    try:
        name = os.fsencode(f"{commit}:{relative}" if relative != "." else f"{commit}^{{tree}}")
        asked = os.fsencode(commit) + b"\n" + name + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: asked the checked way, which says what is wrong
        return None
    if len(asked) > MAX_ASKED:
        return None

    def entries(out: bytes | bytearray) -> list[tuple[bytes, str, int, int]]:
        """The headers read so far: (id, type, size, where the content starts)."""
        found: list[tuple[bytes, str, int, int]] = []
        start = 0
        while len(found) < 2:
            end = out.find(b"\n", start, start + 200)
            parts = out[start:end].split(b" ") if end >= 0 else []
            if len(parts) != 3 or not parts[2].isdigit():
                break
            found.append((bytes(parts[0]), parts[1].decode("ascii", "replace"), int(parts[2]), end + 1))
            start = end + 1 + int(parts[2]) + 1
        return found

    def enough(out: bytearray) -> bool:
        found = entries(out)
        if not found:
            return len(out) > 200 or b"\n" in out  # no header: a name git could not find
        if found[0][2] > MAX_COMMIT_BYTES:
            return True  # a commit no one writes: not read into memory (asked the checked way, which does not)
        return len(found) == 2 and len(out) - found[1][3] > MAX_PATCH_BYTES

    done = repo.read(["cat-file", "--batch"], enough, stdin=asked)
    found = entries(done.stdout)
    if (done.returncode != 0 and not done.truncated) or len(found) != 2 or found[0][1] != "commit":
        return None
    (commit_id, _, _, _), (_, object_type, size, start) = found
    content = done.stdout[start:start + min(size, MAX_PATCH_BYTES)]
    truncated = size > MAX_PATCH_BYTES
    if object_type not in ("blob", "tree") or (len(content) < min(size, MAX_PATCH_BYTES)) or (truncated and object_type == "tree"):
        return None
    if object_type == "tree":
        names = _tree_entries(content, len(commit_id) // 2)
        if names is None or sum(len(entry) for entry in names) + len(names) * (len(commit_id) + 20) > MAX_PATCH_BYTES:
            return None  # not one, or a listing ls-tree would cut: asked the checked way, which cuts it
        return (commit_id.decode("ascii"), object_type, "".join(f"{entry}\n" for entry in names),
                "".join(f"{printable(entry)}\n" for entry in names), False)
    if is_binary(content):
        raise ToolError(f"{printable(shown)} is a binary file in {printable(ref)} ({size_text(size)}); "
                        "git_show shows text only")
    text = cut_output(content, truncated)
    return commit_id.decode("ascii"), object_type, text, text, truncated


def _tree_entries(data: bytes, id_size: int) -> list[str] | None:
    """The names in a tree object as git stores it (`MODE NAME\\0ID`, the id in binary), folders with a
    trailing '/', as `ls-tree` lists them; None if it is not one."""
    names: list[str] = []
    start = 0
    while start < len(data):
        end = data.find(b"\0", start)
        mode, space, name = data[start:end].partition(b" ") if end >= 0 else (b"", b"", b"")
        if not space or not mode.isdigit() or end + 1 + id_size > len(data):
            return None
        text = name.decode("utf-8", "replace")
        names.append(f"{text}/" if int(mode, 8) & 0o170000 == 0o040000 else text)  # (old gits wrote 040000)
        start = end + 1 + id_size
    return names


def mask_patch(text: str) -> str:
    """git's diff or show output with every line but the content lines of hunks made printable: file names
    in `diff --git`, ---/+++, rename, copy and mode lines, the --stat lines, commit and tag headers and
    messages. A content line (' ', '+', '-', '\\', or empty where diff.suppressBlankEmpty is set) follows
    an `@@` line and is file content, as read_file would show it."""
    lines = text.split("\n")
    in_hunk = False
    for number, line in enumerate(lines):
        if in_hunk and (not line or line[0] in " +-\\"):
            continue
        in_hunk = line.startswith("@@")
        lines[number] = printable(line)
    return "\n".join(lines)


def _file_at(repo: Repo, commit: str, real: str, shown: str, ref: str) -> tuple[str, str, str, bool]:
    """A file's text, or a folder's entries, as of `commit`: (type, text, text for the model, cut). A file's
    text is its content, as it is; a folder's names are masked one by one."""
    relative = os.path.relpath(real, repo.top).replace(os.sep, "/")
    name = f"{commit}:{relative}" if relative != "." else f"{commit}^{{tree}}"
    kind = repo.run(["cat-file", "-t", "--end-of-options", name], limit=1024)
    object_type = kind.stdout.decode("ascii", "replace").strip()
    if kind.returncode != 0 or object_type not in ("blob", "tree"):
        raise ToolError(f"{printable(shown)} does not exist in {printable(ref)}")
    if object_type == "tree":
        names, truncated = _tree_names(repo, name)
        return (object_type, "".join(f"{name}\n" for name in names), "".join(f"{printable(name)}\n" for name in names),
                truncated)
    done = repo.check(["cat-file", "blob", "--end-of-options", name], limit=MAX_PATCH_BYTES)
    if is_binary(done.stdout):
        size = repo.check(["cat-file", "-s", "--end-of-options", name]).stdout.decode("ascii").strip()
        raise ToolError(f"{printable(shown)} is a binary file in {printable(ref)} ({size_text(int(size or 0))}); "
                        "git_show shows text only")
    text = cut_output(done.stdout, done.truncated)
    return object_type, text, text, done.truncated


def _tree_names(repo: Repo, tree: str) -> tuple[list[str], bool]:
    """The entries of a tree object, folders with a trailing '/', and whether the listing was cut."""
    done = repo.check(["ls-tree", "-z", "--full-tree", "--end-of-options", tree], limit=MAX_PATCH_BYTES)
    entries = [entry.decode("utf-8", "replace").split("\t", 1) for entry in done.stdout.split(b"\0") if b"\t" in entry]
    if done.truncated:
        entries = entries[:-1]  # the last one may be partial
    return [f"{name}/" if " tree " in meta else name for meta, name in entries], done.truncated
