"""`knowl eval`: the project's retrieval tests, asked of its build."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from knowl_build.cli.group import (
    ARTIFACT_OPTION,
    JSON_OPTION,
    cli,
    emit_json,
    global_options,
    settings,
)


@cli.command("eval")
@click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="The eval file (default: [eval] file, knowl-eval.yaml at the project root).",
)
@ARTIFACT_OPTION
@click.option(
    "--build",
    "build_first",
    is_flag=True,
    help="Build the working tree into a temporary folder first and evaluate that (the "
    "project's own build is left alone); for a pre-commit hook.",
)
@click.option(
    "--baseline",
    default=None,
    metavar="REF",
    help="Also build the project at REF (a commit, branch or tag such as origin/main) in a "
    "temporary folder and fail only on questions that passed there; the questions come "
    "from the working tree's file.",
)
@click.option(
    "--min-mrr",
    type=float,
    default=None,
    metavar="X",
    help="Fail when MRR@10 over all questions is below X (default: [eval] min_mrr).",
)
@JSON_OPTION
@global_options
@click.pass_context
def eval_(
    ctx: click.Context,
    file: Path | None,
    artifact: Path | None,
    build_first: bool,
    baseline: str | None,
    min_mrr: float | None,
    as_json: bool,
) -> None:
    """Run the retrieval tests: each question's pages must be in its top k.

    The eval file lists questions, each with the pages a search for it must find (PAGE:
    id, global:<id> or user:<owner>:<id>), optional k (1 to 100, default 5) and user:

    \b
      questions:
        - query: monthly recurring revenue
          pages: [mrr]
          k: 3
        - query: board deck
          pages: [board-deck-notes]
          user: alice

    Answers come from the current build (run knowl build first), --artifact, or --build.
    Prints each question's rank, recall@k, reciprocal rank and nDCG@10, then MRR@10. Exit 1
    when a question misses its k or MRR@10 is below min_mrr; 2 for a bad eval file.

    \b
    Examples:
      knowl build && knowl eval
      knowl eval --build --baseline origin/main
      knowl eval --json --min-mrr 0.8
    """
    # Lazy: the application and the reader load with the command (start-up time).
    from knowl_build.app import evaluation

    found = settings(ctx)
    request = evaluation.EvalRequest(file, artifact, build_first, baseline, min_mrr)
    outcome = evaluation.evaluate(found.locator, request)
    answer = outcome.to_json()
    if as_json:
        emit_json(answer)
    else:
        # Imported here: start-up time (the text renderer only when text is asked for).
        from knowl_build.output.evaluation import render

        render(answer, sys.stdout, quiet=found.quiet)
    ctx.exit(outcome.exit_status)
