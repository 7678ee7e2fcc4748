"""What `knowl store` is asked to write, and the checks every front end gets alike."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(slots=True)
class Request:
    """What `knowl store` was asked to write."""

    category: str
    title: str
    content: str
    user: str | None = None
    summary: str | None = None
    tags: list[str] = field(default_factory=list)
    sl_refs: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    usage_mode: str | None = None
    confidence: float | None = None
    provenance: str | None = None
    source: str | None = None
    source_commit: str | None = None
    paths: list[str] = field(default_factory=list)
    reasoning: str | None = None
    alternatives: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    conflict_key: str | None = None
    conflict_scope: dict[str, str] = field(default_factory=dict)
    exclusive: bool = False
    supersedes: str | None = None
    visibility: str | None = None
    status: str | None = None  # `draft` for an agent's write under `[writes] agent_status`


def confidence_problem(value: object) -> str | None:
    """What is wrong with `value` as a confidence, or None: a confidence is a finite number in
    [0, 1], or not given. Checked in the library, so that every front end refuses the same
    values (a NaN or an infinity from an MCP client or a Python caller is never written,
    dropped or clamped): the write answers with a refusal naming `confidence` (KB002)."""
    if value is None:
        return None
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is None or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        shown = repr(value) if isinstance(value, int | float) else f"a {type(value).__name__}"
        return f"must be a finite number in [0, 1] (never clamped), not {shown}"
    return None
