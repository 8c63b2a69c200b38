"""The code index (workspace/code/index.py): find_symbol answers from it what a scan of the files answers, on real
code, however the files change; it survives damage, other formats, a kill in the middle of a build and two
processes writing at once, and it never reads outside the roots nor writes inside them."""

from __future__ import annotations

import ast
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workspace_support import Tools, copy_real_code

pytest.importorskip("ast_grep_py")

from shipcode_mcp.context import Context
from shipcode_mcp.workspace.code import index as code_index
from shipcode_mcp.workspace.code import tree_watch
from shipcode_mcp.workspace.code.navigate import find_symbol
from shipcode_mcp.workspace.code.symbols import language_for
from shipcode_mcp.workspace.roots import Roots


def call(roots: Roots, name: str, *, path: str = ".", kind: str | None = None, limit: int = 2000,
         index: bool = True) -> dict[str, Any]:
    done = find_symbol(Context(None, 1, "tools/call", {}), roots, name, kind, path, limit, index=index)
    assert done.structured is not None
    data: dict[str, Any] = {**done.structured, "text": done.content[0]["text"]}
    return data


def same(roots: Roots, name: str, **arguments: Any) -> dict[str, Any]:
    """find_symbol from the index, checked against the scan's answer (every field but `index` and the text's last
    line when nothing is found, which says where it looked)."""
    indexed = call(roots, name, **arguments)
    scanned = call(roots, name, index=False, **arguments)
    assert indexed["index"] == "fresh", indexed["text"]
    assert scanned["index"] == "off"
    for key in ("symbols", "truncated", "skipped", "skipped_files"):
        assert indexed[key] == scanned[key], (name, key)
    if indexed["symbols"]:
        assert indexed["text"] == scanned["text"]
    return indexed


@pytest.fixture
def index_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "index"
    yield folder
    code_index.INDEXES.close()


def names_defined(root: Path) -> list[str]:
    """Every def and class name of the Python files under `root`, as ast finds them (sorted)."""
    found: set[str] = set()
    for path in root.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        found.update(node.name for node in ast.walk(tree)
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))
    return sorted(found)


@pytest.mark.one_python
# -- the answers are the scan's ----------------------------------------------------------------------------
def test_every_name_of_real_code_is_found_as_a_scan_finds_it(tmp_path: Path, index_folder: Path) -> None:
    root = copy_real_code(tmp_path / "work")
    roots = Roots([str(root)], str(index_folder))
    names = names_defined(root)
    assert len(names) > 1000
    for name in names[::7]:
        assert same(roots, name)["symbols"], name
    for query in ["Message.get", "HTTPConnection.request", "get_*", "Http*Error", "_[a-c]*", "Message.*", "*.__init__",
                  "parse?", "Router", "z.object", "NewCommand", "no_such_name_anywhere"]:
        same(roots, query)
    for query, kind in [("get", "method"), ("Message", "class"), ("loads", "function")]:
        same(roots, query, kind=kind)
    same(roots, "get", path="email")  # a folder under the root
    same(roots, "get", path="email/", limit=3)  # a cut answer
    assert same(roots, "get", limit=3)["truncated"]


def test_a_file_under_a_folder_with_a_similar_name_is_not_under_it(tmp_path: Path, index_folder: Path) -> None:
    for folder in ("a", "a0", "a.b", "ab", "a-"):
        (tmp_path / "work" / folder).mkdir(parents=True)
        (tmp_path / "work" / folder / "m.py").write_text("def target():\n    pass\n")
    roots = Roots([str(tmp_path / "work")], str(index_folder))
    assert [item["path"] for item in same(roots, "target", path="a")["symbols"]] == ["a/m.py"]
    assert len(same(roots, "target")["symbols"]) == 5


