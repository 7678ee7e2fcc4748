"""Configuration: the frozen Config, its documented SCHEMA, loading from knowl.toml or
pyproject.toml, validation."""

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

from knowl_build.vocabulary import SEVERITY_CHOICES

# `title` is the page's names (title, file name, aliases); the values are tuned on the quality
# benchmark (bench/quality_bench.py) with index/ranking.py's K1 and B.
DEFAULT_BOOSTS = MappingProxyType(
    {"summary": 3.0, "tags": 2.0, "title": 1.0, "body": 1.0, "headings": 0.5}
)
BOOST_FIELDS = tuple(DEFAULT_BOOSTS)
PER_PATH = "per-path"
RULE_CODE = re.compile(r"KB[0-9]{3}")  # the shape of a code; the rules know which exist
# Search boosts: a bound that keeps every score finite (also checked when an artifact is read).
MAX_BOOST = 1000.0
# Caveats riding along with one search: a bound every artifact is checked against too.
MAX_CAVEATS = 10_000
# [links] resolution: how a wiki-link names its page (resolve.py).
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
# [links] url_*: the bounds each key of the URL check accepts (config_loader checks them).
URL_BOUNDS: dict[str, tuple[float, float]] = {
    "url_timeout": (0.01, 300.0),
    "url_concurrency": (1, 64),
    "url_per_host": (0.01, 100.0),
    "url_retries": (0, 10),
    "url_cache_hours": (0.0, 24.0 * 366),
    "url_max": (1, 100_000),
    "url_max_per_host": (1, 100_000),
}
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
    one folder, `**` spans folders (`knowledge/**/drafts/*.md`), `[abc]` is a class."""
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


@dataclass(frozen=True, slots=True)
class SearchConfig:
    boosts: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_BOOSTS))
    max_caveats: int = 3


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    reject_secrets: bool = True
    max_field_chars: int = 20000
    max_body_chars: int = 200000
    extra_patterns: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    """The effective configuration of one project. `source` names the file it came from."""

    knowledge_dir: str = "knowledge"
    semantics_dir: str = "semantics"
    out_dir: str = ".knowl/build"
    staleness_days: int = 90
    keep_builds: int = 3
    repo_name: str | None = None
    rules: Mapping[str, str] = field(default_factory=dict)
    # [rules.per-path]: (glob, {code: severity}) in the order written; a later glob wins.
    per_path: tuple[tuple[str, Mapping[str, str]], ...] = ()
    search: SearchConfig = field(default_factory=SearchConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    peer_paths: tuple[str, ...] = ()
    dbt_project_dir: str | None = None  # [semantics.dbt] project_dir
    dbt_connection: str | None = None  # [semantics.dbt] connection
    agent_status: str = "active"  # [writes] agent_status: how an agent's new page lands
    link_resolution: str = EXACT  # [links] resolution
    case_only: str = "ignore"  # [links] case_only: KB109's severity, unless [rules] sets it
    # [links] site_root: the folder site-absolute Markdown links (`/a/b/`) name files in
    # (None: they are not checked); [links] exclude: patterns of destinations not checked.
    site_root: str | None = None
    link_exclude: tuple[str, ...] = ()
    # [links] code_shortcodes: Hugo shortcodes whose bodies are code, besides the built-in
    # ones (parse/shortcodes.py); the parse depends on them, so the parse cache key does too.
    code_shortcodes: tuple[str, ...] = ()
    # [links] check_urls and url_*: the external URL check (`knowl check --check-urls`, the
    # only network use). Not in `to_json`: a build never checks URLs, so no artifact
    # depends on them.
    check_urls: bool = False
    url_timeout: float = 10.0  # seconds, each request
    url_concurrency: int = 8  # hosts asked at once
    url_per_host: float = 2.0  # requests per second to one host, at most
    url_retries: int = 2  # more tries after a 5xx, a 429 or no answer
    url_cache_hours: float = 24.0  # age of a cached answer that makes it be asked again
    url_allow_private: bool = False  # loopback and private addresses may be asked
    url_max: int = 1000  # URLs asked per run
    url_max_per_host: int = 100  # URLs asked per host and run
    frontmatter_allow: tuple[str, ...] = ()  # [frontmatter] allow, as written
    # [site]: the static site (`knowl site`); not in `to_json`, as the artifact does not
    # depend on it (a new title must not make the next build a new publication).
    site_title: str | None = None
    site_base_url: str | None = None  # ends in `/`
    site_templates: str | None = None  # a folder inside the project
    # [index] memory_mb: what the Whoosh writer holds before it sorts postings on disk; not in
    # `to_json`, as the index it writes holds the same postings whatever it is.
    index_memory_mb: int = 512
    # [eval]: the retrieval tests of `knowl eval`; not in `to_json`, as no artifact depends on
    # them.
    eval_file: str = "knowl-eval.yaml"  # relative to the project root
    eval_min_mrr: float = 0.0  # 0: no overall threshold
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
        return {
            "knowledge_dir": self.knowledge_dir,
            "semantics_dir": self.semantics_dir,
            "out_dir": self.out_dir,
            "staleness_days": self.staleness_days,
            "keep_builds": self.keep_builds,
            "repo_name": self.repo_name,
            "rules": dict(sorted(self.rules.items())),
            "rules_per_path": [[glob, dict(sorted(t.items()))] for glob, t in self.per_path],
            "search": {
                "boosts": dict(sorted(self.search.boosts.items())),
                "max_caveats": self.search.max_caveats,
            },
            "security": {
                "reject_secrets": self.security.reject_secrets,
                "max_field_chars": self.security.max_field_chars,
                "max_body_chars": self.security.max_body_chars,
                "extra_patterns": list(self.security.extra_patterns),
            },
            "peers": {"paths": list(self.peer_paths)},
            "semantics": {
                "dbt": {"project_dir": self.dbt_project_dir, "connection": self.dbt_connection}
            },
            "links": {
                "resolution": self.link_resolution,
                "case_only": self.case_only,
                "site_root": self.site_root,
                "exclude": list(self.link_exclude),
                "code_shortcodes": list(self.code_shortcodes),
            },
            "writes": {"agent_status": self.agent_status},
            "frontmatter": {"allow": list(self.frontmatter_allow)},
        }

    @property
    def sha256(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


# --- the schema: every key, documented ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Option:
    """One key of the configuration as docs/configuration.md shows it: the dotted key
    (`<CODE>` and `<glob>` stand for any), a short type, the default (None for none) and
    the user documentation, Markdown whose links are relative to that page."""

    key: str
    kind: str
    default: object
    doc: str


DEFAULTS = Config()
_SEVERITY = f"severity ({'|'.join(SEVERITY_CHOICES)})"


def _default(attribute: str) -> object:
    """The default of a Config attribute (`search.boosts`): each default is written once, in
    the dataclasses above."""
    value = operator.attrgetter(attribute)(DEFAULTS)
    return MappingProxyType(dict(value)) if isinstance(value, Mapping) else value


# In documentation order; the keys the validator accepts are these and no others.
SCHEMA: tuple[Option, ...] = (
    Option(
        "knowledge_dir",
        "folder (string)",
        _default("knowledge_dir"),
        "The folder of the pages, relative to the project root: global pages under "
        "`<knowledge_dir>/global/`, each user's under `<knowledge_dir>/user/<owner>/` "
        "([Pages and frontmatter](concepts/pages.md)).",
    ),
    Option(
        "semantics_dir",
        "folder (string)",
        _default("semantics_dir"),
        "The folder of the Canonic semantic layer, relative to the project root: one YAML file "
        "per source under `<semantics_dir>/<connection>/` "
        "([The semantic layer](concepts/semantic-layer.md)).",
    ),
    Option(
        "out_dir",
        "folder (string)",
        _default("out_dir"),
        "Where `knowl build` publishes, relative to the project root: one folder per build and "
        "a `CURRENT` file naming the published one ([Build artifacts](artifacts.md)). knowl "
        "prunes inside it, so it must be a folder of its own, apart from the knowledge and "
        "semantics folders; and it must lie outside the git directory (no `.git` on its way) "
        "and any hooks folder (`core.hooksPath` included), where git would take knowl's files "
        "for its own. `knowl build --out` overrides it with a folder anywhere, under the same "
        "rules.",
    ),
    Option(
        "staleness_days",
        "integer >= 0",
        _default("staleness_days"),
        "A page whose `meta.last_validated_at` is missing or more than this many days old is "
        "stale ([KB202](rules.md#kb202)).",
    ),
    Option(
        "keep_builds",
        "integer >= 1",
        _default("keep_builds"),
        "How many build folders stay in `out_dir`, the current one included: after each build "
        "the oldest others are pruned, never the current one nor one a reader still has open.",
    ),
    Option(
        "repo_name",
        "string",
        _default("repo_name"),
        "The name of this repository in its artifact and on its hits in federated search. "
        "Unset, it is the last segment of `remote.origin.url` without `.git`, else the name of "
        "the project folder.",
    ),
    Option(
        "rules.<CODE>",
        _SEVERITY,
        None,
        'The severity of one rule everywhere, such as `KB202 = "off"`; `off` turns it off. '
        "Unset, a rule has its default severity ([Rules](rules.md)); a code that names no rule "
        "is an error.",
    ),
    Option(
        f"rules.{PER_PATH}.<glob>.<CODE>",
        _SEVERITY,
        None,
        "The severity of a rule for findings in files whose project-relative path matches the "
        "glob (`*` and `?` within a folder, `**` across folders), over `[rules]`; where several "
        "globs match, the later one wins, and `off` also drops the freshness reason "
        "([suppressions](ci.md#suppressions)).",
    ),
    Option(
        "search.boosts",
        "table of numbers",
        _default("search.boosts"),
        f"How much a match counts in each field of a page: `{'`, `'.join(BOOST_FIELDS)}`, each "
        f"greater than 0 and at most {MAX_BOOST:g}. Fields left out keep their defaults; the "
        "boosts are recorded in the artifact, so every reader ranks the same way.",
    ),
    Option(
        "search.max_caveats",
        f"integer >= 0, at most {MAX_CAVEATS}",
        _default("search.max_caveats"),
        "At most this many caveats ride along with a search's hits: visible active `caveat` "
        "pages that share an entity with a hit, most shared entities first "
        "([Reading and search](reading.md#search)).",
    ),
    Option(
        "security.reject_secrets",
        "boolean",
        _default("security.reject_secrets"),
        "Report secrets ([KB401](rules.md#kb401)) and sensitive paths "
        "([KB402](rules.md#kb402)). `false` turns both checks off; the size limits "
        "([KB403](rules.md#kb403)) stay.",
    ),
    Option(
        "security.max_field_chars",
        "integer >= 1",
        _default("security.max_field_chars"),
        "The longest frontmatter string, in characters, each list item counted alone; a longer "
        "one is [KB403](rules.md#kb403).",
    ),
    Option(
        "security.max_body_chars",
        "integer >= 1",
        _default("security.max_body_chars"),
        "The longest page body, in characters, the line break that ends the file not "
        "counted; a longer one is [KB403](rules.md#kb403).",
    ),
    Option(
        "security.extra_patterns",
        "list of strings",
        _default("security.extra_patterns"),
        "More case-insensitive substrings that count as secrets ([KB401](rules.md#kb401)), "
        "such as an internal host name; every message of the run hides them too. An empty "
        "string is an error.",
    ),
    Option(
        "peers.paths",
        "list of strings",
        _default("peer_paths"),
        "Other repositories' artifacts that searches of this project's build include: each an "
        "artifact folder or a project root (its current build), relative to the project root. "
        "`--peer` replaces them ([Federation](reading.md#federation)).",
    ),
    Option(
        "writes.agent_status",
        f"string ({'|'.join(AGENT_STATUSES)})",
        _default("agent_status"),
        "The status of a page an agent writes through the MCP server (`store_knowledge`). "
        "`draft`: it lands as `status: draft`, which search and the agent tools skip unless "
        "asked (`--status draft`), until a person promotes it with `knowl review` "
        "([Writing knowledge](writing.md#drafts)).",
    ),
    Option(
        "links.resolution",
        f"string ({'|'.join(RESOLUTIONS)})",
        _default("link_resolution"),
        "How a `[[link]]` or `refs` item names its page. `exact`: the id or the path under the "
        "scope folder, as written. `obsidian`: as Obsidian resolves links: case-insensitive, "
        "a bare name to the page of that name whose path is shortest, path-qualified names by "
        "the end of the path, `aliases` as names, nested headings and `^block` ids checked, "
        "headings compared as Obsidian normalises them. `dendron`: as Dendron resolves "
        "links: `[[label|note]]` (the label first), the note's name with its dots "
        "(`a.b.c`) case-insensitive, `dendron://vault/note`, note references with ranges and "
        "wildcards, heading anchors by their slug, Dendron's `id` and keys allowed "
        "([Links](concepts/pages.md#link-resolution)).",
    ),
    Option(
        "links.site_root",
        "folder (string)",
        _default("site_root"),
        "The folder, relative to the project root (`.` for the root), that site-absolute "
        "Markdown links name files in, as a static site generator publishes them: "
        "a link to `/guide/setup/` is `<site_root>/guide/setup.md`, `.../setup/index.md` or "
        "`.../setup/_index.md` (pretty URLs), `/img/a.png` is `<site_root>/img/a.png`. Unset, "
        "site-absolute links are not checked "
        "([Markdown links](concepts/pages.md#markdown-links)).",
    ),
    Option(
        "links.exclude",
        "list of strings",
        _default("link_exclude"),
        "Regular expressions (Python's `re`, searched in the destination as written) of "
        "Markdown link destinations that are not checked and make no edge, as lychee's "
        "`exclude`: `['^/api/', '\\.pdf$']` (TOML literal strings keep the backslash). A "
        "pattern that does not compile, or that "
        "nests a repetition in another (`(a+)+`, which can take exponential time), is a "
        "configuration error ([Markdown links](concepts/pages.md#markdown-links)).",
    ),
    Option(
        "links.case_only",
        f"string ({'|'.join(CASE_ONLY_CHOICES)})",
        _default("case_only"),
        "How a link that names its page only when case is ignored is reported: "
        "[KB109](rules.md#kb109) as a `warning` or an `error`, or not at all (`ignore`). "
        "Obsidian resolves such a link; Quartz and most static hosts serve it as a 404. "
        'It matters with `resolution = "obsidian"`: in `exact` mode such a link resolves to '
        "nothing and is [KB103](rules.md#kb103), whose hint says the name differs only in "
        "case. `[rules] KB109` (or a per-path severity), when set, wins over it "
        "([Links](concepts/pages.md#case-exact-publishing)).",
    ),
    Option(
        "links.code_shortcodes",
        "list of strings",
        _default("code_shortcodes"),
        "Hugo shortcodes whose bodies are code, as `code-toggle`, `highlight` and `code` "
        "always are: from `{{< name >}}` to `{{< /name >}}` (or `{{% … %}}`) no link, "
        "suppression, heading or block id is read. Names are added to those three "
        "([Hugo shortcodes](concepts/pages.md#hugo-shortcodes)).",
    ),
    Option(
        "links.check_urls",
        "boolean",
        _default("check_urls"),
        "Check every `http://` and `https://` link target on each `knowl check` (as "
        "`--check-urls` does; `--no-check-urls` turns it off for one run): a target that "
        "answers 404, 410, another 4xx but 401, 403 and 429, a 5xx after its retries, no "
        "answer, or a redirect off http(s) is [KB110](rules.md#kb110). `knowl build` never "
        "checks URLs. Addresses that are not public, URLs holding credentials and "
        "documentation hosts (`example.com`, `.test`, ...) are never asked "
        "([Checking external URLs](ci.md#external-urls)).",
    ),
    Option(
        "links.url_timeout",
        "number (seconds), 0.01 to 300",
        _default("url_timeout"),
        "How long one request to a URL may take, from connecting to the status line: past "
        "it, the URL has no answer (a timeout), which is retried.",
    ),
    Option(
        "links.url_concurrency",
        "integer >= 1, at most 64",
        _default("url_concurrency"),
        "How many hosts the URL check asks at once; one host's URLs are asked one after another.",
    ),
    Option(
        "links.url_per_host",
        "number (requests per second), 0.01 to 100",
        _default("url_per_host"),
        "The most requests per second the URL check makes to one host, retries and "
        "redirects included.",
    ),
    Option(
        "links.url_retries",
        "integer >= 0, at most 10",
        _default("url_retries"),
        "How many more times a URL is asked after a 5xx answer, a 429 (after its "
        "`Retry-After`, when that is at most 10 seconds) or no answer, waiting longer each "
        "time.",
    ),
    Option(
        "links.url_cache_hours",
        "number (hours), 0 to 8784",
        _default("url_cache_hours"),
        "How long a URL's answer is reused from `.knowl/cache/urls.json` before the URL is "
        "asked again; `0` asks every time. Only answers are kept (the status and when), "
        "sealed like knowl's other caches; no answer, a 5xx and a 429 are never kept.",
    ),
    Option(
        "links.url_allow_private",
        "boolean",
        _default("url_allow_private"),
        "Let the URL check ask loopback and private addresses (`127.0.0.1`, `10.0.0.0/8`, "
        "`fc00::/7`, ...), such as an intranet's. Link-local, metadata, multicast and "
        "unspecified addresses are never asked ([Security model](security.md)).",
    ),
    Option(
        "links.url_max",
        "integer >= 1, at most 100000",
        _default("url_max"),
        "The most URLs one run asks (cached answers do not count); the others are not "
        "checked, and a notice says how many.",
    ),
    Option(
        "links.url_max_per_host",
        "integer >= 1, at most 100000",
        _default("url_max_per_host"),
        "The most URLs of one host one run asks; the others are not checked, and a notice "
        "says how many.",
    ),
    Option(
        "frontmatter.allow",
        "list of strings",
        _default("frontmatter_allow"),
        "Frontmatter keys other tools own (`cssclasses`, `permalink`, `meta.owner` for a key "
        'inside `meta`): not [KB006](rules.md#kb006). With `links.resolution = "obsidian"`, '
        f"Obsidian's own keys are allowed as well: `{'`, `'.join(OBSIDIAN_KEYS)}`; with "
        f'`"dendron"`, Dendron\'s: `{"`, `".join(DENDRON_KEYS)}`.',
    ),
    Option(
        "semantics.dbt.project_dir",
        "folder (string)",
        _default("dbt_project_dir"),
        "The folder holding `dbt_project.yml`, relative to the project root (`.` for the root): "
        "its semantic models and metrics join the Canonic entities "
        "([dbt](concepts/semantic-layer.md#dbt)). A `[semantics.dbt]` table that sets anything "
        "must set it, and not under `semantics_dir`.",
    ),
    Option(
        "semantics.dbt.connection",
        "string",
        _default("dbt_connection"),
        "The first segment of the dbt entities' names (`<connection>.<semantic_model>`): "
        "letters, digits, `_` and `-`. Unset, it is the `name` in `dbt_project.yml`, which "
        "then must have one.",
    ),
    Option(
        "site.title",
        "string",
        _default("site_title"),
        "The title of the static site `knowl site` writes, in its header and the title of "
        "every page. Unset, it is the repository's name ([Publishing a site](site.md)).",
    ),
    Option(
        "site.base_url",
        "string",
        _default("site_base_url"),
        "The `http://` or `https://` address the site is published at, such as "
        "`https://acme.github.io/kb/`: each page then names its canonical address. Unset, the "
        "site has no absolute links ([Publishing a site](site.md#configuration)).",
    ),
    Option(
        "site.templates",
        "folder (string)",
        _default("site_templates"),
        "A folder of Jinja2 templates, inside the project, whose files replace the shipped "
        "templates of the same name (`knowl/<name>` still names the shipped one); they are "
        "rendered in Jinja2's sandbox with autoescaping ([Templates](site.md#templates)).",
    ),
    Option(
        "index.memory_mb",
        "integer >= 16",
        _default("index_memory_mb"),
        "How many megabytes of postings the index writer keeps in memory before it sorts "
        "them in runs on disk and merges those. A build that stays under it writes the index "
        "in one pass: the default indexes 10,000 pages of ~300 words without a run on disk, "
        "twice as fast as at 128 (Whoosh's own default), for about 450 MB more at the peak "
        "of the build; a smaller value saves memory on a larger project at the cost of time "
        "([How it works](how-it-works.md#the-index-writer)).",
    ),
    Option(
        "eval.file",
        "string (a file inside the project)",
        _default("eval_file"),
        "The retrieval tests `knowl eval` runs, a YAML file inside the project "
        "([Retrieval tests](eval.md)).",
    ),
    Option(
        "eval.min_mrr",
        "number (mean reciprocal rank), 0 to 1",
        _default("eval_min_mrr"),
        "`knowl eval` fails (exit 1) when the mean reciprocal rank at 10 of all its questions "
        "is below this; `0` sets no threshold ([Retrieval tests](eval.md#metrics)).",
    ),
)
