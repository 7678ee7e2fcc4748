"""The goals of issue 25, each beside the figures an A/B run measured for it (bench/goals_bench.py
measures, this module prints): A an earlier revision, B this tree, each figure the median of the
runs made in turn with its range, CPU seconds on the line under wall seconds. Each goal is judged
on B at the sizes it names (`ok` or `MISSED`), on the wall figure and again on the CPU figure
(on a busy machine the wall time waits for a free core; the CPU time hardly). Below the goals, the other suites' main figures
(check cold and warm, reader search p50 in process, site cold, cold build, bare Whoosh) with B/A,
marked `WORSE` where B is more than 10% above A: the rule that no other figure gets worse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ab import Spread

# (pages, A's figures, B's figures)
Row = tuple[int, dict[str, Spread], dict[str, Spread]]

PAGEFIND_KB = (184, 102)  # Pagefind's bytes before a first result (raw, gzip), issue 25
WORSE_BY = 1.10  # no other figure more than 10% above A's
NOT_MEASURED = "(not measured: no chromium, or its search failed; see stderr)"


@dataclass(frozen=True)
class Goal:
    """One row of issue 25's table: its figure (with a CPU figure, where one is timed), the
    goal as the issue words it and whether B meets it at a size (None: the goal names no goal
    at that size)."""

    name: str
    figure: str
    cpu: str | None
    unit: str
    goal: str
    met: Callable[[int, float], bool | None]


def _at(limits: dict[int, float], strict: bool = True) -> Callable[[int, float], bool | None]:
    def met(pages: int, value: float) -> bool | None:
        if pages not in limits:
            return None
        return value < limits[pages] if strict else value <= limits[pages]

    return met


GOALS = [
    Goal(
        "cold build / bare Whoosh",
        "cold_over_floor",
        "cold_over_floor_cpu",
        "x",
        "<= 1.3x",
        lambda pages, value: value <= 1.3,
    ),
    Goal(
        "one-edit build (edit, commit, build)",
        "edit_build_s",
        "edit_build_cpu_s",
        "s",
        "< 0.5 s at 10k, < 1.5 s at 50k",
        _at({10_000: 0.5, 50_000: 1.5}),
    ),
    Goal(
        "one-edit check of an uncommitted edit",
        "edit_check_s",
        "edit_check_cpu_s",
        "s",
        "< 0.3 s at 10k",
        _at({10_000: 0.3}),
    ),
    Goal(
        "knowl search as a process",
        "search_s",
        "search_cpu_s",
        "s",
        "<= 0.1 s at 50k",
        _at({50_000: 0.1}, strict=False),
    ),
    Goal(
        "one edit, knowl build --site",
        "site_edit_s",
        "site_edit_cpu_s",
        "s",
        "< 2.5 s at 10k",
        _at({10_000: 2.5}),
    ),
]

# The other suites' main figures: (label, figure, CPU figure).
OTHERS = [
    ("check cold", "check_cold_s", "check_cold_cpu_s"),
    ("check warm", "check_warm_s", "check_warm_cpu_s"),
    ("reader search p50 (in process, ms)", "reader_p50_ms", None),
    ("site cold (knowl site)", "site_cold_s", "site_cold_cpu_s"),
    ("cold build", "build_cold_s", "build_cold_cpu_s"),
    ("bare Whoosh (the floor)", "floor_s", "floor_cpu_s"),
]

_LINE = "{:>6} {:<44} {:>23} {:>23} {:>6}  {}"


def _spread(value: Spread, unit: str) -> str:
    """Median [least-greatest], three significant places or so (seconds to the ms)."""
    median, least, greatest = value
    digits = (
        2 if unit == "x" else 1 if unit == "ms" or greatest >= 100 else 3 if greatest < 10 else 2
    )
    return f"{median:.{digits}f} [{least:.{digits}f}-{greatest:.{digits}f}]"


def _ratio(a: Spread, b: Spread) -> str:
    return f"{b[0] / a[0]:.2f}x" if a[0] else "-"


def _pair(
    key: str | None, unit: str, a: dict[str, Spread], b: dict[str, Spread]
) -> tuple[str, str, str] | None:
    """A's, B's and B/A's text of one figure, None where either side has none."""
    if key is None or key not in a or key not in b:
        return None
    return _spread(a[key], unit), _spread(b[key], unit), _ratio(a[key], b[key])


