"""Configuration: the frozen `Config`, whose fields are the keys of knowl.toml.

Each key is declared once, as a field: `option(key, kind, default, doc)` names the dotted key,
its kind (type, bounds or choices, check: `config_options`), its default and its
documentation. `config_loader` validates knowl.toml from these declarations, `SCHEMA` lists
them for the documentation's configuration page, and `Config.to_json` (the configuration's
hash) records those the build depends on."""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from knowl_build.core.config_options import (
    Boolean,
    Choice,
    File,
    Folder,
    GlobSeverities,
    HttpAddress,
    Integer,
    Number,
    Option,
    Severities,
    Strings,
    Text,
    Weights,
    option,
    options_of,
)
from knowl_build.core.layouts import LAYOUTS, SCOPED, Layout
from knowl_build.core.linkpaths import MAX_EXCLUDE_PATTERNS, exclude_problem
from knowl_build.core.vocabulary import MAX_BOOST, MAX_CAVEATS

# `title` is the page's names (title, file name, aliases); the values are tuned on the quality
# benchmark (bench/quality_bench.py) with index/ranking.py's K1 and B.
DEFAULT_BOOSTS = MappingProxyType(
    {"summary": 3.0, "tags": 2.0, "title": 1.0, "body": 1.0, "headings": 0.5}
)
BOOST_FIELDS = tuple(DEFAULT_BOOSTS)
PER_PATH = "per-path"
# [links] resolution: how a wiki-link names its page (core/resolve.py).
EXACT = "exact"
OBSIDIAN = "obsidian"
DENDRON = "dendron"
RESOLUTIONS = (EXACT, OBSIDIAN, DENDRON)
# [links] case_only: how a link that resolves only by ignoring case is reported (KB109).
CASE_ONLY_CODE = "KB109"
CASE_ONLY_CHOICES = ("ignore", "warning", "error")
# Hugo shortcodes whose bodies are code on every Hugo site: Hugo's own `highlight` and
# `code-toggle` (the docs' configuration examples in TOML, YAML and JSON), most themes' `code`.
CODE_SHORTCODES = ("code-toggle", "highlight", "code")
# A Hugo shortcode's name, as Hugo reads it (a path for shortcodes in sub-folders).
SHORTCODE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")
# [writes] agent_status: `draft` holds an agent's page for a person's review.
AGENT_STATUSES = ("active", "draft")
# Frontmatter keys Obsidian owns: not KB006 when links resolve as Obsidian does.
OBSIDIAN_KEYS = (
    "aliases",
    "tags",
    "cssclasses",
    "publish",
    "permalink",
    "description",
    "image",
    "cover",
)
# Frontmatter keys Dendron owns (its notes, publishing, task notes, templates, tutorial and
# the pods that write notes): not KB006 when links resolve as Dendron does. `id` is Dendron's
# note id there, not knowl's (KB003); `title`, `tags` and `status` are knowl's fields too (a
# `status` outside knowl's values is a task note's: see pipeline/pages.py).
DENDRON_KEYS = (
    # a note's own, and what Dendron's pods record in it
    *("id", "desc", "updated", "created", "stub", "config", "traitIds", "parent", "children"),
    *("custom", "data", "uri", "color", "image", "templateId", "pods"),
    # publishing
    *("excerpt", "published", "nav_order", "nav_exclude", "nav_exclude_children", "noindex"),
    *("canonicalUrl", "gitNoLink", "gitNotePath", "has_collection", "sort_by", "sort_order"),
    *("skipLevels", "date", "enableGiscus", "toc"),
    # task notes, the tutorial's notes, the Google Docs and Airtable pods
    *("due", "priority", "owner", "currentStep", "totalSteps"),
    *("documentId", "revisionId", "commentsUpdated", "airtableId"),
)


@functools.lru_cache(maxsize=256)
def glob_regex(glob: str) -> re.Pattern[str]:
    """A path glob as a regular expression over project-relative paths: `*` and `?` stay in
    one folder, `**` spans folders (`knowledge/**/drafts/*.md`), `[abc]` is a class.

    Repeated `**` segments are one (`**/**/x` is `**/x`): each would be an optional group
    that can match the same folders, and a regular expression tries every way to split a
    path between them, exponentially many (a glob is configuration a pull request can set).
    A class that does not compile (`[z-a]`) is re.error, which the loader reports."""
    while "**/**" in glob or "***" in glob:
        glob = glob.replace("**/**", "**").replace("***", "**")
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


