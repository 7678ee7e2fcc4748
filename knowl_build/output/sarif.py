"""The `sarif` finding format: SARIF 2.1.0 for code scanning, the rule table in tool.driver.rules.

Paths are given from the git repository's root (`%SRCROOT%`, where code scanning resolves
them), percent-encoded as URI references must be. Each result carries a partial fingerprint
made of what identifies the finding across versions (code, path, subject), not its line, so
an alert survives an edit above it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from knowl_build import DOCS_URL, __version__
from knowl_build.core.diagnostics import Diagnostic, repo_path
from knowl_build.output import json_format

_LEVEL = {"error": "error", "warning": "warning", "info": "note", "off": "none"}
SRCROOT = "%SRCROOT%"
FINGERPRINT = "knowlFinding/v1"
# GitHub ranks security alerts by this score (9.0 and up critical, 7.0 high, 4.0 medium, lower
# low): a secret in a page is a leak, a sensitive path points at one, an oversized field is
# a resource problem.
SECURITY_SEVERITY = {"KB401": "8.5", "KB402": "5.0", "KB403": "3.0"}


def uri(path: str) -> str:
    """A repository-relative path as a URI reference: spaces, `%`, `#`, `?` and non-ASCII are
    percent-encoded (UTF-8; a name that is not UTF-8 keeps its original bytes)."""
    return quote(path, safe="/", errors="surrogateescape")


def fingerprint(code: str, path: str, subject: str, occurrence: int) -> str:
    """The same finding in another version of the file: the nth (1-based) finding with this
    code and subject in the file, wherever its line moved."""
    text = "\0".join((code, path, subject, str(occurrence)))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _rules(table: Any) -> list[dict[str, Any]]:
    """`tool.driver.rules` from the rule table (`app.checking.RuleTable`)."""
    rules = []
    for rule in table.rules:
        level = rule.configured
        entry: dict[str, Any] = {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.doc},
            "help": {"text": rule.doc},
            "helpUri": f"{DOCS_URL}/rules/#{rule.code.lower()}",
            "defaultConfiguration": {"level": _LEVEL[level], "enabled": level != "off"},
        }
        if rule.code in SECURITY_SEVERITY:
            entry["properties"] = {
                "security-severity": SECURITY_SEVERITY[rule.code],
                "tags": ["security"],
            }
        rules.append(entry)
    return rules


def _results(
    diagnostics: Sequence[Diagnostic], repo_prefix: str, index: dict[str, int]
) -> list[dict[str, Any]]:
    occurrences: Counter[tuple[str, str, str]] = Counter()
    results = []
    for d in sorted(diagnostics):
        path = repo_path(d.path, repo_prefix)
        code, _, subject = d.identity
        occurrences[(code, path, subject)] += 1
        region: dict[str, int] = {"startLine": d.line, "startColumn": d.column}
        if d.end_line is not None and d.end_column is not None:
            # SARIF's endColumn is the column after the region; ours is its last column.
            region.update(endLine=d.end_line, endColumn=d.end_column + 1)
        results.append(
            {
                "ruleId": d.code,
                "ruleIndex": index[d.code],
                "level": _LEVEL[d.severity],
                "message": {"text": d.message if not d.hint else f"{d.message} (hint: {d.hint})"},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": uri(path), "uriBaseId": SRCROOT},
                            "region": region,
                        }
                    }
                ],
                "partialFingerprints": {
                    FINGERPRINT: fingerprint(
                        code, path, subject, occurrences[(code, path, subject)]
                    )
                },
            }
        )
    return results


def document(
    diagnostics: Sequence[Diagnostic],
    rules: Any,
    repo_prefix: str = "",
    *,
    failure: str | None = None,
) -> dict[str, Any]:
    """The SARIF log of a run. With `failure` (the one-line error of a run that stopped, exit
    2), the log holds no result and says so: executionSuccessful false and the error as a
    tool execution notification. `rules` is the rule table (`app.checking.RuleTable`), with
    each rule's configured level."""
    invocation: dict[str, Any] = {"executionSuccessful": failure is None}
    if failure is not None:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": failure}}
        ]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "knowl-build",
                        "version": __version__,
                        "informationUri": DOCS_URL,
                        "rules": _rules(rules),
                    }
                },
                # No absolute local path: the output stays the same on every machine, and
                # code scanning knows where it checked the repository out.
                "originalUriBaseIds": {
                    SRCROOT: {
                        "description": {
                            "text": "The root of the git repository holding the project "
                            "(the project's folder when it is not in git)."
                        }
                    }
                },
                "invocations": [invocation],
                "columnKind": "unicodeCodePoints",
                "results": []
                if failure is not None
                else _results(
                    diagnostics,
                    repo_prefix,
                    {rule.code: i for i, rule in enumerate(rules.rules)},
                ),
            }
        ],
    }


def render(
    diagnostics: Sequence[Diagnostic],
    rules: Any,
    repo_prefix: str = "",
    *,
    failure: str | None = None,
) -> str:
    return json_format.dumps(document(diagnostics, rules, repo_prefix, failure=failure)) + "\n"
