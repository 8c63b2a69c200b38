"""What a verified bearer token says about its caller, and how a verifier refuses one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Principal:
    """The caller a token stands for. `key` identifies it across requests (a session is bound to it);
    `expires_at` (epoch seconds) bounds how long the verification may be reused."""

    subject: str
    scopes: frozenset[str] = field(default_factory=frozenset)
    issuer: str | None = None
    client_id: str | None = None
    expires_at: float | None = None
    kind: str = "sub"  # what `subject` names: a user ("sub"), a client acting for itself ("client"), a token ("token")

    @property
    def key(self) -> str:
        """One caller, whatever token it shows: a client named X is not the user named X."""
        return f"{self.issuer or ''}#{self.kind}:{self.subject}"


class TokenRejected(Exception):
    """The token is not good here: RFC 6750's `invalid_token`, with a description for the client. The
    description never echoes the token."""

    def __init__(self, description: str, error: str = "invalid_token") -> None:
        super().__init__(description)
        self.description = description
        self.error = error


class Verifier(Protocol):
    """Turns a bearer token into a Principal or raises TokenRejected. May block (keys are fetched over
    the network): the HTTP front calls it off the event loop and caches what it says."""

    def verify(self, token: str) -> Principal: ...

    def describe(self) -> str:
        """A few words for the start-up line: how tokens are checked."""
        ...


def fingerprint(token: str) -> str:
    """A stable, non-reversible name for a token: what logs, caches and session bindings use instead of it."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
