"""completion/complete of --prompts through the real `shipcode-mcp` process: paths of the resource templates and
of the prompts' arguments, one folder at a time, from what the resources serve; nothing outside the roots.

Every line the server writes is checked against the official 2025-06-18 schema by `McpProcess`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shipcode_mcp.workspace.uris import file_uri
from support import McpProcess
from workspace_support import make_outside, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """make_repo's project with one untracked file."""
    root = make_repo(tmp_path / "project")
    (root / "notes.txt").write_text("untracked\n")
    return root


def start(root: Path) -> McpProcess:
    process = McpProcess("--prompts", str(root))
    process.initialize()
    return process


def complete(process: McpProcess, ref: dict[str, str], name: str, value: str) -> list[str]:
    reply = process.request("completion/complete", {"ref": ref, "argument": {"name": name, "value": value}})
    completion = reply["result"]["completion"]
    assert completion["total"] == len(completion["values"]) and completion["hasMore"] is False, completion
    values: list[str] = completion["values"]
    return values


def test_paths_complete_one_folder_at_a_time_from_what_is_served(repo: Path) -> None:
    (repo / "build").mkdir()
    (repo / "build" / "out.txt").write_text("ignored\n")
    (repo / "app.log").write_text("ignored\n")
    (repo / "a b%.txt").write_text("awkward name\n")
    template = {"type": "ref/resource", "uri": file_uri(str(repo.resolve())) + "/{+path}"}
    prompt = {"type": "ref/prompt", "name": "path_history"}
    with start(repo) as process:
        assert complete(process, template, "path", "") == [
            ".gitignore", "README.md", "a%20b%25.txt", "docs/", "notes.txt", "src/"]
        assert complete(process, template, "path", "src/") == ["src/app.py", "src/helpers.py"]
        assert complete(process, template, "path", "src/h") == ["src/helpers.py"]
        assert complete(process, template, "path", "a%20") == ["a%20b%25.txt"]
        assert complete(process, prompt, "path", "") == [".gitignore", "README.md", "a b%.txt", "docs/", "notes.txt", "src/"]
        assert complete(process, prompt, "path", "s") == ["src/"]
        root = str(repo.resolve())
        assert complete(process, prompt, "path", root[:-3]) == [root + "/"]
        assert complete(process, prompt, "path", root + "/d") == [root + "/docs/"]
        assert complete(process, {"type": "ref/prompt", "name": "review_changes"}, "staged", "t") == ["true"]
        assert complete(process, {"type": "ref/prompt", "name": "explain_symbol"}, "name", "ans") == []


def test_completion_offers_nothing_outside_the_roots(repo: Path, tmp_path: Path) -> None:
    """Hostile values complete to nothing. The attack first works without us: the link and '..' lead to the
    canary when listed plainly."""
    outside = make_outside(tmp_path / "outside")
    os.symlink(outside, repo / "link")
    os.symlink(outside / "secret.txt", repo / "leak.txt")
    assert "secret.txt" in os.listdir(repo / "link") and "outside" in os.listdir(repo / "..")
    template = {"type": "ref/resource", "uri": file_uri(str(repo.resolve())) + "/{+path}"}
    prompt = {"type": "ref/prompt", "name": "path_history"}
    with start(repo) as process:
        for ref in (template, prompt):
            for value in ("../", "../o", "..%2F", "%2e%2e/", "link/", "link/s", "./../", "src/../../", ".git/", ".git/H",
                          "build/", "//", "/etc/", str(outside) + "/", "%", "%2", "a?b", "a#b", "\x00", "x" * 5000):
                values = complete(process, ref, "path", value)
                assert values == [], (ref["type"], value, values)
            offered = complete(process, ref, "path", "l")
            assert offered == [], offered  # links are not served, so not offered
        root = str(repo.resolve())
        assert complete(process, template, "path", "/") == []  # '//': no such folder
        for start_ in ("/", str(tmp_path.resolve()) + "/"):  # an absolute start completes to the roots it begins
            assert complete(process, prompt, "path", start_) == [root + "/"]
