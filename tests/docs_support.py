"""Support for tests/test_docs.py: the fenced blocks of the docs and their markers, and the folders the
docs' examples were made on (so that their output can be compared byte for byte)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import REPO
from workspace_support import git as git_output
from workspace_support import make_repo

MARKER = re.compile(r"^<!-- doctest: (?P<body>.*?) -->$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<info>.*)$")
KINDS = {"setup", "transcript", "python", "signature", "usage", "tree", "sh", "serve", "install", "tool", "tool-text",
         "tool-json", "skip"}
# Paths a block names in this repository (a command's script, a test file): each must exist.
REPO_PATH = re.compile(r"(?<![\w/.-])(?:tests|scripts|bench|examples|src|docs)/[\w./-]*\w")


@dataclass
class Block:
    """One fenced block of a doc, with the marker on the line before its opening fence (if any)."""

    doc: str                      # relative to the repository, e.g. "docs/http.md"
    line: int                     # 1-based line of the opening fence
    info: str                     # the fence's info string ("sh", "python", "")
    text: str                     # the lines between the fences, each ending in "\n"
    kind: str | None = None       # None: no marker
    options: dict[str, str] = field(default_factory=dict)
    reason: str = ""

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def parse_marker(body: str) -> tuple[str, dict[str, str], str]:
    """`KIND key=value flag ... [-- reason]` -> (kind, options, reason); a flag's value is ""."""
    spec, _, reason = body.partition(" -- ")
    words = shlex.split(spec)
    if not words:
        raise ValueError("an empty doctest marker")
    options: dict[str, str] = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        options[key] = value
    return words[0], options, reason.strip()


def blocks(doc: str) -> list[Block]:
    """Every fenced block of `doc` (a path relative to the repository), in order."""
    lines = (REPO / doc).read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence = opening["fence"]
        end = index + 1
        while end < len(lines) and not lines[end].startswith(fence[0] * len(fence)):
            end += 1
        assert end < len(lines), f"{doc}:{index + 1}: a fence that never closes"
        block = Block(doc, index + 1, opening["info"].strip(), "".join(line + "\n" for line in lines[index + 1:end]))
        marker = MARKER.match(lines[index - 1]) if index else None
        if marker:
            block.kind, block.options, block.reason = parse_marker(marker["body"])
        found.append(block)
        index = end + 1
    return found


def documents() -> list[str]:
    """README.md and every page of docs/, relative to the repository."""
    return ["README.md", *sorted(str(path.relative_to(REPO)) for path in (REPO / "docs").glob("*.md"))]


def missing_paths(text: str) -> list[str]:
    """The repository paths `text` names that do not exist."""
    return [path for path in REPO_PATH.findall(text) if not (REPO / path).exists()]


def run_env(bin_dir: Path) -> dict[str, str]:
    """The environment a reader has after `source .venv/bin/activate`: the venv's programs first."""
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    env.pop("PYTHONPATH", None)  # the docs' commands use the installed package, as a reader's do
    return env


def git(root: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com", GIT_COMMITTER_NAME="Dev",
               GIT_COMMITTER_EMAIL="dev@example.com", GIT_AUTHOR_DATE="2026-11-30T11:04:00Z",
               GIT_COMMITTER_DATE="2026-11-30T11:04:00Z", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "-c", "init.defaultBranch=master", *args], cwd=root, env=env, check=True, capture_output=True)


def demo_repo(parent: Path) -> Path:
    """The README's example: a two-file git repository with one uncommitted change, in `parent/demo`."""
    root = parent / "demo"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\n")
    (root / "src" / "app.py").write_text('def greet(name):\n    return f"hello {name}"\n')
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "First commit")
    (root / "src" / "app.py").write_text('def greet(name):\n    return f"hi {name}"\n')
    return root


def watch_demo(parent: Path) -> Path:
    """docs/resources.md's example: `project` with a text file, a PNG, a name to encode, a source file
    and an ignored build output."""
    root = parent / "demo" / "project"
    (root / "src").mkdir(parents=True)
    (root / "build").mkdir()
    (root / ".gitignore").write_text("build/\n")
    (root / "README.md").write_text("# Demo\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "notes #1.txt").write_text("todo\n")
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "build" / "out.o").write_bytes(b"\x7fELF")
    return root


