"""The page-body benchmark: `python bench/run.py --suite body` (or run this file).

Adversarial pages of up to 200 kB (the size `max_body_chars` allows), each built to make one
body check quadratic, as the red team of issue 10 found them: thousands of headings and
thousands of `[[#heading]]` links that match none (each link compared with every heading,
and a did-you-mean per link), thousands of code spans before thousands of links (each link
tested against every span), backtick runs of many widths without a partner (each run
looking at every later run), and one heading of 200 kB of `[` or `<` (the inline-markup
patterns read the rest of the line once per character), Hugo shortcodes never closed (each
opening searching the rest of the page for its closer); then the shapes that cost most per
character (a line per heading, a paragraph of a line per backtick) and a page of the
did-you-mean vault (500 pages, 4,000 broken links). Each is `knowl check --no-cache` as a
process (start-up included, best of N), with the findings it reports; a normal page is
there for comparison. The goal is a check well under a second for any page; the run's
did-you-mean budget (rules/hints.py, about two seconds on one core) bounds the hints on top.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from corpus import git, prose

GOAL_S = 1.0
N = 199_000  # characters of body: under max_body_chars (200,000)
FRONTMATTER = "---\nsummary: benchmark page\nmeta:\n  last_validated_at: '2026-01-01'\n---\n"

Files = dict[str, str]


def one_page(body: str) -> Callable[[], Files]:
    return lambda: {"knowledge/global/page.md": FRONTMATTER + body}


def headings_and_links(count: int) -> Callable[[], Files]:
    """`count` headings `# hN` and `count` links `[[#xN]]` that match none."""
    body = "".join(f"# h{i}\n" for i in range(count)) + "".join(f"[[#x{i}]]" for i in range(count))
    return one_page(body + "\n")


def nested_links(count: int) -> Callable[[], Files]:
    """`count` headings nested six deep and `count` distinct nested links `[[#h1#h2#…]]` that
    walk them and miss at the last step (each a whole walk down the outline)."""
    body = "".join(f"{'#' * (1 + i % 6)} h{i % 6}\n" for i in range(count))
    links = "".join(f"[[#h0#h1#h2#h3#h4#x{i}]]" for i in range(count))
    return one_page(body + links + "\n")


def spans_then_links() -> Files:
    """24,800 code spans, then 19,800 links to a page that exists."""
    return {
        "knowledge/global/page.md": FRONTMATTER + "`x` " * 24_800 + "[[a]]" * 19_800,
        "knowledge/global/a.md": FRONTMATTER + "A\n",
    }


def hints_vault() -> Files:
    """500 pages and one page of 4,000 distinct broken links, each a near miss."""
    files = {
        f"knowledge/global/metric-definition-{i:05d}.md": FRONTMATTER + "x\n" for i in range(500)
    }
    body = "".join(f"[[metric-definitoin-{i:05d}x]]\n" for i in range(4_000))
    files["knowledge/global/attack.md"] = FRONTMATTER + body
    return files


INPUTS: list[tuple[str, Callable[[], Files]]] = [
    ("2,000 headings, 2,000 [[#x]] links", headings_and_links(2_000)),
    ("6,000 headings, 6,000 [[#x]] links", headings_and_links(6_000)),
    ("11,000 headings, 11,000 [[#x]] links", headings_and_links(11_000)),
    ("6,000 nested headings, 6,000 [[#a#b#…]] links", nested_links(6_000)),
    ("24,800 code spans, 19,800 links", spans_then_links),
    (
        "365 backtick widths, 65,000 runs",
        one_page("".join("`" * w + "x" for w in range(2, 367)) + "`x" * 65_000),
    ),
    ("heading of 200 kB of '['", one_page("# " + "[" * N + "\n")),
    ("heading of 200 kB of '<'", one_page("# " + "<" * N + "\n")),
    ("heading of '[a](' repeated", one_page("# " + "[a](" * (N // 4) + "\n")),
    # Markdown links (issue 22): markdown-it reads what a link is, in linear time.
    ("200 kB of '[' before one link", one_page("[" * (N - 8) + "](a.md)\n")),
    ("200 kB of '![' before one image", one_page("![" * (N // 2 - 5) + "](a.png)\n")),
    ("19,000 Markdown links to a missing page", one_page("[x](nope.md) " * (N // 13))),
    (
        "8,000 reference links, 8,000 definitions",
        one_page("".join(f"[l{i}]: u{i}.md\n" for i in range(8_000)) + "\n" + "[l1] " * 8_000),
    ),
    ("[[# link of 200 kB of '<'", one_page("[[#" + "<" * N + "]]\n")),
    ("100,000 lines '#'", one_page("#\n" * (N // 2))),
    ("paragraph of 100,000 lines '`'", one_page("`\n" * (N // 2))),
    ("24,875 links to a missing page", one_page("[[nope]]" * (N // 8))),
    ("200 kB of '{{<' never closed", one_page("{{<" * (N // 3))),
    ("'{{< highlight >}}[[a]]' never closed", one_page("{{< highlight >}}[[a]]" * (N // 22))),
    ("6,600 code shortcodes, closed", one_page("{{< code >}}[[x]]{{< /code >}}" * (N // 30))),
    ("500 pages, 4,000 broken links (hints)", hints_vault),
    ("normal page (~300 words)", one_page("# Revenue\n\n" + prose(random.Random(7), 300) + "\n")),
]


def check(root: Path, repeats: int) -> tuple[float, str]:
    """The best time of `knowl check --no-cache`, and its summary line."""
    samples = []
    for _ in range(repeats):
        shutil.rmtree(root / ".knowl", ignore_errors=True)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "knowl_build", "check", "--repo", str(root), "--no-cache"],
            capture_output=True,
            text=True,
        )
        samples.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"knowl check failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    summary = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    return min(samples), summary


Row = tuple[str, int, float, str]  # input, characters of its largest page, seconds, summary


def bench_body(repeats: int) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="knowl-bench-body-") as tmp:
        for n, (name, make) in enumerate(INPUTS):
            root = Path(tmp) / f"p{n}"
            files = make()
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text, encoding="utf-8")
            git(root, "init", "-q", "-b", "main")
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", "bench", date="2026-01-01T12:00:00+00:00")
            seconds, summary = check(root, repeats)
            chars = max(len(text) for text in files.values())
            rows.append((name, chars, seconds, summary.split(": ", 1)[-1]))
    return rows


def print_body(rows: list[Row], header: str) -> None:
    print(f"page body benchmark {header}")
    print(f"{'input':<40} {'chars':>8} {'check':>8}  {'goal':<12} findings")
    for name, chars, seconds, summary in rows:
        verdict = "ok" if seconds < GOAL_S else "SLOW"
        print(f"{name:<40} {chars:>8,} {seconds:>7.2f}s  < {GOAL_S:.0f}s {verdict:<6} {summary}")


if __name__ == "__main__":
    print_body(bench_body(3), "(knowl check --no-cache as a process, best of 3)")
