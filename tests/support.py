"""Test support: the real `shipcode-mcp` process over real pipes, and the official schema.

Every line a server writes through `McpProcess` or `run_transcript` is checked against the official
JSON Schema of its era: a modern (2026-07-28) message against that schema, a legacy one against
2025-06-18 (except the documented `id: null` error for lines that carry no usable id). See
`modern_definition` for how a message's era is told.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import jsonschema

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
SCHEMA_PATH = REPO / "tests" / "data" / "mcp-2025-06-18.schema.json"  # verbatim copy; see SCHEMA-SOURCE.txt
MODERN_SCHEMA_PATH = REPO / "tests" / "data" / "mcp-2026-07-28.schema.json"  # verbatim copy (draft 2020-12)
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
SERVER = [sys.executable, "-m", "shipcode_mcp"]

HANDSHAKE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"tests","version":"1"}}}'
)
HANDSHAKE_REPLY = (
    '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{}},'
    '"serverInfo":{"name":"shipcode-mcp","version":"1.0.0"}}}'
)
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'


def schema_path() -> Path:
    return SCHEMA_PATH


@cache
def _validators() -> dict[str, Any]:
    import jsonschema

    schema = json.loads(schema_path().read_text())
    out = {}
    for name in ("JSONRPCResponse", "JSONRPCError", "JSONRPCNotification", "JSONRPCRequest",
                 "ServerResult", "ServerNotification", "ServerRequest"):
        out[name] = jsonschema.Draft7Validator({"$ref": f"#/definitions/{name}", "definitions": schema["definitions"]})
    return out


def validate_definition(name: str, value: Any) -> None:
    """Raise unless `value` is a valid instance of the schema definition `name` (e.g. CallToolResult)."""
    import jsonschema

    schema = json.loads(schema_path().read_text())
    jsonschema.Draft7Validator({"$ref": f"#/definitions/{name}", "definitions": schema["definitions"]}).validate(value)


MODERN_RESULTS = (
    ("supportedVersions", "DiscoverResult"), ("tools", "ListToolsResult"), ("resourceTemplates", "ListResourceTemplatesResult"),
    ("resources", "ListResourcesResult"), ("contents", "ReadResourceResult"), ("prompts", "ListPromptsResult"),
    ("messages", "GetPromptResult"), ("content", "CallToolResult"), ("completion", "CompleteResult"),
)
"""A modern complete result's definition, told by the field only that result carries (first match wins)."""

MODERN_ERRORS = {-32021: "MissingRequiredClientCapabilityError", -32022: "UnsupportedProtocolVersionError"}
"""The errors only 2026-07-28 defines, each with a definition of its own (code and data)."""


def modern_definition(message: dict[str, Any]) -> str | None:
    """The 2026-07-28 definition `message` must fit, or None for a legacy (2025-06-18) message.

    A result carrying `resultType` is modern, and so is a notification that acknowledges a
    subscription or carries a subscription id; the rest (errors, progress, log messages, requests)
    is shaped alike in both eras and checked as legacy. A modern result is checked against the
    definition of its kind (the generic `Result` of the schema's `ServerResult` union would accept
    any object with a `resultType`)."""
    result = message.get("result")
    if isinstance(result, dict) and "resultType" in result:
        if result["resultType"] == "input_required":
            return "InputRequiredResult"
        if result["resultType"] == "task":
            return "CreateTaskResult"
        if "taskId" in result and "status" in result:
            return "DetailedTask"
        meta = result.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_ID in meta and set(result) <= {"resultType", "_meta"}:
            return "SubscriptionsListenResult"
        return next((name for field, name in MODERN_RESULTS if field in result), "Result")
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if "id" not in message and "method" in message and (
            message["method"] == "notifications/subscriptions/acknowledged" or (isinstance(meta, dict) and SUBSCRIPTION_ID in meta)):
        return "ServerNotification"
    return None


