"""A synthetic knowledge project with git history, for the benchmarks.

`make_corpus(root, pages)` writes `pages` Markdown pages (global and user scopes) with
frontmatter, wiki-links, refs, sl_refs and live-definition directives, a semantic layer of
one source per 200 pages, and commits it in a few commits so history exists.
"""

from __future__ import annotations

import os
import posixpath
import random
import subprocess
from pathlib import Path

WORDS = [
    "revenue",
    "order",
    "customer",
    "churn",
    "subscription",
    "invoice",
    "refund",
    "margin",
    "cohort",
    "segment",
    "retention",
    "funnel",
    "product",
    "channel",
    "region",
    "forecast",
    "quarter",
    "pipeline",
    "warehouse",
    "metric",
    "dashboard",
    "finance",
    "policy",
    "definition",
    "caveat",
    "growth",
    "active",
    "monthly",
    "weekly",
    "daily",
]

# Prose needs a vocabulary with a long tail (a few words are everywhere, most are rare), or
# every term is in every page and no index can help: domain words plus Zipf-weighted filler.
_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "ti",
    "vo",
    "xe",
    "za",
    "be",
    "do",
    "fu",
    "gi",
    "ha",
    "ju",
]
FILLER = [a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES[:8]]
FILLER_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(FILLER))]


def prose(rng: random.Random, words: int) -> str:
    filler = rng.choices(FILLER, weights=FILLER_WEIGHTS, k=words)
    for i in range(0, words, 8):  # about one domain word in eight
        filler[i] = rng.choice(WORDS)
    return " ".join(filler)


ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def git(root: Path, *args: str, date: str | None = None) -> None:
    env = dict(ENV)
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def source_yaml(i: int) -> str:
    return (
        f"name: src{i}\nconnection: conn{i % 2}\ntable: analytics.t{i}\ngrain: [id]\n"
        f"description: Source number {i}.\n"
        "columns:\n  - {name: id, type: int}\n  - {name: amount, type: decimal}\n"
        "  - {name: status, type: string}\n"
        "measures:\n"
        f'  - {{name: total, expr: "sum(amount)", additivity: additive}}\n'
        f'  - {{name: count, expr: "count(distinct id)", additivity: non_additive}}\n'
        "dimensions:\n  - {name: status, column: status, label: Status}\n"
    )


def page_path(i: int) -> str:
    if i % 10 == 9:
        return f"knowledge/user/user{i % 3}/area{i % 17}/page{i}.md"
    return f"knowledge/global/area{i % 50}/page{i}.md"


def markdown_link(i: int, j: int) -> str:
    """A relative Markdown link from page `i` to global page `j`, as a documentation site
    writes it."""
    here = posixpath.dirname(page_path(i))
    return f"[page {j}]({posixpath.relpath(page_path(j), here)})"


def page_text(
    i: int, pages: int, sources: int, rng: random.Random, markdown_links: bool = False
) -> str:
    src = i % sources
    entity = f"conn{src % 2}.src{src}"
    globals_ = [j for j in (rng.randrange(pages) for _ in range(6)) if j % 10 != 9][:3]
    words = prose(rng, 12)
    body_words = [prose(rng, 95) for _ in range(3)]  # with the rest, a body of ~300 words
    # With markdown_links, every other link is a relative Markdown link to the same page.
    links = " ".join(
        markdown_link(i, j) if markdown_links and n % 2 else f"[[page{j}]]"
        for n, j in enumerate(globals_)
    )
    return (
        "---\n"
        f"title: Page {i} about {rng.choice(WORDS)}\n"
        f"summary: {words}\n"
        f"tags: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]\n"
        f"sl_refs: [{entity}.total, {entity}]\n"
        f"refs: [{', '.join(f'page{j}' for j in globals_[:2])}]\n"
        f"usage_mode: {rng.choice(['reference', 'reference', 'caveat', 'definition', 'policy'])}\n"
        "meta:\n"
        "  provenance: human_curated\n"
        '  last_validated_at: "2026-11-01T00:00:00Z"\n'
        "---\n"
        f"# Page {i}\n\n{body_words[0]}\n\nSee {links}.\n\n## Details\n\n{body_words[1]}\n\n"
        f"The measure is `<< sl:{entity}.total.expr >>` on {{{{ sl:{entity}.table }}}}.\n\n"
        f"```sql\nselect {rng.choice(WORDS)} from t -- [[not-a-link]]\n```\n\n{body_words[2]}\n"
    )


def make_corpus(
    root: Path, pages: int, commits: int = 4, seed: int = 7, markdown_links: bool = False
) -> None:
    """Write the corpus and commit it: one big commit, then `commits - 1` small ones that each
    edit a few pages (and, every 25th, one measure's expression). With `markdown_links`,
    every other link between pages is a relative Markdown link instead of a wiki link."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    (root / "knowl.toml").write_text("staleness_days = 3650\n")
    sources = max(5, pages // 200)
    for s in range(sources):
        path = root / f"semantics/conn{s % 2}/src{s}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source_yaml(s))
    for i in range(pages):
        path = root / page_path(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page_text(i, pages, sources, rng, markdown_links))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "corpus", date="2026-01-01T12:00:00+00:00")
    per_commit = max(1, pages // 500)
    for c in range(1, commits):
        changed = []
        for i in rng.sample(range(pages), per_commit):
            path = root / page_path(i)
            path.write_text(path.read_text() + f"\nEdit {c}: {rng.choice(WORDS)}.\n")
            changed.append(str(path.relative_to(root)))
        if c % 25 == 0:
            s = rng.randrange(sources)
            path = root / f"semantics/conn{s % 2}/src{s}.yaml"
            path.write_text(
                path.read_text()
                .replace("sum(amount)", f"sum(amount_v{c})", 1)
                .replace(f"sum(amount_v{c - 25})", f"sum(amount_v{c})", 1)
            )
            changed.append(str(path.relative_to(root)))
        git(root, "add", "--", *changed)
        minutes, seconds = divmod(c, 60)
        git(
            root,
            "commit",
            "-q",
            "-m",
            f"edit {c}",
            date=f"2026-01-02T{minutes // 60:02d}:{minutes % 60:02d}:{seconds:02d}+00:00",
        )
