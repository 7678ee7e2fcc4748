"""knowl store, supersede, review, conflicts: Knowl's reconciliation and governed writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke

BASE: dict[str, str | bytes] = {**SEMANTICS, "knowl.toml": "[rules]\nKB202 = 'off'\n"}
CONTENT = "We run the analytics warehouse on PostgreSQL because our data fits one machine."


def store(proj: Project, *args: str, code: int = 0, stdin: str | None = None) -> dict[str, Any]:
    result = invoke(["store", "--repo", str(proj.root), "--json", *args], code=code, input=stdin)
    answer: dict[str, Any] = json.loads(result.stdout)
    # After every write, the tree still checks.
    invoke(["check", "--repo", str(proj.root)])
    return answer


def decision(title: str, content: str = CONTENT, *extra: str) -> list[str]:
    return ["--category", "decision", "--title", title, "--content", content, *extra]


def status_of(proj: Project, page_id: str) -> str | None:
    text = (proj.root / f"knowledge/global/{page_id}.md").read_text()
    for line in text.splitlines():
        if line.startswith("status:"):
            return line.split(":", 1)[1].strip()
    return "active"


# (first write, second write, expected action, superseded?, overlapping?)
CASES = [
    (
        "verbatim repeat is a no-op",
        decision("Database choice"),
        decision("Database choice"),
        "duplicate",
        None,
        None,
    ),
    (
        "whitespace and case do not count",
        decision("Database choice"),
        decision("database   CHOICE", CONTENT.upper()),
        "duplicate",
        None,
        None,
    ),
    (
        "adding a tag is not a no-op",
        decision("Database choice"),
        decision("Database choice", CONTENT, "--tag", "storage"),
        "inserted",
        "database-choice",
        None,
    ),
    (
        "adding a path is not a no-op",
        decision("Database choice"),
        decision("Database choice", CONTENT, "--path", "infra/db.tf"),
        "inserted",
        "database-choice",
        None,
    ),
    (
        "same subject, more specific title supersedes",
        decision("Database choice"),
        decision("Database choice for analytics", CONTENT + " Postgres 16."),
        "inserted",
        "database-choice",
        None,
    ),
    (
        "one significant token coexists",
        decision("Redis", "Redis caches the analytics warehouse sessions on PostgreSQL machine."),
        decision(
            "Use SQLite", "SQLite caches the analytics warehouse sessions on PostgreSQL machine."
        ),
        "inserted",
        None,
        "redis",
    ),
    (
        "a title adding only a negation coexists",
        decision("Database choice final"),
        decision("Database choice not final", CONTENT + " Maybe."),
        "inserted",
        None,
        "database-choice-final",
    ),
    (
        "different category never matches",
        decision("Database choice"),
        ["--category", "fact", "--title", "Database choice", "--content", CONTENT],
        "inserted",
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    "first, second, action, superseded, overlapping",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_reconciliation(
    project: Callable[..., Project],
    first: list[str],
    second: list[str],
    action: str,
    superseded: str | None,
    overlapping: str | None,
) -> None:
    proj = project(BASE)
    one = store(proj, *first)
    assert one["action"] == "inserted" and one["superseded"] is None
    two = store(proj, *second)
    assert (two["action"], two["superseded"], two["overlapping"]) == (
        action,
        superseded,
        overlapping,
    )
    if action == "duplicate":
        assert two["page"] == one["page"] and two["path"] == one["path"]
        assert len(list((proj.root / "knowledge/global").glob("*.md"))) == 1
    if superseded:
        assert status_of(proj, superseded) == "superseded"
    if overlapping:
        assert status_of(proj, overlapping) == "active"


def test_coexisting_write_prints_the_supersede_command(project: Callable[..., Project]) -> None:
    proj = project(BASE)
    store(
        proj,
        *decision("Redis", "Redis caches the analytics warehouse sessions on PostgreSQL machine."),
    )
    result = invoke(
        [
            "store",
            "--repo",
            str(proj.root),
            *decision(
                "Use SQLite",
                "SQLite caches the analytics warehouse sessions on PostgreSQL machine.",
            ),
        ]
    )
    assert "knowl supersede redis use-sqlite" in result.stderr


def test_explicit_supersedes_wins(project: Callable[..., Project]) -> None:
    proj = project(BASE)
    store(proj, *decision("Warehouse engine", "Everything moves to Snowflake."))
    store(proj, *decision("Database choice"))
    answer = store(
        proj,
        *decision(
            "Analytics storage",
            "We keep PostgreSQL for analytics data.",
            "--supersedes",
            "warehouse-engine",
        ),
    )
    assert answer["superseded"] == "warehouse-engine"
    assert status_of(proj, "warehouse-engine") == "superseded"
    text = (proj.root / "knowledge/global/warehouse-engine.md").read_text()
    assert "superseded_by: analytics-storage\n" in text
    refused = invoke(
        [
            "store",
            "--repo",
            str(proj.root),
            "--json",
            *decision("Another", "x y z", "--supersedes", "warehouse-engine"),
        ],
        code=1,
    )
    assert json.loads(refused.stdout)["action"] == "refused"


def test_exclusive_conflicts(project: Callable[..., Project]) -> None:
    proj = project(BASE)
    key = [
        "--conflict-key",
        "Database Production Engine",
        "--conflict-scope",
        "env=prod",
        "--exclusive",
    ]
    store(proj, *decision("Primary database", "PostgreSQL is the production engine.", *key))
    refused = store(
        proj,
        *decision(
            "Main datastore",
            "MySQL is the production engine now.",
            "--conflict-key",
            "database-production-engine",
            "--conflict-scope",
            "env=prod",
            "--exclusive",
        ),
        code=1,
    )
    assert refused["action"] == "refused"
    assert [d["code"] for d in refused["diagnostics"] if d["severity"] == "error"] == ["KB301"]
    assert not (proj.root / "knowledge/global/main-datastore.md").exists()
    other_scope = store(
        proj,
        *decision(
            "Main datastore",
            "MySQL is the staging engine.",
            "--conflict-key",
            "database production engine",
            "--conflict-scope",
            "env=staging",
            "--exclusive",
        ),
    )
    assert other_scope["action"] == "inserted"
    groups = json.loads(invoke(["conflicts", "--repo", str(proj.root), "--json"]).stdout)["groups"]
    assert [(g["key"], g["scope"], g["violation"]) for g in groups] == [
        ("database.production.engine", {"env": "prod"}, False),
        ("database.production.engine", {"env": "staging"}, False),
    ]
    # With --supersedes the old holder does not count.
    answer = store(
        proj,
        *decision(
            "Production database",
            "CockroachDB is the production engine.",
            *key,
            "--supersedes",
            "primary-database",
        ),
    )
    assert answer["superseded"] == "primary-database"


SECRET_FIELDS = [
    ["--content", "Connect with postgres://admin:hunter2pass@db.internal/x please."],
    ["--summary", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"],
    ["--reasoning", "the key is AKIAABCDEFGHIJKLMNOP"],
    ["--tag", "sk-abcdefghijklmnopqrstuvwxyz"],
    ["--step", "export password=Sup3rS3cretValue1234"],
    ["--source", "xoxb-1234567890-abcdefghij"],
]


@pytest.mark.parametrize("secret", SECRET_FIELDS, ids=[s[0] for s in SECRET_FIELDS])
def test_secret_in_any_field_is_refused_without_echo(
    project: Callable[..., Project], secret: list[str]
) -> None:
    proj = project(BASE)
    args = ["--category", "fact", "--title", "Connection notes"]
    if secret[0] != "--content":
        args += ["--content", "Plain text."]
    result = invoke(["store", "--repo", str(proj.root), *args, *secret], code=1)
    value = secret[1].split()[-1].split("=")[-1]
    assert value not in result.output and "hunter2" not in result.output
    assert "KB401" in result.stderr
    assert (
        not list((proj.root / "knowledge").rglob("*.md"))
        if (proj.root / "knowledge").exists()
        else True
    )
    as_json = invoke(["store", "--repo", str(proj.root), "--json", *args, *secret], code=1)
    assert value not in as_json.output and json.loads(as_json.stdout)["action"] == "refused"


def test_new_page_format(project: Callable[..., Project]) -> None:
    proj = project(BASE)
    head = proj.run_git("rev-parse", "HEAD").strip()
    answer = store(
        proj,
        "--category",
        "fact",
        "--title",
        "Revenue: the definition!",
        "--content",
        "# Revenue\n\nRevenue is the sum of completed orders. More text follows.\n\n",
        "--tag",
        "finance",
        "--sl-ref",
        "shop_pg.orders.total_revenue",
        "--sl-ref",
        "shop_pg.orders",
        "--usage-mode",
        "definition",
        "--confidence",
        "0.8",
        "--provenance",
        "human_curated",
        "--path",
        "models/orders.sql",
        "--user",
        "alice",
    )
    assert answer["path"] == "knowledge/user/alice/revenue-the-definition.md"
    text = (proj.root / answer["path"]).read_text()
    assert text == (
        "---\ntitle: 'Revenue: the definition!'\nsummary: Revenue is the sum of completed orders.\n"
        "category: fact\ntags:\n- finance\nsl_refs:\n- shop_pg.orders.total_revenue\n- shop_pg.orders\n"
        "usage_mode: definition\nconfidence: 0.8\n"
        f"source_commit: {head}\naffected_paths:\n- models/orders.sql\nmeta:\n  provenance: human_curated\n"
        '  last_validated_at: "2026-05-28T20:26:40Z"\n  bound_fingerprints:\n'
        f"    shop_pg.orders.total_revenue: {FP_SUM_AMOUNT}\n---\n"
        "# Revenue\n\nRevenue is the sum of completed orders. More text follows.\n\n"
    )
    again = store(
        proj,
        "--category",
        "fact",
        "--title",
        "Something else entirely",
        "--content",
        "Zebra.",
        "--user",
        "alice",
    )
    assert again["path"] == "knowledge/user/alice/something-else-entirely.md"
    taken = store(
        proj,
        "--category",
        "goal",
        "--title",
        "Revenue: the definition",
        "--content",
        "Grow it.",
        "--user",
        "alice",
    )
    assert taken["path"] == "knowledge/user/alice/revenue-the-definition-2.md"
    empty = store(proj, "--category", "fact", "--title", "!!!", "--content", "Punctuation.")
    assert (
        empty["path"].startswith("knowledge/global/page-") and len(Path(empty["path"]).stem) == 13
    )


def test_content_from_stdin_and_commit(project: Callable[..., Project]) -> None:
    proj = project(BASE)
    before = proj.run_git("rev-parse", "HEAD").strip()
    proj.write({"unrelated.txt": "staged but not ours\n"})
    proj.run_git("add", "unrelated.txt")
    answer = store(
        proj,
        "--category",
        "fact",
        "--title",
        "Churn",
        "--content-file",
        "-",
        "--commit",
        stdin="Churn counts cancelled subscriptions.\n",
    )
    log = proj.run_git("log", "-1", "--format=%s", "--name-only").split()
    assert log[:3] == ["Store", "fact:", "Churn"] and log[3:] == [answer["path"]]
    assert proj.run_git("rev-parse", "HEAD~1").strip() == before
    assert "unrelated.txt" in proj.run_git("diff", "--cached", "--name-only")


def test_commit_without_identity_is_exit_2(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(BASE)
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)
    home = proj.root.parent / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "none"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("EMAIL", "")
    proj.run_git("config", "user.useConfigOnly", "true")
    result = invoke(
        ["store", "--repo", str(proj.root), *decision("Database choice"), "--commit"], code=2
    )
    assert "identity" in result.stderr


def test_supersede_command_edits_minimally(project: Callable[..., Project]) -> None:
    old_text = (
        "---\n# keep this comment\ntitle:   'Old engine'   # and this one\ncategory: decision\n"
        "tags: [db]\n---\nBody *kept* exactly.\n\n"
    )
    proj = project(
        {
            **BASE,
            "knowledge/global/old.md": old_text,
            "knowledge/global/new.md": "---\ncategory: decision\n---\nNew.\n",
            "knowledge/global/frozen.md": "---\nmeta: {frozen: true}\n---\nx\n",
        }
    )
    result = invoke(["supersede", "old", "new", "--repo", str(proj.root), "--commit"])
    after = (proj.root / "knowledge/global/old.md").read_text()
    assert after == old_text.replace(
        "tags: [db]\n", "tags: [db]\nstatus: superseded\nsuperseded_by: new\n"
    )
    assert "+status: superseded" in result.stdout
    assert proj.run_git("log", "-1", "--format=%s").strip() == "Supersede old with new"
    invoke(["check", "--repo", str(proj.root)])
    for args, why in (
        (["new", "new"], "itself"),
        (["old", "new"], "not active"),
        (["nope", "new"], "no page"),
        (["new", "old"], "not active"),
        (["frozen", "new"], "frozen"),
    ):
        refused = invoke(["supersede", *args, "--repo", str(proj.root)], code=1)
        assert why in refused.stderr


def test_supersede_refuses_a_cycle(project: Callable[..., Project]) -> None:
    # c is active but (wrongly, KB302) names b as its successor: b -> c would close a loop.
    proj = project(
        {
            **BASE,
            "knowledge/global/b.md": "---\n---\nb\n",
            "knowledge/global/c.md": "---\nsuperseded_by: b\n---\nc\n",
        }
    )
    assert "cycle" in invoke(["supersede", "b", "c", "--repo", str(proj.root)], code=1).stderr
    assert (proj.root / "knowledge/global/b.md").read_text() == "---\n---\nb\n"


def test_review(project: Callable[..., Project]) -> None:
    page = (
        "---\nsummary: Revenue\nfreshness: needs_review\nsl_refs:\n  - shop_pg.orders.total_revenue\n"
        "  - shop_pg.orders\nmeta:\n  provenance: human_curated   # vouched\n  last_validated_at: 2024-01-01\n"
        '  bound_fingerprints:\n    shop_pg.orders.total_revenue: "sha256:'
        + "0" * 64
        + '"\n---\nBody.\n'
    )
    proj = project(
        {
            **BASE,
            "knowl.toml": "",
            "knowledge/global/rev.md": page,
            "knowledge/global/bare.md": "# Bare page\n",
            "knowledge/global/frozen.md": "---\nmeta:\n  frozen: true\n---\nx\n",
            "knowledge/global/broken.md": "[[nowhere]]\n",
        }
    )
    invoke(["review", "rev", "bare", "--repo", str(proj.root), "--commit"])
    assert (proj.root / "knowledge/global/rev.md").read_text() == page.replace(
        "freshness: needs_review", "freshness: fresh"
    ).replace("last_validated_at: 2024-01-01", 'last_validated_at: "2026-05-28T20:26:40Z"').replace(
        '"sha256:' + "0" * 64 + '"', f'"{FP_SUM_AMOUNT}"'
    )
    assert (proj.root / "knowledge/global/bare.md").read_text() == (
        '---\nmeta:\n  last_validated_at: "2026-05-28T20:26:40Z"\n---\n# Bare page\n'
    )
    assert proj.run_git("log", "-2", "--format=%s").split("\n")[:2] == ["Review bare", "Review rev"]
    stale = json.loads(invoke(["stale", "--repo", str(proj.root), "--json"], code=1).stdout)[
        "pages"
    ]
    assert "rev" not in [p["page"] for p in stale]
    assert "frozen" in invoke(["review", "frozen", "--repo", str(proj.root)], code=1).stderr
    invoke(["review", "frozen", "--repo", str(proj.root), "--force"])
    assert "error findings" in invoke(["review", "broken", "--repo", str(proj.root)], code=1).stderr


def test_review_adds_fingerprints_for_measures(project: Callable[..., Project]) -> None:
    proj = project(
        {**BASE, "knowledge/global/p.md": "---\nsl_refs: [shop_pg.orders.total_revenue]\n---\nx\n"}
    )
    invoke(["review", "p", "--repo", str(proj.root)])
    text = (proj.root / "knowledge/global/p.md").read_text()
    assert text == (
        "---\nsl_refs: [shop_pg.orders.total_revenue]\nmeta:\n"
        '  last_validated_at: "2026-05-28T20:26:40Z"\n  bound_fingerprints:\n'
        f'    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n---\nx\n'
    )
    invoke(["check", "--repo", str(proj.root), "--strict"])


def test_conflicts_exit_1_on_violation(project: Callable[..., Project]) -> None:
    proj = project(
        {
            **BASE,
            "knowledge/global/a.md": "---\nconflict: {key: DB Engine, exclusive: true}\n---\n",
            "knowledge/user/ann/b.md": "---\nconflict: {key: db-engine, exclusive: true}\n---\n",
        }
    )
    result = invoke(["conflicts", "--repo", str(proj.root), "--json"], code=1)
    groups = json.loads(result.stdout)["groups"]
    assert groups == [
        {
            "key": "db.engine",
            "scope": {},
            "violation": True,
            "pages": [
                {"page": "a", "scope": "global", "path": "knowledge/global/a.md"},
                {"page": "b", "scope": "user:ann", "path": "knowledge/user/ann/b.md"},
            ],
        }
    ]
    assert "violation" in invoke(["conflicts", "--repo", str(proj.root)], code=1).stdout
