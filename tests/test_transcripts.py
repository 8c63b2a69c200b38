"""Golden transcripts: input lines and the exact output bytes, through the real process over pipes.

Format of tests/transcripts/*.txt: `> TEXT` is one input line, `>x LITERAL` one input line given as a
Python bytes literal (for bytes that are not text), `< TEXT` one expected output line, `#` a comment.
The whole input is written, stdin is closed, and stdout must equal the expected lines exactly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import run_transcript

TRANSCRIPTS = sorted((Path(__file__).parent / "transcripts").glob("*.txt"))


def load(path: Path) -> tuple[bytes, bytes]:
    sent: list[bytes] = []
    expected: list[bytes] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(">x "):
            value = ast.literal_eval(line[3:])
            assert isinstance(value, bytes)
            sent.append(value + b"\n")
        elif line.startswith("> "):
            sent.append(line[2:].encode() + b"\n")
        elif line.startswith("< "):
            expected.append(line[2:].encode() + b"\n")
        else:
            assert line.startswith("#") or not line.strip(), f"{path.name}: unknown line {line!r}"
    return b"".join(sent), b"".join(expected)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_transcript(path: Path, tmp_path: Path) -> None:
    sent, expected = load(path)
    out, err, status = run_transcript(sent, str(tmp_path))
    assert out == expected
    assert status == 0
    assert err == b"", "quiet by default: nothing on stderr"


def test_transcripts_exist() -> None:
    assert {p.stem for p in TRANSCRIPTS} >= {"handshake", "versions", "lenient_order", "silence", "bad_input", "params"}
