"""safe_open.small_text: a workspace file read whole without a tool's error to give (a language server's
documents, clangd's compilation database): only a regular file of the roots, reached without a link, of at most
the limit, and UTF-8 unless told to replace what is not."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

from shipcode_mcp.workspace.roots import Roots
from shipcode_mcp.workspace.safe_open import small_text


def test_small_text_reads_only_a_small_regular_file_of_the_roots(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "a.c").write_text("int a;\n")
    (root / "latin1.c").write_bytes(b"/* caf\xe9 */\n")
    (root / "big.c").write_text("x" * 1001)
    (root / "link.c").symlink_to(outside / "secret.txt")
    (root / "linked").symlink_to(outside)
    os.mkfifo(root / "fifo.c")
    roots = Roots([str(root)])
    assert small_text(roots, str(root / "a.c"), 1000) == "int a;\n"
    assert small_text(roots, str(root / "latin1.c"), 1000) is None
    assert small_text(roots, str(root / "latin1.c"), 1000, "replace") == "/* caf\ufffd */\n"
    assert small_text(roots, str(root / "big.c"), 1000) is None
    for name in ("link.c", "linked/secret.txt", "fifo.c", "missing.c"):  # (the FIFO is never waited on)
        assert small_text(roots, str(root / name), 1000) is None, name
    assert small_text(roots, str(outside / "secret.txt"), 1000) is None


def test_small_text_allocates_what_the_file_holds_not_the_limit(tmp_path: Path) -> None:
    (tmp_path / "a.c").write_text("int a;\n")
    tracemalloc.start()
    try:
        assert small_text(Roots([str(tmp_path)]), str(tmp_path / "a.c"), 256 << 20) == "int a;\n"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak  # (read(limit + 1) asks for 256 MiB)
