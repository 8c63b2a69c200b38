"""Docs that run: every fenced block of README.md and docs/*.md is executed or checked here, so the docs
cannot drift from what the code does.

The convention. The line right before a block's opening fence is an HTML comment, which GitHub does not
render, saying what the block is:

    <!-- doctest: KIND [key=value | flag ...] [-- reason] -->

A block without one fails `test_every_block_is_accounted_for`. The kinds:

- `transcript [fixture=NAME] [root=DOC_PATH] [run="COMMAND"] [init]`: `> LINE` is sent to a real server,
  `< LINE` must come back byte for byte, in order, and nothing else; an indented `(PATH is edited)` or
  `(PATH is created)` is done to the served folder. The server is `run` (default `shipcode-mcp {root}`)
  started from the repository's folder with the venv's programs first on PATH; `{root}` is the served
  folder: the fixture NAME of docs_support.FIXTURES, else an empty one. `root` is how the doc spells that
  folder (it is replaced by the real one in both directions). `init` performs the legacy handshake first,
  unseen, as a client would have before the lines shown. The server must then exit 0 when stdin closes.
- `python [file=PATH] [as=NAME.py]`: `file`: the block is exactly that file, and it runs (stdin closed:
  a stdio server exits 0). `as`: the block is that module (other blocks of the same doc may run it);
  it must import cleanly. Else the block runs after `from shipcode_mcp import *` and
  `server = Server("docs", "1.0.0")`: registering its handlers checks their signatures and schemas.
- `signature TARGET`: the block is `Name(parameters)`, the same names, kinds and defaults as TARGET.
- `usage [complete]`: every `--option` in the block is one of `shipcode-mcp --help`; `complete`: and
  the block names every one of them.
- `tree FOLDER`: an indented listing of files; every file and folder it names exists.
- `sh [only=N,M]`: each line (or lines N, M; 1-based) runs in bash from the repository's folder and
  must exit 0 within two minutes.
- `serve [only=N]`: each line (or line N) starts a Streamable HTTP server; on loopback, a free port for
  8765, a temporary folder for /abs/project, a token file for /abs/tokens (whose token the POST then
  carries), in a folder holding the doc's `python as=` modules. It must answer a POST `initialize`
  with a result, then stop on SIGTERM. A `shipcode-mcp` line on 0.0.0.0 must name an auth mode or
  --insecure-no-auth, as the command line requires beyond loopback (the test itself stays on loopback).
- `setup`: the README's first screen: exactly two commands. The first (set up and run) runs in a copy
  of the repository, and its stdout must be protocol only; the second is the test command, which
  runs this file: it is checked to exist, never run from here.
- `tool NAME [precise]`, then `tool-text` and `tool-json` [root=DOC_PATH]: an example of a tool, docs/tools.md's:
  `tool` is the `arguments` JSON of a `tools/call` of NAME, the `tool-text` block after it is the text
  block of the result and the `tool-json` block its `structuredContent` (a result block with `call=NAME`
  is the result of NAME called with `{}`, shown without an arguments block). Each example runs in a new
  docs_support.FIXTURES["tools-repo"] served by a real `shipcode-mcp --allow-write --allow-run ROOT`; the result
  must not be an error and its structuredContent must fit the tool's outputSchema. The text must be
  the same line for line, except that a line that is only `…` stands for any lines; the JSON the same
  values of the same types with objects' members in the same order, except that in a string `…` is
  any text, an object with `"…": "…"` may have more members than the others shown, and an array whose
  last item is `"… N more …"` has exactly N more items (docs_support.json_mismatches). The object ids
  shown are the ones git (SHA-1) makes for that fixture, named in docs_support.TOOLS_REPO_IDS: each id
  or abbreviation is replaced by the real one before comparing; `root` is how the block spells the
  served folder. With `precise` the server runs with --precise and the call is made again until the language
  server answers it (it warms in the background; at most two minutes).
- `install`: docs/install.md's routes: the block's lines run one after another in bash, in a fresh copy of
  the repository (no .venv), with uv, pipx and build (packaging_support.installers) first on PATH, then
  `~/.local/bin` of a temporary HOME (pipx's), and the index caches kept; /abs/project is a temporary
  folder, /tmp/shipcode a temporary venv. Each must exit 0 within five minutes; a `--version` prints the
  package's; a command serving /abs/project over stdio answers initialize and lists the code tools
  exactly when the block names the `code` extra; one with `--http 8765` answers initialize on a free
  loopback port. Marked `install` (a minute or two cold).
- `skip -- REASON`: not run, for the reason given (required).
Every repository path (scripts/..., tests/..., ...) a command or a skipped block names must exist.
The README's tool table is no fenced block but is run too, row by row (docs_support.readme_tool_rows: the
arguments each row gives, on the README's demo repository; its result lines, `…` for any lines).
"""

