"""What a fingerprint covers, for each kind of entity, and that definition as text.

A fingerprint is `"sha256:" + sha256(json.dumps(basis, sort_keys=True))` over a basis:

- a Canonic measure: `{"expr": expr}`, exactly Canonic's (SPEC 3); any other Canonic member:
  its mapping; a Canonic source: its mapping without its member lists and `meta`;
- a dbt measure (or a latest-spec simple metric read as one): what it computes,
  `{"expr": "<agg>(<expr>)"}` (`expr` defaults to the measure's name, as in dbt), with
  `agg_params` (latest spec: `percentile`, `percentile_type`), `non_additive_dimension`,
  `filter` and `create_metric` when given. `agg: sum` over `amount` so fingerprints as the
  Canonic measure `sum(amount)`;
- a dbt metric: its `type`, `type_params` (all of them, as written) and `filter`, and the keys
  the latest spec writes beside `type` in place of `type_params`;
- a dbt semantic model: its mapping without its member lists and without `name`,
  `description`, `label` and `meta` (so a renamed model keeps its fingerprint);
- any other dbt member: its mapping.

In a dbt basis every scalar is normalised to text (`1` and `"1"` are one expression, `true`
and `"true"` one flag) and null values are left out (an optional key may be null).

The same basis, as text (`definition_text`), is what drift shows: a measure's first line is
its expression, every other value a `key.path: value` line, sorted, so a change is a line.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

DBT_MEASURE_KEYS = (
    "agg_params",
    "percentile",
    "percentile_type",
    "non_additive_dimension",
    "filter",
    "create_metric",
)
# The latest spec writes a metric's type-specific keys beside `type`, not in `type_params`.
DBT_METRIC_KEYS = (
    "type",
    "type_params",
    "filter",
    "agg",
    "expr",
    "percentile",
    "percentile_type",
    "non_additive_dimension",
    "agg_time_dimension",
    "join_to_timespine",
    "fill_nulls_with",
    "input_metric",
    "input_metrics",
    "window",
    "grain_to_date",
    "period_agg",
    "numerator",
    "denominator",
    "entity",
    "calculation",
    "base_metric",
    "conversion_metric",
    "constant_properties",
)
DBT_SOURCE_EXCLUDED = (
    "entities",
    "dimensions",
    "measures",
    "metrics",
    "columns",
    "name",
    "description",
    "label",
    "meta",
)
_EMPTY: tuple[Any, ...] = (None, {}, [])


def normalise(value: Any) -> Any:
    """A JSON-safe value with every scalar as text and every null left out of mappings."""
    if isinstance(value, dict):
        kept = {str(k): normalise(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None}
    if isinstance(value, list):
        return [normalise(item) for item in value]
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def dbt_measure_basis(definition: dict[str, Any], name: str) -> dict[str, Any]:
    """A dbt measure's basis: its aggregation applied to its expression, and what else
    changes the number it computes."""
    expr = normalise(definition.get("expr"))
    text = _scalar_text(name if expr is None else expr)
    agg = normalise(definition.get("agg"))
    basis: dict[str, Any] = {"expr": f"{_scalar_text(agg)}({text})" if agg is not None else text}
    for key in DBT_MEASURE_KEYS:
        value = normalise(definition.get(key))
        if value not in _EMPTY:
            basis[key] = value
    return basis


def dbt_metric_basis(definition: dict[str, Any], name: str) -> dict[str, Any]:
    """A dbt metric's basis: type, type_params and filter (and the latest spec's keys)."""
    basis = {k: normalise(definition.get(k)) for k in DBT_METRIC_KEYS}
    basis = {k: v for k, v in basis.items() if v not in _EMPTY}
    if "agg" in basis and "expr" not in basis:
        basis["expr"] = name  # a latest-spec simple metric: dbt's default expression
    return basis


def dbt_source_basis(definition: dict[str, Any]) -> dict[str, Any]:
    """A dbt semantic model's basis: what it is built on, not what it is called."""
    kept = {k: v for k, v in definition.items() if k not in DBT_SOURCE_EXCLUDED}
    return dict(normalise(kept))


def dbt_member_basis(definition: dict[str, Any]) -> dict[str, Any]:
    return dict(normalise(definition))


def _key(path: str, key: str) -> str:
    # YAML 1.1 reads a join's `on:` as the key `true` (and so do Canonic's fingerprints):
    # shown as written.
    if key == "true" and path.startswith("joins[") and path.endswith("]"):
        key = "on"
    return f"{path}.{key}" if path else key


def _lines(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, dict) and value:
        for key in sorted(value):
            _lines(value[key], _key(path, str(key)), out)
    elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        for n, item in enumerate(value):
            _lines(item, f"{path}[{n}]", out)
    else:
        text = _scalar_text(value) if not isinstance(value, list) else _flow(value)
        out.append(f"{path}: {text}" if path else text)


def _flow(items: list[Any]) -> str:
    return "[" + ", ".join(_scalar_text(v) for v in items) + "]"


def definition_text(kind: str, basis: Any) -> str:
    """The basis as text: a measure's expression first, then one `key: value` line each."""
    out: list[str] = []
    if kind == "measure" and isinstance(basis, dict) and "expr" in basis:
        out.append(_scalar_text(basis["expr"]))
        rest = {k: v for k, v in basis.items() if k != "expr"}
        if rest:
            _lines(rest, "", out)
    else:
        _lines(basis, "", out)
    return "\n".join(out)


# -- showing a change ---------------------------------------------------------------------


def diff_lines(before: str, after: str) -> list[str]:
    """The lines that differ, unified-diff style (`-old`, `+new`), without context."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm="")
    return [line for line in lines if line[:1] in "-+" and line[:3] not in ("---", "+++")]


def spans_lines(*texts: str) -> bool:
    return any("\n" in text for text in texts)


def one_line(text: str) -> str:
    """A definition on one line (for a finding's message): its lines joined by `; `."""
    return "; ".join(text.splitlines())


def change_phrase(before: str, after: str) -> str:
    """A change for a one-line message: "`A` became `B`", or the lines that differ."""
    if not spans_lines(before, after):
        return f"`{before}` became `{after}`"
    return " ".join(f"{line[0]}`{line[1:]}`" for line in diff_lines(before, after))
