"""Minimal frontmatter edits: change only the lines a write must, keep every other byte.

Edits are computed on the composed YAML nodes (which know their character offsets) and
applied to the original text, so key order, comments, quoting and blank lines survive.
Block and flow styles are both handled.

Offsets are not meaning, though: an alias shares its anchor's node (and so its position), an
explicit key (`? key` / `: value`) puts the colon somewhere else, a value may carry an anchor
that a later alias needs. So every operation is also modelled on the values the frontmatter
means, and its result is parsed again and compared with that model: the edit is kept only if
the new frontmatter means exactly the old one with the intended change applied (same keys in
the same order, same values and types, aliases still defined, the body untouched). Anything
else is refused with `EditError`, and nothing is written.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knowl_build.core.errors import KnowlError
from knowl_build.parse.frontmatter import split
from knowl_build.parse.yamlnodes import YamlProblem, YMap, YNode, YScalar, YSeq, compose, key_text

_BOM = "\ufeff"
UNSAFE = "cannot edit this frontmatter layout safely (anchors/explicit keys)"
_ALIAS = re.compile(r"\*[^\s,\[\]{}]+")
_FLOW = re.compile(r"(?:[&!][^\s,\[\]{}]*\s+)*[\[{]")

# What a frontmatter means, as comparable values: a scalar is (type, repr) so that `1`, `1.0`,
# `true` and `"1"` all differ; a mapping keeps its pairs in order, repeated keys included.
Meaning = Any
_NULL = ("scalar", "NoneType", "None")
Edit = tuple[int, int, str]


class EditError(KnowlError):
    """The page cannot be edited safely (invalid frontmatter, or a layout whose edit would not
    mean what was intended): the write is refused (exit 1) and nothing is written."""

    exit_code = 1


def _scalar(value: Any) -> tuple[str, str, str]:
    return ("scalar", type(value).__name__, repr(value))


def _meaning(node: YNode | None) -> Meaning:
    if node is None:  # an empty frontmatter is an empty mapping
        return ["map", []]
    if isinstance(node, YScalar):
        return _scalar(node.value)
    if isinstance(node, YSeq):
        return ["seq", [_meaning(item) for item in node.items]]
    return ["map", [[key_text(k), _meaning(k), _meaning(v)] for k, v in node.items]]


def _last(pairs: list[list[Any]], name: str) -> int | None:
    """The pair a key names: the last of repeated keys, as the page parser reads them."""
    found = [i for i, pair in enumerate(pairs) if pair[0] == name]
    return found[-1] if found else None


def _model_get(root: Meaning, path: list[str]) -> Meaning | None:
    current = root
    for name in path:
        if not (isinstance(current, list) and current[0] == "map"):
            return None
        index = _last(current[1], name)
        if index is None:
            return None
        current = current[1][index][2]
    return current


def _model_set(root: Meaning, path: list[str], items: list[tuple[str, Meaning]]) -> None:
    """Set keys of the mapping at `path`, creating it (or replacing a null) as needed."""
    current = root
    for name in path:
        pairs = current[1]
        index = _last(pairs, name)
        if index is None:
            pairs.append([name, _scalar(name), ["map", []]])
            index = len(pairs) - 1
        elif pairs[index][2] == _NULL:  # `meta:` or `meta: ~` counts as absent
            pairs[index][2] = ["map", []]
        current = pairs[index][2]
        if not (isinstance(current, list) and current[0] == "map"):
            raise EditError(f"'{'.'.join(path)}' is not a mapping")
    for name, value in items:
        index = _last(current[1], name)
        if index is None:
            current[1].append([name, _scalar(name), value])
        else:
            current[1][index][2] = value


def _literal(literal: str) -> Meaning:
    """What a YAML literal (`"2026-01-01T00:00:00Z"`, `null`, `superseded`) means."""
    try:
        root = compose(literal).root
    except YamlProblem:
        root = None
    if not isinstance(root, YScalar):
        raise EditError(f"{literal!r} is not a plain YAML value")
    return _scalar(root.value)


@dataclass(slots=True)
class FrontmatterEditor:
    """Edits one page's frontmatter, one verified operation at a time: each operation works
    on the result of the ones before it, so two removals from one list or a mapping created by
    one operation and filled by the next need nothing special."""

    text: str  # the page's text (after any BOM) with every operation so far applied
    original: str = ""  # the text as it was given (without a BOM)
    bom: str = ""  # a leading byte-order mark, set aside while editing and given back
    newline: str = "\n"
    offset: int = 0  # offset of the frontmatter's YAML text
    fm_end: int = 0  # offset of the closing fence line
    body_offset: int = 0
    root: YMap | None = None
    changed: bool = False

    @classmethod
    def of(cls, text: str) -> FrontmatterEditor:
        """An editor for a page's text. One leading byte-order mark is set aside (SPEC 2
        ignores it; the fence must come first) and given back by `result`: editing behind it
        would add a second frontmatter block."""
        bom = _BOM if text.startswith(_BOM) else ""
        text = text[len(bom) :]
        newline = "\r\n" if "\r\n" in text[: text.find("\n") + 1] else "\n"
        parts = split(text)
        if parts.unclosed:
            raise EditError("frontmatter fence is not closed")
        # No frontmatter yet: edit a copy that starts with an empty block.
        working = text if parts.frontmatter is not None else f"---{newline}---{newline}{text}"
        editor = cls(working, original=text, bom=bom, newline=newline)
        editor._load()
        return editor

    def _load(self) -> None:
        parts = split(self.text)
        if parts.frontmatter is None or parts.unclosed:  # `of` and `_apply` make sure of it
            raise EditError("frontmatter fence is not closed")
        try:
            composed = compose(parts.frontmatter)
        except YamlProblem as problem:
            raise EditError(f"frontmatter is {problem.message}") from None
        if composed.root is not None and not isinstance(composed.root, YMap):
            raise EditError("frontmatter is not a mapping")
        self.offset = parts.fm_offset
        self.fm_end = parts.fm_offset + len(parts.frontmatter)
        self.body_offset = parts.body_offset
        self.root = composed.root

    def result(self) -> str:
        return self.bom + (self.text if self.changed else self.original)

    # -- lookups ----------------------------------------------------------------------

    def node(self, path: list[str]) -> YNode | None:
        current: YNode | None = self.root
        for name in path:
            if not isinstance(current, YMap):
                return None
            entry = self._entry(current, name)
            current = entry[1] if entry is not None else None
        return current

    def _entry(self, mapping: YMap, name: str) -> tuple[YScalar, YNode] | None:
        """The entry a key names: the last of repeated keys, as the page parser reads them."""
        found = [(k, v) for k, v in mapping.items if key_text(k) == name]
        return found[-1] if found else None

    def _abs(self, offset: int) -> int:
        return self.offset + offset

    def _line_start(self, pos: int) -> int:
        return self.text.rfind("\n", 0, pos) + 1

    def _line_end(self, pos: int) -> int:
        """Offset just after the newline ending the line that holds `pos`."""
        end = self.text.find("\n", pos)
        return len(self.text) if end == -1 else end + 1

    def _flow(self, node: YMap | YSeq) -> bool:
        """Whether the collection is written in flow style (`[...]`, `{...}`), after any
        anchor or tag it carries."""
        return _FLOW.match(self.text, self._abs(node.start)) is not None

    def _value_end(self, key: YScalar, value: YNode) -> int:
        """Where `value` ends in the text. An alias shares its anchor's node, whose position
        is the anchor's: the alias itself is the `*name` written after its key."""
        if value.start >= key.end:
            return self._abs(value.end)
        alias = _ALIAS.search(self.text, self._abs(key.end), self.fm_end)
        if alias is None:
            raise EditError(f"{UNSAFE}: an alias cannot be located; edit it by hand")
        return alias.end()

    # -- verified operations ------------------------------------------------------------

    def _apply(self, what: str, edits: list[Edit], expected: Meaning) -> None:
        """Apply `edits` if the frontmatter they give means `expected`, else refuse."""
        text = self.text
        # From the end backwards; of two insertions at one place, the later one is applied
        # first, so they read in the order they were made.
        ordered = sorted(enumerate(edits), key=lambda e: (e[1][0], e[1][1], e[0]), reverse=True)
        for _, (start, end, replacement) in ordered:
            if not 0 <= start <= end <= len(text):
                raise EditError(f"{UNSAFE}: {what} has no place to go; edit it by hand")
            text = text[:start] + replacement + text[end:]
        parts = split(text)
        problem = None
        if parts.frontmatter is None or parts.unclosed:
            problem = "would break the frontmatter block"
        elif text[parts.body_offset :] != self.text[self.body_offset :]:
            problem = "would change the body"
        else:
            try:
                composed = compose(parts.frontmatter)
            except YamlProblem:
                problem = "would not be valid YAML"
            else:
                if not isinstance(composed.root, YMap) or _meaning(composed.root) != expected:
                    problem = "would change what other keys or values mean"
        if problem is not None:
            raise EditError(f"{UNSAFE}: {what} {problem}; edit it by hand")
        if text != self.text:
            self.text = text
            self.changed = True
            self._load()

    def _model(self, change: Callable[[Meaning], None]) -> Meaning:
        expected = copy.deepcopy(_meaning(self.root))
        change(expected)
        return expected

    def set_scalar(self, path: list[str], literal: str) -> None:
        """Set `path` to the YAML text `literal` (already quoted as it must be written);
        a missing key is appended at the end of its mapping, creating parents as needed."""
        value = _literal(literal)
        expected = self._model(lambda m: _model_set(m, path[:-1], [(path[-1], value)]))
        node = self.node(path)
        if isinstance(node, YScalar):
            edits = [self._replace(path, node, literal)]
        elif node is not None:
            raise EditError(f"'{'.'.join(path)}' is not a plain value")
        else:
            edits = self._append(path, literal)
        self._apply(f"setting '{'.'.join(path)}'", edits, expected)

    def set_many(self, path: list[str], items: list[tuple[str, str]]) -> None:
        """Set several keys of the mapping at `path` at once (creating it when missing, or
        when it is null: `meta:` and `meta: ~` count as absent)."""
        if not items:
            return
        values = [(key, _literal(literal)) for key, literal in items]
        expected = self._model(lambda m: _model_set(m, path, values))
        node = self.node(path)
        edits: list[Edit] = []
        if node is None or _is_null(node):
            first, rest = items[0], items[1:]
            edits = self._append([*path, first[0]], first[1], extra=rest)
        elif not isinstance(node, YMap):
            raise EditError(f"'{'.'.join(path)}' is not a mapping")
        elif not node.items:  # an empty flow mapping `{}`: write its entries inline
            inline = ", ".join(f"{k}: {v}" for k, v in items)
            edits = [(self._abs(node.start), self._abs(node.end), f"{{{inline}}}")]
        else:
            pending = []
            for key, literal in items:
                child = self.node([*path, key])
                if isinstance(child, YScalar):
                    edits.append(self._replace([*path, key], child, literal))
                elif child is not None:
                    raise EditError(f"'{'.'.join([*path, key])}' is not a plain value")
                else:
                    pending.append((key, literal))
            if pending:
                first, rest = pending[0], pending[1:]
                edits += self._append([*path, first[0]], first[1], extra=rest)
        self._apply(f"setting '{'.'.join(path)}'", edits, expected)

    def remove_list_item(self, path: list[str], value: str) -> bool:
        """Remove the first item of the list at `path` that is the string `value`; the last
        item leaves `key: []`. False when there is no such item."""
        seq = self.node(path)
        if not isinstance(seq, YSeq):
            return False
        wanted = _scalar(value)
        index = next((i for i, n in enumerate(seq.items) if _meaning(n) == wanted), None)
        if index is None:
            return False

        def change(model: Meaning) -> None:
            items = _model_get(model, path)
            assert isinstance(items, list) and items[0] == "seq"
            items[1].remove(wanted)

        expected = self._model(change)
        spans = [(n.start, n.end) for n in seq.items]
        edits = self._remove_from_collection(path, seq, index, spans, "[]")
        self._apply(f"removing an item of '{'.'.join(path)}'", edits, expected)
        return True

    def remove_key(self, path: list[str], name: str) -> bool:
        """Remove key `name` of the mapping at `path`; the last key leaves `key: {}`."""
        mapping = self.node(path)
        if not isinstance(mapping, YMap):
            return False
        found = [i for i, (k, _) in enumerate(mapping.items) if key_text(k) == name]
        if not found:
            return False
        index = found[-1]

        def change(model: Meaning) -> None:
            pairs = _model_get(model, path)
            assert isinstance(pairs, list) and pairs[0] == "map"
            del pairs[1][index]

        expected = self._model(change)
        spans = [(k.start, v.end) for k, v in mapping.items]
        edits = self._remove_from_collection(path, mapping, index, spans, "{}")
        self._apply(f"removing '{'.'.join([*path, name])}'", edits, expected)
        return True

    def rename(self, path: list[str], old: str, new: str) -> bool:
        """Write `new` in place of the string `old`: each item of the list at `path` that is
        `old`, or the key `old` of the mapping at `path`. False when there is none."""
        node = self.node(path)
        if isinstance(node, YSeq):
            at = [i for i, n in enumerate(node.items) if _meaning(n) == _scalar(old)]
            tokens = [node.items[i] for i in at]
        elif isinstance(node, YMap):
            at = [i for i, (k, _) in enumerate(node.items) if key_text(k) == old][-1:]
            tokens = [node.items[i][0] for i in at]
        else:
            return False
        if not at or not all(isinstance(t, YScalar) for t in tokens):
            return False

        def change(model: Meaning) -> None:
            entries = _model_get(model, path)
            assert isinstance(entries, list)
            for i in at:
                if entries[0] == "seq":
                    entries[1][i] = _scalar(new)
                else:
                    entries[1][i][:2] = [new, _scalar(new)]

        expected = self._model(change)
        edits = [(self._abs(t.start), self._abs(t.end), self._string(t, new)) for t in tokens]
        self._apply(f"renaming '{old}' in '{'.'.join(path)}'", edits, expected)
        return True

    def _string(self, token: YNode, value: str) -> str:
        """`value` as a YAML string written where `token` is: quoted as it was, plain when
        plain text reads as that string."""
        first = self.text[self._abs(token.start)]
        if first == "'":
            return "'" + value.replace("'", "''") + "'"
        try:
            plain_ok = first != '"' and _literal(value) == _scalar(value)
        except EditError:
            plain_ok = False
        return value if plain_ok else json.dumps(value, ensure_ascii=False)

    # -- edits on the current text ------------------------------------------------------

    def _replace(self, path: list[str], node: YScalar, literal: str) -> Edit:
        if node.start == node.end:  # an empty value (`key:`): written after the colon
            at = self._key_line_end(path)
            return (at, at, f" {literal}")
        return (self._abs(node.start), self._abs(node.end), literal)

    def _remove_from_collection(
        self,
        path: list[str],
        node: YMap | YSeq,
        index: int,
        spans: list[tuple[int, int]],
        empty: str,
    ) -> list[Edit]:
        start, end = (self._abs(spans[index][0]), self._abs(spans[index][1]))
        flow = self._flow(node)
        if len(spans) == 1:
            if flow:
                return [(self._abs(node.start), self._abs(node.end), empty)]
            # The last item of a block collection: `key: []` (or `{}`), items removed.
            key_end = self._key_line_end(path)
            return [(key_end, self._line_end(max(start, end - 1)), f" {empty}{self.newline}")]
        if flow:
            if index + 1 < len(spans):
                return [(start, self._abs(spans[index + 1][0]), "")]
            return [(self._abs(spans[index - 1][1]), end, "")]
        return [(self._line_start(start), self._line_end(max(start, end - 1)), "")]

    def _key_line_end(self, path: list[str]) -> int:
        """Offset just after `key:` of the value at `path` (before its newline)."""
        parent = self.node(path[:-1])
        assert isinstance(parent, YMap)
        entry = self._entry(parent, path[-1])
        assert entry is not None
        return self.text.find(":", self._abs(entry[0].end)) + 1

    def _append(
        self, path: list[str], literal: str, extra: list[tuple[str, str]] | None = None
    ) -> list[Edit]:
        """The edits that add `path` (and `extra` keys beside it): at the end of the deepest
        mapping that exists, or in place of a null (`meta:`, `meta: ~`), creating the
        mappings between."""
        depth = 0
        parent: YNode | None = self.root
        while depth < len(path) - 1:
            child = self.node(path[: depth + 1])
            if child is None:
                break
            if _is_null(child):
                return self._fill_null(path[: depth + 1], path[depth + 1 :], literal, extra)
            if not isinstance(child, YMap):
                raise EditError(f"'{'.'.join(path[: depth + 1])}' is not a mapping")
            parent = child
            depth += 1
        missing = path[depth:]
        extra = extra or []
        if parent is None:
            # Empty frontmatter: write at its end, unindented.
            return [(self.fm_end, self.fm_end, self._block(missing, literal, 0, extra))]
        assert isinstance(parent, YMap)
        if self._flow(parent):
            entries = ", ".join(f"{k}: {v}" for k, v in [(missing[-1], literal), *extra])
            text = (
                entries
                if len(missing) == 1
                else f"{missing[0]}: {_flow_value(missing[1:-1], entries)}"
            )
            at = self._abs(parent.end) - 1
            return [(at, at, f"{', ' if parent.items else ''}{text}")]
        first_key = parent.items[0][0]
        indent = self._abs(first_key.start) - self._line_start(self._abs(first_key.start))
        last_key, last_value = parent.items[-1]
        end = self._value_end(last_key, last_value)
        # The line that holds the value's last character (an empty value: its key's line).
        last = (
            max(self._abs(last_value.start), end - 1)
            if last_value.start >= last_key.end
            else end - 1
        )
        at = min(self._line_end(last), self.fm_end)
        prefix = "" if at == 0 or self.text[at - 1 : at] == "\n" else self.newline
        return [(at, at, prefix + self._block(missing, literal, indent, extra))]

    def _fill_null(
        self,
        path: list[str],
        names: list[str],
        literal: str,
        extra: list[tuple[str, str]] | None,
    ) -> list[Edit]:
        """A mapping written in place of the null at `path` (`meta:` or `meta: ~`)."""
        parent = self.node(path[:-1])
        assert isinstance(parent, YMap)
        entry = self._entry(parent, path[-1])
        assert entry is not None
        key, value = entry
        if value.start < key.end:
            raise EditError(f"{UNSAFE}: '{'.'.join(path)}' is an alias; edit it by hand")
        start, end = self._abs(value.start), self._abs(value.end)
        if self._flow(parent):
            entries = ", ".join(f"{k}: {v}" for k, v in [(names[-1], literal), *(extra or [])])
            pad = "" if start > end or self.text[start - 1 : start] in (" ", "\t") else " "
            return [(start, end, pad + _flow_value(names[:-1], entries))]
        colon = self.text.find(":", self._abs(key.end))
        key_start = self._abs(key.start)
        indent = key_start - self._line_start(key_start) + 2
        edits: list[Edit] = []
        if end > start:  # an explicit null (`~`, `null`) goes, with the space before it
            edits.append((colon + 1, end, ""))
        at = min(self._line_end(max(colon, end - 1)), self.fm_end)
        prefix = "" if self.text[at - 1 : at] == "\n" else self.newline
        edits.append((at, at, prefix + self._block(names, literal, indent, extra)))
        return edits

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


def _is_null(node: YNode) -> bool:
    return isinstance(node, YScalar) and node.value is None


def _flow_value(wrappers: list[str], entries: str) -> str:
    """A flow mapping of `entries`, inside one mapping per name of `wrappers`:
    `{a: {b: {<entries>}}}` for wrappers [a, b]."""
    value = f"{{{entries}}}"
    for name in reversed(wrappers):
        value = f"{{{name}: {value}}}"
    return value