# --- checks of one list item: the problem, or None --------------------------------------


def _pattern(item: str) -> str | None:
    return None if item else "patterns must not be empty strings"


def _path(item: str) -> str | None:
    return f"{item!r} is no path: it holds a NUL character" if "\0" in item else None


def _glob(item: str) -> str | None:
    if not item.strip("/"):
        return "globs must not be empty"
    if item.count("**") > MAX_GLOB_STARS:
        return f"{item!r} has more than {MAX_GLOB_STARS} '**' (each spans any folders)"
    try:
        glob_regex(item.rstrip("/"))
    except re.error as exc:
        return f"{item!r} is no glob: {exc}"
    return _path(item)


MAX_GLOB_STARS = 4


def _key(item: str) -> str | None:
    return None if item.strip() else "keys must not be empty strings"


def _shortcode(item: str) -> str | None:
    if SHORTCODE_NAME.fullmatch(item):
        return None
    return f"{item!r} is not a shortcode name (letters, digits, _./-)"


def _exclude(item: str) -> str | None:
    problem = exclude_problem(item)
    return None if problem is None else f"pattern {item[:80]!r} {problem}"


# --- the keys, in documentation order ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """[search]: how the index weighs and finds text."""

    boosts: Mapping[str, float] = option(
        "search.boosts",
        Weights(DEFAULT_BOOSTS, MAX_BOOST),
        DEFAULT_BOOSTS,
        f"How much a match counts in each field of a page: `{'`, `'.join(BOOST_FIELDS)}`, each "
        f"greater than 0 and at most {MAX_BOOST:g}. Fields left out keep their defaults; the "
        "boosts are recorded in the artifact, so every reader ranks the same way.",
    )
    max_caveats: int = option(
        "search.max_caveats",
        Integer(0, MAX_CAVEATS),
        3,
        "At most this many caveats ride along with a search's hits: visible active `caveat` "
        "pages that share an entity with a hit, most shared entities first "
        "([Reading and search](reading.md#search)).",
    )


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    """[security]: the secret checks and the size limits of page text."""

    reject_secrets: bool = option(
        "security.reject_secrets",
        Boolean(),
        True,
        "Report secrets ([KB401](rules.md#kb401)) and sensitive paths "
        "([KB402](rules.md#kb402)). `false` turns both checks off; the size limits "
        "([KB403](rules.md#kb403)) stay.",
    )
    max_field_chars: int = option(
        "security.max_field_chars",
        Integer(1),
        20000,
        "The longest frontmatter string, in characters, each list item counted alone; a longer "
        "one is [KB403](rules.md#kb403).",
    )
    max_body_chars: int = option(
        "security.max_body_chars",
        Integer(1),
        200000,
        "The longest page body, in characters, the line break that ends the file not "
        "counted; a longer one is [KB403](rules.md#kb403).",
    )
    extra_patterns: tuple[str, ...] = option(
        "security.extra_patterns",
        Strings(_pattern),
        (),
        "More case-insensitive substrings that count as secrets ([KB401](rules.md#kb401)), "
        "such as an internal host name; every message of the run hides them too. An empty "
        "string is an error.",
    )


