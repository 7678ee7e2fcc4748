"""History commands keep scopes (issue 10, item 4) and survive odd trees (item 3).

`knowl timeline` lists only the versions of a page its caller could read when they were made:
a page published from a user's folder has no past in that folder for anyone else (not listed,
not diffed against, not named by a notice). `show --at` skips a committed symlink that leaves
the exported tree instead of failing: at that revision such a link is no page.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from knowl_build.history.git import GitRepo
from knowl_build.history.pages import page_history
from tests.helpers import Project, invoke

ALICE = "knowledge/user/alice/plan.md"
GLOBAL = "knowledge/global/plan.md"


def draft(body: str) -> str:
    return f"---\nsummary: draft\n---\n{body}\nl2\nl3\nl4\n"


@pytest.fixture
def published(project: Callable[..., Project]) -> tuple[Project, list[str]]:
    """Alice drafts a plan in her folder, cleans it, publishes it (a move to global/), and the
    global page changes once more."""
    proj = project({ALICE: draft("Target is ACME, price 42M.")}, commit=False)
    shas = [proj.commit("draft")]
    proj.write({ALICE: draft("Target is REDACTED.")})
    shas.append(proj.commit("clean"))
    proj.remove(ALICE).write({GLOBAL: draft("Target is REDACTED.")})
    shas.append(proj.commit("publish"))
    proj.write({GLOBAL: draft("Target is public.")})
    shas.append(proj.commit("edit"))
    return proj, shas


def timeline(proj: Project, *args: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(
        invoke(["timeline", "plan", "--repo", str(proj.root), "--json", *args]).stdout
    )
    return answer


@pytest.mark.parametrize("who", [["--user", "bob"], []], ids=["bob", "anonymous"])
def test_a_page_has_no_past_in_another_users_folder(
    published: tuple[Project, list[str]], who: list[str]
) -> None:
    proj, shas = published
    answer = timeline(proj, *who)
    versions = answer["versions"]
    assert isinstance(versions, list)
    assert [(v["commit"], v["path"]) for v in versions] == [(shas[3], GLOBAL), (shas[2], GLOBAL)]
    assert versions[1]["diff"] == ""  # the first version this caller may read: nothing before it
    assert answer["notices"] == []
    for output in (
        json.dumps(answer),
        invoke(["timeline", "plan", "--repo", str(proj.root), *who]).stdout,
    ):
        assert "alice" not in output and "ACME" not in output and shas[1] not in output
    # The same answer as `show --at` gives for that past.
    invoke(
        ["show", "user:alice:plan", "--at", shas[1], "--repo", str(proj.root), "--user", "bob"],
        code=1,
    )


def test_the_owner_sees_the_whole_history(published: tuple[Project, list[str]]) -> None:
    proj, shas = published
    versions = timeline(proj, "--user", "alice")["versions"]
    assert isinstance(versions, list)
    assert [v["commit"] for v in versions] == list(reversed(shas))
    assert [v["path"] for v in versions] == [GLOBAL, GLOBAL, ALICE, ALICE]
    assert "-Target is ACME, price 42M.\n+Target is REDACTED.\n" in versions[2]["diff"]


def test_a_version_git_cannot_read_is_a_notice_for_those_who_may_read_it(
    published: tuple[Project, list[str]],
) -> None:
    proj, shas = published
    lost = {}
    for sha, path in ((shas[0], ALICE), (shas[3], GLOBAL)):
        blob = proj.run_git("rev-parse", f"{sha}:{path}").strip()
        (proj.root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
        lost[sha] = blob
    alice = timeline(proj, "--user", "alice")
    assert [v["commit"] for v in alice["versions"]] == [shas[2], shas[1]]
    assert alice["notices"] == [
        f"git could not read {GLOBAL} in commit {shas[3][:12]} (blob {lost[shas[3]]}: missing); "
        "that version is left out",
        f"git could not read {ALICE} in commit {shas[0][:12]} (blob {lost[shas[0]]}: missing); "
        "that version is left out",
    ]
    # Bob is told about the version he may read, and nothing about alice's folder.
    bob = timeline(proj, "--user", "bob")
    assert bob["notices"] == [alice["notices"][0]]
    assert "alice" not in json.dumps(bob)
    repo = GitRepo.find(proj.root)
    assert repo is not None
    versions, problems = page_history(repo, GLOBAL, keep=lambda path: "/alice/" not in path)
    assert [v.commit.sha for v in versions] == [shas[2]] and problems == bob["notices"]


@pytest.mark.parametrize("target", ["/etc/hostname", "../../../outside.md", "../../../../.."])
def test_show_at_skips_a_committed_link_that_leaves_the_tree(
    project: Callable[..., Project], target: str
) -> None:
    proj = project(
        {
            "knowledge/global/intro.md": "---\nsummary: s\n---\nIntro body.\n",
            "outside.md": "---\nsummary: o\n---\nNot knowledge.\n",
        },
        commit=False,
    )
    os.symlink(target, proj.root / "knowledge/global/host.md")
    proj.commit("a link out")
    answer = json.loads(
        invoke(["show", "intro", "--at", "HEAD", "--repo", str(proj.root), "--json"]).stdout
    )
    assert "Intro body." in answer["body"]
    result = invoke(["show", "host", "--at", "HEAD", "--repo", str(proj.root)], code=1)
    assert result.stderr == "knowl: error: no page 'host' visible to anonymous\n"
