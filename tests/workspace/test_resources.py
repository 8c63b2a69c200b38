"""Workspace resources through the real `shipcode-mcp` process: listing, reading, confinement, paging.

Every line the server writes is checked against the official 2025-06-18 schema by `McpProcess`.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shipcode_mcp.workspace.listing import list_files
from shipcode_mcp.workspace.resource_limits import MAX_READ_BYTES, RESOURCE_TOO_LARGE
from shipcode_mcp.workspace.uris import encode_path, file_uri, uri_path
from support import HANDSHAKE, HANDSHAKE_REPLY, INITIALIZED, REPO, SERVER, McpProcess

# RFC 3986 URI characters: unreserved, reserved and '%' of an escape; nothing else may appear raw.
URI_CHARS = re.compile(r"\A[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*\Z")

NOT_FOUND = -32002


def start(root: Path, *args: str) -> McpProcess:
    process = McpProcess(*args, str(root))
    process.initialize()
    return process


def list_all(process: McpProcess) -> tuple[list[dict[str, Any]], list[str]]:
    """Every resource, following nextCursor; and the cursors met on the way."""
    resources: list[dict[str, Any]] = []
    cursors: list[str] = []
    params: dict[str, Any] = {}
    while True:
        reply = process.request("resources/list", params)
        result = reply["result"]
        resources += result["resources"]
        if "nextCursor" not in result:
            return resources, cursors
        cursors.append(result["nextCursor"])
        params = {"cursor": result["nextCursor"]}


def read(process: McpProcess, uri: str) -> dict[str, Any]:
    return process.request("resources/read", {"uri": uri})


def content_bytes(item: dict[str, Any]) -> bytes:
    assert ("text" in item) != ("blob" in item), item  # never both, never neither
    return item["text"].encode("utf-8") if "text" in item else base64.b64decode(item["blob"], validate=True)


def assert_not_found(reply: dict[str, Any], uri: str) -> None:
    assert "result" not in reply, reply
    assert reply["error"] == {"code": NOT_FOUND, "message": "Resource not found", "data": {"uri": uri}}


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


# -- a tree with every kind of awkward name and content ---------------------------------------------
AWKWARD: dict[str, bytes] = {
    "plain.txt": b"hello\n",
    "with space.md": b"# title\n",
    "hash#tag.py": b"print('#')\n",
    "100%.txt": b"percent\n",
    "%41%2F.txt": b"looks escaped, is not\n",
    "what?.txt": b"question\n",
    "-leading-dash.txt": b"dash\n",
    "--double-dash": b"two\n",
    "sub-delims !$&'()*+,;=@.txt": b"all the sub-delims\n",
    "caf\u00e9/na\u00efve \u6587\u4ef6.md": "unicode \u2713\n".encode(),
    "emoji \U0001f600.txt": b"smile\n",
    "a/b/c/d/e/f/g/h/i/j/k/l/deep.rs": b"fn main() {}\n",
    "empty": b"",
    "latin1.txt": "caf\u00e9".encode("latin-1"),  # not valid UTF-8: a blob
    "binary.bin": bytes(range(256)),
    "nul.txt": b"text\0with a NUL",  # valid UTF-8 but not text: a blob
    "bom-crlf.txt": b"\xef\xbb\xbfline one\r\nline two\r\n",
    ".hidden": b"dotfiles are listed\n",
    "image.png": b"\x89PNG\r\n\x1a\n" + bytes(32),
    "noext-text": b"plain words\n",
    "noext-binary": b"\x00\x01\x02\xff",
}
RAW_NAME = b"raw-\xff\xfe-bytes.txt"  # a file name that is not UTF-8


@pytest.fixture
def awkward(tmp_path: Path) -> Path:
    root = tmp_path / "work space #1"
    for name, data in AWKWARD.items():
        write(root / name, data)
    with open(os.path.join(os.fsencode(root), RAW_NAME), "wb") as raw:
        raw.write(b"raw name\n")
    write(root / ".gitignore", "*.log\nbuild/\n")
    write(root / "debug.log", "ignored\n")
    write(root / "build" / "out.txt", "ignored folder\n")
    write(root / ".git" / "HEAD", "ref: refs/heads/main\n")
    return root


def test_default_capabilities_and_no_subscribe_without_watch(tmp_path: Path) -> None:
    with McpProcess(str(tmp_path)) as process:
        process.send(HANDSHAKE)
        assert process.read_raw() == (HANDSHAKE_REPLY + "\n").encode()  # exactly {"tools":{},"resources":{}}
        process.send(INITIALIZED)
        for method in ("resources/subscribe", "resources/unsubscribe"):
            reply = process.request(method, {"uri": file_uri(str(tmp_path))})
            assert reply["error"] == {"code": -32601, "message": "Method not found"}


def test_round_trip_of_every_listed_file(awkward: Path) -> None:
    with start(awkward) as process:
        resources, _ = list_all(process)
        by_name = {resource["name"]: resource for resource in resources}
        expected = {*AWKWARD, ".gitignore", RAW_NAME.decode("utf-8", "replace")}
        assert set(by_name) == expected  # ignored files, ignored folders and .git/ are not listed
        assert len(resources) == len(expected)
        root_prefix = file_uri(str(awkward.resolve())) + "/"
        for resource in resources:
            uri = resource["uri"]
            assert list(resource) == ["uri", "name", "mimeType", "size"]  # the spec's order
            assert uri.startswith(root_prefix) and URI_CHARS.match(uri), uri
            assert "#" not in uri and "?" not in uri and " " not in uri
            reply = read(process, uri)
            [item] = reply["result"]["contents"]
            assert item["uri"] == uri and item["mimeType"] == resource["mimeType"]
            raw_name = RAW_NAME if resource["name"] == RAW_NAME.decode("utf-8", "replace") else resource["name"].encode()
            with open(os.path.join(os.fsencode(awkward), raw_name), "rb") as handle:
                on_disk = handle.read()
            assert content_bytes(item) == on_disk, resource["name"]
            assert resource["size"] == len(on_disk)


def test_text_or_blob_and_mime_types(awkward: Path) -> None:
    with start(awkward) as process:
        resources = {r["name"]: r for r in list_all(process)[0]}
        kinds = {name: "text" if "text" in read(process, r["uri"])["result"]["contents"][0] else "blob"
                 for name, r in resources.items()}
    assert {name for name, kind in kinds.items() if kind == "blob"} == {
        "latin1.txt", "binary.bin", "nul.txt", "image.png", "noext-binary"}
    types = {name: r["mimeType"] for name, r in resources.items()}
    assert types["hash#tag.py"] == "text/x-python"
    assert types["a/b/c/d/e/f/g/h/i/j/k/l/deep.rs"] == "text/x-rust"
    assert types["with space.md"] == "text/markdown"
    assert types["image.png"] == "image/png"
    assert types["noext-text"] == "text/plain" and types["empty"] == "text/plain" and types[".hidden"] == "text/plain"
    assert types["noext-binary"] == "application/octet-stream" and types["--double-dash"] == "text/plain"
    assert types["latin1.txt"] == "text/plain"  # the type of the name; its content still comes as a blob


def test_listing_is_exactly_what_the_tools_list(awkward: Path) -> None:
    with start(awkward) as process:
        names = [r["name"] for r in list_all(process)[0]]
    assert names == [name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                     for name in list_files(str(awkward.resolve()))]


def test_templates_one_per_root(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two words"
    write(first / "a.txt", "first")
    write(second / "dir" / "b c.txt", "second")
    with McpProcess(str(first), str(second)) as process:
        process.initialize()
        templates = process.request("resources/templates/list")["result"]["resourceTemplates"]
        assert [t["uriTemplate"] for t in templates] == [
            file_uri(str(first.resolve())) + "/{+path}", file_uri(str(second.resolve())) + "/{+path}"]
        for template in templates:
            assert list(template) == ["uriTemplate", "name", "title", "description"]
        assert [t["name"] for t in templates] == ["one", "two words"]
        # A client fills in the template without listing first.
        uri = templates[1]["uriTemplate"].replace("{+path}", encode_path("dir/b c.txt"))
        assert read(process, uri)["result"]["contents"][0]["text"] == "second"
        names = [r["name"] for r in list_all(process)[0]]
        assert names == ["a.txt", "dir/b c.txt"]


def test_nested_roots_list_a_file_once(tmp_path: Path) -> None:
    write(tmp_path / "outer" / "inner" / "x.txt", "x")
    with McpProcess(str(tmp_path / "outer"), str(tmp_path / "outer" / "inner")) as process:
        process.initialize()
        uris = [r["uri"] for r in list_all(process)[0]]
    assert uris == [file_uri(str((tmp_path / "outer" / "inner" / "x.txt").resolve()))]


def test_folders_read_as_their_entries(awkward: Path) -> None:
    real = awkward.resolve()
    with start(awkward) as process:
        root_reply = read(process, file_uri(str(real)) + "/")
        items = root_reply["result"]["contents"]
        texts = [item["text"] for item in items]
        assert texts == sorted(texts)
        assert "a/" in texts and "caf\u00e9/" in texts and "plain.txt" in texts and ".gitignore" in texts
        assert "build/" not in texts and ".git/" not in texts and "debug.log" not in texts  # hidden by policy
        folder = next(item for item in items if item["text"] == "a/")
        assert folder == {"uri": file_uri(str(real / "a")) + "/", "mimeType": "inode/directory", "text": "a/"}
        plain = next(item for item in items if item["text"] == "plain.txt")
        assert plain == {"uri": file_uri(str(real / "plain.txt")), "mimeType": "text/plain", "text": "plain.txt"}
        # A folder's URI with or without the final slash; sub-folder entries are readable in turn.
        assert read(process, file_uri(str(real / "a")))["result"] == read(process, folder["uri"])["result"]
        deep = read(process, file_uri(str(real / "a/b/c/d/e/f/g/h/i/j/k/l")))["result"]["contents"]
        assert deep == [{"uri": file_uri(str(real / "a/b/c/d/e/f/g/h/i/j/k/l/deep.rs")), "mimeType": "text/x-rust",
                         "text": "deep.rs"}]
        # Ignored folders and .git/ are not found, exactly like missing ones.
        for hidden in ("build", ".git", "nothing-here"):
            uri = file_uri(str(real / hidden)) + "/"
            assert_not_found(read(process, uri), uri)


def test_empty_folders_are_not_resources(tmp_path: Path) -> None:
    write(tmp_path / "keep.txt", "k")
    (tmp_path / "empty-dir").mkdir()
    with start(tmp_path) as process:
        uri = file_uri(str(tmp_path.resolve() / "empty-dir"))
        assert_not_found(read(process, uri), uri)  # like git: a folder shows when it holds a listed file
        root = read(process, file_uri(str(tmp_path.resolve())) + "/")["result"]["contents"]
        assert [item["text"] for item in root] == ["keep.txt"]


def test_changes_show_at_once(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "a")
    real = tmp_path.resolve()
    with start(tmp_path) as process:
        assert [r["name"] for r in list_all(process)[0]] == ["a.txt"]
        write(tmp_path / "b.txt", "b")
        write(tmp_path / "new" / "c.txt", "c")
        # Read before any listing has seen it, then list: both see the new files at once.
        assert read(process, file_uri(str(real / "new" / "c.txt")))["result"]["contents"][0]["text"] == "c"
        assert [r["name"] for r in list_all(process)[0]] == ["a.txt", "b.txt", "new/c.txt"]
        (tmp_path / "b.txt").unlink()
        assert_not_found(read(process, file_uri(str(real / "b.txt"))), file_uri(str(real / "b.txt")))
        assert [r["name"] for r in list_all(process)[0]] == ["a.txt", "new/c.txt"]
        assert [i["text"] for i in read(process, file_uri(str(real)) + "/")["result"]["contents"]] == ["a.txt", "new/"]


# -- confinement ------------------------------------------------------------------------------------
@pytest.fixture
def fortress(tmp_path: Path) -> Path:
    """A root with a secret beside it, and links from inside to outside."""
    root = tmp_path / "root"
    write(root / "inside.txt", "inside\n")
    write(root / "sub" / "file.txt", "sub\n")
    write(tmp_path / "secret.txt", "TOP SECRET\n")
    write(tmp_path / "rootless" / "x.txt", "prefix sibling\n")  # /tmp/.../root vs /tmp/.../rootless
    os.symlink(tmp_path / "secret.txt", root / "link-out.txt")
    os.symlink(tmp_path, root / "dir-link-out")
    os.symlink("/etc", root / "etc-link")
    os.mkfifo(root / "fifo")
    write(root / ".gitignore", "private.txt\n")
    write(root / "private.txt", "ignored by policy\n")
    write(root / ".git" / "config", "[core]\n")
    return root


def hostile_uris(root: Path) -> list[str]:
    real = str(root.resolve())
    base = file_uri(real)
    outside = str(root.resolve().parent)
    return [
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "FILE:///etc/passwd",
        "file:/etc/passwd",
        "file:////etc/passwd",
        f"{base}/../secret.txt",
        f"{base}/sub/../../secret.txt",
        f"{base}/%2e%2e/secret.txt",
        f"{base}/%2E%2E%2Fsecret.txt",
        f"{base}/..%2Fsecret.txt",
        f"{base}/%252e%252e/secret.txt",
        f"{base}/..\\secret.txt",
        f"{base}/sub\\..\\..\\secret.txt",
        f"{base}/link-out.txt",
        f"{base}/dir-link-out/secret.txt",
        f"{base}/dir-link-out/",
        f"{base}/etc-link/passwd",
        f"{base}less/x.txt",
        file_uri(outside) + "/secret.txt",
        f"{base}/private.txt",
        f"{base}/.git/config",
        f"{base}/.git/",
        f"{base}/missing.txt",
        f"{base}/fifo",
        f"{base}/inside.txt%00.png",
        f"{base}/inside.txt\x00",
        f"{base}/%00",
        f"{base}/inside.txt?version=1",
        f"{base}/inside.txt#top",
        f"{base}/inside%zz.txt",
        f"{base}/inside.txt%",
        f"{base}/inside.txt%4",
        f"{base}/\ud800",
        f"{base}/inside.txt\n",
        "file://otherhost" + real + "/inside.txt",
        "file://localhost:80" + real + "/inside.txt",
        "file://user@localhost" + real + "/inside.txt",
        "http://localhost" + real + "/inside.txt",
        "https://example.com/inside.txt",
        "git://localhost" + real + "/inside.txt",
        "ftp://localhost" + real,
        "data:text/plain,inside",
        "file:inside.txt",
        "file:",
        "file://",
        "",
        real + "/inside.txt",
        "inside.txt",
        "/proc/self/environ",
        "file:///proc/self/environ",
        "file:///proc/self/root" + real + "/../secret.txt",
        f"{base}/" + "a/" * 3000 + "inside.txt",
        f"{base}/" + "%41" * 20_000,
        f"{base}/" + "../" * 50 + "etc/passwd",
    ]


def test_hostile_uris_are_all_the_same_not_found(fortress: Path) -> None:
    uris = hostile_uris(fortress)
    with start(fortress) as process:
        for uri in uris:
            started = time.monotonic()
            reply = read(process, uri)
            assert_not_found(reply, uri)
            assert time.monotonic() - started < 5, uri  # a FIFO never hangs the read
            assert "SECRET" not in json.dumps(reply)
        listed = [r["name"] for r in list_all(process)[0]]
        assert listed == [".gitignore", "inside.txt", "sub/file.txt"]  # no link, no FIFO, nothing ignored
        process.request("ping")
        # The real file is still served, also through a '..' that stays inside.
        real = str(fortress.resolve())
        for uri in (file_uri(real + "/inside.txt"), file_uri(real + "/sub/../inside.txt")):
            assert read(process, uri)["result"]["contents"][0]["text"] == "inside\n", uri


def test_hostile_uris_with_wrong_params_shape(fortress: Path) -> None:
    with start(fortress) as process:
        for params in ({}, {"uri": None}, {"uri": 42}, {"uri": ["file:///etc/passwd"]}):
            reply = process.request("resources/read", params)
            assert reply["error"]["code"] == -32602 and "result" not in reply


def test_symlink_inside_the_root_reads_its_target(tmp_path: Path) -> None:
    write(tmp_path / "target.txt", "target\n")
    os.symlink("target.txt", tmp_path / "alias.txt")
    with start(tmp_path) as process:
        assert [r["name"] for r in list_all(process)[0]] == ["target.txt"]  # links are not listed
        uri = file_uri(str(tmp_path.resolve() / "alias.txt"))
        assert read(process, uri)["result"]["contents"] == [{"uri": uri, "mimeType": "text/plain", "text": "target\n"}]


@pytest.mark.measures
def test_size_limit_refuses_without_reading(tmp_path: Path) -> None:
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as handle:
        handle.truncate(8 * 1024**3)  # sparse: 8 GiB that cost no disk
    at_limit = tmp_path / "at-limit.txt"
    at_limit.write_bytes(b"a" * MAX_READ_BYTES)
    with start(tmp_path) as process:
        uri = file_uri(str(huge.resolve()))
        reply = read(process, uri)
        assert "result" not in reply
        assert reply["error"]["code"] == RESOURCE_TOO_LARGE
        assert reply["error"]["data"] == {"uri": uri, "size": 8 * 1024**3, "limit": MAX_READ_BYTES}
        assert str(MAX_READ_BYTES) in reply["error"]["message"] and "huge.bin" in reply["error"]["message"]
        [item] = read(process, file_uri(str(at_limit.resolve())))["result"]["contents"]
        assert len(item["text"]) == MAX_READ_BYTES
        status = Path(f"/proc/{process.proc.pid}/status")
        if status.exists():
            peak = int(re.search(r"VmHWM:\s+(\d+) kB", status.read_text()).group(1)) * 1024  # type: ignore[union-attr]
            assert peak < 400 * 1024**2  # the 8 GiB file was never read


# -- pagination -------------------------------------------------------------------------------------
def make_files(root: Path, count: int) -> list[str]:
    """`count` empty files in folders of 100, quickly; their paths relative to `root`, sorted."""
    names = []
    for index in range(count):
        folder = root / f"d{index // 100:03d}"
        if index % 100 == 0:
            folder.mkdir(parents=True)
        name = f"d{index // 100:03d}/f {index % 100:02d}#.txt"
        os.close(os.open(root / name, os.O_CREAT | os.O_WRONLY, 0o644))
        names.append(name)
    return sorted(names)


def test_pagination_over_10000_files(tmp_path: Path) -> None:
    names = make_files(tmp_path, 10_000)
    with start(tmp_path) as process:
        started = time.monotonic()
        resources, cursors = list_all(process)
        elapsed = time.monotonic() - started
        assert [r["name"] for r in resources] == names  # complete, in order, no duplicates
        assert len({r["uri"] for r in resources}) == 10_000
        assert len(cursors) == 99 and len(set(cursors)) == 99
        assert elapsed < 30
        # Stable: the same cursor gives the same page, and a new listing gives the same cursors.
        again = process.request("resources/list", {"cursor": cursors[41]})["result"]
        assert again["resources"] == resources[4200:4300] and again["nextCursor"] == cursors[42]
        # A new listing is pinned under a new id; within it, the same places.
        renewed = list_all(process)[1]
        assert [c.partition(".")[2] for c in renewed] == [c.partition(".")[2] for c in cursors]
        assert {c.partition(".")[0] for c in renewed}.isdisjoint({c.partition(".")[0] for c in cursors})
        # Forged cursors are refused.
        forged = [
            "not a cursor", "", "!!!", base64.urlsafe_b64encode(b"100:00000000").decode(),
            base64.urlsafe_b64encode(b"999999:" + cursors[0].encode()).decode(), cursors[0][:-2], cursors[0] + "AA",
        ]
        for cursor in forged:
            reply = process.request("resources/list", {"cursor": cursor})
            assert reply["error"]["code"] == -32602 and "result" not in reply, cursor
        for wrong_type in (12, True, ["x"], {"offset": 100}):
            assert process.request("resources/list", {"cursor": wrong_type})["error"]["code"] == -32602


def test_a_cursor_pins_its_listing(tmp_path: Path) -> None:
    """A listing's later pages show the tree as its first page saw it, even after the tree changed and
    another listing walked it again; a cursor without its listing's id is read against the current tree."""
    names = make_files(tmp_path, 250)
    with start(tmp_path) as process:
        first = process.request("resources/list")["result"]
        cursor = first["nextCursor"]
        os.unlink(tmp_path / names[0])  # everything after it moves up one place
        restarted = process.request("resources/list")["result"]  # a new listing walks the tree again
        assert restarted["resources"][0]["name"] == names[1]
        page = process.request("resources/list", {"cursor": cursor})["result"]
        assert [r["name"] for r in page["resources"]] == names[100:200]  # the first listing, unmoved
        last = process.request("resources/list", {"cursor": page["nextCursor"]})["result"]
        assert [r["name"] for r in last["resources"]] == names[200:] and "nextCursor" not in last
        # Without the id (as another process would read it), the offset no longer fits the tree: refused.
        reply = process.request("resources/list", {"cursor": "someone-else." + cursor.partition(".")[2]})
        assert reply["error"]["code"] == -32602 and "result" not in reply
        # ... and where it still fits, it is read against the current tree.
        bare = restarted["nextCursor"].partition(".")[2]
        page = process.request("resources/list", {"cursor": bare})["result"]
        assert page["resources"][0]["name"] == names[101]


