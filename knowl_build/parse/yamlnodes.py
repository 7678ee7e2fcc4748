"""YAML with positions: compose with libyaml, then build values that remember where they were.

PyYAML's loaders return plain values and forget positions; findings must point at the exact
key, value or list item, so we compose the node graph and convert it ourselves. Positions are
character offsets into the text that was parsed (libyaml's marks count characters).
"""

from __future__ import annotations

import datetime as dt
import math
import re
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
    # The scalar as written when YAML read it as a number, a date or a boolean (`0.840`,
    # `2024-01-05`, `yes`): what a field that expects text takes (see `as_text`).
    text: str | None = None


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
    try:
        loader = _Loader(text)  # the pure-Python loader checks the characters here
    except UnicodeEncodeError as exc:
        # Only a str from a caller can hold a lone surrogate; decoded files never do.
        raise YamlProblem("invalid YAML: the text is not valid Unicode", exc.start) from None
    except yaml.reader.ReaderError as exc:
        raise _reader_problem(exc, text) from None
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        offset = mark.index if mark is not None else 0
        raise YamlProblem(_describe(exc), offset) from None
    except yaml.reader.ReaderError as exc:
        raise _reader_problem(exc, text) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(str(exc).splitlines()[0], 0) from None
    finally:
        loader.dispose()
    if node is None:
        return Composed(None, [])
    converter = _Converter(loader)
    return Composed(converter.convert(node), converter.duplicates)


def _reader_problem(exc: yaml.reader.ReaderError, text: str) -> YamlProblem:
    """A character YAML does not allow. libyaml gives its position in bytes, so find the
    character itself: the reader stops at its first occurrence."""
    if not isinstance(exc.character, int):
        return YamlProblem(f"invalid YAML: {exc.reason}", 0)
    offset = max(text.find(chr(exc.character)), 0)
    return YamlProblem(f"invalid YAML: {exc.reason} (U+{exc.character:04X})", offset)


def _describe(exc: yaml.MarkedYAMLError) -> str:
    problem = exc.problem or exc.context or "invalid YAML"
    return f"invalid YAML: {problem}"


_STR = "tag:yaml.org,2002:str"
# The values whose text as written a text field takes (a boolean is an int).
_WRITTEN = (int, float, dt.date)


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
        if node.tag == _STR and type(node) is yaml.ScalarNode:
            # What the string constructor returns, without its bookkeeping: most scalars of a
            # frontmatter are strings, and nothing about a string is out of range.
            return YScalar(node.value, node.start_mark.index, node.end_mark.index)
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
        except (ValueError, OverflowError, KeyError, AttributeError, TypeError) as exc:
            # PyYAML's constructors let Python's own errors through for values that match a
            # tag's pattern but cannot be built: 2024-02-30, a 5,000-digit integer,
            # `!!bool maybe`. Each is a problem of this scalar, not of the program.
            raise YamlProblem(_odd_scalar(node, exc), node.start_mark.index) from None
        problem = _out_of_range(node, value)
        if problem is not None:
            raise YamlProblem(problem, node.start_mark.index)
        # The composed node's value is the scalar's text without its tag, as a string would be.
        text = str(node.value) if isinstance(value, _WRITTEN) else None
        return YScalar(value, node.start_mark.index, node.end_mark.index, text)

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


_TAG_NAMES = {
    "tag:yaml.org,2002:int": "integer",
    "tag:yaml.org,2002:float": "number",
    "tag:yaml.org,2002:timestamp": "date or timestamp",
    "tag:yaml.org,2002:bool": "boolean",
    "tag:yaml.org,2002:binary": "binary value",
}
# Echo a scalar in a message only when it cannot be anything but a number or a date, so no
# message repeats a token or a password that an explicit tag (`!!int <secret>`) wraps.
_ECHOABLE = re.compile(r"[-+0-9:._ eEtTzZ]{1,40}")


def _item(node: yaml.Node, what: str) -> str:
    """How a message names the scalar: its text when safe to repeat, else its kind."""
    text = str(node.value)
    if _ECHOABLE.fullmatch(text):
        return f"'{text}'"
    article = "an" if what[0] in "aeiou" else "a"
    digits = sum(char.isdigit() for char in text)
    if digits > 40 and digits == len(text.lstrip("+-")):
        return f"{article} {what} of {digits} digits"
    if len(text) > 40 and what in ("integer", "number"):
        return f"{article} {what} written with {len(text)} characters"
    return f"a value read as {what}"


def _odd_scalar(node: yaml.Node, exc: Exception) -> str:
    what = _TAG_NAMES.get(node.tag, "value")
    item = _item(node, what)
    if what == "integer" and "digits" in str(exc):
        return f"invalid YAML: {item} has more than {sys.get_int_max_str_digits()} digits"
    # Only the date constructors' reasons are kept: int() and float() repeat the text.
    reason = str(exc) if what == "date or timestamp" and isinstance(exc, ValueError) else ""
    detail = f" ({reason})" if reason and len(reason) <= 80 else ""
    return f"invalid YAML: {item} is not a valid {what}{detail}"


def _out_of_range(node: yaml.Node, value: Any) -> str | None:
    """Values that were built but would break later: a number beyond the range of a float
    (which no field can use, and which `float()` and printing refuse), a float literal that
    overflowed to infinity, a timestamp that cannot be expressed in UTC."""
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) > sys.float_info.max:  # exact: Python compares int and float exactly
            return f"invalid YAML: {_item(node, 'integer')} is too large (more than 1.8e308)"
    elif isinstance(value, float) and math.isinf(value):
        if "inf" not in str(node.value).lower():  # `.inf` is meant; `1.0e+999` overflowed
            item = _item(node, "number")
            return f"invalid YAML: {item} is too large (it overflows to infinity)"
    elif isinstance(value, dt.datetime) and value.tzinfo is not None:
        try:
            value.astimezone(dt.UTC)
        except OverflowError:
            item = _item(node, "timestamp")
            return f"invalid YAML: {item} is out of range once converted to UTC"
    return None


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


def as_text(node: YNode) -> str | None:
    """A scalar as text: a string as YAML read it, a number, date or boolean as written
    (`0.840` is "0.840", not "0.84"); None for null, a list, a mapping or binary data."""
    if type(node) is not YScalar:  # (no class derives from it; a type test is cheaper)
        return None
    value = node.value
    return value if type(value) is str else node.text
