"""Static bearer tokens for a small team: a file with one `TOKEN [SCOPE ...]` per line, read at start and
again on SIGHUP. A line without scopes grants `shipcode:read` only; `#` starts a comment.

A token is found by comparing SHA-256 digests in constant time against every line (no early exit), so
neither timing nor an error message tells an attacker how close a guess came.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
import threading

from .. import log
from .scopes import READ, SUPPORTED
from .tokens import Principal, TokenRejected, fingerprint

MIN_TOKEN_CHARS = 16
"""A shorter token could be guessed: the file is refused."""
SENDABLE = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""What a client can send after `Bearer ` (RFC 6750's b64token): any other token could never be used, so
the file is refused rather than a client left with 401s it cannot explain."""


class TokenFile:
    """The tokens of one file; `reload` swaps in a new reading atomically (a bad file keeps the old one)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: list[tuple[bytes, Principal]] = self._read()

    def _read(self) -> list[tuple[bytes, Principal]]:
        """(digest, principal) per line. Raises ValueError naming the line (never the token) on a bad one."""
        try:
            info = os.stat(self.path)
            with open(self.path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError as err:
            raise ValueError(f"--auth-token-file {self.path}: {err.strerror or err}") from None
        except UnicodeDecodeError:
            raise ValueError(f"--auth-token-file {self.path}: not UTF-8 text") from None
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning(f"--auth-token-file {self.path} can be read by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                        "chmod 600 it")
        entries: list[tuple[bytes, Principal]] = []
        seen: set[bytes] = set()
        for number, line in enumerate(lines, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            token, scopes = words[0], words[1:] or [READ]
            where = f"--auth-token-file {self.path}, line {number}"
            if len(token) < MIN_TOKEN_CHARS:
                raise ValueError(f"{where}: a token needs at least {MIN_TOKEN_CHARS} characters")
            if SENDABLE.fullmatch(token) is None:
                raise ValueError(f"{where}: a token is made of letters, digits and - . _ ~ + / (then = padding only), "
                                 "which is what a bearer token can carry")
            unknown = [scope for scope in scopes if scope not in SUPPORTED]
            if unknown:
                raise ValueError(f"{where}: unknown scope {unknown[0]!r} (known: {', '.join(SUPPORTED)})")
            digest = hashlib.sha256(token.encode()).digest()
            if digest in seen:
                raise ValueError(f"{where}: the same token is listed twice")
            seen.add(digest)
            subject = f"token:{fingerprint(token)[:16]}"
            entries.append((digest, Principal(subject, frozenset(scopes), issuer="token-file", kind="token")))
        if not entries:
            raise ValueError(f"--auth-token-file {self.path}: no tokens in the file")
        return entries

    def reload(self) -> bool:
        """Read the file again (on SIGHUP). A file that no longer reads well is reported and the tokens
        in use are kept: a typo must not lock everyone out, nor let everyone in."""
        try:
            entries = self._read()
        except ValueError as err:
            log.error(f"{err}; keeping the {len(self._entries)} token(s) read before")
            return False
        with self._lock:
            self._entries = entries
        log.notice(f"--auth-token-file {self.path}: {len(entries)} token(s) read", event="tokens-reloaded",
                   tokens=len(entries))
        return True

    def verify(self, token: str) -> Principal:
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            entries = self._entries
        found: Principal | None = None
        for candidate, principal in entries:
            if hmac.compare_digest(candidate, digest):
                found = principal
        if found is None:
            raise TokenRejected("the token is not valid")
        return found

    def describe(self) -> str:
        return f"tokens from {self.path}"

    def __len__(self) -> int:
        return len(self._entries)
