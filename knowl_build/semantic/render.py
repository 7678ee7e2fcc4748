"""Live definitions rendered into page bodies (SPEC 2.3).

Only `<< sl:NAME >>` and `{{ sl:NAME }}` are substituted; every other character stays as
written. Page text is never treated as a template: no template engine sees it, so `{{ x }}`,
`{% raw %}` or `a << 2` cannot run code, read files or reach the network.
"""

from __future__ import annotations

import re
from typing import Any

from knowl_build.parse.body import DIRECTIVE
from knowl_build.semantic.layer import SemanticLayer


def format_value(value: Any) -> str:
    """Lists render as `a, b`; absent values as ''; scalars verbatim (YAML's spelling of bools)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    return str(value)


def attribute_value(layer: SemanticLayer, name: str) -> str | None:
    """The rendered text of `<entity>.<attribute>`, or None when it names nothing."""
    resolved = layer.resolve_attribute(name)
    if resolved is None:
        return None
    entity, attribute = resolved
    if attribute == "fingerprint":
        return entity.fingerprint
    return format_value(entity.definition.get(attribute))


def render_body(body: str, layer: SemanticLayer) -> str:
    """The body with every known directive replaced; escaped ones lose their backslash."""
    if "sl:" not in body:
        return body

    def substitute(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(0)[1:]
        value = attribute_value(layer, match.group(2) or match.group(3))
        return match.group(0) if value is None else value

    return DIRECTIVE.sub(substitute, body)
