"""--precise with the real basedpyright (installed with the test extra): find_references' exact uses and
rename_symbol's rename through the server process, a server that crashes, goes idle, is slow or is missing,
and what it leaves behind (nothing). Each gain is shown on a case the syntax tree alone cannot decide: a
variable whose class only a return annotation tells."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsp_support import READY_WAIT, descendants_running, exact, sites, type_checked, wait_ready, written

from shipcode_mcp.workspace.code import precise
from shipcode_mcp.workspace.lsp import installed, servers
from shipcode_mcp.workspace.lsp.servers import LanguageServers
from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.tools import run
from support import wait_for
from workspace_support import Tools, context

pytest.importorskip("ast_grep_py")
pytest.importorskip("basedpyright")

PACKAGE = {
    "shop/__init__.py": "",
    "shop/client.py": ("class Client:\n    def get(self, url):\n        return url\n\n\n"
                       "class Cache:\n    def get(self, key):\n        return key\n\n\n"
                       "def make() -> Client:\n    return Client()\n"),
    "shop/use.py": ("from shop.client import Cache, make\n\n\n"
                    "def fetch(anything, cache: Cache):\n"
                    "    made = make()\n"
                    "    made.get('a')  # only make's return annotation says this is Client.get\n"
                    "    cache.get('b')\n"
                    "    {}.get('c')\n"
                    "    return anything.get('d')\n"),
}


@pytest.fixture
def package(tmp_path: Path) -> Path:
    return written(tmp_path / "package", PACKAGE)


def language_server_pids(server_pid: int) -> list[int]:
    """The language servers among the server's descendants (by their command line)."""
    return descendants_running(server_pid, b"langserver.index.js")


@pytest.fixture
def precise_tools(package: Path) -> Iterator[Tools]:
    with Tools(package, write=True, precise=True) as tools:
        yield tools


def test_the_python_language_server_is_found_in_this_environment() -> None:
    found = installed.find("python")
    assert found is not None and found.name == "basedpyright" and found.version.count(".") == 2
    assert all(os.path.isabs(path) and os.path.isdir(path) for path in found.readable)
    assert os.access(found.argv[0], os.X_OK) and found.argv[-1] == "--stdio"


def test_find_references_is_exact_where_only_types_can_tell(package: Path, precise_tools: Tools) -> None:
    with Tools(package) as plain:  # the syntax tree alone: made.get is only the name
        scoped = plain.data("find_references", {"name": "Client.get"})
    assert ("shop/use.py", 6) in sites(scoped, "name") and scoped["language_server"] is None
    assert scoped["language_server_note"] is None  # (no --precise: nothing to say)
    data = exact(precise_tools, "Client.get")
    assert data["language_server"] == "basedpyright" and data["language_server_note"] is None
    assert sites(data, "exact") == {("shop/client.py", 2), ("shop/use.py", 6)}
    assert sites(data, "name") == {("shop/use.py", 9)}  # anything.get: no type tells what it is
    assert not {("shop/use.py", 7), ("shop/use.py", 8)} & (sites(data, "name") | sites(data, "exact"))  # Cache, dict
    definition = next(item for item in data["references"] if item["definition"])
    assert (definition["path"], definition["line"], definition["column"]) == ("shop/client.py", 2, 9)
    text = precise_tools.last["content"][0]["text"]
    assert "[Exact: basedpyright's references of Client.get (shop/client.py:2).]" in text
    assert "basedpyright does not tie these to Client.get" in text
    # A bare name asks for every definition of that name in the workspace: Cache.get's uses too, never dict's.
    bare = exact(precise_tools, "get")
    assert sites(bare, "exact") == {("shop/client.py", 2), ("shop/client.py", 7), ("shop/use.py", 6), ("shop/use.py", 7)}
    assert [item["qualified_name"] for item in bare["definitions"]] == ["Client.get", "Cache.get"]