_STAMP = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"
_TASK = {"taskId": {"type": "string", "minLength": 20},
         "status": {"enum": ["working", "input_required", "completed", "failed", "cancelled"]},
         "createdAt": {"type": "string", "pattern": _STAMP}, "lastUpdatedAt": {"type": "string", "pattern": _STAMP},
         "ttlMs": {"type": "integer", "minimum": 1}, "pollIntervalMs": {"type": "integer", "minimum": 1},
         "_meta": {"type": "object"}}
TASK_SHAPES: dict[str, dict[str, Any]] = {
    "CreateTaskResult": {"type": "object", "additionalProperties": False, "required": [*_TASK, "resultType"],
                         "properties": {"resultType": {"const": "task"}, **_TASK}},
    "DetailedTask": {
        "type": "object", "additionalProperties": False, "required": [*_TASK, "resultType"],
        "properties": {"resultType": {"const": "complete"}, **_TASK, "result": {"type": "object", "required": ["content"]},
                       "error": {"type": "object", "required": ["code", "message"]},
                       "inputRequests": {"type": "object", "minProperties": 1}},
        "allOf": [{"not": {"required": ["result", "error"]}},
                  {"if": {"properties": {"status": {"const": "completed"}}}, "then": {"required": ["result"]}},
                  {"if": {"properties": {"status": {"const": "failed"}}}, "then": {"required": ["error"]}},
                  {"if": {"properties": {"status": {"const": "input_required"}}}, "then": {"required": ["inputRequests"]}},
                  {"if": {"properties": {"status": {"enum": ["working", "cancelled"]}}},
                   "then": {"not": {"anyOf": [{"required": ["result"]}, {"required": ["error"]},
                                              {"required": ["inputRequests"]}]}}}]},
}
"""The tasks extension's answers (SEP-2663), which the 2026-07-28 schema does not define: a tools/call's
CreateTaskResult (Result & Task, flat) and tasks/get's DetailedTask, as its pages and the conformance suite
give them."""


@cache
def modern_validator(name: str) -> Any:
    """A draft 2020-12 validator of the 2026-07-28 definition `name` (jsonschema_rs: fast, and it
    resolves the schema's `$defs`)."""
    import jsonschema_rs

    schema = json.loads(MODERN_SCHEMA_PATH.read_text())
    return jsonschema_rs.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


def validate_modern(message: dict[str, Any], name: str) -> None:
    """Raise unless the whole server->client `message` fits 2026-07-28, its result or notification
    being the definition `name`."""
    if "result" in message and name in TASK_SHAPES:
        modern_validator("JSONRPCResultResponse").validate(message)
        jsonschema.Draft202012Validator(TASK_SHAPES[name]).validate(message["result"])
    elif "result" in message:
        modern_validator("JSONRPCResultResponse").validate(message)
        assert message["result"]["resultType"] in ("complete", "input_required"), message
        modern_validator(name).validate(message["result"])
    elif "error" in message:
        modern_validator("JSONRPCErrorResponse").validate(message)
        modern_validator(name).validate(message)
    else:
        assert "id" not in message, f"a modern request asks nothing of the client by request: {message}"
        modern_validator("JSONRPCNotification").validate(message)
        modern_validator(name).validate(message)


def validate_server_message(message: dict[str, Any]) -> None:
    """Every server->client message must fit the official schema of its era (see `modern_definition`);
    the one exception is an error whose id is null (parse errors and the like), which JSON-RPC requires
    and the 2025-06-18 schema lacks. An error fits both schemas, and the codes only 2026-07-28 defines
    fit their own definitions."""
    modern = modern_definition(message)
    if modern is not None:
        validate_modern(message, modern)
        return
    v = _validators()
    if "error" in message:
        if message.get("id") is None:
            assert set(message) == {"jsonrpc", "id", "error"} and message["jsonrpc"] == "2.0"
            assert isinstance(message["error"]["code"], int) and isinstance(message["error"]["message"], str)
            return
        v["JSONRPCError"].validate(message)
        modern_validator("JSONRPCErrorResponse").validate(message)
        if message["error"].get("code") in MODERN_ERRORS:
            modern_validator(MODERN_ERRORS[message["error"]["code"]]).validate(message)
    elif "result" in message:
        v["JSONRPCResponse"].validate(message)
        v["ServerResult"].validate(message["result"])
    elif "id" in message:
        v["JSONRPCRequest"].validate(message)
        v["ServerRequest"].validate({k: message[k] for k in ("method", "params") if k in message})
    else:
        v["JSONRPCNotification"].validate(message)
        v["ServerNotification"].validate({k: message[k] for k in ("method", "params") if k in message})