def tools_repo(parent: Path) -> Path:
    """docs/tools.md's examples: workspace_support.make_repo's three commits (`Initial commit`, `Add greeting`
    tagged v1.0, `Rename util to helpers`), then README.md changed and notes.txt untracked."""
    root = make_repo(parent / "project")
    with (root / "README.md").open("a") as readme:
        readme.write("Now with docs.\n")
    (root / "notes.txt").write_text("Ask about the release.\n")
    return root


FIXTURES = {"demo-repo": demo_repo, "watch-demo": watch_demo, "tools-repo": tools_repo}

# The object ids docs/tools.md shows, as git (SHA-1) makes them for tools_repo, whose names, dates and messages
# are fixed: each with the object it is, so the test substitutes the fixture's real id (and the same-length
# prefix of it for an abbreviation), and a git that makes other ids (SHA-256 repositories) still passes.
TOOLS_REPO_IDS = {
    "feeaf141d88be7799ac8acdac99b8e2dea7c9d65": ("rev-parse", "--verify", "HEAD"),
    "486b35fe100c1ae41186ece9104cdc6db1044e64": ("rev-parse", "--verify", "HEAD~1"),
    "82da11f73bdc0f393cae03761f2db871bfd0f2f4": ("rev-parse", "--verify", "HEAD~2"),
    "67153d79bf7f0c15ab5692e452aa8d4542d9dfae": ("rev-parse", "--verify", "v1.0"),
    "7202df108e59891ecbef364f4c1e27ecd0266f2e": ("rev-parse", "--verify", "HEAD~2:src/app.py"),
    "def227e3830405030ceef4f90f4244e2efff5ce9": ("rev-parse", "--verify", "HEAD~1:src/app.py"),
    "ffc78864c9307acb593f04e8207e3052bc5d5dab": ("rev-parse", "--verify", ":README.md"),
    "292265528fd3e2990eeee382376cc332be706cf6": ("hash-object", "--", "README.md"),  # the changed working copy
}
OBJECT_ID = re.compile(r"\b[0-9a-f]{7,40}\b")


def real_ids(root: Path) -> dict[str, str]:
    """TOOLS_REPO_IDS with each object's real id in the repository at `root`."""
    return {shown: git_output(root, *command).strip() for shown, command in TOOLS_REPO_IDS.items()}


def with_real_ids(text: str, ids: dict[str, str]) -> str:
    """`text` with every id (or abbreviation of one, 7 characters or more) of `ids` replaced by the real one."""

    def real(match: re.Match[str]) -> str:
        token = match[0]
        for shown, actual in ids.items():
            if shown.startswith(token):
                return actual if token == shown else actual[:len(token)]
        return token

    return OBJECT_ID.sub(real, text)


# The object id the README's tool table shows, as git (SHA-1) makes it for demo_repo: replaced by the real one
# as for tools_repo (with_real_ids).
DEMO_REPO_IDS = {"bf012573fd2fde305b78f24c080f1fecb7c7aa5b": ("rev-parse", "--verify", "HEAD")}


@dataclass
class ToolRow:
    """One row of the README's tool table: `name` `{arg, optional?, ...}` (and `(--allow-write)`), the
    `arguments` JSON, and the result's text: its lines, `a line` each (a note in parentheses may follow
    one), joined by `<br>`, where `… words` stands for any lines (the words say which)."""

    line: int
    tool: str
    shown_arguments: list[tuple[str, bool]]   # (name, required), in the order shown
    write: bool
    arguments: dict[str, Any]
    text: str                                  # for text_matches: one line each, `…` alone for any lines

    @property
    def name(self) -> str:
        return f"README.md:{self.line}:{self.tool}"


TOOL_ROW = re.compile(r"^\| `(?P<tool>\w+)` `\{(?P<args>[^}]*)\}`(?P<write> \(`--allow-write`\))? \| `(?P<arguments>[^`]+)` "
                      r"\| (?P<result>.+) \|$")
CODE_SPAN = re.compile(r"`([^`]+)`(?: \(.+\))?")  # a line, maybe with a note after it


