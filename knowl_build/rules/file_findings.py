"""Findings about the project's files as they are read: declared here, emitted by the stages
that read the files, before any rule module runs (so this module holds no check).

- KB001 by the page reader (pipeline/pages.py), when the frontmatter does not parse;
- KB004 by pipeline/pages.py, with the message core/resolve.py words, for a page outside every
  scope;
- KB007 by discovery (pipeline/discover.py) for names, and for contents by the page reader
  and the semantic readers (semantic/layer.py, semantic/dbt.py);
- KB008 by discovery, for symlinks it does not follow;
- KB050 by the semantic readers, and by discovery for a dbt `model-paths` item.
"""

from __future__ import annotations

from knowl_build.rules.rule import Rule

FRONTMATTER_SYNTAX = Rule(
    code="KB001",
    name="frontmatter-syntax",
    default="error",
    summary="frontmatter is not valid YAML, is not a mapping, repeats a key, or is not closed",
    doc="""The block between the opening `---` line and the next `---` line must be a YAML
      mapping. Reported at the parser's problem position, at the second occurrence of a
      repeated key, or at 1:1 when the closing fence is missing.""",
)

MISPLACED_PAGE = Rule(
    code="KB004",
    name="misplaced-page",
    default="error",
    summary="a .md file under knowledge/ outside global/ or user/<owner>/",
    doc="""Pages live in `knowledge/global/` or `knowledge/user/<owner>/`. A Markdown file
      anywhere else under `knowledge/` has no scope; move it. A folder under
      `knowledge/user/` whose name is not a valid user name (the one rule that `--user`
      follows too: no `/`, `\\` or `:`, no leading `.`, no control or invisible
      characters, no surrounding white space, not too long) gives no scope either: its
      pages are KB004, and the message says what is wrong with the name. So is a page whose
      path under its scope folder holds a secret (what KB401 finds): a page's name is printed
      in every answer, the artifact and the site, so a name that is a secret names no page;
      the finding shows the path redacted.""",
)

NOT_TEXT = Rule(
    code="KB007",
    name="not-text",
    default="error",
    summary="a page or semantic file is not UTF-8 text, or its name is not UTF-8 or holds a "
    "control character",
    doc="""The file holds NUL bytes or bytes that are not UTF-8. It draws no other finding.
      A file or folder whose *name* is not UTF-8, or holds a control character (C0 such
      as ESC, newline or tab, DEL, C1), is reported the same way and skipped (a folder
      with everything under it); its path is shown with each undecodable byte and
      control character written as `\\xNN`, so every output prints it on one line and
      no terminal acts on it.""",
)

SYMLINK_ESCAPE = Rule(
    code="KB008",
    name="symlink-escape",
    default="warning",
    summary="a symlink leaves the project or its scope, or points at a hidden or ignored file, "
    "and is skipped; or a Markdown link's path leaves the project",
    doc="""A symbolic link under `knowledge/`, `semantics/` or a dbt model path resolves
      outside the project root, or `dbt_project.yml` itself does. It is not followed, so
      nothing outside the project is ever read. Under `knowledge/`, a link whose target
      lies in `knowledge/` but in another scope (a global page or folder linked to a
      user's, a user's folder linked to another user's, a user page linked to a global
      one) is skipped too: a page's scope comes from its real path, never from a link.
      Links into other parts of the project are followed, unless the target's real path
      has a name starting with `.` (`.env`, `.git/`, `.knowl/`) or git ignores it: a
      link reads nothing discovery itself skips (git is asked once per run for all
      targets; if it cannot answer, every link is refused). (A configured
      `knowledge_dir`, `semantics_dir` or dbt `project_dir` that leads outside the
      project is a configuration error, exit 2.) A Markdown link or image whose path leads
      outside the project (`[x](../../../etc/passwd)`, or through a symlink that does:
      `[x](etclink/passwd)`) is KB008 at the link: nothing outside the project is looked at.
      So is one into git's or knowl's own folder (`[x](../../.git/config)`, `.knowl/`): they
      are no part of the project's files, whether or not the file is there.""",
)

SEMANTIC_LAYER = Rule(
    code="KB050",
    name="semantic-layer",
    default="error",
    summary="semantic layer file invalid",
    doc="""A file under `semantics/` is not valid YAML, is not a mapping, lacks a string
      `name`, `connection` or `table`, uses a name with characters other than
      `[A-Za-z0-9_-]`, redefines a source name owned by an earlier file, defines two
      members of one kind with one name, declares a grain or dimension column that is not
      a declared column, or has a measure without `expr`. A scalar that YAML cannot turn
      into a value (an impossible date such as `2024-02-30`, a timestamp out of range, an
      integer of more than 4,300 digits or beyond 1.8e308, a float that overflows) is
      invalid YAML, reported at the scalar (page frontmatter: KB001). For a dbt project:
      the same checks on its model files and `dbt_project.yml`, and every `model-paths`
      item (or `source-paths`, read when `model-paths` is absent) must name a folder
      inside the project: an absolute path, one that climbs out with `..`, or one that
      leads out through a symlink is reported at the item and not read.""",
)

RULES: tuple[Rule, ...] = (
    FRONTMATTER_SYNTAX,
    MISPLACED_PAGE,
    NOT_TEXT,
    SYMLINK_ESCAPE,
    SEMANTIC_LAYER,
)