class McpProcess:
    """`shipcode-mcp ARGS` as a child process; lines in, lines out, everything validated."""

    def __init__(self, *args: str, cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
                 command: list[str] | None = None) -> None:
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env["XDG_CACHE_HOME"] = str(index_cache())
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(
            (command or SERVER) + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd, env=full_env,
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = b""
        self._out_pump = threading.Thread(target=self._pump, daemon=True)
        self._out_pump.start()
        self._err_pump = threading.Thread(target=self._pump_err, daemon=True)
        self._err_pump.start()
        self._next_id = 1000

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def write(self, data: bytes | str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data.encode() if isinstance(data, str) else data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message, separators=(",", ":"))
        self.write(line + "\n")

    def read_raw(self, timeout: float = 10.0) -> bytes | None:
        """The next line exactly as written (None at EOF); fails the test on timeout."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output within {timeout} s; stderr: {self.stderr[-2000:]!r}") from None
        return line

    def read(self, timeout: float = 10.0) -> dict[str, Any]:
        line = self.read_raw(timeout)
        assert line is not None, f"server closed stdout; stderr: {self.stderr[-2000:]!r}"
        assert line.endswith(b"\n")
        message = json.loads(line)
        validate_server_message(message)
        return message

    def no_output(self, wait: float = 0.3) -> None:
        """Assert that nothing arrives within `wait` seconds."""
        try:
            line = self._lines.get(timeout=wait)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected output: {line!r}")

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        """Send a request and return its response, skipping notifications (kept in self.notifications)."""
        self._next_id += 1
        msg_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + timeout
        while True:
            reply = self.read(max(0.01, deadline - time.monotonic()))
            if reply.get("id") == msg_id and "method" not in reply:
                return reply
            self.notifications.append(reply)

    notifications: list[dict[str, Any]]

    def initialize(self) -> dict[str, Any]:
        self.notifications = []
        self.send(HANDSHAKE)
        reply = self.read()
        self.send(INITIALIZED)
        return reply

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, timeout: float = 30.0, *,
                  meta: dict[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta is not None:
            params["_meta"] = meta
        reply = self.request("tools/call", params, timeout)
        assert "result" in reply, reply
        return reply["result"]

    def close(self, timeout: float = 10.0) -> int:
        """Close stdin and wait for the exit status; then `stderr` holds all the process wrote there."""
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._err_pump.join(timeout)
            self._out_pump.join(timeout)
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()

    def __enter__(self) -> McpProcess:
        self.notifications = []
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()


def request_while_pinging(process: McpProcess, method: str, params: dict[str, Any], timeout: float = 120.0,
                          start_after: float = 0.0) -> tuple[dict[str, Any], float, list[float]]:
    """Send one request, then a ping every 10 ms until it is answered: (its reply, seconds, ping latencies).
    Each ping's latency is measured from its own sending, so a server held by the request shows as a slow ping.
    `start_after`: the first ping waits that long (past stdio.ORDER_GRACE, the loop's deliberate wait for a
    job it just started, a ping measures the server while the request runs, not that wait)."""
    sent: dict[int, float] = {}
    latencies: list[float] = []
    started = time.monotonic()
    process.send({"jsonrpc": "2.0", "id": "request", "method": method, "params": params})
    time.sleep(start_after)
    number = 0
    while True:
        assert time.monotonic() - started < timeout, f"{method} was not answered within {timeout} s"
        number += 1
        sent[number] = time.monotonic()
        process.send({"jsonrpc": "2.0", "id": number, "method": "ping"})
        reply = process.read(timeout=60)
        if reply.get("id") == "request":
            took = time.monotonic() - started
            while len(latencies) < number:  # the pings still on their way
                latencies.append(time.monotonic() - sent[process.read(timeout=10)["id"]])
            return reply, took, latencies
        assert reply == {"jsonrpc": "2.0", "id": number, "result": {}}
        latencies.append(time.monotonic() - sent[number])
        time.sleep(max(0.0, 0.01 - latencies[-1]))


class SlowPing(AssertionError):
    """A ping answered later than its bound while a request ran: the server was held, or the machine was."""


def assert_pinged_within(bound: float, latencies: list[float], what: str) -> None:
    """Every ping of `latencies` (request_while_pinging) answered within `bound` seconds, else SlowPing."""
    if max(latencies) >= bound:
        raise SlowPing(f"{what}: a ping waited {max(latencies) * 1000:.0f} ms (bound {bound * 1000:.0f} ms); "
                       f"{len(latencies)} pings, latencies {[round(value, 4) for value in latencies]}")


PING_ROUNDS = 3
"""Rounds of a scenario whose pings are bounded (`pinged_within_in_a_round`). A server held by its request
(the attacks measured this way hold it for seconds) fails every round; a loaded machine's scheduler, which
now and then keeps a process from its core for 100-150 ms (CI of 2026-12-07: one ping of 137 ms among
hundreds, beside pytest -n 2 and the coverage run), fails one round in many."""


def pinged_within_in_a_round(scenario: Callable[[int], None], rounds: int = PING_ROUNDS) -> None:
    """Run `scenario(round)` (a test's server from its start, on files of its own: no round may inherit the
    last one's state) until one round raises no SlowPing, at most `rounds` times; the last round's SlowPing
    fails the test. Any other failure fails it at once."""
    for number in range(1, rounds + 1):
        try:
            scenario(number)
            return
        except SlowPing as slow:
            if number == rounds:
                raise
            print(f"round {number} of {rounds}: {slow}; once more")


def terminate(process: subprocess.Popen[Any], timeout: float = 15) -> int:
    """Stop a server process as an operator would: SIGTERM, then SIGKILL if it has not exited within
    `timeout` seconds. Its exit status (the one it had, if it had ended already)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def wait_for(predicate: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll `predicate` until it returns something true, and return that (never None); fail saying `what` was awaited.
    The timeout is for a loaded machine: a condition that holds early costs no more than its checks."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(0.01)
    return value


def run_transcript(input_bytes: bytes, *args: str, cwd: str | os.PathLike[str] | None = None,
                   timeout: float = 30.0) -> tuple[bytes, bytes, int]:
    """Feed all of `input_bytes` to a fresh server, close stdin, return (stdout, stderr, status)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["XDG_CACHE_HOME"] = str(index_cache())
    done = subprocess.run(SERVER + list(args), input=input_bytes, capture_output=True, timeout=timeout, cwd=cwd, env=env)
    for line in done.stdout.splitlines():
        validate_server_message(json.loads(line))
    return done.stdout, done.stderr, done.returncode


@cache
def index_cache() -> Path:
    """The cache folder of the servers the tests start (XDG_CACHE_HOME): their code index goes there, one folder per
    test process, removed at its exit, never the user's."""
    folder = Path(tempfile.mkdtemp(prefix="shipcode-test-cache-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


PEER_CACHE = Path(os.environ.get("SHIPCODE_PEER_CACHE")
                  or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "shipcode-mcp" / "peers")
"""Where the tests' peers (venvs of other packages, made once) are kept: SHIPCODE_PEER_CACHE, else
$XDG_CACHE_HOME/shipcode-mcp/peers, as the scripts' caches are."""
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")
"""CI=true: a peer that cannot be installed (npm or PyPI out of reach) fails the test instead of skipping it."""


def peer_venv(name: str, *pins: str) -> Path:
    """A venv `name` in PEER_CACHE holding `pins` (each NAME==VERSION), made on first use and checked each
    time; under a file lock beside it, so test processes running at once (pytest-xdist) make it once."""
    import venv

    from filelock import FileLock

    folder = PEER_CACHE / name
    python = folder / "bin" / "python"
    wanted = dict(pin.split("==") for pin in pins)
    check = [str(python), "-c", "import importlib.metadata as m, sys; "
             f"sys.exit({wanted!r} != {{name: m.version(name) for name in {list(wanted)!r}}})"]
    PEER_CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{folder}.lock"):
        if not python.exists() or subprocess.run(check, capture_output=True).returncode != 0:
            venv.create(folder, with_pip=True, clear=True)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins],
                           check=True, timeout=600)
            subprocess.run(check, check=True)
    return folder


def fetched_corpora(bench: Any, *names: str) -> list[Path]:
    """The sources of the corpora `names` of a bench script (`bench.CORPORA`, `bench.fetch`: pinned, fetched once
    into PEER_CACHE), under one file lock across the test processes; the test is skipped where the registry cannot
    be reached, except in CI."""
    import pytest  # (only where a test may be skipped, as in installed)
    from filelock import FileLock

    PEER_CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(str(PEER_CACHE / "corpora.lock")):
        try:
            return [bench.fetch(bench.CORPORA[name], PEER_CACHE) for name in names]
        except bench.Unreachable as err:
            if IN_CI:
                raise
            pytest.skip(f"the registry cannot be reached for the corpus: {err}")


def run_installer(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a script that installs into a cache folder (scripts/*.sh), in a process group of its own: when it
    overruns `timeout` or the test is cut short (pytest's own timeout), the whole group gets SIGTERM, so the
    script's trap removes its staging folder and no npm or pip goes on alone (SIGKILL 30 s later)."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except BaseException:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
            raise
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def installed(script: str, what: str, timeout: float = 600) -> Path:
    """The cache folder `scripts/<script>` fills the first time and prints last. Exit status 3 (npm or PyPI
    cannot be reached) skips the test saying so, or fails it under CI=true (`IN_CI`); any other failure fails."""
    done = run_installer(["bash", str(REPO / "scripts" / script)], timeout)
    if done.returncode == 3 and not IN_CI:
        import pytest

        pytest.skip(f"{what} cannot be installed: {done.stderr.strip()}")
    assert done.returncode == 0, f"scripts/{script} failed ({done.returncode}): {done.stderr[-3000:]}"
    return Path(done.stdout.strip().splitlines()[-1])


def bench_smoke(script: Path, folder: Path, timeout: float) -> tuple[dict[str, Any], str]:
    """A bench script's --smoke run with its cache in `folder`, which must succeed: (the report it wrote
    as JSON, what it printed)."""
    results = folder / "results.json"
    done = subprocess.run([sys.executable, str(script), "--smoke", "--cache", str(folder), "--json", str(results)],
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(results.read_text())
    return report, done.stdout


def load_script(path: Path, name: str) -> Any:
    """A script that is not a package module (bench/*.py), imported under `name`; its own folder is on
    sys.path as when it runs, so it can import its neighbours."""
    import importlib.util

    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def family(pid: int) -> list[int]:
    """`pid` and all its descendants, now (those gone meanwhile left out)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:  # every thread's children: a child started from a worker thread is listed under that thread
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue  # gone meanwhile
        for task in tasks:
            try:
                todo += [int(child) for child in Path(f"/proc/{current}/task/{task}/children").read_text().split()]
            except OSError:
                pass  # a thread that ended meanwhile
        found.append(current)
    return found


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants, now."""
    total = 0
    for member in family(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text()
            total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) * 1024
        except (OSError, StopIteration):
            pass  # gone meanwhile
    return total


def peak_rss(pid: int) -> int:
    """The most resident memory the process has held (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


class TreeSampler:
    """The highest resident size of a process tree (`tree_rss`), sampled every 10 ms while in use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self._stop.wait(0.01)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
