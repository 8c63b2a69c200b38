"""The reading git tools in one git run per call (issue 28): git_show of a commit (`--line-prefix` marks
a commit's lines), of a file or folder (`cat-file --batch`), a staged diff before the first commit, and a
log or diff of a ref resolved by git itself. Each answer is compared with git's own, on commits made to
be awkward and on the real history of this checkout; what one run cannot tell (a tag, a tree, a blob, an
error) is asked the checked way, with the same answer as before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from attack_support import count_runs, direct

from shipcode_mcp.workspace.git import walk as git_walk
from shipcode_mcp.workspace.git.repo import MAX_PATCH_BYTES
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.text import cut_output
from shipcode_mcp.workspace.tools import run as run_tool
from workspace_support import Tools, context, git, git_run, make_repo

CHECKOUT = Path(__file__).resolve().parents[2]
WITHOUT_TERMINAL = {key: value for key, value in os.environ.items() if key != "COLUMNS"}  # git's width: 80
SHOW = ["show", "--no-color", "--no-ext-diff", "--no-textconv", "--format=medium", "--date=iso", "--stat", "--patch"]


def call(root: Path, name: str, **arguments: Any) -> dict[str, Any]:
    """A git tool called in this process (the kernel sandbox as the machine has it); its structured data."""
    data: dict[str, Any] = run_tool(name, context(), Roots([str(root)]), **arguments).to_dict()["structuredContent"]
    return data


def gits_show(repo: Path, ref: str) -> tuple[str, bool]:
    """`git show` of `ref` as git_show bounds it: within MAX_PATCH_BYTES, a cut output without its partial line."""
    out = subprocess.run(["git", "-C", str(repo), *SHOW, ref, "--"], capture_output=True, check=True, env=WITHOUT_TERMINAL).stdout
    truncated = len(out) > MAX_PATCH_BYTES
    return cut_output(out[:MAX_PATCH_BYTES], truncated), truncated


@pytest.fixture
def awkward(tmp_path: Path) -> Path:
    """Commits whose show output is easy to get wrong: messages with tabs, trailing spaces, blank and CR
    lines, an empty message, a Latin-1 one; a root commit, a merge with a combined diff, a binary file, a
    rename, a file without a final line end, a commit whose patch is over the limit; and a lightweight and
    an annotated tag."""
    repo = make_repo(tmp_path / "awkward")
    (repo / "tabs.txt").write_text("no final line end")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Tabs\tand  trailing   \n\n\tindented\tbody\n\n\n   \nlast\r\nline")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty-message", "-m", "")
    git(repo, "mv", "tabs.txt", "renamed.txt")
    git(repo, "-c", "i18n.commitEncoding=ISO-8859-1", "commit", "-q", "-m", "Café crème")
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "README.md").write_text("# Demo\n\nSide.\n")
    git(repo, "commit", "-q", "-am", "Side")
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("# Demo\n\nMain.\n")
    git(repo, "commit", "-q", "-am", "Main")
    git_run(repo, "merge", "-q", "side", "-m", "Merge side")  # conflicts
    (repo / "README.md").write_text("# Demo\n\nBoth.\n")
    git(repo, "commit", "-q", "-am", "Merge side")
    (repo / "big.txt").write_text("".join(f"line {number} of a long file\n" for number in range(20_000)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Big")
    git(repo, "tag", "light")
    git(repo, "tag", "-a", "annotated", "-m", "An annotated tag")
    return repo


def test_show_of_every_commit_is_gits_own(awkward: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git_show of each commit, by id and by name, is the text git prints for it, bounded the same way; one git
    run each."""
    monkeypatch.setattr(git_walk, "RACY_NS", 0)
    commits = git(awkward, "rev-list", "--all").split()
    assert len(commits) == 10
    call(awkward, "git_status")  # the repository remembered
    started = count_runs(monkeypatch)
    cut = 0
    for ref in [*commits, "HEAD", "HEAD~1", "HEAD~1^2", "light", "side", "main@{0}"]:
        started.clear()
        data = call(awkward, "git_show", ref=ref)
        text, truncated = gits_show(awkward, ref)
        assert (data["text"], data["truncated"], data["type"]) == (text, truncated, "commit"), ref
        assert data["object"] == git(awkward, "rev-parse", f"{ref}^{{commit}}").strip()
        assert started == ["show"], (ref, started)
        cut += truncated
    assert cut == 4  # the big commit by id, as HEAD, light and main@{0}


