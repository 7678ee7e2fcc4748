"""Validating the project: `check`, `build`, `stale`, `conflicts`, and the rule table.

Each operation takes a project and typed options and returns a typed outcome with the exit
status the command ends with (SPEC 10: 0 clean, 1 findings or a refusal, 2 is an error, raised).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowl_build.app.project import Project
from knowl_build.artifacts.answers import StaleList
from knowl_build.artifacts.schema import StaleRow
from knowl_build.core.config import Config
from knowl_build.core.diagnostics import EXIT_FINDINGS, EXIT_OK, Diagnostic, exit_code_for
from knowl_build.core.layouts import GLOBAL
from knowl_build.core.names import valid_user
from knowl_build.history.git import GitRepo
from knowl_build.pipeline import check as pipeline_check
from knowl_build.pipeline.stages import STAGES as STAGES  # the stages a front end shows
from knowl_build.secrets.scanner import redact

if TYPE_CHECKING:
    from knowl_build.pipeline.analysis import Analysis
    from knowl_build.pipeline.baseline import Baseline
    from knowl_build.pipeline.publish import BuildResult


def repo_prefix(root: Path) -> str:
    """The project's folder inside its git repository ("" at the root or outside git): CI
    resolves annotation and SARIF paths from the repository's root."""
    git = GitRepo.find(root)
    return git.prefix if git is not None else ""


def here_prefix(root: Path, cwd: Path | None = None) -> str | None:
    """The project's folder as seen from the current folder ("" when they are one, "../x/" or
    "analytics/" otherwise) when the current folder is inside the project's git work tree:
    text and github findings print paths that open from where the command was run, as ruff
    and eslint do. None outside the work tree or without git (text stays project-relative,
    github starts at the repository's root)."""
    git = GitRepo.find(root)
    if git is None:
        return None
    here = (cwd or Path.cwd()).resolve()
    top = git.toplevel.resolve()
    if here != top and top not in here.parents:
        return None
    rel = Path(os.path.relpath(root.resolve(), here)).as_posix()
    return "" if rel == "." else rel + "/"


@dataclass(frozen=True, slots=True)
class Compared:
    """What `--baseline` compared against, and how many known findings it hid."""

    ref: str
    commit: str
    hidden: int

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "commit": self.commit, "hidden": self.hidden}


def _reported(
    known: Baseline | None, diagnostics: list[Diagnostic]
) -> tuple[list[Diagnostic], Compared | None]:
    """The findings to report: all of them, or with a baseline the new ones."""
    if known is None:
        return diagnostics, None
    new, hidden = known.new(diagnostics)
    # The ref is the user's text, printed back: it passes the one redaction as any output.
    return new, Compared(redact(known.ref), known.commit, hidden)


@dataclass(frozen=True, slots=True)
class CheckOptions:
    strict: bool = False
    changed_only: bool = False
    use_cache: bool = True
    baseline: str | None = None  # a revision: report only findings new against it
    check_urls: bool | None = None  # ask http(s) link targets (KB110); None: [links] check_urls


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    findings: list[Diagnostic]  # what is reported (with a baseline: the new ones)
    page_count: int
    semantic_file_count: int
    knowledge_exists: bool
    notices: list[str]
    compared: Compared | None
    exit_status: int


def check(project: Project, options: CheckOptions = CheckOptions()) -> CheckOutcome:
    """`knowl check`: every finding of the project (validation covers everything; the
    options filter what is reported)."""
    check_urls = project.config.check_urls if options.check_urls is None else options.check_urls
    result = pipeline_check.check(
        project.root,
        project.config,
        changed_only=options.changed_only,
        use_cache=options.use_cache,
        check_urls=check_urls,
    )
    # After the working tree's check: the base reuses the pages its parse cache now holds,
    # and the answers of the URLs the two share.
    known = _load_baseline(project, options.baseline, check_urls)
    findings, compared = _reported(known, result.diagnostics)
    return CheckOutcome(
        findings,
        result.page_count,
        result.semantic_file_count,
        result.knowledge_exists,
        result.notices,
        compared,
        exit_code_for(findings, strict=options.strict),
    )


def _load_baseline(project: Project, ref: str | None, check_urls: bool = False) -> Baseline | None:
    if ref is None:
        return None
    # Loaded by a check against a baseline only (start-up time of `knowl check`).
    from knowl_build.pipeline import baseline

    return baseline.load(project.root, project.config, ref, check_urls=check_urls)


@dataclass(frozen=True, slots=True)
class BuildOptions:
    strict: bool = False
    allow_errors: bool = False
    full: bool = False
    out: Path | None = None
    baseline: str | None = None
    progress: Callable[[str], None] | None = None  # told each stage's name as it starts


@dataclass(frozen=True, slots=True)
class BuildOutcome:
    result: BuildResult
    findings: list[Diagnostic]  # what is reported (with a baseline: the new ones)
    compared: Compared | None
    exit_status: int


