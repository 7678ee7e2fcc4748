"""The `json` finding format (SPEC 10)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from knowl_build.diagnostics import Diagnostic, diagnostics_document


def render(
    diagnostics: Sequence[Diagnostic],
    repo_prefix: str = "",
    baseline: dict[str, Any] | None = None,
) -> str:
    """The json document; with `--baseline`, a `baseline` object says against what the
    findings were compared and how many known ones were hidden."""
    document = diagnostics_document(diagnostics, repo_prefix)
    if baseline is not None:
        document["baseline"] = baseline
    return (
        json.dumps(
            document,
            indent=2,
            sort_keys=True,
            ensure_ascii=False,
        )
        + "\n"
    )