def test_show_of_this_checkouts_history_is_gits_own(tmp_path: Path) -> None:
    """The real history of this project (long messages, large patches, renames, binary files): each of its last
    40 commits as git shows it."""
    if not (CHECKOUT / ".git").exists():
        pytest.skip("not a git checkout")  # (CI runs a clone: it is one)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(CHECKOUT), str(clone)], check=True)
    commits = git(clone, "rev-list", "--max-count=40", "HEAD").split()
    for commit in commits:
        data = call(clone, "git_show", ref=commit)
        assert (data["text"], data["truncated"]) == gits_show(clone, commit), commit


def test_what_is_not_a_commit_is_shown_as_before(awkward: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tag, a tree and a blob are shown as git_show always showed them, asked the checked way after the one
    run; a blob that holds a commit's show output (first shown to read as one without the mark) stays a blob."""
    forged = subprocess.run(["git", "-C", str(awkward), *SHOW, "HEAD~1"], capture_output=True, check=True).stdout
    (awkward / "forged.txt").write_bytes(forged)
    blob = git(awkward, "hash-object", "-w", "forged.txt").strip()
    plain = subprocess.run(["git", "-C", str(awkward), *SHOW, blob], capture_output=True, check=True).stdout
    assert plain.startswith(b"commit ") and plain == forged  # the attack: a blob that reads as a commit
    monkeypatch.setattr(git_walk, "RACY_NS", 0)
    shown = call(awkward, "git_show", ref=blob)
    assert (shown["type"], shown["object"], shown["text"]) == ("blob", blob, forged.decode())
    tag = call(awkward, "git_show", ref="annotated")
    assert tag["type"] == "tag" and tag["text"].startswith("tag annotated\nTagger: ")
    assert tag["object"] == git(awkward, "rev-parse", "annotated").strip()
    tree = call(awkward, "git_show", ref="HEAD^{tree}")
    assert tree["type"] == "tree" and "src/\n" in tree["text"]
    for ref, message in (("nope", "Unknown revision: 'nope' does not name an object in this repository"),
                         ("HEAD~1..HEAD", "Unknown revision: 'HEAD~1..HEAD' does not name an object in this repository"),
                         ("HEAD^!", "Unknown revision: 'HEAD^!' does not name an object in this repository"),
                         ("HEAD^@", "Unknown revision: 'HEAD^@' does not name an object in this repository")):
        assert direct(awkward, "git_show", {"ref": ref}) == (True, message)


def test_a_file_or_folder_as_of_a_revision_is_one_run(awkward: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git_show with a path: the file's text or the folder's names as `git cat-file` and `git ls-tree` give
    them, in one run; names a folder may hold (a line break, a tab, a name that is not UTF-8) listed as git
    lists them; a binary file, a missing one and a bad ref refused with the messages they always had."""
    odd = awkward / "odd"
    odd.mkdir()
    for name in ("line\nbreak.txt", "tab\there.txt", "plain.txt", os.fsdecode(b"latin-\xe9.txt")):
        (odd / name).write_text("x\n")
    (odd / "sub").mkdir()
    (odd / "sub" / "deep.txt").write_text("deep\n")
    (awkward / "big.txt").write_text("x" * (MAX_PATCH_BYTES + 100) + "\n")
    git(awkward, "add", "-A")
    git(awkward, "commit", "-q", "-m", "Odd names")
    monkeypatch.setattr(git_walk, "RACY_NS", 0)
    call(awkward, "git_status")
    started = count_runs(monkeypatch)
    for ref, path in (("HEAD", "README.md"), ("HEAD~3", "renamed.txt"), ("v1.0", "src/util.py"), ("HEAD", "odd"),
                      ("HEAD", "."), ("HEAD", "src"), ("annotated", "big.txt"), ("HEAD", "big.txt")):
        call(awkward, "git_show", ref=ref, path=path)  # (a repository is remembered by the folder asked from)
        started.clear()
        data = call(awkward, "git_show", ref=ref, path=path)
        assert started == ["cat-file"], (ref, path, started)
        assert data["object"] == git(awkward, "rev-parse", f"{ref}^{{commit}}").strip()
        if data["type"] == "tree":
            listed = subprocess.run(["git", "-C", str(awkward), "ls-tree", "-z", "--full-tree", f"{ref}:{path.strip('.')}"],
                                    capture_output=True, check=True).stdout
            names = [entry.split(b"\t", 1) for entry in listed.split(b"\0") if entry]
            shown = [name.decode("utf-8", "replace") + ("/" if b" tree " in meta else "") for meta, name in names]
            assert data["text"] == "".join(f"{name}\n" for name in shown), path
        else:
            content = subprocess.run(["git", "-C", str(awkward), "cat-file", "blob", f"{ref}:{path}"],
                                     capture_output=True, check=True).stdout
            assert data["truncated"] == (len(content) > MAX_PATCH_BYTES)
            assert data["text"] == cut_output(content[:MAX_PATCH_BYTES], data["truncated"]), path
    assert call(awkward, "git_show", ref="HEAD", path="odd")["text"] == (
        "latin-\ufffd.txt\nline\nbreak.txt\nplain.txt\nsub/\ntab\there.txt\n")
    for path, message in (("logo.png", "logo.png is a binary file in HEAD (264 bytes); git_show shows text only"),
                          ("nope.txt", "nope.txt does not exist in HEAD")):
        assert direct(awkward, "git_show", {"ref": "HEAD", "path": path}) == (True, message)
    assert direct(awkward, "git_show", {"ref": "nope", "path": "README.md"}) == (
        True, "Unknown revision: 'nope' does not name a commit in this repository")


def test_staged_diff_log_and_diff_of_a_ref_are_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A staged diff (also before the first commit), a log from a ref and a diff of a range: one git run each,
    git resolving the ref itself; a bad ref still gets the message naming it."""
    monkeypatch.setattr(git_walk, "RACY_NS", 0)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    (fresh / "a.txt").write_text("a\n")
    git(fresh, "add", "a.txt")
    call(fresh, "git_status")
    started = count_runs(monkeypatch)
    staged = call(fresh, "git_diff", staged=True)
    assert [entry["path"] for entry in staged["files"]] == ["a.txt"] and "+a" in staged["diff"]
    assert started == ["diff"]
    repo = make_repo(tmp_path / "repo")
    call(repo, "git_status")
    for name, arguments, expected in (
            ("git_diff", {"staged": True}, []),
            ("git_log", {"ref": "v1.0", "limit": 5}, ["Add greeting", "Initial commit"]),
            ("git_log", {"ref": "HEAD~2..", "limit": 5}, ["Rename util to helpers", "Add greeting"]),
            ("git_diff", {"ref": "HEAD~2..HEAD"}, ["src/app.py", "src/helpers.py"]),
            ("git_diff", {"ref": "v1.0"}, ["src/helpers.py"])):
        started.clear()
        data = call(repo, name, **arguments)
        found = [commit["subject"] for commit in data["commits"]] if name == "git_log" else [
            entry["path"] for entry in data["files"]]
        assert found == expected, (name, arguments, data)
        assert started == [name.removeprefix("git_")], (name, arguments, started)
    for name, arguments in (("git_log", {"ref": "nope"}), ("git_diff", {"ref": "nope"}),
                            ("git_log", {"ref": "nope..HEAD"}), ("git_diff", {"ref": "HEAD^!"}),
                            ("git_log", {"ref": "^HEAD"})):
        failed, text = direct(repo, name, arguments)
        assert failed and text.startswith("Unknown revision: ") and "does not name a commit" in text, (name, text)


# -- what the one run must not change (a review's findings, each first shown to matter) -----------------
def test_a_brace_in_the_ref_cannot_move_the_path_outside_the_root(tmp_path: Path) -> None:
    """git splits `REV:PATH` at the first ':' outside braces: a ref with an unclosed brace (`HEAD@{{now}`, the
    date "{now") and a path that closes it would have cat-file read a file outside a root inside a larger
    repository (shown first with plain git). The one run is not used for such a ref: the file is not found."""
    top = tmp_path / "big"
    (top / "root").mkdir(parents=True)
    (top / "out").mkdir()
    git(top, "init", "-q", "-b", "main")
    secret = "SECRET-" + os.urandom(8).hex()
    (top / "root" / "a.txt").write_text("a\n")
    (top / "out" / "secret.txt").write_text(secret + "\n")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "Initial commit")
    root = top / "root"
    assert secret in git_run(root, "cat-file", "-p", "HEAD@{{now}^{commit}:root/x}:out/secret.txt").stdout  # the attack
    for path in ("x}:out/secret.txt", "x}:out", "x}:"):
        failed, text = direct(root, "git_show", {"ref": "HEAD@{{now}", "path": path})
        assert failed and secret not in text and "does not exist" in text, (path, text)
    with Tools(root) as tools:
        assert tools.error("git_show", {"ref": "HEAD@{{now}", "path": "x}:out/secret.txt"}) == (
            "x}:out/secret.txt does not exist in HEAD@{{now}")
        assert tools.text("git_show", {"ref": "HEAD@{0}", "path": "a.txt"}) == "a"  # a balanced brace still works


def test_names_the_one_run_cannot_carry_are_asked_the_checked_way(tmp_path: Path) -> None:
    """A file named with a final CR (cat-file drops a CR before a line end: it read the file without it), a path
    over cat-file's input bound in UTF-8 bytes: each gets the answer or the error it always had; a ref with a
    lone surrogate (no bytes at all: an internal error, or "Invalid argument") is refused, saying why."""
    repo = make_repo(tmp_path / "repo")
    (repo / "a").write_text("plain a\n")
    (repo / "a\r").write_text("a with CR\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "CR")
    failed, text = direct(repo, "git_show", {"ref": "HEAD", "path": "a\r"})
    assert not failed and "a with CR" in text and "plain a" not in text
    long = "/".join(["中" * 80] * 20)
    assert direct(repo, "git_show", {"ref": "HEAD", "path": long}) == (True, f"{long} does not exist in HEAD")
    for path in ("README.md", None):
        assert direct(repo, "git_show", {"ref": "HEAD\ud800", "path": path}) == (
            True, "A ref cannot contain a lone surrogate (\\ud800-\\udfff)")


def test_a_huge_commit_object_is_never_read_into_memory(tmp_path: Path) -> None:
    """cat-file prints the commit before the file: a commit of 24 MiB of message (packed small) stops the one
    run at its header, and the checked way reads none of it."""
    import tracemalloc  # (this test alone)

    repo = make_repo(tmp_path / "repo")
    message = tmp_path / "message"
    message.write_bytes(b"huge\n\n" + b"x" * (24 * 1024 * 1024) + b"\n")
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    commit = git(repo, "commit-tree", tree, "-p", "HEAD", "-F", str(message)).strip()
    git(repo, "update-ref", "refs/heads/main", commit)
    git(repo, "gc", "-q", "--prune=now")
    tracemalloc.start()
    try:
        failed, text = direct(repo, "git_show", {"ref": "HEAD", "path": "README.md"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not failed and "A demo project." in text
    assert peak < 8 * 1024 * 1024, peak


def test_folders_are_listed_as_ls_tree_lists_them(tmp_path: Path) -> None:
    """A folder entry written `040000` (old tools did) is a folder; a folder whose listing is over the limit is
    cut as ls-tree's listing was (truncated), not given whole because its tree object is smaller."""
    repo = make_repo(tmp_path / "repo")
    sub = bytes.fromhex(git(repo, "rev-parse", "HEAD:src").strip())
    blob = bytes.fromhex(git(repo, "rev-parse", "HEAD:README.md").strip())
    raw = b"100644 README.md\0" + blob + b"040000 src\0" + sub
    tree = subprocess.run(["git", "hash-object", "-w", "-t", "tree", "--literally", "--stdin"], cwd=repo, input=raw,
                          capture_output=True, check=True).stdout.decode().strip()
    commit = git(repo, "commit-tree", tree, "-p", "HEAD", "-m", "padded").strip()
    git(repo, "update-ref", "refs/heads/main", commit)
    assert call(repo, "git_show", ref="HEAD", path=".")["text"] == "README.md\nsrc/\n"
    empty = git(repo, "hash-object", "-w", "--stdin").strip()
    listed = "".join(f"100644 {empty}\tbig/f{number:010d}\n" for number in range(6000)).encode()
    subprocess.run(["git", "update-index", "--index-info"], cwd=repo, input=listed, check=True)
    git(repo, "commit", "-qm", "A big folder")
    assert int(git(repo, "cat-file", "-s", "HEAD:big")) < MAX_PATCH_BYTES  # the object fits, its listing does not
    shown = call(repo, "git_show", ref="HEAD", path="big")
    assert shown["truncated"] is True and shown["text"].startswith("f0000000000\n")


@pytest.mark.parametrize("target", ["tree", "blob"])
def test_a_staged_diff_where_head_names_no_commit(tmp_path: Path, target: str) -> None:
    """A hostile HEAD holding a tree's or a blob's id: git compares the index with the tree HEAD names (no
    change), and fails on a blob, where the staged diff compares the index with the empty tree, as before a
    first commit, instead of giving git's usage text."""
    repo = make_repo(tmp_path / "repo")
    object_id = git(repo, "rev-parse", "HEAD^{tree}" if target == "tree" else "HEAD:README.md").strip()
    (repo / ".git" / "HEAD").write_text(object_id + "\n")
    data = call(repo, "git_diff", staged=True)
    if target == "tree":
        assert data["files"] == [] and git(repo, "diff", "--cached") == ""
    else:
        assert git_run(repo, "diff", "--cached").returncode != 0  # git alone fails here
        assert len(data["files"]) == 5 and all(entry["deleted"] == 0 for entry in data["files"]), data["files"]
