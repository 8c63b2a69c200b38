"""repo_map (workspace/code/repo_map.py): on real code, the index's map is the files' map, within its budget to the
token, a larger budget showing more of the same order; the ranking counts what other files use (not comments,
strings, locals, parameters, a file's own definitions, other classes' members); the index follows a change; a
folder too large to read without the index is a clear error."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workspace_support import Tools, copy_real_code

pytest.importorskip("ast_grep_py")

from shipcode_mcp.context import Context
from shipcode_mcp.primitives import ToolError
from shipcode_mcp.workspace import budget as budgets
from shipcode_mcp.workspace.code import index as code_index
from shipcode_mcp.workspace.code import repo_map as repo_map_module
from shipcode_mcp.workspace.code.parsers import POOL
from shipcode_mcp.workspace.code.repo_map import _ranked as real_ranked
from shipcode_mcp.workspace.code.repo_map import repo_map
from shipcode_mcp.workspace.code.source import Folder
from shipcode_mcp.workspace.roots import Roots


@pytest.fixture
def index_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "index"
    yield folder
    code_index.INDEXES.close()


def mapped(roots: Roots, budget: int = 2000, path: str = ".") -> dict[str, Any]:
    done = repo_map(Context(None, 1, "tools/call", {}), roots, path, budget)
    assert done.structured is not None
    assert budgets.tokens(done) <= budget, (budgets.tokens(done), budget)
    return {**done.structured, "text": done.content[0]["text"]}


def shown(data: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(path, qualified name, line) of each definition shown, in the map's order."""
    return [(item["path"], symbol["qualified_name"], symbol["line"]) for item in data["files"] for symbol in item["symbols"]]


def ready(roots: Roots) -> dict[str, Any]:
    """The map once the index answers (a root of more than 512 files is built in the background)."""
    deadline = time.monotonic() + 120
    while True:
        data = mapped(roots)
        if data["index"] == "fresh" or time.monotonic() > deadline:
            return data
        time.sleep(0.2)


def test_the_map_of_real_code_from_the_index_is_the_map_from_the_files(tmp_path: Path, index_folder: Path) -> None:
    root = copy_real_code(tmp_path / "work")
    indexed, scanned = Roots([str(root)], str(index_folder)), Roots([str(root)], None)
    assert ready(indexed)["index"] == "fresh"
    for budget in (256, 1000, 2000, 8000):
        from_index, from_files = mapped(indexed, budget), mapped(scanned, budget)
        assert from_files["index"] == "off"
        for key in ("definitions", "code_files", "truncated", "skipped", "skipped_files"):
            assert from_index[key] == from_files[key], (budget, key)
        same_order(from_index, from_files)
    same_order(mapped(indexed, 1000, "email"), mapped(scanned, 1000, "email"))
    # the order itself, beyond what a budget shows
    check = Context(None, 1, "tools/call", {}).check_cancelled
    whole = Folder(indexed, ".")
    by_index = repo_map_module._Ranking(code_index.indexed_folder(Context(None, 1, "tools/call", {}), indexed,
                                                                  whole).facts(), "", check)
    by_files = repo_map_module._Ranking(repo_map_module._scan(Context(None, 1, "tools/call", {}), scanned,
                                                              Folder(scanned, "."), ""), "", check)
    assert [(d.path, d.seq, d.score, d.used_by) for d in by_index.order] == [
        (d.path, d.seq, d.score, d.used_by) for d in by_files.order]
    assert by_index.ranks == by_files.ranks and by_index.users == by_files.users