def readme_tool_rows() -> list[ToolRow]:
    """The rows of the README's table under "## Tools" (the one whose header names `content[0].text`); a
    row of another shape, or a result cell that is neither code spans nor `…`, fails here."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    header = next(index for index, line in enumerate(lines) if line.startswith("| tool |") and "content[0].text" in line)
    rows: list[ToolRow] = []
    for index in range(header + 2, len(lines)):
        line = lines[index]
        if not line.startswith("|"):
            break
        match = TOOL_ROW.match(line)
        assert match, f"README.md:{index + 1}: a tool row is | `NAME` `{{ARGS}}` | `ARGUMENTS` | RESULT |: {line!r}"
        shown = [(arg.strip().rstrip("?"), not arg.strip().endswith("?")) for arg in match["args"].split(",") if arg.strip()]
        text = []
        for part in match["result"].split("<br>"):
            span = CODE_SPAN.fullmatch(part)
            if span:
                text.append(span[1].replace("\\t", "\t"))  # a tab, as the README writes it
            else:
                assert part.startswith(ELLIPSIS), f"README.md:{index + 1}: {part!r} is neither `a line` nor `… what follows`"
                text.append(ELLIPSIS)
        rows.append(ToolRow(index + 1, match["tool"], shown, bool(match["write"]), json.loads(match["arguments"]),
                            "\n".join(text)))
    return rows


ELLIPSIS = "…"
MORE = re.compile(r"… (\d+) more\b.*…", re.DOTALL)


def text_matches(shown: str, real: str) -> bool:
    """A tool-text block against a result's text: equal line for line, except that a line that is only `…`
    stands for any number of lines (none included)."""
    pattern = "".join(r"(?:[^\n]*\n)*" if line == ELLIPSIS else re.escape(line) + "\n" for line in shown.splitlines())
    return re.fullmatch(pattern, real + "\n") is not None


def json_mismatches(shown: Any, real: Any, where: str = "$") -> list[str]:
    """Where a tool-json block's value differs from the real structuredContent (empty: it matches). Equal
    values, of the same JSON type, objects' keys in the same order, except three elisions:
    - a string holding `…` matches any string with the text before and after it (`…` is any text);
    - an object with the member `"…": "…"` has at least the other members shown (in that order), maybe more;
    - an array whose last item is a string `"… N more …"` (any words between) has exactly N more items."""
    if isinstance(shown, str) and ELLIPSIS in shown and not MORE.fullmatch(shown):
        pattern = ".*".join(re.escape(part) for part in shown.split(ELLIPSIS))
        ok = isinstance(real, str) and re.fullmatch(pattern, real, re.DOTALL) is not None
        return [] if ok else [f"{where}: {real!r} does not match {shown!r}"]
    if isinstance(shown, dict):
        if not isinstance(real, dict):
            return [f"{where}: {real!r} is not an object"]
        elided = shown.get(ELLIPSIS) == ELLIPSIS
        keys = [key for key in shown if not (elided and key == ELLIPSIS)]
        order = [key for key in real if key in keys]
        if order != keys or (not elided and list(real) != keys):
            return [f"{where}: members {list(real)}, the doc shows {list(shown)}"]
        return [error for key in keys for error in json_mismatches(shown[key], real[key], f"{where}.{key}")]
    if isinstance(shown, list):
        more = MORE.fullmatch(shown[-1]) if shown and isinstance(shown[-1], str) else None
        items = shown[:-1] if more else shown
        if not isinstance(real, list) or len(real) != len(items) + (int(more[1]) if more else 0):
            return [f"{where}: {real!r} does not have the items {shown!r} shows"]
        return [error for index, item in enumerate(items) for error in json_mismatches(item, real[index], f"{where}[{index}]")]
    if type(shown) is not type(real) or shown != real:
        return [f"{where}: {real!r}, the doc shows {shown!r}"]
    return []


def act(root: Path, action: str) -> None:
    """Do what a transcript's `(PATH is edited)` or `(PATH is created)` line says happened."""
    match = re.fullmatch(r"(?P<path>\S+) is (?P<what>edited|created)", action)
    assert match, f"an action this test does not know: {action!r}"
    target = root / match["path"]
    if match["what"] == "edited":
        with target.open("a") as file:
            file.write("# edited\n")
    else:
        assert not target.exists()
        target.write_text("print('new')\n")


def repo_copy(destination: Path) -> Path:
    """The repository's files as a fresh clone plus the work in progress would have them (no .venv,
    nothing ignored), in `destination`."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode & 0o777)
    return destination
