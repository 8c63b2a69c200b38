"""--confirm-writes with the official SDK as the client, in both eras (2026-07-28: the question comes back in an
input_required result and the call is retried with the answer; 2025-06-18: an elicitation/create request),
over stdio and HTTP: the user sees what the change would do and only a yes makes it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext

from interop.client_support import SHIPCODE, shipcode_http, stdio_params
from workspace_support import git, make_repo

MODES = [("auto", "stdio"), ("legacy", "stdio"), ("auto", "http"), ("legacy", "http")]


@dataclass
class User:
    """The person behind the client: answers each question with `answer` (after `meanwhile`, once), and keeps
    the questions."""

    answer: str = "yes"  # yes, no (accept with confirm false), decline, cancel
    meanwhile: Callable[[], object] | None = None
    asked: list[str] = field(default_factory=list)

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams), params
        assert params.requested_schema["required"] == ["confirm"], params.requested_schema
        self.asked.append(params.message)
        if self.meanwhile is not None:
            self.meanwhile()
            self.meanwhile = None
        if self.answer in ("decline", "cancel"):
            return types.ElicitResult(action=self.answer)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content={"confirm": self.answer == "yes"})


@asynccontextmanager
async def connect(root: Path, mode: str, transport: str, user: User | None) -> AsyncIterator[Client]:
    options: dict[str, Any] = {"elicitation_callback": user} if user is not None else {}
    if transport == "stdio":
        async with Client(stdio_params(SHIPCODE, "--confirm-writes", str(root)), mode=mode, **options) as client:
            yield client
        return
    with shipcode_http("--confirm-writes", str(root)) as url:
        async with Client(url, mode=mode, **options) as client:
            yield client


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def call(root: Path, mode: str, transport: str, user: User | None, name: str,
         arguments: dict[str, Any]) -> types.CallToolResult:
    outcome: list[types.CallToolResult] = []

    async def main() -> None:
        async with connect(root, mode, transport, user) as client:
            outcome.append(await client.call_tool(name, arguments))

    anyio.run(main)
    return outcome[0]


@pytest.mark.parametrize(("mode", "transport"), MODES, ids=[f"{m}-{t}" for m, t in MODES])
def test_a_change_is_made_only_once_the_user_said_yes(tmp_path: Path, mode: str, transport: str) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("one\n")
    arguments = {"path": "notes.txt", "content": "one\ntwo\n"}
    for answer, said in (("no", "did not confirm"), ("decline", "declined"), ("cancel", "cancelled")):
        user = User(answer)
        result = call(tmp_path, mode, transport, user, "write_file", arguments)
        assert result.is_error and f"The user {said} write_file; nothing was changed." == text_of(result)
        assert target.read_text() == "one\n"
        assert user.asked and user.asked[0].startswith("Allow write_file?\n\nArguments:\n")
        assert "Dry run: would write notes.txt" in user.asked[0]
        assert "+two" in user.asked[0]
    user = User("yes")
    result = call(tmp_path, mode, transport, user, "write_file", arguments)
    assert not result.is_error, text_of(result)
    assert target.read_text() == "one\ntwo\n" and len(user.asked) == 1
    assert text_of(result).startswith("Wrote notes.txt")


def test_what_is_written_is_what_the_user_saw(tmp_path: Path) -> None:
    """The file changes while the user reads the question. 2025-06-18: the write is pinned to the version shown,
    and refused. 2026-07-28: the call runs again with the answer, sees another diff, and asks again: the user
    says yes to the text that is then written."""
    target = tmp_path / "notes.txt"

    def someone_edits() -> None:
        target.write_text("one\nedited meanwhile\n")

    for mode in ("legacy", "auto"):
        target.write_text("one\n")
        user = User("yes", someone_edits)
        result = call(tmp_path, mode, "stdio", user, "edit_file", {"path": "notes.txt", "old_text": "one", "new_text": "1"})
        if mode == "legacy":
            assert result.is_error and "changed while the user was reading it" in text_of(result), text_of(result)
            assert target.read_text() == "one\nedited meanwhile\n" and len(user.asked) == 1
        else:
            assert not result.is_error, text_of(result)
            assert len(user.asked) == 2 and "+edited meanwhile" not in user.asked[0]
            assert " edited meanwhile" in user.asked[1]  # the second question shows the file as it is now
            assert target.read_text() == "1\nedited meanwhile\n"


def test_a_client_that_cannot_be_asked_is_refused_and_a_dry_run_needs_no_question(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("keep\n")
    for mode in ("auto", "legacy"):
        result = call(tmp_path, mode, "stdio", None, "delete_path", {"path": "keep.txt"})
        assert result.is_error and "cannot be asked here (the client offers no elicitation" in text_of(result)
        assert "--allow-write" in text_of(result) and (tmp_path / "keep.txt").exists()
        result = call(tmp_path, mode, "stdio", None, "delete_path", {"path": "keep.txt", "dry_run": True})
        assert not result.is_error and "would delete keep.txt" in text_of(result)
        result = call(tmp_path, mode, "stdio", None, "create_directory", {"path": f"made-{mode}"})
        assert not result.is_error and (tmp_path / f"made-{mode}").is_dir()  # only adds: not asked


def test_a_commit_shows_its_message_and_what_is_staged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "user.name", "Ada")
    git(repo, "config", "user.email", "ada@example.com")
    (repo / "README.md").write_text("# Demo\n\nConfirmed.\n")
    git(repo, "add", "README.md")
    head = git(repo, "rev-parse", "HEAD")
    user = User("no")
    result = call(repo, "auto", "stdio", user, "git_commit", {"message": "Confirm me"})
    assert result.is_error and git(repo, "rev-parse", "HEAD") == head
    assert user.asked[0].startswith('Allow git_commit?\n\nArguments:\n{\n "message": "Confirm me"\n}\n\n'
                                    "The commit would record:\n1 file: README.md (+1 -1)\n")
    assert "+Confirmed." in user.asked[0]
    user = User("yes")
    assert not call(repo, "auto", "stdio", user, "git_commit", {"message": "Confirm me"}).is_error
    assert git(repo, "log", "-1", "--format=%s").strip() == "Confirm me"
    (repo / "README.md").write_text("discard me\n")
    user = User("yes")
    assert not call(repo, "legacy", "stdio", user, "git_restore", {"paths": ["README.md"]}).is_error
    assert "Would restore the working tree of 1 path" in user.asked[0] and "+discard me" in user.asked[0]
    assert (repo / "README.md").read_text() == "# Demo\n\nConfirmed.\n"


def test_a_commit_shows_all_it_would_record_and_is_pinned_to_it(tmp_path: Path) -> None:
    """The question shows the whole commit: every staged file (not only those under `path`), a path's working
    tree content (what --only takes, staged or not), an amend's replaced commit; a file staged while the user
    reads makes the commit refused."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "user.name", "Ada")
    git(repo, "config", "user.email", "ada@example.com")
    (repo / "README.md").write_text("staged elsewhere\n")
    (repo / "src" / "app.py").write_text("print('staged')\n")
    git(repo, "add", "README.md", "src/app.py")
    user = User("no")
    call(repo, "legacy", "stdio", user, "git_commit", {"message": "Only src?", "path": "src"})
    assert "+staged elsewhere" in user.asked[0] and "+print('staged')" in user.asked[0]
    (repo / "docs" / "guide.md").write_text("UNSTAGED secret\n")
    user = User("no")
    call(repo, "legacy", "stdio", user, "git_commit", {"message": "Paths", "paths": ["docs/guide.md"]})
    assert "+UNSTAGED secret" in user.asked[0] and "+staged elsewhere" not in user.asked[0]
    user = User("no")
    call(repo, "legacy", "stdio", user, "git_commit", {"message": "Amend", "amend": True, "author": "Mallory <m@x>"})
    assert '"amend": true' in user.asked[0] and "Mallory <m@x>" in user.asked[0]
    assert "src/helpers.py" in user.asked[0]  # the commit replaced (a rename) is part of what is recorded
    head = git(repo, "rev-parse", "HEAD")
    user = User("yes", lambda: git(repo, "add", "docs/guide.md"))
    result = call(repo, "legacy", "stdio", user, "git_commit", {"message": "Pinned"})
    assert result.is_error and "changed while the user was reading it" in text_of(result)
    assert git(repo, "rev-parse", "HEAD") == head


