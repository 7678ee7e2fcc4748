"""Every rule as a table: snippets that pass and fail, with the exact ordered findings."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.config_loader import config_from_mapping
from knowl_build.pipeline.analysis import analyse
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project

OFF_STALE = {"rules": {"KB202": "off"}}
P = "knowledge/global/page.md"


def run(
    tmp_path: Path,
    files: dict[str, str | bytes],
    config: dict[str, Any] | None = None,
    git: bool = False,
) -> list[tuple[str, str, int, int]]:
    project = Project(tmp_path / "p", git=git)
    project.write({**SEMANTICS, **files})
    if git:
        project.commit()
    cfg = config_from_mapping(config if config is not None else OFF_STALE, "test")
    analysis = analyse(project.root, cfg, use_cache=False, today=dt.date(2026, 5, 28))
    return [(d.path, d.code, d.line, d.column) for d in analysis.diagnostics if d.code != "KB009"]


def page(frontmatter: str, body: str = "") -> str:
    return f"---\n{frontmatter}---\n{body}"


# (case id, files, expected findings as (path, code, line, column), in order)
CASES: list[tuple[str, dict[str, str | bytes], list[tuple[str, str, int, int]]]] = [
    # KB001 frontmatter syntax
    ("kb001-ok", {P: page("summary: fine\n")}, []),
    ("kb001-bad-yaml", {P: page("summary: [unclosed\ntags: []\n")}, [(P, "KB001", 3, 5)]),
    ("kb001-list", {P: page("- a\n- b\n")}, [(P, "KB001", 2, 1)]),
    ("kb001-scalar", {P: page("just text\n")}, [(P, "KB001", 2, 1)]),
    ("kb001-duplicate", {P: page("summary: a\ntags: []\nsummary: b\n")}, [(P, "KB001", 4, 1)]),
    ("kb001-unclosed", {P: "---\nsummary: a\n\nbody\n"}, [(P, "KB001", 1, 1)]),
    ("kb001-empty-block", {P: "---\n---\nbody\n"}, []),
    ("kb001-fence-trailing-space", {P: "--- \t\nsummary: a\n---  \nbody\n"}, []),
    ("kb001-no-frontmatter", {P: "# Just a page\n"}, []),
    ("kb001-crlf", {P: "---\r\nsummary: a\r\ntags: [\r\n---\r\n"}, [(P, "KB001", 4, 1)]),
    # KB002 field types and values
    (
        "kb002-ok",
        {
            P: page(
                "summary: s\ntags: [a, b]\nusage_mode: caveat\nconfidence: 0.5\n"
                "status: active\ncategory: decision\nvisibility: workspace\n"
                "source_commit: abc1234\naffected_paths: [src/a.py]\n"
                "meta:\n  provenance: human_curated\n  last_validated_at: 2026-01-01\n"
                "  frozen: true\n"
            )
        },
        [],
    ),
    ("kb002-tags-string", {P: page("tags: revenue\n")}, [(P, "KB002", 2, 7)]),
    # A date or number is the text written (issue 22, item 8); a mapping is no text.
    ("kb002-summary-date-is-text", {P: page("summary: 2024-01-01\n")}, []),
    ("kb002-summary-mapping", {P: page("summary: {a: 1}\n")}, [(P, "KB002", 2, 10)]),
    ("kb002-tag-item-number-is-text", {P: page("tags:\n  - ok\n  - 12\n")}, []),
    ("kb002-tag-item", {P: page("tags:\n  - ok\n  - [12]\n")}, [(P, "KB002", 4, 5)]),
    ("kb002-usage-mode", {P: page("usage_mode: caveats\n")}, [(P, "KB002", 2, 13)]),
    ("kb002-confidence-range", {P: page("confidence: 1.5\n")}, [(P, "KB002", 2, 13)]),
    ("kb002-confidence-bool", {P: page("confidence: true\n")}, [(P, "KB002", 2, 13)]),
    (
        "kb002-affected-dotdot",
        {P: page("affected_paths: [ok.py, ../x.py, /etc/x]\n")},
        [(P, "KB002", 2, 25), (P, "KB002", 2, 34)],
    ),
    ("kb002-source-commit", {P: page("source_commit: xyz\n")}, [(P, "KB002", 2, 16)]),
    ("kb002-meta-not-map", {P: page("meta: 3\n")}, [(P, "KB002", 2, 7)]),
    (
        "kb002-last-validated",
        {P: page("meta:\n  last_validated_at: yesterday\n")},
        [(P, "KB002", 3, 22)],
    ),
    (
        "kb002-fingerprint",
        {
            P: page(
                "sl_refs: [shop_pg.orders.total_revenue]\nmeta:\n"
                "  bound_fingerprints:\n    shop_pg.orders.total_revenue: abc\n"
            )
        },
        # No hash: KB002, and drift besides (it matches no version of the measure).
        [(P, "KB201", 5, 5), (P, "KB002", 5, 35)],
    ),
    ("kb002-conflict-no-key", {P: page("conflict:\n  exclusive: true\n")}, [(P, "KB002", 3, 3)]),
    # KB003 reserved keys
    (
        "kb003",
        {P: page("summary: s\nid: other\n'scope': global\n")},
        [(P, "KB003", 3, 1), (P, "KB003", 4, 1)],
    ),
    # KB004 misplaced page
    (
        "kb004",
        {"knowledge/stray.md": "# x\n", "knowledge/user/alice.md": "# y\n"},
        [("knowledge/stray.md", "KB004", 1, 1), ("knowledge/user/alice.md", "KB004", 1, 1)],
    ),
    ("kb004-not-md", {"knowledge/notes.txt": "x", "knowledge/global/a.MD": "x"}, []),
    # KB005 duplicate ids in one scope; none across scopes
    (
        "kb005",
        {
            "knowledge/global/a/dup.md": "x\n",
            "knowledge/global/b/dup.md": "y\n",
            "knowledge/global/c.md": "[[dup]]\n",
        },
        [
            ("knowledge/global/a/dup.md", "KB005", 1, 1),
            ("knowledge/global/b/dup.md", "KB005", 1, 1),
        ],
    ),
    ("kb005-other-owner", {"knowledge/user/ann/n.md": "x\n", "knowledge/user/ben/n.md": "y\n"}, []),
    # KB006 unknown keys
    (
        "kb006",
        {P: page("sl_ref: [x]\nmeta:\n  frozn: true\nconflict:\n  key: k\n  exclusiv: true\n")},
        [(P, "KB006", 2, 1), (P, "KB006", 4, 3), (P, "KB006", 7, 3)],
    ),
    # KB007 not text; no other finding for that file
    ("kb007-binary", {P: b"\x89PNG\r\n\x1a\n\x00\x00[[missing]]"}, [(P, "KB007", 1, 1)]),
    ("kb007-latin1", {P: "caf\u00e9 [[missing]]".encode("latin-1")}, [(P, "KB007", 1, 1)]),
    (
        "kb007-semantic",
        {"semantics/bad.yaml": b"name: \xff\n"},
        [("semantics/bad.yaml", "KB007", 1, 1)],
    ),
    ("kb007-bom-ok", {P: "\ufeff---\nsummary: s\n---\n[[page]]\n"}, []),
    # KB050 semantic layer
    ("kb050-yaml", {"semantics/x.yaml": "name: [\n"}, [("semantics/x.yaml", "KB050", 2, 1)]),
    ("kb050-not-map", {"semantics/x.yaml": "- a\n"}, [("semantics/x.yaml", "KB050", 1, 1)]),
    (
        "kb050-missing",
        {"semantics/x.yaml": "name: x\nconnection: c\n"},
        [("semantics/x.yaml", "KB050", 1, 1)],
    ),
    (
        "kb050-bad-name",
        {"semantics/x.yaml": "name: my source\nconnection: c\ntable: t\n"},
        [("semantics/x.yaml", "KB050", 1, 7)],
    ),
    (
        "kb050-dup-source",
        {"semantics/z.yaml": "name: orders\nconnection: other\ntable: t\n"},
        [("semantics/z.yaml", "KB050", 1, 7)],
    ),
    (
        "kb050-members",
        {
            "semantics/x.yaml": "name: x\nconnection: c\ntable: t\ngrain: [id, nope]\n"
            "columns:\n  - {name: id}\n  - {name: id}\n"
            "measures:\n  - {name: m}\n"
            "dimensions:\n  - {name: d, column: missing}\n"
        },
        [
            ("semantics/x.yaml", "KB050", 4, 13),
            ("semantics/x.yaml", "KB050", 7, 12),
            ("semantics/x.yaml", "KB050", 9, 5),
            ("semantics/x.yaml", "KB050", 11, 23),
        ],
    ),
    # KB101 sl_refs
    (
        "kb101",
        {
            P: page(
                "sl_refs:\n  - shop_pg.orders.total_revenue\n  - shop_pg.orders.total_revenu\n"
                "  - shop_pg.orders\n  - shop_pg.orders.status\n"
            )
        },
        [(P, "KB101", 4, 5)],
    ),
    # KB102 refs
    (
        "kb102",
        {P: page("refs: [other, missing]\n"), "knowledge/global/other.md": "x\n"},
        [(P, "KB102", 2, 15)],
    ),
    (
        "kb102-path-ref",
        {P: page("refs: [sub/other]\n"), "knowledge/global/sub/other.md": "x\n"},
        [],
    ),
    # KB103 links
    (
        "kb103",
        {
            P: "See [[other]], [[missing]] and ![[img.png]] and ![[nope.png]].\n",
            "knowledge/global/other.md": "x\n",
            "knowledge/assets/img.png": b"\x89PNG",
        },
        [(P, "KB103", 1, 16), (P, "KB103", 1, 49)],
    ),
    (
        "kb103-forms",
        {
            P: "[[other|alias]] [[other.md]] [[ other ]] [[Sub/Deep]] [[]] [[|x]]\n"
            "| a | [[other\\|alias]] |\n",
            "knowledge/global/other.md": "x\n",
            "knowledge/global/Sub/Deep.md": "x\n",
        },
        [],
    ),
    ("kb103-case", {P: "[[Other]]\n", "knowledge/global/other.md": "x\n"}, [(P, "KB103", 1, 1)]),
    (
        "kb103-code",
        {
            P: "`[[a]]` ``x [[b]] `` \n\n```\n[[c]]\n```\n\n    [[d]]\n\n> ~~~\n> [[e]]\n> ~~~\n"
            "\n- item\n\n  ```\n  [[f]]\n  ```\n\ntext `span\nacross [[g]]` [[h]]\n"
        },
        [(P, "KB103", 20, 15)],
    ),
    ("kb103-unicode-column", {P: "caf\u00e9 \u2014 [[missing]]\n"}, [(P, "KB103", 1, 8)]),
    # KB104 invisible targets
    (
        "kb104",
        {
            P: page("refs: [mine]\n", "[[mine]]\n"),
            "knowledge/user/ann/mine.md": "x\n",
            "knowledge/user/ann/ok.md": "[[mine]] [[page]]\n",
            "knowledge/user/ben/b.md": "[[mine]]\n",
        },
        [(P, "KB104", 2, 8), (P, "KB104", 4, 1), ("knowledge/user/ben/b.md", "KB104", 1, 1)],
    ),
    # KB105 headings
    (
        "kb105",
        {
            P: "# Title\n\n## Some *Heading*\n\nSetext\n------\n\n[[#some   heading]] [[#setext]] "
            "[[#Missing]] [[other#Part two]] [[other#part 3]] [[other#^block]]\n",
            "knowledge/global/other.md": "## Part `two`\n",
        },
        [(P, "KB105", 8, 33), (P, "KB105", 8, 65)],
    ),
    ("kb105-heading-in-code", {P: "```\n# Fake\n```\n[[#Fake]]\n"}, [(P, "KB105", 4, 1)]),
    # KB106 directives
    (
        "kb106",
        {
            P: "<< sl:shop_pg.orders.total_revenue.expr >> {{sl:shop_pg.orders.table}}\n"
            "<< sl:shop_pg.orders.nope.expr >> {{ sl:shop_pg.orders.total_revenue.colour }}\n"
            "\\<< sl:shop_pg.orders.nope.expr >> << sl:x >>\n"
            "```\n<< sl:shop_pg.orders.missing.expr >>\n```\n"
        },
        [(P, "KB106", 2, 1), (P, "KB106", 2, 35), (P, "KB106", 3, 36), (P, "KB106", 5, 1)],
    ),
    (
        "kb106-shared-name",
        {P: "<< sl:shop_pg.orders.status.label >> << sl:shop_pg.orders.status.type >>\n"},
        [],
    ),
    # KB107 bound fingerprints
    (
        "kb107",
        {
            P: page(
                f"sl_refs: [shop_pg.orders.total_revenue]\nmeta:\n  bound_fingerprints:\n"
                f'    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n'
                f'    shop_pg.orders.other: "{FP_SUM_AMOUNT}"\n'
            )
        },
        [(P, "KB107", 6, 5)],
    ),
    # KB301 exclusive conflicts
    (
        "kb301",
        {
            "knowledge/global/a.md": page("conflict:\n  key: DB Engine\n  exclusive: true\n"),
            "knowledge/user/ann/b.md": page("conflict: {key: db-engine, exclusive: true}\n"),
            "knowledge/global/c.md": page(
                "conflict: {key: db engine, exclusive: true}\n"
                "status: superseded\nsuperseded_by: a\n"
            ),
            "knowledge/global/d.md": page(
                "conflict: {key: db engine, scope: {env: dev}, exclusive: true}\n"
            ),
            "knowledge/global/e.md": page("conflict: {key: db engine}\n"),
        },
        [("knowledge/global/a.md", "KB301", 2, 1), ("knowledge/user/ann/b.md", "KB301", 2, 1)],
    ),
    # KB302 supersession
    (
        "kb302",
        {
            "knowledge/global/a.md": page("status: superseded\n"),
            "knowledge/global/b.md": page("superseded_by: a\n"),
            "knowledge/global/c.md": page("status: superseded\nsuperseded_by: nowhere\n"),
            "knowledge/global/d.md": page("status: superseded\nsuperseded_by: e\n"),
            "knowledge/global/e.md": page("status: superseded\nsuperseded_by: d\n"),
            "knowledge/global/f.md": page("status: superseded\nsuperseded_by: g\n"),
            "knowledge/global/g.md": "x\n",
        },
        [
            ("knowledge/global/a.md", "KB302", 2, 1),
            ("knowledge/global/b.md", "KB302", 2, 1),
            ("knowledge/global/c.md", "KB302", 3, 16),
            ("knowledge/global/d.md", "KB302", 3, 16),
            ("knowledge/global/e.md", "KB302", 3, 16),
        ],
    ),
    # KB303 user page with a global id
    (
        "kb303",
        {"knowledge/global/n.md": "x\n", "knowledge/user/ann/n.md": "y\n"},
        [("knowledge/user/ann/n.md", "KB303", 1, 1)],
    ),
    # KB401 secrets, frontmatter values, keys and body (code included)
    (
        "kb401",
        {
            P: page(
                'summary: "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n'
                "api_key_with_a_long_name_is_only_a_key_AbC123: x\n",
                "```\n-----BEGIN RSA PRIVATE KEY-----\n```\npostgres://admin:hunter2@db/x\n"
                "password: Sup3rS3cretValue1234\nkey AKIAABCDEFGHIJKLMNOP and sk-abcdefghijklmnopqrstuv\n"
                "xoxb-1234567890-abc ok-9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
                "Zx9Kq2LmN8pR4tV6wY1aB3cD5eF7gH0jK2\n",
            )
        },
        [
            (P, "KB401", 2, 17),
            (P, "KB006", 3, 1),
            (P, "KB401", 3, 1),
            (P, "KB401", 6, 1),
            (P, "KB401", 8, 1),
            (P, "KB401", 9, 1),
            (P, "KB401", 10, 5),
            (P, "KB401", 10, 30),
            (P, "KB401", 11, 1),
            (P, "KB401", 12, 1),
        ],
    ),
    (
        "kb401-not-secrets",
        {
            P: page(
                f"summary: sha {FP_SUM_AMOUNT}\n",
                "commit 0123456789abcdef0123456789abcdef01234567, "
                "uuid 123e4567-e89b-12d3-a456-426614174000, "
                "snake_case_identifier_that_is_very_long_1234\n",
            )
        },
        [],
    ),
    # KB402 sensitive paths
    (
        "kb402",
        {
            P: page(
                "affected_paths: [config/.env, .env.production, .env.example, keys/id_rsa,\n"
                "  deploy/server.PEM, docs/readme.md, app/credentials.json]\nsource: config/client_secret.json\n"
            )
        },
        [
            (P, "KB402", 2, 18),
            (P, "KB402", 2, 31),
            (P, "KB402", 2, 62),
            (P, "KB402", 3, 3),
            (P, "KB402", 3, 38),
            (P, "KB402", 4, 9),
        ],
    ),
]


@pytest.mark.parametrize("files, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule_table(
    tmp_path: Path, files: dict[str, str | bytes], expected: list[tuple[str, str, int, int]]
) -> None:
    assert run(tmp_path, files) == expected


def test_kb202_stale(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "knowledge/global/fresh.md": page('meta:\n  last_validated_at: "2026-05-01T00:00:00Z"\n'),
        "knowledge/global/old.md": page("meta:\n  last_validated_at: 2025-01-01\n"),
        "knowledge/global/none.md": page("summary: s\n"),
        "knowledge/global/null.md": page("meta:\n  last_validated_at:\n"),
    }
    found = run(tmp_path, files, config={})
    assert found == [
        ("knowledge/global/none.md", "KB202", 1, 1),
        ("knowledge/global/null.md", "KB202", 3, 21),
        ("knowledge/global/old.md", "KB202", 3, 22),
    ]
    assert run(tmp_path / "x", files, config={"staleness_days": 1000}) == [
        ("knowledge/global/none.md", "KB202", 1, 1),
        ("knowledge/global/null.md", "KB202", 3, 21),
    ]


def test_kb403_sizes(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        P: page("summary: " + "a" * 30 + "\ntags: [short, " + "b" * 31 + "]\n", "x" * 101)
    }
    config = {"rules": {"KB202": "off"}, "security": {"max_field_chars": 30, "max_body_chars": 100}}
    assert run(tmp_path, files, config=config) == [
        (P, "KB403", 1, 1),
        (P, "KB403", 3, 1),
    ]


def test_kb008_symlink_leaving_project(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret\n")
    project = Project(tmp_path / "p", git=False)
    project.write({**SEMANTICS, "knowledge/global/real.md": "x\n"})
    (project.root / "knowledge/global/escape.md").symlink_to(outside)
    (project.root / "knowledge/global/inside.md").symlink_to(
        project.root / "knowledge/global/real.md"
    )
    (project.root / "knowledge/global/loop").symlink_to(project.root / "knowledge/global")
    cfg = config_from_mapping(OFF_STALE, "test")
    analysis = analyse(project.root, cfg, use_cache=False)
    found = [(d.path, d.code) for d in analysis.diagnostics]
    assert found == [(".", "KB009"), ("knowledge/global/escape.md", "KB008")]
    paths = sorted(p.path for p in analysis.pages)
    assert paths == ["knowledge/global/inside.md", "knowledge/global/real.md"]


def test_kb009_once_without_git_and_not_with_git(tmp_path: Path) -> None:
    cfg = config_from_mapping(OFF_STALE, "test")
    no_git = Project(tmp_path / "a", git=False).write({"knowledge/global/a.md": "x\n"})
    assert [d.code for d in analyse(no_git.root, cfg, use_cache=False).diagnostics] == ["KB009"]
    with_git = Project(tmp_path / "b").write({"knowledge/global/a.md": "x\n"})
    with_git.commit()
    assert analyse(with_git.root, cfg, use_cache=False).diagnostics == []


def test_skipped_files(tmp_path: Path) -> None:
    """Dot folders, .knowl and git-ignored paths are not read."""
    files: dict[str, str | bytes] = {
        ".gitignore": "knowledge/global/ignored/\nknowledge/global/skip.md\n",
        "knowledge/global/ignored/a.md": "[[missing]]\n",
        "knowledge/global/skip.md": "[[missing]]\n",
        "knowledge/global/.obsidian/b.md": "[[missing]]\n",
        "knowledge/global/.hidden.md": "[[missing]]\n",
        "knowledge/global/ok.md": "[[missing]]\n",
    }
    assert run(tmp_path, files, git=True) == [("knowledge/global/ok.md", "KB103", 1, 1)]


def test_severity_configuration(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {P: "[[missing]]\n"}
    assert run(tmp_path, files, config={"rules": {"KB103": "off", "KB202": "off"}}) == []
    project = Project(tmp_path / "q", git=False).write(files)
    cfg = config_from_mapping({"rules": {"KB103": "warning", "KB202": "off"}}, "t")
    severities = [
        (d.code, d.severity) for d in analyse(project.root, cfg, use_cache=False).diagnostics
    ]
    assert severities == [("KB009", "info"), ("KB103", "warning")]
