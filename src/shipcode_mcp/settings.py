"""The command line as the server uses it: `Settings`, read once (cli.parse_args), typed and frozen, and the
same in every process of a deployment: a supervised HTTP worker gets the parent's `Settings` as JSON
(`to_json`, `from_json`) instead of reading the command line again.

No import of its own at start (json, for workers only, is the wire's): the stdio start reads it, and
dataclasses would cost the start-up budget (tests/test_startup.py).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULTS: dict[str, Any] = {
    "roots": (), "allow_write": False, "confirm_writes": False, "watch": False, "precise": False, "prompts": False,
    "resource_links": False, "skills": False, "require_sandbox": False, "no_index": False, "index_dir": None,
    "allow_run": False, "run_network": False, "run_read": (), "run_env": (), "run_timeout": 600,
    "run_memory": 4096, "run_processes": 512,
    "state_key_file": None, "max_result_tokens": 20_000,
    "log_level": "warning", "log_format": "text",
    "http": None, "stateless": False, "workers": 1, "supervise": False, "allow_origin": (), "allow_host": None,
    "max_connections": None, "header_timeout": None, "max_tls_handshakes": None, "write_timeout": None,
    "body_timeout": None, "max_sessions": None, "max_concurrent_calls": None, "body_budget": None,
    "max_json_values": None, "max_requests_per_caller": None, "max_streams_per_caller": None,
    "auth_issuer": None, "resource_url": None, "auth_client_id": None, "auth_client_secret_file": None,
    "auth_token_file": None, "insecure_no_auth": False, "tls_cert": None, "tls_key": None,
}
"""Every setting and what it is when the command line leaves it out (argparse's defaults are these)."""

LIMITS = ("max_connections", "header_timeout", "write_timeout", "max_tls_handshakes", "body_timeout", "max_sessions",
          "max_concurrent_calls", "body_budget", "max_json_values", "max_requests_per_caller", "max_streams_per_caller")
"""The HTTP limits: None when not given (the transport's default holds)."""


class Settings:
    """What the command line says, once read. Lists are tuples and nothing can be set afterwards, so every
    part of the server, and every worker, sees the same."""

    __slots__ = tuple(DEFAULTS)

    roots: tuple[str, ...]
    allow_write: bool
    confirm_writes: bool  # the writing tools, each change confirmed by the user first (implies allow_write's tools)
    watch: bool
    precise: bool  # language servers as the code tools' precise backends (workspace/lsp)
    prompts: bool  # prompts built from the tools, and completion of paths (workspace/prompts.py, completion.py)
    resource_links: bool  # a result that names files links their resources (workspace/links.py)
    skills: bool  # the workspace's Agent Skills over the Skills extension (workspace/skills.py)
    require_sandbox: bool
    no_index: bool  # no code index (workspace/code/index.py): the code tools read the files each time
    index_dir: str | None  # where the code index lives (None: the user's cache folder)
    allow_run: bool  # run_command, in its sandbox (workspace/run_command.py, command_sandbox.py)
    run_network: bool  # run_command's commands reach the network (no private network namespace)
    run_read: tuple[str, ...]  # folders run_command's commands may read beside the roots and the system's
    run_env: tuple[str, ...]  # NAME (the server's value) or NAME=VALUE: variables every command gets
    run_timeout: int  # the longest timeout a run_command call may ask (seconds)
    run_memory: int  # MiB a command's whole process tree may use
    run_processes: int  # processes a command's tree may have at once
    state_key_file: str | None
    max_result_tokens: int  # each tool result cut to this many tokens (estimated; 0: no cap): workspace/budget.py
    log_level: str
    log_format: str
    http: tuple[str, int] | None  # (host, port): serve Streamable HTTP there instead of stdio
    stateless: bool
    workers: int
    supervise: bool
    allow_origin: tuple[str, ...]
    allow_host: tuple[str, ...] | None
    max_connections: int | None
    header_timeout: float | None
    max_tls_handshakes: int | None
    write_timeout: float | None
    body_timeout: float | None
    max_sessions: int | None
    max_concurrent_calls: int | None
    body_budget: int | None
    max_json_values: int | None
    max_requests_per_caller: int | None
    max_streams_per_caller: int | None
    auth_issuer: str | None
    resource_url: str | None
    auth_client_id: str | None
    auth_client_secret_file: str | None
    auth_token_file: str | None
    insecure_no_auth: bool
    tls_cert: str | None
    tls_key: str | None

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"no such setting: {', '.join(sorted(unknown))}")
        for name, default in DEFAULTS.items():
            value = values.get(name, default)
            if isinstance(value, list):
                value = tuple(value)
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, namespace: Any) -> Settings:
        """The settings an argparse namespace (or any object with these attributes) holds."""
        return cls(**{name: getattr(namespace, name) for name in DEFAULTS})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"settings are read once and never change (tried to set {name})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and all(getattr(self, name) == getattr(other, name) for name in DEFAULTS)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in DEFAULTS))

    def __repr__(self) -> str:
        given = ", ".join(f"{name}={getattr(self, name)!r}" for name, default in DEFAULTS.items()
                          if getattr(self, name) != default)
        return f"Settings({given})"

    def limiting(self) -> bool:
        """Whether any HTTP limit is given."""
        return any(getattr(self, name) is not None for name in LIMITS)

    def to_json(self) -> str:
        """These settings as JSON, for a worker process (`from_json`)."""
        import json  # loaded at start already (the wire)

        return json.dumps({name: getattr(self, name) for name in DEFAULTS})

    @classmethod
    def from_json(cls, text: str) -> Settings:
        import json  # loaded at start already (the wire)

        values = json.loads(text)
        if values.get("http") is not None:
            values["http"] = tuple(values["http"])
        return cls(**values)
