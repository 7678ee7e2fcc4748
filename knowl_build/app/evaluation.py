"""`knowl eval`: the project's retrieval tests (`knowl-eval.yaml`) asked of a build and scored.

The questions are answered from an artifact with the search `knowl search` runs: the
project's current build (as `knowl search` finds it), `--artifact`, or with `build_first` the
working tree built into a temporary folder. `--baseline REF` builds the project at REF in a
temporary folder too and asks it the same questions, read from the working tree's file: a
question fails the run only if it passed at REF, and `[eval] min_mrr` only if REF met it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowl_build.app.project import Locator, Project
from knowl_build.app.reading import artifact_folder
from knowl_build.core.diagnostics import EXIT_FINDINGS, EXIT_OK
from knowl_build.core.errors import UsageError
from knowl_build.parse.evalfile import Suite, parse_suite
from knowl_build.pipeline import snapshot
from knowl_build.reader import Reader
from knowl_build.reader.evaluation import CUTOFF, Scored, score
from knowl_build.reader.view import ArtifactView, find_artifact
from knowl_build.secrets.scanner import redact


@dataclass(frozen=True, slots=True)
class EvalRequest:
    file: Path | None = None  # default: [eval] file of the project
    artifact: Path | None = None  # default: the project's current build
    build_first: bool = False  # build the working tree into a temporary folder first
    baseline: str | None = None  # a revision: fail only on questions that passed there
    min_mrr: float | None = None  # default: [eval] min_mrr


@dataclass(frozen=True, slots=True)
class Baseline:
    ref: str
    commit: str
    scored: list[Scored]

    @property
    def mrr(self) -> float:
        return _mean([s.reciprocal_rank for s in self.scored])


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    file: str
    build: dict[str, Any]
    scored: list[Scored]
    baseline: Baseline | None
    min_mrr: float
    exit_status: int

    def status(self, n: int) -> str:
        """`pass`, `fail`, or `known` (failing here, and already at the baseline)."""
        if self.scored[n].passed:
            return "pass"
        if self.baseline is not None and not self.baseline.scored[n].passed:
            return "known"
        return "fail"

    @property
    def mrr(self) -> float:
        return _mean([s.reciprocal_rank for s in self.scored])

    @property
    def mrr_failed(self) -> bool:
        """Below min_mrr, and (with a baseline) REF was not below it too."""
        below = self.mrr < self.min_mrr
        if self.baseline is not None:
            return below and self.baseline.mrr >= self.min_mrr
        return below

    def to_json(self) -> dict[str, Any]:
        questions = []
        for n, s in enumerate(self.scored):
            q = s.question
            row: dict[str, Any] = {
                "query": redact(q.query),
                "user": q.user,
                "k": q.k,
                "line": q.line,
                "column": q.column,
                "pages": list(q.pages),
                "rank": s.rank,
                "ranks": [{"page": p, "rank": r} for p, r in s.ranks.items()],
                "missing": [{"page": p, "reason": why} for p, why in s.missing.items()],
                "top": list(s.top),
                "recall_at_k": round(s.recall, 6),
                "reciprocal_rank": round(s.reciprocal_rank, 6),
                "ndcg_at_10": round(s.ndcg, 6),
                "status": self.status(n),
            }
            if self.baseline is not None:
                base = self.baseline.scored[n]
                row["baseline"] = {"rank": base.rank, "passed": base.passed}
            questions.append(row)
        statuses = [row["status"] for row in questions]
        return {
            "version": 1,
            "file": self.file,
            "build": self.build,
            "baseline": None
            if self.baseline is None
            else {
                "ref": redact(self.baseline.ref),
                "commit": self.baseline.commit,
                "mrr_at_10": round(self.baseline.mrr, 6),
            },
            "questions": questions,
            "summary": {
                "questions": len(questions),
                "passed": statuses.count("pass"),
                "failed": statuses.count("fail"),
                "known": statuses.count("known"),
                "mrr_at_10": round(self.mrr, 6),
                "recall_at_k": round(_mean([s.recall for s in self.scored]), 6),
                "ndcg_at_10": round(_mean([s.ndcg for s in self.scored]), 6),
                "min_mrr": self.min_mrr,
                "mrr_failed": self.mrr_failed,
                "cutoff": CUTOFF,
            },
        }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def read_suite(project: Project, file: Path | None) -> Suite:
    """The eval file: `file` as given, else `[eval] file` (which config_loader keeps inside
    the project). The label in messages is the path as the user knows it."""
    if file is None:
        path = project.root / project.config.eval_file
        label = project.config.eval_file
        hint = " (write one, or name another with [eval] file or --file; see knowl eval --help)"
    else:
        path, label, hint = file, str(file), ""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{label}: no eval file{hint}") from None
    except OSError as exc:
        raise UsageError(f"{label}: cannot read the eval file ({exc.strerror or exc})") from None
    return parse_suite(data, label)


@contextlib.contextmanager
def _reader(locator: Locator, project: Project, request: EvalRequest) -> Iterator[Reader]:
    if request.build_first:
        with snapshot.built_now(project.root, project.config) as built:
            reader = Reader.open(built.folder)
            with reader:
                yield reader
        return
    # The project's own build or --artifact, as `knowl search` finds them; not its peers.
    with Reader(ArtifactView.open(find_artifact(artifact_folder(locator, request.artifact)))) as r:
        yield r


def evaluate(locator: Locator, request: EvalRequest = EvalRequest()) -> EvalOutcome:
    """Every question of the eval file asked of the build (and of REF's, with a baseline);
    exit 1 when a question fails (one that passed at REF, with a baseline) or min_mrr is
    missed."""
    if request.artifact is not None and request.build_first:
        raise UsageError("--artifact and --build exclude each other: evaluate one artifact")
    if request.min_mrr is not None and not 0 <= request.min_mrr <= 1:
        raise UsageError(f"--min-mrr: must be a number from 0 to 1, got {request.min_mrr}")
    project = locator.project() if request.build_first or request.baseline else None
    project = project or locator.reader_project()
    suite = read_suite(project, request.file)
    with _reader(locator, project, request) as reader:
        scored = score(reader, suite.questions)
        build = {"id": reader.view.build["id"], "commit": reader.view.build["commit"]}
    base = None
    if request.baseline is not None:
        with snapshot.built_at(project.root, project.config, request.baseline) as built:
            reader = Reader.open(built.folder)
            with reader:
                scored_at = score(reader, suite.questions)
            base = Baseline(request.baseline, built.commit or "", scored_at)
    min_mrr = project.config.eval_min_mrr if request.min_mrr is None else request.min_mrr
    outcome = EvalOutcome(suite.path, build, scored, base, min_mrr, EXIT_OK)
    failed = any(outcome.status(n) == "fail" for n in range(len(scored)))
    status = EXIT_FINDINGS if failed or outcome.mrr_failed else EXIT_OK
    return EvalOutcome(suite.path, build, scored, base, min_mrr, status)
