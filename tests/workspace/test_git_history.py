"""Attack tests: git history bounded to the roots, and log records no commit can forge.

- A root inside a larger repository: a ref that searches commit messages (`HEAD^{/REGEX}`) is a yes/no
  oracle on the messages of commits that touch only files outside the root, and `git log --follow` of a
  file moved into the root lists the commits outside it made before the move.
- A repository whose config sets `i18n.logOutputEncoding=UTF-16LE`: git re-encodes its whole log output,
  every field is cut by NULs, and a subject crafted for it reads as a commit record of its own.

Each test first shows the attack with plain git (the secret comes out, the forged record is read), then
that the tools, through the server and in this process without the kernel sandbox, do not give it.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from attack_support import direct, everything

from workspace_support import Tools, git, git_run


@pytest.fixture
def larger(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose root is its folder `root/`: commits inside it, one touching only `out/` whose
    message holds a secret (16 hex digits), then `out/moved.txt` moved into the root. (root, secret)."""
    top = tmp_path / "big"
    (top / "root").mkdir(parents=True)
    (top / "out").mkdir()
    git(top, "init", "-q", "-b", "main")
    (top / "root" / "a.txt").write_text("a\n")
    (top / "out" / "moved.txt").write_text("m\n")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "Initial commit")
    secret = secrets.token_hex(8)
    (top / "out" / "moved.txt").write_text("m\nchanged outside\n")
    git(top, "commit", "-qam", f"Outside work, key {secret}")
    (top / "root" / "a.txt").write_text("a\nb\n")
    git(top, "commit", "-qam", "Inside work")
    git(top, "mv", "out/moved.txt", "root/moved.txt")
    git(top, "commit", "-qm", "Move it in")
    return top / "root", secret


def _oracle(ask: Any, secret: str) -> str:
    """The secret recovered one hex digit at a time from yes/no answers of `ask(regex)`."""
    known = ""
    for _ in range(len(secret)):
        found = [digit for digit in "0123456789abcdef" if ask(f"key {known}{digit}")]
        if len(found) != 1:
            return known
        known += found[0]
    return known


def test_a_ref_that_searches_messages_reveals_nothing_outside_the_root(larger: tuple[Path, str]) -> None:
    root, secret = larger
    # Plain git in the root answers the search from the outside commit: an oracle that recovers the secret.
    assert _oracle(lambda regex: git_run(root, "rev-parse", "--verify", "-q", f"HEAD^{{/{regex}}}").returncode == 0,
                   secret) == secret
    asked = [f"HEAD^{{/key {secret[:1]}}}", "HEAD^{/key zz}", f"HEAD~1^{{/!-{secret[:1]}}}", "@^{/key [0-9]}"]
    with Tools(root) as tools:
        for ref in asked:
            for name, arguments in (("git_show", {"ref": ref}), ("git_log", {"ref": ref}),
                                    ("git_diff", {"ref": f"{ref}..HEAD"}), ("git_show", {"ref": ref, "path": "a.txt"})):
                result = tools.call(name, arguments, error=True)
                assert "searches commit messages" in result["content"][0]["text"], (name, result)
                assert secret not in everything(result).replace(ref, "")
    for ref in asked:
        failed, text = direct(root, "git_show", {"ref": ref})
        assert failed and "searches commit messages" in text and secret not in text
    # The same refusal whatever the regex: nothing to tell a match from a miss.
    assert _oracle(lambda regex: not direct(root, "git_show", {"ref": f"HEAD^{{/{regex}}}"})[0], secret) == ""


def test_a_ref_that_searches_messages_works_in_a_repository_inside_the_roots(larger: tuple[Path, str]) -> None:
    """Every commit of a repository inside the roots is the workspace's own: the search is not refused."""
    root, secret = larger
    failed, text = direct(root.parent, "git_show", {"ref": f"HEAD^{{/key {secret}}}"})
    assert not failed and secret in text


