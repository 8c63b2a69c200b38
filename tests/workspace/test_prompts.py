"""--prompts through the real `shipcode-mcp` process: the prompts built from the tools, their refusals and the
result budget they keep (their completions: test_completion.py).

Every line the server writes is checked against the official 2025-06-18 schema by `McpProcess`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support import HANDSHAKE, HANDSHAKE_REPLY, INITIALIZED, McpProcess
from workspace_support import CANARY, git, make_outside, make_repo

INVALID = -32602


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """make_repo's project with README.md changed and one untracked file."""
    root = make_repo(tmp_path / "project")
    (root / "README.md").write_text("# Demo\n\nA demo project, changed.\n")
    (root / "notes.txt").write_text("untracked\n")
    return root


def start(root: Path, *args: str) -> McpProcess:
    process = McpProcess("--prompts", *args, str(root))
    process.initialize()
    return process


def texts(reply: dict[str, Any]) -> list[str]:
    """The text of each message of a prompts/get answer (every message a user's text)."""
    messages = reply["result"]["messages"]
    assert all(m["role"] == "user" and m["content"]["type"] == "text" for m in messages), messages
    return [m["content"]["text"] for m in messages]


def get(process: McpProcess, prompt: str, /, **arguments: str) -> dict[str, Any]:
    return process.request("prompts/get", {"name": prompt, "arguments": arguments}, timeout=60)


def error(reply: dict[str, Any]) -> tuple[int, str]:
    return reply["error"]["code"], reply["error"]["message"]


# -- what is offered ----------------------------------------------------------------------------------------

def test_without_prompts_nothing_more_is_offered(repo: Path) -> None:
    """The default configuration still advertises exactly tools and resources, and refuses the methods."""
    with McpProcess(str(repo)) as process:
        process.send(HANDSHAKE)
        assert process.read_raw() == (HANDSHAKE_REPLY + "\n").encode()
        process.send(INITIALIZED)
        assert error(process.request("prompts/list"))[0] == -32601
        ref = {"type": "ref/resource", "uri": repo.resolve().as_uri() + "/{+path}"}
        assert error(process.request("completion/complete", {"ref": ref, "argument": {"name": "path", "value": ""}}))[0] == -32601


def test_prompts_and_completions_are_advertised_and_listed(repo: Path) -> None:
    with McpProcess("--prompts", str(repo)) as process:
        reply = process.initialize()
        assert reply["result"]["capabilities"] == {"tools": {}, "resources": {}, "prompts": {}, "completions": {}}
        listed = process.request("prompts/list")["result"]["prompts"]
        assert [(p["name"], [(a["name"], a.get("required", False)) for a in p["arguments"]]) for p in listed] == [
            ("review_changes", [("path", False), ("staged", False)]),
            ("explain_symbol", [("name", True), ("path", False)]),
            ("path_history", [("path", True), ("limit", False)]),
        ]
        assert all(p["title"] and p["description"] for p in listed)


# -- review_changes -------------------------------------------------------------------------------------------

def test_review_changes_hands_over_the_status_and_every_uncommitted_change(repo: Path) -> None:
    (repo / "src" / "app.py").write_text((repo / "src" / "app.py").read_text() + "\n\ndef bye():\n    return 1\n")
    git(repo, "add", "src/app.py")  # staged; README.md is not: both are uncommitted changes
    with start(repo) as process:
        task, status, staged, unstaged = texts(get(process, "review_changes"))
        assert task.startswith("Review every uncommitted change: the staged ones (what the next commit holds), then")
        assert status.splitlines()[0] == "git_status {}"
        assert {" M README.md", "M  src/app.py", "?? notes.txt"} <= set(status.splitlines())
        assert staged.splitlines()[0] == 'git_diff {"staged":true}' and "+def bye():" in staged
        assert "A demo project, changed." not in staged
        assert unstaged.splitlines()[0] == "git_diff {}" and "+A demo project, changed." in unstaged
        assert "def bye" not in unstaged

        assert [part.splitlines()[0] for part in texts(get(process, "review_changes", staged="true"))[2:]] == [
            'git_diff {"staged":true}']
        _, _, under_staged, under = texts(get(process, "review_changes", path="README.md"))
        assert under_staged.splitlines()[0] == 'git_diff {"staged":true,"path":"README.md"}' and "def bye" not in under_staged
        assert under.splitlines()[0] == 'git_diff {"path":"README.md"}' and "+A demo project, changed." in under


