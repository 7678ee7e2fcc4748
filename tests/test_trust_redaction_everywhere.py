"""Issue 21, items 3-5: redaction reaches every output, not only findings.

- git metadata (a commit's author and subject, a page's past paths and text) is redacted
  where history reads it, so the timeline, `show`, the artifact and the site never print it;
- a page whose name holds a secret is no page (KB004), so no answer, artifact file or site
  page names it; a semantic file's name is redacted where it enters the artifact;
- every field of an MCP resource error, and the server's log line, is redacted;
- the site never publishes a page with a secret finding (KB401), even after
  `knowl build --allow-errors`.

Each test runs on a real git repository and searches every file of the artifact and of the
site (names included, compressed files decompressed) and the whole output of each command for
the keys: their start and their end, in any case (the index holds terms lowercased).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from knowl_build.core.resolve import place
from knowl_build.secrets.patterns import REDACTED
from knowl_build.secrets.scanner import SecretScanner
from tests.helpers import FP_SUM_AMOUNT, SEMANTICS, Project, current_build, invoke, records

AWS = "AKIA" + "Q7ZP3M9X2K4W8T6R"
AWS_OLD = "AKIA" + "J5N8B2V6C4X1Z9L3"
GITHUB = "ghp_" + "k3Jz9QmX" * 4 + "2vLp"
SLACK = "xoxb-" + "2847561930-AbCdEfGhIjKl"
OPENAI = "sk-" + "projA1b2C3d4E5f6G7h8I9j0K1l2"
KEYS = (AWS, AWS_OLD, GITHUB, SLACK, OPENAI)

ORDERS = "semantics/shop/orders.yaml"


def test_the_keys_are_secrets() -> None:
    scanner = SecretScanner()
    for key in KEYS:
        assert [(m.start, m.end) for m in scanner.scan(f"x {key} y")] == [(2, 2 + len(key))]


def assert_clean(text: str, where: str = "output") -> None:
    """No key in `text`: neither its first nor its last 12 characters, in any case."""
    folded = text.casefold()
    for key in KEYS:
        for part in (key[:12], key[-12:]):
            assert part.casefold() not in folded, f"{where}: {part!r} of a key leaked"


def tree_text(folder: Path) -> str:
    """Every file name and byte under `folder` (gzip members decompressed), as text."""
    parts = []
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    assert files, f"{folder} is empty"
    for path in files:
        parts.append(path.relative_to(folder).as_posix())
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
        parts.append(data.decode("latin-1"))
    return "\n".join(parts)


def assert_tree_clean(folder: Path) -> None:
    assert_clean(tree_text(folder), str(folder))


def run(proj: Project, args: list[str], code: int = 0) -> str:
    """A command's whole output (stdout and stderr), checked to hold no key."""
    result = invoke([*args, "--repo", str(proj.root)], code=code)
    out = result.stdout + result.stderr
    assert_clean(out, " ".join(args))
    return result.stdout


def commit_as(proj: Project, subject: str, author: str) -> str:
    """Commit everything with `subject`, as `author` (the name a pusher chose)."""
    proj.run_git("add", "-A")
    proj.run_git("commit", "-q", "-m", subject, "--author", f"{author} <who@example.invalid>")
    proj.ticks += 1
    return proj.run_git("rev-parse", "HEAD").strip()


def bound_page(body: str) -> str:
    return (
        "---\nsummary: Revenue\nsl_refs: [shop_pg.orders.total_revenue]\n"
        f'meta:\n  bound_fingerprints:\n    shop_pg.orders.total_revenue: "{FP_SUM_AMOUNT}"\n---\n'
        f"# Revenue\n\n{body}\n\nIt is `<< sl:shop_pg.orders.total_revenue.expr >>`.\n"
    )


# --- item 3: git metadata ---------------------------------------------------------------------


