"""--auth-token-file: one `TOKEN [SCOPE ...]` per line, read at start (a bad file stops the start with a
message naming the line, never the token), warned about when others can read it, compared in constant
time, and read again on SIGHUP by the real process (a removed token stops working at once, a new one
works, a broken file keeps the tokens in use)."""

from __future__ import annotations

import hmac
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from auth_support import OTHER_TOKEN, READ_TOKEN, TOKENS, WRITE_TOKEN, CliServer, bearer, run_cli, write_tokens
from logging_support import only_start_line
from shipcode_mcp.auth.scopes import READ, WRITE
from shipcode_mcp.auth.token_file import TokenFile
from shipcode_mcp.auth.tokens import TokenRejected
from support import wait_for
from transports.http.support import MCP_HEADERS, initialize, request

NEW_TOKEN = "new-token-0123456789abcdefgh"


def status_with(port: int, token: str) -> int:
    """The status of an `initialize` POST carrying `token`: 200 when it is accepted, 401 when not."""
    return request(port, "POST", initialize(), {**MCP_HEADERS, **bearer(token)}).status


# -- reading the file ----------------------------------------------------------------------------
def test_tokens_with_scopes_a_line_without_scopes_is_read_only_and_comments_are_ignored(tmp_path: Path) -> None:
    path = write_tokens(tmp_path / "tokens", "# the team's tokens\n\n"
                        f"{READ_TOKEN}\n"
                        f"   {WRITE_TOKEN}  shipcode:read shipcode:write   # Ann's laptop\n"
                        f"{OTHER_TOKEN} shipcode:write\n"
                        "# read-token-commented-out-0123456789\n")
    tokens = TokenFile(str(path))
    assert len(tokens) == 3
    reader, writer, other = (tokens.verify(token) for token in (READ_TOKEN, WRITE_TOKEN, OTHER_TOKEN))
    assert reader.scopes == frozenset({READ})
    assert writer.scopes == frozenset({READ, WRITE})
    assert other.scopes == frozenset({WRITE})  # as written: the scope check asks for read too
    assert len({reader.key, writer.key, other.key}) == 3  # three callers, whose sessions are kept apart
    for principal, token in ((reader, READ_TOKEN), (writer, WRITE_TOKEN)):
        assert token not in principal.key and token[:12] not in principal.subject
    for guess in ("read-token-commented-out-0123456789", READ_TOKEN[:-1], READ_TOKEN + "x", "", "# the team's tokens"):
        with pytest.raises(TokenRejected) as refused:
            tokens.verify(guess)
        assert refused.value.description == "the token is not valid" and refused.value.error == "invalid_token"


BAD_FILES = [
    pytest.param(f"{READ_TOKEN}\nshort-token-123 shipcode:read\n", "line 2: a token needs at least 16 characters",
                 "short-token-123", id="too-short"),
    pytest.param(f"# comment\n{READ_TOKEN}\n{WRITE_TOKEN} shipcode:read shipcode:admin\n",
                 "line 3: unknown scope 'shipcode:admin' (known: shipcode:read, shipcode:write)", WRITE_TOKEN,
                 id="unknown-scope"),
    pytest.param(f"{READ_TOKEN}\n{WRITE_TOKEN} shipcode:write\n\n{READ_TOKEN} shipcode:write\n",
                 "line 4: the same token is listed twice", READ_TOKEN, id="duplicate"),
    pytest.param("", "no tokens in the file", None, id="empty"),
    pytest.param("# nobody yet\n\n   \n", "no tokens in the file", None, id="only-comments"),
    pytest.param(f"{READ_TOKEN}\nsecret,token!0123456789 shipcode:read\n", "line 2: ", "secret,token!0123456789",
                 id="not-sendable"),
]


@pytest.mark.parametrize(("text", "message", "secret"), BAD_FILES)
def test_a_bad_file_stops_the_start_naming_the_line_never_the_token(tmp_path: Path, text: str, message: str,
                                                                     secret: str | None) -> None:
    path = write_tokens(tmp_path / "tokens", text)
    done = run_cli(["--http", "127.0.0.1:0", "--auth-token-file", str(path), str(tmp_path)])
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"shipcode-mcp: --auth-token-file {path}"), done.stderr
    assert message in done.stderr, done.stderr
    assert done.stdout == ""
    if secret is not None:
        assert secret not in done.stderr and secret[:8] not in done.stderr


@pytest.mark.parametrize("what", ["missing", "directory", "not-utf8"])
def test_an_unreadable_file_stops_the_start(tmp_path: Path, what: str) -> None:
    path = tmp_path / "tokens"
    if what == "directory":
        path.mkdir()
    elif what == "not-utf8":
        path.write_bytes(b"\xff\xfe" + READ_TOKEN.encode() + b"\n")
        path.chmod(0o600)
    done = run_cli(["--http", "127.0.0.1:0", "--auth-token-file", str(path), str(tmp_path)])
    assert done.returncode == 2, done.stderr
    expected = {"missing": "No such file or directory", "directory": "Is a directory", "not-utf8": "not UTF-8 text"}[what]
    assert done.stderr == f"shipcode-mcp: --auth-token-file {path}: {expected}\n"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604], ids=lambda mode: f"{mode:o}")
