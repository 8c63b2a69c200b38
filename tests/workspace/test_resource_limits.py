"""Resources on a huge tree: the listing runs off the reading loop, is cut at MAX_LISTED_FILES, and its memory
stays bounded. Through the real process over real pipes, on a million empty files.

Before this, on this machine: a resources/list of the million files answered after 4.5 s, a ping sent meanwhile
waited 4.3 s for it, and the server held 527 MB afterwards (558 MB at the peak, rg included).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shipcode_mcp.workspace.resource_limits import MAX_LISTED_FILES, TRUNCATED_META_KEY
from shipcode_mcp.workspace.uris import file_uri
from support import McpProcess, TreeSampler, peak_rss, request_while_pinging, tree_rss

FILES = 1_000_000
PER_FOLDER = 1_000
NOT_FOUND = -32002


def make_tree(root: Path, files: int, per_folder: int = PER_FOLDER) -> None:
    """`files` empty files, `per_folder` a folder (d0000/f0000.txt ...), made with one open each."""
    root.mkdir()
    for folder in range((files + per_folder - 1) // per_folder):
        path = root / f"d{folder:04d}"
        path.mkdir()
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for number in range(min(per_folder, files - folder * per_folder)):
                os.close(os.open(f"f{number:04d}.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        finally:
            os.close(fd)


@pytest.fixture(scope="module")
def million() -> Iterator[Path]:
    """A million files, in memory (tmpfs) where the machine has /dev/shm, else in the temporary folder."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="shipcode-million-", dir=base) as folder:
        started = time.monotonic()
        root = Path(folder) / "tree"
        make_tree(root, FILES)
        print(f"\n{FILES} files made in {time.monotonic() - started:.1f} s under {folder}")
        try:
            yield root.resolve()
        finally:
            started = time.monotonic()
            subprocess.run(["rm", "-rf", str(root)], check=False, timeout=120)  # faster than rmtree, by half
            print(f"removed in {time.monotonic() - started:.1f} s")


@pytest.mark.measures
@pytest.mark.timeout(300)
def test_a_million_files_list_off_the_loop_cut_and_in_bounded_memory(million: Path) -> None:
    root_uri = file_uri(str(million)) + "/"
    with McpProcess(str(million)) as process:
        process.initialize()
        assert process.request("ping")["result"] == {}
        with TreeSampler(process.proc.pid) as sampler:
            reply, took, latencies = request_while_pinging(process, "resources/list", {})
        retained = tree_rss(process.proc.pid)
        server_peak = peak_rss(process.proc.pid)
        print(f"resources/list of {FILES} files: {took:.2f} s; {len(latencies)} pings meanwhile, slowest "
              f"{max(latencies) * 1000:.0f} ms, median {sorted(latencies)[len(latencies) // 2] * 1000:.1f} ms; "
              f"memory of the process tree: peak {sampler.peak / 1e6:.0f} MB sampled (server alone {server_peak / 1e6:.0f} MB), "
              f"{retained / 1e6:.0f} MB after")
        assert len(latencies) >= 5, "the listing was too quick to show anything"
        assert max(latencies) < 1.0, "ping waited on the listing"
        assert server_peak < 300e6 and sampler.peak < 400e6
        assert retained < 60e6, "the snapshot must hold names only, and only the first MAX_LISTED_FILES"

        # The listing is cut, and says so on every page.
        result = reply["result"]
        cut = {TRUNCATED_META_KEY: {"listed": MAX_LISTED_FILES, "limit": MAX_LISTED_FILES, "files": FILES}}
        assert result["_meta"] == cut and len(result["resources"]) == 100
        assert list(result) == ["resources", "nextCursor", "_meta"]
        assert result["resources"][0] == {"uri": f"{root_uri}d0000/f0000.txt", "name": "d0000/f0000.txt",
                                          "mimeType": "text/plain", "size": 0}
        started = time.monotonic()
        second = process.request("resources/list", {"cursor": result["nextCursor"]})["result"]
        print(f"the second page: {(time.monotonic() - started) * 1000:.1f} ms")
        assert second["_meta"] == cut and second["resources"][0]["name"] == "d0000/f0100.txt"

        # What is listed is served; what was cut is not, the same way as anything else not listed.
        last = MAX_LISTED_FILES - 1
        kept = f"d{last // PER_FOLDER:04d}/f{last % PER_FOLDER:04d}.txt"
        beyond = f"d{MAX_LISTED_FILES // PER_FOLDER:04d}/f0000.txt"
        assert process.request("resources/read", {"uri": root_uri + kept})["result"]["contents"][0]["text"] == ""
        for uri in (root_uri + beyond, root_uri + beyond.partition("/")[0] + "/"):
            assert process.request("resources/read", {"uri": uri})["error"]["code"] == NOT_FOUND
        folder = process.request("resources/read", {"uri": root_uri + kept.partition("/")[0] + "/"})["result"]
        assert len(folder["contents"]) == PER_FOLDER
        entries = process.request("resources/read", {"uri": root_uri})["result"]["contents"]
        assert len(entries) == MAX_LISTED_FILES // PER_FOLDER and entries[-1]["text"] == kept.partition("/")[0] + "/"

        # A new listing walks again, answers the same, and the warning on stderr came once.
        again, took, latencies = request_while_pinging(process, "resources/list", {})
        print(f"a second listing: {took:.2f} s, slowest ping {max(latencies) * 1000:.0f} ms")
        assert max(latencies) < 1.0
        # the same page, under a new listing's id (pinned apart from the first; the same place within it)
        renewed = again["result"]
        assert renewed["nextCursor"].partition(".")[2] == result["nextCursor"].partition(".")[2]
        assert renewed["nextCursor"] != result["nextCursor"]
        assert {**renewed, "nextCursor": None} == {**result, "nextCursor": None}
        assert process.close() == 0
    warnings = [line for line in process.stderr.decode().splitlines() if "resources/list lists the first" in line]
    assert len(warnings) == 1 and f"{FILES} files" in warnings[0], process.stderr[-2000:]