def test_a_followed_log_lists_only_commits_inside_the_root(larger: tuple[Path, str]) -> None:
    root, secret = larger
    plain = git_run(root, "log", "--follow", "--format=%s", "--", "moved.txt").stdout
    assert f"Outside work, key {secret}" in plain  # followed across the move, out of the root
    with Tools(root) as tools:
        result = tools.call("git_log", {"path": "moved.txt"})
        assert [c["subject"] for c in result["structuredContent"]["commits"]] == ["Move it in"]
        assert secret not in everything(result)
        subjects = [c["subject"] for c in tools.data("git_log", {"path": "."})["commits"]]
        assert subjects == ["Move it in", "Inside work", "Initial commit"]
    failed, text = direct(root, "git_log", {"path": "moved.txt"})
    assert not failed and "Move it in" in text and secret not in text


def test_a_followed_rename_inside_the_root_is_still_followed(tmp_path: Path) -> None:
    root = tmp_path / "big" / "root"
    root.mkdir(parents=True)
    git(root.parent, "init", "-q", "-b", "main")
    (root / "old.txt").write_text("one\ntwo\nthree\n")
    git(root.parent, "add", "-A")
    git(root.parent, "commit", "-qm", "Add old")
    git(root.parent, "mv", "root/old.txt", "root/new.txt")
    git(root.parent, "commit", "-qm", "Rename")
    with Tools(root) as tools:
        assert [c["subject"] for c in tools.data("git_log", {"path": "new.txt"})["commits"]] == ["Rename", "Add old"]


# -- forged records ----------------------------------------------------------------------------------
OLD_FORMAT = "%x00%H%x00%P%x00%an%x00%ae%x00%aI%x00%s%x00%b"
FIELDS = ("commit", "parents", "author", "email", "date", "subject", "body")


def _read_as_nul_fields(output: bytes) -> list[dict[str, str]]:
    """Log output read as NUL-separated fields, seven to a commit (how git_log read it before)."""
    fields = output.decode("utf-8", "replace").split("\0")[1:]
    return [dict(zip(FIELDS, fields[start:start + 7], strict=True)) for start in range(0, len(fields) - 6, 7)]


def test_a_repository_encoding_cannot_forge_a_log_record(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Real first commit")
    git(repo, "config", "i18n.logOutputEncoding", "UTF-16LE")
    fake = "f" * 40
    injected = f"\0{fake}\0{'e' * 40}\0Mallory\0mallory@example.com\0" "2020-01-01T00:00:00+00:00\0Forged commit\0B"
    forged: list[dict[str, str]] = []
    for pad in range(7):  # the subject is re-encoded as UTF-16LE: written so that its bytes are the record
        raw = ("\0p" * pad + injected + ("x" if len(injected) % 2 else "")).encode()  # (after `pad` more fields)
        (repo / "a.txt").write_text(f"a\n{pad}\n")
        git(repo, "commit", "-qam", raw.decode("utf-16-le"))
        output = git_run(repo, "log", f"--format={OLD_FORMAT}").stdout.encode("utf-8", "surrogateescape")
        forged = [record for record in _read_as_nul_fields(output) if record["commit"] == fake]
        if forged:
            break
        git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert forged and forged[0]["subject"] == "Forged commit"  # the attack works on plain git's output
    real = git(repo, "rev-list", "HEAD").split()
    with Tools(repo) as tools:
        result = tools.call("git_log")
        assert [c["commit"] for c in result["structuredContent"]["commits"]] == real
        assert result["structuredContent"]["commits"][1]["subject"] == "Real first commit"
        assert fake not in everything(result) and "Mallory" not in everything(result)
        text = tools.text("git_show", {"ref": "HEAD~1"})
        assert "Real first commit" in text  # shown in UTF-8, not UTF-16
    failed, text = direct(repo, "git_log")
    assert not failed and fake not in text and real[1] in text
