"""Between the checker's positions (1-based line and column in characters, an inclusive end)
and the protocol's (0-based, in the client's code units: UTF-16 unless it chose another)."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from knowl_build.core.model import Span


class Positions:
    """The positions of one text."""

    def __init__(self, codec: PositionCodec, text: str) -> None:
        self.codec = codec
        # Only `\n` ends a line, as for the checker (`model.TextIndex`) and the protocol.
        pieces = text.split("\n")
        self.lines = [piece + "\n" for piece in pieces[:-1]] + [pieces[-1]]

    def line_text(self, line: int) -> str:
        """The 1-based line without its line ending ("" past the end)."""
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1].rstrip("\r\n")
        return ""

    def position(self, line: int, column: int) -> types.Position:
        if line > len(self.lines):
            return types.Position(line=max(line - 1, 0), character=0)
        line = max(line, 1)
        width = len(self.line_text(line))
        character = min(max(column - 1, 0), width)
        return self.codec.position_to_client_units(
            self.lines, types.Position(line=line - 1, character=character)
        )

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        """The range from (line, column) to (end_line, end_column) inclusive."""
        return types.Range(self.position(line, column), self.position(end_line, end_column + 1))

    def span(self, span: Span) -> types.Range:
        return self.range(span.line, span.column, span.end_line, span.end_column)

    def line_start(self, line: int) -> types.Range:
        point = self.position(line, 1)
        return types.Range(point, point)

    def cursor(self, position: types.Position) -> tuple[int, int]:
        """The protocol's position as a 1-based (line, column) in characters."""
        if position.line >= len(self.lines):
            return position.line + 1, 1
        server = self.codec.position_from_client_units(self.lines, position)
        return server.line + 1, server.character + 1