def same_order(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Two maps of one ranking: the one has what the other has and at most a definition (and its class) more
    (their notes differ by a few bytes: `"index": "fresh"` or `"off"`), each item alike."""
    small, large = sorted(([(item["path"], item["used_by"], symbol) for item in data["files"] for symbol in item["symbols"]]
                           for data in (ours, theirs)), key=len)
    assert all(item in large for item in small) and len(large) - len(small) <= 2, (len(small), len(large))


def test_a_larger_budget_shows_more_of_the_same_order_and_fills_it(tmp_path: Path, index_folder: Path) -> None:
    root = copy_real_code(tmp_path / "work")
    roots = Roots([str(root)], str(index_folder))
    ready(roots)
    before: set[tuple[str, str, int]] = set()
    for budget in (256, 500, 1000, 2000, 4000, 8000, 20000):
        data = mapped(roots, budget)
        now = set(shown(data))
        assert before <= now and len(now) > len(before), budget
        assert data["truncated"] and data["shown"] == len(now) < data["definitions"]
        assert re.search(rf"^\[{data['shown']} definitions? of {data['definitions']} in ", data["text"], re.M)
        if budget >= 1000:  # filled: not much more than one definition's room is left
            assert budgets.tokens(repo_map(Context(None, 1, "tools/call", {}), roots, ".", budget)) > budget * 0.85
        before = now
    # what other files use most comes first: the email package's Message class is on a map of 2000 tokens
    assert any(path == "email/message.py" and name == "Message" for path, name, _ in shown(mapped(roots, 2000)))


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_ranking_counts_what_other_files_use(tmp_path: Path, index_folder: Path) -> None:
    root = write(tmp_path / "work", {
        "core.py": "class Session:\n    def get(self, url):\n        def helper():\n            pass\n\n"
                   "    def close(self):\n        pass\n\n\ndef popular():\n    pass\n\n\ndef rare():\n    pass\n\n\n"
                   "def _private():\n    pass\n\n\ndef lonely():\n    lonely()\n    popular()\n",
        "a.py": "from core import popular, Session, _private\npopular()\npopular()\nSession().get('x')\n_private()\n",
        "b.py": "from core import popular\npopular()\n# rare() in a comment\nprint('rare')\n",
        "c.py": "from core import rare\nimport core\ncore.popular()\nrare()\n",
        "d.py": "def f(rare, close=1):\n    return rare + close\n\n\ndef g(x, Session):\n    helper = x\n    return x.get(helper)\n",
        "other/e.py": "def popular():\n    return 1\n\n\npopular()\n",
        "other/core.py": "def rare():\n    return 1\n",
    })
    for roots in (Roots([str(root)], str(index_folder)), Roots([str(root)], None)):
        data = mapped(roots, 20000)
        assert data["truncated"] is False and data["shown"] == data["definitions"] == 11
        used = {(item["path"], symbol["qualified_name"]): symbol["used_by"]
                for item in data["files"] for symbol in item["symbols"]}
        # popular: a.py, b.py and c.py (other/e.py defines its own: its uses are its own); rare: c.py only (d.py's
        # is a parameter, b.py's a comment and a string); Session.get: a.py, which names Session (d.py's x.get
        # does not: its Session is a parameter); each of them names the module core
        assert used[("core.py", "popular")] == 3
        assert used[("core.py", "rare")] == 1
        assert used[("core.py", "Session")] == 1 and used[("core.py", "Session.get")] == 1
        assert used[("core.py", "Session.close")] == 0
        assert used[("core.py", "_private")] == 1
        assert used[("core.py", "lonely")] == 0  # its own file's uses do not count
        # no file names the module of other/e.py (e, or its folder other): its popular is not theirs
        assert used[("other/e.py", "popular")] == 0
        # a use the syntax cannot tie to one of two definitions counts for both (and adds half to each): c.py's
        # `from core import rare` names core, and other/core.py is a core too
        assert used[("other/core.py", "rare")] == 1
        assert ("core.py", "Session.get.helper") not in used  # inside a function: not on a map
        assert [name for path, name, _ in shown(data) if path == "core.py"] == [
            "Session", "Session.get", "Session.close", "popular", "rare", "_private", "lonely"]
        assert [(item["path"], item["used_by"]) for item in data["files"]] == [
            ("core.py", 3), ("other/core.py", 1), ("d.py", 0), ("other/e.py", 0)]  # files that define nothing are
        # not on a map; those no other file uses come in path order
        assert data["text"].splitlines()[:3] == ["core.py (used by 3 other files)", "     1: class Session",
                                                 "     2:     def get(self, url)"]


def test_definitions_are_taken_by_score(tmp_path: Path, index_folder: Path) -> None:
    files = {"lib.py": "def most():\n    pass\n\n\ndef middle():\n    pass\n\n\ndef least():\n    pass\n\n\n"
                       "def _most():\n    pass\n"}
    for user in range(6):
        files[f"u{user}.py"] = ("from lib import most, middle, least, _most\nmost()\n_most()\n"
                                + ("middle()\n" if user < 3 else "") + ("least()\n" if user < 1 else ""))
    root = write(tmp_path / "work", files)
    roots = Roots([str(root)], str(index_folder))
    first: dict[str, int] = {}  # the smallest budget whose map shows each
    for budget in range(64, 2000, 4):  # (below the tool's least budget, 256, to see them taken one by one)
        for _, name, _ in shown(mapped(roots, budget)):
            first.setdefault(name, budget)
    # each user names all four (its import) and calls most twice as often as _most, which counts a tenth;
    # half of them call middle, one calls least
    assert first["most"] < first["middle"] < first["least"] < first["_most"], first
    whole = mapped(roots, 2000)
    assert [name for path, name, _ in shown(whole) if path == "lib.py"] == ["most", "middle", "least", "_most"]


def test_the_index_follows_a_change(tmp_path: Path, index_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write(tmp_path / "work", {"lib.py": "def target():\n    pass\n", "a.py": "x = 1\n"})
    roots = Roots([str(root)], str(index_folder))
    ranked: list[int] = []

    def counted(facts: Any, *more: Any) -> Any:
        ranked.append(len(facts))
        return real_ranked(facts, *more)

    monkeypatch.setattr(repo_map_module, "_ranked", counted)
    assert mapped(roots)["files"][0]["used_by"] == 0
    time.sleep(code_index.RACY_NS / 1e9 + 0.1)  # (a file written in the last 2 s is read again at each look)
    assert mapped(roots)["files"][0]["used_by"] == 0
    assert mapped(roots, 1000)["files"][0]["used_by"] == 0
    assert len(ranked) == 1  # an unchanged folder is not ranked again
    time.sleep(0.05)
    (root / "a.py").write_text("from lib import target\ntarget()\n")
    (root / "b.py").write_text("from lib import target\ntarget()\n")
    data = mapped(roots)
    assert data["index"] == "fresh"
    assert data["files"][0] == {"path": "lib.py", "used_by": 2, "symbols": [
        {"qualified_name": "target", "kind": "function", "line": 1, "end_line": 2, "def_line": 1,
         "signature": "def target()", "used_by": 2}]}
    (root / "b.py").unlink()
    assert mapped(roots)["files"][0]["used_by"] == 1


def test_a_folder_too_large_to_read_without_the_index_is_an_error(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = write(tmp_path / "work", {f"m{n}.py": f"def f{n}():\n    pass\n" for n in range(5)})
    monkeypatch.setattr(repo_map_module, "MAX_MAP_SCANNED", 4)
    with pytest.raises(ToolError, match=r"reads at most 4 files without the code index.* holds 5 code files"):
        mapped(Roots([str(root)], None))
    with pytest.raises(ToolError, match="is a file: repo_map maps a folder"):
        mapped(Roots([str(root)], None), path="m0.py")
    monkeypatch.setattr(repo_map_module, "MAX_MAP_SCANNED", 5)
    assert mapped(Roots([str(root)], None))["code_files"] == 5


def test_over_the_clients_budget_the_map_is_made_again_within_it(tmp_path: Path) -> None:
    root = copy_real_code(tmp_path / "work")
    with Tools(root, options=("--no-index",)) as tools:
        whole = tools.call("repo_map", {"budget": 8000})
        cut = tools.call("repo_map", {"budget": 8000}, meta={budgets.META_KEY: 1000})
    assert len(whole["content"][0]["text"]) > 3 * len(cut["content"][0]["text"])
    assert "within 1000 tokens" in cut["content"][0]["text"]
    assert cut["structuredContent"]["shown"] < whole["structuredContent"]["shown"]
    made = [symbol for item in cut["structuredContent"]["files"] for symbol in item["symbols"]]
    assert made and all(symbol in [s for item in whole["structuredContent"]["files"] for s in item["symbols"]]
                        for symbol in made)


USES = {
    "python": ("import argparse\nfrom x import parser as pp\n\ndef f(a, b=1, *c, d: int = 2, **kw):\n    x = a\n"
               "    y, z = b, c\n    for i in d: pass\n    with open(a) as fh: pass\n    g(key=1)\n    return [w for w in kw]\n"
               "\nparser = argparse.ArgumentParser()\n",
               {"argparse", "ArgumentParser", "pp", "int", "open", "g"}),
    "javascript": ("import { a } from './m';\nfunction f(x, { y }, ...r) {\n  const q = a(x);\n  let [u] = y;\n"
                   "  for (const k in r) {}\n  try {} catch (e) {}\n  return (g) => g + q + u + H;\n}\n", {"a", "H"}),
    "typescript": ("function f(a: number, b?: T): R {\n  const c = a;\n  return G(c, b);\n}\n", {"T", "R", "G"}),
    "go": ("package m\n\nimport \"fmt\"\n\nfunc F(a int, b ...string) {\n\tc := 1\n\tvar d = 2\n"
           "\tfor i, v := range b {\n\t\tfmt.Println(i, v, c, d, a, G)\n\t}\n}\n", {"m", "fmt", "Println", "int", "string", "G"}),
    "rust": ("fn f(a: i32, mut b: u8) {\n    let c = a;\n    let (d, e) = (1, 2);\n    for i in 0..3 {}\n"
             "    g(c, d, e, b, H);\n}\n", {"g", "H"}),
    "java": ("class A {\n  void f(int a) {\n    int b = a;\n    for (String s : l) {}\n    try {} catch (E e) {}\n"
             "    g(b, H);\n  }\n}\n", {"String", "l", "E", "g", "H"}),
    "c": ("int f(int a, char *p) {\n  int b = a;\n  return g(b, p, H);\n}\n", {"g", "H"}),
    "cpp": ("int f(int a, char *p) {\n  int b = a;\n  return g(b, p, H);\n}\n", {"g", "H"}),
    "csharp": ("class A {\n  int F(int pp) {\n    int loc = pp;\n    return G(loc);\n  }\n}\n", {"G"}),
    "kotlin": ("fun f(pp: Int): Int {\n    val loc = pp\n    return g(loc)\n}\n", {"Int", "g"}),
    "scala": ("object A {\n  def f(pp: Int): Int = {\n    val loc = pp\n    g(loc)\n  }\n}\n", {"Int", "g"}),
    "swift": ("func f(pp: Int) -> Int {\n    let loc = pp\n    return g(loc)\n}\n", {"Int", "g"}),
    "ruby": ("def f(pp, opt = 1, key: 2)\n  loc = pp\n  g(loc, opt, key)\nend\n", {"g"}),
    "php": ("<?php\nfunction f($pp) {\n  $loc = $pp;\n  return g($loc);\n}\n", {"g"}),
    "lua": ("function f(pp)\n  local loc = pp\n  return g(loc)\nend\n", {"g"}),
    "bash": ("f() {\n  local loc=$1\n  g \"$loc\"\n}\n", {"g", "1"}),
    # a keyword argument's name is the callee's; require() declares imports: their names are used
    "python-calls": ("from db import engine\nSession(engine=engine, echo=True)\n", {"db", "engine", "Session"}),
    "javascript-require": ("const { helper } = require('./util');\nconst Store = require('./store');\nhelper(Store);\n",
                           {"helper", "Store", "require"}),
}
"""A file of each language and the names it uses that it does not bind (parameters, locals, loop variables,
patterns, keyword arguments' names, its own definitions)."""


@pytest.mark.parametrize("language", sorted(USES))
def test_the_index_keeps_the_names_a_file_uses_without_those_it_binds(language: str) -> None:
    text, expected = USES[language]
    language = language.split("-")[0]
    outline, uses = POOL.ask({"op": "outline_uses", "text": text, "language": language})
    assert outline == POOL.ask({"op": "outline", "text": text, "language": language})
    assert set(uses) == expected, language


def test_what_the_first_review_found(tmp_path: Path, index_folder: Path) -> None:
    """Each of these went wrong before (a crash, a budget 35 times over, uses left out or counted twice)."""
    root = write(tmp_path / "work", {
        # a bash word holding a NUL past the 8 000 bytes that tell binary files: the index's separator
        "lib.sh": "greet() {\n  echo hi\n}\n", "run.sh": "#" + "x" * 8100 + "\ngreet\necho ab\0cd\n",
        # members of a namespace are reached as top-level names are
        "App/Proc.cs": "namespace App {\n  class Proc {\n    public string Stdout;\n  }\n}\n",
        "App/User.cs": "namespace App {\n  class U {\n    string F(Proc p) { return p.Stdout; }\n  }\n}\n",
        # a package's own name, when the package itself is mapped; seventeen classes with a draw in one file
        "pkg/__init__.py": "def api():\n    pass\n", "pkg/a.py": "from pkg import api\napi()\n",
        "pkg/widgets.py": "".join(f"class W{n}:\n    def draw(self):\n        pass\n\n\n" for n in range(17)),
        "pkg/b.py": "from pkg import widgets\nwidgets.W0().draw()\n",
    })
    for roots in (Roots([str(root)], str(index_folder)), Roots([str(root)], None)):
        for path in (".", "pkg"):
            data = mapped(roots, 20000, path)
            used = {(item["path"], symbol["qualified_name"]): symbol["used_by"]
                    for item in data["files"] for symbol in item["symbols"]}
            assert used[("pkg/__init__.py", "api")] == 1, path
            assert used[("pkg/widgets.py", "W0.draw")] == 1, path
        used = {(item["path"], symbol["qualified_name"]): symbol["used_by"]
                for item in mapped(roots, 20000)["files"] for symbol in item["symbols"]}
        assert used[("lib.sh", "greet")] == 1
        assert used[("App/Proc.cs", "App.Proc")] == 1 and used[("App/Proc.cs", "App.Proc.Stdout")] == 1


def test_the_notes_stay_within_the_budget(tmp_path: Path) -> None:
    deep = "/".join(["d" * 200] * 3)
    files = {f"{deep}/m{n}.py": "x = 1\ny = '" + "a" * 40000 + "'\n" for n in range(25)}  # 25 files skipped
    root = write(tmp_path / "work", {**files, "a.py": "def f():\n    pass\n"})
    for budget in (256, 1000, 2000):
        data = mapped(Roots([str(root)], None), budget)  # (mapped checks the budget)
        assert data["skipped"] == 25 and len(data["skipped_files"]) < 20
        assert data["shown"] == 1  # the definitions first, then the names of files skipped in the room left
    assert mapped(Roots([str(root)], None), 2000)["skipped_files"]


def test_a_damaged_index_is_built_again_and_answers(tmp_path: Path, index_folder: Path) -> None:
    root = write(tmp_path / "work", {f"m{n}.py": "".join(f"def f{n}_{k}(a):\n    return g(a)\n\n" for k in range(200))
                                     for n in range(20)})
    roots = Roots([str(root)], str(index_folder))
    first = mapped(roots)
    code_index.INDEXES.close()
    database = next(index_folder.glob("*.sqlite3"))
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = db.execute("PRAGMA page_size").fetchone()[0]
        at = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'symbols'").fetchone()[0]
    db.close()
    with open(database, "r+b") as damaged:  # the symbols table's root page, which the walk does not read
        damaged.seek((at - 1) * page)
        damaged.write(b"\xff" * 64)
    time.sleep(code_index.RACY_NS / 1e9 + 0.1)
    again = mapped(Roots([str(root)], str(index_folder)))
    assert again["index"] == "fresh" and again["files"] == first["files"]


def test_an_index_opened_again_is_not_taken_for_the_one_before(tmp_path: Path, index_folder: Path) -> None:
    root = write(tmp_path / "work", {"lib.py": "def target():\n    pass\n", "a.py": "x = 1\n"})
    assert mapped(Roots([str(root)], str(index_folder)))["files"][0]["used_by"] == 0
    time.sleep(code_index.RACY_NS / 1e9 + 0.1)
    assert mapped(Roots([str(root)], str(index_folder)))["files"][0]["used_by"] == 0
    code_index.INDEXES.close()
    (root / "a.py").write_text("from lib import target\ntarget()\n")
    assert mapped(Roots([str(root)], str(index_folder)))["files"][0]["used_by"] == 1


RANKING = """
import sys
from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code import repo_map
from shipcode_mcp.workspace.code.source import Folder
from shipcode_mcp.workspace.roots import Roots
roots = Roots([sys.argv[1]], None)
ctx = Context(None, 1, "tools/call", {})
ranking = repo_map._Ranking(repo_map._scan(ctx, roots, Folder(roots, "."), ""), "", ctx.check_cancelled)
print([(d.path, d.seq, d.score) for d in ranking.order], sorted(ranking.ranks.items()))
"""


def test_the_ranking_is_the_same_in_every_process(tmp_path: Path) -> None:
    """Sets iterate in another order in each process (string hashes are salted): the sums must not."""
    root = copy_real_code(tmp_path / "work")
    answers = {subprocess.run([sys.executable, "-c", RANKING, str(root)], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, timeout=300).stdout for seed in ("1", "2", "3")}
    assert len(answers) == 1


SECOND_REVIEW = {
    # Rust: the crate's root reached by `crate::`; an impl's methods are its type's, not top-level names
    "rs/src/lib.rs": "pub mod store;\npub mod cache;\n\npub struct Config {}\n",
    "rs/src/cache.rs": "use crate::Config;\nuse crate::event::Event;\n\npub fn warm(c: &Config, h: fn(Event)) -> u32 {\n"
                       "    c.fetch()\n}\n",
    "rs/src/store.rs": "pub struct Store {}\n\nimpl Store {\n    pub fn fetch(&self) -> u32 {\n        1\n    }\n}\n",
    "rs/src/event.rs": "pub struct Event {}\n",
    # Swift: an enum case in a switch is a use; an extension's methods are its type's
    "sw/Color.swift": "enum Color {\n    case red\n    case blue\n}\n",
    "sw/View.swift": "func paint(c: Color) -> Int {\n    switch c {\n    case .blue: return 1\n    default: return 0\n    }\n}\n",
    "sw/Store.swift": "struct Store {}\n\nextension Store {\n    func fetch() -> Int { 1 }\n}\n",
    "sw/Warm.swift": "func warm(c: Downloader) -> Int {\n    return c.fetch()\n}\n",
    # C: an assignment declares nothing; C#: an object initializer's names are uses
    "c/state.c": "int verbose = 0;\n", "c/main.c": "int main(void) {\n    verbose = 1;\n    return verbose;\n}\n",
    "cs/Options.cs": "public class Options {\n    public int Timeout { get; set; }\n}\n",
    "cs/App.cs": "public class App {\n    public Options Make() {\n        return new Options { Timeout = 3 };\n    }\n}\n",
    # PHP: a property $items is used as ->items
    "php/Cart.php": "<?php\nclass Cart {\n    public $items = [];\n}\n",
    "php/total.php": "<?php\nfunction total(Cart $c) {\n    return count($c->items);\n}\n",
    # JavaScript: require() imports; the requiring files do not define what they import
    "js/util.js": "function helper() {}\nmodule.exports = { helper };\n",
    **{f"js/b{n}.js": "const { helper } = require('./util');\nhelper();\n" for n in range(17)},
    "js/c.js": "const help = require('./util').helper;\nhelp();\n",
}


def test_what_the_second_review_found(tmp_path: Path, index_folder: Path) -> None:
    root = write(tmp_path / "work", SECOND_REVIEW)
    for roots in (Roots([str(root)], str(index_folder)), Roots([str(root)], None)):
        data = mapped(roots, 20000)
        used = {(item["path"], symbol["qualified_name"]): symbol["used_by"]
                for item in data["files"] for symbol in item["symbols"]}
        assert used[("rs/src/lib.rs", "Config")] == 1
        assert used[("rs/src/event.rs", "Event")] == 1  # a parameter's fn type is no binding
        assert used[("rs/src/store.rs", "Store.fetch")] == 0  # cache.rs never names Store
        assert used[("sw/Color.swift", "Color.blue")] == 1
        assert used[("sw/Store.swift", "Store.fetch")] == 0
        assert used[("c/state.c", "verbose")] == 1
        assert used[("cs/Options.cs", "Options.Timeout")] == 1
        assert used[("php/Cart.php", "Cart.$items")] == 1
        assert used[("js/util.js", "helper")] == 18  # b0.js ... b16.js, and c.js's require("./util").helper
        assert not any(path.startswith("js/b") and name == "helper" for path, name in used)
