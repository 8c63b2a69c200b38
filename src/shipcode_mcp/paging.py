"""Paging of every list the server answers (tools, templates, prompts, resources): a cursor is an offset
plus a fingerprint of the item before it. A leaf: the methods and the pinned resource listings use it."""

from __future__ import annotations

from . import jsonrpc
from .jsonrpc import JsonRpcError

TYPE_CHECKING = False  # typing stays out of the start-up path (see tests/test_startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")


def _invalid_cursor() -> JsonRpcError:
    return JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid cursor")


def paginate(items: Sequence[T], cursor: Any, page_size: int, key: Callable[[T], str]) -> tuple[Sequence[T], str | None]:
    """One page of `items` and the cursor of the next, if any.

    A cursor is an offset plus a fingerprint of the item just before it, so it stays valid while the
    list is unchanged and a stale or forged one is refused (-32602) rather than silently skipping.
    """
    # off the start-up budget (tests/test_startup.py): only paging needs these
    import base64
    import binascii

    start = 0
    if cursor is not None:
        if not isinstance(cursor, str):
            raise _invalid_cursor()
        try:
            offset_text, _, fingerprint = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii").partition(":")
            start = int(offset_text)
        except (ValueError, UnicodeError, binascii.Error):
            raise _invalid_cursor() from None
        if not 0 < start <= len(items) or _fingerprint(key(items[start - 1])) != fingerprint:
            raise _invalid_cursor()
    end = start + page_size
    page = items[start:end]
    if end >= len(items):
        return page, None
    token = f"{end}:{_fingerprint(key(items[end - 1]))}"
    return page, base64.urlsafe_b64encode(token.encode("ascii")).decode("ascii")


def _fingerprint(text: str) -> str:
    # crc32, not hash(): cursors must mean the same in every process of a stateless deployment.
    import binascii  # off the start-up budget, as in paginate

    return format(binascii.crc32(text.encode("utf-8", "surrogatepass")), "08x")
