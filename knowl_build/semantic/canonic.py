"""The semantic layer in Canonic's format (SPEC 3): one YAML file per source."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Entity, TextIndex
from knowl_build.parse.yamlnodes import (
    YMap,
    YNode,
    YScalar,
    YSeq,
    json_safe,
    key_text,
    plain,
)
from knowl_build.semantic.fingerprint import definition_text
from knowl_build.semantic.layer import (
    NAME,
    FileRead,
    SourceRead,
    close_name,
    fingerprint_of,
    kb050,
    open_yaml,
)

# A mapping's entries by key text: (the key, its value).
_Keys = dict[str, tuple[YScalar, YNode]]
_LISTS = {"columns": "column", "measures": "measure", "dimensions": "dimension"}
_SOURCE_EXCLUDED = ("columns", "measures", "dimensions", "meta")


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
        """The source, then its members, then the checks that need every column declared."""
        if not isinstance(root, YMap):
            self.report(root, "semantic file is not a mapping of keys to values")
            return self.result
        keys = {key_text(k): (k, v) for k, v in root.items}
        required = self.required(root, keys)
        if required is None:
            return self.result
        source, connection = required["name"], required["connection"]
        base = self.source(root, keys, source, connection)
        declared = self.members(keys, base, connection, source)
        self.check_grain(keys.get("grain"), declared)
        self.check_dimension_columns(declared)
        return self.result

    def required(self, root: YMap, keys: _Keys) -> dict[str, str] | None:
        """The source's name, connection and table (None, reported, when one is wrong)."""
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
        return required if valid else None

    def source(self, root: YMap, keys: _Keys, source: str, connection: str) -> str:
        """The source's own entity; returns its name, the base of its members' names."""
        name_node = keys["name"][1]
        if not isinstance(name_node, YScalar):
            raise TypeError("a source's name is checked to be a string first")
        self.result.source_name = source
        self.result.name_node = name_node
        base = f"{connection}.{source}"
        whole = json_safe(plain(root))
        basis = {k: v for k, v in whole.items() if k not in _SOURCE_EXCLUDED}
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
                fingerprint=fingerprint_of(basis),
                fingerprinted=definition_text("source", basis),
            )
        )
        return base

    def members(self, keys: _Keys, base: str, connection: str, source: str) -> set[str]:
        """The columns, measures and dimensions; returns the declared columns' names."""
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
        return declared

    def check_grain(self, grain: tuple[YScalar, YNode] | None, declared: set[str]) -> None:
        """Each grain item names a declared column."""
        if grain is None:
            return
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
                    close_name(item.value, declared),
                )

    def check_dimension_columns(self, declared: set[str]) -> None:
        """Each dimension's column is a declared column."""
        for entity in self.result.entities:
            if entity.kind == "dimension":
                column = entity.definition.get("column")
                if isinstance(column, str) and column not in declared:
                    self.report(
                        self.dimension_columns.get(entity.name),
                        f"dimension column '{column}' is not a declared column",
                        close_name(column, declared),
                    )

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
            basis: dict[str, Any] = {"expr": definition.get("expr")}
        else:
            basis = definition
        fingerprint = fingerprint_of(basis)  # a measure's: measure_fingerprint(expr)
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
            fingerprinted=definition_text(kind, basis),
        )
        if kind == "dimension" and "column" in keys:
            self.dimension_columns[entity.name] = keys["column"]
        self.result.entities.append(entity)
        return entity


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
