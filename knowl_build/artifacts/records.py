"""`pages.jsonl.gz`: the page records, one gzip member per record.

Decompressed, the file is the JSON Lines of SPEC 6.1, one record per line (`zcat`, or any
gzip reader, reads the members as one stream). Each record is a member of its own, so a
page's catalog offset is where its member starts: a reader decompresses that record alone,
and an incremental build copies the members of unchanged pages byte for byte.

A member from elsewhere is untrusted: it must be one complete member holding one line. What
members decompress to is bounded by `budget` of what was read: a member read alone by its
own size, the records read whole by the file's size (so that many members, each within its
own budget, do not add up to more). Honest records expand three to five times; a
compression bomb is refused before it fills memory."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from knowl_build.artifacts.layout import RECORDS
from knowl_build.core.errors import ArtifactError

# Measured on 10,000 synthetic pages: level 1 writes 17.8 MB in 0.8 s, level 6 16.4 MB in
# 1.1 s (from 64.5 MB): the duplicate body compresses away at any level. In the goals bench
# level 6 took the artifact from 1.81x to 1.75x the corpus and the cold build from 1.15x to
# 1.23x bare Whoosh: level 1.
LEVEL = 1
GZIP = 31  # zlib's window bits for a gzip header and trailer
EXPANSION, SLACK = 16, 64 << 20
CHUNK = 1 << 14  # what a reader reads at a time: an average member is under 2 kB
BOMB = "expands past its budget (a compression bomb?)"


def budget(size: int) -> int:
    """How many bytes `size` bytes of members may decompress to."""
    return SLACK + EXPANSION * size


def pack(line: bytes) -> bytes:
    """One record's line (ending in its line break) as a gzip member: the same line, the
    same bytes."""
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, GZIP)
    return packer.compress(line) + packer.flush()


def unpack(member: bytes | memoryview, offset: int, cap: int | None = None) -> bytes:
    """The line `member` (at `offset` of its file) holds: exactly one complete member
    holding exactly one line, of at most `cap` bytes when given."""
    view = memoryview(member)
    found = _inflate((view[i : i + CHUNK] for i in range(0, len(view), CHUNK)), offset, cap)
    if not found.ended or found.rest or found.read != len(view):
        raise ArtifactError(_at(offset, "not one complete gzip member"))
    return _one_line(found.line, offset)


def read_at(path: Path, offset: int) -> bytes:
    """The line of the member that starts at `offset` of the file at `path`, read only as
    far as that member goes."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            found = _inflate(iter(lambda: handle.read(CHUNK), b""), offset)
    except OSError as exc:
        raise ArtifactError(f"{RECORDS} cannot be read ({exc.strerror})") from None
    if not found.ended:
        raise ArtifactError(_at(offset, "truncated"))
    return _one_line(found.line, offset)


class _Inflated(NamedTuple):
    line: bytes
    ended: bool  # the member's trailer was read
    rest: bool  # bytes followed the trailer in the last chunk read
    read: int  # bytes read


def _inflate(
    chunks: Iterator[bytes | memoryview], offset: int, cap: int | None = None
) -> _Inflated:
    """Decompress the member at the start of `chunks` until it ends. Checked after each
    chunk: past `cap` or the budget of the bytes read so far, it is refused, so memory peaks
    at the budget and one chunk's expansion (16 MiB at most), twice that while joining."""
    reader = zlib.decompressobj(GZIP)
    parts: list[bytes] = []
    size = read = 0
    try:
        for chunk in chunks:
            read += len(chunk)
            parts.append(reader.decompress(chunk))
            size += len(parts[-1])
            if size > budget(read) or (cap is not None and size > cap):
                raise ArtifactError(_at(offset, BOMB))
            if reader.eof:
                break
    except zlib.error as exc:
        # zlib's own words (a fixed text, nothing of the data): "incorrect data check", ...
        reason = str(exc).rpartition(": ")[2]
        raise ArtifactError(_at(offset, f"not a valid gzip member ({reason})")) from None
    return _Inflated(b"".join(parts), reader.eof, bool(reader.unused_data), read)


def spans(offsets: Iterable[int], size: int) -> dict[int, int]:
    """Where each member ends, by where it starts, for members at `offsets` of a file of
    `size` bytes: each ends where the next one starts."""
    starts = sorted(set(offsets))
    if not starts:  # an empty catalog (a project with no pages yet): no member
        return {}
    return dict(zip(starts, [*starts[1:], size], strict=True))


def members(data: bytes, offsets: Iterable[int]) -> Iterator[tuple[int, bytes]]:
    """Each member of `data` at `offsets` (all of them, the file's first byte among them)
    with the line it holds, in file order; all of them together within the file's budget."""
    ends = spans(offsets, len(data))
    if data and 0 not in ends:
        raise ArtifactError(_at(0, "no record starts at the file's first byte"))
    view = memoryview(data)
    left = budget(len(data))
    for start, end in ends.items():
        line = unpack(view[start:end], start, left)
        left -= len(line)
        yield start, line


def _one_line(line: bytes, offset: int) -> bytes:
    if not line.endswith(b"\n") or line.count(b"\n") != 1:
        raise ArtifactError(_at(offset, "does not hold exactly one line"))
    return line


def _at(offset: int, problem: str) -> str:
    return f"{RECORDS}: the record at byte {offset}: {problem}"
