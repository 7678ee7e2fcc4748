"""The retrieval-quality benchmark: `python bench/run.py --suite quality` (or this file alone).

Known-item search over public documentation sets: every query has exactly one right page, and
each engine is scored by MRR@10 (the mean of 1/rank of the right page, 0 past rank 10) and
top-1 (the share of queries whose right page comes first). The query sets come from the corpus
itself:

- name: the page's name as typed to jump to it (its title, else its file name);
- alias: an `aliases:` entry of the page (only corpora that have aliases);
- heading: a section heading (H2 and below) that no other page of the corpus has;
- description: the page's one-line description, held out of the indexed copy (the
  `description:` frontmatter where the corpus has one, else the first sentence of the
  page's first paragraph, which is then removed from the page).

A name, alias, heading or description that two pages share is no known item and is dropped.

The engines, in the same run, on the same indexed copy of each page (a name: title and aliases;
a body: the Markdown without the held-out description):

- knowl: the corpus built as a real knowl project in a temp folder (git init, pages under
  knowledge/global/, `[links] resolution = "obsidian"`, `knowl build --allow-errors`),
  queried in process through `knowl_build.app.reading.search` with its default ranking;
- bm25s: name and body as one text, English stop words, the Snowball English stemmer
  (PyStemmer);
- tantivy: a name field and a body field, both with its `en_stem` tokenizer, the query
  parsed over both fields.

Ties are broken by page id, so the same corpus gives the same table. The baselines are
benchmark dependencies (`pip install -e '.[bench]'`), never imported by knowl_build.

Where the corpora come from (this machine reaches package registries only): registry packages
that ship Markdown documentation, at pinned versions with pinned hashes, downloaded once into
`bench/.cache/quality/` (see CORPORA):

- typescript-eslint: the rule pages of `@typescript-eslint/eslint-plugin` 5.62.0 (npm),
  `docs/rules/*.md`, named by file name, with a `description:` frontmatter line;
- pymdown-extensions: the documentation of `pymdown-extensions` 10.15 (its PyPI sdist),
  `docs/src/markdown/**/*.md`, titled by their H1;
- markdownlint: the rule pages of `markdownlint` 0.37.4 (npm), `doc/md*.md`, named by rule
  code (MD001), whose `Aliases:` line (`heading-increment`) becomes `aliases:` frontmatter,
  as an Obsidian vault holds it. No registry package found ships a vault with `aliases:`
  frontmatter of its own.
"""

from __future__ import annotations

import hashlib
import html
import io
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

K = 10
CACHE = Path(__file__).resolve().parent / ".cache" / "quality"
QUERY_SETS = ("name", "alias", "heading", "description")
ENGINES = ("knowl", "bm25s", "tantivy")

# An engine answers a query with page ids, best first (at most K).
Engine = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Page:
    id: str  # unique in the corpus and a safe file name
    name: str  # as typed to jump to the page
    title: str
    aliases: tuple[str, ...]
    headings: tuple[str, ...]  # H2 and below, outside code
    description: str  # held out of `body`
    body: str


@dataclass(frozen=True, slots=True)
class Query:
    kind: str
    text: str
    page: str


@dataclass(frozen=True, slots=True)
class Source:
    corpus: str
    registry: str  # "npm" or "pypi"
    package: str
    version: str
    sha256: str
    members: str  # a regex on the paths inside the archive
    reader: Callable[[str, str], Page | None]  # (path inside the archive, text) -> page


