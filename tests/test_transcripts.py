"""Golden transcripts: input lines and the exact output bytes, through the real process over pipes.

Format of tests/transcripts/*.txt: `> TEXT` is one input line, `>x LITERAL` one input line given as a
Python bytes literal (for bytes that are not text), `< TEXT` one expected output line, `#` a comment.
The whole input is written, stdin is closed, and stdout must equal the expected lines exactly.

Each transcript runs in a fresh temporary folder, its working directory, with `shipcode-mcp FOLDER` by
default. Two comment lines set the scene:
- `# args: A B ...` replaces the arguments (`# args:` alone: none, so the server follows the client's
  roots, the working directory until it lists them);
- `# file: PATH TEXT` writes TEXT and a newline to PATH inside the folder (parent folders made) first.
And one says what stderr holds: `# stderr: MESSAGE`, the start-up line's message, alone (every
transcript has one: quiet by default means that line and nothing else).
`{tmp}` anywhere in an `args`, `stderr`, `>` or `<` line stands for the folder's path (JSON-escaped in
messages), so a transcript that names a path stays byte-exact wherever it runs.
"""

from __future__ import annotations

import ast
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from logging_support import only_start_line
from support import run_transcript

TRANSCRIPTS = sorted((Path(__file__).parent / "transcripts").glob("*.txt"))


@dataclass
class Transcript:
    sent: bytes
    expected: bytes
    args: list[str] = field(default_factory=lambda: ["{tmp}"])
    files: dict[str, str] = field(default_factory=dict)
    stderr: str | None = None  # the start-up line's message


def load(path: Path, tmp: str = "{tmp}") -> Transcript:
    sent: list[bytes] = []
    expected: list[bytes] = []
    args: list[str] | None = None
    files: dict[str, str] = {}
    stderr: str | None = None
    escaped = json.dumps(tmp)[1:-1]
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(">x "):
            value = ast.literal_eval(line[3:])
            assert isinstance(value, bytes)
            sent.append(value + b"\n")
        elif line.startswith("> "):
            sent.append(line[2:].replace("{tmp}", escaped).encode() + b"\n")
        elif line.startswith("< "):
            expected.append(line[2:].replace("{tmp}", escaped).encode() + b"\n")
        elif line.startswith("# args:"):
            assert args is None, f"{path.name}: two args lines"
            args = [arg.replace("{tmp}", tmp) for arg in shlex.split(line[len("# args:"):])]
        elif line.startswith("# stderr: "):
            assert stderr is None, f"{path.name}: two stderr lines"
            stderr = line[len("# stderr: "):].replace("{tmp}", tmp)
        elif line.startswith("# file: "):
            name, _, text = line[len("# file: "):].partition(" ")
            files[name] = text + "\n"
        else:
            assert line.startswith("#") or not line.strip(), f"{path.name}: unknown line {line!r}"
    return Transcript(b"".join(sent), b"".join(expected), [tmp] if args is None else args, files, stderr)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_transcript(path: Path, tmp_path: Path) -> None:
    transcript = load(path, str(tmp_path))
    for name, text in transcript.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    out, err, status = run_transcript(transcript.sent, *transcript.args, cwd=tmp_path)
    assert out == transcript.expected
    assert status == 0
    assert transcript.stderr is not None, f"{path.name}: say what stderr holds (# stderr: ...)"
    assert only_start_line(err, transcript.stderr), f"quiet by default: the start-up line alone on stderr, not {err!r}"


def test_the_scene_lines_are_read_and_the_folder_substituted(tmp_path: Path) -> None:
    script = tmp_path / "t.txt"
    script.write_text('# args: --allow-write {tmp}/ws\n# file: ws/a.txt hello world\n> {"p":"{tmp}"}\n< {tmp}\n')
    transcript = load(script, 'C:\\x "y"')
    assert transcript.args == ["--allow-write", 'C:\\x "y"/ws']
    assert transcript.files == {"ws/a.txt": "hello world\n"}
    assert transcript.sent == b'{"p":"C:\\\\x \\"y\\""}\n' and transcript.expected == b'C:\\\\x \\"y\\"\n'
    script.write_text("# args:\n")
    assert load(script).args == []


def test_transcripts_exist() -> None:
    assert {p.stem for p in TRANSCRIPTS} >= {"handshake", "versions", "lenient_order", "silence", "bad_input", "params",
                                             "modern", "modern_roots"}
