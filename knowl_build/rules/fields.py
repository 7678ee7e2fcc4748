"""Frontmatter fields (SPEC 2.2): types and values (KB002), reserved keys (KB003), unknown
keys (KB006). Produces the typed Fields the cross-page rules work on."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import (
    CATEGORIES,
    FRESHNESS,
    PROVENANCES,
    STATUSES,
    USAGE_MODES,
    VISIBILITIES,
    BoundFingerprint,
    Conflict,
    Fields,
    Located,
    Span,
)
from knowl_build.parse.yamlnodes import (
    YMap,
    YNode,
    YScalar,
    YSeq,
    as_text,
    json_safe,
    key_text,
    plain,
)
from knowl_build.rules.rule import Rule
from knowl_build.support.hints import did_you_mean

FIELD_TYPE = Rule(
    code="KB002",
    name="field-type",
    default="error",
    summary="a known field has the wrong type or an unknown value",
    doc="""A known frontmatter field holds a value of the wrong type (`tags: revenue` instead
      of a list, a `summary` that is a mapping) or a value outside its allowed set
      (`usage_mode: caveats`). A field that holds text (`title`, `summary`, `source`,
      `reasoning`, `superseded_by`, `source_commit`, `conflict.key`, and the items of
      `tags`, `refs`, `sl_refs`, `affected_paths`, `alternatives`, `steps`) takes a number,
      date or boolean as the text written (`title: 0.840` is "0.840", `title: 2024-01-05`
      and `title: yes` are those words), as Dendron and Hugo write titles; `null` is no
      value. `confidence` outside [0, 1] is refused, never clamped.
      `affected_paths` must be relative paths without `..`. A `meta.last_validated_at`
      that has no UTC time (a quoted `'9999-12-31T23:59:59-12:00'`) is KB002 at the
      value. With `[links] resolution = "dendron"`, a `status` outside knowl's values is a
      Dendron task note's status (`status: done`): kept in the frontmatter, not KB002, and
      the page has no knowl status.""",
)

RESERVED_FIELD = Rule(
    code="KB003",
    name="reserved-field",
    default="error",
    summary="`id`, `scope` or `path` set in frontmatter",
    doc="""A page's id, scope and path come from its location under `knowledge/`; setting
      them in frontmatter would contradict the file system. Remove the key. With
      `[links] resolution = "dendron"`, `id` is Dendron's note id, which knowl keeps in the
      frontmatter and never reads as the page's id: not KB003.""",
)

UNKNOWN_FIELD = Rule(
    code="KB006",
    name="unknown-field",
    default="warning",
    summary="unknown frontmatter key",
    doc="""A key that knowl does not know, at the top level or inside `meta` or `conflict`.
      It is kept in the artifact. Usually a typo: the hint names the nearest known key.
      Keys other tools own are listed in `[frontmatter] allow` (`meta.owner` for a key inside
      `meta`); `[links] resolution = "obsidian"` allows Obsidian's own keys, `"dendron"`
      Dendron's.""",
)

RULES: tuple[Rule, ...] = (FIELD_TYPE, RESERVED_FIELD, UNKNOWN_FIELD)

Locate = Callable[[int, int], Span]

TOP_FIELDS = (
    "summary",
    "tags",
    "sl_refs",
    "refs",
    "usage_mode",
    "meta",
    "title",
    "category",
    "status",
    "superseded_by",
    "freshness",
    "confidence",
    "source",
    "source_commit",
    "affected_paths",
    "conflict",
    "visibility",
    "reasoning",
    "alternatives",
    "steps",
)
META_FIELDS = ("provenance", "last_validated_at", "bound_fingerprints", "frozen")
CONFLICT_FIELDS = ("key", "scope", "exclusive")
RESERVED = ("id", "scope", "path")

