"""The semantic layer: every entity by name, fingerprints, and what one file read holds.

Entities are `<connection>.<source>` and `<connection>.<source>.<member>`; identity comes from
the `connection` and `name` keys, not from a file's path. The Canonic and dbt readers build
`FileRead`s; `combine` makes one layer of them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Entity, TextIndex
from knowl_build.parse.text import decode
from knowl_build.parse.yamlnodes import (
    Composed,
    YamlProblem,
    YNode,
    compose,
)
from knowl_build.support.hints import did_you_mean

NAME = re.compile(r"[A-Za-z0-9_-]+")
# Resolution order for a member name shared by several kinds.
MEMBER_KINDS = ("measure", "metric", "dimension", "entity", "column")


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


def close_name(name: str, choices: Iterable[str]) -> str | None:
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
