"""The `json` finding format (SPEC 10)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from knowl_build.diagnostics import Diagnostic, summarize


def diagnostics_document(diagnostics: Sequence[Diagnostic]) -> dict[str, Any]:
    return {
        "version": 1,
        "diagnostics": [d.to_json() for d in sorted(diagnostics)],
        "summary": summarize(diagnostics),
    }


def render(diagnostics: Sequence[Diagnostic]) -> str:
    return (
        json.dumps(diagnostics_document(diagnostics), indent=2, sort_keys=True, ensure_ascii=False)
        + "\n"
    )
