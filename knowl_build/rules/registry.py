"""The one table of rules: codes, names, default severities and user documentation.

`knowl rules`, the SARIF rule list and the README's rule reference all read this table.
Codes never change meaning and are never reused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from knowl_build.config import PER_PATH, Config
from knowl_build.errors import ConfigError
from knowl_build.hints import did_you_mean


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    name: str
    default: str
    summary: str
    doc: str


def _rule(code: str, name: str, default: str, summary: str, doc: str) -> Rule:
    return Rule(code, name, default, summary, " ".join(doc.split()))


RULES: tuple[Rule, ...] = (
    _rule(
        "KB001",
        "frontmatter-syntax",
        "error",
        "frontmatter is not valid YAML, is not a mapping, repeats a key, or is not closed",
        """The block between the opening `---` line and the next `---` line must be a YAML
          mapping. Reported at the parser's problem position, at the second occurrence of a
          repeated key, or at 1:1 when the closing fence is missing.""",
    ),
    _rule(
        "KB002",
        "field-type",
        "error",
        "a known field has the wrong type or an unknown value",
        """A known frontmatter field holds a value of the wrong type (`tags: revenue` instead
          of a list, a `summary` that YAML reads as a date) or a value outside its allowed set
          (`usage_mode: caveats`). `confidence` outside [0, 1] is refused, never clamped.
          `affected_paths` must be relative paths without `..`. A `meta.last_validated_at`
          that has no UTC time (a quoted `'9999-12-31T23:59:59-12:00'`) is KB002 at the
          value.""",
    ),
    _rule(
        "KB003",
        "reserved-field",
        "error",
        "`id`, `scope` or `path` set in frontmatter",
        """A page's id, scope and path come from its location under `knowledge/`; setting
          them in frontmatter would contradict the file system. Remove the key.""",
    ),
    _rule(
        "KB004",
        "misplaced-page",
        "error",
        "a .md file under knowledge/ outside global/ or user/<owner>/",
        """Pages live in `knowledge/global/` or `knowledge/user/<owner>/`. A Markdown file
          anywhere else under `knowledge/` has no scope; move it. A folder under
          `knowledge/user/` whose name is not a valid user name (the one rule that `--user`
          follows too: no `/`, `\\` or `:`, no leading `.`, no control or invisible
          characters, no surrounding white space, not too long) gives no scope either: its
          pages are KB004, and the message says what is wrong with the name.""",
    ),
    _rule(
        "KB005",
        "duplicate-page-id",
        "error",
        "duplicate page id in one scope",
        """Two pages of one scope (global, or one owner) share a file name. Each file is
          reported once, naming the other. References to the id resolve to the set of them.""",
    ),
    _rule(
        "KB006",
        "unknown-field",
        "warning",
        "unknown frontmatter key",
        """A key that knowl does not know, at the top level or inside `meta` or `conflict`.
          It is kept in the artifact. Usually a typo: the hint names the nearest known key.""",
    ),
    _rule(
        "KB007",
        "not-text",
        "error",
        "a page or semantic file is not UTF-8 text, or its name is not UTF-8 or holds a "
        "control character",
        """The file holds NUL bytes or bytes that are not UTF-8. It draws no other finding.
          A file or folder whose *name* is not UTF-8, or holds a control character (C0 such
          as ESC, newline or tab, DEL, C1), is reported the same way and skipped (a folder
          with everything under it); its path is shown with each undecodable byte and
          control character written as `\\xNN`, so every output prints it on one line and
          no terminal acts on it.""",
    ),
    _rule(
        "KB008",
        "symlink-escape",
        "warning",
        "a symlink leaves the project or its scope, or points at a hidden or ignored file, "
        "and is skipped",
        """A symbolic link under `knowledge/`, `semantics/` or a dbt model path resolves
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
          project is a configuration error, exit 2.)""",
    ),
    _rule(
        "KB009",
        "no-git",
        "info",
        "git history is unavailable; history rules are skipped",
        """The project is not inside a git repository, or git is not installed. Everything
          works except the features that read history.""",
    ),
    _rule(
        "KB010",
        "shallow-history",
        "warning",
        "git history is shallow; history rules cannot see older changes",
        """The repository is a shallow clone (the default of `actions/checkout` is one
          commit), so changes before its oldest commit are unknown. History findings say
          "unknown (shallow history)" instead of claims they cannot back: KB201 does not name
          an expression or commit outside the clone, KB101 no removal before it, and
          entities in the oldest commit have no `introduced_in`. KB203 names only changes
          inside the clone, and KB204/KB205 stay quiet for a `source_commit` the clone does
          not hold. Reported once, at the project, with the number of commits available.
          Fetch the whole history: `fetch-depth: 0` in `actions/checkout`, or
          `git fetch --unshallow`.""",
    ),
    _rule(
        "KB011",
        "unused-suppression",
        "warning",
        "a suppression comment suppresses nothing",
        """A `<!-- knowl: disable-next-line CODE -->` or `<!-- knowl: disable CODE -->`
          comment (or `# knowl: ...` in frontmatter) that no finding matched: the problem it
          silenced is gone, or the code or line is wrong. Remove the comment.""",
    ),
    _rule(
        "KB012",
        "history-incomplete",
        "warning",
        "git could not read part of the history",
        """A git object or command that history rules need failed: a missing or corrupt
          blob of a page or semantic file, a tree the log needs, an old version a partial
          clone cannot fetch, or a failing `git log`, `rev-list` or `diff-tree`. Each
          finding names the object (id, path, commit) or the command and git's message;
          past ten they are counted in one. The rules go on without it, and claims that
          depend on it say "unknown (history incomplete)". Only pages, semantic YAML and the
          dbt project's model YAML are read, so damage elsewhere (a seed CSV) is not
          reported.""",
    ),
    _rule(
        "KB050",
        "semantic-layer",
        "error",
        "semantic layer file invalid",
        """A file under `semantics/` is not valid YAML, is not a mapping, lacks a string
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
    ),
    _rule(
        "KB101",
        "unknown-sl-ref",
        "error",
        "`sl_refs` item names no live entity",
        """An `sl_refs` entry must name a semantic entity: `<connection>.<source>` or
          `<connection>.<source>.<member>`. The hint names the nearest entity.""",
    ),
    _rule(
        "KB102",
        "unknown-ref",
        "error",
        "`refs` item names no page",
        """A `refs` entry must be the id (or scope-relative path) of a page.""",
    ),
    _rule(
        "KB103",
        "broken-link",
        "error",
        "`[[link]]` or embed names no page or file",
        """The target of a wiki-link or embed matches no page visible from the linking page
          and, for targets with a file extension, no file under `knowledge/`. Matching is
          exact: no case folding, no fuzzy match; the hint suggests the nearest id.""",
    ),
    _rule(
        "KB104",
        "invisible-target",
        "error",
        "a ref or link names a page that is not visible from here",
        """A global page points at a user page, or a user page at another user's page. Global
          pages are read by everyone and must not depend on personal pages.""",
    ),
    _rule(
        "KB105",
        "unknown-heading",
        "warning",
        "`[[id#Heading]]`: the target has no such heading",
        """Headings are compared case-insensitively with whitespace collapsed and inline
          markup removed; `#^block` references are not checked.""",
    ),
    _rule(
        "KB106",
        "unknown-directive-target",
        "error",
        "a live-definition directive names an unknown entity or attribute",
        """`<< sl:ENTITY.ATTR >>` and `{{ sl:ENTITY.ATTR }}` must name an existing entity and
          an attribute of its kind (measure: expr, description, additivity, fingerprint;
          dimension: column, granularity, label, description; column: type, nullable,
          description; source: table, description, grain).""",
    ),
    _rule(
        "KB107",
        "unbound-fingerprint",
        "warning",
        "a `bound_fingerprints` key is not in the page's `sl_refs`",
        """`meta.bound_fingerprints` records the definitions the page was written against;
          an entry for an entity the page does not reference is left over from an edit.""",
    ),
    _rule(
        "KB201",
        "drift",
        "warning",
        "a bound fingerprint differs from the live one",
        """The definition the page was written against has changed. The finding names the
          commit that changed it and shows both expressions. Review the page, then run
          `knowl review`.""",
    ),
    _rule(
        "KB202",
        "stale",
        "warning",
        "`last_validated_at` missing or older than `staleness_days`",
        """Nobody has confirmed the page against the live definitions recently. Set
          `[rules] KB202 = "off"` for repositories that do not track validation dates.""",
    ),
    _rule(
        "KB203",
        "definition-changed",
        "warning",
        "an `sl_refs` entity changed after `last_validated_at`",
        """An entity the page is about was changed by a commit dated after the page was
          last validated.""",
    ),
    _rule(
        "KB204",
        "affected-path-changed",
        "warning",
        "a file in `affected_paths` changed since `source_commit`",
        """The knowledge was derived at `source_commit`; a file it is about has changed or
          been deleted since.""",
    ),
    _rule(
        "KB205",
        "unknown-source-commit",
        "warning",
        "`source_commit` is not a commit reachable from HEAD",
        """The commit the knowledge was derived from is not in the history of HEAD (a typo,
          or a rebased-away commit).""",
    ),
    _rule(
        "KB301",
        "exclusive-conflict",
        "error",
        "two active exclusive pages share a conflict key and scope",
        """Pages with `conflict.exclusive: true` claim to be the only active answer for their
          normalized `conflict.key` and `conflict.scope`, project-wide. Supersede one.""",
    ),
    _rule(
        "KB302",
        "broken-supersession",
        "error",
        "supersession broken",
        """`status: superseded` needs `superseded_by`, `superseded_by` needs that status, the
          target must be a visible page, and supersession must not form a cycle.""",
    ),
    _rule(
        "KB303",
        "user-shadows-global",
        "info",
        "a user page has the id of a global page",
        """References to the id resolve to the global page; the user page becomes an
          annotation of it in search and show.""",
    ),
    _rule(
        "KB401",
        "secret",
        "error",
        "a secret in the page",
        """A private key, a URL with credentials, a named secret, a known token prefix, a
          high-entropy word or an `extra_patterns` match in a frontmatter value, a
          frontmatter key (at any depth, such as a key inside `meta`), a frontmatter comment
          (`# token: …`), the whole frontmatter when it is not valid YAML, or the body (code
          included). Inside a URL (from its `scheme://` or `www.` to whitespace, a backtick or
          one of `< > " ' ) ] |`, less trailing punctuation) only credentials where they live are
          reported: a password in the userinfo (`scheme://user:password@`, the user may be
          empty), a query or fragment parameter named like a credential (`token`, `key`,
          `secret`, `password`, `pwd`, `sig`, `signature`, `auth`, `jwt`, or a name ending
          in one, such as `access_token`, `X-Amz-Signature`, `client_secret`, `apiKey`)
          whose value has 16 characters or more and is no placeholder, the path of a Slack,
          Discord, Telegram or Teams webhook, and known token prefixes; ids and slugs in a
          URL's path and other parameters are not secrets. The message names the kind and
          where it is, never the value or the key; a credential in a URL is located at its
          value.""",
    ),
    _rule(
        "KB402",
        "sensitive-path",
        "error",
        "a sensitive path in `affected_paths` or `source`",
        """`.env`, `.env.*`, names containing `credential` or `secret`, `id_rsa`, `*.pem`,
          `*.p12`, `*.pfx`, `*.key` (names ending `.example`, `.sample`, `.template` or
          `.dist` are allowed).""",
    ),
    _rule(
        "KB403",
        "too-large",
        "error",
        "a frontmatter string or the body is too long",
        """A frontmatter string longer than `[security] max_field_chars` (each list item
          counted alone) or a body longer than `max_body_chars`, in characters.""",
    ),
)

RULES_BY_CODE: Mapping[str, Rule] = {rule.code: rule for rule in RULES}


def severity(config: Config, code: str, path: str | None = None) -> str:
    """The severity `code` has for a finding in `path`: as configured, else the default."""
    return config.configured(code, path) or RULES_BY_CODE[code].default


def check_config(config: Config) -> Config:
    """`config`, once every rule code it names is a known one (ConfigError otherwise, naming
    the file and the key, with a did-you-mean)."""
    known = [*RULES_BY_CODE, PER_PATH]
    tables = [("rules.", config.rules)] + [
        (f"rules.{PER_PATH}.{glob}.", table) for glob, table in config.per_path
    ]
    for prefix, table in tables:
        for code in table:
            if code not in RULES_BY_CODE:
                close = did_you_mean(code, known)
                raise ConfigError(
                    f"{config.source or 'configuration'}: '{prefix}{code}': unknown rule code"
                    + (f" ({close})" if close else "")
                )
    return config
