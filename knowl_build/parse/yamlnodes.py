"""YAML with positions: compose with libyaml, then build values that remember where they were.

PyYAML's loaders return plain values and forget positions; findings must point at the exact
key, value or list item, so we compose the node graph and convert it ourselves. Positions are
character offsets into the text that was parsed (libyaml's marks count characters).
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass
from typing import Any, TypeAlias

import yaml

try:
    _Loader: type[Any] = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader
    sys.stderr.write(
        "knowl: notice: PyYAML was built without libyaml; YAML parsing falls back to the "
        "pure-Python loader, which is about 6x slower\n"
    )

# A YAML alias can make a few lines expand into billions of values; stop long before.
MAX_NODES = 50_000
MAX_DEPTH = 64


@dataclass(slots=True)
class YScalar:
    value: Any
    start: int
    end: int


@dataclass(slots=True)
class YMap:
    items: list[tuple[YScalar, YNode]]
    start: int
    end: int


@dataclass(slots=True)
class YSeq:
    items: list[YNode]
    start: int
    end: int


YNode: TypeAlias = YScalar | YMap | YSeq


class YamlProblem(Exception):
    """Invalid YAML: `offset` is the character offset of the problem in the parsed text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass(slots=True)
class Composed:
    root: YNode | None
    duplicates: list[YScalar]  # the second (and later) occurrence of each repeated key


def compose(text: str) -> Composed:
    """Parse one YAML document into positioned nodes; raise YamlProblem when it is invalid."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        offset = mark.index if mark is not None else 0
        raise YamlProblem(_describe(exc), offset) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(str(exc).splitlines()[0], 0) from None
    finally:
        loader.dispose()
    if node is None:
        return Composed(None, [])
    converter = _Converter(loader)
    return Composed(converter.convert(node), converter.duplicates)


def _describe(exc: yaml.MarkedYAMLError) -> str:
    problem = exc.problem or exc.context or "invalid YAML"
    return f"invalid YAML: {problem}"


class _Converter:
    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.count = 0
        self.duplicates: list[YScalar] = []
        self.open: list[int] = []  # ids of the collections being converted (alias cycles)

    def convert(self, node: yaml.Node) -> YNode:
        self.count += 1
        if self.count > MAX_NODES:
            raise YamlProblem(
                f"invalid YAML: expands to more than {MAX_NODES} values (aliases?)",
                node.start_mark.index,
            )
        if isinstance(node, yaml.CollectionNode):
            if id(node) in self.open:
                raise YamlProblem("invalid YAML: an alias refers to itself", node.start_mark.index)
            if len(self.open) >= MAX_DEPTH:
                raise YamlProblem(
                    f"invalid YAML: nested deeper than {MAX_DEPTH} levels", node.start_mark.index
                )
            self.open.append(id(node))
            try:
                return self._collection(node)
            finally:
                self.open.pop()
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or exc
            raise YamlProblem(f"invalid YAML: {problem}", node.start_mark.index) from None
        return YScalar(value, node.start_mark.index, node.end_mark.index)

    def _collection(self, node: yaml.CollectionNode) -> YNode:
        start, end = node.start_mark.index, node.end_mark.index
        if isinstance(node, yaml.MappingNode):
            items: list[tuple[YScalar, YNode]] = []
            seen: set[Any] = set()
            for key_node, value_node in node.value:
                key = self.convert(key_node)
                if not isinstance(key, YScalar):
                    raise YamlProblem("invalid YAML: a key must be a plain value", key.start)
                marker = _hashable(key.value)
                if marker in seen:
                    self.duplicates.append(key)
                seen.add(marker)
                items.append((key, self.convert(value_node)))
            return YMap(items, start, end)
        return YSeq([self.convert(item) for item in node.value], start, end)


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return (type(value).__name__, value) if isinstance(value, bool) else value


def plain(node: YNode | None) -> Any:
    """The node as ordinary Python values (mappings keep the last of repeated keys)."""
    if node is None:
        return None
    if isinstance(node, YScalar):
        return node.value
    if isinstance(node, YSeq):
        return [plain(item) for item in node.items]
    return {_key_text(key.value): plain(value) for key, value in node.items}


def json_safe(value: Any) -> Any:
    """Dates as ISO strings, bytes as text, keys as strings: values JSON can carry."""
    if isinstance(value, dict):
        return {_key_text(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return str(value)
    return value


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, dt.datetime | dt.date):
        return key.isoformat()
    return str(key)


def key_text(key: YScalar) -> str:
    return _key_text(key.value)