def test_rename_symbol_takes_the_language_servers_rename(package: Path, precise_tools: Tools) -> None:
    exact(precise_tools, "Client.get")  # ready
    result = precise_tools.call("rename_symbol", {"name": "Client.get", "new_name": "download"})
    data = result["structuredContent"]
    assert data["language_server"] == "basedpyright" and "[Exact: basedpyright's rename.]" in result["content"][0]["text"]
    use = (package / "shop" / "use.py").read_text()
    assert "made.download('a')" in use and "cache.get('b')" in use and "{}.get('c')" in use
    assert "anything.get('d')" in use and [(item["path"], item["line"]) for item in data["undecided"]] == [("shop/use.py", 9)]
    assert "def download(self, url):" in (package / "shop" / "client.py").read_text()
    assert "def get(self, key):" in (package / "shop" / "client.py").read_text()


def test_the_same_rename_from_the_syntax_tree_leaves_what_only_types_tell(package: Path) -> None:
    with Tools(package, write=True) as tools:
        data = tools.data("rename_symbol", {"name": "Client.get", "new_name": "download"})
    assert data["language_server"] is None and ("shop/use.py", 6) in {(item["path"], item["line"]) for item in data["undecided"]}
    assert "made.get('a')" in (package / "shop" / "use.py").read_text()


def test_changes_on_disk_are_seen_by_the_next_answer(package: Path, precise_tools: Tools) -> None:
    exact(precise_tools, "Client.get")
    (package / "shop" / "more.py").write_text("from shop.client import make\n\nmake().get('e')\n")
    use = package / "shop" / "use.py"
    use.write_text(use.read_text().replace("    made.get('a')  # only make's return annotation says this is Client.get\n",
                                           "    made.get\n    made.get('a')\n"))
    data = exact(precise_tools, "Client.get")
    assert sites(data, "exact") == {("shop/client.py", 2), ("shop/use.py", 6), ("shop/use.py", 7), ("shop/more.py", 3)}
    (package / "shop" / "more.py").unlink()
    assert ("shop/more.py", 3) not in sites(exact(precise_tools, "Client.get"), "exact")


def test_columns_are_characters_where_the_server_counts_utf16_units(package: Path, precise_tools: Tools) -> None:
    (package / "shop" / "wide.py").write_text("from shop.client import make\n\nx = ('\U0001f600é', make().get('f'))\n")
    data = exact(precise_tools, "Client.get")
    item = next(item for item in data["references"] if item["path"] == "shop/wide.py")
    line = (package / "shop" / "wide.py").read_text().split("\n")[2]
    assert line[item["column"] - 1:item["column"] - 1 + 3] == "get" and item["column"] == line.index("get") + 1


def test_a_crashed_language_server_is_started_again(precise_tools: Tools) -> None:
    exact(precise_tools, "Client.get")
    [first] = language_server_pids(precise_tools.process.proc.pid)
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: first not in language_server_pids(precise_tools.process.proc.pid), 10, "the kill")
    data = precise_tools.data("find_references", {"name": "Client.get"})  # answered at once, from the syntax tree
    assert data["language_server"] is None and "failed" in data["language_server_note"]
    assert ("shop/client.py", 2) in sites(data, "scoped")
    assert sites(exact(precise_tools, "Client.get"), "exact") == {("shop/client.py", 2), ("shop/use.py", 6)}
    [second] = language_server_pids(precise_tools.process.proc.pid)
    assert second != first


def test_nothing_is_left_behind(package: Path) -> None:
    before = {path.relative_to(package): path.read_bytes() for path in package.rglob("*") if path.is_file()}
    with Tools(package, precise=True) as tools:
        exact(tools, "Client.get")
        server = tools.process.proc.pid
        [pid] = language_server_pids(server)
        tools.close()
    assert "precise: basedpyright" in tools.process.stderr.decode()  # the start-up line says which
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 10, "the language server's end with the server")
    after = {path.relative_to(package): path.read_bytes() for path in package.rglob("*") if path.is_file()}
    assert after == before  # no cache, no settings file, nothing in the workspace


def test_without_precise_no_language_server_runs(package: Path) -> None:
    with Tools(package) as tools:
        tools.data("find_references", {"name": "Client.get"})
        tools.data("rename_symbol", {"name": "Client.get", "new_name": "download", "dry_run": True}) \
            if "rename_symbol" in tools.tools else None
        assert language_server_pids(tools.process.proc.pid) == []


# -- in the process: the registry's own rules -------------------------------------------------------------
@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[LanguageServers]:
    fresh = LanguageServers()
    fresh.enabled = True
    monkeypatch.setattr(precise, "SERVERS", fresh)
    yield fresh
    fresh.stop_all()


