"""The walk behind list_files and the resources: how many rg threads it uses, from what it last found."""

from __future__ import annotations

from pathlib import Path

import pytest
from tree_support import make_tree

from shipcode_mcp.workspace import listing


def test_a_folder_found_small_is_walked_with_one_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "SMALL_WALK", 1_000)
    small, big = tmp_path / "small", tmp_path / "big"
    names = make_tree(small, 200)
    make_tree(big, 1_500)
    pool = listing._walk_threads()
    assert pool >= 4
    assert listing.walk_threads(str(small)) == pool  # never walked: the pool
    assert listing.list_files(str(small)) == names
    assert listing.walk_threads(str(small)) == 1
    assert len(listing.list_files(str(big))) == 1_500
    assert listing.walk_threads(str(big)) == pool
    # A walk narrowed by globs says nothing of the folder's size.
    assert len(listing.list_files(str(big), ["pkg00/module00/*"])) == 40
    assert listing.walk_threads(str(big)) == pool
    # The same answer either way.
    assert listing.list_files(str(small)) == names
    assert listing.walk_command((), 1)[-1] == "--threads=1"
