"""`pages.jsonl.gz`: the page records, one gzip member per record.

Decompressed, the file is the JSON Lines of SPEC 6.1, one record per line (`zcat`, or any
gzip reader, reads the members as one stream). Each record is a member of its own, so a
page's catalog offset is where its member starts: a reader decompresses that record alone,
and an incremental build copies the members of unchanged pages byte for byte.

A member from elsewhere is untrusted: it must be one complete member holding one line, and
it may expand to no more than `budget` of its size, so that a compression bomb is refused
before it fills memory (honest records expand three to five times)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from knowl_build.artifacts.layout import RECORDS
from knowl_build.errors import ArtifactError

# Measured on 10,000 synthetic pages: level 1 writes 17.8 MB in 0.8 s, level 6 16.4 MB in
# 1.1 s (from 64.5 MB): the duplicate body compresses away at any level.
LEVEL = 1
GZIP = 31  # zlib's window bits for a gzip header and trailer
EXPANSION, SLACK = 64, 64 << 20
CHUNK = 1 << 14  # what a reader reads at a time: an average member is under 2 kB


def budget(size: int) -> int:
    """How many bytes `size` bytes of members may decompress to."""
    return SLACK + EXPANSION * size


def pack(line: bytes) -> bytes:
    """One record's line (ending in its line break) as a gzip member: the same line, the
    same bytes."""
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, GZIP)
    return packer.compress(line) + packer.flush()


def unpack(member: bytes | memoryview, where: int) -> bytes:
    """The line `member` holds: exactly one complete member holding exactly one line
    (`where` names its offset in a problem)."""
    view = memoryview(member)
    line, reader, read = _inflate((view[i : i + CHUNK] for i in range(0, len(view), CHUNK)), where)
    if not reader.eof or reader.unused_data or read != len(view):
        raise ArtifactError(_at(where, "not one complete gzip member"))
    return _one_line(line, where)


def read_at(path: Path, offset: int) -> bytes:
    """The line of the member that starts at `offset` of the file at `path`, read only as
    far as that member goes."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            line, reader, _ = _inflate(iter(lambda: handle.read(CHUNK), b""), offset)
    except OSError as exc:
        raise ArtifactError(f"{RECORDS} cannot be read ({exc.strerror})") from None
    if not reader.eof:
        raise ArtifactError(_at(offset, "truncated"))
    return _one_line(line, offset)


def _inflate(
    chunks: Iterator[bytes | memoryview], where: int
) -> tuple[bytes, zlib._Decompress, int]:
    """Decompress one member from `chunks` until it ends; returns what it held, the
    decompressor (to ask whether the member ended) and how many bytes were read. Refuses as
    soon as the output passes the budget of the input read so far: a chunk expands a
    thousand times at most, so memory stays within the budget and one chunk's expansion."""
    reader = zlib.decompressobj(GZIP)
    parts: list[bytes] = []
    size = read = 0
    try:
        for chunk in chunks:
            read += len(chunk)
            parts.append(reader.decompress(chunk))
            size += len(parts[-1])
            if size > budget(read):
                raise ArtifactError(_at(where, "expands past its budget (a compression bomb?)"))
            if reader.eof:
                break
    except zlib.error:
        raise ArtifactError(_at(where, "not a gzip member")) from None
    return b"".join(parts), reader, read


def spans(offsets: Iterable[int], size: int) -> dict[int, int]:
    """Where each member ends, by where it starts, for members at `offsets` of a file of
    `size` bytes: each ends where the next one starts."""
    starts = sorted(set(offsets))
    return dict(zip(starts, [*starts[1:], size], strict=True))


def lines(data: bytes, offsets: Iterable[int]) -> Iterator[tuple[int, bytes]]:
    """Each member of `data` at `offsets` (all of them, the file's first byte among them)
    with the line it holds, in file order."""
    ends = spans(offsets, len(data))
    if data and 0 not in ends:
        raise ArtifactError(_at(0, "no record starts at the file's first byte"))
    view = memoryview(data)
    for start, end in ends.items():
        yield start, unpack(view[start:end], start)


def _one_line(line: bytes, where: int) -> bytes:
    if not line.endswith(b"\n") or line.count(b"\n") != 1:
        raise ArtifactError(_at(where, "does not hold exactly one line"))
    return line


def _at(offset: int, problem: str) -> str:
    return f"{RECORDS}: the record at byte {offset}: {problem}"
