"""One page's bytes to a ParsedPage: decoding, frontmatter, fields, body, and the rules that
need nothing but the page itself (field types, secrets, sizes), so the result is cacheable by
the page's content."""

from __future__ import annotations

import bisect
import hashlib
import json
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor

from knowl_build import __version__
from knowl_build.core.config import DENDRON, Config, SecurityConfig
from knowl_build.core.diagnostics import Finding
from knowl_build.core.model import Fields, Located, Page, ParsedPage, Span, TextIndex
from knowl_build.core.resolve import misplaced, place
from knowl_build.parse.body import CODE_SHORTCODES, FM_SUPPRESSION, scan_body, suppression
from knowl_build.parse.dendron import label_first
from knowl_build.parse.frontmatter import split
from knowl_build.parse.text import decode
from knowl_build.parse.yamlnodes import YamlProblem, YMap, compose, json_safe, plain
from knowl_build.pipeline.cache import ParseCache, decode_page, encode_page
from knowl_build.pipeline.inputs import UNREADABLE, Inputs
from knowl_build.rules import fields as field_rules
from knowl_build.rules import security
from knowl_build.secrets.scanner import SecretScanner


def not_text(kind: str) -> ParsedPage:
    return ParsedPage(
        frontmatter={},
        fields=Fields(),
        body_offset=0,
        links=(),
        directives=(),
        headings=(),
        h1=None,
        findings=(Finding("KB007", 1, 1, f"{kind} is not UTF-8 text"),),
        text_ok=False,
    )


def parse_page(
    data: bytes,
    config: SecurityConfig,
    scanner: SecretScanner,
    code_shortcodes: frozenset[str] = CODE_SHORTCODES,
) -> ParsedPage:
    """`code_shortcodes`: the Hugo shortcodes whose bodies are code (`Config.code_names`)."""
    text = decode(data)
    if text is None:
        return not_text("page")
    index = TextIndex(text)
    parts = split(text)
    findings: list[Finding] = []
    fields = Fields()
    frontmatter: dict[str, object] = {}
    comments: list[tuple[int, int]] = []  # where YAML says the frontmatter's comments are

    if parts.unclosed:
        findings.append(
            Finding(
                "KB001",
                1,
                1,
                "frontmatter fence '---' is never closed",
                "add a line '---' after the frontmatter",
            )
        )
    elif parts.frontmatter is not None:
        fm_offset = parts.fm_offset

        def locate(start: int, end: int) -> Span:
            line, column = index.position(fm_offset + start)
            end_line, end_column = index.position(fm_offset + max(start, end - 1))
            return Span(line, column, end_line, end_column)

        try:
            composed = compose(parts.frontmatter)
        except YamlProblem as problem:
            line, column = index.position(fm_offset + min(problem.offset, len(parts.frontmatter)))
            findings.append(Finding("KB001", line, column, f"frontmatter is {problem.message}"))
            findings.extend(security.check_unparsed(parts.frontmatter, locate, config, scanner))
        else:
            root = composed.root
            if "knowl:" in parts.frontmatter:
                comments = security.comment_spans(root, parts.frontmatter)
            # Comments hold no data but are committed with the file: scanned whatever the
            # frontmatter holds (a mapping, another value that is KB001, or only comments).
            findings.extend(
                security.check_comments(root, parts.frontmatter, locate, config, scanner)
            )
            if root is not None and not isinstance(root, YMap):
                span = locate(root.start, root.end)
                findings.append(
                    Finding(
                        "KB001",
                        span.line,
                        span.column,
                        "frontmatter is not a mapping of keys to values",
                    )
                )
            elif isinstance(root, YMap):
                for duplicate in composed.duplicates:
                    span = locate(duplicate.start, duplicate.end)
                    findings.append(
                        Finding(
                            "KB001",
                            span.line,
                            span.column,
                            f"'{duplicate.value}' is given twice in frontmatter",
                            "keep one of the two",
                            span.end_line,
                            span.end_column,
                        )
                    )
                fields, field_findings, key_spans = field_rules.validate_fields(root, locate)
                findings.extend(field_findings)
                findings.extend(
                    security.check_frontmatter(
                        root, parts.frontmatter, locate, key_spans, config, scanner
                    )
                )
                source = None
                if fields.source is not None and "source:value" in fields.anchors:
                    source = Located(fields.source, fields.anchors["source:value"])
                findings.extend(security.check_paths(fields.affected_paths, source, config))
                frontmatter = field_rules.as_written(root, json_safe(plain(root)))

    findings.extend(security.check_body(text, parts.body_offset, index, config, scanner))
    scan = scan_body(text, parts.body_offset, index, code_shortcodes)
    suppressions = list(scan.suppressions)
    if parts.frontmatter is not None and "knowl:" in parts.frontmatter:
        # Only a real YAML comment suppresses: not the same text inside a key or a value, nor
        # frontmatter that is not YAML (KB001), whose comments nobody can tell.
        suppressions[:0] = [
            suppression(match, parts.fm_offset, index, frontmatter=True)
            for match in FM_SUPPRESSION.finditer(parts.frontmatter)
            if _in_a_comment(match.start() + match.group(0).find("#"), comments)
        ]
    return ParsedPage(
        frontmatter=frontmatter,
        fields=fields,
        body_offset=parts.body_offset,
        links=scan.links,
        directives=scan.directives,
        headings=scan.headings,
        h1=scan.h1,
        blocks=scan.blocks,
        urls=scan.urls,
        findings=tuple(sorted(findings, key=lambda f: (f.line, f.column, f.code))),
        suppressions=tuple(suppressions),
    )


