"""The did-you-mean benchmark: `python bench/run.py --suite hints` (or run this file).

Per size, a synthetic vault (git, one commit) of pages named like real notes
(`quarterly-revenue-forecast-2024`), 90% global and 10% in three user scopes, whose links
include thousands of broken ones: half near misses of a page id (a character replaced,
dropped, added, swapped, or its case changed), half names like no page. Printed, in one run:
- knowl check: `knowl check --no-cache` as a process, start-up included;
- hints: the time spent in `RuleContext.page_hint` / `entity_hint` during an in-process
  `analyse` (the rule stage's did-you-mean, index building included), and the share of the
  visible page ids one lookup compares with (its length window);
- difflib: the old lookup, `difflib.get_close_matches(target, visible_ids, n=1, cutoff=0.75)`,
  on the same lookups (each hint compared: they must be identical), and difflib / hints.
A last row runs the largest size with more broken links than the budget allows: the hint
time stays bounded, later findings carry no hint, one carries the notice.
"""

from __future__ import annotations

import datetime as dt
import difflib
import random
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus import WORDS as CORPUS_WORDS
from corpus import git, prose

from knowl_build.core.config_loader import load_config
from knowl_build.pipeline.analysis import analyse
from knowl_build.rules.context import HINT_CUTOFF, RuleContext
from knowl_build.support.hints import BUDGET_NOTICE, HINT_BUDGET

# The corpus's vocabulary and the words of a team's notes, for page names.
WORDS = [
    *CORPUS_WORDS,
    "meeting",
    "notes",
    "onboarding",
    "incident",
    "review",
    "roadmap",
    "okr",
    "team",
    "sales",
    "marketing",
    "support",
    "billing",
    "pricing",
    "contract",
    "legal",
    "security",
    "access",
    "api",
    "data",
    "model",
    "schema",
    "table",
    "column",
]


def page_id(rng: random.Random) -> str:
    name = "-".join(rng.choice(WORDS) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
    return f"{name}-{rng.randrange(2015, 2027)}" if rng.random() < 0.3 else name


def near_miss(name: str, rng: random.Random) -> str:
    at = rng.randrange(len(name))
    letter = rng.choice(string.ascii_lowercase)
    edit = rng.randrange(5)
    if edit == 0:
        return name[:at] + letter + name[at + 1 :]
    if edit == 1:
        return name[:at] + name[at + 1 :]
    if edit == 2:
        return name[:at] + letter + name[at:]
    if edit == 3 and at + 1 < len(name):
        return name[:at] + name[at + 1] + name[at] + name[at + 2 :]
    return name[:at] + name[at].upper() + name[at + 1 :]


def make_vault(root: Path, pages: int, broken: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    ids: list[str] = []
    taken: set[str] = set()
    while len(ids) < pages:
        name = page_id(rng)
        if name not in taken:
            taken.add(name)
            ids.append(name)
    folders = [
        f"knowledge/user/user{i % 3}" if i % 10 == 9 else f"knowledge/global/area{i % 40}"
        for i in range(pages)
    ]
    global_ids = [name for name, folder in zip(ids, folders, strict=True) if "/global/" in folder]
    targets: list[str] = []
    while len(targets) < broken:
        if len(targets) % 2 == 0:
            target = near_miss(rng.choice(global_ids), rng)
        else:
            target = page_id(rng) + rng.choice(("-draft", "-old", "-v2", "s", ""))
        if target not in taken:
            targets.append(target)
    per_page: list[list[str]] = [[] for _ in range(pages)]
    for n, target in enumerate(targets):
        per_page[rng.randrange(pages) if n % 3 else n % pages].append(target)
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "knowl.toml").write_text("staleness_days = 3650\n")
    for i, (name, folder) in enumerate(zip(ids, folders, strict=True)):
        links = [f"[[{rng.choice(global_ids)}]]" for _ in range(3)] + [
            f"[[{t}]]" for t in per_page[i]
        ]
        text = (
            f"---\nsummary: {prose(rng, 10)}\nrefs: [{rng.choice(global_ids)}]\n---\n"
            f"# {name}\n\n{prose(rng, 60)}\n\nSee {' and '.join(links)}.\n"
        )
        path = root / folder / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "vault", date="2026-01-01T12:00:00+00:00")