def test_a_file_others_can_read_is_warned_about(tmp_path: Path, mode: int) -> None:
    path = write_tokens(tmp_path / "tokens", mode=mode)
    with CliServer(["--auth-token-file", str(path), str(tmp_path)], tmp_path / "server.log") as server:
        assert status_with(server.port, READ_TOKEN) == 200  # a warning, not a refusal
        log = server.stderr()
    assert f"WARNING: --auth-token-file {path} can be read by other users (mode {mode:o}); chmod 600 it\n" in log


def test_a_private_file_starts_with_the_start_up_line_alone(tmp_path: Path) -> None:
    path = write_tokens(tmp_path / "tokens")
    with CliServer(["--auth-token-file", str(path), str(tmp_path)], tmp_path / "server.log") as server:
        assert status_with(server.port, WRITE_TOKEN) == 200
        log = server.stderr()
        url = f"http://127.0.0.1:{server.port}/mcp"
    assert only_start_line(log, f"serving {tmp_path} at {url} (sessions); read-only, not watching, children sandboxed, "
                                f"bearer tokens from {path} (3)"), log


# -- constant time -------------------------------------------------------------------------------
def compared(tokens: TokenFile, token: str) -> tuple[int, bool]:
    """How many times `verify(token)` called hmac.compare_digest (watched with a profiler, nothing
    replaced), and whether it accepted the token."""
    calls = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "c_call" and arg is hmac.compare_digest:
            calls += 1

    sys.setprofile(profile)
    try:
        try:
            tokens.verify(token)
            accepted = True
        except TokenRejected:
            accepted = False
    finally:
        sys.setprofile(None)
    return calls, accepted


def test_every_entry_is_compared_in_constant_time_whichever_matches(tmp_path: Path) -> None:
    """No early exit: the first line's token, the last one's and a wrong guess each cost one
    compare_digest per line, so the time taken says nothing about where (or whether) a token matched."""
    many = [f"token-number-{index:04d}-abcdefgh" for index in range(50)]
    tokens = TokenFile(str(write_tokens(tmp_path / "tokens", "\n".join(many) + "\n")))
    assert compared(tokens, many[0]) == (50, True)
    assert compared(tokens, many[-1]) == (50, True)
    assert compared(tokens, "token-number-0000-abcdefgX") == (50, False)
    assert compared(tokens, "x") == (50, False)


# -- SIGHUP ----------------------------------------------------------------------------------------
def reloads(server: CliServer) -> int:
    return server.stderr().count(" token(s) read\n")


def test_sighup_reads_the_file_again(tmp_path: Path) -> None:
    path = write_tokens(tmp_path / "tokens", TOKENS)
    with CliServer(["--auth-token-file", str(path), str(tmp_path)], tmp_path / "server.log") as server:
        assert status_with(server.port, OTHER_TOKEN) == 200  # its verdict is now cached
        assert status_with(server.port, NEW_TOKEN) == 401
        write_tokens(path, f"{READ_TOKEN}\n{WRITE_TOKEN} shipcode:read shipcode:write\n{NEW_TOKEN} shipcode:read\n")
        # The file alone changes nothing: the process goes on with what it read (and has cached).
        assert status_with(server.port, OTHER_TOKEN) == 200
        assert status_with(server.port, NEW_TOKEN) == 401

        server.hangup()
        wait_for(lambda: reloads(server) == 1, 15, "the token file to be read again")
        assert f"NOTICE: --auth-token-file {path}: 3 token(s) read\n" in server.stderr()
        assert status_with(server.port, OTHER_TOKEN) == 401  # at once: its cached verdict is forgotten
        assert status_with(server.port, NEW_TOKEN) == 200
        assert status_with(server.port, READ_TOKEN) == 200

        write_tokens(path, f"{NEW_TOKEN} shipcode:read\nshort-secret-1 shipcode:read\n")
        server.hangup()
        wait_for(lambda: "keeping the" in server.stderr(), 15, "the broken file to be reported")
        log = server.stderr()
        assert (f"ERROR: --auth-token-file {path}, line 2: a token needs at least 16 characters; "
                "keeping the 3 token(s) read before\n") in log
        assert "short-secret-1" not in log
        # A typo locks nobody out and lets nobody in: the tokens read before are the ones that work.
        assert status_with(server.port, READ_TOKEN) == 200
        assert status_with(server.port, WRITE_TOKEN) == 200
        assert status_with(server.port, NEW_TOKEN) == 200
        assert status_with(server.port, OTHER_TOKEN) == 401
        assert status_with(server.port, "short-secret-1") == 401
        assert server.stop() == 0
    assert reloads(server) == 1
    for token in (READ_TOKEN, WRITE_TOKEN, OTHER_TOKEN, NEW_TOKEN):
        assert token not in server.stderr()


def test_a_reload_that_fails_keeps_the_tokens(tmp_path: Path) -> None:
    path = write_tokens(tmp_path / "tokens", f"{READ_TOKEN}\n")
    tokens = TokenFile(str(path))
    path.write_text("")
    assert tokens.reload() is False
    assert tokens.verify(READ_TOKEN).scopes == frozenset({READ})
    write_tokens(path, f"{WRITE_TOKEN} shipcode:write\n")
    assert tokens.reload() is True
    assert tokens.verify(WRITE_TOKEN).scopes == frozenset({WRITE})
    with pytest.raises(TokenRejected):
        tokens.verify(READ_TOKEN)