# Where cross-page findings point (KB202, KB301, KB302, KB402); other spans stay local.
KEPT_ANCHORS = frozenset(
    {
        "status",
        "superseded_by",
        "conflict",
        "source:value",
        "source_commit:value",
        "meta.last_validated_at:value",
    }
)

# Any length of hex: Canonic's own examples bind `sha256:abc`; a value that matches no live
# fingerprint is drift (KB201), not a malformed field. Any other text (`sha256:old`) is KB002
# and drift besides.
FINGERPRINT = re.compile(r"sha256:[0-9a-fA-F]+")
COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")
# The fields that take one of a set of values.
_CHOICES: dict[str, tuple[str, ...]] = {
    "usage_mode": USAGE_MODES,
    "category": CATEGORIES,
    "status": STATUSES,
    "freshness": FRESHNESS,
    "visibility": VISIBILITIES,
}
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def normalize_conflict_key(key: str) -> str:
    """SPEC 8.3: trimmed, lowercased, runs of other characters become `.`, dots trimmed."""
    return _NON_ALNUM.sub(".", key.strip().lower()).strip(".")


def describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dt.datetime):
        return "a timestamp"
    if isinstance(value, dt.date):
        return "a date"
    return type(value).__name__


def describe_node(node: YNode) -> str:
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    return describe(node.value)


def timestamp(value: Any) -> dt.date | None:
    """A date or timestamp (a datetime is a date), from itself or an ISO-8601 string; None
    for anything else."""
    if isinstance(value, str):
        try:
            return dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    return value if isinstance(value, dt.date) else None


def to_utc_iso(value: Any) -> str | None:
    """A date, timestamp or ISO-8601 string as `YYYY-MM-DDTHH:MM:SSZ`; None for anything else,
    and for a timestamp that has no UTC time (`'9999-12-31T23:59:59-12:00'` is after 9999 in
    UTC). Total: no value raises."""
    when = timestamp(value)
    if isinstance(when, dt.datetime):
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        try:
            when = when.astimezone(dt.UTC)
        except (OverflowError, ValueError):
            return None
        # isoformat, not strftime: `%Y` drops the zeros of a year before 1000 (`999-05-01`),
        # and every reader of the value expects four digits.
        return when.replace(tzinfo=None, microsecond=0).isoformat() + "Z"
    if when is not None:
        return f"{when.isoformat()}T00:00:00Z"
    return None