def _in_a_comment(offset: int, comments: list[tuple[int, int]]) -> bool:
    """Whether `offset` lies in one of `comments` (sorted, disjoint (start, end) pairs)."""
    at = bisect.bisect_right(comments, (offset, sys.maxsize)) - 1
    return at >= 0 and offset < comments[at][1]


# What Dendron owns of knowl's own fields: `id` is its note id (not KB003), and a `status`
# outside knowl's values is a task note's (not KB002).
_DENDRON_OWNED = frozenset({("KB003", "id"), ("KB002", "status")})


def _allowed(finding: Finding, allowed: frozenset[str], dendron: bool = False) -> bool:
    """A KB006 for a key that [frontmatter] allow (or the link resolution) gives to another
    tool, or in Dendron mode a finding about a key Dendron owns. Decided after the cache, so
    the cached parse does not depend on the list or the mode."""
    if finding.code == "KB006":
        return finding.subject in allowed
    return dendron and (finding.code, finding.subject) in _DENDRON_OWNED


def parse_cache_key(config: Config) -> str:
    """What a cached parse depends on: the version, the security settings and the code
    shortcodes."""
    security = config.to_json()["security"]
    shortcodes = sorted(config.code_names)
    return hashlib.sha256(
        json.dumps([__version__, security, shortcodes], sort_keys=True).encode()
    ).hexdigest()


# Below this many pages to parse, starting worker processes costs more than it saves.
PARALLEL_MIN_PAGES = 1000


def _parse_chunk(
    items: list[tuple[str, bytes]],
    security: SecurityConfig,
    code_shortcodes: frozenset[str] = CODE_SHORTCODES,
) -> list[tuple[str, ParsedPage]]:
    scanner = SecretScanner(security.extra_patterns)
    return [
        (digest, parse_page(data, security, scanner, code_shortcodes)) for digest, data in items
    ]


def _parse_encoded(
    items: list[tuple[str, bytes]],
    security: SecurityConfig,
    code_shortcodes: frozenset[str] = CODE_SHORTCODES,
) -> list[bytes]:
    """`_parse_chunk` in a worker process: each page as the parse cache encodes it, which
    crosses back to the parent several times faster than a pickle and is what the cache
    stores."""
    return [encode_page(parsed) for _, parsed in _parse_chunk(items, security, code_shortcodes)]


