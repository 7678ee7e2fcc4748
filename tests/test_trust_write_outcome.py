"""A write never reports failure after it wrote (issue 21, item 1).

The write and the rebuild that makes it readable are two steps. Once a write has written,
whatever stops its rebuild (another build holding the build lock, a build that fails) is a
successful answer saying the build was not refreshed and why (exit 0, `"rebuilt": false`);
only a write that wrote nothing may fail. An agent told "failed" retries, and a retry of a
page that was written all the same writes it twice. The same for `--commit`: a commit git
refuses after the write (a hook, a held index lock) is a success saying `not committed` and
why, with the index as it was; a write that changed no byte has nothing to commit. Real git repositories in temp folders;
the lock is held by real builds racing the writes, or by the test as knowl's lock module
holds it; MCP calls go through the official SDK's client over stdio.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from knowl_build.artifacts.lock import build_lock
from knowl_build.artifacts.publication import current_name
from knowl_build.pipeline.stages import discovery
from tests.helpers import SEMANTICS, Project, invoke

KB202_OFF = "[rules]\nKB202 = 'off'\n"
BASE: dict[str, str | bytes] = {
    **SEMANTICS,
    "knowl.toml": KB202_OFF,
    "knowledge/global/deploy.md": (
        "---\ntitle: Deploy process\nsummary: How we deploy\ncategory: fact\n---\n"
        "We deploy with the pipeline.\n"
    ),
}
SECRET = "the key is AKIAABCDEFGHIJKLMNOP"  # KB401: a store holding it is refused
STORES = 8


def _project(tmp_path: Path) -> Project:
    proj = Project(tmp_path / "kb").write(BASE)
    proj.commit("start")
    invoke(["build", "--repo", str(proj.root)])
    return proj


def _out(proj: Project) -> Path:
    return proj.root / ".knowl" / "build"


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / "knowledge").rglob("*.md"))
    }


def _page(i: int, front: str) -> tuple[str, str, str]:
    """The title, content and file of store `i`: words no other store shares, so no store
    reconciles with another (each inserts a page of its own, none supersedes one)."""
    title = f"Kappa{front}{i} sigma{front}{i}"
    content = f"Kappa{front}{i} omega{front}{i} delta{front}{i} lambda{front}{i}."
    return title, content, f"knowledge/global/kappa{front}{i}-sigma{front}{i}.md"


def _assert_wrote_exactly(root: Path, path: str, title: str, content: str) -> None:
    text = (root / path).read_text(encoding="utf-8")
    assert f"\ntitle: {title}\n" in text and text.endswith(f"\n---\n{content}\n"), text
    assert "superseded" not in text, text


def _assert_tree(root: Path, before: dict[str, bytes], written: set[str]) -> None:
    """The tree is what it was plus exactly the pages the successful calls report."""
    after = _tree(root)
    assert {p: after[p] for p in before} == before  # nothing there before changed
    assert set(after) - set(before) == written


@contextlib.contextmanager
def _racing_builds(root: Path) -> Iterator[list[int]]:
    """`knowl build --full` in other processes, one after another, while the body runs: each
    holds the build lock for as long as a whole build takes. Yields their exit codes."""
    stop = threading.Event()
    codes: list[int] = []
    command = [sys.executable, "-m", "knowl_build", "build", "--repo", str(root), "--full"]

    def loop() -> None:
        while not stop.is_set():
            codes.append(subprocess.run(command, capture_output=True, check=False).returncode)

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        yield codes
    finally:
        stop.set()
        thread.join()


def _cli(root: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "knowl_build", "store", "--repo", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def _rebuilt_line(stderr: str) -> bool:
    """What the command's stderr says of the build: True rebuilt, False not rebuilt."""
    lines = [line for line in stderr.splitlines() if "rebuilt" in line]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(("rebuilt: build ", "not rebuilt: ")), stderr
    return lines[0].startswith("rebuilt: ")


