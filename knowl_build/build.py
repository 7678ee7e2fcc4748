"""The pipeline: discover, read, parse, resolve, run the rules.

`analyse()` is the table of contents of the system; `check()` adds a memo of the last run so
an unchanged tree costs little more than reading and hashing its files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowl_build import __version__, clock
from knowl_build.config import Config, SecurityConfig
from knowl_build.diagnostics import Diagnostic, Finding
from knowl_build.errors import KnowlError, UsageError
from knowl_build.files import atomic_write
from knowl_build.history.records import History
from knowl_build.model import Page, ParsedPage, Suppression
from knowl_build.pipeline.cache import CachePlace, ParseCache, cache_place
from knowl_build.pipeline.discover import Discovery, discover, shown_path
from knowl_build.pipeline.pages import not_text, parse_page
from knowl_build.resolve import PageIndex, misplaced, place
from knowl_build.rules.context import GitFacts, RuleContext
from knowl_build.rules.freshness import Assessment, assess, check_freshness
from knowl_build.rules.governance import check_governance
from knowl_build.rules.references import check_references
from knowl_build.rules.security import SecretScanner
from knowl_build.semantic.layer import SemanticLayer
from knowl_build.semantic.load import load_semantic_layer
from knowl_build.trust import MachineKey, Sealer, read_sealed

NO_GIT_PATH = "."
MEMO_FORMAT = 2


@dataclass(slots=True)
class Inputs:
    """Every input file's bytes and content hash, read once per run."""

    discovery: Discovery
    pages: dict[str, tuple[bytes | None, str]] = field(default_factory=dict)
    semantics: dict[str, tuple[bytes | None, str]] = field(default_factory=dict)

    def fingerprint(self, config: Config, today: dt.date) -> str:
        """Everything a check's result depends on, hashed."""
        digest = hashlib.sha256()
        header = [
            __version__,
            config.sha256,
            today.isoformat(),
            self.discovery.git is not None,
            # History findings change with a new commit (a change no longer uncommitted) and
            # with `git fetch --unshallow` (KB010 goes, claims come back).
            [git.head(), git.shallow] if (git := self.discovery.git) is not None else None,
            self.discovery.knowledge_exists,
            sorted(self.discovery.other_files),
            # The findings themselves: a symlink's target can change what is refused while
            # every file's bytes stay the same.
            sorted((p, [f.to_list() for f in fs]) for p, fs in self.discovery.findings.items()),
        ]
        digest.update(json.dumps(header).encode())
        for table in (self.pages, self.semantics):
            for path in sorted(table):
                digest.update(f"\0{path}\0{table[path][1]}".encode())
        return digest.hexdigest()


@dataclass(slots=True)
class Analysis:
    """Everything one pass over the project found."""

    root: Path
    config: Config
    discovery: Discovery
    layer: SemanticLayer
    pages: list[Page]
    index: PageIndex
    history: History | None = None
    assessments: dict[str, Assessment] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CheckResult:
    diagnostics: list[Diagnostic]
    page_count: int
    semantic_file_count: int
    knowledge_exists: bool
    changed: set[str] | None  # with --changed-only: the files findings were limited to
    notices: list[str] = field(default_factory=list)  # one line each, for stderr


def utc_today() -> dt.date:
    """Today in UTC (see clock: SOURCE_DATE_EPOCH pins it)."""
    return clock.today()


def _read(root: str, path: str) -> tuple[bytes | None, str]:
    try:
        with open(os.path.join(root, path), "rb") as handle:
            data = handle.read()
    except OSError:
        return None, "unreadable"
    return data, hashlib.sha256(data).hexdigest()


def read_inputs(root: Path, config: Config) -> Inputs:
    discovery = discover(root, config)
    base = str(root)
    inputs = Inputs(discovery)
    inputs.pages = {path: _read(base, path) for path in discovery.pages}
    semantic = list(discovery.semantic_files)
    if discovery.dbt_project_file is not None:
        semantic.append(discovery.dbt_project_file)
    semantic += discovery.dbt_files
    inputs.semantics = {path: _read(base, path) for path in semantic}
    return inputs


def _cache_key(config: Config) -> str:
    security = config.to_json()["security"]
    return hashlib.sha256(json.dumps([__version__, security], sort_keys=True).encode()).hexdigest()


