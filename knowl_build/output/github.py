"""The `github` finding format: workflow commands, and a step summary table.

GitHub resolves an annotation's `file` from the repository's root, so paths are given from
there (`repo_prefix`, the project's folder in the repository), not from the project.
"""

from __future__ import annotations

from collections.abc import Sequence

from knowl_build.core.diagnostics import Diagnostic, repo_path, summarize

_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}
SUMMARY_ROWS = 500


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic, repo_prefix: str = "") -> str:
    path = repo_path(d.path, repo_prefix)
    params = [f"file={_escape_property(path)}", f"line={d.line}", f"col={d.column}"]
    if d.end_line is not None and d.end_column is not None:
        params += [f"endLine={d.end_line}", f"endColumn={d.end_column}"]
    params.append(f"title={_escape_property(d.code)}")
    message = d.message if not d.hint else f"{d.message}\nhint: {d.hint}"
    return f"::{_COMMAND[d.severity]} {','.join(params)}::{_escape_data(message)}"


def render(diagnostics: Sequence[Diagnostic], repo_prefix: str = "") -> str:
    return "".join(annotation(d, repo_prefix) + "\n" for d in sorted(diagnostics))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def step_summary(diagnostics: Sequence[Diagnostic], title: str, repo_prefix: str = "") -> str:
    """Markdown for $GITHUB_STEP_SUMMARY: GitHub shows only a few annotations per step."""
    counts = summarize(diagnostics)
    lines = [
        f"### {title}",
        "",
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info",
        "",
    ]
    ordered = sorted(diagnostics)
    if ordered:
        lines += ["| location | severity | code | message |", "| --- | --- | --- | --- |"]
        for d in ordered[:SUMMARY_ROWS]:
            where = f"{repo_path(d.path, repo_prefix)}:{d.line}:{d.column}"
            lines.append(f"| `{_cell(where)}` | {d.severity} | {d.code} | {_cell(d.message)} |")
        if len(ordered) > SUMMARY_ROWS:
            lines += [
                "",
                f"... and {len(ordered) - SUMMARY_ROWS} more (see the json or sarif output)",
            ]
    return "\n".join(lines) + "\n"