def test_store_racing_build_reports_what_it_wrote(tmp_path: Path) -> None:
    """8 CLI stores, in processes of their own, racing real builds and each other's rebuilds
    (and 2 refused stores among them): every store that reports success wrote exactly its
    page, each refused one wrote nothing, and none reports failure for a rebuild it lost."""
    proj = _project(tmp_path)
    before = _tree(proj.root)
    calls = []
    for i in range(STORES):
        title, content, path = _page(i, "c")
        extra = ["--json"] if i % 2 == 0 else []
        calls.append((["--category", "fact", "--title", title, "--content", content, *extra], path))
    for i in range(2):
        args = ["--category", "fact", "--title", f"Refused{i}", "--content", SECRET, "--json"]
        calls.append((args, f"knowledge/global/refused{i}.md"))
    with _racing_builds(proj.root) as builds, ThreadPoolExecutor(max_workers=4) as pool:
        done = list(pool.map(lambda call: _cli(proj.root, call[0]), calls))
    assert builds, "no build raced the stores"

    written = set()
    for (args, path), result in zip(calls, done, strict=True):
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        title, content = args[3], args[5]
        if result.returncode == 0:
            _assert_wrote_exactly(proj.root, path, title, content)
            written.add(path)
            rebuilt = _rebuilt_line(result.stderr)
            if "--json" in args:
                answer = json.loads(result.stdout)
                assert (answer["action"], answer["path"]) == ("inserted", path)
                assert answer["rebuilt"] is rebuilt
                assert answer["build"]["status"] in (
                    ("published", "no-op") if rebuilt else ("busy", "refused", "failed")
                ), answer
                if not rebuilt:
                    assert answer["build"]["reason"], answer
        else:
            assert not (proj.root / path).exists(), result.stderr
    refused = [result.returncode for result in done[STORES:]]
    assert refused == [1, 1]  # nothing written: the only failure there may be
    assert all(result.returncode == 0 for result in done[:STORES]), [
        (r.returncode, r.stderr) for r in done[:STORES]
    ]
    _assert_tree(proj.root, before, written)


def test_store_while_the_build_lock_is_held_succeeds_unrebuilt_and_a_retry_writes_nothing(
    tmp_path: Path,
) -> None:
    """With the build lock held (as knowl's lock module holds it), 8 `store --commit` calls
    each exit 0, committed exactly their page, and say the build was not refreshed and why;
    a retry of each writes nothing (a duplicate), so no page ends up superseding itself."""
    proj = _project(tmp_path)
    before = _tree(proj.root)
    current = current_name(_out(proj))
    base = ["store", "--repo", str(proj.root), "--category", "fact", "--commit"]
    written = set()
    with build_lock(_out(proj)):
        for i in range(STORES):
            title, content, path = _page(i, "l")
            as_json = i % 2 == 0
            args = [*base, "--title", title, "--content", content]
            result = invoke([*args, "--json"] if as_json else args)
            assert "not rebuilt: another build (pid" in result.stderr, result.stderr
            assert "then run knowl build" in result.stderr
            if as_json:
                answer = json.loads(result.stdout)
                assert (answer["action"], answer["path"], answer["rebuilt"]) == (
                    "inserted",
                    path,
                    False,
                )
                assert answer["build"]["status"] == "busy"
                assert "another build" in answer["build"]["reason"]
            else:
                assert f"stored: kappal{i}-sigmal{i} ({path})" in result.stderr
            _assert_wrote_exactly(proj.root, path, title, content)
            log = proj.run_git("log", "-1", "--format=%s", "--name-only").split("\n")
            assert [line for line in log if line] == [f"Store fact: {title}", path]
            written.add(path)

            tree = _tree(proj.root)
            again = json.loads(invoke([*args, "--json"]).stdout)
            assert (again["action"], again["page"], again["rebuilt"]) == (
                "duplicate",
                f"kappal{i}-sigmal{i}",
                False,
            )
            assert again["build"] is None  # nothing written, nothing to rebuild
            assert _tree(proj.root) == tree
    assert current_name(_out(proj)) == current  # the held lock let no build through
    _assert_tree(proj.root, before, written)
    assert "nothing to commit" in proj.run_git("status")


