"""knowl build on real temp git repositories: artifacts, publication, determinism, failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.artifacts import layout
from knowl_build.artifacts.layout import LOCK
from knowl_build.artifacts.opening import verify
from knowl_build.core.config import Config
from knowl_build.pipeline.publish import build
from knowl_build.semantic.layer import SemanticLayer
from knowl_build.semantic.load import load_semantic_layer
from knowl_build.semantic.render import render_body
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, invoke, records

ORDERS = "semantics/shop/orders.yaml"
JSON_FILES = ("pages.jsonl.gz", "entities.json", "graph.json", "diagnostics.json")

FILES: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/revenue.md": (
        "---\nsummary: Revenue of completed orders\ntags: [revenue, finance]\n"
        "sl_refs: [shop_pg.orders.total_revenue]\nrefs: [refunds]\n"
        'meta:\n  last_validated_at: "2026-01-01T00:00:00Z"\n  bound_fingerprints:\n'
        f'    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n---\n'
        "# Revenue\n\nRevenue is `<< sl:shop_pg.orders.total_revenue.expr >>`. See [[refunds#Timing]].\n"
    ),
    "knowledge/global/refunds.md": (
        "---\nsummary: Refunds are not netted out\nusage_mode: caveat\n"
        "sl_refs: [shop_pg.orders.total_revenue]\n---\n# Refunds\n\n## Timing\n\nLater.\n"
    ),
    "knowledge/global/old-decision.md": (
        "---\nstatus: superseded\nsuperseded_by: revenue\ncategory: decision\n---\nOld.\n"
    ),
    "knowledge/user/ann/notes.md": "---\nsummary: Ann's notes\n---\nSee [[revenue]].\n",
}


def out_dir(proj: Project) -> Path:
    return proj.root / ".knowl" / "build"


def current(proj: Project) -> Path:
    return out_dir(proj) / (out_dir(proj) / "CURRENT").read_text().strip()


def test_artifact_layout_and_contents(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    head = proj.run_git("rev-parse", "HEAD").strip()
    result = invoke(["build", "--repo", str(proj.root)])
    assert f"build {head[:12]}: published" in result.stderr
    folder = current(proj)
    assert folder.name == head[:12]
    assert (proj.root / ".knowl" / ".gitignore").read_text() == "*\n"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == "knowl-build" and manifest["schema_version"] == "2.3"
    assert manifest["commit"] == head and manifest["dirty"] is False
    assert manifest["build_id"] == head[:12]
    assert manifest["repo"] == "proj"
    assert manifest["search"] == {
        "boosts": {"body": 1.0, "headings": 0.5, "summary": 3.0, "tags": 2.0, "title": 1.0},
        "max_caveats": 3,
    }
    assert set(JSON_FILES) <= set(manifest["files"])
    assert any(name.startswith("index/") for name in manifest["files"])
    assert verify(folder) == []

    pages = records(folder)
    assert [(p["scope"], p["id"]) for p in pages] == [
        ("global", "old-decision"),
        ("global", "refunds"),
        ("global", "revenue"),
        ("user:ann", "notes"),
    ]
    revenue = pages[2]
    assert revenue["body"] == "# Revenue\n\nRevenue is `sum(amount)`. See [[refunds#Timing]].\n"
    assert "<< sl:" in revenue["raw_body"]
    assert revenue["title"] == "Revenue"
    assert revenue["freshness"] == {"value": "fresh", "reasons": []}
    assert revenue["last_commit"]["commit"] == head
    assert {
        "target": "refunds",
        "kind": "link",
        "heading": "Timing",
        "line": 13,
        "column": 62,
        "to": "knowledge/global/refunds.md",
    } in revenue["links"]

    entities = json.loads((folder / "entities.json").read_text())["entities"]
    measure = next(e for e in entities if e["name"] == "shop_pg.orders.total_revenue")
    assert measure["fingerprint"] == FP_SUM_AMOUNT
    assert measure["introduced_in"]["commit"] == head and measure["changed_in"] is None
    assert (measure["file"], measure["line"]) == (ORDERS, 11)

    graph = json.loads((folder / "graph.json").read_text())
    kinds = {(e["source"], e["target"]): e["kind"] for e in graph["edges"]}
    assert kinds[("page:global:revenue", "page:global:refunds")] == "ref"
    assert kinds[("page:global:revenue", "entity:shop_pg.orders.total_revenue")] == "sl_ref"
    assert kinds[("page:global:old-decision", "page:global:revenue")] == "superseded_by"
    assert kinds[("page:user:ann:notes", "page:global:revenue")] == "link"
    assert kinds[("entity:shop_pg.orders.total_revenue", "entity:shop_pg.orders")] == "member_of"
    diagnostics = json.loads((folder / "diagnostics.json").read_text())
    assert diagnostics["version"] == 1 and diagnostics["diagnostics"] == []


def test_drift_in_a_later_commit_is_needs_review_in_the_artifact(
    project: Callable[..., Project],
) -> None:
    proj = project(FILES)
    proj.write(
        {ORDERS: SEMANTICS[ORDERS].replace('expr: "sum(amount)"', 'expr: "sum(amount_net)"')}
    )
    sha = proj.commit("Revenue is net of discounts now")
    result = invoke(["build", "--repo", str(proj.root), "--format", "json"])
    findings = json.loads(result.stdout)["diagnostics"]
    kb201 = [d for d in findings if d["code"] == "KB201"]
    assert len(kb201) == 1 and sha[:12] in kb201[0]["message"]
    assert "`sum(amount)`" in kb201[0]["message"] and "`sum(amount_net)`" in kb201[0]["message"]
    revenue = next(p for p in records(current(proj)) if p["id"] == "revenue")
    assert revenue["freshness"]["value"] == "needs_review"
    # The revenue measure is bound: its change is KB201 alone (no KB203 besides).
    assert [r["code"] for r in revenue["freshness"]["reasons"]] == ["KB201"]
    drift = revenue["drift"][0]
    assert drift["entity"] == "shop_pg.orders.total_revenue"
    assert drift["bound"] == FP_SUM_AMOUNT and drift["changed_in"]["commit"] == sha
    assert (drift["bound_expr"], drift["live_expr"]) == ("sum(amount)", "sum(amount_net)")
    assert "sum(amount_net)" in revenue["body"]


def test_same_inputs_give_identical_json(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    invoke(["build", "--repo", str(proj.root)])
    first = current(proj)
    invoke(["build", "--repo", str(proj.root), "--full"])
    second = current(proj)
    assert first != second and second.name == first.name + ".2"
    for name in JSON_FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_no_op_and_full(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    invoke(["build", "--repo", str(proj.root)])
    result = invoke(["build", "--repo", str(proj.root)])
    assert "nothing published (no-op)" in result.stderr
    assert sorted(p.name for p in out_dir(proj).iterdir() if not p.name.startswith(".")) == sorted(
        ["CURRENT", current(proj).name]
    )


def test_a_build_of_an_older_schema_is_no_no_op(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same inputs and day, but the current build has the schema before (a reader would read
    it without catalog-heads.json, more slowly): the next build publishes anew."""
    proj = project(FILES)
    with monkeypatch.context() as patch:
        patch.setattr(layout, "SCHEMA_VERSION", "2.2")
        invoke(["build", "--repo", str(proj.root)])
    older = json.loads((current(proj) / "manifest.json").read_bytes())
    assert older["schema_version"] == "2.2"
    result = invoke(["build", "--repo", str(proj.root)])
    assert "no-op" not in result.stderr
    manifest = json.loads((current(proj) / "manifest.json").read_bytes())
    assert manifest["schema_version"] == layout.SCHEMA_VERSION
    assert (current(proj) / layout.CATALOG_HEADS).is_file()