def _in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int) -> tuple[Any, list[str], Any]:
    """A Server with the workspace resources over `files` files, driven in process; (page, walks, server)."""
    from core_support import Driver
    from shipcode_mcp import jsonrpc
    from shipcode_mcp.server import Server
    from shipcode_mcp.workspace import resource_tree
    from shipcode_mcp.workspace.resources import install_resources
    from shipcode_mcp.workspace.roots import Roots

    make_files(tmp_path, files)
    walks: list[str] = []

    def counting(directory: str) -> list[str]:
        walks.append(directory)
        return list_files(directory)

    monkeypatch.setattr(resource_tree, "list_files", counting)
    server = Server("t", "1")
    install_resources(server, Roots([str(tmp_path)]))
    driver = Driver(server)
    driver.receive(json.loads(HANDSHAKE))
    driver.receive(json.loads(INITIALIZED))
    numbers = iter(range(2, 1_000_000))

    def page(cursor: str | None) -> dict[str, Any]:
        number = next(numbers)
        params = {"cursor": cursor} if cursor is not None else {}
        assert driver.receive(jsonrpc.request(number, "resources/list", params)) == []  # listings are deferred
        [reply] = driver.run_all()
        assert reply["id"] == number
        return reply  # type: ignore[no-any-return]

    return page, walks, server


