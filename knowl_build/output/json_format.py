"""The `json` finding format (SPEC 10)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from knowl_build.diagnostics import Diagnostic, summarize


def repo_path(path: str, prefix: str) -> str:
    """A project-relative path as seen from the git repository's root: `prefix` is the
    project's folder inside the repository ("" or "sub/dir/", as git's --show-prefix says).
    The project itself ("." for project-level findings) becomes the prefix folder."""
    if not prefix:
        return path
    if path == ".":
        return prefix.rstrip("/")
    return prefix + path


def diagnostics_document(
    diagnostics: Sequence[Diagnostic], repo_prefix: str | None = None
) -> dict[str, Any]:
    """Each diagnostic with its `subject` (what it is about, its identity across versions with
    the code and path): a no-op build re-reads the artifact's findings and must fingerprint
    them as the build that made them did. With `repo_prefix` (the CLI's output), each also
    carries `repo_path`; the artifact's diagnostics.json is written without it, as it does not
    depend on where the project sits in a repository."""
    rows = []
    for d in sorted(diagnostics):
        row = {**d.to_json(), "subject": d.subject}
        if repo_prefix is not None:
            row["repo_path"] = repo_path(d.path, repo_prefix)
        rows.append(row)
    return {"version": 1, "diagnostics": rows, "summary": summarize(diagnostics)}


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