def _mark(verdict: bool | None) -> str:
    return "" if verdict is None else "ok" if verdict else "MISSED"


def _goal_lines(row: Row) -> list[str]:
    """Each goal's wall figures, judged, and its CPU figures under them, judged by the same
    goal: on a busy machine the wall time waits for a core, the CPU time much less."""
    pages, a, b = row
    lines = []
    for goal in GOALS:
        shown = _pair(goal.figure, goal.unit, a, b)
        if shown is None:
            continue
        mark = _mark(goal.met(pages, b[goal.figure][0]))
        lines.append(_LINE.format(pages, goal.name, *shown, f"{goal.goal} {mark}".rstrip()))
        cpu = _pair(goal.cpu, goal.unit, a, b)
        if cpu is not None and goal.cpu is not None:
            mark = _mark(goal.met(pages, b[goal.cpu][0]))
            lines.append(_LINE.format("", "  CPU", *cpu, f"(on CPU) {mark}" if mark else ""))
    return lines + _bytes_lines(row)


def _bytes_lines(row: Row) -> list[str]:
    """Row 6: the worst and the median query's bytes before its first result (kB, raw / gzip)."""
    pages, a, b = row
    name = "site-search bytes (raw / gzip)"
    if "first_result_raw_max_kb" not in b:
        return [_LINE.format(pages, name, "", "", "", NOT_MEASURED)]
    lines = []
    for which, label in (("max", "worst"), ("p50", "median")):
        raw, gz = f"first_result_raw_{which}_kb", f"first_result_gz_{which}_kb"
        text = [
            f"{side[raw][0]:.1f} / {side[gz][0]:.1f} kB" if raw in side else "-" for side in (a, b)
        ]
        ratio = _ratio(a[raw], b[raw]) if raw in a else "-"
        goal = ""
        if which == "max":
            met = b[raw][0] <= PAGEFIND_KB[0] and b[gz][0] <= PAGEFIND_KB[1]
            goal = f"<= Pagefind's {PAGEFIND_KB[0]} / {PAGEFIND_KB[1]} kB {_mark(met)}"
        lines.append(_LINE.format(pages, f"{name}, {label} query", *text, ratio, goal))
    return lines


def _other_lines(row: Row) -> list[str]:
    pages, a, b = row
    lines = []
    for label, key, cpu in OTHERS:
        unit = "ms" if key.endswith("_ms") else "s"
        for text, figure in ((label, key), ("  CPU", cpu)):
            shown = _pair(figure, unit, a, b)
            if shown is None or figure is None:
                continue
            worse = b[figure][0] > a[figure][0] * WORSE_BY
            lines.append(_LINE.format(pages, text, *shown, "WORSE" if worse else "ok"))
    return lines


def goal_table(rows: list[Row], header: str, baseline: str) -> list[str]:
    """The lines `print_goals` prints."""
    head = _LINE.format("pages", "figure", f"A ({baseline})", "B (this tree)", "B/A", "goal")
    lines = [f"issue 25 goals: this tree (B) beside {baseline} (A) {header}"]
    lines += ["(median of the A/B runs in turn, [least-greatest]; CPU: user + system)", head]
    for row in rows:
        lines += _goal_lines(row)
    lines += [
        f"the other benchmarks' figures (B at most {WORSE_BY:.2f}x A, else WORSE)",
        head.replace("goal", "B <= 1.1x A"),
    ]
    for row in rows:
        lines += _other_lines(row)
    return lines


def print_goals(rows: list[Row], header: str, baseline: str) -> None:
    print("\n".join(goal_table(rows, header, baseline)))