# --- Markdown, as far as the query sets need it --------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)")
ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def clean_inline(text: str) -> str:
    """A heading or sentence as a person would type it: no attribute lists, link targets,
    code marks or emphasis."""
    text = re.sub(r"\{:?[^}]*\}\s*$", "", text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", text)
    text = re.sub(r":[a-z0-9_+-]+:", "", text)  # emoji and icon short codes
    text = text.replace("`", "").replace("**", "").replace("__", "")
    return " ".join(html.unescape(text).split())


def headings(body: str) -> list[tuple[int, str]]:
    """ATX headings outside fenced code, as (level, cleaned text)."""
    found: list[tuple[int, str]] = []
    fence: str | None = None
    for line in body.splitlines():
        opening = FENCE.match(line)
        if opening:
            fence = None if fence == opening.group(1) else fence or opening.group(1)
            continue
        match = None if fence else ATX.match(line)
        if match and clean_inline(match.group(2)):
            found.append((len(match.group(1)), clean_inline(match.group(2))))
    return found


def lead_sentence(body: str) -> tuple[str, str]:
    """The first sentence of the first prose paragraph, and the body without it."""
    lines = body.splitlines()
    fence: str | None = None
    for number, line in enumerate(lines):
        opening = FENCE.match(line)
        if opening:
            fence = None if fence == opening.group(1) else fence or opening.group(1)
            continue
        stripped = line.strip()
        after_break = number == 0 or not lines[number - 1].strip() or ATX.match(lines[number - 1])
        if fence or not after_break or not stripped[:1].isalpha() or ATX.match(line):
            continue
        if re.match(r"^(Tags|Aliases|Parameters|Fixable):", stripped):
            continue
        end = number
        while end + 1 < len(lines) and lines[end + 1].strip() and not FENCE.match(lines[end + 1]):
            end += 1
        paragraph = " ".join(x.strip() for x in lines[number : end + 1])
        first = SENTENCE_END.split(paragraph, maxsplit=1)
        rest = first[1] if len(first) > 1 else ""
        kept = lines[:number] + ([rest] if rest else []) + lines[end + 1 :]
        return clean_inline(first[0]), "\n".join(kept)
    return "", body


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    match = FRONTMATTER.match(text)
    if not match:
        return {}, text
    data = yaml.safe_load(match.group(1))
    return (data if isinstance(data, dict) else {}), text[match.end() :]


def _subheadings(body: str) -> tuple[str, ...]:
    # A heading without a word (a version number of a changelog) is nothing one searches for.
    return tuple(
        text for level, text in headings(body) if level > 1 and re.search(r"[^\W\d_]", text)
    )


# --- The corpora ---------------------------------------------------------------------------


def typescript_eslint_page(path: str, text: str) -> Page | None:
    stem = Path(path).stem
    if stem in ("README", "TEMPLATE"):
        return None
    meta, body = split_frontmatter(text)
    description = clean_inline(str(meta.get("description", "")))
    return Page(stem, stem, stem, (), _subheadings(body), description, body)


def pymdown_page(path: str, text: str) -> Page | None:
    relative = path.split("docs/src/markdown/", 1)[1]
    if "/." in "/" + relative:  # .snippets: included into other pages, not pages
        return None
    page_id = relative.removesuffix(".md").replace("/", "-").lower()
    _meta, body = split_frontmatter(text)
    tops = [text for level, text in headings(body) if level == 1]
    title = tops[0] if tops else Path(path).stem
    description, rest = lead_sentence(body)
    return Page(page_id, title, title, (), _subheadings(body), description, rest)


def markdownlint_page(path: str, text: str) -> Page | None:
    stem = Path(path).stem
    tops = [text for level, text in headings(text) if level == 1]
    title = tops[0] if tops else stem
    match = re.search(r"^Aliases: (.*)$", text, re.M)
    aliases = tuple(a.strip("` ") for a in match.group(1).split(",")) if match else ()
    body = text[: match.start()] + text[match.end() + 1 :] if match else text
    description, rest = lead_sentence(body)
    return Page(stem, stem.upper(), title, aliases, _subheadings(body), description, rest)


CORPORA = (
    Source(
        "typescript-eslint",
        "npm",
        "@typescript-eslint/eslint-plugin",
        "5.62.0",
        "6f7a4bd0876a89d6ff9eb49a074a11b8869dab1fdc79abe76a131772ae69d6fb",
        r"^package/docs/rules/[^/]+\.md$",
        typescript_eslint_page,
    ),
    Source(
        "pymdown-extensions",
        "pypi",
        "pymdown-extensions",
        "10.15",
        "0e5994e32155f4b03504f939e501b981d306daf7ec2aa1cd2eb6bd300784f8f7",
        r"^[^/]+/docs/src/markdown/.+\.md$",
        pymdown_page,
    ),
    Source(
        "markdownlint",
        "npm",
        "markdownlint",
        "0.37.4",
        "77026c973a53c0c2ab4dac1676f329ad4d05ba5435be08ae58f14d1ea65d13d1",
        r"^package/doc/md\d+\.md$",
        markdownlint_page,
    ),
)


def fetch(source: Source, cache: Path = CACHE) -> Path:
    """The package's archive, from the cache or its registry; one clear line if neither."""
    folder = cache / f"{source.registry}-{source.package.replace('/', '+')}-{source.version}"
    done = [p for p in folder.glob("*") if p.name.endswith((".tgz", ".tar.gz"))]
    if not done:
        folder.mkdir(parents=True, exist_ok=True)
        (cache.parent / ".gitignore").write_text("*\n")
        spec = f"{source.package}{'@' if source.registry == 'npm' else '=='}{source.version}"
        if source.registry == "npm":
            command = ["npm", "pack", spec, "--pack-destination", str(folder), "--silent"]
        else:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q"]
            command += ["--no-binary", ":all:", spec, "-d", str(folder)]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SystemExit(
                f"quality bench: cannot fetch {spec} from {source.registry}: {error}"
            ) from None
        done = [p for p in folder.glob("*") if p.name.endswith((".tgz", ".tar.gz"))]
        if proc.returncode != 0 or not done:
            last = (proc.stderr.strip().splitlines() or ["no archive written"])[-1]
            raise SystemExit(f"quality bench: cannot fetch {spec} from {source.registry}: {last}")
    archive = done[0]
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != source.sha256:
        raise SystemExit(f"quality bench: {archive}: sha256 {digest}, expected {source.sha256}")
    return archive


def read_corpus(source: Source, archive: Path) -> list[Page]:
    members = re.compile(source.members)
    pages: list[Page] = []
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.isfile() or not members.search(member.name):
                continue
            handle = tar.extractfile(member)
            assert handle is not None
            with io.TextIOWrapper(handle, encoding="utf-8") as text:
                page = source.reader(member.name, text.read().replace("\r\n", "\n"))
            if page is not None:
                pages.append(page)
    if len({p.id for p in pages}) != len(pages):
        raise SystemExit(f"quality bench: {source.corpus}: two pages share an id")
    return pages


# --- Query sets and metrics ----------------------------------------------------------------


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def _known_items(kind: str, pairs: Iterable[tuple[str, str]]) -> list[Query]:
    """One query per (text, page) whose text (case-insensitive) belongs to that page only."""
    owners: dict[str, set[str]] = {}
    first: dict[tuple[str, str], str] = {}
    for text, page in pairs:
        if _key(text):
            owners.setdefault(_key(text), set()).add(page)
            first.setdefault((_key(text), page), text)
    return sorted(
        (
            Query(kind, first[(key, page)], page)
            for key, pages in owners.items()
            if len(pages) == 1
            for page in pages
        ),
        key=lambda q: (q.page, _key(q.text)),
    )


def query_sets(pages: Sequence[Page]) -> dict[str, list[Query]]:
    """The known-item query sets of a corpus; an empty set where the corpus has none."""
    names = [(p.name, p.id) for p in pages]
    aliases = [(a, p.id) for p in pages for a in p.aliases]
    # An alias that is another page's name is no known item either.
    taken = {_key(n) for n, _ in names}
    aliases = [(a, page) for a, page in aliases if _key(a) not in taken]
    return {
        "name": _known_items("name", names),
        "alias": _known_items("alias", aliases),
        "heading": _known_items("heading", [(h, p.id) for p in pages for h in set(p.headings)]),
        "description": _known_items("description", [(p.description, p.id) for p in pages]),
    }


def reciprocal_rank(ranking: Sequence[str], right: str, k: int = K) -> float:
    """1/rank of the right page within the first k, else 0."""
    for rank, page in enumerate(ranking[:k], start=1):
        if page == right:
            return 1.0 / rank
    return 0.0


def score(rankings: Sequence[tuple[Sequence[str], str]], k: int = K) -> tuple[float, float]:
    """(MRR@k, top-1) over (ranking, right page) pairs; (0, 0) for none."""
    if not rankings:
        return 0.0, 0.0
    ranks = [reciprocal_rank(ranking, right, k) for ranking, right in rankings]
    top1 = sum(1 for ranking, right in rankings if list(ranking[:1]) == [right])
    return sum(ranks) / len(ranks), top1 / len(rankings)


def by_score(scored: Iterable[tuple[float, str]], k: int = K) -> list[str]:
    """Page ids best first, ties by page id, pages that scored nothing left out."""
    return [page for s, page in sorted(scored, key=lambda sp: (-sp[0], sp[1])) if s > 0][:k]


# --- The engines ---------------------------------------------------------------------------


def name_text(page: Page) -> str:
    return " ".join([page.title, *page.aliases])


def bm25s_engine(pages: Sequence[Page]) -> Engine:
    import bm25s  # type: ignore[import-untyped,import-not-found,unused-ignore]
    import Stemmer  # type: ignore[import-untyped,import-not-found,unused-ignore]

    stemmer = Stemmer.Stemmer("english")
    ids = [p.id for p in pages]
    retriever = bm25s.BM25()
    corpus = [name_text(p) + "\n" + p.body for p in pages]
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    vocabulary = retriever.vocab_dict

    def search(query: str) -> list[str]:
        tokens = bm25s.tokenize(
            [query], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )[0]
        known = [t for t in tokens if t in vocabulary]
        if not known:
            return []
        return by_score(zip((float(s) for s in retriever.get_scores(known)), ids, strict=True))

    return search


def tantivy_engine(pages: Sequence[Page]) -> Engine:
    import tantivy  # type: ignore[import-untyped,import-not-found,unused-ignore]

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("name", tokenizer_name="en_stem")
    builder.add_text_field("body", tokenizer_name="en_stem")
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    for page in pages:
        writer.add_document(tantivy.Document(id=page.id, name=name_text(page), body=page.body))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()

    def search(query: str) -> list[str]:
        words = re.findall(r"[^\W_]+", query)  # the query syntax is not what is measured
        if not words:
            return []
        parsed = index.parse_query(" ".join(words), ["name", "body"])
        hits = searcher.search(parsed, len(pages)).hits
        return by_score((float(s), str(searcher.doc(address)["id"][0])) for s, address in hits)

    return search


def page_file(page: Page) -> str:
    meta: dict[str, Any] = {"title": page.title}
    if page.aliases:
        meta["aliases"] = list(page.aliases)
    return "---\n" + yaml.safe_dump(meta, sort_keys=True, allow_unicode=True) + "---\n" + page.body


def build_knowl(pages: Sequence[Page], root: Path) -> None:
    """The corpus as a knowl project, built once (errors allowed: docs are not knowl pages)."""
    folder = root / "knowledge" / "global"
    folder.mkdir(parents=True)
    (root / "knowl.toml").write_text('[links]\nresolution = "obsidian"\n')
    for page in pages:
        (folder / f"{page.id}.md").write_text(page_file(page), encoding="utf-8")
    env = {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
        "PATH": "/usr/bin:/bin",
    }
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(root), *command], check=True, env=env)
    proc = subprocess.run(
        [sys.executable, "-m", "knowl_build", "build", "-q", "--allow-errors", "--repo", str(root)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"quality bench: knowl build failed:\n{proc.stderr[-2000:]}")


def knowl_engine(pages: Sequence[Page], root: Path) -> tuple[Engine, Callable[[], None]]:
    from knowl_build.app.reading import SearchOptions, search
    from knowl_build.reader import Reader

    build_knowl(pages, root)
    reader = Reader.open(root)
    options = SearchOptions(limit=K, kind="page")  # the corpora have no semantic layer
    by_file = {p.id.casefold(): p.id for p in pages}

    def ask(query: str) -> list[str]:
        # knowl's own order (ties by page id already): a page named as the query comes first
        # whatever its score, which a re-sort by score would undo.
        hits = search(reader, query, options)["hits"]
        found = [h["page"] for h in hits if h["kind"] == "page"]
        return [by_file.get(page.casefold(), page) for page in found][:K]

    return ask, reader.close


# --- The run -------------------------------------------------------------------------------


Row = dict[str, Any]


def bench_corpus(source: Source, workdir: Path, cache: Path = CACHE) -> list[Row]:
    pages = read_corpus(source, fetch(source, cache))
    sets = query_sets(pages)
    knowl, close = knowl_engine(pages, workdir / source.corpus)
    engines = {"knowl": knowl, "bm25s": bm25s_engine(pages), "tantivy": tantivy_engine(pages)}
    rows: list[Row] = []
    try:
        for kind in QUERY_SETS:
            queries = sets[kind]
            if not queries:
                continue
            row: Row = {
                "corpus": source.corpus,
                "pages": len(pages),
                "set": kind,
                "queries": len(queries),
            }
            for name, engine in engines.items():
                row[name] = score([(engine(q.text), q.page) for q in queries])
            rows.append(row)
    finally:
        close()
    return rows


def bench_quality(workdir: Path | None = None, cache: Path = CACHE) -> list[Row]:
    try:
        import bm25s  # noqa: F401  # type: ignore[import-untyped,import-not-found,unused-ignore]
        import Stemmer  # noqa: F401  # type: ignore[import-untyped,import-not-found,unused-ignore]
        import tantivy  # noqa: F401  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as error:
        raise SystemExit(
            f"quality bench: {error.name} missing: pip install -e '.[bench]'"
        ) from None
    own = workdir is None
    folder = workdir or Path(tempfile.mkdtemp(prefix="knowl-quality-"))
    try:
        return [row for source in CORPORA for row in bench_corpus(source, folder, cache)]
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)


def print_quality(rows: Sequence[Row], header: str = "") -> None:
    print(f"retrieval quality benchmark, MRR@{K} / top-1 {header}".rstrip())
    print(
        f"{'corpus':<20} {'pages':>5} {'query set':<12} {'queries':>7} "
        + " ".join(f"{e:>15}" for e in ENGINES)
    )
    for row in rows:
        cells = " ".join(f"{row[e][0]:>8.3f} /{row[e][1]:>5.2f}" for e in ENGINES)
        print(f"{row['corpus']:<20} {row['pages']:>5} {row['set']:<12} {row['queries']:>7} {cells}")


def main() -> None:
    start = time.perf_counter()
    rows = bench_quality()
    versions = ", ".join(f"{s.package} {s.version}" for s in CORPORA)
    print_quality(rows, f"({versions}; {time.perf_counter() - start:.0f}s)")


if __name__ == "__main__":
    main()
