"""Bytes to text: UTF-8, without a leading byte-order mark (SPEC 2), or None for a file that
is not text."""

from __future__ import annotations

_BOM = "\ufeff"


def decode(data: bytes) -> str | None:
    """UTF-8 text without a leading byte-order mark, or None for binary or other encodings."""
    if b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text[1:] if text.startswith(_BOM) else text
