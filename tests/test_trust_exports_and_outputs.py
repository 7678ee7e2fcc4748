"""Trust, round three (issue 21, items 6, 7, 10 and 11): exports and output folders.

- The DOT and GraphML exports make control characters visible (`\\x1b`), as the text output
  does; both stay valid (GraphML parses as XML 1.0).
- No output folder (`out_dir`, `--out` of build and site) lies inside the git directory or a
  hooks folder.
- A bad output path is one line and exit 2, for every command that takes one.
- A full disk loses nothing: the last good artifact answers, no half file is left, and the
  next run, with space again, succeeds.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path

import networkx as nx
import pytest
from click.testing import Result

from knowl_build.artifacts import graph as graphs
from knowl_build.history import gitdir
from knowl_build.site.output import MANIFEST
from tests.helpers import Project, invoke

CONTROLS = "".join(chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)])
RAW = re.compile("[\x00-\x1f\x7f-\x9f\ufffe\uffff]")
KB202_OFF = "[rules]\nKB202 = 'off'\n"
PAGES = {
    "knowl.toml": KB202_OFF,
    "knowledge/global/revenue.md": "---\nsummary: Revenue is the sum of orders\n---\n# Revenue\n",
}
# DOT as knowl writes it: quoted strings whose only escapes are backslash pairs.
_DOT_STRING = r'"(?:[^"\\\n]|\\.)*"'
_DOT_LINE = re.compile(
    rf"  {_DOT_STRING}(?: -> {_DOT_STRING})? \[label={_DOT_STRING}(?:, shape=(?:box|ellipse))?\];"
)


# --- 6. graph exports escape control characters ---------------------------------------------


def _dot_lines(dot: str) -> list[str]:
    lines = dot.splitlines()
    assert lines[:3] == [
        "digraph knowledge {",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=10];',
    ]
    assert lines[-1] == "}"
    for line in lines[3:-1]:
        assert _DOT_LINE.fullmatch(line), line
    return lines[3:-1]


def _dot_unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def test_graph_dot_and_graphml_escape_control_characters(
    project: Callable[..., Project],
) -> None:
    # Every control character (and U+FFFE, which XML 1.0 refuses too) in node ids, labels and
    # edge kinds: nothing raw comes out, and each reads back as its visible escape.
    hostile = f'a{CONTROLS}\ufffe"\\z'
    shown = "a" + "".join(f"\\x{ord(c):02x}" for c in CONTROLS) + '\\ufffe"\\z'
    g = graphs.make_graph(
        {
            f"page:global:{hostile}": {"type": "page", "label": f"title {hostile}"},
            "entity:orders": {"type": "entity", "label": "orders", "tags": ["x\x1by", "z"]},
        },
        {(f"page:global:{hostile}", "entity:orders"): {"sl_ref"}},
    )
    dot = graphs.to_dot(g)
    assert not RAW.search(dot.replace("\n", ""))
    entity, node, edge = _dot_lines(dot)
    quoted = re.findall(_DOT_STRING, node)
    assert [_dot_unquote(q) for q in quoted] == [f"page:global:{shown}", f"title {shown}"]
    assert [_dot_unquote(q) for q in re.findall(_DOT_STRING, edge)] == [
        f"page:global:{shown}",
        "entity:orders",
        "sl_ref",
    ]
    assert '"entity:orders"' in entity

    graphml = graphs.to_graphml(g)
    assert not RAW.search(graphml.replace("\n", ""))
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    root = ET.fromstring(graphml)  # well-formed XML 1.0, or this raises
    keys = {k.get("id"): k.get("attr.name") for k in root.iterfind("g:key", ns)}
    nodes = {
        n.get("id"): {keys[d.get("key")]: d.text for d in n.iterfind("g:data", ns)}
        for n in root.iterfind("g:graph/g:node", ns)
    }
    assert nodes[f"page:global:{shown}"]["label"] == f"title {shown}"
    assert nodes["entity:orders"]["tags"] == "x\\x1by,z"
    (edge_element,) = root.iterfind("g:graph/g:edge", ns)
    assert edge_element.get("source") == f"page:global:{shown}"
    assert nx.parse_graphml(graphml).number_of_nodes() == 2

    # End to end: a title holding ESC and BEL, through `knowl graph`.
    proj = project(
        {
            **PAGES,
            "knowledge/global/bell.md": "---\nsummary: Rings\n---\n# Ring\x07 \x1b[2J \x9b1m\n",
        }
    )
    invoke(["build", "--repo", str(proj.root)])
    out = invoke(["graph", "--repo", str(proj.root), "--format", "dot"]).stdout
    assert not RAW.search(out.replace("\n", ""))
    assert 'label="Ring\\\\x07 \\\\x1b[2J \\\\x9b1m"' in out
    _dot_lines(out)
    out = invoke(["graph", "--repo", str(proj.root), "--format", "graphml"]).stdout
    assert not RAW.search(out.replace("\n", ""))
    assert ">Ring\\x07 \\x1b[2J \\x9b1m<" in out
    ET.fromstring(out)
    # JSON keeps the title as it is (encoded, never raw on a terminal for C0).
    assert "Ring\\u0007 \\u001b[2J" in invoke(["graph", "--repo", str(proj.root)]).stdout


# --- 7. no output folder inside the git directory or a hooks folder ---------------------------


def _listing(folder: Path) -> dict[str, bytes | None]:
    """Every file under `folder` with its bytes, and every folder (None)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else None
        for p in folder.rglob("*")
    }