def test_dirty_and_nogit_build_ids(project: Callable[..., Project], tmp_path: Path) -> None:
    proj = project(FILES)
    proj.write({"knowledge/global/new.md": "# New\n"})
    invoke(["build", "--repo", str(proj.root)])
    manifest = json.loads((current(proj) / "manifest.json").read_text())
    assert manifest["dirty"] is True
    assert (
        manifest["build_id"] == f"{manifest['commit'][:12]}-dirty-{manifest['inputs_sha256'][:8]}"
    )
    plain = Project(tmp_path / "plain", git=False).write(FILES)
    invoke(["build", "--repo", str(plain.root)])
    manifest = json.loads((current(plain) / "manifest.json").read_text())
    assert manifest["build_id"] == f"nogit-{manifest['inputs_sha256'][:12]}"
    assert manifest["commit"] is None


def test_refused_build_keeps_current_and_allow_errors_publishes(
    project: Callable[..., Project],
) -> None:
    proj = project(FILES)
    invoke(["build", "--repo", str(proj.root)])
    before = (out_dir(proj) / "CURRENT").read_text()
    proj.write({"knowledge/global/broken.md": "[[nowhere]]\n"})
    result = invoke(["build", "--repo", str(proj.root)], code=1)
    assert "KB103" in result.stdout and "refused" in result.stderr
    assert (out_dir(proj) / "CURRENT").read_text() == before
    invoke(["build", "--repo", str(proj.root), "--allow-errors"])
    manifest = json.loads((current(proj) / "manifest.json").read_text())
    assert manifest["error_count"] == 1
    assert (out_dir(proj) / "CURRENT").read_text() != before