class FieldValidator:
    """Walks the frontmatter mapping once, collecting typed fields and findings."""

    def __init__(self, locate: Locate) -> None:
        self.locate = locate
        self.findings: list[Finding] = []
        self.values: dict[str, Any] = {}
        self.anchors: dict[str, Span] = {}

    # -- reporting --------------------------------------------------------------------

    def report(
        self,
        rule: Rule,
        node: YNode,
        message: str,
        hint: str | None = None,
        subject: str | None = None,
    ) -> None:
        span = self.locate(node.start, node.end)
        self.findings.append(
            Finding(
                rule.code,
                span.line,
                span.column,
                message,
                hint,
                span.end_line,
                span.end_column,
                subject,
            )
        )

    def wrong(self, name: str, node: YNode, expected: str) -> None:
        self.report(FIELD_TYPE, node, f"'{name}' must be {expected}, got {describe_node(node)}")

    # -- typed readers: each returns None after reporting a bad value -------------------

    def string(self, name: str, node: YNode, as_written: bool = True) -> str | None:
        """A text field's value: a number, date or boolean is its text as written (see KB002);
        without `as_written`, only a string is one."""
        if isinstance(node, YScalar) and isinstance(node.value, str):
            return node.value
        text = as_text(node) if as_written else None
        if text is not None:
            return text
        if not (isinstance(node, YScalar) and node.value is None):
            self.wrong(name, node, "a string")
        return None

    def located(self, name: str, node: YNode) -> Located | None:
        value = self.string(name, node)
        return None if value is None else Located(value, self.locate(node.start, node.end))

    def string_list(self, name: str, node: YNode) -> list[tuple[str, YScalar]] | None:
        if isinstance(node, YScalar) and node.value is None:
            return None
        if not isinstance(node, YSeq):
            self.wrong(name, node, "a list of strings")
            return None
        items: list[tuple[str, YScalar]] = []
        for item in node.items:
            text = as_text(item)
            if text is not None and isinstance(item, YScalar):
                items.append((text, item))
            else:
                self.report(
                    FIELD_TYPE,
                    item,
                    f"'{name}' items must be strings, got {describe_node(item)}",
                )
        return items

    def choice(self, name: str, node: YNode, choices: tuple[str, ...]) -> str | None:
        value = self.string(name, node, as_written=False)  # no choice is a number or a date
        if value is None:
            return None
        if value not in choices:
            shown = f" '{value}'" if len(value) <= 40 else ""
            self.report(
                FIELD_TYPE,
                node,
                f"'{name}' value{shown} is not one of {', '.join(choices)}",
                did_you_mean(value, choices),
                subject=name,
            )
            return None
        return value

    def boolean(self, name: str, node: YNode) -> bool | None:
        if isinstance(node, YScalar) and isinstance(node.value, bool):
            return node.value
        if not (isinstance(node, YScalar) and node.value is None):
            self.wrong(name, node, "true or false")
        return None

    # -- the mappings --------------------------------------------------------------------

    def unknown(self, key: YScalar, dotted: str, known: tuple[str, ...]) -> None:
        where = "frontmatter key" if "." not in dotted else "key"
        self.report(
            UNKNOWN_FIELD,
            key,
            f"'{dotted}' is not a known {where}",
            did_you_mean(key_text(key), known),
            subject=dotted,  # what [frontmatter] allow names
        )

    def validate(self, root: YMap) -> None:
        for key, node in root.items:
            name = key_text(key)
            if name in RESERVED:
                self.report(
                    RESERVED_FIELD,
                    key,
                    f"'{name}' is set in frontmatter; a page's {name} comes from its path",
                    f"remove '{name}'",
                    subject=name,
                )
                continue
            if name not in TOP_FIELDS:
                self.unknown(key, name, TOP_FIELDS)
                continue
            self.anchors[name] = self.locate(key.start, key.end)
            self.anchors[f"{name}:value"] = self.locate(node.start, node.end)
            self.field(name, node)

    def field(self, name: str, node: YNode) -> None:
        v = self.values
        if name in ("summary", "title", "source", "reasoning"):
            v[name] = self.string(name, node)
        elif name in ("tags", "alternatives", "steps"):
            items = self.string_list(name, node)
            v[name] = None if items is None else tuple(text for text, _ in items)
        elif name in ("sl_refs", "refs"):
            items = self.string_list(name, node)
            if items is not None:
                v[name] = tuple(Located(t, self.locate(n.start, n.end)) for t, n in items)
        elif name in _CHOICES:
            v[name] = self.choice(name, node, _CHOICES[name])
        elif name == "superseded_by":
            v[name] = self.located(name, node)
        elif name == "source_commit":
            self.source_commit(node)
        elif name == "confidence":
            self.confidence(node)
        elif name == "affected_paths":
            self.affected_paths(node)
        elif name == "conflict":
            self.conflict(node)
        elif name == "meta":
            self.meta(node)

    def source_commit(self, node: YNode) -> None:
        value = self.string("source_commit", node)
        if value is not None and not COMMIT.fullmatch(value.strip()):
            self.report(
                FIELD_TYPE,
                node,
                "'source_commit' must be a hex commit id of 7 or more characters",
            )
        elif value is not None:
            self.values["source_commit"] = value.strip()

    def confidence(self, node: YNode) -> None:
        value = node.value if isinstance(node, YScalar) else None
        if isinstance(node, YScalar) and value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.wrong("confidence", node, "a number in [0, 1]")
        elif not 0.0 <= float(value) <= 1.0:
            self.report(
                FIELD_TYPE,
                node,
                f"'confidence' {value} is outside [0, 1]",
                "confidence is refused outside the range, never clamped",
            )
        else:
            self.values["confidence"] = float(value)

    def affected_paths(self, node: YNode) -> None:
        items = self.string_list("affected_paths", node)
        if items is None:
            return
        kept: list[Located] = []
        for text, item in items:
            pure = PurePosixPath(text.replace("\\", "/"))
            if (
                not text.strip()
                or pure.is_absolute()
                or ".." in pure.parts
                or re.match(r"[A-Za-z]:[/\\]", text)
            ):
                self.report(
                    FIELD_TYPE,
                    item,
                    "'affected_paths' items must be relative to the repository root, without '..'",
                )
            else:
                kept.append(Located(text, self.locate(item.start, item.end)))
        self.values["affected_paths"] = tuple(kept)

    def conflict(self, node: YNode) -> None:
        if isinstance(node, YScalar) and node.value is None:
            return
        if not isinstance(node, YMap):
            self.wrong("conflict", node, "a mapping with 'key', 'scope' and 'exclusive'")
            return
        key: str | None = None
        scope: list[tuple[str, str]] = []
        exclusive = False
        has_key = False
        for k, value in node.items:
            name = key_text(k)
            if name not in CONFLICT_FIELDS:
                self.unknown(k, f"conflict.{name}", CONFLICT_FIELDS)
            elif name == "key":
                has_key = True
                key = self.string("conflict.key", value)
                if key is None and isinstance(value, YScalar) and value.value is None:
                    self.wrong("conflict.key", value, "a string")
            elif name == "exclusive":
                exclusive = bool(self.boolean("conflict.exclusive", value))
            elif name == "scope":
                scope = self.conflict_scope(value)
        if not has_key:
            self.report(FIELD_TYPE, node, "'conflict' needs a 'key'")
        if key is not None:
            self.values["conflict"] = Conflict(
                key, normalize_conflict_key(key), tuple(sorted(scope)), exclusive
            )

    def conflict_scope(self, node: YNode) -> list[tuple[str, str]]:
        if isinstance(node, YScalar) and node.value is None:
            return []
        if not isinstance(node, YMap):
            self.wrong("conflict.scope", node, "a mapping of scalars")
            return []
        pairs: list[tuple[str, str]] = []
        for k, value in node.items:
            if not isinstance(value, YScalar):
                self.wrong(f"conflict.scope.{key_text(k)}", value, "a scalar")
                continue
            v = value.value
            text = "true" if v is True else "false" if v is False else "" if v is None else str(v)
            pairs.append((key_text(k), text))
        return pairs

    def meta(self, node: YNode) -> None:
        if isinstance(node, YScalar) and node.value is None:
            return
        if not isinstance(node, YMap):
            self.wrong("meta", node, "a mapping")
            return
        for k, value in node.items:
            name = key_text(k)
            if name not in META_FIELDS:
                self.unknown(k, f"meta.{name}", META_FIELDS)
                continue
            self.anchors[f"meta.{name}"] = self.locate(k.start, k.end)
            self.anchors[f"meta.{name}:value"] = self.locate(value.start, value.end)
            if name == "provenance":
                self.values["provenance"] = self.choice("meta.provenance", value, PROVENANCES)
            elif name == "frozen":
                self.values["frozen"] = self.boolean("meta.frozen", value)
            elif name == "last_validated_at":
                self.last_validated(value)
            elif name == "bound_fingerprints":
                self.bound(value)

    def last_validated(self, node: YNode) -> None:
        if isinstance(node, YScalar) and node.value is None:
            return
        value = node.value if isinstance(node, YScalar) else None
        if isinstance(value, bool | int | float):
            value = None
        iso = to_utc_iso(value)
        if iso is None and timestamp(value) is not None:
            self.report(
                FIELD_TYPE,
                node,
                "'meta.last_validated_at' is out of range once converted to UTC "
                "(before year 1 or after 9999)",
                'write it as "YYYY-MM-DDTHH:MM:SSZ"',
            )
        elif iso is None:
            self.report(
                FIELD_TYPE,
                node,
                f"'meta.last_validated_at' must be an ISO-8601 date or timestamp, got {describe_node(node)}",
                'write it as "YYYY-MM-DDTHH:MM:SSZ"',
            )
        else:
            self.values["last_validated_at"] = iso

    def bound(self, node: YNode) -> None:
        if isinstance(node, YScalar) and node.value is None:
            return
        if not isinstance(node, YMap):
            self.wrong("meta.bound_fingerprints", node, "a mapping of entity to 'sha256:<hex>'")
            return
        bound: list[BoundFingerprint] = []
        for k, value in node.items:
            fingerprint = value.value if isinstance(value, YScalar) else None
            if not isinstance(fingerprint, str) or not FINGERPRINT.fullmatch(fingerprint):
                self.report(
                    FIELD_TYPE,
                    value,
                    f"'meta.bound_fingerprints.{key_text(k)}' must be 'sha256:' and hex digits",
                )
                if not isinstance(fingerprint, str):
                    continue
                # A text that is no hash still says the page was bound: it matches no
                # version of the definition, so the page has drifted (KB201).
            span = self.locate(k.start, k.end)
            valid = bool(FINGERPRINT.fullmatch(fingerprint))
            bound.append(BoundFingerprint(key_text(k), fingerprint, span, valid))
        self.values["bound_fingerprints"] = tuple(bound)

    def result(self) -> Fields:
        v = {key: value for key, value in self.values.items() if value is not None}
        kept = {k: span for k, span in self.anchors.items() if k in KEPT_ANCHORS}
        return Fields(anchors=kept, **v)


