"""Splitting a page into its frontmatter block and its body (SPEC 2)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Split:
    frontmatter: str | None  # the YAML text between the fences; None when there is no block
    fm_offset: int  # character offset of the YAML text
    body_offset: int  # character offset of the first body character
    unclosed: bool  # an opening fence without a closing one


def _is_fence(line: str) -> bool:
    if line.endswith("\r"):
        line = line[:-1]
    return line.rstrip(" \t") == "---"


def split(text: str) -> Split:
    """Find the frontmatter block: first line `---`, closed by the next `---` line."""
    first_end = text.find("\n")
    first = text if first_end == -1 else text[:first_end]
    if not _is_fence(first):
        return Split(None, 0, 0, False)
    if first_end == -1:
        return Split(None, 0, len(text), True)
    start = first_end + 1
    pos = start
    while pos <= len(text):
        end = text.find("\n", pos)
        line = text[pos:] if end == -1 else text[pos:end]
        if _is_fence(line):
            body = len(text) if end == -1 else end + 1
            return Split(text[start:pos], start, body, False)
        if end == -1:
            break
        pos = end + 1
    return Split(None, 0, start, True)