def _parse_uncached(
    todo: dict[str, bytes],
    security: SecurityConfig,
    code_shortcodes: frozenset[str] = CODE_SHORTCODES,
) -> Iterator[list[tuple[str, ParsedPage, bytes | None]]]:
    """Parse pages the cache does not know, in worker processes when there are many: each
    with its cache encoding when a worker made it. Batches in the order of `todo`, each as
    soon as it is parsed."""

    items = list(todo.items())
    workers = min(os.cpu_count() or 1, 4)
    # Forking is only safe while this process runs a single thread; "spawn" would re-run the
    # caller's __main__, which a library user's script or REPL may not allow. Else: serial.
    if (
        len(items) < PARALLEL_MIN_PAGES
        or workers < 2
        or threading.active_count() > 1
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        yield [
            (digest, parsed, None)
            for digest, parsed in _parse_chunk(items, security, code_shortcodes)
        ]
        return

    size = max(64, len(items) // (workers * 8))
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        results = pool.map(
            _parse_encoded, chunks, [security] * len(chunks), [code_shortcodes] * len(chunks)
        )
        for chunk, encoded in zip(chunks, results, strict=True):
            yield [
                (digest, decode_page(raw), raw)
                for (digest, _), raw in zip(chunk, encoded, strict=True)
            ]


def parse_pages(
    inputs: Inputs,
    config: Config,
    cache: ParseCache,
    ready: Callable[[list[Page]], None] | None = None,
) -> tuple[list[Page], dict[str, list[Finding]]]:
    """Parse every page (through the cache); return placed pages and per-file findings.

    `ready` hears of the placed pages in path order, batch by batch, as soon as every page
    before them is parsed (a build indexes them meanwhile)."""
    order = sorted(inputs.pages)
    parsed_by_digest: dict[str, ParsedPage] = {}
    todo: dict[str, bytes] = {}
    for path in order:
        digest = inputs.pages[path][1]
        if digest == UNREADABLE or digest in parsed_by_digest or digest in todo:
            continue
        cached = cache.get(digest)
        if cached is not None:
            parsed_by_digest[digest] = cached
            continue
        data, digest = inputs.read(path)  # not read when the stat cache vouched for it
        if data is not None:
            todo[digest] = data

    placed: dict[str, Page] = {}
    found: dict[str, list[Finding]] = {}
    allowed = config.allowed_keys
    dendron = config.link_resolution == DENDRON
    layout = config.layout
    done = 0  # pages of `order` placed so far

    def advance() -> None:
        nonlocal done
        batch = []
        while done < len(order):
            path = order[done]
            digest = inputs.pages[path][1]
            unreadable = digest == UNREADABLE
            if not unreadable and digest not in parsed_by_digest:
                break  # not parsed yet
            parsed = not_text("page") if unreadable else parsed_by_digest[digest]
            if dendron:  # `[[label|note]]`: read after the cache, as the allowed keys are
                parsed = label_first(parsed)
            found[path] = [f for f in parsed.findings if not _allowed(f, allowed, dendron)]
            where = place(path, layout)
            if where is None:
                message, hint = misplaced(path, layout)
                found[path].insert(0, Finding("KB004", 1, 1, message, hint))
            else:
                page = Page(path, where.id, where.scope, where.owner, where.rel, parsed)
                placed[path] = page
                batch.append(page)
            done += 1
        if batch and ready is not None:
            ready(batch)

    advance()
    for batch in _parse_uncached(todo, config.security, config.code_names):
        for digest, parsed, encoded in batch:
            cache.put(digest, parsed, encoded)
            parsed_by_digest[digest] = parsed
        advance()
    # In the order of the inputs, as before: duplicates resolve by it.
    pages = [placed[path] for path in inputs.pages if path in placed]
    findings = {path: found[path] for path in inputs.pages}
    return pages, findings