def test_supersede_and_review_while_the_build_lock_is_held_report_what_they_wrote(
    tmp_path: Path,
) -> None:
    proj = _project(tmp_path)
    title, content, _ = _page(0, "s")
    invoke(["store", "--repo", str(proj.root), "--category", "fact", "--title", title,
            "--content", content, "--commit", "--no-build"])  # fmt: skip
    repo = ["--repo", str(proj.root), "--commit"]
    with build_lock(_out(proj)):
        reviewed = invoke(["review", "deploy", *repo])
        superseded = invoke(["supersede", "deploy", "kappas0-sigmas0", *repo])
    for result in (reviewed, superseded):
        assert "not rebuilt: another build (pid" in result.stderr, result.stderr
    deploy = (proj.root / "knowledge/global/deploy.md").read_text()
    assert "last_validated_at" in deploy
    assert "status: superseded\nsuperseded_by: kappas0-sigmas0\n" in deploy
    subjects = proj.run_git("log", "-2", "--format=%s").splitlines()
    assert subjects == ["Supersede deploy with kappas0-sigmas0", "Review deploy"]
    assert "nothing to commit" in proj.run_git("status")


def test_a_commit_that_cannot_be_made_stops_the_write_before_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--commit` with no git identity is exit 2, checked before anything is written (it
    used to fail once the page was on disk): store, supersede and review write nothing."""
    proj = _project(tmp_path)
    before = _tree(proj.root)
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "none"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("EMAIL", "")
    proj.run_git("config", "user.useConfigOnly", "true")
    title, content, _ = _page(0, "i")
    args = ["--repo", str(proj.root), "--commit"]
    for command in (
        ["store", *args, "--category", "fact", "--title", title, "--content", content],
        ["supersede", "deploy", "deploy-2", *args],
        ["review", "deploy", *args],
    ):
        assert "identity" in invoke(command, code=2).stderr
        assert _tree(proj.root) == before


def _full_disk(root: Path, config: Any, *rest: Any) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device", str(root / ".knowl/build/x.tmp"))


def _bug(root: Path, config: Any, *rest: Any) -> Any:
    raise RuntimeError("a build that broke")


@pytest.mark.parametrize("fault", [_full_disk, _bug], ids=["build-error", "internal-error"])
def test_a_build_that_fails_after_the_write_reports_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: Any
) -> None:
    """The rebuild stops inside the build lock, with a one-line error of knowl's (a full
    output folder) or with a bug: store, supersede and review still exit 0, wrote their
    change, and say the build stopped; no traceback reaches the user."""
    proj = _project(tmp_path)
    current = current_name(_out(proj))
    before = _tree(proj.root)
    title, content, path = _page(0, "f")
    monkeypatch.setattr(discovery, "read_inputs", fault)
    args = ["--repo", str(proj.root)]
    stored = invoke(["store", *args, "--category", "fact", "--title", title, "--content", content,
                     "--json"])  # fmt: skip
    answer = json.loads(stored.stdout)
    assert (answer["action"], answer["rebuilt"], answer["build"]["status"]) == (
        "inserted",
        False,
        "failed",
    )
    reason = answer["build"]["reason"]
    expected = "No space left on device" if fault is _full_disk else "RuntimeError"
    assert reason.startswith("the build stopped: ") and expected in reason, reason
    _assert_wrote_exactly(proj.root, path, title, content)
    reviewed = invoke(["review", "deploy", *args])
    superseded = invoke(["supersede", "deploy", "kappaf0-sigmaf0", *args])
    for result in (stored, reviewed, superseded):
        assert "Traceback" not in result.output
        assert "not rebuilt: the build stopped: " in result.stderr, result.stderr
    assert (
        "superseded_by: kappaf0-sigmaf0" in (proj.root / "knowledge/global/deploy.md").read_text()
    )
    assert "last_validated_at" in (proj.root / "knowledge/global/deploy.md").read_text()
    assert set(_tree(proj.root)) == {*before, path}
    assert current_name(_out(proj)) == current  # a failed build replaces nothing


# --- a commit git refuses after the write ---------------------------------------------------

# A pre-commit hook that rejects every commit, saying why (with a secret in its words), and one
# that says nothing at all (git then says nothing either).
HOOK_SAYS = "#!/bin/sh\necho 'pre-commit: AKIAABCDEFGHIJKLMNOP is not allowed here' >&2\nexit 1\n"
SILENT_HOOK = "#!/bin/sh\nexit 1\n"
DEPLOY = "knowledge/global/deploy.md"
NOTHING = "nothing to commit: no file was written"


def _reject_commits(proj: Project, script: str) -> None:
    hook = proj.root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(script)
    hook.chmod(0o755)


def _stage_own_work(proj: Project) -> None:
    """The user's own staged work, which a commit made for a write must leave as it is: a
    file of theirs, and an edit of deploy.md staged while the working tree holds another."""
    proj.write({"notes.txt": "mine\n", DEPLOY: str(BASE[DEPLOY]) + "Staged line.\n"})
    proj.run_git("add", "notes.txt", DEPLOY)
    proj.write({DEPLOY: str(BASE[DEPLOY]) + "Working line.\n"})


def _git_state(proj: Project) -> tuple[str, str]:
    """HEAD and the index as git lists it (mode, blob, stage, path of every entry)."""
    return proj.run_git("rev-parse", "HEAD"), proj.run_git("ls-files", "-s")


@pytest.mark.parametrize(
    ("hook", "said"),
    [(HOOK_SAYS, "pre-commit: [redacted] is not allowed here"), (SILENT_HOOK, "no message")],
    ids=["hook-says-why", "silent-hook"],
)
def test_commit_rejected_by_a_hook_after_the_write_is_success_not_committed(
    tmp_path: Path, hook: str, said: str
) -> None:
    """store, review and supersede `--commit` in a repository whose pre-commit hook rejects
    every commit: each exits 0 with its write on disk and rebuilt, says `not committed:` and
    git's one redacted line, and leaves HEAD and the index exactly as they were (the user's
    own staged work included)."""
    proj = _project(tmp_path)
    _stage_own_work(proj)
    state = _git_state(proj)
    _reject_commits(proj, hook)
    title, content, path = _page(0, "k")
    repo = ["--repo", str(proj.root), "--commit"]
    stored = invoke(["store", *repo, "--category", "fact", "--title", title, "--content", content,
                     "--json"])  # fmt: skip
    reviewed = invoke(["review", "deploy", *repo, "--json"])
    superseded = invoke(["supersede", "deploy", "kappak0-sigmak0", *repo, "--json"])
    text = invoke(["store", *repo, "--category", "fact", "--title", "Kappak1 sigmak1",
                   "--content", "Kappak1 omegak1."])  # fmt: skip
    for result in (stored, reviewed, superseded, text):
        assert "not committed: git commit failed: " in result.stderr, result.stderr
        assert said in result.stderr and "AKIAABCDEFGHIJKLMNOP" not in result.output
        assert "rebuilt: build " in result.stderr, result.stderr
    for result in (stored, reviewed, superseded):
        answer = json.loads(result.stdout)
        assert (answer["committed"], answer["commit"]["status"]) == (False, "failed"), answer
        assert answer["commit"]["commits"] == []
        reason = answer["commit"]["reason"]
        assert reason.startswith("git commit failed: ") and said in reason, reason
        assert answer["rebuilt"] is True and answer["build"]["status"] == "published"
    assert json.loads(stored.stdout)["path"] == path
    assert json.loads(reviewed.stdout)["paths"] == [DEPLOY]
    assert json.loads(superseded.stdout)["paths"] == [DEPLOY]
    _assert_wrote_exactly(proj.root, path, title, content)
    deploy = (proj.root / DEPLOY).read_text()
    assert "last_validated_at" in deploy and "superseded_by: kappak0-sigmak0" in deploy
    assert "Working line." in deploy
    assert _git_state(proj) == state  # nothing committed, nothing staged for the writes
    assert proj.run_git("show", f":{DEPLOY}").endswith("Staged line.\n")


def test_commit_while_another_git_process_holds_the_index_lock_is_success_not_committed(
    tmp_path: Path,
) -> None:
    """With `.git/index.lock` held, store and review `--commit` exit 0, wrote and rebuilt,
    and say git could not stage the files; once the lock is gone, the index is as it was."""
    proj = _project(tmp_path)
    _stage_own_work(proj)
    state = _git_state(proj)
    lock = proj.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    title, content, path = _page(0, "i")
    repo = ["--repo", str(proj.root), "--commit"]
    stored = invoke(["store", *repo, "--category", "fact", "--title", title, "--content", content,
                     "--json"])  # fmt: skip
    reviewed = invoke(["review", "deploy", *repo])
    lock.unlink()
    answer = json.loads(stored.stdout)
    assert (answer["action"], answer["committed"], answer["rebuilt"]) == ("inserted", False, True)
    reason = answer["commit"]["reason"]
    assert reason.startswith("git add failed: ") and "index.lock" in reason, reason
    for result in (stored, reviewed):
        assert "not committed: git add failed: " in result.stderr, result.stderr
        assert "index.lock" in result.stderr
    _assert_wrote_exactly(proj.root, path, title, content)
    assert "last_validated_at" in (proj.root / DEPLOY).read_text()
    assert _git_state(proj) == state


def test_a_commit_that_is_made_answers_committed_true_with_its_id(tmp_path: Path) -> None:
    """store, review and supersede `--commit --json`: `committed` true and the commit's id;
    the user's own staged file stays staged, out of the write's commit."""
    proj = _project(tmp_path)
    proj.write({"notes.txt": "mine\n"})
    proj.run_git("add", "notes.txt")
    title, content, _ = _page(0, "y")
    repo = ["--repo", str(proj.root), "--commit", "--json"]
    store = ["store", "--category", "fact", "--title", title, "--content", content]
    for command, subject in (
        (store, f"Store fact: {title}"),
        (["review", "deploy"], "Review deploy"),
        (["supersede", "deploy", "kappay0-sigmay0"], "Supersede deploy with kappay0-sigmay0"),
    ):
        result = invoke([*command, *repo])
        answer = json.loads(result.stdout)
        head = proj.run_git("rev-parse", "HEAD").strip()
        assert answer["committed"] is True
        assert answer["commit"] == {"status": "committed", "commits": [head], "reason": None}
        assert f"committed: {head[:12]}" in result.stderr
        assert proj.run_git("log", "-1", "--format=%s").strip() == subject
    assert proj.run_git("diff", "--cached", "--name-only") == "notes.txt\n"
    assert proj.run_git("status", "--porcelain") == "A  notes.txt\n"
    without = json.loads(invoke([*store, "--repo", str(proj.root), "--json"]).stdout)
    assert (without["commit"], without["committed"]) == (None, False)  # no --commit asked


def test_review_that_changes_no_byte_writes_and_commits_nothing(tmp_path: Path) -> None:
    """With SOURCE_DATE_EPOCH pinned (as the tests pin it), a second review of a page changes
    no byte: exit 0, `unchanged` and `nothing to commit`, never an empty `git commit failed:`;
    nothing is written, committed or rebuilt. A repeated store is the same; a repeated
    supersede is a refusal that writes nothing (exit 1)."""
    proj = _project(tmp_path)
    repo = ["--repo", str(proj.root), "--commit"]
    first = json.loads(invoke(["review", "deploy", *repo, "--json"]).stdout)
    assert first["committed"] is True and first["pages"][0]["changed"] is True
    head, page = proj.run_git("rev-parse", "HEAD"), (proj.root / DEPLOY).read_bytes()

    again = invoke(["review", "deploy", *repo, "--json"])
    assert json.loads(again.stdout) == {
        "pages": [{"page": "deploy", "path": DEPLOY, "status": "active", "changed": False}],
        "paths": [],
        "build": None,
        "rebuilt": False,
        "commit": {"status": "nothing", "commits": [], "reason": NOTHING},
        "committed": False,
    }
    text = invoke(["review", "deploy", *repo])
    for result in (again, text):
        assert f"unchanged: {DEPLOY} (already reviewed; nothing written)" in result.stderr
        assert NOTHING in result.stderr
        assert "git commit failed" not in result.stderr and "rebuilt" not in result.stderr
    assert text.stdout == ""  # no diff: nothing changed
    assert (proj.run_git("rev-parse", "HEAD"), (proj.root / DEPLOY).read_bytes()) == (head, page)

    title, content, _ = _page(0, "n")
    store = ["store", *repo, "--category", "fact", "--title", title, "--content", content, "--json"]
    invoke(store)
    duplicate = json.loads(invoke(store).stdout)
    assert duplicate["action"] == "duplicate"
    assert duplicate["commit"]["status"] == "nothing" and duplicate["committed"] is False
    invoke(["supersede", "deploy", "kappan0-sigman0", *repo])
    head = proj.run_git("rev-parse", "HEAD")
    refused = invoke(["supersede", "deploy", "kappan0-sigman0", *repo], code=1)
    assert "is superseded, not active" in refused.stderr
    assert proj.run_git("rev-parse", "HEAD") == head
    assert "nothing to commit" in proj.run_git("status")


def test_a_commit_with_nothing_for_git_to_commit_is_nothing_and_leaves_the_index(
    tmp_path: Path,
) -> None:
    """Files whose bytes are HEAD's (a write that put back what was committed) give git
    nothing to commit: no commit, status `nothing`, and the user's staged version stays."""
    from knowl_build.history.git import GitRepo
    from knowl_build.writes.common import commit

    proj = _project(tmp_path)
    proj.write({DEPLOY: str(BASE[DEPLOY]) + "Staged line.\n"})
    proj.run_git("add", DEPLOY)
    proj.write({DEPLOY: str(BASE[DEPLOY])})  # the working tree holds HEAD's bytes again
    state = _git_state(proj)
    repo = GitRepo.find(proj.root)
    assert repo is not None
    done = commit(repo, [([DEPLOY], "Nothing")])
    assert (done.status, done.commits, done.committed) == ("nothing", (), False)
    assert done.reason == "nothing to commit: the files hold what HEAD holds"
    assert _git_state(proj) == state


def test_fix_apply_commit_rejected_by_a_hook_is_success_not_committed(tmp_path: Path) -> None:
    """`fix --apply --commit`: the fix is written (exit 0) and `not committed:` says why."""
    from tests.test_fix import PAGE, TEXT, removed_measure

    proj = Project(tmp_path / "fix").write({**BASE, PAGE: TEXT})
    proj.commit("start")
    removed_measure(proj)
    state = _git_state(proj)
    _reject_commits(proj, SILENT_HOOK)
    result = invoke(["fix", "--repo", str(proj.root), "--apply", "--commit"])
    assert "wrote 1 file(s)" in result.stderr
    assert "not committed: git commit failed: no message" in result.stderr, result.stderr
    assert "total_revenue" not in (proj.root / PAGE).read_text()
    assert _git_state(proj) == state


# --- the MCP server ---------------------------------------------------------------------------

# A server whose builds stop inside the build lock with a full output folder (the writes read
# the tree through the inputs module itself, which stays as it is).
FAULTY_SERVER = """
import errno, sys
from pathlib import Path
from knowl_build.pipeline.stages import discovery
def full_disk(root, config, *rest):
    raise OSError(errno.ENOSPC, "No space left on device", str(Path(root) / ".knowl/build/x"))
discovery.read_inputs = full_disk
from knowl_build.cli import main
sys.argv[0] = "knowl"
main()
"""


def _serve(root: Path, body: Any, *, faulty: bool = False) -> Any:
    """`body(session)` against `knowl mcp --repo ROOT --allow-writes` over stdio."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    start = ["-c", FAULTY_SERVER] if faulty else ["-m", "knowl_build"]
    env = {
        k: os.environ[k]
        for k in ("PATH", "HOME", "SOURCE_DATE_EPOCH", "KNOWL_EMBEDDINGS", "XDG_CACHE_HOME")
        if k in os.environ
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=[*start, "mcp", "--repo", str(root), "--allow-writes"],
        env=env,
    )

    async def session() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            return await body(client)

    return asyncio.run(session())


def _mcp_stores(front: str) -> list[tuple[dict[str, Any], str]]:
    calls = []
    for i in range(STORES):
        title, content, path = _page(i, front)
        calls.append(({"category": "fact", "title": title, "content": content}, path))
    return calls


def _check_mcp_answers(
    root: Path, calls: list[tuple[dict[str, Any], str]], results: list[Any]
) -> set[str]:
    """Every answer that reports success wrote exactly its page (the answer's `rebuilt` agrees
    with its `build` and its text), every one that reports failure wrote nothing."""
    written = set()
    for (arguments, path), result in zip(calls, results, strict=True):
        text = result.content[0].text
        assert "Traceback" not in text
        answer = result.structured_content
        if result.is_error or answer["action"] != "inserted":
            assert not (root / path).exists(), text
            continue
        _assert_wrote_exactly(root, path, arguments["title"], arguments["content"])
        written.add(path)
        assert answer["path"] == path
        if answer["rebuilt"]:
            assert answer["build"]["status"] in ("published", "no-op"), answer
            assert "Rebuilt: searchable now." in text
        else:
            assert answer["build"]["reason"], answer
            assert "Not searchable yet: " in text and "do not repeat it" in text, text
    return written


def test_mcp_store_racing_build_reports_what_it_wrote(tmp_path: Path) -> None:
    """8 `store_knowledge` calls sent at once, racing real builds, and a refused one: no
    tool error for a rebuild that lost the race, each success wrote exactly its page."""
    proj = _project(tmp_path)
    before = _tree(proj.root)
    calls = _mcp_stores("m")
    calls.append(
        ({"category": "fact", "title": "Refused", "content": SECRET}, "knowledge/global/refused.md")
    )

    async def body(session: Any) -> list[Any]:
        sent = [session.call_tool("store_knowledge", arguments) for arguments, _ in calls]
        return list(await asyncio.gather(*sent))

    with _racing_builds(proj.root) as builds:
        results = _serve(proj.root, body)
    assert builds, "no build raced the stores"
    written = _check_mcp_answers(proj.root, calls, results)
    assert len(written) == STORES
    assert results[-1].structured_content["action"] == "refused"
    _assert_tree(proj.root, before, written)


def test_mcp_store_while_the_build_lock_is_held_succeeds_unrebuilt_and_a_retry_writes_nothing(
    tmp_path: Path,
) -> None:
    proj = _project(tmp_path)
    before = _tree(proj.root)
    calls = _mcp_stores("h")

    async def body(session: Any) -> dict[str, Any]:
        stored = [await session.call_tool("store_knowledge", a) for a, _ in calls]
        retried = [await session.call_tool("store_knowledge", a) for a, _ in calls]
        superseded = await session.call_tool(
            "supersede_knowledge", {"old": "deploy", "new": "kappah0-sigmah0"}
        )
        return {"stored": stored, "retried": retried, "superseded": superseded}

    with build_lock(_out(proj)):
        out = _serve(proj.root, body)
    written = _check_mcp_answers(proj.root, calls, out["stored"])
    assert len(written) == STORES
    for result in out["stored"]:
        answer = result.structured_content
        assert (answer["rebuilt"], answer["build"]["status"]) == (False, "busy")
        assert "another build (pid" in answer["build"]["reason"]
    for result, (_, path) in zip(out["retried"], calls, strict=True):
        assert not result.is_error
        answer = result.structured_content
        assert (answer["action"], answer["path"], answer["rebuilt"]) == ("duplicate", path, False)
    superseded = out["superseded"]
    assert not superseded.is_error, superseded.content
    assert superseded.structured_content["rebuilt"] is False
    assert superseded.structured_content["build"]["status"] == "busy"
    assert "Not searchable yet: another build" in superseded.content[0].text
    assert (
        "superseded_by: kappah0-sigmah0" in (proj.root / "knowledge/global/deploy.md").read_text()
    )
    assert set(_tree(proj.root)) == set(before) | written


def test_mcp_store_whose_build_fails_reports_what_it_wrote(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    before = _tree(proj.root)
    current = current_name(_out(proj))
    calls = _mcp_stores("x")[:2]

    async def body(session: Any) -> list[Any]:
        return [await session.call_tool("store_knowledge", a) for a, _ in calls]

    results = _serve(proj.root, body, faulty=True)
    written = _check_mcp_answers(proj.root, calls, results)
    assert len(written) == len(calls)
    for result in results:
        build = result.structured_content["build"]
        assert build["status"] == "failed" and "No space left on device" in build["reason"]
    assert set(_tree(proj.root)) == set(before) | written
    assert current_name(_out(proj)) == current


def test_mcp_writes_where_commits_would_fail_answer_committed_false_and_leave_git_alone(
    tmp_path: Path,
) -> None:
    """The server's writes are never committed: in a repository whose hook rejects commits
    and whose index another git process holds, store_knowledge and supersede_knowledge are
    no tool error, answer `committed` false (`commit` null), and HEAD and the index stay."""
    proj = _project(tmp_path)
    _stage_own_work(proj)
    state = _git_state(proj)
    _reject_commits(proj, HOOK_SAYS)
    lock = proj.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    calls = _mcp_stores("g")[:1]

    async def body(session: Any) -> list[Any]:
        stored = await session.call_tool("store_knowledge", calls[0][0])
        superseded = await session.call_tool(
            "supersede_knowledge", {"old": "deploy", "new": "kappag0-sigmag0"}
        )
        return [stored, superseded]

    results = _serve(proj.root, body)
    lock.unlink()
    assert _check_mcp_answers(proj.root, calls, results[:1]) == {calls[0][1]}
    for result in results:
        assert not result.is_error, result.content
        answer = result.structured_content
        assert (answer["committed"], answer["commit"]) == (False, None), answer
        assert answer["rebuilt"] is True, answer
        assert "ommit" not in result.content[0].text
    assert results[1].structured_content["paths"] == [DEPLOY]
    assert _git_state(proj) == state


SUBJECT = "Release cadence policy"
JSON = ("--no-build", "--json")


def _active_on_subject(root: Path) -> list[str]:
    """The pages titled SUBJECT that are still active (not superseded)."""
    return sorted(
        path
        for path, data in _tree(root).items()
        if f"\ntitle: {SUBJECT}\n".encode() in data and b"\nstatus: superseded\n" not in data
    )


def _check_one_subject(root: Path, bodies: list[str], answers: list[dict[str, Any]]) -> None:
    """Every answer that reports a write has its body on disk exactly where it says; the
    others were answered as the single-process rules answer a repeat; one page stays active."""
    for body, answer in zip(bodies, answers, strict=True):
        assert answer["action"] in ("inserted", "duplicate", "refused"), answer
        if answer["action"] == "inserted":
            text = (root / answer["path"]).read_text(encoding="utf-8")
            assert text.endswith(f"\n---\n{body}\n"), (answer, text)
    inserted = [a["path"] for a in answers if a["action"] == "inserted"]
    assert len(set(inserted)) == len(inserted), inserted  # no two writes claim one file
    assert len(_active_on_subject(root)) == 1, _active_on_subject(root)
    superseded = sorted(a["superseded"] for a in answers if a["superseded"])
    assert len(superseded) == len(inserted) - 1, answers  # each later write retired one


def test_concurrent_stores_of_one_title_lose_nothing(tmp_path: Path) -> None:
    """8 `knowl store --json` processes started at once with one title and different bodies:
    writes are serialised by the write lock (each reconciles with the one before, as one
    process after another would), and a new file never replaces another writer's."""
    proj = _project(tmp_path)
    bodies = [f"We release every {n} days after the cadence review." for n in range(STORES)]
    command = [sys.executable, "-m", "knowl_build", "store", "--repo", str(proj.root)]
    running = [
        subprocess.Popen(
            [*command, "--category", "fact", "--title", SUBJECT, "--content", body, *JSON],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for body in bodies
    ]
    answers = []
    for proc in running:
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err and "internal error" not in err, err
        answer = json.loads(out)  # exactly one JSON object, a refusal's too
        assert isinstance(answer, dict), out
        assert proc.returncode == (1 if answer["action"] == "refused" else 0), (out, err)
        answers.append(answer)
    _check_one_subject(proj.root, bodies, answers)


def test_concurrent_mcp_stores_of_one_title_lose_nothing(tmp_path: Path) -> None:
    """The same through `store_knowledge`, 8 calls sent at once to one server: the server
    writes through the same application function, under the same write lock."""
    proj = _project(tmp_path)
    bodies = [f"We release every {n} days after the cadence review." for n in range(STORES)]

    async def body(session: Any) -> list[Any]:
        sent = [
            session.call_tool(
                "store_knowledge", {"category": "fact", "title": SUBJECT, "content": text}
            )
            for text in bodies
        ]
        return list(await asyncio.gather(*sent))

    results = _serve(proj.root, body)
    assert not [r for r in results if r.is_error], [r.content[0].text for r in results]
    _check_one_subject(proj.root, bodies, [r.structured_content for r in results])
