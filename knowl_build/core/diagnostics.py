"""Findings as values: the Diagnostic record, severities and exit codes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# Severities and exit codes, kept in `vocabulary` and named here too.
from knowl_build.core.vocabulary import EXIT_FINDINGS as EXIT_FINDINGS
from knowl_build.core.vocabulary import EXIT_OK as EXIT_OK
from knowl_build.core.vocabulary import EXIT_USAGE as EXIT_USAGE
from knowl_build.core.vocabulary import SEVERITIES as SEVERITIES
from knowl_build.core.vocabulary import SEVERITY_CHOICES as SEVERITY_CHOICES
from knowl_build.secrets.scanner import redact


@dataclass(frozen=True, order=True, slots=True)
class Diagnostic:
    """One finding at a 1-based position. Ordering is path, line, column, code."""

    path: str
    line: int
    column: int
    code: str
    severity: str
    message: str
    hint: str | None = None
    end_line: int | None = None
    end_column: int | None = None
    # What the finding is about, in words that stay when lines move and details change (an
    # entity, a link, a key): with the code and path, its identity across versions.
    subject: str | None = None

    def __post_init__(self) -> None:
        _redact_texts(self)

    @property
    def identity(self) -> tuple[str, str, str]:
        """(code, path, subject): the same finding in another version of the project."""
        return (self.code, self.path, self.subject or self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "hint": self.hint,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(
            path=data["path"],
            line=data["line"],
            column=data["column"],
            code=data["code"],
            severity=data["severity"],
            message=data["message"],
            hint=data.get("hint"),
            end_line=data.get("end_line"),
            end_column=data.get("end_column"),
            subject=data.get("subject"),
        )


@dataclass(frozen=True, slots=True)
class Finding:
    """A finding before its path and configured severity are known (page-local, cacheable)."""

    code: str
    line: int
    column: int
    message: str
    hint: str | None = None
    end_line: int | None = None
    end_column: int | None = None
    subject: str | None = None  # see Diagnostic.subject

    def __post_init__(self) -> None:
        _redact_texts(self)

    def at(self, path: str, severity: str) -> Diagnostic:
        return Diagnostic(
            path,
            self.line,
            self.column,
            self.code,
            severity,
            self.message,
            self.hint,
            self.end_line,
            self.end_column,
            self.subject,
        )

    def to_list(self) -> list[Any]:
        return [
            self.code,
            self.line,
            self.column,
            self.message,
            self.hint,
            self.end_line,
            self.end_column,
            self.subject,
        ]


def _redact_texts(finding: Finding | Diagnostic) -> None:
    """Messages quote what pages say (a link, a key, a value) and paths are file names anyone
    chose; whatever in them looks like a secret is replaced where the finding is made, so no
    output format can carry it."""
    if isinstance(finding, Diagnostic):
        path = redact(finding.path)
        if path is not finding.path:
            object.__setattr__(finding, "path", path)
    if finding.subject is not None:
        subject = redact(finding.subject)
        if subject is not finding.subject:
            object.__setattr__(finding, "subject", subject)
    message = redact(finding.message)
    if message is not finding.message:
        object.__setattr__(finding, "message", message)
    if finding.hint is not None:
        hint = redact(finding.hint)
        if hint is not finding.hint:
            object.__setattr__(finding, "hint", hint)


def summarize(diagnostics: Iterable[Diagnostic]) -> dict[str, int]:
    counts = {severity: 0 for severity in SEVERITIES}
    for diagnostic in diagnostics:
        counts[diagnostic.severity] += 1
    return counts


def exit_code_for(diagnostics: Iterable[Diagnostic], *, strict: bool) -> int:
    counts = summarize(diagnostics)
    if counts["error"] or (strict and counts["warning"]):
        return EXIT_FINDINGS
    return EXIT_OK


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
