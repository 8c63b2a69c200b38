"""Test support for authentication over HTTP: token files, a real `shipcode-mcp --http` process whose
stderr goes to a file (so a test can read its log while it runs), and a client that sends a bearer token."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from support import REPO, terminate, wait_for
from transports.http.support import McpHttpClient, free_port

READ_TOKEN = "read-token-0123456789abcdef"
WRITE_TOKEN = "write-token-0123456789abcdef"
OTHER_TOKEN = "other-token-0123456789abcdef"
TOKENS = f"{READ_TOKEN}\n{WRITE_TOKEN} shipcode:read shipcode:write\n{OTHER_TOKEN} shipcode:read shipcode:write\n"


def write_tokens(path: Path, text: str = TOKENS, mode: int = 0o600) -> Path:
    """A token file as an operator writes it: `text`, readable by its owner only unless `mode` says otherwise."""
    path.write_text(text)
    path.chmod(mode)
    return path


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class CliServer:
    """`shipcode-mcp --http 127.0.0.1:PORT ARGS...` as a separate process, listening when constructed."""

    def __init__(self, args: list[str], log: Path, *, port: int | None = None, host: str = "127.0.0.1") -> None:
        self.port = port or free_port()
        self.log = log
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        with open(log, "wb") as stderr:
            self.process = subprocess.Popen([sys.executable, "-m", "shipcode_mcp", "--http", f"{host}:{self.port}", *args],
                                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        wait_for(self._listening, 30, f"shipcode-mcp to listen on {self.port}")
        assert self.process.poll() is None, self.stderr()

    def _listening(self) -> bool:
        if self.process.poll() is not None:
            return True  # it exited: the assertion after the wait says why
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def hangup(self) -> None:
        self.process.send_signal(signal.SIGHUP)

    def stop(self) -> int:
        return terminate(self.process)

    def __enter__(self) -> CliServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def run_cli(args: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`shipcode-mcp ARGS` to its end (a refusal to start), stdin closed."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run([sys.executable, "-m", "shipcode_mcp", *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


class BearerClient(McpHttpClient):
    """McpHttpClient (a legacy session) sending `Authorization: Bearer TOKEN` with every request (None: no header)."""

    def __init__(self, port: int, token: str | None, **options: Any) -> None:
        self.token = token
        super().__init__(port, **options)

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        auth = bearer(self.token) if self.token is not None else {}
        return super().headers({**auth, **(extra or {})})