def build(project: Project, options: BuildOptions = BuildOptions()) -> BuildOutcome:
    """`knowl build`: validate and publish an artifact; with a baseline, only new errors
    refuse the publication (the artifact records every finding either way)."""
    # The build's stages, the index, Whoosh: loaded by a build only (start-up time of
    # `knowl check`).
    from knowl_build.pipeline.publish import build as run_build

    known = _load_baseline(project, options.baseline)
    result = run_build(
        project.root,
        project.config,
        full=options.full,
        allow_errors=options.allow_errors,
        out=options.out,
        progress=options.progress,
        gate=None if known is None else (lambda found: known.new(found)[0]),
    )
    findings, compared = _reported(known, result.diagnostics)
    if result.status == "refused":
        status = EXIT_FINDINGS
    elif options.allow_errors:
        warnings = any(d.severity == "warning" for d in findings)
        status = EXIT_FINDINGS if options.strict and warnings else EXIT_OK
    else:
        status = exit_code_for(findings, strict=options.strict)
    return BuildOutcome(result, findings, compared, status)


@dataclass(frozen=True, slots=True)
class StaleOutcome:
    pages: list[StaleRow]  # sorted by scope, id, path

    @property
    def exit_status(self) -> int:
        """1 when a page is not fresh (a script's gate), 0 when none is."""
        return EXIT_FINDINGS if self.pages else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"pages": self.pages}


def stale(project: Project) -> StaleOutcome:
    """The pages that are not fresh, with every reason, from the working tree: freshness
    depends on today's date and on the files as they are, so `knowl stale` and the MCP
    server's `list_stale` (when it serves a project) both answer from here, never from the
    last build's copy."""
    analysis = _analysed(project)
    rows: list[StaleRow] = []
    for page in sorted(analysis.pages, key=lambda p: (p.scope, p.id, p.path)):
        assessment = analysis.assessments.get(page.path)
        if assessment is None or assessment.value == "fresh":
            continue
        data = assessment.to_json()
        rows.append(
            {
                "page": page.id,
                "scope": page.scope,
                "path": page.path,
                "freshness": data["value"],
                "reasons": data["reasons"],
            }
        )
    return StaleOutcome(rows)


def _analysed(project: Project) -> Analysis:
    # Loaded by the commands that analyse the project whole, which a check answered from its
    # memo does not (start-up time of `knowl check`).
    from knowl_build.pipeline.analysis import analyse

    return analyse(project.root, project.config)


@dataclass(frozen=True, slots=True)
class ConflictsOutcome:
    groups: list[dict[str, Any]]
    exit_status: int

    def to_json(self) -> dict[str, Any]:
        return {"groups": self.groups}


def conflicts(project: Project) -> ConflictsOutcome:
    """Every active exclusive page grouped by normalized key and scope; a group of more
    than one page is a violation (exit 1)."""
    # Loaded by `knowl conflicts` only (start-up time of `knowl check`).
    from knowl_build.rules.governance import conflict_groups

    groups = conflict_groups(_analysed(project).pages)
    return ConflictsOutcome(groups, EXIT_FINDINGS if any(g["violation"] for g in groups) else 0)


@dataclass(frozen=True, slots=True)
class RuleRow:
    code: str
    name: str
    default: str
    configured: str
    summary: str
    doc: str


@dataclass(frozen=True, slots=True)
class RuleTable:
    rules: list[RuleRow]
    per_path: list[tuple[str, dict[str, str]]] = field(default_factory=list)


def rule_table(config: Config) -> RuleTable:
    """Every rule with its default and configured severity, and the per-path severities."""
    # Loaded by `knowl rules` only (start-up time of `knowl check`).
    from knowl_build.rules.registry import RULES, severity

    rows = [
        RuleRow(
            rule.code,
            rule.name,
            rule.default,
            severity(config, rule.code),
            rule.summary,
            rule.doc,
        )
        for rule in RULES
    ]
    return RuleTable(rows, [(glob, dict(table)) for glob, table in config.per_path])


def stale_list(
    project: Project, user: str | None, build_id: str, cursor: str | None, limit: int
) -> StaleList:
    """`stale`'s rows that `user` may read (global ones and their own), a page at a time
    (MCP `list_stale`). A cursor is bound to the build being served and to the rows: one
    from before a rebuild or an edit that changed the list is refused."""
    # The reader's paging loads with the MCP tool, not with `knowl check` (start-up time).
    from knowl_build.reader import listing

    user = valid_user(user)  # a bad name is refused before the tree is read
    scopes = {GLOBAL} if user is None else {GLOBAL, f"user:{user}"}
    rows = [row for row in stale(project).pages if row["scope"] in scopes]
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]
    return listing.stale_page(rows, user, cursor, limit, f"{build_id}:{digest}")