def test_failed_build_leaves_current_and_no_staging(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(FILES)
    invoke(["build", "--repo", str(proj.root)])
    before = (out_dir(proj) / "CURRENT").read_text()
    import knowl_build.index.writer

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(knowl_build.index.writer, "write_index", fail)
    proj.write({"knowledge/global/new.md": "# New\n"})
    result = invoke(["build", "--repo", str(proj.root)], code=2)
    assert "disk full" in result.stderr
    assert (out_dir(proj) / "CURRENT").read_text() == before
    assert not [p for p in out_dir(proj).iterdir() if p.name.startswith(".tmp-")]
    assert not (out_dir(proj) / LOCK).exists()


def test_killed_build_leaves_current_unchanged(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    invoke(["build", "--repo", str(proj.root)])
    before = (out_dir(proj) / "CURRENT").read_text()
    proj.write({"knowledge/global/new.md": "# New\n"})
    # A real process killed by SIGKILL in the middle of writing its index.
    script = (
        "import os, signal, sys\n"
        "import knowl_build.index.writer as ix\n"
        "def die(*a, **k):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
        "ix.write_index = die\n"
        "from knowl_build.cli import main\n"
        f"sys.argv = ['knowl', 'build', '--repo', {str(proj.root)!r}]\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == -9
    assert (out_dir(proj) / "CURRENT").read_text() == before
    assert (out_dir(proj) / LOCK).exists()  # left behind by the dead build
    assert verify(current(proj)) == []
    # The next build takes the dead lock over, removes the staging folder, publishes.
    invoke(["build", "--repo", str(proj.root)])
    assert (out_dir(proj) / "CURRENT").read_text() != before
    assert not [p for p in out_dir(proj).iterdir() if p.name.startswith(".tmp-")]


def test_live_lock_stops_a_second_build(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    out_dir(proj).mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        import socket

        (out_dir(proj) / LOCK).write_text(f"knowl-build {holder.pid} {socket.gethostname()}\n")
        result = invoke(["build", "--repo", str(proj.root)], code=2)
        assert f"another build (pid {holder.pid})" in result.stderr
    finally:
        holder.kill()
        holder.wait()


def test_keep_builds_prunes_old_folders(project: Callable[..., Project]) -> None:
    proj = project({**FILES, "knowl.toml": "keep_builds = 2\n[rules]\nKB202 = 'off'\n"})
    for _ in range(4):
        invoke(["build", "--repo", str(proj.root), "--full"])
    folders = sorted(
        p.name for p in out_dir(proj).iterdir() if p.is_dir() and not p.name.startswith(".")
    )
    assert len(folders) == 2 and current(proj).name in folders


def test_verify_and_reader_refuse_a_corrupt_artifact(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    invoke(["build", "--repo", str(proj.root)])
    assert "ok" in invoke(["verify", "--repo", str(proj.root)]).stdout
    folder = current(proj)
    with (folder / "graph.json").open("a") as handle:
        handle.write(" ")
    result = invoke(["verify", "--repo", str(proj.root)], code=2)
    assert "graph.json: checksum mismatch" in result.stderr
    result = invoke(["graph", "--repo", str(proj.root)], code=2)
    assert result.stderr.count("\n") == 1 and "corrupt artifact" in result.stderr
    assert "Traceback" not in result.output


def test_graph_exports(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    invoke(["build", "--repo", str(proj.root)])
    as_json = json.loads(invoke(["graph", "--repo", str(proj.root)]).stdout)
    assert as_json["directed"] is True and "edges" in as_json
    graphml = invoke(["graph", "--repo", str(proj.root), "--format", "graphml"]).stdout
    assert graphml.startswith("<graphml") and "page:global:revenue" in graphml
    dot = invoke(["graph", "--repo", str(proj.root), "--format", "dot"]).stdout
    assert dot.startswith("digraph knowledge {")
    assert '"page:global:revenue" -> "page:global:refunds" [label="ref"];' in dot


def test_stale_command(project: Callable[..., Project]) -> None:
    proj = project({**FILES, "knowl.toml": ""})
    # Exit 1 while any page is not fresh, text or JSON: a script can gate on it.
    result = invoke(["stale", "--repo", str(proj.root), "--json"], code=1)
    pages = json.loads(result.stdout)["pages"]
    assert [p["page"] for p in pages] == ["old-decision", "refunds", "revenue", "notes"]
    revenue = next(p for p in pages if p["page"] == "revenue")
    assert revenue["freshness"] == "stale" and revenue["reasons"][0]["code"] == "KB202"
    text = invoke(["stale", "--repo", str(proj.root)], code=1)
    assert "revenue" in text.stdout and "KB202" in text.stdout
    none = invoke(
        ["stale", "--repo", str(proj.root), "--json"],
        env={"SOURCE_DATE_EPOCH": "1767225600"},
        code=1,
    )  # 2026-01-01, within 90 days
    assert [p["page"] for p in json.loads(none.stdout)["pages"]] == [
        "old-decision",
        "refunds",
        "notes",
    ]


def test_stale_exits_0_when_every_page_is_fresh(project: Callable[..., Project]) -> None:
    fresh = '---\nmeta:\n  last_validated_at: "2026-05-01T00:00:00Z"\n---\n# Fresh\n'
    proj = project({"knowledge/global/fresh.md": fresh})
    assert json.loads(invoke(["stale", "--repo", str(proj.root), "--json"]).stdout) == {"pages": []}
    assert "0 page(s) not fresh" in invoke(["stale", "--repo", str(proj.root)]).stderr


def _layer() -> SemanticLayer:
    return load_semantic_layer([(k, v.encode()) for k, v in SEMANTICS.items()])


def test_rendering_never_evaluates_page_text() -> None:
    body = (
        "{{ 7*7 }} {% for x in range(3) %}{{ x }}{% endfor %} {# c #} {{ config.__class__ }}\n"
        "{% raw %}{{ lipsum.__globals__['os'].system('id') }}{% endraw %} a << 2 >> b\n"
        "{{ sl:shop_pg.orders.total_revenue.expr }} << sl:shop_pg.orders.grain >> "
        "<<sl:shop_pg.orders.amount.nullable>> {{sl:shop_pg.orders.status.description}}|\n"
        "\\<< sl:shop_pg.orders.total_revenue.expr >> \\{{ sl:x.y }} << sl:shop_pg.orders.nope.expr >>\n"
        "```\n<< sl:shop_pg.orders.total_revenue.fingerprint >>\n```\n"
    )
    rendered = render_body(body, _layer())
    assert rendered == (
        "{{ 7*7 }} {% for x in range(3) %}{{ x }}{% endfor %} {# c #} {{ config.__class__ }}\n"
        "{% raw %}{{ lipsum.__globals__['os'].system('id') }}{% endraw %} a << 2 >> b\n"
        "sum(amount) order_id false |\n"
        "<< sl:shop_pg.orders.total_revenue.expr >> {{ sl:x.y }} << sl:shop_pg.orders.nope.expr >>\n"
        f"```\n{FP_SUM_AMOUNT}\n```\n"
    )


def test_build_uses_the_out_option(project: Callable[..., Project], tmp_path: Path) -> None:
    proj = project(FILES)
    target = tmp_path / "elsewhere"
    invoke(["build", "--repo", str(proj.root), "--out", str(target)])
    assert (target / "CURRENT").is_file()
    assert not (out_dir(proj) / "CURRENT").exists()
    invoke(["graph", "--artifact", str(target / (target / "CURRENT").read_text().strip())])


def test_build_library_call(project: Callable[..., Project]) -> None:
    proj = project(FILES)
    result = build(proj.root, Config(rules={"KB202": "off"}))
    assert result.status == "published" and result.counts["pages"] == 4
    assert os.path.isdir(result.folder or "")
