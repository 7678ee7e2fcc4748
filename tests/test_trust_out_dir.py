"""Trust 8: knowl deletes only what knowl made (issue 10).

The output folder may not be the project root, the knowledge or semantics folder, a folder
holding them or a folder inside them (config and --out alike); pruning and the cleanup of
stale staging folders remove only folders whose marker holds the token of this output
folder, never a folder recognised by a file name anyone can commit.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from knowl_build.artifacts import publication
from knowl_build.artifacts.folders import out_token
from knowl_build.artifacts.layout import BUILD_MARKER, LOCK, OUT_MARKER
from knowl_build.artifacts.publication import current_folder, staging_folder
from tests.helpers import Project, invoke

PAGES = {
    "knowledge/global/revenue.md": "---\nsummary: Revenue is the sum of orders\n---\n# Revenue\n",
    "knowledge/global/churn.md": "---\nsummary: Churn counts cancelled subscriptions\n---\nChurn.\n",
}
KB202_OFF = "[rules]\nKB202 = 'off'\n"
# A committed folder that happens to look like a build: a manifest, an index.
LOOKALIKE = {
    "manifest.json": json.dumps({"format": "knowl-build", "schema_version": "1.0", "files": {}}),
    "notes.txt": "committed work\n",
}


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield


def _project(tmp_path: Path, toml: str, extra: Mapping[str, str | bytes] | None = None) -> Project:
    proj = Project(tmp_path / "kb").write(
        {**PAGES, "knowl.toml": toml + KB202_OFF, **(extra or {})}
    )
    proj.commit("initial")
    return proj


def _tracked(proj: Project) -> dict[str, bytes]:
    names = proj.run_git("ls-files").splitlines()
    return {name: (proj.root / name).read_bytes() for name in names}


@pytest.mark.parametrize(
    "out_dir, knowledge_dir, problem",
    [
        (".", "knowledge", "not the project root"),
        ("./", "knowledge", "not the project root"),
        ("knowledge", "knowledge", "apart from knowledge/"),
        ("knowledge/x", "knowledge", "apart from knowledge/"),
        ("knowledge/global/build", "knowledge", "apart from knowledge/"),
        ("semantics", "knowledge", "apart from semantics/"),
        ("semantics/out", "knowledge", "apart from semantics/"),
        ("docs", "docs/kb", "apart from docs/kb/"),
        ("docs/kb/out", "docs/kb", "apart from docs/kb/"),
    ],
)
def test_out_dir_that_pruning_could_turn_on_the_project_is_a_config_error(
    tmp_path: Path, out_dir: str, knowledge_dir: str, problem: str
) -> None:
    proj = _project(tmp_path, f"out_dir = {out_dir!r}\nknowledge_dir = {knowledge_dir!r}\n")
    before = _tracked(proj)
    for command in (["build"], ["check"], ["search", "x"]):
        result = invoke([*command, "--repo", str(proj.root)], code=2)
        assert "knowl.toml: 'out_dir':" in result.stderr and problem in result.stderr
        assert result.stderr.count("\n") == 1
    assert _tracked(proj) == before


@pytest.mark.parametrize("out_dir", [".knowl/build", "build", "site/out", "knowledge-build"])
def test_out_dir_of_its_own_is_accepted(tmp_path: Path, out_dir: str) -> None:
    proj = _project(tmp_path, f"out_dir = {out_dir!r}\n")
    invoke(["build", "--repo", str(proj.root)])
    assert (proj.root / out_dir / "CURRENT").is_file()


@pytest.mark.parametrize(
    "where", ["root", "knowledge", "inside-knowledge", "semantics", "parent", "link"]
)
def test_build_out_that_overlaps_the_project_is_refused(tmp_path: Path, where: str) -> None:
    proj = _project(tmp_path, "", {"semantics/shop/orders.yaml": "name: orders\nconnection: c\n"})
    (tmp_path / "link").symlink_to(proj.root / "knowledge")
    target = {
        "root": proj.root,
        "knowledge": proj.root / "knowledge",
        "inside-knowledge": proj.root / "knowledge" / "global" / "out",
        "semantics": proj.root / "semantics",
        "parent": tmp_path,
        "link": tmp_path / "link",
    }[where]
    before = _tracked(proj)
    result = invoke(["build", "--repo", str(proj.root), "--out", str(target)], code=2)
    assert "output folder" in result.stderr and result.stderr.count("\n") == 1
    assert _tracked(proj) == before
    assert not (target / "CURRENT").exists()


def test_pruning_leaves_committed_lookalikes_alone(tmp_path: Path) -> None:
    """out_dir holds committed folders with a manifest.json, one even with a marker copied
    from another output folder: five builds with keep_builds = 1 leave them as they were."""
    other = _project(tmp_path / "other", "")
    invoke(["build", "--repo", str(other.root)])
    foreign = current_folder(other.root / ".knowl" / "build")
    assert foreign is not None
    marker = (foreign / BUILD_MARKER).read_text()
    lookalikes = {
        **{f"site/old-build/{k}": v for k, v in LOOKALIKE.items()},
        **{f"site/copied/{k}": v for k, v in LOOKALIKE.items()},
        "site/copied/.knowl-build": marker,
    }
    proj = _project(tmp_path, "out_dir = 'site'\nkeep_builds = 1\n", lookalikes)
    before = _tracked(proj)
    for i in range(5):
        proj.write(
            {"knowledge/global/revenue.md": PAGES["knowledge/global/revenue.md"] + f"v{i}\n"}
        )
        invoke(["build", "--repo", str(proj.root)])
    tracked = _tracked(proj)
    assert {k: v for k, v in tracked.items() if k.startswith("site/")} == {
        k: v for k, v in before.items() if k.startswith("site/")
    }
    builds = [
        p
        for p in (proj.root / "site").iterdir()
        if p.is_dir() and p.name not in ("old-build", "copied")
    ]
    assert [p.name for p in builds] == [current_folder(proj.root / "site").name]  # type: ignore[union-attr]


def test_stale_staging_cleanup_removes_only_knowl_staging(tmp_path: Path) -> None:
    proj = _project(
        tmp_path,
        "out_dir = 'site'\n",
        {
            **{f"site/.tmp-committed/{k}": v for k, v in LOOKALIKE.items()},
        },
    )
    invoke(["build", "--repo", str(proj.root)])
    site = proj.root / "site"
    token = out_token(site)
    assert token is not None
    ours = staging_folder(site)  # an interrupted build of this output folder
    (ours / "pages.jsonl").write_text("half written")
    empty = site / ".tmp-empty"
    empty.mkdir()
    copied = site / ".tmp-copied"
    copied.mkdir()
    (copied / BUILD_MARKER).write_text("0" * 32 + "\n")  # another folder's token
    (copied / "work.txt").write_text("keep me")
    before = _tracked(proj)
    proj.write({"knowledge/global/churn.md": PAGES["knowledge/global/churn.md"] + "more\n"})
    invoke(["build", "--repo", str(proj.root)])
    assert not ours.exists() and not empty.exists()
    assert (copied / "work.txt").read_text() == "keep me"
    after = _tracked(proj)
    assert {k: v for k, v in after.items() if k != "knowledge/global/churn.md"} == {
        k: v for k, v in before.items() if k != "knowledge/global/churn.md"
    }
    assert (site / ".tmp-committed" / "notes.txt").read_text() == "committed work\n"


def test_pruning_never_follows_a_symlink(tmp_path: Path) -> None:
    """A symlink in out_dir to a knowl build folder (its marker matches) is not a build
    folder: neither the link nor its target is removed by pruning."""
    proj = _project(tmp_path, "keep_builds = 1\n")
    invoke(["build", "--repo", str(proj.root)])
    out = proj.root / ".knowl" / "build"
    kept = tmp_path / "kept-build"
    shutil.copytree(current_folder(out), kept)  # type: ignore[arg-type]
    (out / "zz-link").symlink_to(kept, target_is_directory=True)
    os.utime(out / "zz-link", (0, 0), follow_symlinks=False)  # the oldest, if it counted
    for i in range(3):
        proj.write(
            {"knowledge/global/revenue.md": PAGES["knowledge/global/revenue.md"] + f"v{i}\n"}
        )
        invoke(["build", "--repo", str(proj.root)])
    assert (out / "zz-link").is_symlink() and (kept / "manifest.json").is_file()


def test_builds_of_an_older_knowl_are_left_alone(tmp_path: Path) -> None:
    """Folders without a marker (from before markers) are never pruned: knowl cannot tell
    them from a folder someone put there."""
    proj = _project(tmp_path, "keep_builds = 1\n")
    invoke(["build", "--repo", str(proj.root)])
    out = proj.root / ".knowl" / "build"
    first = current_folder(out)
    assert first is not None
    (first / BUILD_MARKER).unlink()
    proj.write({"knowledge/global/revenue.md": PAGES["knowledge/global/revenue.md"] + "v\n"})
    invoke(["build", "--repo", str(proj.root)])
    assert first.is_dir() and current_folder(out) != first


# --- a symlink along out_dir, the lock, unusable output folders (red-team follow-up) ----------


def _victim(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A folder outside the project that belongs to someone else (a LevelDB, say)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    files = {"CURRENT": b"MANIFEST-000042\n", ".lock": b"someone else's lock\n", "data.log": b"x\n"}
    for name, data in files.items():
        (victim / name).write_bytes(data)
    return victim, files


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize(
    "toml, link, target",
    [
        ("", ".knowl/build", "victim"),  # poc_outdir_symlink.sh
        ("", ".knowl", "victim"),
        ("out_dir = 'site/out'\n", "site", "victim"),
        ("out_dir = 'site/out'\n", "site/out", "victim"),
        ("", ".knowl/build", "inside"),  # a link that stays in the project is refused too
    ],
)
def test_a_committed_symlink_along_out_dir_is_refused(
    tmp_path: Path, toml: str, link: str, target: str
) -> None:
    victim, files = _victim(tmp_path)
    proj = _project(tmp_path, toml)
    where = victim if target == "victim" else proj.root / "elsewhere"
    where.mkdir(exist_ok=True)
    (proj.root / link).parent.mkdir(parents=True, exist_ok=True)
    (proj.root / link).symlink_to(where, target_is_directory=True)
    proj.run_git("add", "-f", link)
    proj.commit("a link")
    result = invoke(["build", "--repo", str(proj.root)], code=2)
    assert "symlink" in result.stderr and result.stderr.count("\n") == 1
    assert _contents(victim) == files
    if target == "inside":
        assert list((proj.root / "elsewhere").iterdir()) == []
    assert (proj.root / link).is_symlink()


def test_explicit_out_through_a_symlink_builds_in_its_target(tmp_path: Path) -> None:
    proj = _project(tmp_path, "")
    real = tmp_path / "real-out"
    real.mkdir()
    (tmp_path / "out-link").symlink_to(real, target_is_directory=True)
    invoke(["build", "--repo", str(proj.root), "--out", str(tmp_path / "out-link")])
    assert (tmp_path / "out-link").is_symlink()
    assert (real / "CURRENT").is_file() and (real / OUT_MARKER).is_file()


@pytest.mark.parametrize(
    "content", [b"someone else's lock\n", b"123 host\n", b"", b"knowl-build x y\n", None]
)
def test_a_lock_knowl_did_not_write_is_never_removed(tmp_path: Path, content: bytes | None) -> None:
    proj = _project(tmp_path, "")
    out = proj.root / ".knowl" / "build"
    out.mkdir(parents=True)
    lock = out / LOCK
    if content is None:
        (tmp_path / "target").write_text("keep\n")
        lock.symlink_to(tmp_path / "target")
    else:
        lock.write_bytes(content)
    result = invoke(["build", "--repo", str(proj.root)], code=2)
    assert "not a lock knowl wrote" in result.stderr and result.stderr.count("\n") == 1
    assert lock.is_symlink() if content is None else lock.read_bytes() == content
    assert not (out / "CURRENT").exists()


def test_a_dead_knowl_lock_is_taken_over_and_other_files_stay(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    proj = _project(tmp_path, "")
    out = proj.root / ".knowl" / "build"
    out.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (out / LOCK).write_text(f"knowl-build {dead.pid} {socket.gethostname()}\n")
    (out / ".lock").write_text("an older tool's lock\n")  # not knowl's name any more
    invoke(["build", "--repo", str(proj.root)])
    assert not (out / LOCK).exists()
    assert (out / ".lock").read_text() == "an older tool's lock\n"
    assert (out / "CURRENT").is_file()


@pytest.mark.parametrize("where", ["/proc/knowl-out", "file/sub", "/dev/null", "/proc"])
def test_an_unusable_output_folder_is_one_line_naming_it(tmp_path: Path, where: str) -> None:
    proj = _project(tmp_path, "")
    (tmp_path / "file").write_text("a file\n")
    out = where if where.startswith("/") else str(tmp_path / where)
    if not os.path.isdir("/proc") and where.startswith("/proc"):
        pytest.skip("no /proc here")
    result = invoke(["build", "--repo", str(proj.root), "--out", out], code=2)
    assert result.stderr.startswith(f"knowl: error: output folder {out}")
    assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr


def test_a_failing_write_to_the_output_folder_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    proj = _project(tmp_path, "")
    out = proj.root / ".knowl" / "build"

    def full(out_dir: Path, staging: Path, *args: object) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device", str(staging / "manifest.json"))

    monkeypatch.setattr(publication, "publish", full)
    result = invoke(["build", "--repo", str(proj.root)], code=2)
    assert (
        result.stderr
        == f"knowl: error: output folder {out} cannot be used (No space left on device)\n"
    )
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]
