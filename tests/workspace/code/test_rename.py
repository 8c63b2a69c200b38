"""rename_symbol: on a package made for the test, every kind of use through the real server; then against a
real language server's rename (basedpyright's `textDocument/rename`) on requests 2.32.3, click 8.1.7 and attrs
24.2.0 (sdists from PyPI, pinned by hash: bench/rename_accuracy.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import PEER_CACHE, REPO, fetched_corpora, load_script
from workspace_support import Tools

pytest.importorskip("ast_grep_py")

PACKAGE = {
    "pkg/__init__.py": "from .core import greet\n\n__all__ = ['greet']\n",
    "pkg/core.py": ("def greet(name):\n    return 'hi ' + name\n\n\nclass Other:\n    def greet(self):\n"
                    "        return 1\n\n    def twice(self):\n        return self.greet() + self.greet()\n\n\n"
                    "def use(obj, greet=None):\n    greet = greet or 'x'  # greet here is a parameter\n"
                    "    return obj.greet(), f(greet=greet)\n"),
    "app.py": ("from pkg.core import greet\nfrom pkg import core\n\nprint(greet('a'), core.greet('c'))\n"
               "# greet in a comment\ns = 'greet'\n"),
    "web/app.js": "export function greet() { return 1 }\n",
}


@pytest.fixture
def package(tmp_path: Path) -> Path:
    for name, text in PACKAGE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.fixture
def tools(package: Path) -> Iterator[Tools]:
    with Tools(package, write=True) as tools:
        yield tools


def _texts(root: Path) -> dict[str, str]:
    return {name: (root / name).read_text() for name in PACKAGE}


def test_a_function_is_renamed_where_the_scopes_prove_it_and_nowhere_else(package: Path, tools: Tools) -> None:
    dry = tools.data("rename_symbol", {"name": "core.greet", "new_name": "welcome", "dry_run": True})
    assert _texts(package) == PACKAGE  # a dry run changes nothing
    result = tools.call("rename_symbol", {"name": "core.greet", "new_name": "welcome"})
    data = result["structuredContent"]
    assert {key: data[key] for key in ("renamed", "files", "diff")} == {key: dry[key] for key in ("renamed", "files", "diff")}
    assert _texts(package) == {
        "pkg/__init__.py": "from .core import welcome\n\n__all__ = ['welcome']\n",
        "pkg/core.py": PACKAGE["pkg/core.py"].replace("def greet(name)", "def welcome(name)"),
        "app.py": ("from pkg.core import welcome\nfrom pkg import core\n\nprint(welcome('a'), core.welcome('c'))\n"
                   "# greet in a comment\ns = 'greet'\n"),
        "web/app.js": PACKAGE["web/app.js"]}
    assert data["renamed"] == 6 and [item["path"] for item in data["files"]] == ["app.py", "pkg/__init__.py", "pkg/core.py"]
    assert {(item["path"], item["line"]) for item in data["sites"]} == {
        ("pkg/core.py", 1), ("pkg/__init__.py", 1), ("pkg/__init__.py", 3), ("app.py", 1), ("app.py", 4)}
    # Another language's greet is only the name; obj.greet() cannot reach a module's function, nor can the
    # parameter and keyword argument of use(): left out, counted.
    assert [(item["path"], item["line"]) for item in data["undecided"]] == [("web/app.js", 1)]
    assert "Left alone, undecided" in result["content"][0]["text"] and data["excluded"] >= 3


def test_a_method_is_renamed_with_its_uses_through_self(package: Path, tools: Tools) -> None:
    tools.call("rename_symbol", {"name": "Other.greet", "new_name": "hello"})
    text = (package / "pkg" / "core.py").read_text()
    assert "    def hello(self):" in text and "return self.hello() + self.hello()" in text
    assert "def greet(name):" in text and "return obj.greet(), f(greet=greet)" in text


def test_what_is_refused_changes_nothing(package: Path, tools: Tools) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "greet", "new_name": "x"}, "Qualify greet with its module or class"),
        ({"name": "core.greet", "new_name": "use"}, "use is already a name in pkg/core.py"),
        ({"name": "core.greet", "new_name": "len"}, "not a keyword, a builtin or a special name"),
        ({"name": "core.greet", "new_name": "__debug__"}, "not a keyword, a builtin or a special name"),
        ({"name": "core.greet", "new_name": "class"}, "a Python identifier that is not a keyword"),
        ({"name": "core.greet", "new_name": "two words"}, "a Python identifier"),
        ({"name": "core.greet", "new_name": "greet"}, "the name it has"),
        ({"name": "Other.__init__", "new_name": "x"}, "special method"),
        ({"name": "core.nowhere", "new_name": "x"}, "No definition of core.nowhere"),
        ({"name": "app.greet", "new_name": "x", "path": "web"}, "a JavaScript symbol: rename_symbol renames it through "
                                                                "its language server, which this server runs only with "
                                                                "--precise"),
        ({"name": "a b", "new_name": "x"}, "must be an identifier"),
    ]
    for arguments, expected in cases:
        assert expected in tools.error("rename_symbol", arguments), arguments
    assert _texts(package) == PACKAGE


def test_a_symbol_of_a_language_without_a_rename_is_refused(package: Path, tools: Tools) -> None:
    (package / "tool.go").write_text("package tool\n\nfunc Greet() string { return \"hi\" }\n")
    assert "tool.go, a language rename_symbol does not rename" in tools.error(
        "rename_symbol", {"name": "tool.Greet", "new_name": "Hello"})
    assert (package / "tool.go").read_text().count("Greet") == 1


def test_uses_in_a_file_that_does_not_parse_are_listed_not_renamed(package: Path, tools: Tools) -> None:
    broken = PACKAGE["app.py"].replace("core.greet('c'))", "core.greet('c')")  # a syntax error: read by name only
    (package / "app.py").write_text(broken)
    data = tools.data("rename_symbol", {"name": "core.greet", "new_name": "welcome"})
    assert (package / "app.py").read_text() == broken
    assert {(item["path"], item["line"]) for item in data["undecided"]} == {("app.py", 1), ("app.py", 4), ("web/app.js", 1)}
    assert (package / "pkg" / "core.py").read_text().startswith("def welcome(name):")


def _refused(tmp_path: Path, files: dict[str, str], arguments: dict[str, Any], expected: str) -> None:
    """The rename is refused, saying `expected`, and no file changes (nothing written before the refusal)."""
    root = tmp_path / "case"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())
    with Tools(root, write=True) as tools:
        message = tools.error("rename_symbol", arguments)
    assert expected in message, message
    assert {name: (root / name).read_bytes().decode() for name in files} == files


CORE = "def greet():\n    return 1\n"


@pytest.mark.parametrize(("case", "files", "arguments", "expected"), [
    ("a file with lone CR line ends", {"pkg/core.py": CORE, "app.py": "from pkg.core import greet\rx = 1\rprint(greet())\r"},
     {"name": "core.greet", "new_name": "welcome"}, "lone CR line ends"),
    ("the name in another Unicode form", {"m.py": "def greet():\n    return 1\n\n\nx = \uff47\uff52\uff45\uff45\uff54(); s = 'greet'\n"},
     {"name": "m.greet", "new_name": "welcome"}, "Refused"),
    ("a name already used", {"m.py": CORE + "\n\ndef welcome():\n    return 2\n\n\nprint(greet(), welcome())\n"},
     {"name": "m.greet", "new_name": "welcome"}, "welcome is already a name in m.py"),
    ("an import alias left behind", {"pkg/core.py": CORE, "pkg/__init__.py": "from .core import greet as greet\n\nprint(greet())\n"},
     {"name": "core.greet", "new_name": "welcome"}, "would have undefined name"),
    ("a global line left behind", {"m.py": "counter = 0\n\n\ndef bump():\n    global counter\n    counter = counter + 1\n"},
     {"name": "m.counter", "new_name": "total"}, "Refused: renamed, m.py would"),
    ("an override", {"m.py": ("class Base:\n    def hook(self):\n        return 'base'\n\n    def run(self):\n        return self.hook()"
                              "\n\n\nclass Child(Base):\n    def hook(self):\n        return 'child'\n")},
     {"name": "Base.hook", "new_name": "handle"}, "is overridden in Child.hook"),
    ("a file too large to read", {"pkg/core.py": CORE, "big.py": "from pkg.core import greet\n" + "x = 1\n" * 100_000},
     {"name": "core.greet", "new_name": "welcome"}, "could not be read"),
], ids=lambda value: value if isinstance(value, str) and " " in value else "")
def test_a_rename_that_could_change_what_the_code_means_is_refused_whole(
        tmp_path: Path, case: str, files: dict[str, str], arguments: dict[str, Any], expected: str) -> None:
    _refused(tmp_path, files, arguments, expected)


def test_files_outside_path_are_listed(package: Path, tools: Tools) -> None:
    data = tools.data("rename_symbol", {"name": "core.greet", "new_name": "welcome", "path": "pkg", "dry_run": True})
    assert data["outside"] == ["app.py"]
    assert "Not looked at: 1 file outside pkg that mention greet: app.py" in tools.last["content"][0]["text"]


@pytest.fixture(scope="module")
def accuracy() -> dict[str, Any]:
    bench = load_script(REPO / "bench" / "rename_accuracy.py", "bench_rename_accuracy")
    reports = {}
    fetched_corpora(bench, "requests", "click", "attrs")
    # The bench measures every symbol of each, from the syntax tree and with --precise (a rename with the server
    # costs a few times one without: it checks the renamed files, before and after); here fewer of the second, but
    # attrs's: its one rename made otherwise than the server's own (AttrsInstance, an import the server resolved to
    # its stub) is 2 sites in 78 of a quarter of them, 2 in 300 of all.
    # An eighth of requests's and click's with the server (28 and 19 symbols: the fixture took 5 to 6 minutes of
    # each Python's run with a quarter; every one of them was renamed as the server does at both rates).
    for name, every, precise_every in (("requests", 1, 8), ("click", 3, 8), ("attrs", 2, 1)):
        reports[name] = bench.measure(bench.CORPORA[name], PEER_CACHE, every, precise_every)
    return reports


@pytest.mark.one_python
@pytest.mark.timeout(900)
def test_renames_are_the_language_servers_where_they_are_made(accuracy: dict[str, Any]) -> None:
    """Measured (bench, every symbol of requests, click, attrs): precision 1.000 / 0.999 / 0.996 (the extra
    sites: imports the server resolved to a stub); recall of the renames made 0.997 / 0.932 / 0.942; refused
    only methods overridden in a subclass (2 / 42 / 0), which the server renames alone, changing which method
    runs. With --precise every rename is the server's (the bench's `ours` fails on any other), as precise."""
    for name, report in accuracy.items():
        assert report["symbols"] > 70, (name, report)
        assert report["precision"] >= 0.99, (name, report["precision"], report["wrong"])
        assert report["recall_renamed"] >= 0.9, (name, report["recall_renamed"])
        assert report["refused"] == report["refused_overridden"], (name, report["refusals"])
        precise = report["precise"]  # every rename the server's (the bench's `ours` fails on any other)
        assert precise["symbols"] > 15 and precise["precision"] >= 0.99, (name, precise)
        assert precise["recall_renamed"] >= 0.9, (name, precise["recall_renamed"])
    assert accuracy["requests"]["recall"] >= 0.98 and accuracy["requests"]["exact_symbols"] >= 0.97 * accuracy["requests"]["symbols"]
