"""Pinned listings: the resources/list listing each cursor belongs to, kept while a client pages through it.

The first page of resources/list (no cursor) asks every resource source once and pins what they give
(the joined sequence) under a new id; every cursor of that listing carries the id ("<id>.<offset>"), and
later pages read that same sequence. So a listing of a big tree is walked once however slowly its client
pages, and no page copies or re-asks anything: paging through n resources costs O(n).

Bounds: at most MAX_LISTINGS listings and MAX_ENTRIES resources in all stay pinned; past either, the
least recently read go first (the newest always stays, whatever its size). A listing no page has read
for LIFETIME seconds is dropped too. A cursor of a dropped listing is refused with -32602 and a message
telling the client to list again without a cursor. A cursor this process did not make (another
`--workers` process, a server since restarted, a cursor from before pinning) is not refused for that:
it is read, by its offset and fingerprint, against the sources' current listing, as it always was.

Imported by the first resources/list, not at start-up.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from . import jsonrpc
from .paging import paginate
from .primitives import Resource

LIFETIME = 600.0
"""Seconds a listing stays pinned after its last page was read (each page read starts the count again)."""
MAX_LISTINGS = 16
"""Listings pinned at once, whoever asked for them."""
MAX_ENTRIES = 400_000
"""Resources in all pinned listings (a workspace file costs 120 to 150 bytes pinned: about 60 MB)."""


class ListingExpired(jsonrpc.JsonRpcError):
    """A cursor of a listing no longer pinned: -32602, and what to do about it."""

    def __init__(self) -> None:
        super().__init__(jsonrpc.INVALID_PARAMS,
                         f"Invalid params: this cursor's listing has expired (a listing is kept {LIFETIME:g} s after "
                         f"its last page is read, and at most {MAX_LISTINGS} at once); call resources/list again "
                         "without a cursor")


class PinnedListings:
    """The pinned listings of one server; thread-safe (listings are served off the reading loop).

    `clock` (monotonic seconds) may be replaced, by tests for instance, to make time pass.
    """

    def __init__(self, *, lifetime: float = LIFETIME, max_listings: int = MAX_LISTINGS,
                 max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        self.lifetime = lifetime
        self.max_listings = max_listings
        self.max_entries = max_entries
        self.clock = clock
        self._tag = os.urandom(4).hex()  # tells this process's cursors from any other's
        self._serial = 0
        self._pinned: OrderedDict[str, tuple[Sequence[Resource], float]] = OrderedDict()  # least recently read first
        self._entries = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._pinned)

    @property
    def entries(self) -> int:
        """Resources held by the pinned listings, in all."""
        return self._entries

    def pin(self, items: Sequence[Resource]) -> str:
        """Keep `items` as a new listing; its id (the head of its cursors)."""
        with self._lock:
            self._serial += 1
            pin = f"{self._tag}-{self._serial:x}"
            self._drop_expired()
            self._pinned[pin] = (items, self.clock())
            self._entries += len(items)
            while len(self._pinned) > 1 and (len(self._pinned) > self.max_listings or self._entries > self.max_entries):
                self._drop(next(iter(self._pinned)))
            return pin

    def split(self, cursor: str) -> tuple[Sequence[Resource] | None, str | None, str]:
        """(the pinned listing or None, its id or None, the offset cursor within it) of a cursor.

        None for a cursor this process did not make: the caller reads it against a current listing.
        A cursor of ours whose listing was dropped raises ListingExpired.
        """
        head, dot, inner = cursor.partition(".")
        if not dot:
            return None, None, cursor
        if not head.startswith(self._tag + "-"):
            return None, None, inner
        with self._lock:
            self._drop_expired()
            found = self._pinned.get(head)
            if found is None:
                raise ListingExpired()
            self._pinned[head] = (found[0], self.clock())
            self._pinned.move_to_end(head)
            return found[0], head, inner

    def _drop_expired(self) -> None:
        oldest = self.clock() - self.lifetime
        while self._pinned:
            pin, (_, used) = next(iter(self._pinned.items()))
            if used >= oldest:
                return
            self._drop(pin)

    def _drop(self, pin: str) -> None:
        items, _ = self._pinned.pop(pin)
        self._entries -= len(items)


def cursor(pin: str | None, inner: str | None) -> str | None:
    """The cursor a client gets: the listing's id, then the offset cursor within it."""
    if inner is None or pin is None:
        return inner
    return f"{pin}.{inner}"


def page(pins: PinnedListings, gather: Callable[[], Sequence[Resource]], start_listing: Callable[[], None],
         requested: Any, page_size: int) -> tuple[Sequence[Resource], str | None, Sequence[Resource]]:
    """One page of resources/list: (its resources, the next cursor, the listing they come from).

    No cursor: a new listing (`start_listing`, then `gather` once), pinned. A cursor of ours: its pinned
    listing. Any other string: the current listing (`gather`), unpinned, checked by offset and fingerprint.
    """
    pin: str | None = None
    if requested is None:
        start_listing()
        items = gather()
        shown, next_inner = paginate(items, None, page_size, _uri)
        if next_inner is not None:  # a listing of one page needs no pin
            pin = pins.pin(items)
        return shown, cursor(pin, next_inner), items
    inner: Any = requested  # not a string: paginate refuses it
    found = None
    if isinstance(requested, str):
        found, pin, inner = pins.split(requested)
    items = found if found is not None else gather()
    shown, next_inner = paginate(items, inner, page_size, _uri)
    return shown, cursor(pin, next_inner), items


def _uri(resource: Resource) -> str:
    return resource.uri