@dataclass(frozen=True, slots=True)
class Config:
    """The effective configuration of one project: each field but `source` (the file it came
    from) is a key of knowl.toml, or a section of them."""

    knowledge_dir: str = option(
        "knowledge_dir",
        Folder(),
        "knowledge",
        "The folder of the pages, relative to the project root (`.` for the root itself): "
        "global pages under `<knowledge_dir>/global/`, each user's under "
        "`<knowledge_dir>/user/<owner>/`, or as `knowledge.layout` says "
        "([Pages and frontmatter](concepts/pages.md)).",
    )
    semantics_dir: str = option(
        "semantics_dir",
        Folder(),
        "semantics",
        "The folder of the Canonic semantic layer, relative to the project root: one YAML file "
        "per source under `<semantics_dir>/<connection>/` "
        "([The semantic layer](concepts/semantic-layer.md)).",
    )
    out_dir: str = option(
        "out_dir",
        Folder(),
        ".knowl/build",
        "Where `knowl build` publishes, relative to the project root: one folder per build and "
        "a `CURRENT` file naming the published one ([Build artifacts](artifacts.md)). knowl "
        "prunes inside it, so it must be a folder of its own, apart from the knowledge and "
        "semantics folders; and it must lie outside the git directory (no `.git` on its way) "
        "and any hooks folder (`core.hooksPath` included), where git would take knowl's files "
        "for its own. `knowl build --out` overrides it with a folder anywhere, under the same "
        "rules.",
    )
    staleness_days: int = option(
        "staleness_days",
        Integer(0),
        90,
        "A page whose `meta.last_validated_at` is missing or more than this many days old is "
        "stale ([KB202](rules.md#kb202)).",
    )
    keep_builds: int = option(
        "keep_builds",
        Integer(1),
        3,
        "How many build folders stay in `out_dir`, the current one included: after each build "
        "the oldest others are pruned, never the current one nor one a reader still has open.",
    )
    repo_name: str | None = option(
        "repo_name",
        Text(),
        None,
        "The name of this repository in its artifact and on its hits in federated search. "
        "Unset, it is the last segment of `remote.origin.url` without `.git`, else the name of "
        "the project folder.",
    )
    knowledge_layout: str = option(
        "knowledge.layout",
        Choice(LAYOUTS),
        SCOPED,
        '`"scoped"`: pages under `global/` and `user/<owner>/` of `knowledge_dir`. `"flat"`: '
        "every page under `knowledge_dir` is global, folders as the repository has them "
        "(a Hugo `content/`, an MkDocs `docs/`, a vault), with user scopes only under "
        "`knowledge.users_dir` ([Layouts](concepts/pages.md#layouts)).",
    )
    users_dir: str | None = option(
        "knowledge.users_dir",
        Folder(),
        None,
        "With the flat layout, the folder below `knowledge_dir` whose sub-folders are user "
        "scopes: `<users_dir>/<owner>/**` is that user's. Unset, a flat layout has no user "
        "scopes.",
    )
    knowledge_exclude: tuple[str, ...] = option(
        "knowledge.exclude",
        Strings(_glob),
        (),
        "Path globs (relative to the project root) of files and folders under `knowledge_dir` "
        "that are no pages or files of the project: templates, build output, vendored docs "
        '(`["templates", "**/drafts"]`; a glob that matches a folder leaves out all below it).',
    )
    rules: Mapping[str, str] = option(
        "rules.<CODE>",
        Severities(beside=(PER_PATH,)),
        {},
        'The severity of one rule everywhere, such as `KB202 = "off"`; `off` turns it off. '
        "Unset, a rule has its default severity ([Rules](rules.md)); a code that names no rule "
        "is an error.",
    )
    # (glob, {code: severity}) in the order written; a later glob wins.
    per_path: tuple[tuple[str, Mapping[str, str]], ...] = option(
        f"rules.{PER_PATH}.<glob>.<CODE>",
        GlobSeverities(),
        (),
        "The severity of a rule for findings in files whose project-relative path matches the "
        "glob (`*` and `?` within a folder, `**` across folders), over `[rules]`; where several "
        "globs match, the later one wins, and `off` also drops the freshness reason "
        "([suppressions](ci.md#suppressions)).",
        record_as="rules_per_path",
    )
    search: SearchConfig = field(default_factory=SearchConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    peer_paths: tuple[str, ...] = option(
        "peers.paths",
        Strings(_path),
        (),
        "Other repositories' artifacts that searches of this project's build include: each an "
        "artifact folder or a project root (its current build), relative to the project root. "
        "`--peer` replaces them ([Federation](reading.md#federation)).",
    )
    agent_status: str = option(
        "writes.agent_status",
        Choice(AGENT_STATUSES),
        "active",
        "The status of a page an agent writes through the MCP server (`store_knowledge`). "
        "`draft`: it lands as `status: draft`, which search and the agent tools skip unless "
        "asked (`--status draft`), until a person promotes it with `knowl review` "
        "([Writing knowledge](writing.md#drafts)).",
    )
    link_resolution: str = option(
        "links.resolution",
        Choice(RESOLUTIONS),
        EXACT,
        "How a `[[link]]` or `refs` item names its page. `exact`: the id or the path under the "
        "scope folder, as written. `obsidian`: as Obsidian resolves links: case-insensitive, "
        "a bare name to the page of that name whose path is shortest, path-qualified names by "
        "the end of the path, `aliases` as names, nested headings and `^block` ids checked, "
        "headings compared as Obsidian normalises them. `dendron`: as Dendron resolves "
        "links: `[[label|note]]` (the label first), the note's name with its dots "
        "(`a.b.c`) case-insensitive, `dendron://vault/note`, note references with ranges and "
        "wildcards, heading anchors by their slug, Dendron's `id` and keys allowed "
        "([Links](concepts/pages.md#link-resolution)).",
    )
    # None: site-absolute Markdown links (`/a/b/`) are not checked; "" is the project root.
    site_root: str | None = option(
        "links.site_root",
        Folder(root=""),
        None,
        "The folder, relative to the project root (`.` for the root), that site-absolute "
        "Markdown links name files in, as a static site generator publishes them: "
        "a link to `/guide/setup/` is `<site_root>/guide/setup.md`, `.../setup/index.md` or "
        "`.../setup/_index.md` (pretty URLs), `/img/a.png` is `<site_root>/img/a.png`. Unset, "
        "site-absolute links are not checked "
        "([Markdown links](concepts/pages.md#markdown-links)).",
    )
    link_exclude: tuple[str, ...] = option(
        "links.exclude",
        Strings(_exclude, MAX_EXCLUDE_PATTERNS, "patterns"),
        (),
        "Regular expressions (Python's `re`, searched in the destination as written) of "
        "Markdown link destinations that are not checked and make no edge, as lychee's "
        "`exclude`: `['^/api/', '\\.pdf$']` (TOML literal strings keep the backslash). A "
        "pattern that does not compile, or that "
        "nests a repetition in another (`(a+)+`, which can take exponential time), is a "
        "configuration error ([Markdown links](concepts/pages.md#markdown-links)).",
    )
    # KB109's severity, unless [rules] sets it (`configured`).
    case_only: str = option(
        "links.case_only",
        Choice(CASE_ONLY_CHOICES),
        "ignore",
        "How a link that names its page only when case is ignored is reported: "
        "[KB109](rules.md#kb109) as a `warning` or an `error`, or not at all (`ignore`). "
        "Obsidian resolves such a link; Quartz and most static hosts serve it as a 404. "
        'It matters with `resolution = "obsidian"`: in `exact` mode such a link resolves to '
        "nothing and is [KB103](rules.md#kb103), whose hint says the name differs only in "
        "case. `[rules] KB109` (or a per-path severity), when set, wins over it "
        "([Links](concepts/pages.md#case-exact-publishing)).",
    )
    # Besides the built-in ones (parse/shortcodes.py); the parse depends on them, so the parse
    # cache key does too.
    code_shortcodes: tuple[str, ...] = option(
        "links.code_shortcodes",
        Strings(_shortcode),
        (),
        "Hugo shortcodes whose bodies are code, as `code-toggle`, `highlight` and `code` "
        "always are: from `{{< name >}}` to `{{< /name >}}` (or `{{% … %}}`) no link, "
        "suppression, heading or block id is read. Names are added to those three "
        "([Hugo shortcodes](concepts/pages.md#hugo-shortcodes)).",
    )
    # The external URL check (`knowl check --check-urls`, the only network use): not recorded,
    # as a build never checks URLs and so no artifact depends on them.
    check_urls: bool = option(
        "links.check_urls",
        Boolean(),
        False,
        "Check every `http://` and `https://` link target on each `knowl check` (as "
        "`--check-urls` does; `--no-check-urls` turns it off for one run): a target that "
        "answers 404, 410, another 4xx but 401, 403 and 429, a 5xx after its retries, no "
        "answer, or a redirect off http(s) is [KB110](rules.md#kb110). `knowl build` never "
        "checks URLs. Addresses that are not public, URLs holding credentials and "
        "documentation hosts (`example.com`, `.test`, ...) are never asked "
        "([Checking external URLs](ci.md#external-urls)).",
        recorded=False,
    )
    url_timeout: float = option(
        "links.url_timeout",
        Number(0.01, 300.0, "seconds"),
        10.0,
        "How long one request to a URL may take, from connecting to the status line: past "
        "it, the URL has no answer (a timeout), which is retried.",
        recorded=False,
    )
    url_concurrency: int = option(
        "links.url_concurrency",
        Integer(1, 64),
        8,
        "How many hosts the URL check asks at once; one host's URLs are asked one after another.",
        recorded=False,
    )
    url_per_host: float = option(
        "links.url_per_host",
        Number(0.01, 100.0, "requests per second"),
        2.0,
        "The most requests per second the URL check makes to one host, retries and "
        "redirects included.",
        recorded=False,
    )
    url_retries: int = option(
        "links.url_retries",
        Integer(0, 10),
        2,
        "How many more times a URL is asked after a 5xx answer, a 429 (after its "
        "`Retry-After`, when that is at most 10 seconds) or no answer, waiting longer each "
        "time.",
        recorded=False,
    )
    url_cache_hours: float = option(
        "links.url_cache_hours",
        Number(0.0, 24.0 * 366, "hours"),
        24.0,
        "How long a URL's answer is reused from `.knowl/cache/urls.json` before the URL is "
        "asked again; `0` asks every time. Only answers are kept (the status and when), "
        "sealed like knowl's other caches; no answer, a 5xx and a 429 are never kept.",
        recorded=False,
    )
    url_allow_private: bool = option(
        "links.url_allow_private",
        Boolean(),
        False,
        "Let the URL check ask loopback and private addresses (`127.0.0.1`, `10.0.0.0/8`, "
        "`fc00::/7`, ...), such as an intranet's. Link-local, metadata, multicast and "
        "unspecified addresses are never asked ([Security model](security.md)).",
        recorded=False,
    )
    url_max: int = option(
        "links.url_max",
        Integer(1, 100_000),
        1000,
        "The most URLs one run asks (cached answers do not count); the others are not "
        "checked, and a notice says how many.",
        recorded=False,
    )
    url_max_per_host: int = option(
        "links.url_max_per_host",
        Integer(1, 100_000),
        100,
        "The most URLs of one host one run asks; the others are not checked, and a notice "
        "says how many.",
        recorded=False,
    )
    frontmatter_allow: tuple[str, ...] = option(
        "frontmatter.allow",
        Strings(_key),
        (),
        "Frontmatter keys other tools own (`cssclasses`, `permalink`, `meta.owner` for a key "
        'inside `meta`): not [KB006](rules.md#kb006). With `links.resolution = "obsidian"`, '
        f"Obsidian's own keys are allowed as well: `{'`, `'.join(OBSIDIAN_KEYS)}`; with "
        f'`"dendron"`, Dendron\'s: `{"`, `".join(DENDRON_KEYS)}`.',
    )
    # "" is the project root; None: no dbt project.
    dbt_project_dir: str | None = option(
        "semantics.dbt.project_dir",
        Folder(root=""),
        None,
        "The folder holding `dbt_project.yml`, relative to the project root (`.` for the root): "
        "its semantic models and metrics join the Canonic entities "
        "([dbt](concepts/semantic-layer.md#dbt)). A `[semantics.dbt]` table that sets anything "
        "must set it, and not under `semantics_dir`.",
        required="the folder that holds dbt_project.yml",
    )
    dbt_connection: str | None = option(
        "semantics.dbt.connection",
        Text(r"[A-Za-z0-9_-]+"),
        None,
        "The first segment of the dbt entities' names (`<connection>.<semantic_model>`): "
        "letters, digits, `_` and `-`. Unset, it is the `name` in `dbt_project.yml`, which "
        "then must have one.",
    )
    # [site]: the static site (`knowl site`); not recorded, as the artifact does not depend on
    # it (a new title must not make the next build a new publication).
    site_title: str | None = option(
        "site.title",
        Text(),
        None,
        "The title of the static site `knowl site` writes, in its header and the title of "
        "every page. Unset, it is the repository's name ([Publishing a site](site.md)).",
        recorded=False,
    )
    site_base_url: str | None = option(
        "site.base_url",
        HttpAddress(),
        None,
        "The `http://` or `https://` address the site is published at, such as "
        "`https://acme.github.io/kb/`: each page then names its canonical address. Unset, the "
        "site has no absolute links ([Publishing a site](site.md#configuration)).",
        recorded=False,
    )
    site_templates: str | None = option(
        "site.templates",
        Folder(),
        None,
        "A folder of Jinja2 templates, inside the project, whose files replace the shipped "
        "templates of the same name (`knowl/<name>` still names the shipped one); they are "
        "rendered in Jinja2's sandbox with autoescaping ([Templates](site.md#templates)).",
        recorded=False,
    )
    # Not recorded: the index written holds the same postings whatever it is.
    index_memory_mb: int = option(
        "index.memory_mb",
        Integer(16, 1 << 16),
        512,
        "How many megabytes of postings the index writer keeps in memory before it sorts "
        "them in runs on disk and merges those. A build that stays under it writes the index "
        "in one pass: the default indexes 10,000 pages of ~300 words without a run on disk, "
        "twice as fast as at 128 (Whoosh's own default), for about 450 MB more at the peak "
        "of the build; a smaller value saves memory on a larger project at the cost of time "
        "([How it works](how-it-works.md#the-index-writer)).",
        recorded=False,
    )
    # [eval]: the retrieval tests of `knowl eval`; not recorded, as no artifact depends on them.
    eval_file: str = option(
        "eval.file",
        File(),
        "knowl-eval.yaml",
        "The retrieval tests `knowl eval` runs, a YAML file inside the project "
        "([Retrieval tests](eval.md)).",
        recorded=False,
    )
    eval_min_mrr: float = option(
        "eval.min_mrr",
        Number(0.0, 1.0, "mean reciprocal rank"),
        0.0,
        "`knowl eval` fails (exit 1) when the mean reciprocal rank at 10 of all its questions "
        "is below this; `0` sets no threshold ([Retrieval tests](eval.md#metrics)).",
        recorded=False,
    )
    source: str | None = None

    @property
    def allowed_keys(self) -> frozenset[str]:
        """Frontmatter keys other tools own: [frontmatter] allow, and Obsidian's (Dendron's)
        own keys when links resolve as Obsidian (Dendron) does."""
        own = {OBSIDIAN: OBSIDIAN_KEYS, DENDRON: DENDRON_KEYS}.get(self.link_resolution, ())
        return frozenset((*self.frontmatter_allow, *own))

    @property
    def code_names(self) -> frozenset[str]:
        """The Hugo shortcodes whose bodies are code: the built-in ones, `code_shortcodes`."""
        return frozenset((*CODE_SHORTCODES, *self.code_shortcodes))

    def configured(self, code: str, path: str | None = None) -> str | None:
        """The severity configured for `code` ([rules], then the [rules.per-path] globs that
        match `path`), or None when the configuration leaves it at the rule's default (the
        rule registry knows the defaults: `rules.registry.severity`). KB109 is configured by
        `[links] case_only` too, under the [rules] tables: `ignore` is `off`."""
        severity = self.rules.get(code)
        if severity is None and code == CASE_ONLY_CODE:
            severity = "off" if self.case_only == "ignore" else self.case_only
        if path is not None:
            for glob, table in self.per_path:
                if code in table and glob_regex(glob).fullmatch(path):
                    severity = table[code]
        return severity

    def to_json(self) -> dict[str, Any]:
        """The recorded keys (those the build depends on), as tables of their TOML tables."""
        out: dict[str, Any] = {}
        for declared in SCHEMA:
            if declared.recorded:
                *tables, name = declared.record_as.split(".")
                table = out
                for part in tables:
                    table = table.setdefault(part, {})
                value = operator.attrgetter(declared.attribute)(self)
                table[name] = declared.check.record(value)
        return out

    @property
    def layout(self) -> Layout:
        """Where the pages live and the scope a path gives them (`layouts`)."""
        return Layout(self.knowledge_dir, self.knowledge_layout, self.users_dir)

    @property
    def sha256(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


# Every key, in documentation order: the keys the loader accepts are these and no others.
SCHEMA: tuple[Option, ...] = options_of(Config)
DEFAULTS = Config()
