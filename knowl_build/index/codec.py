"""The codec knowl writes its index with: Whoosh's W3 codec, passed to every writer
(`ix.writer(codec=...)`), whose posting blocks are pickled with protocol 5.

Whoosh pickles a block with protocol 2, which spells each `bytes` value (a term's frequency)
as a call of `_codecs.encode`: a global that the restricted unpickler never loads, so the
reader could not read the block. Protocol 5 spells it as plain bytes, in frames the bounded
unpickler reads in one pass. Every other byte is the W3 codec's; the segments it makes name
the plain W3 codec, so a table of contents never names a knowl class."""

from __future__ import annotations

import pickle
import zlib
from typing import Any

from whoosh.codec.whoosh3 import (
    COMPRESSION_MIN_SIZE,
    WHOOSH3_HEADER_MAGIC,
    W3Codec,
    W3PostingsWriter,
    W3Segment,
)
from whoosh.util.numeric import length_to_byte

PROTOCOL = 5


class _PostingsWriter(W3PostingsWriter):  # type: ignore[misc]
    """W3's postings writer, its blocks pickled with `PROTOCOL`."""

    def _write_block(self, last: bool = False) -> None:
        """`W3PostingsWriter._write_block` (whoosh3 3.54.0, pinned exactly), the pickle
        protocol aside: a block's length (negative for the last), its header, its data."""
        if not self._blockcount:
            self._postfile.write(WHOOSH3_HEADER_MAGIC)
        self._terminfo.add_block(self)
        data = pickle.dumps((self._mini_ids(), self._mini_weights(), self._mini_values()), PROTOCOL)
        level = self._compression if len(data) >= COMPRESSION_MIN_SIZE else 0
        if level:
            data = zlib.compress(data, level)
        ids = self._ids
        header = (
            len(ids),
            ids[-1],
            self._maxweight,
            level,
            length_to_byte(self._minlength),
            length_to_byte(self._maxlength),
        )
        info = pickle.dumps(header, PROTOCOL)
        size = len(info) + len(data)
        self._postfile.write_int(-size if last else size)
        self._postfile.write(info)
        self._postfile.write(data)
        self._blockcount += 1
        self._new_block()


class KnowlCodec(W3Codec):  # type: ignore[misc]
    """The W3 codec with `_PostingsWriter`; its new segments carry a plain W3Codec (what
    the table of contents pickles, and what reads the segment back)."""

    def postings_writer(self, dbfile: Any, byteids: bool = False) -> Any:
        return _PostingsWriter(
            dbfile,
            blocklimit=self._blocklimit,
            byteids=byteids,
            compression=self._compression,
            inlinelimit=self._inlinelimit,
        )

    def new_segment(self, storage: Any, indexname: str) -> Any:
        codec = W3Codec(self._blocklimit, self._compression, self._inlinelimit)
        return W3Segment(codec, indexname)
