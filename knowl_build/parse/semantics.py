"""The semantic layer in Canonic's format (SPEC 3): one YAML file per source.

Entities are `<connection>.<source>` and `<connection>.<source>.<member>`; identity comes from
the `connection` and `name` keys, not from the file's path.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from knowl_build.diagnostics import Finding
from knowl_build.hints import did_you_mean
from knowl_build.model import Entity, TextIndex
from knowl_build.parse.page import decode
from knowl_build.parse.yamlnodes import (
    Composed,
    YamlProblem,
    YMap,
    YNode,
    YScalar,
    YSeq,
    compose,
    json_safe,
    key_text,
    plain,
)

NAME = re.compile(r"[A-Za-z0-9_-]+")
# Resolution order for a member name shared by several kinds.
MEMBER_KINDS = ("measure", "metric", "dimension", "entity", "column")
_LISTS = {"columns": "column", "measures": "measure", "dimensions": "dimension"}
_SOURCE_EXCLUDED = ("columns", "measures", "dimensions", "meta")


def fingerprint_of(mapping: Any) -> str:
    """Canonic's fingerprint: sha256 over `json.dumps(mapping, sort_keys=True)`."""
    text = json.dumps(mapping, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def measure_fingerprint(expr: Any) -> str:
    return fingerprint_of({"expr": expr})


@dataclass(slots=True)
class SemanticLayer:
    """Every entity by name; `members` keeps each kind of a shared member name."""

    entities: dict[str, Entity] = field(default_factory=dict)
    members: dict[str, dict[str, Entity]] = field(default_factory=dict)
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def resolve_attribute(self, name: str) -> tuple[Entity, str] | None:
        """`<entity>.<attr>` to the entity and attribute; a shared member name resolves to the
        first of measure, dimension, column whose kind has that attribute."""
        entity_name, _, attribute = name.rpartition(".")
        if not entity_name:
            return None
        kinds = self.members.get(entity_name)
        if kinds is None:
            entity = self.entities.get(entity_name)
            if entity is not None and attribute in entity.attributes:
                return entity, attribute
            return None
        for kind in MEMBER_KINDS:
            entity = kinds.get(kind)
            if entity is not None and attribute in entity.attributes:
                return entity, attribute
        return None


def kb050(index: TextIndex, node: YNode | None, message: str, hint: str | None = None) -> Finding:
    """A semantic-layer finding at a YAML node (the whole file when there is none)."""
    if node is None:
        return Finding("KB050", 1, 1, message, hint)
    line, column = index.position(node.start)
    end_line, end_column = index.position(max(node.start, node.end - 1))
    return Finding("KB050", line, column, message, hint, end_line, end_column)


@dataclass(slots=True)
class SourceRead:
    """One source read from a file: its name, where the name is, and its entities."""

    name: str
    name_pos: tuple[int, int]
    entities: list[Entity] = field(default_factory=list)


@dataclass(slots=True)
class FileRead:
    """What one semantic file holds (a Canonic file: at most one source; a dbt file: any)."""

    path: str
    origin: str = "canonic"
    sources: list[SourceRead] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


@dataclass(slots=True)
class _SourceFile:
    path: str
    source_name: str | None = None
    name_node: YScalar | None = None
    entities: list[Entity] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


class _FileReader:
    def __init__(self, path: str, index: TextIndex) -> None:
        self.path = path
        self.index = index
        self.result = _SourceFile(path)
        self.dimension_columns: dict[str, YNode] = {}

    def report(self, node: YNode | None, message: str, hint: str | None = None) -> None:
        self.result.findings.append(kb050(self.index, node, message, hint))

    def line_of(self, node: YNode) -> int:
        return self.index.position(node.start)[0]

    def read(self, root: YNode | None) -> _SourceFile:
        if not isinstance(root, YMap):
            self.report(root, "semantic file is not a mapping of keys to values")
            return self.result
        keys = {key_text(k): (k, v) for k, v in root.items}
        required: dict[str, str] = {}
        valid = True
        for name in ("name", "connection", "table"):
            if name not in keys:
                self.report(root, f"'{name}' is missing", f"add '{name}:' to the source")
                valid = False
                continue
            value = keys[name][1]
            if not (isinstance(value, YScalar) and isinstance(value.value, str)):
                self.report(value, f"'{name}' must be a string")
                valid = False
                continue
            if name != "table" and not NAME.fullmatch(value.value):
                self.report(
                    value, f"{name} '{value.value}' has characters other than A-Z a-z 0-9 _ -"
                )
                valid = False
                continue
            required[name] = value.value
        if not valid:
            return self.result

        source, connection = required["name"], required["connection"]
        name_node = keys["name"][1]
        assert isinstance(name_node, YScalar)
        self.result.source_name = source
        self.result.name_node = name_node
        base = f"{connection}.{source}"
        whole = json_safe(plain(root))
        self.result.entities.append(
            Entity(
                name=base,
                kind="source",
                connection=connection,
                source=source,
                member=None,
                definition=whole,
                path=self.path,
                line=self.line_of(keys["name"][0]),
                fingerprint=fingerprint_of(
                    {k: v for k, v in whole.items() if k not in _SOURCE_EXCLUDED}
                ),
            )
        )

        declared: set[str] = set()
        for list_key, kind in _LISTS.items():
            if list_key not in keys:
                continue
            node = keys[list_key][1]
            if isinstance(node, YScalar) and node.value is None:
                continue
            if not isinstance(node, YSeq):
                self.report(node, f"'{list_key}' must be a list")
                continue
            seen: set[str] = set()
            for item in node.items:
                member = self.member(item, kind, base, connection, source, seen)
                if member is not None and kind == "column":
                    declared.add(member.member or "")

        grain = keys.get("grain")
        if grain is not None:
            items = grain[1].items if isinstance(grain[1], YSeq) else [grain[1]]
            for item in items:
                if isinstance(item, YScalar) and item.value is None:
                    continue
                if not (isinstance(item, YScalar) and isinstance(item.value, str)):
                    self.report(item, "'grain' items must be column names")
                elif item.value not in declared:
                    self.report(
                        item,
                        f"grain column '{item.value}' is not a declared column",
                        _close(item.value, declared),
                    )
        for entity in self.result.entities:
            if entity.kind == "dimension":
                column = entity.definition.get("column")
                if isinstance(column, str) and column not in declared:
                    self.report(
                        self.dimension_columns.get(entity.name),
                        f"dimension column '{column}' is not a declared column",
                        _close(column, declared),
                    )
        return self.result

    def member(
        self, item: YNode, kind: str, base: str, connection: str, source: str, seen: set[str]
    ) -> Entity | None:
        if not isinstance(item, YMap):
            self.report(item, f"a {kind} must be a mapping with a 'name'")
            return None
        keys = {key_text(k): v for k, v in item.items}
        name_node = keys.get("name")
        if not (isinstance(name_node, YScalar) and isinstance(name_node.value, str)):
            self.report(name_node or item, f"a {kind} needs a string 'name'")
            return None
        name = name_node.value
        if not NAME.fullmatch(name):
            self.report(
                name_node, f"{kind} name '{name}' has characters other than A-Z a-z 0-9 _ -"
            )
            return None
        if name in seen:
            self.report(name_node, f"{kind} '{name}' is defined twice in source '{source}'")
            return None
        seen.add(name)
        definition = json_safe(plain(item))
        if kind == "measure":
            expr_node = keys.get("expr")
            if expr_node is None or (isinstance(expr_node, YScalar) and expr_node.value is None):
                self.report(item, f"measure '{name}' has no 'expr'")
            fingerprint = measure_fingerprint(definition.get("expr"))
        else:
            fingerprint = fingerprint_of(definition)
        entity = Entity(
            name=f"{base}.{name}",
            kind=kind,
            connection=connection,
            source=source,
            member=name,
            definition=definition,
            path=self.path,
            line=self.line_of(item),
            fingerprint=fingerprint,
        )
        if kind == "dimension" and "column" in keys:
            self.dimension_columns[entity.name] = keys["column"]
        self.result.entities.append(entity)
        return entity


def _close(name: str, choices: Iterable[str]) -> str | None:
    return did_you_mean(name, sorted(choices))


def open_yaml(data: bytes, label: str) -> tuple[TextIndex, Composed] | Finding:
    """A semantic file's text composed into nodes, or the finding that stops it (KB007 for
    bytes that are not UTF-8 text, KB050 for invalid YAML)."""
    text = decode(data)
    if text is None:
        return Finding("KB007", 1, 1, f"{label} is not UTF-8 text")
    index = TextIndex(text)
    try:
        return index, compose(text)
    except YamlProblem as problem:
        line, column = index.position(min(problem.offset, len(text)))
        return Finding("KB050", line, column, f"{label} is {problem.message}")


def read_source_file(path: str, data: bytes) -> FileRead:
    """A Canonic semantic file (SPEC 3): one source, or findings only."""
    opened = open_yaml(data, "semantic file")
    if isinstance(opened, Finding):
        return FileRead(path, "canonic", findings=[opened])
    index, composed = opened
    reader = _FileReader(path, index)
    for duplicate in composed.duplicates:
        reader.report(duplicate, f"'{key_text(duplicate)}' is given twice")
    result = reader.read(composed.root)
    read = FileRead(path, "canonic", findings=list(result.findings))
    if result.source_name is not None and result.name_node is not None:
        position = index.position(result.name_node.start)
        read.sources.append(SourceRead(result.source_name, position, result.entities))
    return read


def combine(reads: Iterable[FileRead]) -> SemanticLayer:
    """One layer from files already read: Canonic files first, in path (code-point) order,
    where the first file owns a source name; then dbt files, whose sources must be unique
    within their connection (and must not collide with a Canonic entity)."""
    layer = SemanticLayer()
    canonic_owner: dict[str, str] = {}
    owner_of: dict[str, str] = {}
    for read in sorted(reads, key=lambda r: (r.origin != "canonic", r.path)):
        layer.files.append(read.path)
        findings = list(read.findings)
        for source in read.sources:
            line, column = source.name_pos
            base = next((e.name for e in source.entities if e.kind == "source"), None)
            if read.origin == "canonic" and source.name in canonic_owner:
                findings.append(
                    Finding(
                        "KB050",
                        line,
                        column,
                        f"source name '{source.name}' is already defined in {canonic_owner[source.name]}",
                        "source names are unique across the whole project",
                    )
                )
                continue
            names = {e.name for e in source.entities}
            clash = sorted(n for n in names if n in owner_of)
            if clash:
                findings.append(
                    Finding(
                        "KB050",
                        line,
                        column,
                        f"'{clash[0]}' is already defined in {owner_of[clash[0]]}",
                        "names are unique within a connection",
                    )
                )
                continue
            if read.origin == "canonic":
                canonic_owner[source.name] = read.path
            for entity in source.entities:
                owner_of[entity.name] = read.path
                if entity.kind == "source" or entity.name == base:
                    layer.entities[entity.name] = entity
                else:
                    layer.members.setdefault(entity.name, {})[entity.kind] = entity
        layer.findings[read.path] = sorted(findings, key=lambda f: (f.line, f.column))
    for name, kinds in layer.members.items():
        layer.entities[name] = next(kinds[k] for k in MEMBER_KINDS if k in kinds)
    return layer


def load_semantic_layer(
    files: Iterable[tuple[str, bytes]],
    dbt_files: Iterable[tuple[str, bytes]] = (),
    dbt: Any = None,
) -> SemanticLayer:
    """Read every Canonic semantic file (and, with a dbt project, its model files)."""
    reads = [read_source_file(path, data) for path, data in sorted(files)]
    if dbt is not None:
        from knowl_build.parse.dbt import read_dbt_file

        reads += [read_dbt_file(path, data, dbt) for path, data in sorted(dbt_files)]
    return combine(reads)