from __future__ import annotations

import ast
import http.client
import inspect
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from docs_support import (
    DEMO_REPO_IDS,
    FIXTURES,
    KINDS,
    Block,
    ToolRow,
    act,
    blocks,
    demo_repo,
    documents,
    json_mismatches,
    missing_paths,
    readme_tool_rows,
    real_ids,
    repo_copy,
    run_env,
    text_matches,
    tools_repo,
    with_real_ids,
)
from support import HANDSHAKE, HANDSHAKE_REPLY, INITIALIZED, REPO, McpProcess, validate_server_message, wait_for
from workspace_support import git as git_output

BIN = Path(sys.executable).parent  # the venv this suite runs in, where `pip install -e .` put shipcode-mcp
# Pages owned by work in progress whose blocks are not marked yet. A page listed here must still have an
# unmarked block (so it leaves this list the day it is marked); its marked blocks run like any other.
PENDING: dict[str, str] = {}
DOCS = documents()
ALL = [block for doc in DOCS for block in blocks(doc)]
MARKED = [block for block in ALL if block.kind is not None]
DOC_TOKEN = "doc-token-0123456789abcdef"
"""The token of the file a `serve` line's /abs/tokens stands for."""
PYTHON_PRELUDE = 'from shipcode_mcp import *\nserver = Server("docs", "1.0.0")\n'


def by_kind(*kinds: str) -> list[Any]:
    return [pytest.param(block, id=block.name) for block in MARKED if block.kind in kinds]


@dataclass
class ToolExample:
    """One tool call a doc shows: the tool, its arguments (a `tool` block, or none for `{}`) and the blocks
    of its result (`tool-text`, `tool-json`)."""

    doc: str
    tool: str
    arguments: Block | None
    results: list[Block] = field(default_factory=list)

    @property
    def name(self) -> str:
        return (self.arguments or self.results[0]).name


def tool_examples() -> list[ToolExample]:
    """The marked blocks of kinds tool, tool-text and tool-json, grouped by call: a result block belongs to
    the `tool` block before it in the same doc, or starts a call of its own with `call=NAME`."""
    examples: list[ToolExample] = []
    current: ToolExample | None = None
    for block in MARKED:
        if block.kind == "tool":
            (tool, *flags) = block.options
            assert flags in ([], ["precise"]), f"{block.name}: a `tool` block names its tool, then perhaps `precise`"
            current = ToolExample(block.doc, tool, block)
            examples.append(current)
        elif block.kind in ("tool-text", "tool-json"):
            if "call" in block.options:
                current = ToolExample(block.doc, block.options["call"], None)
                examples.append(current)
            assert current is not None and current.doc == block.doc, (
                f"{block.name}: a {block.kind} block follows a `tool` block, or says `call=NAME`")
            current.results.append(block)
        else:
            current = None
    return examples


@pytest.mark.parametrize("doc", DOCS)
def test_every_block_is_accounted_for(doc: str) -> None:
    """A block the docs show is run or checked, or says why not: nothing drifts unseen."""
    found = blocks(doc)
    unmarked = [block.name for block in found if block.kind is None]
    if doc in PENDING:
        assert unmarked, f"{doc} is fully marked: remove it from PENDING"
    else:
        assert not unmarked, f"blocks without a '<!-- doctest: KIND -->' line before them: {unmarked}"
    for block in found:
        if block.kind is None:
            continue
        assert block.kind in KINDS, f"{block.name}: unknown kind {block.kind!r}"
        if block.kind == "skip":
            assert block.reason, f"{block.name}: a skipped block says why"
        if block.kind in ("sh", "serve", "setup", "install", "skip"):  # commands: what they name must be there
            assert not missing_paths(block.text), f"{block.name} names paths that do not exist: {missing_paths(block.text)}"