def test_review_changes_before_the_first_commit_reviews_what_is_staged_and_what_is_not(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "first.py").write_text("print('first')\n")
    git(root, "add", "first.py")
    (root / "first.py").write_text("print('first')\nprint('unstaged edit')\n")
    with start(root) as process:
        _, status, staged, unstaged = texts(get(process, "review_changes"))
        assert "AM first.py" in status.splitlines()
        assert "+print('first')" in staged and "unstaged edit" not in staged
        assert "+print('unstaged edit')" in unstaged


def test_review_changes_covers_every_root(tmp_path: Path) -> None:
    """git_diff without a path is the first root's: with several roots, each root's changes are asked for."""
    roots = [make_repo(tmp_path / name) for name in ("one", "two")]
    for root in roots:
        (root / "README.md").write_text(f"changed in {root.name}\n")
    with McpProcess("--prompts", *map(str, roots)) as process:
        process.initialize()
        diffs = texts(get(process, "review_changes"))[2:]
    assert [diff.splitlines()[0] for diff in diffs] == [
        f'git_diff {{{kind}"path":"{root.resolve()}"}}' for root in roots for kind in ('"staged":true,', "")]
    assert "+changed in one" in diffs[1] and "+changed in two" in diffs[3]


def test_review_changes_refusals_are_invalid_params_in_the_tools_words(repo: Path, tmp_path: Path) -> None:
    outside = make_outside(tmp_path / "outside")
    plain = tmp_path / "plain"
    plain.mkdir()
    with start(repo) as process:
        assert error(get(process, "review_changes", staged="maybe")) == (INVALID, "staged must be true or false")
        code, message = error(get(process, "review_changes", path=str(outside / "secret.txt")))
        assert code == INVALID and message.startswith("git_diff: ") and "outside" in message
        assert CANARY not in message
    with start(plain) as process:
        code, message = error(get(process, "review_changes"))
        assert code == INVALID and message.startswith("git_status: ") and "not in a git repository" in message


def test_a_prompt_keeps_the_result_budget(repo: Path) -> None:
    """Each tool's answer in a prompt is cut as the tool's own call would be (--max-result-tokens)."""
    (repo / "README.md").write_text("".join(f"line {n} of a long change\n" for n in range(5000)))
    with start(repo, "--max-result-tokens", "1000") as process:
        _, _, _, diff = texts(get(process, "review_changes"))
        assert len(diff) < 1000 * 4 and "line 4999" not in diff and "cut" in diff.lower()
    with start(repo, "--max-result-tokens", "0") as process:
        _, _, _, whole = texts(get(process, "review_changes"))
        assert "+line 4999 of a long change" in whole


# -- explain_symbol and path_history ------------------------------------------------------------------------------

def test_explain_symbol_hands_over_the_definition_its_code_and_its_references(repo: Path) -> None:
    with start(repo) as process:
        task, found, code, references = texts(get(process, "explain_symbol", name="answer"))
        assert task.startswith("Explain what `answer` does")
        assert found.splitlines() == ['find_symbol {"name":"answer","path":".","limit":20}',
                                      "src/helpers.py:1-2 function answer: def answer()"]
        assert code.splitlines()[0] == 'read_symbol {"path":"src/helpers.py","name":"answer"}'
        assert "return 42" in code
        assert references.splitlines()[0] == 'find_references {"name":"answer","path":".","limit":30}'
        assert "src/app.py:5:17: return util.answer()" in references

        code_, message = error(get(process, "explain_symbol", name="no_such_name"))
        assert code_ == INVALID and message.startswith("find_symbol: No definition of 'no_such_name' in the workspace root")
        assert error(get(process, "explain_symbol", name="ans*"))[1].startswith("name must be a symbol's name")
        assert error(process.request("prompts/get", {"name": "explain_symbol", "arguments": {}})) == (
            INVALID, "Missing required argument: name")


