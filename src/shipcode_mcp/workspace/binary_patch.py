"""git's binary patches (`git diff --binary`): read, checked and applied, without any I/O.

A binary file's change is a `GIT binary patch` section after the file's header: a `literal SIZE` (the new
content whole) or `delta SIZE` (git's copy-and-insert delta against the old content) hunk, zlib-deflated
and written in git's base85 lines, then the reverse hunk (not needed here). The `index OLD..NEW` line of a
binary patch carries whole object ids, and they are the check that nothing is guessed: the file must be the
blob OLD names (a delta applied to anything else is garbage), and the result must be the blob NEW names.
Every size is bounded before anything is inflated or built (a patch is not trusted: a zlib bomb, a delta
that copies past its source, sizes that disagree are refused).
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from dataclasses import dataclass

MAX_SIZE = 16 * 1024 * 1024
"""The largest content a binary hunk may make (the writes' own bound)."""
_LENGTHS = {**{chr(ord("A") + index): index + 1 for index in range(26)},
            **{chr(ord("a") + index): index + 27 for index in range(26)}}
"""A base85 line's first character: how many bytes the line holds (A = 1 ... z = 52)."""


class BinaryPatchError(Exception):
    """A binary patch that cannot be read or does not apply; the message says why."""


@dataclass(frozen=True)
class BinaryHunk:
    """The forward hunk of a binary patch: `literal` or `delta`, the size it inflates to, the deflated bytes."""

    kind: str
    size: int
    deflated: bytes


def read_hunk(lines: list[str], index: int) -> tuple[BinaryHunk, int]:
    """The hunk whose `literal N` or `delta N` line is lines[index], and the index after its blank line."""
    head = lines[index].rstrip("\r").split(" ")
    if len(head) != 2 or head[0] not in ("literal", "delta") or not head[1].isdigit() or len(head[1]) > 12:
        raise BinaryPatchError(f"'{lines[index][:80]}' is not a binary hunk's `literal SIZE` or `delta SIZE` line")
    size = int(head[1])
    if size > MAX_SIZE:
        raise BinaryPatchError(f"a binary hunk of {size} bytes (at most {MAX_SIZE})")
    index += 1
    parts: list[bytes] = []
    held = 0
    while index < len(lines) and lines[index].rstrip("\r"):
        line = lines[index].rstrip("\r")
        length = _LENGTHS.get(line[0])
        if length is None or len(line) != 1 + (length + 3) // 4 * 5:
            raise BinaryPatchError(f"line {index + 1} is not a line of git's base85")
        try:
            parts.append(base64.b85decode(line[1:])[:length])
        except ValueError:
            raise BinaryPatchError(f"line {index + 1} is not a line of git's base85") from None
        held += length
        if held > 2 * MAX_SIZE:
            raise BinaryPatchError(f"a binary hunk of more than {2 * MAX_SIZE} deflated bytes")
        index += 1
    return BinaryHunk(head[0], size, b"".join(parts)), index + 1


def blob_id(data: bytes) -> str:
    """git's object id of a blob holding `data` (SHA-1, as `git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def apply_binary(hunk: BinaryHunk, old_id: str | None, new_id: str | None, before: bytes | None, shown: str) -> bytes:
    """The content the hunk makes of `before` (None: the file does not exist), checked against the patch's
    object ids: `before` must be the blob `old_id` names, the result the blob `new_id` names (the null id:
    no file, before a creation or after a deletion)."""
    if old_id is None or new_id is None or len(old_id) < 40 or len(new_id) < 40:
        raise BinaryPatchError(f"the binary patch of {shown} has no whole object ids on its `index` line (make it with "
                               "git diff --binary, which writes them): nothing would tell that it applies")
    if before is not None and old_id.strip("0") and blob_id(before) != old_id:
        raise BinaryPatchError(f"{shown} is not the file the binary patch was made from (its object id is "
                               f"{blob_id(before)[:12]}, the patch's {old_id[:12]})")
    if before is None and hunk.kind == "delta":
        raise BinaryPatchError(f"the binary patch of {shown} is a delta, and there is no file to apply it to")
    data = _inflate(hunk, shown)
    made = data if hunk.kind == "literal" else _apply_delta(before or b"", data, shown)
    if not new_id.strip("0"):  # the null id: a deleted file, left empty by its hunk
        if made:
            raise BinaryPatchError(f"the binary patch deletes {shown} but leaves {len(made)} bytes in it")
    elif blob_id(made) != new_id:
        raise BinaryPatchError(f"the binary patch of {shown} does not make the file its `index` line names "
                               f"({blob_id(made)[:12]}, not {new_id[:12]})")
    return made


def _inflate(hunk: BinaryHunk, shown: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(hunk.deflated, hunk.size + 1)
    except zlib.error:
        raise BinaryPatchError(f"the binary patch of {shown} does not inflate (its data is damaged)") from None
    if len(data) != hunk.size or not inflater.eof:
        raise BinaryPatchError(f"the binary patch of {shown} inflates to other than the {hunk.size} bytes it says")
    return data


def _varint(delta: bytes, index: int, shown: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if index >= len(delta) or shift > 56:
            raise BinaryPatchError(f"the delta of {shown} is cut short")
        byte = delta[index]
        value |= (byte & 0x7F) << shift
        shift += 7
        index += 1
        if not byte & 0x80:
            return value, index


def _apply_delta(source: bytes, delta: bytes, shown: str) -> bytes:
    """git's delta (as in packs): the source's size, the target's, then copies from the source and inserts."""
    source_size, index = _varint(delta, 0, shown)
    target_size, index = _varint(delta, index, shown)
    if source_size != len(source):
        raise BinaryPatchError(f"the delta of {shown} was made from {source_size} bytes, the file has {len(source)}")
    if target_size > MAX_SIZE:
        raise BinaryPatchError(f"the delta of {shown} makes {target_size} bytes (at most {MAX_SIZE})")
    out = bytearray()
    while index < len(delta):
        op = delta[index]
        index += 1
        if op & 0x80:  # copy: offset and size in the bytes its low bits name
            offset = size = 0
            for bit, shift in ((0x01, 0), (0x02, 8), (0x04, 16), (0x08, 24)):
                if op & bit:
                    if index >= len(delta):
                        raise BinaryPatchError(f"the delta of {shown} is cut short")
                    offset |= delta[index] << shift
                    index += 1
            for bit, shift in ((0x10, 0), (0x20, 8), (0x40, 16)):
                if op & bit:
                    if index >= len(delta):
                        raise BinaryPatchError(f"the delta of {shown} is cut short")
                    size |= delta[index] << shift
                    index += 1
            size = size or 0x10000
            if offset + size > len(source):
                raise BinaryPatchError(f"the delta of {shown} copies past the end of the file")
            out += source[offset:offset + size]
        elif op:  # insert the next `op` bytes
            if index + op > len(delta):
                raise BinaryPatchError(f"the delta of {shown} is cut short")
            out += delta[index:index + op]
            index += op
        else:
            raise BinaryPatchError(f"the delta of {shown} holds an operation git does not write (0)")
        if len(out) > target_size:
            raise BinaryPatchError(f"the delta of {shown} makes more than the {target_size} bytes it says")
    if len(out) != target_size:
        raise BinaryPatchError(f"the delta of {shown} makes {len(out)} bytes, not the {target_size} it says")
    return bytes(out)
