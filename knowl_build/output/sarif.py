"""The `sarif` finding format: SARIF 2.1.0 with the rule table in tool.driver.rules."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from knowl_build import __version__
from knowl_build.config import Config
from knowl_build.diagnostics import Diagnostic
from knowl_build.rules.registry import RULES

_LEVEL = {"error": "error", "warning": "warning", "info": "note", "off": "none"}


def document(diagnostics: Sequence[Diagnostic], config: Config) -> dict[str, Any]:
    index = {rule.code: i for i, rule in enumerate(RULES)}
    rules = []
    for rule in RULES:
        severity = config.severity(rule.code)
        rules.append(
            {
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": rule.doc},
                "help": {"text": rule.doc},
                "defaultConfiguration": {"level": _LEVEL[severity], "enabled": severity != "off"},
            }
        )
    results = []
    for d in sorted(diagnostics):
        region: dict[str, int] = {"startLine": d.line, "startColumn": d.column}
        if d.end_line is not None and d.end_column is not None:
            # SARIF's endColumn is the column after the region; ours is its last column.
            region.update(endLine=d.end_line, endColumn=d.end_column + 1)
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _LEVEL[d.severity],
            "message": {"text": d.message if not d.hint else f"{d.message} (hint: {d.hint})"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": d.path, "uriBaseId": "PROJECTROOT"},
                        "region": region,
                    }
                }
            ],
        }
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "knowl-build", "version": __version__, "rules": rules}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render(diagnostics: Sequence[Diagnostic], config: Config) -> str:
    return (
        json.dumps(document(diagnostics, config), indent=2, sort_keys=True, ensure_ascii=False)
        + "\n"
    )