def test_paging_walks_the_tree_once_per_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process: a listing's later pages reuse its walk, however old; a new listing walks again."""
    from shipcode_mcp.workspace import resource_tree

    page, walks, _ = _in_process(tmp_path, monkeypatch, 1_000)
    cursor: str | None = None
    for _ in range(10):
        cursor = page(cursor)["result"].get("nextCursor")
    assert cursor is None and len(walks) == 1
    second = page(None)["result"]["nextCursor"]
    assert len(walks) == 2
    page(second)
    assert len(walks) == 2
    monkeypatch.setattr(resource_tree, "SNAPSHOT_SECONDS", 0.0)  # every walk is now too old to reuse...
    for _ in range(9):
        second = page(second)["result"].get("nextCursor")
    assert second is None and len(walks) == 2  # ... but a listing's pages never walk: its cursor pins it


def test_a_cursor_past_its_lifetime_is_refused_and_says_list_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shipcode_mcp.listings import LIFETIME

    page, walks, server = _in_process(tmp_path, monkeypatch, 300)
    now = [1000.0]
    server.resource_listings().clock = lambda: now[0]
    cursor = page(None)["result"]["nextCursor"]
    now[0] += LIFETIME - 1  # a slow client: each page read starts the lifetime again
    cursor = page(cursor)["result"]["nextCursor"]
    now[0] += LIFETIME - 1
    assert "resources" in page(cursor)["result"] and len(walks) == 1
    now[0] += LIFETIME + 1
    reply = page(cursor)
    assert "result" not in reply and reply["error"]["code"] == -32602
    assert "expired" in reply["error"]["message"] and "without a cursor" in reply["error"]["message"]
    assert len(walks) == 1  # refused, not walked again
    assert page(None)["result"]["nextCursor"] and len(walks) == 2  # listing again works


