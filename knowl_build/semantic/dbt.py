"""The dbt semantic layer (MetricFlow) as a second source of entities.

Two layouts are read:

- the legacy spec: top-level `semantic_models:` (each with `entities`, `dimensions`,
  `measures`) and top-level `metrics:`;
- the latest spec: `models:` entries with `semantic_model: true` (or a mapping), whose
  `columns` carry `entity:` and `dimension:`, and whose `metrics:` declare simple metrics with
  `agg` and `expr` in place of measures.

Each semantic model is a source `<connection>.<semantic_model>`; its measures (or simple
metrics), dimensions and entities are members; each metric is `<connection>.metrics.<metric>`.
A measure without `expr` has its own name as expression (dbt's rule). What each kind's
fingerprint covers is in `semantic.fingerprint`: a measure's, what it computes
(`sum(amount)`, with its aggregation parameters and filter); a metric's, its type and
type parameters.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Entity, TextIndex
from knowl_build.parse.text import decode
from knowl_build.parse.yamlnodes import (
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
from knowl_build.semantic.fingerprint import (
    dbt_measure_basis,
    dbt_member_basis,
    dbt_metric_basis,
    dbt_source_basis,
    definition_text,
)
from knowl_build.semantic.layer import (
    NAME,
    FileRead,
    SourceRead,
    fingerprint_of,
    kb050,
    open_yaml,
)

METRICS_SOURCE = "metrics"


@dataclass(frozen=True, slots=True)
class DbtProject:
    """Where the dbt project is and what it is called (from dbt_project.yml)."""

    project_dir: str  # project-relative, without a trailing slash
    connection: str
    model_paths: tuple[str, ...] = ("models",)  # as configured, relative to project_dir

    @property
    def folders(self) -> tuple[str, ...]:
        """The model paths as normalised project-relative folders (every one inside the
        project: `read_dbt_project` refuses the others)."""
        found = []
        for path in self.model_paths:
            folder = project_folder(self.project_dir, path)
            if folder is not None:
                found.append(folder)
        return tuple(found)

    def is_model_file(self, path: str) -> bool:
        if not path.endswith((".yml", ".yaml")) or path == self.project_file:
            return False  # `model-paths: ["."]` holds dbt_project.yml, which is no model file
        return any(f == "." or path.startswith(f + "/") for f in self.folders)

    @property
    def project_file(self) -> str:
        return f"{self.project_dir}/dbt_project.yml" if self.project_dir else "dbt_project.yml"


def _is_absolute(path: str) -> bool:
    # `~` too: a shell would expand it to a home folder, which is never inside the project.
    return path.startswith(("/", "~")) or re.match(r"[A-Za-z]:", path) is not None


def project_folder(project_dir: str, path: str) -> str | None:
    """A configured dbt path as a normalised project-relative folder ("." for the root);
    None when it is absolute or climbs out of the project root."""
    text = path.replace("\\", "/")
    if _is_absolute(text):
        return None
    joined = posixpath.normpath(posixpath.join(project_dir or ".", text.strip("/") or "."))
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


# dbt reads `model-paths`; before dbt 1.0 it was `source-paths`, read only when the new key is
# absent (dbt's own rule), so it is checked only then.
_PATH_KEYS = ("model-paths", "source-paths")


def read_dbt_project(
    project_dir: str,
    data: bytes | None,
    connection: str | None,
    inside: Callable[[str], bool] | None = None,
) -> tuple[DbtProject, list[Finding]]:
    """dbt_project.yml: the project's name (the default connection) and its model paths.

    Every configured path must name a folder inside the project root: an absolute path, one
    that climbs out with `..`, or (through `inside`, which follows symlinks on disk) one that
    resolves outside is KB050 at its item, and nothing under it is read."""
    findings: list[Finding] = []
    name: str | None = None
    paths: tuple[str, ...] = ("models",)
    text = decode(data) if data is not None else None
    if data is None:
        findings.append(
            Finding(
                "KB050",
                1,
                1,
                "dbt_project.yml is missing",
                "point [semantics.dbt] project_dir at the folder that holds dbt_project.yml",
            )
        )
    elif text is None:
        findings.append(Finding("KB007", 1, 1, "dbt_project.yml is not UTF-8 text"))
    else:
        index = TextIndex(text)
        try:
            root = compose(text).root
        except YamlProblem as problem:
            line, column = index.position(min(problem.offset, len(text)))
            findings.append(Finding("KB050", line, column, f"dbt_project.yml is {problem.message}"))
            root = None
        if isinstance(root, YMap):
            keys = {key_text(k): v for k, v in root.items}
            value = keys.get("name")
            if isinstance(value, YScalar) and isinstance(value.value, str):
                name = value.value
            key = next((k for k in _PATH_KEYS if k in keys), None)
            if key is not None:
                paths = _model_paths(key, keys[key], project_dir, index, inside, findings)
        if name is None and connection is None and root is not None:
            findings.append(
                Finding(
                    "KB050",
                    1,
                    1,
                    "dbt_project.yml has no 'name'",
                    "set [semantics.dbt] connection in knowl.toml",
                )
            )
    chosen = connection or name or "dbt"
    return DbtProject(project_dir, chosen, paths), findings


def _model_paths(
    key: str,
    node: YNode,
    project_dir: str,
    index: TextIndex,
    inside: Callable[[str], bool] | None,
    findings: list[Finding],
) -> tuple[str, ...]:
    """The configured paths that stay inside the project; a finding for each other one."""
    if isinstance(node, YScalar) and node.value is None:
        return ("models",)
    items = node.items if isinstance(node, YSeq) else []
    if not isinstance(node, YSeq) or not all(
        isinstance(i, YScalar) and isinstance(i.value, str) for i in items
    ):
        findings.append(kb050(index, node, f"'{key}' must be a list of folder names"))
        return ("models",)
    kept: list[str] = []
    for item in items:
        assert isinstance(item, YScalar) and isinstance(item.value, str)
        given = item.value
        folder = project_folder(project_dir, given)
        if folder is None:
            absolute = _is_absolute(given.replace("\\", "/"))
            problem = "is an absolute path" if absolute else "climbs out of the project"
        elif inside is not None and not inside(folder):
            problem = "resolves outside the project through a symlink"
        else:
            kept.append(given.strip("/"))
            continue
        findings.append(
            kb050(
                index,
                item,
                f"{key} item '{given}' {problem}; it is not read",
                "model paths must name folders inside the project root",
            )
        )
    return tuple(kept)


class _DbtReader:
    def __init__(self, path: str, index: TextIndex, project: DbtProject) -> None:
        self.path = path
        self.index = index
        self.project = project
        self.read = FileRead(path, "dbt")

    def report(self, node: YNode | None, message: str, hint: str | None = None) -> None:
        self.read.findings.append(kb050(self.index, node, message, hint))

    def line(self, node: YNode) -> int:
        return self.index.position(node.start)[0]

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def keys(node: YMap) -> dict[str, tuple[YScalar, YNode]]:
        return {key_text(k): (k, v) for k, v in node.items}

    def name_of(self, node: YNode, what: str) -> tuple[str, YScalar] | None:
        if not isinstance(node, YMap):
            self.report(node, f"a {what} must be a mapping with a 'name'")
            return None
        entry = self.keys(node).get("name")
        value = entry[1] if entry else None
        if not (isinstance(value, YScalar) and isinstance(value.value, str)):
            self.report(value or node, f"a {what} needs a string 'name'")
            return None
        if not NAME.fullmatch(value.value):
            self.report(
                value, f"{what} name '{value.value}' has characters other than A-Z a-z 0-9 _ -"
            )
            return None
        return value.value, value

    def items(self, node: YNode | None, what: str) -> list[YNode]:
        if node is None or (isinstance(node, YScalar) and node.value is None):
            return []
        if not isinstance(node, YSeq):
            self.report(node, f"'{what}' must be a list")
            return []
        return node.items

    def entity(
        self,
        kind: str,
        source: str,
        member: str | None,
        definition: dict[str, Any],
        node: YNode,
        basis: dict[str, Any] | None = None,
    ) -> Entity:
        connection = self.project.connection
        name = f"{connection}.{source}" + (f".{member}" if member else "")
        if basis is None:
            basis = dbt_member_basis(definition)
        return Entity(
            name=name,
            kind=kind,
            connection=connection,
            source=source,
            member=member,
            definition=definition,
            path=self.path,
            line=self.line(node),
            fingerprint=fingerprint_of(basis),
            origin="dbt",
            fingerprinted=definition_text(kind, basis),
        )

    # -- the two layouts ---------------------------------------------------------------------

    def run(self, root: YNode | None) -> FileRead:
        if root is None:
            return self.read
        if not isinstance(root, YMap):
            self.report(root, "dbt YAML file is not a mapping of keys to values")
            return self.read
        keys = self.keys(root)
        for node in self.items(keys.get("semantic_models", (None, None))[1], "semantic_models"):
            self.legacy_model(node)
        for node in self.items(keys.get("models", (None, None))[1], "models"):
            self.latest_model(node)
        for node in self.items(keys.get("metrics", (None, None))[1], "metrics"):
            self.metric(node)
        return self.read

    def add_source(self, name: str, name_node: YScalar, entities: list[Entity]) -> None:
        self.read.sources.append(SourceRead(name, self.index.position(name_node.start), entities))

    def members(self, nodes: list[YNode], kind: str, source: str, seen: set[str]) -> list[Entity]:
        found = []
        for node in nodes:
            named = self.name_of(node, kind)
            if named is None:
                continue
            name, name_node = named
            if name in seen:
                self.report(
                    name_node, f"{kind} '{name}' is defined twice in semantic model '{source}'"
                )
                continue
            seen.add(name)
            assert isinstance(node, YMap)
            definition = json_safe(plain(node))
            definition.setdefault("expr", name)  # dbt: no expr means the column of that name
            if kind == "measure":
                if "agg" not in definition:
                    self.report(node, f"measure '{name}' has no 'agg'")
                basis = dbt_measure_basis(definition, name)
                found.append(self.entity(kind, source, name, definition, node, basis))
                continue
            params = definition.get("type_params")
            if isinstance(params, dict) and "time_granularity" in params:
                definition.setdefault("granularity", params["time_granularity"])
            found.append(self.entity(kind, source, name, definition, node))
        return found

    def legacy_model(self, node: YNode) -> None:
        named = self.name_of(node, "semantic model")
        if named is None:
            return
        name, name_node = named
        assert isinstance(node, YMap)
        keys = self.keys(node)
        definition = json_safe(plain(node))
        entities_nodes = self.items(keys.get("entities", (None, None))[1], "entities")
        primary = [
            json_safe(plain(e)).get("name")
            for e in entities_nodes
            if isinstance(e, YMap) and json_safe(plain(e)).get("type") == "primary"
        ]
        source_definition = {
            k: v
            for k, v in definition.items()
            if k not in ("entities", "dimensions", "measures", "metrics")
        }
        source_definition.setdefault("table", definition.get("model"))
        source_definition.setdefault("grain", [p for p in primary if isinstance(p, str)])
        basis = dbt_source_basis(source_definition)
        members = [self.entity("source", name, None, source_definition, node, basis)]
        members += self.members(
            self.items(keys.get("measures", (None, None))[1], "measures"), "measure", name, set()
        )
        members += self.members(
            self.items(keys.get("dimensions", (None, None))[1], "dimensions"),
            "dimension",
            name,
            set(),
        )
        members += self.members(entities_nodes, "entity", name, set())
        self.add_source(name, name_node, members)

    def latest_model(self, node: YNode) -> None:
        """A dbt model of the latest spec with `semantic_model` set: the source, its
        columns' entities and dimensions, and its simple metrics as measures."""
        if not isinstance(node, YMap):
            return
        keys = self.keys(node)
        settings = self.semantic_settings(keys)
        if settings is None:
            return
        named = self.name_of(node, "model")
        if named is None:
            return
        model_name, name_node = named
        chosen = settings.get("name")
        name: str = chosen if isinstance(chosen, str) else model_name
        if not NAME.fullmatch(name):
            self.report(
                keys["semantic_model"][1],
                f"semantic model name '{name}' has characters other than A-Z a-z 0-9 _ -",
            )
            return
        definition = {
            k: v for k, v in json_safe(plain(node)).items() if k not in ("columns", "metrics")
        }
        definition.setdefault("table", model_name)
        seen: dict[str, set[str]] = {"entity": set(), "dimension": set(), "measure": set()}
        grain: list[str] = []
        members = self.column_members(keys, name, seen, grain)
        members += self.simple_metrics(keys, name, seen["measure"])
        definition.setdefault("grain", grain)
        source_basis = dbt_source_basis(definition)
        settings_basis = source_basis.get("semantic_model")
        if isinstance(settings_basis, dict):  # its name is what it is called, not built on
            settings_basis.pop("name", None)
        source = self.entity("source", name, None, definition, node, source_basis)
        self.add_source(name, name_node, [source, *members])

    def semantic_settings(self, keys: dict[str, tuple[YScalar, YNode]]) -> dict[str, Any] | None:
        """The model's `semantic_model` settings; None for an ordinary dbt model, a disabled
        one, or settings of the wrong kind (reported)."""
        semantic = keys.get("semantic_model")
        if semantic is None:
            return None  # an ordinary dbt model
        settings = semantic[1]
        if isinstance(settings, YScalar):
            return {} if settings.value is True else None
        if isinstance(settings, YMap):
            value: dict[str, Any] = json_safe(plain(settings))
            return value if value.get("enabled", True) is True else None
        self.report(settings, "'semantic_model' must be true, false or a mapping")
        return None

    def column_members(
        self,
        keys: dict[str, tuple[YScalar, YNode]],
        name: str,
        seen: dict[str, set[str]],
        grain: list[str],
    ) -> list[Entity]:
        """The entities and dimensions the model's columns declare; the primary entities'
        names are added to `grain`."""
        members: list[Entity] = []
        for column in self.items(keys.get("columns", (None, None))[1], "columns"):
            named_column = self.name_of(column, "column")
            if named_column is None or not isinstance(column, YMap):
                continue
            column_name, _ = named_column
            column_value = json_safe(plain(column))
            for kind in ("entity", "dimension"):
                if kind not in column_value or column_value[kind] in (None, False):
                    continue
                definition = _column_member(column_value, kind, column_name)
                member = definition["name"]
                if not NAME.fullmatch(member) or member in seen[kind]:
                    self.report(
                        column, f"{kind} '{member}' is invalid or defined twice in '{name}'"
                    )
                    continue
                seen[kind].add(member)
                if kind == "entity" and definition.get("type") == "primary":
                    grain.append(member)
                members.append(self.entity(kind, name, member, definition, column))
        return members

    def simple_metrics(
        self, keys: dict[str, tuple[YScalar, YNode]], name: str, measures: set[str]
    ) -> list[Entity]:
        """A simple metric is the latest spec's measure: pages bind to it the same way."""
        members: list[Entity] = []
        for metric in self.items(keys.get("metrics", (None, None))[1], "metrics"):
            entity = self.metric(metric)
            if entity is None:
                continue
            definition = dict(entity.definition)
            if definition.get("type") != "simple" or entity.member in measures:
                continue
            measures.add(str(entity.member))
            if "agg" not in definition:
                self.report(metric, f"simple metric '{entity.member}' has no 'agg'")
            basis = dbt_measure_basis(definition, str(entity.member))
            members.append(self.entity("measure", name, entity.member, definition, metric, basis))
        return members

    def metric(self, node: YNode) -> Entity | None:
        named = self.name_of(node, "metric")
        if named is None:
            return None
        name, _ = named
        assert isinstance(node, YMap)
        definition = json_safe(plain(node))
        if not isinstance(definition.get("type"), str):
            self.report(node, f"metric '{name}' has no 'type'")
        basis = dbt_metric_basis(definition, name)
        if definition.get("type") == "simple":
            definition.setdefault("expr", name)
        entity = self.entity("metric", METRICS_SOURCE, name, definition, node, basis)
        # Each metric stands alone, so a name defined twice is reported at the second one.
        self.add_source(f"{METRICS_SOURCE}.{name}", named[1], [entity])
        return entity


def read_dbt_file(path: str, data: bytes, project: DbtProject) -> FileRead:
    """One YAML file of the dbt project's model paths."""
    opened = open_yaml(data, "dbt YAML file")
    if isinstance(opened, Finding):
        return FileRead(path, "dbt", findings=[opened])
    index, composed = opened
    reader = _DbtReader(path, index, project)
    for duplicate in composed.duplicates:
        reader.report(duplicate, f"'{key_text(duplicate)}' is given twice")
    return reader.run(composed.root)


def _column_member(column: dict[str, Any], kind: str, column_name: str) -> dict[str, Any]:
    """The definition of the entity or dimension (`kind`) a model's column declares."""
    spec = column[kind]
    details = spec if isinstance(spec, dict) else {"type": spec}
    given = details.get("name")
    member: str = given if isinstance(given, str) else column_name
    return {
        "name": member,
        "expr": details.get("expr", column_name),
        **{k: v for k, v in details.items() if k not in ("name",)},
        **({"granularity": column["granularity"]} if "granularity" in column else {}),
        **(
            {"description": column["description"]}
            if "description" in column and "description" not in details
            else {}
        ),
    }