def check_s(root: Path, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "knowl_build", "check", "--repo", str(root), "-q", "--no-cache"],
            capture_output=True,
            text=True,
        )
        samples.append(time.perf_counter() - start)
        if proc.returncode != 1:  # the broken links are findings
            raise SystemExit(
                f"knowl check failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            )
    return min(samples)


@dataclass
class Timed:
    """What the rule stage asked for, and the time it spent in the hint methods."""

    seconds: float = 0.0
    units: int = 0  # the budget units the run spent
    lookups: list[tuple[str, str, str | None]] = field(default_factory=list)  # target, scope, hint


def timed_rule_stage(root: Path) -> tuple[Timed, Any]:
    timed = Timed()
    page_hint, entity_hint = RuleContext.page_hint, RuleContext.entity_hint

    def timed_page_hint(self: RuleContext, target: str, scope: str) -> str | None:
        fresh = (target, scope) not in self._page_hints
        start = time.perf_counter()
        hint = page_hint(self, target, scope)
        timed.seconds += time.perf_counter() - start
        timed.units = HINT_BUDGET - self._hint_budget.units
        if fresh:
            timed.lookups.append((target, scope, hint))
        return hint

    def timed_entity_hint(self: RuleContext, name: str) -> str | None:
        start = time.perf_counter()
        hint = entity_hint(self, name)
        timed.seconds += time.perf_counter() - start
        timed.units = HINT_BUDGET - self._hint_budget.units
        return hint

    RuleContext.page_hint = timed_page_hint  # type: ignore[method-assign]
    RuleContext.entity_hint = timed_entity_hint  # type: ignore[method-assign]
    try:
        analysis = analyse(root, load_config(root), use_cache=False, today=dt.date(2026, 5, 28))
    finally:
        RuleContext.page_hint, RuleContext.entity_hint = page_hint, entity_hint  # type: ignore[method-assign]
    return timed, analysis


def old_hints(
    analysis: Any, lookups: list[tuple[str, str, str | None]]
) -> tuple[float, list[str | None]]:
    """The lookups as the code before issue 11 did them (visible_ids and difflib, each time)."""
    hints: list[str | None] = []
    start = time.perf_counter()
    for target, scope, _ in lookups:
        close = difflib.get_close_matches(
            target, analysis.index.visible_ids(scope), n=1, cutoff=HINT_CUTOFF
        )
        hints.append(f"did you mean '{close[0]}'?" if close else None)
    return time.perf_counter() - start, hints


def window_share(analysis: Any, lookups: list[tuple[str, str, str | None]]) -> float:
    from knowl_build.support.hints import NearNames

    indexes: dict[str, NearNames] = {}
    shares = []
    for target, scope, _ in lookups:
        ids = analysis.index.visible_ids(scope)
        index = indexes.setdefault(scope, NearNames(ids))
        start, stop, _most = index.window(target, HINT_CUTOFF)
        shares.append((stop - start) / max(1, len(ids)))
    return sum(shares) / max(1, len(shares))


def bench_one(root: Path, pages: int, broken: int, repeats: int, with_old: bool) -> dict[str, Any]:
    make_vault(root, pages, broken)
    row: dict[str, Any] = {"pages": pages, "broken": broken, "check_s": check_s(root, repeats)}
    runs = [timed_rule_stage(root) for _ in range(repeats)]
    timed, analysis = min(runs, key=lambda run: run[0].seconds)
    hints = [hint for _, _, hint in timed.lookups]
    capped = BUDGET_NOTICE in hints
    row.update(
        lookups=len(timed.lookups),
        hints_s=timed.seconds,
        capped=capped,
        units=timed.units,
        window=window_share(analysis, timed.lookups),
        served=hints.index(BUDGET_NOTICE) if capped else len(hints),
    )
    if with_old:
        old_s, old = old_hints(analysis, timed.lookups)
        row.update(
            old_s=old_s,
            ratio=old_s / timed.seconds,
            identical=hints[: row["served"]] == old[: row["served"]],
        )
    return row


def bench_hints(sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="knowl-bench-hints-") as tmp:
        for pages in sizes:
            broken = max(2_800, pages * 3 // 10)  # 2,800 on 1,000 pages, as in issue 11
            rows.append(bench_one(Path(tmp) / f"vault-{pages}", pages, broken, repeats, True))
        largest = max(sizes)
        over = bench_one(Path(tmp) / f"vault-{largest}-over", largest, largest * 6 // 5, 1, False)
        rows.append(over)
    return rows


def print_hints(rows: list[dict[str, Any]], header: str) -> None:
    print(f"did-you-mean benchmark {header}; budget {HINT_BUDGET:,} units per run")
    print(
        f"{'pages':>7} {'broken':>7} {'lookups':>8} {'knowl check':>12} {'hints':>8} {'per lookup':>11} "
        f"{'compared':>9} {'units':>11} {'ns/unit':>8} {'difflib':>9} {'difflib/hints':>14}  same hints"
    )
    for r in rows:
        old = (
            f"{r['old_s']:>8.2f}s {r['ratio']:>13.0f}x  {'yes' if r['identical'] else 'NO'}"
            if "old_s" in r
            else f"{'-':>9} {'-':>14}  (not timed: minutes)"
        )
        per = r["hints_s"] / max(1, r["lookups"]) * 1000
        print(
            f"{r['pages']:>7} {r['broken']:>7,} {r['lookups']:>8,} {r['check_s']:>11.2f}s "
            f"{r['hints_s']:>7.2f}s {per:>9.3f}ms {r['window']:>8.0%} {r['units']:>11,} "
            f"{r['hints_s'] / max(1, r['units']) * 1e9:>8.0f} {old}"
        )
        if r["capped"]:
            print(
                f"{'':>7} budget spent after {r['served']:,} of {r['lookups']:,} lookups: "
                f"one finding says '{BUDGET_NOTICE[:40]}...', later ones carry no hint"
            )


if __name__ == "__main__":
    print_hints(bench_hints([1000, 10000], 3), "(best of 3)")