def test_deletes_moves_and_patches_are_pinned_to_what_was_shown(tmp_path: Path) -> None:
    """2025-06-18: what the user said yes to changes meanwhile (a file appears where a move overwrites or a
    write creates, a folder being deleted gains a file, a file a patch deletes is edited): refused."""
    (tmp_path / "draft.txt").write_text("draft\n")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "a.txt").write_text("a\n")
    (tmp_path / "gone.py").write_text("x = 1\n")
    cases: list[tuple[str, dict[str, Any], Callable[[], object], Path, str]] = [
        ("move_path", {"source": "draft.txt", "destination": "final.txt", "overwrite": True},
         lambda: (tmp_path / "final.txt").write_text("mine\n"), tmp_path / "final.txt", "mine\n"),
        ("delete_path", {"path": "old", "recursive": True},
         lambda: (tmp_path / "old" / "new work.txt").write_text("new\n"), tmp_path / "old" / "new work.txt", "new\n"),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Delete File: gone.py\n*** End Patch"},
         lambda: (tmp_path / "gone.py").write_text("x = 1\ny = 2\n"), tmp_path / "gone.py", "x = 1\ny = 2\n"),
        ("write_file", {"path": "new.txt", "content": "theirs\n"},
         lambda: (tmp_path / "new.txt").write_text("mine\n"), tmp_path / "new.txt", "mine\n"),
    ]
    for name, arguments, meanwhile, kept, text in cases:
        user = User("yes", meanwhile)
        result = call(tmp_path, "legacy", "stdio", user, name, arguments)
        assert result.is_error and "changed while the user was reading it" in text_of(result), (name, text_of(result))
        assert kept.read_text() == text, name


def test_the_question_masks_controls_and_says_what_it_cut(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("ok = True\n")
    user = User("no")
    call(tmp_path, "legacy", "stdio", user, "write_file", {"path": "a.txt", "content": "ok = True\x1b[2K\r    ok = False\n"})
    question = user.asked[0]
    assert "\x1b" not in question and "\r" not in question  # a terminal would have hidden the change
    assert "+ok = True\\x1b[2K\\r    ok = False" in question
    user = User("no")
    call(tmp_path, "legacy", "stdio", user, "write_file", {"path": "a.txt", "content": "# filler\n" * 2000})
    assert "more characters of this change are not shown here: call write_file with dry_run true" in user.asked[0]


def test_listings_are_not_asked_about(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for name in ("git_branch", "git_stash"):
        result = call(repo, "legacy", "stdio", None, name, {"action": "list"})
        assert not result.is_error, text_of(result)