def _ready(registry: LanguageServers, roots: Roots) -> servers.LanguageServer:
    server = registry.server("python", tuple(roots.paths))
    wait_ready(server)
    return server


def test_an_idle_language_server_is_stopped_and_started_again_on_need(package: Path, registry: LanguageServers,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "IDLE_STOP", 1.0)
    monkeypatch.setattr(servers, "IDLE_CHECK", 0.2)
    roots = Roots([str(package)])
    first = _ready(registry, roots)
    pid = first.pid
    assert pid is not None
    wait_for(lambda: first.state == "stopped" and not Path(f"/proc/{pid}").exists(), 30, "the idle server's stop")
    assert registry.running() == []
    data = run("find_references", context(), roots, name="Client.get").structured or {}
    assert data["language_server"] is None and "starting" in data["language_server_note"]
    assert _ready(registry, roots) is not first


def test_a_slow_answer_is_not_waited_for(package: Path, registry: LanguageServers, monkeypatch: pytest.MonkeyPatch) -> None:
    roots = Roots([str(package)])
    _ready(registry, roots)
    monkeypatch.setattr(precise, "REQUEST_TIMEOUT", 0.0)
    started = time.monotonic()
    data = run("find_references", context(), roots, name="Client.get").structured or {}
    assert time.monotonic() - started < 10
    assert data["language_server"] is None and "took longer than" in data["language_server_note"]
    assert ("shop/client.py", 2) in sites(data, "scoped")


def test_a_missing_language_server_is_said_once_asked(package: Path, registry: LanguageServers) -> None:
    registry._installed.update(python=None, typescript=None, cpp=None)  # as where the precise extra is not installed
    data = run("find_references", context(), Roots([str(package)]), name="Client.get").structured or {}
    assert data["language_server"] is None and "pip install 'shipcode-mcp[precise]'" in data["language_server_note"]
    assert registry.running() == []


def test_diagnostics_are_the_language_servers_type_checks(package: Path, precise_tools: Tools) -> None:
    use = package / "shop" / "use.py"
    use.write_text(use.read_text().replace("made.get('a')", "made.fetch('a')"))
    with Tools(package) as plain:  # pyflakes cannot know that Client has no fetch
        assert plain.data("diagnostics", {"path": "shop"})["findings"] == []
    data = type_checked(precise_tools, {"path": "shop"})
    assert data["type_checked"] == 3 and data["language_server"] == "basedpyright"
    assert [(item["path"], item["line"], item["column"], item["severity"], item["code"]) for item in data["findings"]] == [
        ("shop/use.py", 6, 10, "error", "reportAttributeAccessIssue")]
    assert 'Cannot access attribute "fetch" for class "Client"' in data["findings"][0]["message"]
    assert "[Type-checked by basedpyright: 3 Python files.]" in precise_tools.last["content"][0]["text"]


def test_an_edit_returns_the_new_diagnostics_of_the_edited_file(package: Path, precise_tools: Tools) -> None:
    type_checked(precise_tools, {"path": "shop/use.py"})  # ready
    use = package / "shop" / "use.py"
    use.write_text(use.read_text() + "\n\nBROKEN: int = 'x'  # an error before the edit: not new\n")
    result = precise_tools.call("edit_file", {"path": "shop/use.py", "old_text": "made.get('a')", "new_text": "made.fetch('a')"})
    found = result["structuredContent"]["new_diagnostics"]
    assert [(item["path"], item["line"], item["code"]) for item in found] == [("shop/use.py", 6, "reportAttributeAccessIssue")]
    assert "[New from the language server: 1 error, 0 warnings in the edited files:]" in result["content"][0]["text"]
    quiet = precise_tools.data("edit_file", {"path": "shop/use.py", "old_text": "cache.get('b')", "new_text": "cache.get('bb')"})
    assert quiet["new_diagnostics"] == []  # nothing new: the two errors already there are not reported again
    dry = precise_tools.data("write_file", {"path": "shop/extra.py", "content": "from shop.client import make\n\nmake().nope\n",
                                            "dry_run": True})
    assert [item["code"] for item in dry["new_diagnostics"]] == ["reportAttributeAccessIssue"]  # checked, not written
    assert not (package / "shop" / "extra.py").exists()