def test_names_that_are_not_utf8_or_hold_newlines_are_indexed_like_any_other(tmp_path: Path, index_folder: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plain.py").write_text("def target():\n    pass\n")
    os.makedirs(os.path.join(os.fsencode(work), b"caf\xe9"))
    Path(os.fsdecode(os.path.join(os.fsencode(work), b"caf\xe9", b"m\xff.py"))).write_text("def target():\n    pass\n")
    (work / "new\nline.py").write_text("class target:\n    pass\n")
    roots = Roots([str(work)], str(index_folder))
    assert len(same(roots, "target")["symbols"]) == 3


# -- fresh however the files change ----------------------------------------------------------------------
@pytest.fixture(params=["watched", "walked"])
def watched(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each freshness test twice: with the root's folders under inotify (tree_watch.py), and without (a walk
    before each answer, as where inotify is missing or its limits are reached)."""
    if request.param == "walked":
        monkeypatch.setattr(tree_watch, "MAX_FOLDERS", 0)
    return str(request.param)


def test_changed_new_deleted_and_moved_files_are_read_again_before_the_answer(tmp_path: Path, index_folder: Path,
                                                                              watched: str) -> None:
    work = copy_real_code(tmp_path / "work")
    roots = Roots([str(work)], str(index_folder))
    assert same(roots, "fresh_name")["symbols"] == []
    parser = work / "email" / "parser.py"
    parser.write_text(parser.read_text() + "\n\ndef fresh_name():\n    pass\n")
    assert [item["path"] for item in same(roots, "fresh_name")["symbols"]] == ["email/parser.py"]
    (work / "json" / "added.py").write_text("class fresh_name:\n    pass\n")
    assert len(same(roots, "fresh_name")["symbols"]) == 2
    (work / "json" / "added.py").rename(work / "http" / "moved.py")
    assert [item["path"] for item in same(roots, "fresh_name")["symbols"]] == ["email/parser.py", "http/moved.py"]
    parser.unlink()
    assert [item["path"] for item in same(roots, "fresh_name")["symbols"]] == ["http/moved.py"]
    shutil.rmtree(work / "http")
    assert same(roots, "fresh_name")["symbols"] == []
    assert same(roots, "HTTPConnection")["symbols"] == []


def test_a_rewrite_of_the_same_size_with_the_old_mtime_put_back_is_read_again(tmp_path: Path, index_folder: Path,
                                                                             watched: str) -> None:
    """What a stat key of size and mtime alone would miss (a tool that restores times, a write in the same clock
    tick): the change time and the racy rule catch it."""
    work = tmp_path / "work"
    work.mkdir()
    module = work / "m.py"
    module.write_text("def alpha():\n    pass\n")
    roots = Roots([str(work)], str(index_folder))
    assert len(same(roots, "alpha")["symbols"]) == 1
    before = module.stat()
    module.write_text("def gamma():\n    pass\n")
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert module.stat().st_size == before.st_size and module.stat().st_mtime_ns == before.st_mtime_ns
    assert same(roots, "alpha")["symbols"] == []
    assert len(same(roots, "gamma")["symbols"]) == 1
    old = time.time() - 3600  # out of the racy window: only the stat key can tell
    os.utime(module, (old, old))
    assert len(same(roots, "gamma")["symbols"]) == 1
    module.write_text("def delta():\n    pass\n")
    os.utime(module, (old, old))
    assert len(same(roots, "delta")["symbols"]) == 1


def test_files_written_made_and_deleted_while_it_answers_are_all_seen_once_it_is_quiet(tmp_path: Path,
                                                                                        index_folder: Path) -> None:
    """Writers racing the walks and the watch (files made in new and old folders, written, deleted): once they stop,
    the next answer is the files' as they are."""
    work = copy_real_code(tmp_path / "work")
    roots = Roots([str(work)], str(index_folder))
    same(roots, "Message")
    stop = threading.Event()

    def write() -> None:
        number = 0
        while not stop.is_set() and number < 3000:
            folder = work / "racing" / f"f{number % 7}" / f"deeper{number % 2}" if number % 3 else work / "email"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"racer_{number}.py").write_text(f"def racer_{number}():\n    pass\n")
            if number % 5 == 0 and number:
                (work / "email" / "parser.py").write_text(f"def racer_edit_{number}():\n    pass\n")
            if number % 4 == 1:
                for old in folder.glob("racer_*.py"):
                    old.unlink()
                    break
            number += 1
            time.sleep(0.0005)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(40):
            call(roots, "racer_*")
    finally:
        stop.set()
        writer.join()
    on_disk = {str(path.relative_to(work)) for path in (work / "racing").rglob("racer_*.py")}
    found = same(roots, "racer_[0-9]*", path="racing", limit=2000)["symbols"]  # the scan's answer, and the files'
    assert len(found) == len(on_disk) and {item["path"] for item in found} == on_disk
    assert len(same(roots, "racer_[0-9]*", path="email", limit=2000)["symbols"]) == len(list((work / "email").glob("racer_*")))
    edited = same(roots, "racer_edit_*")["symbols"]
    assert [item["signature"] for item in edited] == [(work / "email" / "parser.py").read_text().split(":")[0]]


