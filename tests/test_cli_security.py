"""Safe defaults of `shipcode-mcp --http`: no address beyond loopback without authentication unless
--insecure-no-auth says so (with a warning), auth and TLS options that contradict each other or lack
--http refused with exit status 2, the start-up line naming https and the auth mode, and HTTPS served
with a certificate made here, trusted by a client that trusts nothing else."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from auth_support import READ_TOKEN, CliServer, bearer, run_cli, write_tokens
from logging_support import only_start_line
from shipcode_mcp.cli import parse_args
from support import REPO, wait_for
from transports.http.support import MCP_HEADERS, free_port, initialize

REFUSAL = ("shipcode-mcp: refusing to serve {host} without authentication: anyone who reaches the port would get the "
           "workspace. Give --auth-issuer URL (OAuth) or --auth-token-file FILE, listen on 127.0.0.1, or say "
           "--insecure-no-auth (docs/http.md, \"Securing a remote server\")\n")
NEED_HTTP = "need --http"
"""The end of the message that lists every HTTP-only option (the list grows with the options)."""
UNASSIGNED = "192.0.2.1"  # TEST-NET-1 (RFC 5737): not loopback, and no address of this machine, so nothing listens


@pytest.mark.parametrize(("address", "host"), [("0.0.0.0:8765", "0.0.0.0"), ("[::]:8765", "::"),
                                               (f"{UNASSIGNED}:8765", UNASSIGNED)])
def test_beyond_loopback_without_auth_refuses_to_start(tmp_path: Path, address: str, host: str) -> None:
    done = run_cli(["--http", address, "--allow-write", str(tmp_path)])
    assert (done.returncode, done.stdout, done.stderr) == (2, "", REFUSAL.format(host=host))


def test_loopback_without_auth_is_served_and_says_so(tmp_path: Path) -> None:
    with CliServer(["--allow-write", str(tmp_path)], tmp_path / "server.log") as server:
        log = server.stderr()
        url = f"http://127.0.0.1:{server.port}/mcp"
    assert only_start_line(log, f"serving {tmp_path} at {url} (sessions); writes allowed, not watching, children sandboxed, no auth"), log


def test_insecure_no_auth_starts_with_a_warning(tmp_path: Path) -> None:
    """On an address that is not this machine's, so the test listens nowhere: the warning and the start-up
    line come, then binding fails (a real deployment would serve from there)."""
    done = run_cli(["--http", f"{UNASSIGNED}:8765", "--insecure-no-auth", "--allow-write", str(tmp_path)])
    lines = done.stderr.splitlines()
    assert lines[0].endswith(f" shipcode-mcp WARNING: --insecure-no-auth: anyone who can reach {UNASSIGNED}:8765 can use "
                             "the workspace (read and write) without a token"), done.stderr
    assert lines[1].endswith(f" shipcode-mcp NOTICE: serving {tmp_path} at http://{UNASSIGNED}:8765/mcp (sessions); "
                             "writes allowed, not watching, children sandboxed, no auth"), done.stderr
    assert done.returncode != 0  # nothing could bind the address: not a start that goes unnoticed


@pytest.mark.parametrize(("args", "message"), [
    (["--auth-token-file", "tokens"], NEED_HTTP),
    (["--auth-issuer", "https://auth.example.com"], NEED_HTTP),
    (["--insecure-no-auth"], NEED_HTTP),
    (["--tls-cert", "cert.pem", "--tls-key", "key.pem"], NEED_HTTP),
    (["--resource-url", "https://mcp.example.com/mcp"], NEED_HTTP),
    (["--http", "8765", "--tls-cert", "cert.pem"], "shipcode-mcp: --tls-cert and --tls-key go together\n"),
    (["--http", "8765", "--tls-key", "key.pem"], "shipcode-mcp: --tls-cert and --tls-key go together\n"),
    (["--http", "8765", "--tls-cert", "missing.pem", "--tls-key", "tokens"], "shipcode-mcp: no such file: missing.pem\n"),
    (["--http", "8765", "--auth-issuer", "https://auth.example.com", "--auth-token-file", "tokens"],
     "shipcode-mcp: --auth-issuer and --auth-token-file are two ways to check tokens: choose one\n"),
    (["--http", "0.0.0.0:8765", "--auth-issuer", "https://auth.example.com"],
     "shipcode-mcp: --auth-issuer on 0.0.0.0: give --resource-url, the URL clients use (tokens must name it as their "
     "audience)\n"),
    (["--http", "[::]:8765", "--auth-issuer", "https://auth.example.com"],
     "shipcode-mcp: --auth-issuer on ::: give --resource-url, the URL clients use (tokens must name it as their "
     "audience)\n"),
    (["--http", "8765", "--resource-url", "https://mcp.example.com/mcp", "--auth-token-file", "tokens"],
     "shipcode-mcp: --resource-url, --auth-client-id and --auth-client-secret-file go with --auth-issuer\n"),
    (["--http", "8765", "--auth-token-file", "tokens", "--insecure-no-auth"],
     "shipcode-mcp: --insecure-no-auth contradicts --auth-issuer / --auth-token-file\n"),
    (["--http", "8765", "--auth-issuer", "http://auth.example.com"],
     "shipcode-mcp: the issuer must be an https:// URL (or http:// on a loopback address): 'http://auth.example.com'\n"),
], ids=["token-file", "issuer", "insecure", "tls", "resource-url", "cert-alone", "key-alone", "missing-cert",
        "two-modes", "issuer-on-any-v4", "issuer-on-any-v6", "resource-url-alone", "insecure-and-auth", "issuer-over-http"])
def test_options_that_cannot_go_together_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    write_tokens(tmp_path / "tokens")
    done = run_cli([str(tmp_path / arg) if arg in ("tokens", "missing.pem") else arg for arg in args] + [str(tmp_path)])
    assert done.returncode == 2, done.stderr
    if message == NEED_HTTP:
        assert done.stderr.startswith("shipcode-mcp: --stateless, --workers, ") and done.stderr.endswith(" need --http\n")
        assert " the auth and TLS options " in done.stderr
    else:
        assert done.stderr == message.replace("missing.pem", str(tmp_path / "missing.pem"))
    assert done.stdout == ""


# -- the start-up line -------------------------------------------------------------------------------
def test_the_start_up_line_names_the_oauth_mode(tmp_path: Path) -> None:
    with CliServer(["--auth-issuer", "http://127.0.0.1:9/", "--resource-url", "https://mcp.example.com/mcp",
                    str(tmp_path)], tmp_path / "server.log") as server:
        log = server.stderr()
        url = f"http://127.0.0.1:{server.port}/mcp"
    # (a warning may follow: nothing answers at the issuer's address)
    assert log.splitlines()[0].endswith(f" shipcode-mcp NOTICE: serving {tmp_path} at {url} (sessions); read-only, "
                                        "not watching, children sandboxed, OAuth, tokens of http://127.0.0.1:9/ for https://mcp.example.com/mcp")


# -- TLS -------------------------------------------------------------------------------------------------
def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, signed by its own key, valid for a day."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shipcode-mcp test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                               x509.DNSName("localhost")]), critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    cert, private = folder / "cert.pem", folder / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    private.chmod(0o600)
    return cert, private


def post_initialize(connection: http.client.HTTPConnection) -> tuple[int, bytes]:
    try:
        connection.request("POST", "/mcp", json.dumps(initialize()).encode(), {**MCP_HEADERS, **bearer(READ_TOKEN)})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_https_with_a_certificate_made_here(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    tokens = write_tokens(tmp_path / "tokens")
    with CliServer(["--tls-cert", str(cert), "--tls-key", str(key), "--auth-token-file", str(tokens), str(tmp_path)],
                   tmp_path / "server.log") as server:
        trusting = ssl.create_default_context(cafile=str(cert))  # trusts this certificate and nothing else
        status, body = post_initialize(http.client.HTTPSConnection("127.0.0.1", server.port, context=trusting, timeout=15))
        assert status == 200 and json.loads(body)["result"]["serverInfo"]["name"] == "shipcode-mcp"

        with pytest.raises(ssl.SSLCertVerificationError):  # a client that does not know the certificate refuses it
            post_initialize(http.client.HTTPSConnection("127.0.0.1", server.port, context=ssl.create_default_context(),
                                                        timeout=15))
        with pytest.raises((http.client.RemoteDisconnected, http.client.BadStatusLine, ConnectionResetError)):
            post_initialize(http.client.HTTPConnection("127.0.0.1", server.port, timeout=15))  # plain HTTP gets nothing
        status, _ = post_initialize(http.client.HTTPSConnection("127.0.0.1", server.port, context=trusting, timeout=15))
        assert status == 200  # the failed attempts left the server serving
        log = server.stderr()
        url = f"https://127.0.0.1:{server.port}/mcp"
    assert log.splitlines()[0].endswith(f" shipcode-mcp NOTICE: serving {tmp_path} at {url} (sessions); read-only, "
                                        f"not watching, children sandboxed, bearer tokens from {tokens} (3)"), log


@pytest.mark.parametrize("resource", ["mcp.example.com", "https://mcp.example.com/mcp#top", "ftp://mcp.example.com/mcp"],
                         ids=["no-scheme", "fragment", "not-http"])
def test_a_resource_url_that_is_no_http_url_exits_2(tmp_path: Path, resource: str) -> None:
    """RFC 8707 and RFC 9728: the resource is an absolute https (or http) URI without a fragment. Accepted (as it
    was), it makes challenges no client can follow (without a scheme, `resource_metadata=":///.well-known/oauth-protected-
    resourcemcp.example.com"`) and an audience no authorization server issues."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "shipcode_mcp", "--http", f"127.0.0.1:{port}", "--auth-issuer",
                               "http://127.0.0.1:9/", "--resource-url", resource, str(tmp_path)],
                              env={**os.environ, "PYTHONPATH": str(REPO / "src")}, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: server.poll() is not None or listening(port), 30, "the server to exit or listen")
    if server.poll() is None:
        server.terminate()
        raise AssertionError(f"served {resource!r} as its resource: {server.communicate(timeout=15)[1]}")
    stderr = server.communicate(timeout=15)[1]
    assert server.returncode == 2 and "--resource-url" in stderr, stderr


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_a_client_id_that_starts_with_a_dash_is_read_in_the_equals_form() -> None:
    """Authorization servers make ids of random characters, '-' first among them; `--opt=VALUE` is argparse's way."""
    args = parse_args(["--http", "8765", "--auth-issuer", "https://auth.example.com", "--auth-client-id=-Zq3x",
                       "--auth-client-secret-file", "secret", "root"])
    assert args.auth_client_id == "-Zq3x" and args.roots == ("root",)