def test_path_history_hands_over_the_paths_log(repo: Path) -> None:
    with start(repo) as process:
        task, log = texts(get(process, "path_history", path="src/app.py", limit="1"))
        assert task.startswith("Summarise the history of src/app.py")
        assert log.splitlines()[0] == 'git_log {"path":"src/app.py","limit":1}'
        assert "Add greeting" in log and "Initial commit" not in log
        _, whole = texts(get(process, "path_history", path="src/app.py"))
        assert "Add greeting" in whole and "Initial commit" in whole
        for limit in ("0", "201", "-1", "x", "1e3", "\u00b2", "\uff13", "\u0663", "12345678901234567890"):
            assert error(get(process, "path_history", path="src/app.py", limit=limit)) == (
                INVALID, "limit must be a whole number from 1 to 200"), limit


@pytest.mark.parametrize("links", [[], ["--resource-links"]])
def test_a_prompt_as_a_whole_keeps_the_budget_and_a_long_status_is_cut(repo: Path, links: list[str]) -> None:
    """Each tool's answer gets its share of the budget; git_status (which no budget cuts) stops after 200 lines.
    With --resource-links too (the tools' results then carry links, which a prompt leaves out)."""
    for number in range(3000):
        (repo / f"untracked-{number:04d}.txt").write_text("x\n")
    (repo / "README.md").write_text("".join(f"line {n} of a long change\n" for n in range(5000)))
    git(repo, "add", "README.md")
    (repo / "src" / "app.py").write_text("".join(f"# edit {n}\n" for n in range(5000)))
    with start(repo, "--max-result-tokens", "3000", *links) as process:
        _, status, staged, unstaged = texts(get(process, "review_changes"))
    assert len(status.splitlines()) == 201 and status.endswith("more lines: call git_status for all of it]")
    for diff in (staged, unstaged):  # a third of 3000 tokens is under the least a share gets: 1000 each
        assert len(diff.encode()) <= 1000 * 3 and "cut" in diff.lower(), diff[-300:]


def test_what_a_prompt_repeats_of_its_arguments_is_printable(repo: Path) -> None:
    """A name that reverses the line (U+202E) or breaks it is shown escaped, as every tool shows it."""
    name = "\u202eevil\nname.txt"
    (repo / name).write_text("x\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", "Add an awkward name")
    with start(repo) as process:
        task, log = texts(get(process, "path_history", path=name))
    assert "\u202e" not in task + log and "\\u202eevil\\nname.txt" in task
    assert log.splitlines()[0] == 'git_log {"path":"\\u202eevil\\nname.txt","limit":20}'


def test_explain_symbol_says_why_it_found_no_definition(repo: Path) -> None:
    (repo / "big.py").write_text("def target():\n    pass\n" + "# padding\n" * 60_000)
    with start(repo) as process:
        code, message = error(get(process, "explain_symbol", name="target"))
    assert code == INVALID and message.startswith("find_symbol: No definition of 'target'")
    assert "big.py (too large" in message


def test_explain_symbols_parts_keep_their_share_with_links(repo: Path) -> None:
    """With --resource-links the tools' results carry links after their text: a prompt takes the text alone and
    still cuts each part to its share (budget.fit leaves a result of several items as it is)."""
    for number in range(40):
        (repo / "src" / f"user{number:02d}.py").write_text(
            "from helpers import answer\n" + "".join(f"value_{n} = answer()\n" for n in range(60)))
    with start(repo, "--max-result-tokens", "3000", "--resource-links") as process:
        _, _, _, references = texts(get(process, "explain_symbol", name="answer"))
    assert len(references.encode()) <= 1000 * 3 and "1000 tokens" in references, references[-300:]
