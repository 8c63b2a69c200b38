"""Support for the workspace tool tests: real git repositories made by the test, and a client that
checks every tool result against the tool's own outputSchema (McpProcess already checks every line
against the official schema)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import time
from pathlib import Path
from typing import Any

import jsonschema

from support import REPO, McpProcess, validate_definition

CANARY = "CANARY-outside-the-roots-7f3a"
"""Written into files outside the roots: it must never appear in anything the server says."""

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


GIT_TIMEOUT = 60.0


def git_env(date: str = "2024-01-02T10:00:00+00:00") -> dict[str, str]:
    """The environment of git_run: the tests' name and dates, no configuration but the repository's."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(_GIT_ENV, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


def git_run(cwd: Path, *args: str, date: str = "2024-01-02T10:00:00+00:00", check: bool = False,
            timeout: float = GIT_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """The real git, as a user runs it in a shell (with the tests' name and dates, no system or global
    configuration, none of the environment's GIT_* variables): the attack suite's baseline. Its stdout and
    stderr as text (a byte that is not UTF-8 kept as a lone surrogate); `check` raises on failure."""
    done = subprocess.run(["git", *args], cwd=cwd, env=git_env(date), capture_output=True, check=check,
                          timeout=timeout)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode("utf-8", "surrogateescape"),
                                       done.stderr.decode("utf-8", "surrogateescape"))


def git(cwd: Path, *args: str, date: str = "2024-01-02T10:00:00+00:00") -> str:
    """What git printed on stdout; a failure raises."""
    return git_run(cwd, *args, date=date, check=True).stdout


def make_repo(path: Path) -> Path:
    """A small project with three commits and a tag:

    1 "Initial commit": README.md, src/app.py, src/util.py, docs/guide.md, .gitignore
    2 "Add greeting" (tagged v1.0): src/app.py changed
    3 "Rename util to helpers": src/util.py -> src/helpers.py
    """
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# Demo\n\nA demo project.\n")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("import util\n\n\ndef main():\n    return util.answer()\n")
    (path / "src" / "util.py").write_text("def answer():\n    return 42\n")
    (path / "docs").mkdir()
    (path / "docs" / "guide.md").write_text("Guide\n=====\n\nRun `main()`.\n")
    (path / ".gitignore").write_text("build/\n*.log\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "Initial commit\n\nThe first version.", date="2024-01-01T09:00:00+00:00")
    (path / "src" / "app.py").write_text(
        "import util\n\n\ndef main():\n    return util.answer()\n\n\ndef greet(name):\n    return f'Hello, {name}!'\n")
    git(path, "commit", "-q", "-am", "Add greeting", date="2024-01-02T09:00:00+00:00")
    git(path, "tag", "-a", "v1.0", "-m", "Release 1.0", date="2024-01-02T09:30:00+00:00")
    git(path, "mv", "src/util.py", "src/helpers.py")
    git(path, "commit", "-q", "-m", "Rename util to helpers", date="2024-01-03T09:00:00+00:00")
    return path


def make_committer_repo(path: Path) -> Path:
    """`make_repo`, with an identity to commit as in its own configuration (the git write tools' tests)."""
    make_repo(path)
    git(path, "config", "user.name", "Ada Lovelace")
    git(path, "config", "user.email", "ada@example.com")
    return path


def make_outside(path: Path) -> Path:
    """A folder outside the roots, holding the canary."""
    path.mkdir(parents=True)
    (path / "secret.txt").write_text(f"{CANARY}\n")
    (path / "sub").mkdir()
    (path / "sub" / "deeper.txt").write_text(f"{CANARY} deeper\n")
    return path


def snapshot(path: Path) -> dict[str, tuple[int, bytes]]:
    """Every entry under `path` with its mode and content: to prove nothing changed there."""
    out: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            info = os.lstat(full)
            data = Path(full).read_bytes() if os.path.isfile(full) and not os.path.islink(full) else b""
            out[os.path.relpath(full, path)] = (info.st_mode, data)
    return out


class Tools:
    """A started, initialized server and the output schemas of its tools."""

    def __init__(self, *roots: Path | str, write: bool = False, env: dict[str, str] | None = None,
                 cwd: Path | None = None, precise: bool = False, options: tuple[str, ...] = ()) -> None:
        args = ((["--allow-write"] if write else []) + (["--precise"] if precise else []) + list(options)
                + [str(root) for root in roots])
        self.process = McpProcess(*args, env=env, cwd=cwd)
        self.process.initialize()
        listed = self.process.request("tools/list")["result"]["tools"]
        self.tools = {tool["name"]: tool for tool in listed}
        self.order = [tool["name"] for tool in listed]

    def call(self, name: str, arguments: dict[str, Any] | None = None, *, error: bool = False,
             timeout: float = 30.0, meta: dict[str, Any] | None = None, retried_while: str | None = None,
             ) -> dict[str, Any]:
        """tools/call (with `meta` as the request's _meta); asserts isError is `error`, and that a success fits the
        tool's outputSchema. `retried_while`: called again (ten times at most, a second apart) while the result is an
        error that says this (a lock another test process holds)."""
        for _ in range(10 if retried_while else 1):
            result = self.process.call_tool(name, arguments if arguments is not None else {}, timeout, meta=meta)
            if not (retried_while and result.get("isError") and retried_while in result["content"][0]["text"]):
                break
            time.sleep(1)
        validate_definition("CallToolResult", result)
        assert result["isError"] is error, result
        assert result["content"] and result["content"][0]["type"] == "text", result
        schema = self.tools[name].get("outputSchema")
        if not error and schema is not None:
            assert "structuredContent" in result, result
            jsonschema.Draft202012Validator(schema).validate(result["structuredContent"])
        self.last = result
        return result

    def data(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        structured: dict[str, Any] = self.call(name, arguments)["structuredContent"]
        return structured

    def text(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        text: str = self.call(name, arguments)["content"][0]["text"]
        return text

    def error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        text: str = self.call(name, arguments, error=True)["content"][0]["text"]
        return text

    def close(self) -> None:
        assert self.process.close() == 0

    def __enter__(self) -> Tools:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.proc.poll() is None:
            self.process.close()


def context(progress_token: str | int | None = None) -> Any:
    """A real Context (of a session with no transport) for calling tool functions in-process."""
    from shipcode_mcp.context import Context
    from shipcode_mcp.runner import ThreadRunner
    from shipcode_mcp.server import Server

    sent: list[dict[str, Any]] = []
    runner = ThreadRunner(Server("tests", "1"), lambda message, related: sent.append(message))
    params: dict[str, Any] = {"_meta": {"progressToken": progress_token}} if progress_token is not None else {}
    ctx = Context(runner, 1, "tools/call", params)
    ctx.sent = sent  # type: ignore[attr-defined]
    return ctx


STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("email", "json", "http", "logging", "concurrent", "urllib", "xml", "wsgiref", "html", "importlib")
"""Real code: packages of the running interpreter's standard library (some 150 files)."""
STYLES = REPO / "tests" / "data" / "styles"
SAMPLES = REPO / "tests" / "data" / "code"


def copy_real_code(to: Path, copies: int = 1) -> Path:
    """The standard library's PACKAGES (each copy in its own folder), the excerpts of real projects in
    tests/data/styles and one sample of each other language."""
    for copy in range(copies):
        base = to / f"copy{copy}" if copies > 1 else to
        for package in PACKAGES:
            shutil.copytree(STDLIB / package, base / package, ignore=shutil.ignore_patterns("__pycache__", "test*"))
    shutil.copytree(STYLES, to / "styles")
    shutil.copytree(SAMPLES, to / "samples")
    return to