def _one_line_error(result: Result, *parts: str) -> None:
    assert result.stderr.startswith("knowl: error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    for part in parts:
        assert part in result.stderr, result.stderr


def _git_works(proj: Project) -> None:
    proj.run_git("for-each-ref")
    proj.run_git("status", "--porcelain")
    proj.run_git("log", "-1")


@pytest.mark.parametrize("out_dir", [".git", ".git/refs/heads", ".GIT/objects/kb", "sub/.git/x"])
def test_out_dir_inside_git_dir_refused(project: Callable[..., Project], out_dir: str) -> None:
    proj = project({**PAGES, "knowl.toml": f"out_dir = {out_dir!r}\n{KB202_OFF}"})
    git_before = _listing(proj.root / ".git")
    for command in (["build"], ["check"], ["site"], ["search", "x"]):
        result = invoke([*command, "--repo", str(proj.root)], code=2)
        _one_line_error(result, "knowl.toml: 'out_dir':", "outside the git directory")
    assert _listing(proj.root / ".git") == git_before
    _git_works(proj)


def _separate_git_dir(tmp_path: Path) -> tuple[Project, Path]:
    """A project whose `.git` is a gitfile naming a git directory called `meta` elsewhere."""
    root, meta = tmp_path / "kb", tmp_path / "store" / "meta"
    root.mkdir()
    meta.parent.mkdir()
    subprocess.run(
        ["git", "init", "-q", "-b", "main", f"--separate-git-dir={meta}", str(root)], check=True
    )
    proj = Project(root, git=False)
    proj.git = True
    proj.write(PAGES).commit("initial")
    return proj, meta


def test_build_and_site_out_inside_git_dir_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --out of build and site, wherever git keeps its directory: `.git` itself, through a
    # symlink, a gitfile's target, a worktree's own and common directory, and GIT_DIR.
    proj, meta = _separate_git_dir(tmp_path)
    invoke(["build", "--repo", str(proj.root)])
    worktree = tmp_path / "wt"
    proj.run_git("worktree", "add", "-q", str(worktree))
    wt = Project(worktree, git=False)
    wt.git = True
    invoke(["build", "--repo", str(wt.root)])
    (tmp_path / "link").symlink_to(meta)
    cases = [
        (proj, meta / "refs" / "heads", "the git directory"),
        (proj, tmp_path / "link" / "refs" / "heads", "the git directory"),
        (proj, meta / "hooks", "the git directory"),
        (wt, meta / "worktrees" / "wt" / "kb", "the git directory"),
        (wt, meta / "objects" / "kb", "the git directory"),
    ]
    before = _listing(meta)
    for owner, out, what in cases:
        result = invoke(["build", "--repo", str(owner.root), "--out", str(out)], code=2)
        # A link given as --out is followed once, and the folder it leads to named.
        shown = os.path.realpath(out)
        _one_line_error(result, f"output folder {shown} lies inside {what}", str(meta))
        result = invoke(["site", "--repo", str(owner.root), "--out", str(out)], code=2)
        _one_line_error(result, "the site folder must be outside", what, str(meta))
    assert _listing(meta) == before
    _git_works(proj)
    _git_works(wt)

    # GIT_DIR names a git directory that no `.git` leads to.
    elsewhere = tmp_path / "elsewhere.d"
    subprocess.run(["git", "init", "-q", "--bare", str(elsewhere)], check=True)
    plain = Project(tmp_path / "plain", git=False).write(PAGES)
    monkeypatch.setenv("GIT_DIR", str(elsewhere))
    monkeypatch.setenv("GIT_WORK_TREE", str(plain.root))
    out = elsewhere / "refs" / "heads"
    result = invoke(["build", "--repo", str(plain.root), "--out", str(out)], code=2)
    _one_line_error(result, f"lies inside the git directory {elsewhere}")
    assert not (out / "CURRENT").exists()


def test_git_folders_found_without_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where git cannot answer (not installed, a repository it refuses to open), the folders
    # are found as git finds them: the gitfile, the worktree's common directory.
    proj, meta = _separate_git_dir(tmp_path)
    proj.run_git("worktree", "add", "-q", str(tmp_path / "wt"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert gitdir.git_folders(proj.root) == [
        (meta.resolve(), gitdir.GIT_DIRECTORY),
        (meta.resolve() / "hooks", gitdir.HOOKS_FOLDER),
    ]
    found = dict(gitdir.git_folders(tmp_path / "wt" / "knowledge"))
    assert found[meta.resolve() / "worktrees" / "wt"] == gitdir.GIT_DIRECTORY
    assert found[meta.resolve()] == gitdir.GIT_DIRECTORY
    assert gitdir.git_folders(tmp_path) == []


def test_site_out_dir_inside_hooks_refused(project: Callable[..., Project], tmp_path: Path) -> None:
    proj = project(PAGES)
    invoke(["build", "--repo", str(proj.root)])
    hooks = tmp_path / "shared-hooks"
    hooks.mkdir()
    for configured, folder in ((".githooks", proj.root / ".githooks"), (str(hooks), hooks)):
        proj.run_git("config", "core.hooksPath", configured)
        for out in (folder, folder / "site"):
            result = invoke(["site", "--repo", str(proj.root), "--out", str(out)], code=2)
            _one_line_error(
                result, f"{out}: the site folder must be outside the git hooks folder {folder}"
            )
            result = invoke(["build", "--repo", str(proj.root), "--out", str(out)], code=2)
            _one_line_error(result, f"lies inside the git hooks folder {folder}")
        assert not folder.exists() or not any(folder.iterdir())
    # The default hooks folder is inside the git directory.
    proj.run_git("config", "--unset", "core.hooksPath")
    out = proj.root / ".git" / "hooks" / "site"
    result = invoke(["site", "--repo", str(proj.root), "--out", str(out)], code=2)
    _one_line_error(result, "the site folder must be outside the git directory")
    assert not out.exists()
    _git_works(proj)


# --- mounting a small file system (items 10 and 11) ------------------------------------------


@pytest.fixture
def tmpfs() -> Iterator[Callable[..., Path]]:
    """`tmpfs(folder, size, *options)` mounts a tmpfs there (root only; the test is skipped
    with the reason otherwise); every one mounted is unmounted when the test ends."""
    mounted: list[Path] = []

    def mount(folder: Path, size: str = "1m", *options: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root")
        folder.mkdir(parents=True, exist_ok=True)
        opts = ",".join([f"size={size}", "mode=0755", *options])
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in reversed(mounted):
        if subprocess.run(["umount", str(folder)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(ballast: Path, leave: int) -> None:
    """Fill the file system of `ballast` up, then give back `leave` bytes of it."""
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        block = b"\0" * 65536
        while block:
            try:
                os.write(fd, block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                block = block[: len(block) // 2]
    finally:
        os.close(fd)
    os.truncate(ballast, max(ballast.stat().st_size - leave, 0))


# --- 10. a bad output path is one line, for every command that takes one -----------------------

OUTPUT_COMMANDS = {
    "build --out": (["build", "--out"], "out"),
    "site --out": (["site", "--out"], "out"),
    "check --sarif": (["check", "--sarif"], "knowl.sarif"),
    "build --sarif": (["build", "--sarif"], "knowl.sarif"),
}


@pytest.mark.parametrize("command", list(OUTPUT_COMMANDS))
def test_every_bad_out_is_one_line(
    project: Callable[..., Project],
    tmp_path: Path,
    tmpfs: Callable[..., Path],
    command: str,
) -> None:
    args, name = OUTPUT_COMMANDS[command]
    proj = project(PAGES)
    invoke(["build", "--repo", str(proj.root)])  # the site renders the current build
    (tmp_path / "a-file").write_text("in the way\n")
    (tmp_path / "a-folder").mkdir()
    in_the_way = tmp_path / ("a-folder" if name.endswith(".sarif") else "a-file")
    if os.geteuid() == 0:
        read_only = tmpfs(tmp_path / "read-only", "64k", "ro")
    else:
        read_only = tmp_path / "read-only"
        read_only.mkdir()
        read_only.chmod(0o555)
    bad = [
        in_the_way,  # a file where a folder goes, a folder where a file goes
        tmp_path / "a-file" / name,  # a file on the way
        read_only / name,
        tmp_path / ("x" * 300),  # a name longer than any file system's
        tmp_path / ("x" * 300) / name,
        tmp_path / ("deep/" * 1000) / name,  # a path longer than the system's
    ]
    if os.path.isdir("/proc/self"):
        bad.append(Path("/proc") / f"knowl-{name}")
    try:
        for path in bad:
            result = invoke([*args, str(path), "--repo", str(proj.root)], code=2)
            _one_line_error(result, path.name)
            assert "internal error" not in result.stderr and "Usage:" not in result.stderr
        assert not list(read_only.iterdir())
        assert (tmp_path / "a-file").read_text() == "in the way\n"
    finally:
        if os.geteuid() != 0:
            read_only.chmod(0o755)


# --- 11. a full disk loses nothing ----------------------------------------------------------

# Enough pages that a build needs far more room than any of the gaps left below.
MANY = {
    f"knowledge/global/topic-{n}.md": (
        f"---\nsummary: Topic {n} explains revenue figure {n}\n---\n# Topic {n}\n"
        + " ".join(f"word{n}x{m}" for m in range(200))
        + "\n"
    )
    for n in range(30)
}
GAPS = [0, 4096, 16384, 40960]  # bytes left free: each fails a different write


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def _search_ids(proj: Project, text: str) -> set[str]:
    result = invoke(["search", text, "--repo", str(proj.root), "--json", "--limit", "100"])
    return {hit["page"] for hit in json.loads(result.stdout)["hits"]}


def test_disk_full_build_loses_nothing(
    project: Callable[..., Project], tmpfs: Callable[..., Path]
) -> None:
    proj = project({**PAGES, **MANY})
    out = tmpfs(proj.root / ".knowl" / "build", "2m")
    invoke(["build", "--repo", str(proj.root)])
    good = (out / "CURRENT").read_text()
    before = _search_ids(proj, "revenue")
    assert "topic-3" in before
    proj.write({"knowledge/global/added.md": "---\nsummary: Added revenue page\n---\n# Added\n"})
    proj.commit("add a page")
    ballast = out / "ballast"
    for gap in GAPS:
        _fill(ballast, gap)
        result = invoke(["build", "--repo", str(proj.root)], code=2)
        _one_line_error(result, "No space left on device")
        assert "internal error" not in result.stderr
        # The last good build is still current and answers; nothing half made is left.
        assert (out / "CURRENT").read_text() == good
        assert _search_ids(proj, "revenue") == before
        invoke(["verify", "--repo", str(proj.root)])
        assert _names(out) == {".knowl-out", "CURRENT", good.strip(), "ballast"}, gap
    ballast.unlink()
    invoke(["build", "--repo", str(proj.root)])
    assert (out / "CURRENT").read_text() != good
    assert _search_ids(proj, "revenue") == before | {"added"}
    invoke(["verify", "--repo", str(proj.root)])


def test_disk_full_site_loses_nothing(
    project: Callable[..., Project], tmpfs: Callable[..., Path]
) -> None:
    proj = project({**PAGES, **MANY})
    site = tmpfs(proj.root / ".knowl" / "site", "2m")
    invoke(["build", "--repo", str(proj.root)])
    invoke(["site", "--repo", str(proj.root)])
    before = _search_ids(proj, "revenue")
    assert (site / "pages" / "topic-3.html").is_file()
    # A change that renders every file again: the title of the site.
    proj.write({"knowl.toml": KB202_OFF + "[site]\ntitle = 'Renamed knowledge'\n"})
    proj.write({"knowledge/global/added.md": "---\nsummary: Added revenue page\n---\n# Added\n"})
    proj.commit("add a page, rename the site")
    invoke(["build", "--repo", str(proj.root)])
    ballast = site / "ballast"
    for gap in GAPS:
        _fill(ballast, gap)
        result = invoke(["site", "--repo", str(proj.root)], code=2)
        _one_line_error(result, f"site folder {site}", "No space left on device")
        # Every file is whole (an old one or a new one), no temporary file is left, and the
        # artifact the site is made from still answers.
        for path in site.rglob("*"):
            assert not path.name.endswith(".tmp"), path
            if path.suffix == ".html":
                assert path.read_text(encoding="utf-8").rstrip().endswith("</html>"), path
            elif path.suffix == ".json":
                json.loads(path.read_text(encoding="utf-8"))
        assert _search_ids(proj, "revenue") == before | {"added"}
    ballast.unlink()
    invoke(["site", "--repo", str(proj.root)])
    assert (site / "pages" / "added.html").is_file()
    for path in site.rglob("*.html"):
        assert "Renamed knowledge" in path.read_text(encoding="utf-8"), path
    assert not [p for p in site.rglob("*") if p.name.endswith(".tmp")]


def test_disk_full_site_then_room_succeeds(
    project: Callable[..., Project], tmpfs: Callable[..., Path]
) -> None:
    """A first site that fails on a full disk leaves a folder that is still knowl's (its
    marker is written first): once there is room, the next `knowl site` finishes it."""
    proj = project({**PAGES, **MANY})
    disk = tmpfs(proj.root.parent / "disk", "2m")
    invoke(["build", "--repo", str(proj.root)])
    ballast = disk / "ballast"
    for gap in GAPS[:3]:
        site = disk / f"site-{gap}"
        _fill(ballast, gap)
        result = invoke(["site", "--repo", str(proj.root), "--out", str(site)], code=2)
        _one_line_error(result, "No space left on device")
        # Half written, or nothing at all: either way a folder the next run may finish.
        assert not site.exists() or not any(site.iterdir()) or (site / MANIFEST).is_file()
        assert not [p for p in disk.rglob("*") if p.name.endswith(".tmp")]
        ballast.unlink()
        invoke(["site", "--repo", str(proj.root), "--out", str(site)])
        assert (site / "pages" / "topic-3.html").is_file()
        for path in site.rglob("*.html"):
            assert path.read_text(encoding="utf-8").rstrip().endswith("</html>"), path
        assert json.loads((site / MANIFEST).read_text())["files"]
        shutil.rmtree(site)  # room for the next one


def test_a_site_marker_knowl_did_not_write_deletes_nothing(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    """A `.knowl-site.json` planted among a user's files, naming them, makes knowl write its
    site there, but never delete a file it did not leave as it is."""
    proj = project(PAGES)
    invoke(["build", "--repo", str(proj.root)])
    site = tmp_path / "theirs"
    (site / "pages").mkdir(parents=True)
    mine = {"notes.html": b"my notes\n", "pages/old.html": b"my old page\n"}
    for name, data in mine.items():
        (site / name).write_bytes(data)
    forged = {name: ["x", len(data), 1] for name, data in mine.items()}
    (site / MANIFEST).write_text(json.dumps({"format": 1, "files": forged}))
    invoke(["site", "--repo", str(proj.root), "--out", str(site)])
    for name, data in mine.items():
        assert (site / name).read_bytes() == data, name


def test_disk_full_store_loses_nothing(tmp_path: Path, tmpfs: Callable[..., Path]) -> None:
    # The project itself on a small disk: the page's own folder is what fills up.
    disk = tmpfs(tmp_path / "disk", "4m")
    proj = Project(disk / "kb").write({**PAGES, **MANY})
    proj.commit("initial")
    invoke(["build", "--repo", str(proj.root)])
    before = _search_ids(proj, "revenue")
    pages = _listing(proj.root / "knowledge")
    store = ["store", "--repo", str(proj.root), "--category", "fact", "--title", "Refunds"]
    store += ["--content", "Refunds lower net revenue."]
    for gap in (0, 2048):
        _fill(disk / "ballast", gap)
        result = invoke(store, code=2)
        _one_line_error(
            result,
            "knowledge/global/refunds.md: cannot be written (No space left on device)",
            "nothing was written",
        )
        assert _listing(proj.root / "knowledge") == pages  # no page, no temporary file
        assert _search_ids(proj, "revenue") == before
    (disk / "ballast").unlink()
    invoke(store)
    assert _search_ids(proj, "revenue") == before | {"refunds"}
    assert proj.run_git("status", "--porcelain") == "?? knowledge/global/refunds.md\n"


def test_disk_full_anywhere_is_one_line(
    project: Callable[..., Project], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A full disk that no folder's handler names (here: a write that fails in the middle of
    # a check) still ends the run in one line and exit 2, in the one place errors become
    # exit codes, and in the SARIF log asked for.
    from knowl_build.app import checking

    proj = project(PAGES)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checking, "check", full)
    sarif = tmp_path / "knowl.sarif"
    result = invoke(["check", "--repo", str(proj.root), "--sarif", str(sarif)], code=2)
    assert result.stderr == (
        "knowl: error: a write failed (No space left on device); nothing was half "
        "written: free some space and run the command again\n"
    )
    (run,) = json.loads(sarif.read_text())["runs"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert "No space left on device" in notes[0]["message"]["text"]
    assert "internal error" not in notes[0]["message"]["text"]