def test_pinned_listings_are_bounded_by_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from shipcode_mcp.listings import MAX_LISTINGS

    page, walks, server = _in_process(tmp_path, monkeypatch, 150)
    cursors = [page(None)["result"]["nextCursor"] for _ in range(MAX_LISTINGS + 3)]
    pins = server.resource_listings()
    assert len(pins) == MAX_LISTINGS and pins.entries == MAX_LISTINGS * 150
    for dropped in cursors[:3]:  # the oldest went first
        reply = page(dropped)
        assert reply["error"]["code"] == -32602 and "expired" in reply["error"]["message"]
    for kept in cursors[3:]:
        assert [r["name"] for r in page(kept)["result"]["resources"]][:1] == ["d001/f 00#.txt"]
    assert len(walks) == MAX_LISTINGS + 3


def test_a_huge_folder_reads_as_its_first_entries_and_a_note(tmp_path: Path) -> None:
    from shipcode_mcp.workspace.resource_limits import MAX_DIRECTORY_ENTRIES

    for index in range(MAX_DIRECTORY_ENTRIES + 5):
        os.close(os.open(tmp_path / f"f{index:05d}.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    uri = file_uri(str(tmp_path.resolve())) + "/"
    with start(tmp_path) as process:
        items = read(process, uri)["result"]["contents"]
    assert len(items) == MAX_DIRECTORY_ENTRIES + 1
    assert [item["text"] for item in items[:3]] == ["f00000.txt", "f00001.txt", "f00002.txt"]
    assert items[-1]["uri"] == uri and items[-1]["mimeType"] == "text/plain"
    assert "5 more entries" in items[-1]["text"]


# -- the official SDK as the client ---------------------------------------------------------------------
def test_official_sdk_lists_every_file_once_and_reads(tmp_path: Path) -> None:
    """The official SDK client pages a real 10k-file tree (bench/run.py's shape) to its end, while the tree
    changes and another listing walks it again midway: its cursor pins its listing, so it gets exactly
    the files its first page saw, each once."""
    from mcp import ClientSession, types
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from tree_support import make_tree

    names = make_tree(tmp_path, 10_000)
    write(tmp_path / "text \u00e9 #1.md", "# hello\n")
    write(tmp_path / "blob.bin", bytes(range(256)))
    server = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], str(tmp_path)],
                                   env={"PYTHONPATH": str(REPO / "src")})

    async def main() -> None:
        async with stdio_client(server) as (reader, writer), ClientSession(reader, writer) as session:
            await session.initialize()
            listed: list[types.Resource] = []
            cursor: str | None = None
            pages = 0
            while True:
                page = await session.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
                listed += page.resources
                pages += 1
                if pages == 3:  # midway: the tree changes, and a new listing sees it
                    os.unlink(tmp_path / names[0])
                    write(tmp_path / "aaa-new.txt", "new\n")
                    again = await session.list_resources()
                    assert again.resources[0].name == "aaa-new.txt"
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            by_name = {resource.name: resource for resource in listed}
            assert pages == 101 and len(listed) == len(by_name) == 10_002
            assert set(by_name) == {*names, "text \u00e9 #1.md", "blob.bin"}
            text = await session.read_resource(by_name["text \u00e9 #1.md"].uri)
            [item] = text.contents
            assert isinstance(item, types.TextResourceContents) and item.text == "# hello\n"
            assert item.mime_type == "text/markdown"
            blob = await session.read_resource(by_name["blob.bin"].uri)
            [item] = blob.contents
            assert isinstance(item, types.BlobResourceContents)
            assert base64.b64decode(item.blob) == bytes(range(256))
            templates = await session.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [file_uri(str(tmp_path.resolve())) + "/{+path}"]

    anyio.run(main)