def test_the_readme_first_screen_has_two_commands() -> None:
    """The first block is the whole start: set up and run, and run the tests, nothing else."""
    first = blocks("README.md")[0]
    assert first.kind == "setup"
    commands = [line for line in first.lines if line.strip()]
    assert len(commands) == 2, commands
    assert commands[0].endswith("# set up and run") and commands[1].endswith("# run the tests")


@pytest.mark.parametrize("block", by_kind("setup"))
def test_setup(block: Block, tmp_path: Path) -> None:
    """The first command, on a copy of the repository without a venv: it makes one, installs, and serves;
    its stdout is the protocol alone (pip's talk goes to stderr)."""
    setup, tests = (shlex.split(line, comments=True) for line in block.lines if line.strip())
    assert tests == ["scripts/test.sh"] and os.access(REPO / "scripts" / "test.sh", os.X_OK)
    line = block.lines[0]
    assert "/path/to/your/project" in line and ".venv/bin/shipcode-mcp" in setup
    project = tmp_path / "project"
    project.mkdir()
    copy = repo_copy(tmp_path / "repo")
    assert not (copy / ".venv").exists()
    done = subprocess.run(["bash", "-c", line.replace("/path/to/your/project", shlex.quote(str(project)))], cwd=copy,
                          env=run_env(BIN), input=f"{HANDSHAKE}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}}\n".encode(),
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert done.stdout == f"{HANDSHAKE_REPLY}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{}}}}\n".encode(), done.stdout[:2000]


def test_client_configurations() -> None:
    """The configurations the README gives clients parse, and run the command the first line installs."""
    readme = (REPO / "README.md").read_text()
    configs = [json.loads(text) for text in re.findall(r"`(\{\"(?:mcpServers|servers)\".*?\})`", readme)]
    assert len(configs) == 3, configs
    for config in configs:
        (server,) = (config.get("mcpServers") or config["servers"]).values()
        assert server["command"] == "/abs/shipcode-mcp/.venv/bin/shipcode-mcp"
        assert isinstance(server["args"], list) and all(isinstance(arg, str) for arg in server["args"])
    assert ".venv/bin/shipcode-mcp" in blocks("README.md")[0].lines[0]
    assert (BIN / "shipcode-mcp").exists()


@pytest.mark.parametrize("doc", DOCS)
def test_inline_commands(doc: str) -> None:
    """A command quoted in the prose names programs of the venv, scripts, files and extras that exist."""
    text = (REPO / doc).read_text()
    extras = set(tomllib_load()["project"]["optional-dependencies"])
    for command in re.findall(r"`((?:\.venv/bin/|scripts/)[^`]*)`", text):
        program = command.split()[0]
        if program.startswith(".venv/bin/"):
            assert (BIN / program.removeprefix(".venv/bin/")).exists(), f"{doc}: `{command}`: no {program}"
        else:
            assert os.access(REPO / program, os.X_OK), f"{doc}: `{command}`: {program} is not an executable script"
        assert not missing_paths(command), f"{doc}: `{command}` names {missing_paths(command)}"
        for named in re.findall(r"'\.\[([\w,]+)\]'", command):
            assert set(named.split(",")) <= extras, f"{doc}: `{command}`: no such extra"


def tomllib_load() -> dict[str, Any]:
    """pyproject.toml (tomllib from 3.11; on 3.10 the few lines this needs, read by hand)."""
    text = (REPO / "pyproject.toml").read_text()
    if sys.version_info >= (3, 11):
        import tomllib
        loaded: dict[str, Any] = tomllib.loads(text)
        return loaded
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    names = re.findall(r"^(\w+) = \[", section, flags=re.MULTILINE)
    return {"project": {"optional-dependencies": dict.fromkeys(names)}}


@pytest.mark.parametrize("block", by_kind("transcript"))
def test_transcript(block: Block, tmp_path: Path) -> None:
    """The exchange as shown, with a real server, byte for byte."""
    options = block.options
    root = FIXTURES[options["fixture"]](tmp_path) if "fixture" in options else tmp_path / "root"
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    doc_root = options.get("root")

    def real(line: str) -> str:
        return line.replace(doc_root, str(root)) if doc_root else line

    command = [word.replace("{root}", str(root)) for word in shlex.split(options.get("run", "shipcode-mcp {root}"))]
    if "run" in options:  # the command a transcript runs is the one its doc gives
        shown = options["run"].replace("{root}", doc_root) if doc_root else options["run"]
        assert f"`{shown}`" in (REPO / block.doc).read_text(), f"{block.name}: `{shown}` is not in the doc"
    command[0] = str(BIN / command[0]) if "/" not in command[0] else command[0]
    with McpProcess(command=command, cwd=REPO, env=run_env(BIN)) as server:
        if "init" in options:
            server.send(HANDSHAKE)
            assert server.read_raw() is not None
            server.send(INITIALIZED)
        for line in block.lines:
            if line.startswith("> "):
                server.write(real(line[2:]) + "\n")
            elif line.startswith("< "):
                got = server.read_raw(timeout=30)
                assert got == (real(line[2:]) + "\n").encode(), f"{block.name}: expected\n{line[2:]}\ngot\n{got!r}"
                validate_server_message(json.loads(got))
            elif (action := re.fullmatch(r"\s+\((.+)\)", line)) is not None:
                act(root, action[1])
            else:
                raise AssertionError(f"{block.name}: a transcript line is '> ...', '< ...' or '  (...)': {line!r}")
        assert server.close() == 0, server.stderr.decode()[-2000:]
        assert server.read_raw() is None, "the server said more than the doc shows"


def test_every_tool_example_has_its_result() -> None:
    """A `tool` block is followed by what it returns: its text, then its structuredContent, once each."""
    for example in tool_examples():
        kinds = [block.kind for block in example.results]
        assert kinds == ["tool-text", "tool-json"], f"{example.name}: {kinds}"


@pytest.mark.parametrize("example", [pytest.param(example, id=example.name) for example in tool_examples()])
def test_tool(example: ToolExample, tmp_path: Path) -> None:
    """The call as shown, to a real server on the fixture the doc describes: the same text, the same
    structuredContent (but for the elisions the convention defines), which fits the tool's outputSchema."""
    root = tools_repo(tmp_path).resolve()
    ids = real_ids(root)
    arguments = json.loads(example.arguments.text) if example.arguments else {}
    precise = example.arguments is not None and "precise" in example.arguments.options
    command = [str(BIN / "shipcode-mcp"), "--allow-write", "--allow-run", *(["--precise"] if precise else []), str(root)]
    with McpProcess(command=command, cwd=REPO, env=run_env(BIN)) as server:
        server.initialize()
        tools = {tool["name"]: tool for tool in server.request("tools/list")["result"]["tools"]}
        result = server.call_tool(example.tool, arguments)
        deadline = time.monotonic() + 120
        while precise and not _precise_answer(result) and time.monotonic() < deadline:
            time.sleep(0.2)  # the language server warms in the background: the example shows its answer
            result = server.call_tool(example.tool, arguments)
        assert server.close() == 0, server.stderr.decode()[-2000:]
    assert result["isError"] is False, result
    jsonschema.Draft202012Validator(tools[example.tool]["outputSchema"]).validate(result["structuredContent"])
    (content,) = result["content"]
    for block in example.results:
        shown = with_real_ids(block.text, ids)
        if "root" in block.options:
            shown = shown.replace(block.options["root"], str(root))
        if block.kind == "tool-text":
            assert text_matches(shown, content["text"]), f"{block.name}: the doc shows\n{shown}\nthe server says\n{content['text']}"
        else:
            mismatches = json_mismatches(json.loads(shown), result["structuredContent"])
            assert not mismatches, f"{block.name}: " + "\n".join(mismatches)


def _precise_answer(result: dict[str, Any]) -> bool:
    """Whether a result is the language server's (--precise): named in it, or in a write's new diagnostics."""
    data = result.get("structuredContent") or {}
    return bool(data.get("language_server") or data.get("new_diagnostics"))


def test_the_readme_tool_table_has_a_row_for_every_built_in_tool() -> None:
    """Every tool the CLI offers without the code extra (with --allow-write) has its row, once, in the
    order tools/list gives (the code tools have their paragraph below the table)."""
    from shipcode_mcp.workspace.tools import READ_TOOLS, WRITE_TOOLS

    assert [row.tool for row in readme_tool_rows()] == [tool[0] for tool in READ_TOOLS + WRITE_TOOLS]


@pytest.mark.parametrize("row", [pytest.param(row, id=row.name) for row in readme_tool_rows()])
def test_readme_tool_row(row: ToolRow, tmp_path: Path) -> None:
    """A row of the README's tool table, called as shown on the README's demo repository (a new one for each
    row): its arguments are the tool's (`?`: optional), `(--allow-write)` marks exactly the write tools, and
    the result's text is the one shown, line for line (`…`: any lines), with the fixture's real object ids."""
    root = demo_repo(tmp_path).resolve()
    ids = {shown: git_output(root, *command).strip() for shown, command in DEMO_REPO_IDS.items()}
    with McpProcess(command=[str(BIN / "shipcode-mcp"), "--allow-write", str(root)], cwd=REPO, env=run_env(BIN)) as server:
        server.initialize()
        tools = {tool["name"]: tool for tool in server.request("tools/list")["result"]["tools"]}
        result = server.call_tool(row.tool, row.arguments)
        assert server.close() == 0, server.stderr.decode()[-2000:]
    schema = tools[row.tool]["inputSchema"]
    assert row.shown_arguments == [(name, name in schema.get("required", [])) for name in schema["properties"]]
    assert row.write == (tools[row.tool]["annotations"].get("readOnlyHint") is False)
    assert result["isError"] is False, result
    jsonschema.Draft202012Validator(tools[row.tool]["outputSchema"]).validate(result["structuredContent"])
    (content,) = result["content"]
    shown = with_real_ids(row.text, ids)
    assert text_matches(shown, content["text"]), f"{row.name}: the README shows\n{shown}\nthe server says\n{content['text']}"


@pytest.mark.parametrize("block", by_kind("python"))
def test_python(block: Block, tmp_path: Path) -> None:
    """The example is real code on the public API (or the file it says it is)."""
    if "file" in block.options:
        assert block.text == (REPO / block.options["file"]).read_text(), f"{block.name} differs from {block.options['file']}"
        script = REPO / block.options["file"]
        argv = [str(script)]
    elif "as" in block.options:
        (tmp_path / block.options["as"]).write_text(block.text)
        argv = ["-c", f"import {block.options['as'].removesuffix('.py')}"]
    else:
        (tmp_path / "example.py").write_text(PYTHON_PRELUDE + block.text)
        argv = ["example.py"]
    done = subprocess.run([sys.executable, *argv], cwd=tmp_path, env=run_env(BIN), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert done.stdout == b""


@pytest.mark.parametrize("block", by_kind("signature"))
def test_signature(block: Block) -> None:
    """The signature shown is the real one: names, kinds and defaults."""
    (dotted,) = block.options
    module, _, name = dotted.rpartition(".")
    target = getattr(__import__(module, fromlist=[name]), name)
    text = block.text.strip()
    assert text.startswith(f"{name}(")
    shown = ast.parse(f"def f{text[len(name):]}: pass").body[0]
    assert isinstance(shown, ast.FunctionDef)
    arguments = shown.args
    described = [(arg.arg, "positional") for arg in arguments.posonlyargs + arguments.args]
    described += [(arg.arg, "keyword") for arg in arguments.kwonlyargs]
    defaults = dict(zip([arg.arg for arg in arguments.args][len(arguments.args) - len(arguments.defaults):],
                        [ast.literal_eval(value) for value in arguments.defaults], strict=True))
    defaults.update({arg.arg: ast.literal_eval(value) for arg, value in zip(arguments.kwonlyargs, arguments.kw_defaults,
                                                                            strict=True) if value is not None})
    real = inspect.signature(target).parameters.values()
    assert described == [(p.name, "keyword" if p.kind is p.KEYWORD_ONLY else "positional") for p in real]
    assert defaults == {p.name: p.default for p in real if p.default is not p.empty}


@pytest.mark.parametrize("block", by_kind("usage"))
def test_usage(block: Block) -> None:
    """The options a doc shows are the command line's (and, for the complete list, all of them)."""
    help_text = subprocess.run([str(BIN / "shipcode-mcp"), "--help"], capture_output=True, text=True, check=True,
                               env={**os.environ, "COLUMNS": "1000"}).stdout  # no option cut at a line's end
    real = set(re.findall(r"--[a-z][a-z-]*", help_text))
    shown = set(re.findall(r"--[a-z][a-z-]*", block.text))
    assert shown and shown <= real, shown - real
    if "complete" in block.options:
        assert real <= shown, real - shown


@pytest.mark.parametrize("block", by_kind("tree"))
def test_tree(block: Block) -> None:
    """Every file and folder of the listing exists where its indentation puts it."""
    (folder,) = block.options
    base = REPO / folder
    names = {path.name for top in ("src", "bench", "examples", "tests") for path in (REPO / top).rglob("*.py")}
    parents: dict[int, Path] = {0: REPO, 2: base}
    for line in block.lines:
        indent = len(line) - len(line.lstrip())
        entry = line.split()[0].rstrip(",") if line.strip() else ""
        if indent in parents and (entry.endswith((".py", "/"))):
            path = parents[indent] / entry
            assert path.exists(), f"{block.name}: {path.relative_to(REPO)} does not exist"
            if entry.endswith("/") and indent == 2:
                parents[4] = path
        for mentioned in re.findall(r"\b[a-z_]+\.py\b", line):
            assert mentioned in names, f"{block.name}: no {mentioned} in the repository"


@pytest.mark.parametrize("block", by_kind("sh"))
def test_sh(block: Block) -> None:
    """The commands run and succeed, as a reader would type them in the repository's folder."""
    for line in selected(block):
        done = subprocess.run(["bash", "-c", line], cwd=REPO, env=run_env(BIN), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=120)
        assert done.returncode == 0, f"{line}\n{done.stderr.decode()[-3000:]}"


@pytest.mark.parametrize("block", by_kind("serve"))
def test_serve(block: Block, tmp_path: Path) -> None:
    """The command serves MCP over HTTP (on a free loopback port, in a temporary folder)."""
    modules = tmp_path / "modules"
    modules.mkdir()
    for other in blocks(block.doc):
        if other.kind == "python" and "as" in other.options:
            (modules / other.options["as"]).write_text(other.text)
    project = tmp_path / "project"
    project.mkdir()
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{DOC_TOKEN} shipcode:read\n")
    tokens.chmod(0o600)
    for line in selected(block):
        port = free_port()
        command = (shlex.split(line, comments=True))
        if command[0] == "shipcode-mcp" and "0.0.0.0" in line:
            assert {"--auth-issuer", "--auth-token-file", "--insecure-no-auth"} & set(command), f"{line}: refused to start"
        command = [word.replace("0.0.0.0", "127.0.0.1").replace("8765", str(port)).replace("/abs/project", str(project))
                   .replace("/abs/tokens", str(tokens)) for word in command]
        token = DOC_TOKEN if "/abs/tokens" in line else None
        server = subprocess.Popen(command, cwd=modules, env=run_env(BIN), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            reply = wait_for(partial(answer_or_exit, server, port, token), 60, f"{line} to answer")
            assert reply and "result" in reply, reply
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            stderr = ended(server, 30 + (GUNICORN_GRACE if command[0] == "gunicorn" else 0))
        assert server.returncode == 0, stderr.decode()[-2000:]


CODE_TOOLS = {"outline", "find_symbol", "repo_map", "locate", "find_references", "find_definition", "find_implementations",
              "diagnostics", "read_symbol", "search_structure"}


@pytest.mark.install
@pytest.mark.parametrize("block", by_kind("install"))
def test_install(block: Block, tmp_path: Path) -> None:
    """The route as a reader runs it on a fresh clone: it installs, and what it installs serves what the page
    says (the code tools exactly when the block names the `code` extra)."""
    from packaging_support import CACHE, installers, uv_env
    from shipcode_mcp import __version__

    copy = repo_copy(tmp_path / "repo")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    suite_bin = BIN.resolve()
    path = [str(home / ".local" / "bin"), str(installers())] + [
        part for part in os.environ.get("PATH", "").split(os.pathsep) if part and Path(part).resolve() != suite_bin]
    real_home = Path.home()
    env = {**uv_env(tmp_path), "PATH": os.pathsep.join(path), "HOME": str(home), "PIPX_HOME": str(home / "pipx"),
           "PIPX_BIN_DIR": str(home / ".local" / "bin"), "PIPX_MAN_DIR": str(home / "man"),
           "PIP_CACHE_DIR": str(real_home / ".cache" / "pip"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "npm_config_cache": str(real_home / ".npm"),
           "MCPB_CACHE": str(real_home / ".cache" / "shipcode-mcp" / "mcpb-2.1.2"), "UV_CACHE_DIR": str(CACHE / "uv-cache")}
    env.pop("PYTHONPATH", None)
    code = any("code" in extras.split(",") for extras in re.findall(r"\[([\w,]+)\]", block.text))
    handshake = f"{HANDSHAKE}\n{INITIALIZED}\n" + '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
    for shown in selected(block):
        line = shown.replace("/abs/project", shlex.quote(str(project))).replace("/tmp/shipcode", str(tmp_path / "venv"))
        words = shlex.split(line, comments=True)
        started = time.monotonic()
        if "--http" in words:
            port = free_port()
            words = [str(port) if word == "8765" else word for word in words]
            server = subprocess.Popen(words, cwd=copy, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, start_new_session=True)
            try:
                reply = wait_for(partial(answer_or_exit, server, port), 300, f"{shown} to answer")
                assert reply and "result" in reply, reply
            finally:
                os.killpg(server.pid, signal.SIGTERM)
                server.communicate(timeout=30)
        else:
            serving = str(project) in words
            done = subprocess.run(["bash", "-c", line], cwd=copy, env=env, input=handshake.encode() if serving else b"",
                                  capture_output=True, timeout=300)
            assert done.returncode == 0, f"{shown}\n{done.stderr.decode()[-3000:]}"
            if "--version" in words:
                assert done.stdout == f"shipcode-mcp {__version__}\n".encode(), done.stdout
            if serving:
                replies = [json.loads(reply) for reply in done.stdout.splitlines()]
                assert [reply["id"] for reply in replies] == [1, 2], replies
                tools = {tool["name"] for tool in replies[1]["result"]["tools"]}
                assert {"read_file", "git_log"} <= tools and (CODE_TOOLS <= tools if code else not CODE_TOOLS & tools), \
                    f"{shown}: {sorted(tools)}"
        print(f"{shown.split('#')[0].strip()}: {time.monotonic() - started:.1f} s")


GUNICORN_GRACE = 30
"""gunicorn's graceful timeout: on SIGTERM it waits that long for its workers before it kills them and exits
0, so a wait for its exit must be longer. A worker that did not end at once was waited out once in CI (in
some forty runs of this command; 300 runs here did not show it again); the uvicorn command of the same block
runs the same app without such a grace, and its shutdown is held to 30 s."""


def ended(server: subprocess.Popen[bytes], timeout: float) -> bytes:
    """`server`'s stderr once it has exited; a failure with what it said when it has not within `timeout` (its
    process group is killed then)."""
    try:
        return server.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        said = server.communicate()[1].decode(errors="replace")
        raise AssertionError(f"{server.args!r} did not exit within {timeout:g} s of SIGTERM; it said:\n{said[-4000:]}") from None


def answer_or_exit(server: subprocess.Popen[bytes], port: int, token: str | None = None) -> dict[str, Any] | None:
    """The server's answer to initialize; its exit status if it stopped; None while it is not listening yet."""
    if (reply := initialize(port, token)) is not None:
        return reply
    return {"exited": server.returncode} if server.poll() is not None else None


def selected(block: Block) -> list[str]:
    """The lines a block's `only=N,M` names (all of them without it)."""
    lines = [line for line in block.lines if line.strip()]
    if "only" not in block.options:
        return lines
    return [lines[int(number) - 1] for number in block.options["only"].split(",")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def initialize(port: int, token: str | None = None) -> dict[str, Any] | None:
    """POST initialize to http://127.0.0.1:PORT/mcp (with `token` as a bearer token): the response, or
    None while nothing listens."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        connection.request("POST", "/mcp", HANDSHAKE, headers)
        response = connection.getresponse()
        body = response.read()
    except ConnectionRefusedError:
        return None
    finally:
        connection.close()
    assert response.status == 200, (response.status, body)
    message: dict[str, Any] = json.loads(body)
    return message
