"""completion/complete of --prompts through the real `shipcode-mcp` process: paths of the resource templates and
of the prompts' arguments, one folder at a time, from what the resources serve; nothing outside the roots.

Every line the server writes is checked against the official 2025-06-18 schema by `McpProcess`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


# -- in process: the listing's edge cases -----------------------------------------------------------------------
def completer(*roots: Path) -> Any:
    from shipcode_mcp.workspace.resources import Files
    from shipcode_mcp.workspace.roots import Roots

    files = Files(Roots([str(root) for root in roots]), complete=True)
    assert files.completer is not None
    return files.completer


def test_nested_roots_offer_each_path_once(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    (outer / "inner").mkdir(parents=True)
    (outer / "inner" / "s.txt").write_text("x\n")
    paths = completer(outer, outer / "inner")
    inner = str((outer / "inner").resolve())
    assert paths.argument(inner + "/", {}) == [inner + "/s.txt"]
    assert paths.argument(str(outer.resolve()) + "/i", {}) == [str(outer.resolve()) + "/inner/"]


def test_a_folder_of_many_names_answers_the_first_100_and_says_there_are_more(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for number in range(250):
        (root / f"n{number:03d}.txt").write_text("")
    (root / "other.txt").write_text("")
    paths = completer(root)
    values = paths.argument("n", {})
    assert values[:100] == [f"n{number:03d}.txt" for number in range(100)] and values.total is None
    from shipcode_mcp.methods import _completion

    assert _completion(list(values), values.total)["completion"] == {"values": values[:100], "hasMore": True}
    assert paths.argument("o", {}) == ["other.txt"] and paths.argument("o", {}).total == 1


def test_a_listing_cut_short_completes_a_prompts_path_from_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_LISTED_FILES the resources serve only the first files, but a prompt's path is a tool's: the
    folder itself is read (links and .git left out)."""
    from shipcode_mcp.workspace import resource_tree

    monkeypatch.setattr(resource_tree, "MAX_LISTED_FILES", 5)
    root = tmp_path / "cut"
    (root / "a").mkdir(parents=True)
    for number in range(10):
        (root / "a" / f"f{number}.txt").write_text("")
    (root / "z").mkdir()
    (root / "z" / "late.txt").write_text("")
    (root / ".git").mkdir()
    os.symlink(tmp_path, root / "zlink")
    paths = completer(root)
    assert paths.argument("z", {}) == ["z/"] and paths.argument("z/", {}) == ["z/late.txt"]
    assert paths.argument("", {}) == ["a/", "z/"]
    assert paths.argument("../", {}) == [] and paths.argument("a/../../", {}) == []
    template = paths.template(str(root.resolve()))
    assert template("z", {}) == []  # the template completes what the resources serve: the first 5 files


def test_a_root_gone_completes_to_nothing(tmp_path: Path) -> None:
    root = tmp_path / "gone"
    root.mkdir()
    paths = completer(root)
    root.rmdir()
    assert paths.argument("", {}) == [] and paths.template(str(root.resolve()))("", {}) == []