def test_type_checks_are_bounded_per_call(package: Path, registry: LanguageServers, monkeypatch: pytest.MonkeyPatch) -> None:
    from shipcode_mcp.workspace.code import diagnostics

    roots = Roots([str(package)])
    _ready(registry, roots)
    monkeypatch.setattr(diagnostics, "MAX_TYPE_CHECKED", 1)
    result = run("diagnostics", context(), roots, path="shop")
    data = result.structured or {}
    assert data["type_checked"] == 1 and data["files_checked"] == 3
    assert "2 more got the syntax tree's findings only" in result.content[0]["text"]


def test_find_definition_is_the_language_servers_where_only_types_can_tell(package: Path, precise_tools: Tools) -> None:
    arguments = {"path": "shop/use.py", "line": 6, "name": "get"}
    with Tools(package) as plain:  # the scopes cannot tell what make() returns: both gets, by name
        scoped = plain.data("find_definition", arguments)
    assert scoped["precision"] == "name" and {item["line"] for item in scoped["definitions"]} == {2, 7}

    def answered() -> dict[str, Any] | None:
        data = precise_tools.data("find_definition", arguments)
        return data if data["language_server"] is not None else None
    data = wait_for(answered, READY_WAIT, "the language server's answer")
    assert data["precision"] == "exact" and [(item["path"], item["line"], item["column"], item["kind"])
                                             for item in data["definitions"]] == [("shop/client.py", 2, 9, "method")]
    assert "exact: basedpyright's" in precise_tools.last["content"][0]["text"]
    # A builtin's (the server names typeshed's stub, outside the roots) is said as the scopes say it.
    builtin = precise_tools.data("find_definition", {"path": "shop/use.py", "line": 8, "name": "get"})
    assert (builtin["builtin"], builtin["definitions"], builtin["language_server"]) == ("dict.get", [], None)