# -- the cut and the snapshot's folders, in process ------------------------------------------------------------
def listing_of(roots: list[Path], monkeypatch: pytest.MonkeyPatch, limit: int) -> Any:
    from shipcode_mcp.workspace import resource_tree
    from shipcode_mcp.workspace.roots import Roots

    monkeypatch.setattr(resource_tree, "MAX_LISTED_FILES", limit)
    resources = resource_tree.WorkspaceResources(Roots([str(root) for root in roots]))
    resources.start_listing()
    return resources.listed()


def test_the_cut_is_per_root_what_is_listed_is_served_and_nested_roots_list_a_file_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    make_tree(one, 30, 10)
    make_tree(two, 30, 10)
    listing = listing_of([one, two], monkeypatch, 25)

    def first_25(root: Path) -> list[str]:
        return [file_uri(str(root / f"d{d:04d}" / f"f{f:04d}.txt")) for d in range(3) for f in range(10)][:25]

    assert [resource.uri for resource in listing] == first_25(one) + first_25(two)
    assert listing.meta == {TRUNCATED_META_KEY: {"listed": 50, "limit": 25, "files": 60}}
    from shipcode_mcp.jsonrpc import JsonRpcError
    from shipcode_mcp.workspace import resource_tree
    from shipcode_mcp.workspace.roots import Roots

    resources = resource_tree.WorkspaceResources(Roots([str(one), str(two)]))
    for root in (one, two):  # what is listed is served, and what was cut is not, in every root
        resources.locate(file_uri(str(root / "d0002" / "f0004.txt")))
        with pytest.raises(JsonRpcError):
            resources.locate(file_uri(str(root / "d0002" / "f0005.txt")))
    # A root inside another: its files are listed under the first root only, and nothing is cut.
    listing = listing_of([one, one / "d0001"], monkeypatch, 40)
    assert len(listing) == 30 and len({resource.uri for resource in listing}) == 30 and listing.meta is None
    listing = listing_of([one / "d0001", one], monkeypatch, 40)
    assert [resource.name for resource in listing][:10] == [f"f{f:04d}.txt" for f in range(10)] and len(listing) == 30


def test_one_root_over_the_cut_keeps_its_first_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_tree(tmp_path / "root", 25, 10)
    listing = listing_of([tmp_path / "root"], monkeypatch, 12)
    assert [resource.name for resource in listing] == [f"d0000/f{f:04d}.txt" for f in range(10)] + [
        "d0001/f0000.txt", "d0001/f0001.txt"]
    assert listing.meta == {TRUNCATED_META_KEY: {"listed": 12, "limit": 12, "files": 25}}
    snapshot = listing.snapshots[0]
    assert snapshot.truncated and snapshot.entries("") == {"d0000": True, "d0001": True}
    assert snapshot.has_file("d0001/f0001.txt") and not snapshot.has_file("d0001/f0002.txt")
    assert not snapshot.shows("d0002", True)


def naive_entries(names: list[str], folder: str) -> dict[str, bool]:
    prefix = folder + "/" if folder else ""
    out: dict[str, bool] = {}
    for name in names:
        if name.startswith(prefix):
            head, slash, _ = name[len(prefix):].partition("/")
            out[head] = bool(slash) or out.get(head, False)
    return out


SEGMENT = st.sampled_from(["a", "b", "a b", "a-b", "a.b", "a0", "a/", "ab", "\u00e9", "\udcff", "z", "-", "0", "~"])


@given(st.lists(st.lists(SEGMENT, min_size=1, max_size=4).map(lambda parts: "/".join(parts).replace("//", "/").strip("/")),
                max_size=40))
def test_folder_entries_found_by_bisection_match_a_plain_scan(paths: list[str]) -> None:
    from shipcode_mcp.workspace.resource_tree import Snapshot
    from shipcode_mcp.workspace.roots import Roots

    names = sorted({path for path in paths if path})
    names = [name for name in names if not any(other.startswith(name + "/") for other in names)]  # a file is no folder
    snapshot = Snapshot(Roots([tempfile.gettempdir()]), tempfile.gettempdir(), list(names), 0.0)
    folders = {""} | {name.rsplit("/", 1)[0] for name in names if "/" in name}
    folders |= {folder.rsplit("/", n)[0] for folder in set(folders) for n in range(1, folder.count("/") + 1)}
    assert snapshot.folders() == folders
    for folder in folders | {"a", "a b", "nope", "a0"}:
        assert snapshot.entries(folder) == naive_entries(names, folder)
        assert snapshot.shows(folder, True) == (folder in folders)
    for name in names:
        assert snapshot.has_file(name) and snapshot.shows(name, False)
    assert not snapshot.has_file("nope")