# The fields that hold text (KB002), besides `conflict.key`.
TEXT_FIELDS = frozenset(
    {"summary", "title", "source", "reasoning", "superseded_by", "source_commit", "tags"}
    | {"refs", "sl_refs", "affected_paths", "alternatives", "steps"}
)


_WRITTEN_FIELDS = TEXT_FIELDS | {"conflict"}


def _written(node: YNode) -> Any:
    return node.text if isinstance(node, YScalar) and node.text is not None else plain(node)


def as_written(root: YMap, frontmatter: dict[str, Any]) -> dict[str, Any]:
    """The frontmatter as data (`json_safe`), with the numbers, dates and booleans of its text
    fields as the text written, as the fields read them: the record's copy of `title: 0.840`
    says "0.840" too."""
    # The last of repeated keys; only a string key is the name of a field.
    nodes = {
        key.value: node
        for key, node in root.items
        if isinstance(key.value, str) and key.value in _WRITTEN_FIELDS
    }
    for name, node in nodes.items():
        if name in TEXT_FIELDS and isinstance(node, YScalar | YSeq):
            items = node.items if isinstance(node, YSeq) else [node]
            if any(isinstance(item, YScalar) and item.text is not None for item in items):
                texts = [_written(item) for item in items]
                frontmatter[name] = json_safe(texts if isinstance(node, YSeq) else texts[0])
    conflict = nodes.get("conflict")
    if isinstance(conflict, YMap) and isinstance(frontmatter.get("conflict"), dict):
        key = {key_text(k): value for k, value in conflict.items}.get("key")
        if isinstance(key, YScalar) and key.text is not None:
            frontmatter["conflict"]["key"] = key.text
    return frontmatter


def validate_fields(root: YMap, locate: Locate) -> tuple[Fields, list[Finding], dict[str, Span]]:
    """Typed fields, their findings, and the span of every known key (for KB403)."""
    validator = FieldValidator(locate)
    validator.validate(root)
    keys = {k: v for k, v in validator.anchors.items() if not k.endswith(":value")}
    return validator.result(), validator.findings, keys