# -- what a review found (each reproduced first) -------------------------------------------------------------
def test_no_language_server_runs_without_the_kernel_sandbox(package: Path, registry: LanguageServers,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """pyright runs the project's Python to find its search paths, and reads what links lead to: unconfined, a
    hostile repository's `.venv/bin/python` would run. Without the sandbox, no server is started."""
    monkeypatch.setattr(servers, "unavailable_reason", lambda: "Landlock is not available on this kernel")
    data = run("find_references", context(), Roots([str(package)]), name="Client.get").structured or {}
    assert data["language_server"] is None and "without the kernel sandbox" in data["language_server_note"]
    assert registry.running() == []


def test_files_the_server_leaves_out_keep_their_scoped_uses(package: Path) -> None:
    """A project's `exclude` (and pyright's hidden folders) leave files out of the server's program: the uses the
    scopes prove there stay `scoped`, and a rename changes them too (else the excluded tests would break)."""
    (package / "pyproject.toml").write_text('[tool.pyright]\nexclude = ["tests"]\n')
    (package / "tests").mkdir()
    (package / "tests" / "test_client.py").write_text("from shop.client import make\n\nassert make().get('x')\n"
                                                      "from shop.client import Client\nClient().get('y')\n")
    with Tools(package, write=True, precise=True) as tools:
        data = exact(tools, "Client.get")
        assert ("tests/test_client.py", 5) in sites(data, "scoped") and ("shop/use.py", 6) in sites(data, "exact")
        renamed = tools.data("rename_symbol", {"name": "Client.get", "new_name": "download"})
    assert renamed["language_server"] == "basedpyright"
    assert "Client().download('y')" in (package / "tests" / "test_client.py").read_text()
    assert "made.download('a')" in (package / "shop" / "use.py").read_text()


def test_ignored_files_are_left_alone_as_every_tool_leaves_them(package: Path) -> None:
    (package / ".gitignore").write_text("build/\n")
    (package / "build").mkdir()
    (package / "build" / "gen.py").write_text("from shop.client import Client\n\nClient().get('z')\n")
    with Tools(package, write=True, precise=True) as tools:
        data = exact(tools, "Client.get")
        assert not any(item["path"].startswith("build/") for item in data["references"])
        renamed = tools.data("rename_symbol", {"name": "Client.get", "new_name": "download", "dry_run": True})
    assert renamed["outside"] == ["build/gen.py"] and not any(item["path"].startswith("build/") for item in renamed["sites"])


def test_new_diagnostics_check_the_edited_files_together(package: Path, precise_tools: Tools) -> None:
    exact(precise_tools, "Client.get")
    # A dry-run rename changes the definition and its importer together: no false "unknown import" in either.
    dry = precise_tools.data("rename_symbol", {"name": "client.make", "new_name": "build", "dry_run": True})
    assert dry["language_server"] == "basedpyright" and dry["new_diagnostics"] == []
    # A patch that removes make() and touches its importer elsewhere: the importer's new error is reported.
    patch = ("--- a/shop/client.py\n+++ b/shop/client.py\n@@ -8,5 +8,1 @@\n         return key\n-\n-\n"
             "-def make() -> Client:\n-    return Client()\n"
             "--- a/shop/use.py\n+++ b/shop/use.py\n@@ -9 +9 @@\n-    return anything.get('d')\n+    return anything\n")
    found = precise_tools.data("apply_patch", {"patch": patch, "dry_run": True})["new_diagnostics"]
    assert ("shop/use.py", 1, "error") in {(item["path"], item["line"], item["severity"]) for item in found}, found


def test_a_stopped_server_is_taken_as_hung_and_started_again(package: Path, registry: LanguageServers,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    roots = Roots([str(package)])
    first = _ready(registry, roots)
    assert first.pid is not None
    monkeypatch.setattr(precise, "REQUEST_TIMEOUT", 0.5)
    os.kill(first.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        data = run("find_references", context(), roots, name="Client.get").structured or {}
        assert time.monotonic() - started < 10 and data["language_server"] is None
        assert first.state == "failed" and "stopped" in (first.failure or "")
    finally:
        if first.pid is not None and Path(f"/proc/{first.pid}").exists():
            os.kill(first.pid, signal.SIGCONT)
    assert _ready(registry, roots) is not first


def test_at_most_two_servers_of_a_language_run(tmp_path: Path, registry: LanguageServers) -> None:
    folders = []
    for index in range(3):
        folder = tmp_path / f"p{index}"
        folder.mkdir()
        (folder / "m.py").write_text("def f():\n    return 1\n")
        folders.append(folder)
        _ready(registry, Roots([str(folder)]))
    assert len(registry.running()) == servers.MAX_SERVERS == 2
    assert {server.roots for server in registry.running()} == {(str(folders[1]),), (str(folders[2]),)}


def test_a_language_server_that_is_not_installed_is_not_said_where_another_answers(
        package: Path, registry: LanguageServers) -> None:
    """With basedpyright alone, a workspace with JavaScript too: the JavaScript definition of the same name is
    nobody's to answer, and no note says a server is missing (the answer is basedpyright's, whole)."""
    registry._installed["typescript"] = None  # as where typescript-language-server is not installed
    (package / "web").mkdir()
    (package / "web" / "client.js").write_text("export class Client {\n  get(url) {\n    return url;\n  }\n}\n")
    roots = Roots([str(package)])
    _ready(registry, roots)
    data = run("find_references", context(), roots, name="Client.get").structured or {}
    assert data["language_server"] == "basedpyright" and data["language_server_note"] is None
    assert ("web/client.js", 2) in sites(data, "scoped")  # (JavaScript's scopes: the member of its Client)
    definition = run("find_definition", context(), roots, path="web/client.js", line=2, name="get").structured or {}
    assert definition["language_server_note"] is None and definition["precision"] == "scoped"


def test_no_python_server_stays_for_a_workspace_without_python(tmp_path: Path) -> None:
    """--precise starts every installed server: in a TypeScript workspace basedpyright held some 100 MB idle."""
    (tmp_path / "index.ts").write_text("export const one = 1;\n")
    with Tools(tmp_path, precise=True) as tools:
        tools.data("find_symbol", {"name": "one"})
        wait_for(lambda: not language_server_pids(tools.process.proc.pid), 30, "basedpyright's stop")
        tools.close()
    assert "precise: basedpyright" in tools.process.stderr.decode()  # installed, started, and stopped
