"""Trust, class 9: odd YAML scalars and odd file names are located findings, never crashes.

A scalar that matches a YAML type but cannot become a value (an impossible date, a timestamp
out of range, an integer of more than 4,300 digits or beyond a float's range, a float that
overflows) is KB001 in page frontmatter and KB050 in semantic, dbt and dbt_project.yml files,
at the scalar; the run goes on. A file name that is not UTF-8 is KB007 and skipped, and every
output format can print its path.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.core.config import Config, SecurityConfig
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.pipeline.check import check
from knowl_build.pipeline.pages import parse_page
from knowl_build.secrets.scanner import SecretScanner
from tests.helpers import SEMANTICS, Project, invoke

TODAY = dt.date(2026, 5, 28)
PAGE = "knowledge/global/odd.md"
CANONIC = "semantics/odd.yaml"
DBT_MODEL = "analytics_dbt/models/odd.yml"
DBT_PROJECT = "analytics_dbt/dbt_project.yml"
DBT_CONFIG = Config(rules={"KB202": "off"}, dbt_project_dir="analytics_dbt")

# (scalar as written, what the message says about it)
ODD = {
    "int-5000-digits": ("1" * 5000, "an integer of 5000 digits has more than 4300 digits"),
    "int-beyond-float": ("1" + "0" * 400, "an integer of 401 digits is too large"),
    "hex-huge": ("0x" + "f" * 4000, "an integer written with 4002 characters is too large"),
    "feb-30": ("2024-02-30", "'2024-02-30' is not a valid date or timestamp"),
    "month-13": ("2024-13-01", "'2024-13-01' is not a valid date or timestamp"),
    "year-0": ("0000-01-01", "'0000-01-01' is not a valid date or timestamp"),
    "utc-overflow": (
        "9999-12-31T23:59:59-05:00",
        "'9999-12-31T23:59:59-05:00' is out of range once converted to UTC",
    ),
    "utc-underflow": (
        "0001-01-01T00:00:00+05:00",
        "'0001-01-01T00:00:00+05:00' is out of range once converted to UTC",
    ),
    "bad-offset": ("2024-01-01T00:00:00+99:00", "is not a valid date or timestamp"),
    "huge-float": ("1.0e+999", "'1.0e+999' is too large (it overflows to infinity)"),
    "long-float": ("9" * 400 + ".5", "a number written with 402 characters is too large"),
    "bad-bool": ("!!bool maybe", "a value read as boolean is not a valid boolean"),
}


def _write_project(root: Path, files: dict[str, str]) -> Project:
    return Project(root, git=False).write(files)


def _found(diagnostics: list[Diagnostic]) -> list[tuple[str, str, int, int]]:
    return [(d.path, d.code, d.line, d.column) for d in diagnostics if d.code != "KB009"]


def _message(diagnostics: list[Diagnostic], path: str) -> str:
    return next(d.message for d in diagnostics if d.path == path)


@pytest.mark.parametrize("case", list(ODD))
def test_odd_scalar_in_page_frontmatter(tmp_path: Path, case: str) -> None:
    scalar, said = ODD[case]
    proj = _write_project(
        tmp_path / "p",
        {
            PAGE: f"---\nsummary: fine\nmeta:\n  last_validated_at: {scalar}\n---\n# Odd\n",
            "knowledge/global/other.md": "---\nsummary: other\n---\n[[nowhere]]\n",
        },
    )
    result = check(proj.root, Config(rules={"KB202": "off"}), use_cache=False, today=TODAY)
    assert _found(result.diagnostics) == [
        (PAGE, "KB001", 4, 22),
        ("knowledge/global/other.md", "KB103", 4, 1),  # the run goes on
    ]
    message = _message(result.diagnostics, PAGE)
    assert message.startswith("frontmatter is invalid YAML: ") and said in message


@pytest.mark.parametrize("case", list(ODD))
def test_odd_scalar_in_canonic_file(tmp_path: Path, case: str) -> None:
    scalar, said = ODD[case]
    proj = _write_project(
        tmp_path / "p",
        {
            **SEMANTICS,
            CANONIC: f"name: odd\nconnection: shop_pg\ntable: t\ndescription: [{scalar}]\n",
            "semantics/bad.yaml": "name: bad\nconnection: shop_pg\n",
        },
    )
    result = check(proj.root, Config(), use_cache=False, today=TODAY)
    assert _found(result.diagnostics) == [
        ("semantics/bad.yaml", "KB050", 1, 1),  # the run goes on
        (CANONIC, "KB050", 4, 15),
    ]
    assert said in _message(result.diagnostics, CANONIC)
    assert _message(result.diagnostics, CANONIC).startswith("semantic file is invalid YAML: ")


@pytest.mark.parametrize("case", list(ODD))
def test_odd_scalar_in_dbt_model_file(tmp_path: Path, case: str) -> None:
    scalar, said = ODD[case]
    proj = _write_project(
        tmp_path / "p",
        {
            DBT_PROJECT: "name: shop_dbt\n",
            DBT_MODEL: f"semantic_models:\n  - name: m\n    meta:\n      since: {scalar}\n",
            "analytics_dbt/models/fine.yml": "semantic_models:\n  - name: fine\n    model: x\n",
            "knowledge/global/uses.md": "<< sl:shop_dbt.fine.table >> << sl:shop_dbt.m.table >>\n",
        },
    )
    result = check(proj.root, DBT_CONFIG, use_cache=False, today=TODAY)
    assert _found(result.diagnostics) == [
        (DBT_MODEL, "KB050", 4, 14),
        ("knowledge/global/uses.md", "KB106", 1, 30),  # the fine file was read; m was not
    ]
    assert said in _message(result.diagnostics, DBT_MODEL)


@pytest.mark.parametrize("case", list(ODD))
def test_odd_scalar_in_dbt_project_file(tmp_path: Path, case: str) -> None:
    scalar, said = ODD[case]
    proj = _write_project(
        tmp_path / "p",
        {
            DBT_PROJECT: f"name: shop_dbt\nversion: {scalar}\n",
            "semantics/bad.yaml": "name: bad\nconnection: shop_pg\n",
        },
    )
    result = check(proj.root, DBT_CONFIG, use_cache=False, today=TODAY)
    assert _found(result.diagnostics) == [
        (DBT_PROJECT, "KB050", 2, 10),
        ("semantics/bad.yaml", "KB050", 1, 1),
    ]
    assert _message(result.diagnostics, DBT_PROJECT).startswith("dbt_project.yml is invalid YAML")
    assert said in _message(result.diagnostics, DBT_PROJECT)


def test_every_kind_of_file_in_one_run_is_exit_1(project: Callable[..., Project]) -> None:
    """Through the CLI: all of them together, each located, other findings kept, exit 1."""
    huge = "1" * 5000
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n[semantics.dbt]\nproject_dir = 'analytics_dbt'\n",
            PAGE: f"---\nsummary: fine\nn: {huge}\n---\n[[nowhere]]\n",
            CANONIC: "name: odd\nconnection: shop_pg\ntable: t\nsince: 2024-02-30\n",
            DBT_PROJECT: "name: shop_dbt\nversion: 1.0e+999\n",
            DBT_MODEL: "semantic_models:\n  - name: m\n    since: 9999-12-31T23:59:59-05:00\n",
            "knowledge/global/broken.md": "---\nrefs: [nope]\n---\n",
        }
    )
    result = invoke(["check", "--repo", str(proj.root), "--format", "json"], code=1)
    found = [
        (d["path"], d["code"], d["line"], d["column"])
        for d in json.loads(result.stdout)["diagnostics"]
    ]
    assert found == [
        (DBT_PROJECT, "KB050", 2, 10),
        (DBT_MODEL, "KB050", 3, 12),
        ("knowledge/global/broken.md", "KB102", 2, 8),
        (PAGE, "KB001", 3, 4),
        (PAGE, "KB103", 5, 1),
        (CANONIC, "KB050", 4, 8),
    ]
    assert "internal error" not in result.output and "Traceback" not in result.output


# --- quoted timestamps: strings that only become dates in knowl -------------------------

QUOTED = {
    "utc-overflow": "'9999-12-31T23:59:59-12:00'",
    "utc-underflow": "'0001-01-01T00:00:00+14:00'",
    "double-quoted": '"9999-12-31T20:00:00-05:00"',
}


@pytest.mark.parametrize("case", list(QUOTED))
def test_quoted_timestamp_out_of_range_is_kb002_at_the_value(tmp_path: Path, case: str) -> None:
    """poc_ts_overflow.sh: YAML reads a quoted timestamp as a string, so it is valid YAML;
    converting it to UTC overflowed (internal error in every project command)."""
    proj = _write_project(
        tmp_path / "p",
        {
            PAGE: f"---\nsummary: fine\nmeta:\n  last_validated_at: {QUOTED[case]}\n---\n# Odd\n",
            "knowledge/global/other.md": "---\nsummary: other\n---\n[[nowhere]]\n",
        },
    )
    result = check(proj.root, Config(rules={"KB202": "off"}), use_cache=False, today=TODAY)
    assert _found(result.diagnostics) == [
        (PAGE, "KB002", 4, 22),
        ("knowledge/global/other.md", "KB103", 4, 1),
    ]
    assert _message(result.diagnostics, PAGE) == (
        "'meta.last_validated_at' is out of range once converted to UTC "
        "(before year 1 or after 9999)"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["build"],
        ["stale"],
        ["conflicts"],
        ["fix"],
        ["review", "odd"],
        ["timeline", "odd"],
    ],
    ids=lambda c: c[0],
)
def test_quoted_timestamp_out_of_range_in_every_command(
    project: Callable[..., Project], command: list[str]
) -> None:
    page = f"---\nsummary: s\nmeta:\n  last_validated_at: {QUOTED['utc-overflow']}\n---\nbody\n"
    proj = project({PAGE: page})
    code = {"check": 1, "build": 1, "review": 1, "stale": 1}.get(command[0], 0)
    result = invoke([*command, "--repo", str(proj.root)], code=code)
    assert "internal error" not in result.output
    if command[0] == "review":  # refused: the page has an error finding
        assert "KB002 'meta.last_validated_at' is out of range" in result.stderr


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("'0999-05-01'", "0999-05-01T00:00:00Z"),
        ("'0001-01-02T00:00:00Z'", "0001-01-02T00:00:00Z"),
        ("'0001-01-01T12:00:00+11:00'", "0001-01-01T01:00:00Z"),
        ("'2024-02-29T23:30:00-01:00'", "2024-03-01T00:30:00Z"),
        ("2024-02-29T23:30:00-01:00", "2024-03-01T00:30:00Z"),  # unquoted: a timestamp
        ("'2024-05-01T10:00:00.123456+02:00'", "2024-05-01T08:00:00Z"),
    ],
)
def test_timestamps_are_stored_in_utc_with_four_digit_years(
    tmp_path: Path, written: str, stored: str
) -> None:
    """strftime wrote year 999 as `999`, which no reader of the value parses back."""
    proj = _write_project(
        tmp_path / "p",
        {PAGE: f"---\nsummary: s\nmeta:\n  last_validated_at: {written}\n---\nbody\n"},
    )
    result = check(proj.root, Config(), use_cache=False, today=TODAY)
    assert [(d.code, d.line) for d in result.diagnostics if d.code != "KB009"] == [("KB202", 4)]
    days = (TODAY - dt.date.fromisoformat(stored[:10])).days
    assert _message(result.diagnostics, PAGE).startswith(f"last validated {days} days ago")
    parsed = parse_page((proj.root / PAGE).read_bytes(), SecurityConfig(), SecretScanner())
    assert parsed.fields.last_validated_at == stored


def test_commit_times_after_year_9999_compare_as_the_last_moment() -> None:
    """git accepts a commit dated in year 11476 (`@300000000000 +0000`)."""
    from knowl_build.rules.freshness import _commit_time

    assert _commit_time(300_000_000_000) == dt.datetime.max.replace(tzinfo=dt.UTC)
    assert _commit_time(1_780_000_000) == dt.datetime(2026, 5, 28, 20, 26, 40, tzinfo=dt.UTC)


# --- file names that are not UTF-8 -------------------------------------------------------


def _bad_names(root: Path) -> None:
    base = os.fsencode(str(root))
    os.makedirs(base + b"/knowledge/global/\xfe-folder", exist_ok=True)
    for name in (
        b"/knowledge/global/\xff.md",
        b"/knowledge/global/\xfe-folder/inner.md",
        b"/knowledge/global/ignored-\xfd.tmp",
        b"/semantics/\xfc.yaml",
        b"/semantics/notes-\xfb.txt",  # not a semantic file: never read, never reported
    ):
        with open(base + name, "wb") as handle:
            handle.write(b"# page\n" if name.endswith(b".md") else b"name: x\n")


EXPECTED_BAD = [
    ("knowledge/global/\\xfe-folder", "KB007", 1, 1),
    ("knowledge/global/\\xff.md", "KB007", 1, 1),
    ("semantics/\\xfc.yaml", "KB007", 1, 1),
]


@pytest.fixture
def bad_names(project: Callable[..., Project]) -> Project:
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            ".gitignore": "*.tmp\n",
            "knowledge/global/fine.md": "# Fine\n",
        },
        commit=False,
    )
    _bad_names(proj.root)
    proj.commit("names git cannot print as UTF-8")
    (proj.root / "knowledge/global/fine.md").write_text("# Fine, changed\n")
    return proj


@pytest.mark.parametrize("fmt", ["json", "text", "github", "sarif"])
def test_non_utf8_file_names_print_in_every_format(bad_names: Project, fmt: str) -> None:
    result = invoke(["check", "--repo", str(bad_names.root), "--format", fmt], code=1)
    out = result.stdout
    if fmt == "json":
        found = [
            (d["path"], d["code"], d["line"], d["column"]) for d in json.loads(out)["diagnostics"]
        ]
        assert found == EXPECTED_BAD
        assert json.loads(out)["diagnostics"][1]["message"] == (
            "file name is not UTF-8; the file is skipped"
        )
    elif fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
        # SARIF URIs are percent-encoded (issue 11): the escaped name's backslash is %5C.
        assert uris == [path.replace("\\", "%5C") for path, *_ in EXPECTED_BAD]
    elif fmt == "github":
        assert "::error file=knowledge/global/\\xff.md,line=1,col=1,title=KB007::" in out
    else:
        assert "knowledge/global/\\xff.md:1:1: error KB007 file name is not UTF-8" in out
    assert "\udcff" not in out


def test_non_utf8_file_names_in_build_changed_only_and_a_real_process(bad_names: Project) -> None:
    invoke(["build", "--repo", str(bad_names.root), "--allow-errors"])
    changed = invoke(["check", "--repo", str(bad_names.root), "--changed-only", "--format", "json"])
    assert json.loads(changed.stdout)["diagnostics"] == []  # only fine.md changed
    with open(os.fsencode(str(bad_names.root)) + b"/knowledge/global/new-\xfa.md", "wb") as f:
        f.write(b"# New\n")  # untracked: git status prints its name with the raw byte
    changed = invoke(
        ["check", "--repo", str(bad_names.root), "--changed-only", "--format", "json"], code=1
    )
    assert [d["path"] for d in json.loads(changed.stdout)["diagnostics"]] == [
        "knowledge/global/new-\\xfa.md"
    ]
    # A real process: stdout is a pipe with the platform's encoding, not a test buffer.
    proc = subprocess.run(
        [sys.executable, "-m", "knowl_build", "check", "--repo", str(bad_names.root)],
        capture_output=True,
        cwd=Path(__file__).resolve().parent.parent,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert b"knowledge/global/\\xff.md:1:1: error KB007" in proc.stdout
    assert b"internal error" not in proc.stderr


# --- hostile pages, fuzzed ------------------------------------------------------------------

KEYS = [
    "summary",
    "tags",
    "confidence",
    "meta",
    "  last_validated_at",
    "  bound_fingerprints",
    "  frozen",
    "conflict",
    "  key",
    "  scope",
    "  exclusive",
    "sl_refs",
    "refs",
    "status",
    "superseded_by",
    "affected_paths",
    "source_commit",
    "source",
    "title",
    "category",
    "freshness",
    "visibility",
    "steps",
    "last_validated_at",
    "usage_mode",
    "unknown",
]


def _date(y: int, m: int, d: int) -> str:
    return f"{y:04d}-{m:02d}-{d:02d}"


SCALARS = st.one_of(
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.builds(_date, st.integers(0, 9999), st.integers(0, 14), st.integers(0, 33)),
    st.builds(
        lambda d, h, tz: f"{d}T{h:02d}:00:00{tz}",
        st.builds(
            _date, st.sampled_from([1, 2, 2024, 9999]), st.integers(1, 12), st.integers(1, 28)
        ),
        st.integers(0, 25),
        st.sampled_from(["", "Z", "+05:00", "-05:00", "+23:59", "-23:59", "+99:00", "+24:00"]),
    ),
    st.builds(  # quoted: a string to YAML, a timestamp to knowl
        lambda d, h, tz, q: f"{q}{d}T{h:02d}:00:00{tz}{q}",
        st.builds(_date, st.sampled_from([1, 2, 999, 2024, 9999]), st.integers(1, 12), st.just(31)),
        st.integers(0, 25),
        st.sampled_from(["", "Z", "+14:00", "-12:00", "+23:59", "-23:59", "+24:00"]),
        st.sampled_from(["'", '"']),
    ),
    st.sampled_from(
        [
            "1.0e+999",
            "-1.0e+999",
            ".inf",
            "-.inf",
            ".nan",
            "0x" + "f" * 4000,
            "0o" + "7" * 5000,
            "0b" + "1" * 15000,
            "1:" * 2000 + "1",
            "!!int x",
            "!!float y",
            "!!bool maybe",
            "!!timestamp 2024",
            "!!binary '@@'",
            "&a [*a]",
            "*a",
            "&a x",
            "!!set {a}",
            "!!omap [a: 1]",
            "!!python/name:os.system",
            "~",
            "[]",
            "{}",
            "yes",
            "'",
            '"',
            "[1, 2",
            "{a: 1}",
            "- 1",
            "0.5",
            "2024-01-01",
            "shop_pg.orders",
            '"\\ud800"',
            '"\\x00"',
            "<< sl:shop_pg.orders.total_revenue.expr >>",
        ]
    ),
    st.text(max_size=12),  # control characters, surrogates, line separators, anything
)
LINES = st.one_of(
    st.builds(lambda k, v: f"{k}: {v}", st.sampled_from(KEYS), SCALARS),
    st.builds(lambda v: f"  - {v}", SCALARS),
    SCALARS,
)
BLOCK = st.lists(LINES, max_size=8).map("\n".join)


@pytest.fixture(scope="module")
def fuzz_project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    proj = Project(tmp_path_factory.mktemp("fuzz") / "proj")
    proj.write({**SEMANTICS, "knowledge/global/anchor.md": "# Anchor\n"})
    proj.commit("base")
    return proj


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(front=BLOCK, body=BLOCK, semantic=BLOCK)
def test_hostile_pages_and_semantic_files_never_crash(
    fuzz_project: Project, front: str, body: str, semantic: str
) -> None:
    root = fuzz_project.root
    page = f"---\n{front}\n---\n# Fuzz\n{body}\n"
    (root / "knowledge/global/fuzz.md").write_bytes(page.encode("utf-8", "surrogatepass"))
    source = f"name: fuzz\nconnection: shop_pg\ntable: t\n{semantic}\n"
    (root / "semantics/fuzz.yaml").write_bytes(source.encode("utf-8", "surrogatepass"))
    result = check(root, Config(), use_cache=False, today=TODAY)
    for diagnostic in result.diagnostics:
        assert diagnostic.line >= 1 and diagnostic.column >= 1
        json.dumps(diagnostic.to_json(), ensure_ascii=False).encode("utf-8")