def test_commit_subject_with_key_redacted_in_timeline_show_records_site(
    project: Callable[..., Project],
) -> None:
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            # A key the page held once: removed since, it is still in git's history.
            "knowledge/global/rev.md": bound_page(f"Revenue, loaded with {AWS_OLD}."),
        },
        commit=False,
    )
    first = commit_as(proj, f"Add revenue, deploy key {AWS}", f"Mallory {GITHUB}")
    proj.write(
        {
            ORDERS: SEMANTICS[ORDERS].replace('expr: "sum(amount)"', 'expr: "sum(net_amount)"'),
            "knowledge/global/rev.md": bound_page("Revenue, net of refunds."),
        }
    )
    second = commit_as(proj, f"Net revenue {SLACK}", f"Eve {OPENAI}")

    run(proj, ["build", "--allow-errors", "--site", "--format", "json"])
    folder = current_build(proj.root)
    assert_tree_clean(folder)
    assert_tree_clean(proj.root / ".knowl" / "site")
    # The records keep the commit, its metadata redacted; so do the entities and the drift.
    (rev,) = records(folder)
    assert rev["last_commit"]["commit"] == second
    assert (rev["last_commit"]["author"], rev["last_commit"]["subject"]) == (
        f"Eve {REDACTED}",
        f"Net revenue {REDACTED}",
    )
    assert rev["drift"][0]["changed_in"]["subject"] == f"Net revenue {REDACTED}"
    entities = json.loads((folder / "entities.json").read_bytes())["entities"]
    revenue = next(e for e in entities if e["name"] == "shop_pg.orders.total_revenue")
    assert revenue["introduced_in"]["subject"] == f"Add revenue, deploy key {REDACTED}"
    assert revenue["introduced_in"]["author"] == f"Mallory {REDACTED}"

    timeline = json.loads(run(proj, ["timeline", "rev", "--json"]))
    assert [v["commit"] for v in timeline["versions"]] == [second, first]
    assert [(v["author"], v["subject"]) for v in timeline["versions"]] == [
        (f"Eve {REDACTED}", f"Net revenue {REDACTED}"),
        (f"Mallory {REDACTED}", f"Add revenue, deploy key {REDACTED}"),
    ]
    assert f"-Revenue, loaded with {REDACTED}." in timeline["versions"][0]["diff"]
    assert f"Net revenue {REDACTED}" in run(proj, ["timeline", "rev"])

    show = json.loads(run(proj, ["show", "rev", "--json"]))
    assert show["drift"][0]["changed_in"]["subject"] == f"Net revenue {REDACTED}"
    for args in (
        ["show", "rev"],
        ["show", "rev", "--at", first, "--json"],
        ["check", "--format", "json"],
        ["search", "revenue", "--json"],
        ["traverse", "rev", "--json"],
        ["graph"],
        ["graph", "--format", "dot"],
        ["site", "--full"],
    ):
        run(proj, args)
    run(proj, ["stale", "--json"], code=1)  # rev drifted: not fresh
    assert_tree_clean(proj.root / ".knowl" / "site")


# --- item 3: names ----------------------------------------------------------------------------


