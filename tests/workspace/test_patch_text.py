"""patch_text: reading both patch formats and the text each makes of a file, without the server.

Each unified-diff case that git accepts is also given to `git apply` on the same file, and the two results
must be the same: git is the reference for where a hunk lands.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shipcode_mcp.workspace.hunk_placing import apply
from shipcode_mcp.workspace.patch_text import FilePatch, PatchError, parse

LINES = "".join(f"line {n}\n" for n in range(1, 21))


def _ours(patch: str, text: str | None) -> str:
    (change,) = parse(patch)
    return apply(change, text)


def _git(tmp_path: Path, name: str, text: str, patch: str) -> str:
    folder = tmp_path / "git"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(text.encode())
    done = subprocess.run(["git", "apply", "-"], cwd=folder, input=patch.encode(), capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return (folder / name).read_bytes().decode()


def _both(tmp_path: Path, text: str, patch: str, name: str = "f.txt") -> str:
    ours = _ours(patch, text)
    assert ours == _git(tmp_path, name, text, patch)
    return ours


def test_a_hunk_whose_lines_moved_applies_at_the_nearest_place_as_git_places_it(tmp_path: Path) -> None:
    text = "new 1\nnew 2\n" + LINES  # two lines inserted above since the diff was made
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -9,3 +9,3 @@\n line 9\n-line 10\n+LINE TEN\n line 11\n"
    assert "line 9\nLINE TEN\nline 11\n" in _both(tmp_path, text, patch)
    twice = "a\nctx\nold\nctx\n" + "x\n" * 10 + "ctx\nold\nctx\nb\n"
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -15,3 +15,3 @@\n ctx\n-old\n+new\n ctx\n"
    assert _both(tmp_path, twice, patch) == "a\nctx\nold\nctx\n" + "x\n" * 10 + "ctx\nnew\nctx\nb\n"  # the nearer one


def test_hunks_at_the_start_and_the_end_must_match_there(tmp_path: Path) -> None:
    text = "ctx\nold\nctx\nmiddle\nctx\nold\n"
    at_start = "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n ctx\n-old\n+new\n ctx\n"
    assert _both(tmp_path, text, at_start) == "ctx\nnew\nctx\nmiddle\nctx\nold\n"
    at_end = "--- a/f.txt\n+++ b/f.txt\n@@ -2,2 +2,2 @@\n ctx\n-old\n+new\n"
    assert _both(tmp_path, text, at_end) == "ctx\nold\nctx\nmiddle\nctx\nnew\n"  # not line 2: no trailing context


def test_no_newline_at_end_of_file_on_either_side(tmp_path: Path) -> None:
    add_end = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n+two\n"
    assert _both(tmp_path, "one\ntwo", add_end) == "one\ntwo\n"
    drop_end = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+two\n\\ No newline at end of file\n"
    assert _both(tmp_path, "one\ntwo\n", drop_end) == "one\ntwo"


def test_git_headers_quoted_names_renames_copies_and_modes() -> None:
    quoted = ('diff --git "a/caf\\303\\251 \\"x\\".txt" "b/caf\\303\\251 \\"x\\".txt"\nindex 1..2 100644\n'
              '--- "a/caf\\303\\251 \\"x\\".txt"\n+++ "b/caf\\303\\251 \\"x\\".txt"\n@@ -1 +1 @@\n-a\n+b\n')
    (change,) = parse(quoted)
    assert (change.old_path, change.new_path) == ('café "x".txt', 'café "x".txt')
    renamed = ("diff --git a/old name.py b/new name.py\nsimilarity index 90%\nrename from old name.py\n"
               "rename to new name.py\n--- a/old name.py\n+++ b/new name.py\n@@ -1 +1 @@\n-a\n+b\n")
    (change,) = parse(renamed)
    assert (change.old_path, change.new_path, change.copy) == ("old name.py", "new name.py", False)
    assert apply(change, "a\n") == "b\n"
    copied = "diff --git a/x b/y\nsimilarity index 100%\ncopy from x\ncopy to y\n"
    (change,) = parse(copied)
    assert (change.old_path, change.new_path, change.copy, change.hunks) == ("x", "y", True, [])
    mode = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    (change,) = parse(mode)
    assert (change.old_path, change.new_path, change.mode) == ("run.sh", "run.sh", 0o755)
    reversed_names = "diff --git b/f.txt a/f.txt\n--- b/f.txt\n+++ a/f.txt\n@@ -1 +1 @@\n-a\n+b\n"  # git diff -R
    assert [(c.old_path, c.new_path) for c in parse(reversed_names)] == [("f.txt", "f.txt")]


def test_plain_diffs_mail_text_and_signatures() -> None:
    diff_u = "--- app.py\t2024-01-01 10:00:00\n+++ app.py\t2024-01-02 10:00:00\n@@ -1 +1 @@\n-a\n+b\n"
    assert [(c.old_path, c.new_path) for c in parse(diff_u)] == [("app.py", "app.py")]
    diff_ru = "diff -ru old/src/x.py new/src/x.py\n--- old/src/x.py\n+++ new/src/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert [(c.old_path, c.new_path) for c in parse(diff_ru)] == [("src/x.py", "src/x.py")]
    with pytest.raises(PatchError, match="name two files"):
        parse("--- x.py\n+++ y.py\n@@ -1 +1 @@\n-a\n+b\n")
    mail = ("From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n\n---\n f.txt | 2 +-\n\n"
            "diff --git a/f.txt b/f.txt\nindex 1..2 100644\n--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n-- \n2.40.0\n")
    (change,) = parse(mail)
    assert apply(change, "a\n") == "b\n"


def test_miscounted_hunks_are_counted_from_their_lines() -> None:
    over = "--- a/f.txt\n+++ b/f.txt\n@@ -1,9 +1,9 @@\n one\n-two\n+TWO\n three\n"
    assert _ours(over, "one\ntwo\nthree\n") == "one\nTWO\nthree\n"
    under = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n-three\n+THREE\n"
    assert _ours(under, "one\ntwo\nthree\n") == "one\nTWO\nTHREE\n"
    trimmed = "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n\n-three\n+THREE\n"  # an empty context line
    assert _ours(trimmed, "one\n\nthree\n") == "one\n\nTHREE\n"


def test_binary_changes_without_content_and_link_patches_are_refused() -> None:
    with pytest.raises(PatchError, match="the change to a binary file is not in the patch"):
        parse("diff --git a/x.png b/x.png\nindex 1..2 100644\nBinary files a/x.png and b/x.png differ\n")
    with pytest.raises(PatchError, match="symbolic link"):
        parse("diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc\n")


def test_a_hunk_that_does_not_apply_says_which_line_differs() -> None:
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -2,3 +2,3 @@\n line 2\n-line three\n+line 3!\n line 4\n"
    with pytest.raises(PatchError) as caught:
        _ours(patch, LINES)
    assert str(caught.value) == ("f.txt: hunk 1 (@@ -2,3 +2,3 @@) does not apply: its line 2 ('line three') is not at "
                                 "line 3, where the file has 'line 3', and its lines were not found together anywhere "
                                 "else (the context and removed lines must match exactly)")


def test_nothing_to_read_is_an_error() -> None:
    with pytest.raises(PatchError, match="No file changes found"):
        parse("just some text\n")
    with pytest.raises(PatchError, match="must be '\\*\\*\\* End Patch'"):
        parse("*** Begin Patch\n*** Add File: x\n+y\n")


# -- *** Begin Patch ------------------------------------------------------------------------------------
def _codex(body: str) -> list[FilePatch]:
    return parse(f"*** Begin Patch\n{body}\n*** End Patch\n")


def test_codex_chunks_follow_their_context_line_and_each_other() -> None:
    text = "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 1\n"
    (change,) = _codex("*** Update File: m.py\n@@ class B:\n     def f(self):\n-        return 1\n+        return 2")
    assert apply(change, text) == text.replace("return 1\n", "return 2\n").replace("return 2\n", "return 1\n", 1)
    (change,) = _codex("*** Update File: m.py\n-        return 1\n+        return 3\n@@\n-        return 1\n+        return 4")
    assert apply(change, text) == text.replace("return 1", "return 3", 1).replace("return 1", "return 4")


def test_codex_end_of_file_additions_and_a_heredoc_around_the_patch() -> None:
    (change,) = _codex("*** Update File: f.txt\n@@\n-x\n+y\n*** End of File")
    assert apply(change, "x\nmid\nx\n") == "x\nmid\ny\n"
    (change,) = _codex("*** Update File: f.txt\n@@\n+appended")
    assert apply(change, "a\nb\n") == "a\nb\nappended\n"
    (change,) = parse("<<'EOF'\n*** Begin Patch\n*** Add File: n.txt\n+hi\n*** End Patch\nEOF\n")
    assert (change.new_path, apply(change, None)) == ("n.txt", "hi\n")


def test_codex_errors_name_the_file_and_the_chunk() -> None:
    (change,) = _codex("*** Update File: f.txt\n@@ def missing():\n-x\n+y")
    with pytest.raises(PatchError) as caught:
        apply(change, "x\n")
    assert str(caught.value) == "f.txt: chunk 1 (@@ def missing():) does not apply: its line 'def missing():' was not found"
    with pytest.raises(PatchError, match="is not a file header"):
        _codex("*** Frobnicate File: f.txt")
    with pytest.raises(PatchError, match="has no changes"):
        _codex("*** Update File: f.txt")


# -- placement as git places it (found in review, each compared with git apply) ------------------------
def test_zero_context_additions_go_after_the_line_they_name(tmp_path: Path) -> None:
    text = "".join(f"l{n}\n" for n in range(1, 11))
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -5,0 +6 @@\n+NEW\n"
    ours = _ours(patch, text)
    folder = tmp_path / "u0"
    folder.mkdir()
    (folder / "f.txt").write_text(text)
    subprocess.run(["git", "apply", "--unidiff-zero", "-"], cwd=folder, input=patch.encode(), check=True)
    assert ours == (folder / "f.txt").read_text() and ours.splitlines()[5] == "NEW"


def test_hunks_are_centred_on_their_new_line_and_may_come_in_any_order(tmp_path: Path) -> None:
    lines = [f"f{n}" for n in range(1, 41)]
    lines[14:17] = "XYZ"
    lines[20:23] = "ABC"
    lines[30:33] = "ABC"
    text = "\n".join(lines) + "\n"
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -5,3 +5,3 @@\n X\n-Y\n+YY\n Z\n@@ -21,3 +21,3 @@\n A\n-B\n+BB\n C\n"
    _both(tmp_path, text, patch)
    numbered = "".join(f"l{n}\n" for n in range(1, 31))
    backwards = "--- a/f.txt\n+++ b/f.txt\n@@ -20,3 +20,3 @@\n l20\n-l21\n+X\n l22\n@@ -5,3 +5,3 @@\n l5\n-l6\n+Y\n l7\n"
    assert "l5\nY\nl7" in _both(tmp_path, numbered, backwards)
    a_mismatch_past_the_end = "--- a/f.txt\n+++ b/f.txt\n@@ -100 +100 @@\n-a\n+A\n@@ -5 +5 @@\n-zzz\n+y\n"
    with pytest.raises(PatchError, match=r"hunk 2 .* does not apply"):
        _ours(a_mismatch_past_the_end, "a\nb\nc\n")


def test_equally_near_places_are_tried_below_first(tmp_path: Path) -> None:
    text = "ctx\nold\nctx\nx\nx\nctx\nold\nctx\n"  # the hunk says line 4: one place above, one below, as near
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n ctx\n-old\n+new\n ctx\n"
    _both(tmp_path, text, patch)


def test_a_crlf_file_without_a_final_line_end_stays_crlf() -> None:
    (change,) = _codex("*** Update File: f.txt\n@@\n a\n-b\n+B\n c")
    assert apply(change, "a\r\nb\r\nc") == "a\r\nB\r\nc\r\n"
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\\ No newline at end of file\n"
    assert _ours(patch, "a\r\nb\r\nc") == "a\r\nB\r\nc"


def test_placing_is_bounded_and_headers_are_read_in_linear_time() -> None:
    import time

    started = time.monotonic()
    with pytest.raises(PatchError, match="a file header of 400013 characters"):
        parse("diff --git a" + " " * 400_000 + "b\n--- a/x\n+++ b/x\n")
    parse("diff --git a" + " " * 8000 + "b\n--- a/x\n+++ b/x\n")
    quoted = '"a/' + '\\"' * 4000 + '"'
    assert parse(f"--- {quoted}\n+++ {quoted.replace('a/', 'b/', 1)}\n@@ -1 +1 @@\n-a\n+b\n")[0].new_path == '"' * 4000
    assert time.monotonic() - started < 5  # was quadratic: 52 s for the first
    many = "x\n" * 200_000
    runs = ("x\n" * 999 + "z\n") * 200
    hunk = "--- a/f.txt\n+++ b/f.txt\n@@ -7000,1001 +7000,1001 @@\n" + " x\n" * 999 + "-x\n+y\n x\n"
    assert _ours(hunk, many) == "x\n" * 7998 + "y\n" + "x\n" * (200_000 - 7999)  # at its line, at once
    costly = "--- a/f.txt\n+++ b/f.txt\n@@ -50000,1001 +50000,1001 @@\n" + " x\n" * 999 + "-x\n+y\n x\n"
    with pytest.raises(PatchError, match="compared more than"):
        _ours(costly, runs)