# Below this many pages to parse, starting worker processes costs more than it saves.
PARALLEL_MIN_PAGES = 1000


def _parse_chunk(
    items: list[tuple[str, bytes]], security: SecurityConfig
) -> list[tuple[str, ParsedPage]]:
    scanner = SecretScanner(security.extra_patterns)
    return [(digest, parse_page(data, security, scanner)) for digest, data in items]


def _parse_uncached(todo: dict[str, bytes], security: SecurityConfig) -> dict[str, ParsedPage]:
    """Parse pages the cache does not know, in worker processes when there are many."""
    import multiprocessing
    import threading

    items = sorted(todo.items())
    workers = min(os.cpu_count() or 1, 4)
    # Forking is only safe while this process runs a single thread; "spawn" would re-run the
    # caller's __main__, which a library user's script or REPL may not allow. Else: serial.
    if (
        len(items) < PARALLEL_MIN_PAGES
        or workers < 2
        or threading.active_count() > 1
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return dict(_parse_chunk(items, security))
    from concurrent.futures import ProcessPoolExecutor

    size = max(64, len(items) // (workers * 8))
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        results = pool.map(_parse_chunk, chunks, [security] * len(chunks))
        return {digest: parsed for chunk in results for digest, parsed in chunk}


def parse_pages(
    inputs: Inputs, config: Config, cache: ParseCache
) -> tuple[list[Page], dict[str, list[Finding]]]:
    """Parse every page (through the cache); return placed pages and per-file findings."""
    parsed_by_digest: dict[str, ParsedPage] = {}
    todo: dict[str, bytes] = {}
    for data, digest in inputs.pages.values():
        if data is None or digest in parsed_by_digest or digest in todo:
            continue
        cached = cache.get(digest)
        if cached is None:
            todo[digest] = data
        else:
            parsed_by_digest[digest] = cached
    for digest, parsed in _parse_uncached(todo, config.security).items():
        cache.put(digest, parsed)
        parsed_by_digest[digest] = parsed

    pages: list[Page] = []
    findings: dict[str, list[Finding]] = {}
    for path, (data, digest) in inputs.pages.items():
        parsed = not_text("page") if data is None else parsed_by_digest[digest]
        findings[path] = list(parsed.findings)
        where = place(path, config.knowledge_dir)
        if where is None:
            message, hint = misplaced(path, config.knowledge_dir)
            findings[path].insert(0, Finding("KB004", 1, 1, message, hint))
            continue
        pages.append(Page(path, where.id, where.scope, where.owner, where.rel, parsed))
    return pages, findings


def load_layer(inputs: Inputs) -> SemanticLayer:
    """Canonic files, and the dbt project's model files when one is configured."""
    discovery = inputs.discovery

    def data(path: str) -> bytes:
        raw = inputs.semantics[path][0]
        return raw if raw is not None else b"\x00"

    return load_semantic_layer(
        [(p, data(p)) for p in discovery.semantic_files],
        [(p, data(p)) for p in discovery.dbt_files],
        discovery.dbt,
    )


def analyse(
    root: Path,
    config: Config,
    *,
    use_cache: bool = True,
    today: dt.date | None = None,
    inputs: Inputs | None = None,
    caches: CachePlace | None = None,
) -> Analysis:
    """Validate the whole project: every file is read, every reference resolved.

    `caches` says where the caches live (default: `.knowl/cache/` when the project can be
    written, else none); `use_cache=False` parses every page again (the history replay
    still continues from its cache)."""
    inputs = inputs or read_inputs(root, config)
    discovery = inputs.discovery
    layer = load_layer(inputs)
    caches = caches if caches is not None else cache_place(root)
    cache = ParseCache(caches.folder, _cache_key(config), enabled=use_cache, machine=caches.key)
    pages, page_findings = parse_pages(inputs, config, cache)
    cache.save()
    index = PageIndex.build(pages, discovery.other_files, config.knowledge_dir)
    text_pages = [p for p in pages if p.parsed.text_ok]
    facts = gather_git_facts(
        root, config, discovery, layer, text_pages, caches.file(HISTORY_CACHE), caches.key
    )
    context = RuleContext(
        pages=text_pages,
        index=index,
        layer=layer,
        config=config,
        today=today or utc_today(),
        git=facts,
    )
    assessments = assess(context)

    found: list[tuple[str, Finding]] = []
    for table in (discovery.findings, layer.findings, page_findings):
        for path, items in table.items():
            found.extend((path, f) for f in items)
    found.extend(check_references(context))
    found.extend(check_governance(context))
    found.extend(check_freshness(context, assessments))
    if discovery.git is None:
        found.append(
            (
                NO_GIT_PATH,
                Finding(
                    "KB009",
                    1,
                    1,
                    "git history is unavailable; history rules are skipped",
                    "run knowl inside a git repository (with git installed) for drift and history",
                ),
            )
        )
    found.extend((NO_GIT_PATH, finding) for finding in history_findings(facts))

    analysis = Analysis(
        root, config, discovery, layer, pages, index, facts.history if facts else None, assessments
    )
    suppressions = {p.path: p.parsed.suppressions for p in text_pages if p.parsed.suppressions}
    analysis.diagnostics = apply_severities(found, config, suppressions)
    return analysis


def gather_git_facts(
    root: Path,
    config: Config,
    discovery: Discovery,
    layer: SemanticLayer,
    pages: list[Page],
    cache: Path | None = None,
    machine: MachineKey | None = None,
) -> GitFacts | None:
    """History and the batched git answers the history rules need (None without git).

    `cache` is the history replay's cache file (None: replay without one), sealed with
    `machine` (default: this machine's key). Git failures do not stop the run: they are in
    `problems` (KB012) and the rules go on without them."""
    if discovery.git is None:
        return None
    from knowl_build.history.log import GitHistory
    from knowl_build.history.replay import trace

    reader = GitHistory(discovery.git)
    try:
        facts = GitFacts(
            trace(
                reader,
                config,
                layer,
                discovery.dbt,
                cache=cache,
                machine=machine,
            )
        )
        facts.shallow_depth = reader.depth()
        sources = {p.parsed.fields.source_commit for p in pages if p.parsed.fields.source_commit}
        if sources:
            # A source_commit left out of `reachable` is unknown (KB204 and KB205 stay quiet).
            facts.reachable = reader.reachable_from_head({s for s in sources if s})
            pairs = {
                (full, item.value)
                for p in pages
                if (full := facts.reachable.get(p.parsed.fields.source_commit or "")) is not None
                for item in p.parsed.fields.affected_paths
            }
            facts.changed_paths = reader.head_paths_differ(pairs, discovery.git.toplevel)
    finally:
        reader.close()
    facts.problems = list(reader.problems)
    return facts


# Past this many, git's problems are counted in one more finding instead of listed.
MAX_HISTORY_PROBLEMS = 10


def history_findings(facts: GitFacts | None) -> list[Finding]:
    """KB010 for a shallow clone, KB012 for each thing git could not read: at the project
    (path `.`, 1:1), like KB009."""
    if facts is None:
        return []
    found: list[Finding] = []
    if facts.shallow_depth is not None:
        depth = facts.shallow_depth
        available = (
            f"{depth} commit{'' if depth == 1 else 's'} available" if depth else "depth unknown"
        )
        boundary = facts.history.boundary
        if boundary is not None:
            available += f", the oldest {boundary[:12]}"
        found.append(
            Finding(
                "KB010",
                1,
                1,
                f"git history is shallow ({available}): history rules cannot see older "
                'changes; where that matters they say "unknown (shallow history)"',
                "fetch the whole history: fetch-depth: 0 in actions/checkout, or run "
                "git fetch --unshallow",
                subject="shallow history",
            )
        )
    problems = facts.problems
    if len(problems) > MAX_HISTORY_PROBLEMS:
        more = len(problems) - (MAX_HISTORY_PROBLEMS - 1)
        problems = [
            *problems[: MAX_HISTORY_PROBLEMS - 1],
            f"git could not read {more} more objects or commands of the history",
        ]
    for problem in problems:
        found.append(
            Finding(
                "KB012",
                1,
                1,
                problem,
                "repair the repository (git fsck) or fetch what is missing (git fetch); "
                "history findings may be missing until then",
                subject=problem,
            )
        )
    return found


def apply_severities(
    found: list[tuple[str, Finding]],
    config: Config,
    suppressions: dict[str, tuple[Suppression, ...]] | None = None,
) -> list[Diagnostic]:
    """Findings at their configured severity ([rules], then [rules.per-path]), without those
    an inline comment suppresses; a suppression that hid nothing is KB011."""
    suppressions = suppressions or {}
    used: set[tuple[str, int]] = set()
    diagnostics = []
    for path, finding in found:
        hiding = suppressions.get(path, ())
        hidden = [i for i, s in enumerate(hiding) if s.covers(finding.code, finding.line)]
        if hidden:
            used.update((path, i) for i in hidden)
            continue
        severity = config.severity(finding.code, path)
        if severity != "off":
            diagnostics.append(finding.at(path, severity))
    for path, hiding in suppressions.items():
        severity = config.severity("KB011", path)
        for i, comment in enumerate(hiding):
            if (path, i) in used or severity == "off":
                continue
            codes = " ".join(comment.codes) or "every code"
            span = comment.span
            diagnostics.append(
                Finding(
                    "KB011",
                    span.line,
                    span.column,
                    f"suppression of {codes} hides no finding",
                    "remove the comment (the finding it silenced is gone, or the code or line "
                    "is wrong)",
                    span.end_line,
                    span.end_column,
                    subject=f"suppression of {codes}",
                ).at(path, severity)
            )
    diagnostics.sort()
    return diagnostics


HISTORY_CACHE = "history.json"
MEMO_CACHE = "check.json"


def _outside_files(toplevel: Path | None, paths: set[str]) -> dict[str, str | None]:
    """Blob ids of files outside the inputs that findings depend on (KB204's affected paths)."""
    from knowl_build.history.objects import git_blob_id

    state: dict[str, str | None] = {}
    for path in sorted(paths):
        try:
            state[path] = git_blob_id((toplevel or Path(".")).joinpath(path).read_bytes())
        except OSError:
            state[path] = None
    return state


# The memo is sealed with the machine's key: a memo this machine did not write (one committed
# with the project, whose key anyone can compute) could say that any tree is clean.
MEMO_SEAL = "check-memo"


def _load_memo(
    path: Path, key: str, toplevel: Path | None, sealer: Sealer
) -> dict[str, Any] | None:
    raw = read_sealed(path, sealer)
    if raw is None:
        return None
    try:
        memo = json.loads(raw)
        if memo.get("format") != MEMO_FORMAT or memo.get("key") != key:
            return None
        outside = memo["outside"]
        if _outside_files(toplevel, set(outside)) != outside:
            return None
        return memo  # type: ignore[no-any-return]
    except (ValueError, AttributeError, KeyError, TypeError, RecursionError):
        return None


def _save_memo(
    path: Path, key: str, result: CheckResult, outside: dict[str, str | None], sealer: Sealer
) -> None:
    if any(d.code == "KB012" for d in result.diagnostics):
        return  # git could not read the history: read it again next time (it may be repaired)
    memo = {
        "format": MEMO_FORMAT,
        "key": key,
        "diagnostics": [{**d.to_json(), "subject": d.subject} for d in result.diagnostics],
        "pages": result.page_count,
        "semantic_files": result.semantic_file_count,
        "outside": outside,
    }
    # A cache that cannot be written costs only speed next time: never fail a check for it.
    with contextlib.suppress(OSError):
        atomic_write(path, sealer.wrap(json.dumps(memo, separators=(",", ":")).encode()))


def check(
    root: Path,
    config: Config,
    *,
    changed_only: bool = False,
    use_cache: bool = True,
    today: dt.date | None = None,
) -> CheckResult:
    """`knowl check`: validate everything, write nothing but the caches (and those only when
    the project can be written: a read-only tree is checked without them, with a notice).

    Validation always covers the whole project; `changed_only` filters what is reported."""
    today = today or utc_today()
    caches = cache_place(root)
    notices = list(caches.notices)
    sealer = caches.sealer(MEMO_SEAL)
    memo_file = caches.file(MEMO_CACHE) if use_cache and sealer is not None else None
    inputs = read_inputs(root, config)
    key = inputs.fingerprint(config, today)
    git = inputs.discovery.git
    toplevel = git.toplevel if git is not None else None
    memo = None
    if memo_file is not None and sealer is not None:
        memo = _load_memo(memo_file, key, toplevel, sealer)
    if memo is not None:
        result = CheckResult(
            [Diagnostic.from_json(d) for d in memo["diagnostics"]],
            memo["pages"],
            memo["semantic_files"],
            inputs.discovery.knowledge_exists,
            None,
            notices,
        )
    else:
        analysis = analyse(
            root, config, use_cache=use_cache, today=today, inputs=inputs, caches=caches
        )
        result = CheckResult(
            analysis.diagnostics,
            len(analysis.pages),
            len(analysis.layer.files),
            inputs.discovery.knowledge_exists,
            None,
            notices,
        )
        if memo_file is not None and sealer is not None:
            affected = {
                item.value
                for page in analysis.pages
                if page.parsed.fields.source_commit
                for item in page.parsed.fields.affected_paths
            }
            outside = _outside_files(toplevel, affected) if git else {}
            _save_memo(memo_file, key, result, outside, sealer)
    if changed_only and git is not None:
        changed = git.changed_files()
        if changed is not None:
            # Findings show a name that is not UTF-8 escaped; git's list has the raw bytes.
            shown = {shown_path(path) for path in changed}
            kept = [d for d in result.diagnostics if d.path in shown]
            return CheckResult(
                kept,
                result.page_count,
                result.semantic_file_count,
                result.knowledge_exists,
                changed,
                notices,
            )
    return result


# --- knowl build ----------------------------------------------------------------------------

STAGES = ("discover", "parse", "render", "index", "vectors", "publish")


@dataclass(frozen=True, slots=True)
class BuildResult:
    diagnostics: list[Diagnostic]
    status: str  # "published" | "no-op" | "refused"
    build_id: str
    folder: Path | None  # the published (or current, for a no-op) artifact folder
    counts: dict[str, int]
    incremental: bool
    pruned: list[str]
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    notices: list[str] = field(default_factory=list)  # one line each, for stderr


def _repo_name(config: Config, root: Path, git: Any) -> str:
    if config.repo_name:
        return config.repo_name
    url: str | None = git.remote_url() if git is not None else None
    if url:
        name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return name[:-4] if name.endswith(".git") else name
    return root.name


def inputs_sha256(root: Path, inputs: Inputs, config: Config) -> str:
    digest = hashlib.sha256()
    rows = [(p, h) for table in (inputs.pages, inputs.semantics) for p, (_, h) in table.items()]
    for path in inputs.discovery.other_files:
        rows.append((path, _read(str(root), path)[1]))
    for path, content_hash in sorted(rows):
        digest.update(f"{path}\0{content_hash}\n".encode())
    if config.source is not None:
        source = Path(config.source)
        source = source if source.is_absolute() else root / source.name
        digest.update(b"config\0" + (_read(str(source.parent), source.name)[1]).encode())
    return digest.hexdigest()


def build(
    root: Path,
    config: Config,
    *,
    full: bool = False,
    allow_errors: bool = False,
    out: Path | None = None,
    today: dt.date | None = None,
    progress: Any = None,
    gate: Callable[[list[Diagnostic]], list[Diagnostic]] | None = None,
) -> BuildResult:
    """`knowl build`: validate, render, fingerprint, index and publish an artifact.

    `gate` picks the findings whose errors refuse the publication (all of them by default;
    with `--baseline`, the new ones); the artifact records every finding either way.

    The previous artifact stays current until the new one is complete; a refused or failed
    build publishes nothing. A project root that cannot be written is not written to: the
    caches go under `<out>/.cache/` (a notice says so), and without `out` the run stops."""
    import time

    from knowl_build import artifacts
    from knowl_build.graph import to_json as graph_json
    from knowl_build.index import write_index
    from knowl_build.output.json_format import diagnostics_document
    from knowl_build.parse.text import decode
    from knowl_build.pipeline import records, reuse

    timings: dict[str, float] = {}
    started: dict[str, float] = {}

    def stage(name: str) -> None:
        now = time.perf_counter()
        for previous, since in started.items():
            timings[previous] = round(now - since, 3)
        started.clear()
        started[name] = now
        if progress is not None:
            progress(name)

    today = today or utc_today()
    if out is None:
        caches = cache_place(root)
        if caches.problem is not None:
            raise UsageError(
                f"the project root {root} {caches.problem}, so the build has nowhere to go: "
                "pass --out <a writable folder>"
            )
        out_dir = artifacts.check_out_dir(root, config)
    else:
        out_dir = artifacts.check_out_dir(root, config, out)
        caches = cache_place(root, out_dir)
    notices = list(caches.notices)
    # Only a build this machine sealed is reused (or answers for an unchanged tree).
    sealer = caches.sealer(artifacts.BUILD_SEAL)
    with artifacts.output_errors(out_dir), artifacts.build_lock(out_dir):
        stage("discover")
        inputs = read_inputs(root, config)
        git = inputs.discovery.git
        head = git.head() if git is not None else None
        input_hash = inputs_sha256(root, inputs, config)
        current = artifacts.current_folder(out_dir)
        previous = _manifest_or_none(current, sealer)
        if previous is None:
            current = None  # nothing of it is reused
        if (
            not full
            and previous is not None
            and current is not None
            and all(
                (
                    previous.get("commit") == head,
                    previous.get("inputs_sha256") == input_hash,
                    previous.get("config_sha256") == config.sha256,
                    previous.get("tool_version") == __version__,
                    str(previous.get("built_at", ""))[:10] == today.isoformat(),
                )
            )
        ):
            # Same inputs, same day: the published artifact already says everything.
            published = _published_findings(current)
        else:
            published = None
        if published is not None and previous is not None and current is not None:
            return BuildResult(
                published,
                "no-op",
                str(previous["build_id"]),
                current,
                dict(previous["counts"]),
                False,
                [],
                notices=notices,
            )

        stage("parse")
        analysis = analyse(root, config, today=today, inputs=inputs, caches=caches)
        diagnostics = analysis.diagnostics
        counts = summarize_counts(analysis)
        errors = counts["errors"]
        watched = [config.knowledge_dir, config.semantics_dir, "knowl.toml", "pyproject.toml"]
        if config.dbt_project_dir is not None:
            watched.append(config.dbt_project_dir or ".")
        dirty = head is not None and git is not None and git.dirty(watched)
        if head is None:
            build_id = f"nogit-{input_hash[:12]}"
        else:
            build_id = head[:12] + (f"-dirty-{input_hash[:8]}" if dirty else "")

        blocking = diagnostics if gate is None else gate(diagnostics)
        if any(d.severity == "error" for d in blocking) and not allow_errors:
            return BuildResult(
                diagnostics, "refused", build_id, None, counts, False, [], notices=notices
            )

        stage("render")
        texts = {
            path: decode(data) or "" for path, (data, _) in inputs.pages.items() if data is not None
        }
        incremental = (
            not full
            and current is not None
            and previous is not None
            and previous.get("tool_version") == __version__
            and (current / "index").is_dir()
        )
        old = reuse.Previous.load(current) if incremental and current is not None else None
        content = {path: digest for path, (_, digest) in inputs.pages.items()}
        rows = reuse.assemble(analysis, texts, content, old)
        entities = records.entity_records(analysis)
        graph_key = reuse.graph_digest(analysis, rows.pages)

        staging = artifacts.staging_folder(out_dir)
        try:
            (staging / "pages.jsonl").write_bytes(b"".join(rows.lines))
            (staging / "catalog.json").write_bytes(artifacts.dump_json({"pages": rows.catalog}))
            (staging / "entities.json").write_bytes(artifacts.dump_json({"entities": entities}))
            if old is not None and old.graph == graph_key:
                shutil.copyfile(old.folder / "graph.json", staging / "graph.json")
            else:
                graph = records.reference_graph(analysis)
                (staging / "graph.json").write_text(graph_json(graph), encoding="utf-8")
            (staging / reuse.SIGNATURES).write_bytes(
                artifacts.dump_json(reuse.signatures_json(rows, graph_key))
            )
            (staging / "diagnostics.json").write_bytes(
                artifacts.dump_json(diagnostics_document(diagnostics))
            )
            stage("index")
            if incremental and current is not None:
                shutil.copytree(current / "index", staging / "index")
            update = write_index(
                staging / "index", rows.index_digests, rows.index_document, incremental
            )
            stage("vectors")
            vectors = _write_vectors(staging, rows, current if incremental else None)
            stage("publish")
            files = artifacts.file_table(staging)
            manifest = {
                "format": artifacts.FORMAT,
                "schema_version": artifacts.SCHEMA_VERSION,
                "tool_version": __version__,
                "build_id": build_id,
                "commit": head,
                "dirty": bool(dirty) if head is not None else True,
                "inputs_sha256": input_hash,
                "config_sha256": config.sha256,
                "built_at": clock.stamp()
                if clock.pinned() is None
                else f"{today.isoformat()}T00:00:00Z",
                "repo": _repo_name(config, root, git),
                "counts": counts,
                "error_count": errors,
                "search": {
                    "boosts": dict(sorted(config.search.boosts.items())),
                    "max_caveats": config.search.max_caveats,
                },
                "records": {"reused": rows.reused, "built": len(rows.pages) - rows.reused},
                "index": {
                    "added": update.added,
                    "updated": update.updated,
                    "deleted": update.deleted,
                    "merged": update.merged,
                    "incremental": incremental,
                },
                **({"vectors": vectors} if vectors else {}),
                "files": files,
                "sizes": {
                    name: (staging / name).stat().st_size
                    for name in files
                    if name.startswith("index/")
                },
            }
            (staging / artifacts.MANIFEST).write_bytes(artifacts.dump_json(manifest))
            folder = artifacts.publish(out_dir, staging, build_id, sealer)
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, OSError):
                failure = artifacts.output_failure(out_dir, exc, writing=True)
                if failure is not None:
                    raise failure from None
            raise
        pruned = artifacts.prune(out_dir, config.keep_builds)
        stage("done")
        return BuildResult(
            diagnostics,
            "published",
            build_id,
            folder,
            counts,
            incremental,
            pruned,
            timings,
            notices,
        )


def _write_vectors(staging: Path, rows: Any, previous: Path | None) -> dict[str, Any]:
    """With the embeddings extra: one vector per page (unchanged pages reuse theirs)."""
    from knowl_build import embeddings

    if not embeddings.available():
        return {}
    texts = [
        (row["path"], embeddings.page_text(row["fields"]["summary"], row["body"]))
        for row in rows.records()
    ]
    old = previous / embeddings.FOLDER if previous is not None else None
    counts = embeddings.write_vectors(staging / embeddings.FOLDER, texts, old)
    return {"model": embeddings.Embedder.get().identity, **counts}


def _manifest_or_none(folder: Path | None, sealer: Sealer | None) -> dict[str, Any] | None:
    """The current build's manifest once the build is known to be this machine's (sealed
    with its key) and whole (validated, as a reader would); None when there is none, it was
    written elsewhere (committed with the project, say) or it is damaged: then this build
    starts from nothing and replaces it, instead of reusing what it cannot trust."""
    from knowl_build import artifacts

    if folder is None or sealer is None:
        return None
    manifest = artifacts.sealed(folder, sealer)
    if manifest is None:
        return None
    try:
        opened = artifacts.open_artifact(folder)
    except KnowlError:
        return None
    opened.close()
    try:
        same = json.loads(manifest) == opened.manifest  # not swapped since the seal's check
    except ValueError:
        return None
    return opened.manifest if same else None


def _published_findings(folder: Path) -> list[Diagnostic] | None:
    try:
        published = json.loads((folder / "diagnostics.json").read_bytes())
        return [Diagnostic.from_json(d) for d in published["diagnostics"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def summarize_counts(analysis: Analysis) -> dict[str, int]:
    from knowl_build.diagnostics import summarize

    severities = summarize(analysis.diagnostics)
    freshness = {"fresh": 0, "stale": 0, "needs_review": 0}
    for page in analysis.pages:
        assessment = analysis.assessments.get(page.path)
        if assessment is not None:
            freshness[assessment.value] += 1
    return {
        "pages": sum(1 for p in analysis.pages if p.parsed.text_ok),
        "entities": len(analysis.layer.entities),
        "semantic_files": len(analysis.layer.files),
        "errors": severities["error"],
        "warnings": severities["warning"],
        "info": severities["info"],
        **freshness,
    }