def test_page_file_named_after_key_redacted_in_search_and_stale(
    project: Callable[..., Project],
) -> None:
    zebra = "# Zebra {}\n\nzebra crossing notes\n"
    proj = project(
        {
            **SEMANTICS,
            f"semantics/shop/{OPENAI}.yaml": SEMANTICS[ORDERS]
            .replace("name: orders", "name: refunds")
            .replace("fct_orders", "fct_refunds"),
            f"knowledge/global/{AWS}.md": zebra.format("runbook"),
            f"knowledge/global/{GITHUB}/notes.md": zebra.format("notes"),
            f"knowledge/user/alice/{SLACK}.md": zebra.format("mine"),
            "knowledge/global/plain.md": zebra.format("plain"),
        }
    )
    assert place(f"knowledge/global/{AWS}.md", "knowledge") is None
    assert place(f"knowledge/global/{GITHUB}/notes.md", "knowledge") is None
    assert place(f"knowledge/user/alice/{SLACK}.md", "knowledge") is None

    check = json.loads(run(proj, ["check", "--format", "json"], code=1))
    refused = [d for d in check["diagnostics"] if d["code"] == "KB004"]
    assert sorted(d["path"] for d in refused) == [
        f"knowledge/global/{REDACTED}.md",
        f"knowledge/global/{REDACTED}/notes.md",
        f"knowledge/user/alice/{REDACTED}.md",
    ]
    assert all("its name holds a secret" in d["message"] for d in refused)

    run(proj, ["build", "--allow-errors", "--site"])
    folder = current_build(proj.root)
    assert_tree_clean(folder)
    assert_tree_clean(proj.root / ".knowl" / "site")
    assert [r["path"] for r in records(folder)] == ["knowledge/global/plain.md"]
    entities = json.loads((folder / "entities.json").read_bytes())["entities"]
    assert {e["file"] for e in entities if e["name"].startswith("shop_pg.refunds")} == {
        f"semantics/shop/{REDACTED}.yaml"
    }

    search = json.loads(run(proj, ["search", "zebra", "--json"]))
    assert [hit["page"] for hit in search["hits"]] == ["plain"]
    mine = json.loads(run(proj, ["search", "zebra", "--user", "alice", "--json"]))
    assert [hit["page"] for hit in mine["hits"]] == ["plain"]
    stale = json.loads(run(proj, ["stale", "--json"], code=1))
    assert [p["page"] for p in stale["pages"]] == ["plain"]
    run(proj, ["stale"], code=1)
    for args in (["search", "zebra"], ["graph", "--format", "graphml"]):
        run(proj, args)
    run(proj, ["show", AWS], code=1)
    run(proj, ["timeline", AWS], code=1)


# --- item 4: MCP resource errors --------------------------------------------------------------


def _percent_encoded(text: str) -> str:
    return "".join(f"%{ord(char):02X}" for char in text)


def test_mcp_resource_error_redacts_every_field_and_log(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    proj = project({"knowledge/global/plain.md": "# Plain\n\nplain words\n"})
    invoke(["build", "--repo", str(proj.root), "-q"])
    uris = [
        f"knowl://page/global/{AWS}",
        f"knowl://page/global/{_percent_encoded(AWS)}",
        f"knowl://nope/{AWS}",
        f"knowl://nope/{GITHUB}/{_percent_encoded(SLACK)}",
        f"knowl://entity/{GITHUB}",
        f"knowl://page/user:{SLACK}/plain",
        f"knowl://page/{OPENAI}/plain",
        f"knowl://page/global/{'a' * 5000}{AWS}",
    ]
    env = {
        k: os.environ[k]
        for k in ("PATH", "HOME", "SOURCE_DATE_EPOCH", "KNOWL_EMBEDDINGS", "XDG_CACHE_HOME")
        if k in os.environ
    }
    env["COLUMNS"] = "10000"  # the SDK's log lines are not wrapped: a key is never cut in two
    log_path = tmp_path / "server.log"

    async def body() -> tuple[list[dict[str, Any]], str]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "knowl_build", "mcp", "--artifact", str(current_build(proj.root))],
            env=env,
        )
        errors = []
        with log_path.open("w", encoding="utf-8") as log:
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for uri in uris:
                    with pytest.raises(MCPError) as caught:
                        await session.read_resource(uri)
                    error = caught.value.error
                    errors.append(
                        {"code": error.code, "message": error.message, "data": error.data}
                    )
                page = await session.read_resource("knowl://page/global/plain")
        return errors, page.model_dump_json()

    errors, page = asyncio.run(body())
    assert "plain words" in page  # the server still answers
    assert len(errors) == len(uris)
    for uri, error in zip(uris, errors, strict=True):
        shown = json.dumps(error)
        assert_clean(shown, uri[:60])
        assert REDACTED in error["data"]["uri"] or len(uri) > 5000, error
        assert "Traceback" not in shown and "\n" not in error["message"]
        assert len(error["data"]["uri"]) <= 300
    assert errors[2]["message"] == f"Unknown resource: knowl://nope/{REDACTED}"
    log = log_path.read_text(encoding="utf-8")
    assert_clean(log, "the server's log")
    assert_clean("".join(log.split()), "the server's log, unwrapped")
    assert log.count("failed") >= len(uris) and "Traceback" not in log
    assert f"Resource 'knowl://nope/{REDACTED}' failed" in log