def test_a_file_made_between_the_walk_and_the_watch_is_found_by_the_next_call(tmp_path: Path, index_folder: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The window no event and no walk covers: made after the walk listed the folder, before inotify watched it."""
    work = copy_real_code(tmp_path / "work")
    roots = Roots([str(work)], str(index_folder))
    same(roots, "Message")
    (work / "json" / "one.py").write_text("def in_the_gap():\n    pass\n")  # makes the next call walk
    time.sleep(0.05)
    made = tree_watch.TreeWatch.of

    def late(root: str) -> tree_watch.TreeWatch | None:
        (work / "json" / "two.py").write_text("def in_the_gap():\n    pass\n")
        return made(root)

    monkeypatch.setattr(tree_watch.TreeWatch, "of", late)
    assert [item["path"] for item in call(roots, "in_the_gap")["symbols"]] == ["json/one.py"]
    monkeypatch.setattr(tree_watch.TreeWatch, "of", made)
    assert [item["path"] for item in same(roots, "in_the_gap")["symbols"]] == ["json/one.py", "json/two.py"]


def test_a_file_written_while_it_was_read_is_read_again_at_the_next_call(tmp_path: Path, index_folder: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A write between the index's read of a file and its write transaction: the older version is not kept, and the
    next call reads the file again (it was dropped from the index until the next minute's walk)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "b.py").write_text("def beta_1():\n    pass\n")
    roots = Roots([str(work)], str(index_folder))
    same(roots, "beta_*")
    read = code_index._parsed

    def raced(*arguments: Any) -> Iterator[tuple[bytes, Any, Any]]:
        outcomes = list(read(*arguments))
        (work / "b.py").write_text("def beta_3():\n    pass\n")  # written after the read, before the write
        yield from outcomes

    (work / "b.py").write_text("def beta_2():\n    pass\n")
    monkeypatch.setattr(code_index, "_parsed", raced)
    call(roots, "beta_*")
    monkeypatch.setattr(code_index, "_parsed", read)
    assert [item["name"] for item in same(roots, "beta_*")["symbols"]] == ["beta_3"]


def test_an_older_version_read_by_another_process_never_replaces_a_newer_one(tmp_path: Path, index_folder: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "f.py").write_text("def version_1():\n    pass\n")
    roots = Roots([str(work)], str(index_folder))
    same(roots, "version_*")
    slow = code_index.RootIndex(str(index_folder), str(work))  # another process's view of the same database
    old = list(code_index._parsed(roots, code_index.RootIndex._whole(slow, roots), [("f.py", "f.py")], None))
    time.sleep(0.01)
    (work / "f.py").write_text("def version_2():\n    pass\n")
    assert [item["name"] for item in same(roots, "version_*")["symbols"]] == ["version_2"]  # stored by this one
    monkeypatch.setattr(code_index, "_parsed", lambda *_: iter(old))
    slow.store(roots, code_index.RootIndex._whole(slow, roots), [("f.py", "f.py")], (), None)  # too late: refused
    slow.close()
    monkeypatch.undo()
    assert [item["name"] for item in same(roots, "version_*")["symbols"]] == ["version_2"]


def test_changes_only_a_walk_or_another_name_tells_are_seen(tmp_path: Path, index_folder: Path) -> None:
    """A file made in a folder skeleton that held no file, a .gitignore above the root, git's info/exclude, a write
    through a hard link from outside the roots: each seen by the next call (they were served stale for a minute)."""
    above = tmp_path / "above"
    work = above / "root"
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "a.py").write_text("def alpha():\n    pass\n")
    (work / "ignored_later.py").write_text("def hidden_later():\n    pass\n")
    (work / "excluded_later.py").write_text("def excluded_later():\n    pass\n")
    (work / "src" / "main" / "pkg").mkdir(parents=True)
    outside = tmp_path / "outside.py"
    outside.write_text("def linked_1():\n    pass\n")
    os.link(outside, work / "linked.py")
    roots = Roots([str(work)], str(index_folder))
    same(roots, "alpha")
    time.sleep(0.1)
    same(roots, "alpha")  # watching now
    (work / "src" / "main" / "pkg" / "new.py").write_text("def deep_new():\n    pass\n")
    (above / ".gitignore").write_text("ignored_later.py\n")
    (work / ".git" / "info" / "exclude").write_text("excluded_later.py\n")
    outside.write_text("def linked_2():\n    pass\n")
    assert [item["path"] for item in same(roots, "deep_new")["symbols"]] == ["src/main/pkg/new.py"]
    assert same(roots, "hidden_later")["symbols"] == []
    assert same(roots, "excluded_later")["symbols"] == []
    assert [item["name"] for item in same(roots, "linked_*")["symbols"]] == ["linked_2"]


def test_a_path_the_root_ignores_is_answered_as_the_scan_answers_it(tmp_path: Path, index_folder: Path) -> None:
    work = tmp_path / "work"
    (work / "build").mkdir(parents=True)
    (work / "vendor" / "lib").mkdir(parents=True)
    (work / ".gitignore").write_text("build/\n/vendor\n")
    for folder in ("", "build", "vendor/lib"):
        (work / folder / "m.py").write_text("def target():\n    pass\n")
    roots = Roots([str(work)], str(index_folder))
    assert len(same(roots, "target")["symbols"]) == 1
    for path in ("build", "vendor/lib"):
        data = call(roots, "target", path=path)
        assert data["symbols"] == call(roots, "target", path=path, index=False)["symbols"] != []


def test_odd_names_and_roots_are_indexed_like_any_other(tmp_path: Path, index_folder: Path) -> None:
    """A file name of 0xFF bytes (past any byte bound), a name ending in U+10FFFF (past a glob's bound), a root
    whose own path is not UTF-8."""
    root = os.path.join(os.fsencode(tmp_path), b"r\xe9")
    os.makedirs(root)
    work = Path(os.fsdecode(root))
    Path(os.fsdecode(os.path.join(root, b"\xff" * 9 + b".py"))).write_text("def target():\n    pass\n")
    (work / "f.sh").write_text("tar\U0010ffffget() {\n  echo\n}\n")
    roots = Roots([str(work)], str(index_folder))
    assert len(same(roots, "target")["symbols"]) == 1
    same(roots, "tar*")
    same(roots, "tar\U0010ffff*")


def test_store_failures_lose_no_change_and_leak_no_watch(tmp_path: Path, index_folder: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for number in range(10):
        (work / f"m{number}.py").write_text(f"def f{number}():\n    pass\n")
    roots = Roots([str(work)], str(index_folder))
    same(roots, "f1")
    index = code_index.INDEXES.for_root(str(index_folder), str(work))
    monkeypatch.setattr(code_index, "BUSY_MS", 200)
    index.close()  # opened again with the shorter wait
    other = sqlite3.connect(index.path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # another process writing for longer than the wait
    (work / "m1.py").write_text("def f1_new():\n    pass\n")
    assert call(roots, "f1_new")["index"] == "off"
    other.execute("ROLLBACK")
    other.close()
    assert len(same(roots, "f1_new")["symbols"]) == 1  # the events read by the failed call are not lost

    def inotify_instances() -> int:
        return sum(os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify" for fd in os.listdir("/proc/self/fd")
                   if os.path.exists(f"/proc/self/fd/{fd}"))

    monkeypatch.setattr(code_index, "SYNC_CHANGES", 2)
    monkeypatch.setattr(code_index.RootIndex, "store", lambda *_, **__: (_ for _ in ()).throw(
        code_index.Unavailable("the code index could not be used (database is locked)")))
    fresh = Roots([str(work)], str(tmp_path / "other_index"))
    before = inotify_instances()
    for _ in range(5):
        assert call(fresh, "f1")["index"] == "building"
        built = code_index.INDEXES.for_root(str(tmp_path / "other_index"), str(work))
        while built.building is not None:
            time.sleep(0.01)
    assert inotify_instances() <= before + 1


def test_files_the_outline_skips_are_read_as_a_scan_reads_them(tmp_path: Path, index_folder: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "good.py").write_text("def good():\n    pass\n")
    (work / "big.py").write_text("def good():\n    pass\n" + "# padding\n" * 60_000)
    (work / "other_big.py").write_text("def other():\n    pass\n" + "# padding\n" * 60_000)
    (work / "calls_big.py").write_text("x = 1 + good()\n" + "# padding\n" * 60_000)  # mentions it, cannot define it
    roots = Roots([str(work)], str(index_folder))
    data = same(roots, "good")
    assert [item["path"] for item in data["skipped_files"]] == ["big.py"]
    assert [item["path"] for item in same(roots, "good", limit=1)["skipped_files"]] == ["big.py"]
    (work / "big.py").write_text("def good():\n    pass\n")  # small again: indexed
    assert [item["path"] for item in same(roots, "good")["symbols"]] == ["big.py", "good.py"]


# -- damage, other formats, other roots ------------------------------------------------------------------
def database_of(index_folder: Path) -> Path:
    found = list(index_folder.glob("*.sqlite3"))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "format", "root"])
def test_a_damaged_database_or_one_of_another_format_or_root_is_built_again(tmp_path: Path, index_folder: Path,
                                                                              damage: str) -> None:
    work = copy_real_code(tmp_path / "work")
    roots = Roots([str(work)], str(index_folder))
    same(roots, "Message")
    code_index.INDEXES.close()
    database = database_of(index_folder)
    if damage == "garbage":
        database.write_bytes(b"this is not a database" * 1000)
    elif damage == "truncated":
        data = database.read_bytes()
        database.write_bytes(data[:len(data) // 3] + b"\0" * 5000 + data[len(data) // 3 + 5000:])
    else:
        with sqlite3.connect(database) as db:
            if damage == "format":
                db.execute("PRAGMA user_version=999")
            else:
                db.execute("UPDATE meta SET value='/elsewhere' WHERE key='root'")
    assert [item["path"] for item in same(roots, "Message")["symbols"]] == ["email/message.py",
                                                                              "importlib/metadata/_adapters.py"]
    with sqlite3.connect(database_of(index_folder)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA user_version").fetchone()[0] == code_index.FORMAT
        assert db.execute("SELECT value FROM meta WHERE key='root'").fetchone()[0] == os.fsencode(work)


def test_a_cache_folder_that_cannot_be_made_leaves_the_answer_to_a_scan(tmp_path: Path) -> None:
    work = copy_real_code(tmp_path / "work")
    (tmp_path / "a_file").write_text("")
    roots = Roots([str(work)], str(tmp_path / "a_file" / "index"))
    try:
        data = call(roots, "Message")
        assert data["index"] == "off" and "code index is off" in data["text"].splitlines()[-1]
        assert [item["path"] for item in data["symbols"]] == ["email/message.py", "importlib/metadata/_adapters.py"]
    finally:
        code_index.INDEXES.close()


def test_a_full_index_is_off_for_the_process_and_says_why(tmp_path: Path, index_folder: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code_index, "MAX_INDEX_BYTES", 64 * 1024)
    work = copy_real_code(tmp_path / "work")
    roots = Roots([str(work)], str(index_folder))
    for _ in range(2):
        data = call(roots, "Message")
        assert data["index"] == "off" and "the code index is off: it is full" in data["text"].splitlines()[-1]
        assert [item["path"] for item in data["symbols"]] == ["email/message.py", "importlib/metadata/_adapters.py"]


def test_the_least_recently_used_databases_go_past_the_limit(tmp_path: Path, index_folder: Path) -> None:
    index_folder.mkdir()
    old = time.time() - 2 * code_index.STALE_SECONDS
    for number in range(code_index.MAX_DATABASES + 5):
        database = index_folder / f"{number:04}.sqlite3"
        database.write_bytes(b"")
        if number < 10:
            os.utime(database, (old + number, old + number))
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "m.py").write_text("def f():\n    pass\n")
    same(Roots([str(tmp_path / "work")], str(index_folder)), "f")
    left = sorted(path.name for path in index_folder.glob("*.sqlite3"))
    assert len(left) == code_index.MAX_DATABASES
    assert "0000.sqlite3" not in left and "0005.sqlite3" not in left and "0006.sqlite3" in left  # the oldest six went


# -- through the server: the background build, a kill, two processes ------------------------------------
def build_state(database: Path) -> tuple[int, bool]:
    """Files the database holds, and whether its build finished."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10) as db:
        files = db.execute("SELECT count(*) FROM files").fetchone()[0]
        built = db.execute("SELECT 1 FROM meta WHERE key='built'").fetchone() is not None
    return files, built


def wait_fresh(tools: Tools, name: str, timeout: float = 240.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        data = tools.data("find_symbol", {"name": name, "limit": 2000})
        if data["index"] == "fresh" or time.monotonic() > deadline:
            return data
        time.sleep(0.2)


def test_a_large_root_is_built_in_the_background_a_kill_keeps_what_was_committed(tmp_path: Path) -> None:
    work = copy_real_code(tmp_path / "work", copies=14)  # more than 2 x 512 files with any Python's library
    files = sum(1 for _ in work.rglob("*.py"))
    assert files > 2 * code_index.SYNC_CHANGES
    index_folder = tmp_path / "index"
    options = ("--index-dir", str(index_folder))
    with Tools(work, options=("--no-index",)) as plain:
        expected = plain.data("find_symbol", {"name": "get", "limit": 2000})["symbols"]
    tools = Tools(work, options=options)
    first = tools.call("find_symbol", {"name": "get", "limit": 2000})
    assert first["structuredContent"]["index"] == "building"
    assert first["structuredContent"]["symbols"] == expected  # answered by a scan meanwhile
    assert "is being built" in first["content"][0]["text"].splitlines()[-1]
    database = database_of(index_folder)
    deadline = time.monotonic() + 120
    while build_state(database)[0] < code_index.BATCH and time.monotonic() < deadline:
        time.sleep(0.05)
    held, built = build_state(database)
    assert held >= code_index.BATCH and not built
    tools.process.proc.send_signal(signal.SIGKILL)
    tools.process.proc.wait()
    again, _ = build_state(database)
    assert again >= held  # committed batches survive the kill
    with Tools(work, options=options) as tools:
        (work / "copy0" / "email" / "late.py").write_text("def get():\n    pass\n")  # a change while it builds
        data = wait_fresh(tools, "get")
        assert data["index"] == "fresh"
        assert data["symbols"] == sorted([*expected, {**expected[0], "path": "copy0/email/late.py", "line": 1,
                                                       "end_line": 2, "def_line": 1, "signature": "def get()",
                                                       "qualified_name": "get", "kind": "function", "name": "get"}],
                                         key=lambda item: (item["path"], item["line"]))
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        code_files = {os.fsencode(str(path.relative_to(work))) for path in work.rglob("*")
                      if path.is_file() and language_for(path.name) is not None}
        assert {row[0] for row in db.execute("SELECT path FROM files")} == code_files


def test_two_processes_update_one_database_at_once(tmp_path: Path) -> None:
    work = copy_real_code(tmp_path / "work")
    options = ("--index-dir", str(tmp_path / "index"))
    with Tools(work, options=options) as one, Tools(work, options=options) as two:
        assert one.data("find_symbol", {"name": "Message"})["index"] == "fresh"
        failures: list[BaseException] = []

        def ask(tools: Tools, rounds: int) -> None:
            try:
                for number in range(rounds):
                    name = f"made_{number}"
                    data = tools.data("find_symbol", {"name": name})
                    assert [item["path"] for item in data["symbols"]] == [f"made/{name}.py"], data
            except BaseException as err:
                failures.append(err)

        (work / "made").mkdir()
        for number in range(30):
            (work / "made" / f"made_{number}.py").write_text(f"def made_{number}():\n    pass\n")
        threads = [threading.Thread(target=ask, args=(tools, 30)) for tools in (one, two)]
        for thread in threads:
            thread.start()
        for number in range(30, 60):  # more changes while both read and write
            (work / "made" / f"made_{number}.py").write_text(f"def made_{number}():\n    pass\n")
        for thread in threads:
            thread.join()
        assert not failures, failures
        for tools in (one, two):
            data = tools.data("find_symbol", {"name": "made_*", "limit": 200})
            assert len(data["symbols"]) == 60 and data["index"] == "fresh"
    with sqlite3.connect(database_of(tmp_path / "index")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert sum(row[0].startswith(b"made/") for row in db.execute("SELECT path FROM files")) == 60


# -- confinement ---------------------------------------------------------------------------------------
def test_the_index_reads_nothing_outside_the_roots_and_writes_nothing_inside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def secret_function():\n    pass\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "m.py").write_text("def visible():\n    pass\n")
    (work / "link.py").symlink_to(outside / "secret.py")
    (work / "linked_folder").symlink_to(outside)
    # the attack works without us: the links lead to the definition
    assert "secret_function" in (work / "link.py").read_text() and (work / "linked_folder" / "secret.py").exists()
    before = sorted(str(path.relative_to(work)) for path in work.rglob("*"))
    with Tools(work, options=("--index-dir", str(tmp_path / "index"))) as tools:
        data = tools.data("find_symbol", {"name": "secret_function"})
        assert data["symbols"] == [] and data["index"] == "fresh"
        assert tools.data("find_symbol", {"name": "visible"})["symbols"][0]["path"] == "m.py"
    assert sorted(str(path.relative_to(work)) for path in work.rglob("*")) == before
    with sqlite3.connect(database_of(tmp_path / "index")) as db:
        assert [row[0] for row in db.execute("SELECT path FROM files")] == [b"m.py"]
        assert db.execute("SELECT count(*) FROM symbols WHERE name='secret_function'").fetchone()[0] == 0
    assert (tmp_path / "index").stat().st_mode & 0o777 == 0o700


def test_the_default_index_folder_is_the_users_cache(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "m.py").write_text("def f():\n    pass\n")
    with Tools(tmp_path / "work", env={"XDG_CACHE_HOME": str(tmp_path / "cache")}) as tools:
        assert tools.data("find_symbol", {"name": "f"})["index"] == "fresh"
    assert len(list((tmp_path / "cache" / "shipcode-mcp" / "index").glob("*.sqlite3"))) == 1
    with Tools(tmp_path / "work", options=("--no-index",), env={"XDG_CACHE_HOME": str(tmp_path / "cache2")}) as tools:
        assert tools.data("find_symbol", {"name": "f"})["index"] == "off"
    assert not (tmp_path / "cache2").exists()


if sys.platform != "linux":  # pragma: no cover - the server's platform
    pytestmark = pytest.mark.skip("Linux only")


def test_without_the_index_a_file_unchanged_since_the_last_call_is_not_read_again(tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """locate and repo_map without the index read every file; a second call reads only the files changed since (each
    file known by its path, size, times and inode, as the index knows it), and answers as reading them all does. A
    file written within RACY_NS is read again each time (its mtime may not move on a rewrite)."""
    from shipcode_mcp.workspace.code.locate import locate  # (the calls whose files are scanned)
    from shipcode_mcp.workspace.code.source import Folder

    root = copy_real_code(tmp_path / "work")
    time.sleep(code_index.RACY_NS / 1e9 + 0.1)
    kept = code_index.Scanned()
    monkeypatch.setattr(code_index, "SCANNED", kept)
    read: list[str] = []
    ask = code_index.POOL.ask

    def counted(message: dict[str, Any], check: Any) -> Any:
        read.append(message["text"][:80])
        return ask(message, check)

    monkeypatch.setattr(code_index.POOL, "ask", counted)
    roots, context = Roots([str(root)], None), Context(None, 1, "tools/call", {})
    names = Folder(roots, ".").files(context)

    def answer() -> Any:
        done = locate(context, roots, "json decoder raises an error on a trailing comma", 20000, ".")
        assert done.structured is not None and done.structured["index"] == "off"
        return done.structured["regions"]

    first = answer()
    assert len(read) == len(names) > 20
    read.clear()
    assert answer() == first and read == []
    decoder = root / "json" / "decoder.py"
    decoder.write_text(decoder.read_text().replace("def py_scanstring(", "def trailing_comma_scanner("))
    changed = answer()
    assert len(read) == 1 and any(item["symbol"] == "trailing_comma_scanner" for item in changed)
    read.clear()
    answer()
    assert len(read) == 1  # (written within RACY_NS: read again)
    monkeypatch.setattr(code_index, "RACY_NS", 0)
    read.clear()
    answer()
    answer()
    assert len(read) == 1


def test_what_is_kept_of_files_read_without_the_index_is_bounded() -> None:
    """By an estimate of its memory that counts the strings (a hostile file's deep qualified names are long: a
    review measured 227 times the count of rows and names), one file at most MAX_SCANNED_FILE; a file changed
    within RACY_NS before it was opened is not kept, whenever its parse ends."""
    kept = code_index.Scanned(limit=100_000)

    def info(inode: int, changed: int = 1) -> os.stat_result:
        return os.stat_result((0o100644, inode, 0, 1, 0, 0, 10, 0, 0, 0), {"st_mtime_ns": changed, "st_ctime_ns": changed})

    now = time.time_ns()
    for number in range(200):
        kept.put(f"/f{number}", info(number), [[(-1, "name", "name", "function", 1, 2, "def name():", 1)] * 10,
                                               {"name": 1}], now)
    assert 90_000 < kept._bytes <= 100_000
    assert kept.get("/f199", info(199)) is not None and kept.get("/f0", info(0)) is None
    assert kept.get("/f199", info(198)) is None  # (another identity: another file)
    deep = [[(-1, "n" * 30_000, "q" * 30_000, "class", 1, 2, "", 1)], {"u" * 32_000: 1}]
    assert code_index._kept_size(deep) > 92_000
    kept.put("/deep", info(1000), deep, now)
    assert kept.get("/deep", info(1000)) is None  # (more than a sixteenth of the limit: not kept)
    kept.put("/racy", info(1001, now - 1_000_000_000), [[], {}], now)
    assert kept.get("/racy", info(1001, now - 1_000_000_000)) is None
    kept.put("/racy", info(1001, now - 3_000_000_000), [[], {}], now)
    assert kept.get("/racy", info(1001, now - 3_000_000_000)) is not None


def test_one_files_names_kept_are_at_most_a_sixteenth_of_the_bound() -> None:
    kept = code_index.Scanned()
    info = os.stat_result((0o100644, 7, 0, 1, 0, 0, 10, 0, 0, 0), {"st_mtime_ns": 1, "st_ctime_ns": 1})
    generated: list[Any] = [[], {f"name_{number}_{'x' * 40}": 1 for number in range(40_000)}]
    assert code_index._kept_size(generated) > code_index.MAX_SCANNED_BYTES // 16
    kept.put("/generated", info, generated, time.time_ns())
    assert kept.get("/generated", info) is None and kept._bytes == 0
    kept.put("/small", info, [[], {"name": 1}], time.time_ns())
    assert kept.get("/small", info) is not None
