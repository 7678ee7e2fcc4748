"""Minimal frontmatter edits: change only the lines a write must, keep every other byte.

Edits are computed on the composed YAML nodes (which know their character offsets) and
applied to the original text, so key order, comments, quoting and blank lines survive.
Block and flow styles are both handled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from knowl_build.errors import KnowlError
from knowl_build.parse.frontmatter import split
from knowl_build.parse.yamlnodes import YamlProblem, YMap, YNode, YScalar, YSeq, compose, key_text

_BOM = "\ufeff"


class EditError(KnowlError):
    """The page cannot be edited safely (for example, its frontmatter is invalid)."""


@dataclass(slots=True)
class FrontmatterEditor:
    text: str
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    offset: int = 0
    root: YMap | None = None
    fm_end: int = 0  # offset of the closing fence line
    newline: str = "\n"
    bom: str = ""  # a leading byte-order mark, set aside while editing and given back

    @classmethod
    def of(cls, text: str) -> FrontmatterEditor:
        """An editor for a page's text. One leading byte-order mark is set aside (SPEC 2
        ignores it; the fence must come first) and given back by `result`: editing behind it
        would add a second frontmatter block."""
        if text.startswith(_BOM):
            editor = cls._of(text[len(_BOM) :])
            editor.bom = _BOM
            return editor
        return cls._of(text)

    @classmethod
    def _of(cls, text: str) -> FrontmatterEditor:
        editor = cls(text)
        editor.newline = "\r\n" if "\r\n" in text[: text.find("\n") + 1] else "\n"
        parts = split(text)
        if parts.unclosed:
            raise EditError("frontmatter fence is not closed")
        if parts.frontmatter is None:
            # No frontmatter yet: edit a copy that starts with an empty block.
            return cls._of(f"---{editor.newline}---{editor.newline}{text}")
        try:
            composed = compose(parts.frontmatter)
        except YamlProblem as problem:
            raise EditError(f"frontmatter is {problem.message}") from None
        if composed.root is not None and not isinstance(composed.root, YMap):
            raise EditError("frontmatter is not a mapping")
        editor.offset = parts.fm_offset
        editor.root = composed.root
        editor.fm_end = parts.fm_offset + len(parts.frontmatter)
        return editor

    # -- lookups ----------------------------------------------------------------------

    def node(self, path: list[str]) -> YNode | None:
        current: YNode | None = self.root
        for name in path:
            if not isinstance(current, YMap):
                return None
            current = next((v for k, v in current.items if key_text(k) == name), None)
        return current

    def _entry(self, mapping: YMap, name: str) -> tuple[YScalar, YNode] | None:
        return next(((k, v) for k, v in mapping.items if key_text(k) == name), None)

    def _abs(self, offset: int) -> int:
        return self.offset + offset

    def _line_start(self, pos: int) -> int:
        return self.text.rfind("\n", 0, pos) + 1

    def _line_end(self, pos: int) -> int:
        """Offset just after the newline ending the line that holds `pos`."""
        end = self.text.find("\n", pos)
        return len(self.text) if end == -1 else end + 1

    # -- edits --------------------------------------------------------------------------

    def remove_list_item(self, path: list[str], value: str) -> bool:
        seq = self.node(path)
        if not isinstance(seq, YSeq):
            return False
        index = next(
            (i for i, n in enumerate(seq.items) if isinstance(n, YScalar) and n.value == value),
            None,
        )
        if index is None:
            return False
        self._remove_from_collection(path, seq, index, [(n.start, n.end) for n in seq.items], "[]")
        return True

    def remove_key(self, path: list[str], name: str) -> bool:
        mapping = self.node(path)
        if not isinstance(mapping, YMap):
            return False
        index = next((i for i, (k, _) in enumerate(mapping.items) if key_text(k) == name), None)
        if index is None:
            return False
        spans = [(k.start, v.end) for k, v in mapping.items]
        self._remove_from_collection(path, mapping, index, spans, "{}")
        return True

    def _remove_from_collection(
        self,
        path: list[str],
        node: YMap | YSeq,
        index: int,
        spans: list[tuple[int, int]],
        empty: str,
    ) -> None:
        start, end = (self._abs(spans[index][0]), self._abs(spans[index][1]))
        flow = self.text[self._abs(node.start)] in "[{"
        if len(spans) == 1:
            if flow:
                self.edits.append((self._abs(node.start), self._abs(node.end), empty))
            else:
                # The last item of a block collection: `key: []` (or `{}`), items removed.
                key_end = self._key_line_end(path)
                self.edits.append(
                    (key_end, self._line_end(max(start, end - 1)), f" {empty}{self.newline}")
                )
            return
        if flow:
            if index + 1 < len(spans):
                self.edits.append((start, self._abs(spans[index + 1][0]), ""))
            else:
                self.edits.append((self._abs(spans[index - 1][1]), end, ""))
            return
        self.edits.append((self._line_start(start), self._line_end(max(start, end - 1)), ""))

    def _key_line_end(self, path: list[str]) -> int:
        """Offset just after `key:` of the collection at `path` (before its newline)."""
        parent = self.node(path[:-1])
        assert isinstance(parent, YMap)
        entry = self._entry(parent, path[-1])
        assert entry is not None
        key = entry[0]
        colon = self.text.find(":", self._abs(key.end))
        return colon + 1

    def set_scalar(self, path: list[str], literal: str) -> None:
        """Set `path` to the YAML text `literal` (already quoted as it must be written);
        a missing key is appended at the end of its mapping, creating parents as needed."""
        node = self.node(path)
        if isinstance(node, YScalar):
            self.edits.append((self._abs(node.start), self._abs(node.end), literal))
            return
        if node is not None:
            raise EditError(f"'{'.'.join(path)}' is not a plain value")
        self._append(path, literal)

    def set_many(self, path: list[str], items: list[tuple[str, str]]) -> None:
        """Set several keys of the mapping at `path` at once (creating it when missing)."""
        node = self.node(path)
        if node is None or (
            isinstance(node, YMap) and not node.items and self.text[self._abs(node.start)] == "{"
        ):
            if node is not None:  # an empty flow mapping `{}`: write its entries inline
                inline = ", ".join(f"{k}: {v}" for k, v in items)
                self.edits.append((self._abs(node.start), self._abs(node.end), f"{{{inline}}}"))
                return
            first, rest = items[0], items[1:]
            self._append([*path, first[0]], first[1], extra=rest)
            return
        if not isinstance(node, YMap):
            raise EditError(f"'{'.'.join(path)}' is not a mapping")
        pending = []
        for key, literal in items:
            if isinstance(self.node([*path, key]), YScalar):
                self.set_scalar([*path, key], literal)
            else:
                pending.append((key, literal))
        if pending:
            first, rest = pending[0], pending[1:]
            self._append([*path, first[0]], first[1], extra=rest)

    def _append(
        self, path: list[str], literal: str, extra: list[tuple[str, str]] | None = None
    ) -> None:
        nl = self.newline
        # Find the deepest existing mapping along the path.
        depth = 0
        parent: YNode | None = self.root
        while depth < len(path) - 1:
            child = self.node(path[: depth + 1])
            if not isinstance(child, YMap):
                break
            parent = child
            depth += 1
        if depth < len(path) - 1 and self.node(path[: depth + 1]) is not None:
            raise EditError(f"'{'.'.join(path[: depth + 1])}' is not a mapping")
        missing = path[depth:]
        extra = extra or []
        if parent is None or (isinstance(parent, YMap) and not parent.items and depth == 0):
            # Empty frontmatter: write at its end, unindented.
            at = self.fm_end
            self.edits.append((at, at, self._block(missing, literal, 0, extra)))
            return
        assert isinstance(parent, YMap)
        if self.text[self._abs(parent.start)] == "{":
            entries = ", ".join(f"{k}: {v}" for k, v in [(missing[-1], literal), *extra])
            if len(missing) == 1:
                text = entries
            else:
                value = f"{{{entries}}}"
                for name in reversed(missing[1:-1]):
                    value = f"{{{name}: {value}}}"
                text = f"{missing[0]}: {value}"
            at = self._abs(parent.end) - 1
            sep = ", " if parent.items else ""
            self.edits.append((at, at, f"{sep}{text}"))
            return
        first_key = parent.items[0][0] if parent.items else None
        if first_key is None:
            raise EditError(f"cannot add to the empty mapping '{'.'.join(path[:depth])}'")
        indent = self._abs(first_key.start) - self._line_start(self._abs(first_key.start))
        last_value = parent.items[-1][1]
        at = self._line_end(max(self._abs(last_value.start), self._abs(last_value.end) - 1))
        if at > self.fm_end:
            at = self.fm_end
        prefix = "" if self.text[at - 1 : at] == "\n" or at == 0 else nl
        self.edits.append((at, at, prefix + self._block(missing, literal, indent, extra)))

    def _block(
        self,
        names: list[str],
        literal: str,
        indent: int,
        extra: list[tuple[str, str]] | None = None,
    ) -> str:
        lines = []
        for i, name in enumerate(names):
            pad = " " * (indent + 2 * i)
            last = i == len(names) - 1
            lines.append(f"{pad}{name}: {literal}" if last else f"{pad}{name}:")
        pad = " " * (indent + 2 * (len(names) - 1))
        lines.extend(f"{pad}{key}: {value}" for key, value in extra or [])
        return self.newline.join(lines) + self.newline

    def result(self) -> str:
        text = self.text
        # From the end backwards; of two insertions at one place, the later one is applied
        # first, so they read in the order they were made.
        ordered = sorted(
            enumerate(self.edits), key=lambda e: (e[1][0], e[1][1], e[0]), reverse=True
        )
        for _, (start, end, replacement) in ordered:
            text = text[:start] + replacement + text[end:]
        return self.bom + text


def quoted(text: str) -> str:
    """A YAML double-quoted string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
