"""Findings the analysis stage (pipeline/analysis.py) emits itself, around the rule modules
rather than from one of them: declared here, so this module holds no check.

- KB009, KB010 and KB012 say what git could give the history rules, once, at the project
  (path `.`, 1:1), from the facts history/ gathered;
- KB011 is a suppression comment that hid nothing, known only once every finding is.
"""

from __future__ import annotations

from knowl_build.rules.rule import Rule

NO_GIT = Rule(
    code="KB009",
    name="no-git",
    default="info",
    summary="git history is unavailable; history rules are skipped",
    doc="""The project is not inside a git repository, or git is not installed. Everything
      works except the features that read history.""",
)

SHALLOW_HISTORY = Rule(
    code="KB010",
    name="shallow-history",
    default="warning",
    summary="git history is shallow; history rules cannot see older changes",
    doc="""The repository is a shallow clone (the default of `actions/checkout` is one
      commit), so changes before its oldest commit are unknown. History findings say
      "unknown (shallow history)" instead of claims they cannot back: KB201 does not name
      an expression or commit outside the clone, KB101 no removal before it, and
      entities in the oldest commit have no `introduced_in`. KB203 names only changes
      inside the clone, and KB204/KB205 stay quiet for a `source_commit` the clone does
      not hold. Reported once, at the project, with the number of commits available.
      Fetch the whole history: `fetch-depth: 0` in `actions/checkout`, or
      `git fetch --unshallow`.""",
)

UNUSED_SUPPRESSION = Rule(
    code="KB011",
    name="unused-suppression",
    default="warning",
    summary="a suppression comment suppresses nothing",
    doc="""A `<!-- knowl: disable-next-line CODE -->` or `<!-- knowl: disable CODE -->`
      comment (or `# knowl: ...` in frontmatter) that no finding matched: the problem it
      silenced is gone, or the code or line is wrong. Remove the comment.""",
)

HISTORY_INCOMPLETE = Rule(
    code="KB012",
    name="history-incomplete",
    default="warning",
    summary="git could not read part of the history",
    doc="""A git object or command that history rules need failed: a missing or corrupt
      blob of a page or semantic file, a tree the log needs, an old version a partial
      clone cannot fetch, or a failing `git log`, `rev-list` or `diff-tree`. Each
      finding names the object (id, path, commit) or the command and git's message;
      past ten they are counted in one. The rules go on without it, and claims that
      depend on it say "unknown (history incomplete)". Only pages, semantic YAML and the
      dbt project's model YAML are read, so damage elsewhere (a seed CSV) is not
      reported.""",
)

RULES: tuple[Rule, ...] = (NO_GIT, SHALLOW_HISTORY, UNUSED_SUPPRESSION, HISTORY_INCOMPLETE)