# --- item 5: the site -------------------------------------------------------------------------


def _site_files(site: Path, ext: str) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob(f"*{ext}"))


def _leak(secret: bool) -> str:
    """A caveat page that another page links to, refs and is superseded by; with `secret`,
    a key in its title, summary, tag, category-like text and body."""
    if not secret:
        return (
            "---\nsummary: How to deploy\nusage_mode: caveat\ntags: [ops]\ncategory: skill\n"
            "sl_refs: [shop_pg.orders.total_revenue]\n---\n# Deploy runbook\n\nDeploy notes.\n"
        )
    return (
        f"---\ntitle: Deploy runbook {GITHUB}\nsummary: Deploy with {SLACK}\n"
        f"usage_mode: caveat\ntags: [ops, {OPENAI}]\ncategory: skill\n"
        "sl_refs: [shop_pg.orders.total_revenue]\n---\n"
        f"# Deploy runbook\n\nThe key is {AWS}; zebraword.\n"
    )


def test_site_never_publishes_flagged_secret(project: Callable[..., Project]) -> None:
    proj = project(
        {
            **SEMANTICS,
            "knowl.toml": "[rules]\nKB202 = 'off'\n",
            "knowledge/global/leak.md": _leak(secret=False),
            "knowledge/global/other.md": (
                "---\nsummary: Revenue notes\nrefs: [leak]\n"
                "sl_refs: [shop_pg.orders.total_revenue]\n---\n"
                "# Revenue notes\n\nBefore deploying, see [[leak]] and ![[leak]].\n"
            ),
            "knowledge/global/old.md": (
                "---\nsummary: The old runbook\nstatus: superseded\nsuperseded_by: leak\n---\n"
                "# Old runbook\n\nGone.\n"
            ),
        }
    )
    site = proj.root / ".knowl" / "site"
    run(proj, ["build", "--site"])
    assert "pages/leak.html" in _site_files(site, ".html")
    assert "leak.html" in (site / "pages" / "other.html").read_text(encoding="utf-8")

    proj.write({"knowledge/global/leak.md": _leak(secret=True)}).commit("Keys in the runbook")
    run(proj, ["build", "--site"], code=1)  # refused: the last good artifact and site stay
    assert "pages/leak.html" in _site_files(site, ".html")
    assert_tree_clean(site)
    result = invoke(["build", "--repo", str(proj.root), "--allow-errors", "--site"])
    assert_clean(result.stdout + result.stderr)
    assert "1 page(s) left out, they hold a secret (KB401): leak" in result.stderr

    # The artifact holds the page as written (the reader answers from it)...
    folder = current_build(proj.root)
    diagnostics = json.loads((folder / "diagnostics.json").read_bytes())["diagnostics"]
    assert {d["path"] for d in diagnostics if d["code"] == "KB401"} == {"knowledge/global/leak.md"}
    assert "knowledge/global/leak.md" in {r["path"] for r in records(folder)}
    # ...but no file of the site holds anything of it: not its file, not a link, a node, a
    # search result, a tag, a caveat, nor a word only it holds.
    for out in (site, proj.root / "elsewhere"):
        if out != site:
            run(proj, ["site", "--out", str(out)])
        assert_tree_clean(out)
        text = tree_text(out)
        assert "zebraword" not in text
        assert "Deploy runbook" not in text and "Deploy with" not in text
        assert "pages/leak.html" not in _site_files(out, ".html")
        assert not any("leak" in name for name in _site_files(out, ".json"))
        assert "page:global:leak" not in text and "leak.html" not in text
        # Only the page with the secret had tags and a category.
        assert not [p for p in out.glob("*/*.html") if p.parent.name in ("tags", "categories")]
        stale = (out / "stale.html").read_text(encoding="utf-8")
        assert '<h2 id="withheld">Left out of this site</h2>' in stale
        assert "<li><code>leak</code></li>" in stale
        other = (out / "pages" / "other.html").read_text(encoding="utf-8")
        assert '<span class="wikilink unresolved">leak</span>' in other
        assert (out / "pages" / "old.html").is_file()
        assert "Revenue notes" in text  # the other pages are all there