# -- the URI codec, on its own --------------------------------------------------------------------------
SEGMENT = st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b".."))


@given(st.lists(SEGMENT, min_size=1, max_size=6))
def test_uri_codec_round_trips_every_path(segments: list[bytes]) -> None:
    path = os.fsdecode(b"/" + b"/".join(segments))
    uri = file_uri(path)
    assert URI_CHARS.match(uri) and uri.startswith("file:///")
    assert uri_path(uri) == path
    assert uri_path(uri.replace("file://", "file://localhost", 1)) == path
    assert uri_path(uri.replace("file://", "file:", 1)) == path


def test_uri_codec_refusals() -> None:
    for uri in ("http:///x", "file://host/x", "file:x", "file:///x?y", "file:///x#y", "file:///%zz", "file:///%",
                "file:///%0", "file:///a%00b", "file:///a\\b", "file:///a\tb", "file:///\ud800", "file:" + "/a" * 8000):
        assert uri_path(uri) is None, uri
    assert uri_path("file:///caf\u00e9 au lait.txt") == "/caf\u00e9 au lait.txt"  # raw IRI characters are taken
    assert uri_path("FILE://LOCALHOST/a%2Fb") == "/a/b"
    assert file_uri("/a b/#?%\u00e9") == "file:///a%20b/%23%3F%25%C3%A9"


if sys.platform != "linux":  # FIFOs, sparse files and non-UTF-8 names as used above
    pytestmark = pytest.mark.skip(reason="POSIX file-system features these tests rely on")
