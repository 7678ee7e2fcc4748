"""knowl trusts only what this machine wrote (issue 10, red-team follow-up).

A pull request can commit anything under `.knowl/` (`git add -f`): a check memo that says the
tree is clean, a parse cache that maps a page holding a token to the parse of a clean one, a
history replay that hides a change, a previous build whose records a build would copy. The
keys these are looked up by are computable, so each is trusted only with a seal (HMAC) made
with this machine's key (or `KNOWL_CACHE_KEY`). Each attack is run as the red team ran it: the
attacker builds the forgery on their own machine (their own key, so even their seals are
right for them), commits it, and CI (another machine: another `XDG_CACHE_HOME`) checks a fresh
clone. Caches this machine wrote are still used.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import knowl_build.pipeline.pages as pages
import knowl_build.pipeline.stages.findings as findings
from knowl_build.artifacts.layout import BUILD_MARKER, BUILD_SEAL, MANIFEST, RECORDS
from knowl_build.artifacts.publication import current_folder
from knowl_build.artifacts.validate import validate
from knowl_build.core.config_loader import load_config
from knowl_build.core.model import ParsedPage
from knowl_build.history.replay import HISTORY_SEAL
from knowl_build.pipeline.analysis import Analysis
from knowl_build.pipeline.cache import CACHE_FORMAT
from knowl_build.pipeline.check import MEMO_CACHE, MEMO_SEAL
from knowl_build.pipeline.inputs import read_inputs
from knowl_build.support import trust
from knowl_build.support.clock import today as utc_today
from tests.helpers import SEMANTICS, Project, dump_json, invoke, record_lines

SECRET = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
CLEAN = "x" * len(SECRET)
BAD_PAGE = f"---\nsummary: bad page\nconfidence: 7\n---\nToken {SECRET} and [[missing-page]]\n"
EXPECTED = ["KB002", "KB103", "KB401"]
KB202_OFF = "[rules]\nKB202 = 'off'\n"


class Machines:
    """Switch between machines: each has a cache home (and so a key) of its own."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp_path = tmp_path
        self.monkeypatch = monkeypatch

    def use(self, name: str, shared_key: str | None = None) -> Path:
        home = self.tmp_path / f"cache-{name}"
        self.monkeypatch.setenv("XDG_CACHE_HOME", str(home))
        if shared_key is None:
            self.monkeypatch.delenv(trust.ENV_KEY, raising=False)
        else:
            self.monkeypatch.setenv(trust.ENV_KEY, shared_key)
        return home

    def key(self) -> bytes:
        secret = trust.machine_key().secret
        assert secret is not None
        return secret


@pytest.fixture
def machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machines]:
    yield Machines(tmp_path, monkeypatch)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often the pipeline analysed the project and how many pages it parsed."""
    counts = {"analyses": 0, "parsed": 0}
    parse = pages._parse_uncached

    check_project = findings.check_project  # the check stage: once per analysis

    def counting_analyse(*args: Any, **kwargs: Any) -> Analysis:
        counts["analyses"] += 1
        return check_project(*args, **kwargs)

    def counting_parse(
        todo: dict[str, bytes], *args: Any
    ) -> Iterator[list[tuple[str, ParsedPage, bytes | None]]]:
        counts["parsed"] += len(todo)
        return parse(todo, *args)

    monkeypatch.setattr(findings, "check_project", counting_analyse)
    monkeypatch.setattr(pages, "_parse_uncached", counting_parse)
    return counts


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def _commit_forced(proj: Project, *paths: str, message: str) -> None:
    """Commit what `.gitignore` hides, as `git add -f` lets anyone do."""
    proj.run_git("add", "-A")
    proj.run_git("add", "-f", *paths)
    proj.commit(message)


def _clone(proj: Project, target: Path) -> Path:
    _git(proj.root.parent, "clone", "-q", str(proj.root), str(target))
    return target


def _export(proj: Project, target: Path) -> Path:
    """The commit's files without git (`git archive`, as a CI checkout without git gets)."""
    archive = target.with_suffix(".tar")
    _git(proj.root, "archive", "-o", str(archive), "HEAD")
    target.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    return target


def _codes(root: Path, code: int = 1, command: str = "check") -> list[str]:
    result = invoke([command, "--repo", str(root), "--format", "json"], code=code)
    return sorted(
        {d["code"] for d in json.loads(result.stdout)["diagnostics"]} - {"KB202", "KB009"}
    )


def _reseal_memo(path: Path, change: Callable[[dict[str, object]], None]) -> None:
    """The attacker's edit of their own memo, sealed again with their own key."""
    sealer = trust.Sealer(trust.machine_key().secret or b"", MEMO_SEAL)
    memo = json.loads(sealer.unwrap(path.read_bytes()) or b"")
    change(memo)
    path.write_bytes(sealer.wrap(json.dumps(memo).encode()))


# --- the check memo ---------------------------------------------------------------------------


def test_committed_check_memo_does_not_pass_the_gate(tmp_path: Path, machines: Machines) -> None:
    """The red team's poc_check_memo.sh, where the memo's key is computable: a checkout
    without git (the key then holds no commit). The attacker's memo, emptied and sealed with
    the attacker's key, is committed; CI still reports every error and publishes nothing."""
    machines.use("attacker")
    attacker = Project(tmp_path / "attacker")
    attacker.write({"knowledge/global/bad.md": BAD_PAGE, "knowl.toml": KB202_OFF})
    attacker.commit("bad page")
    # The attacker computes the memo for the tree CI will see (no git) on their machine.
    preview = _export(attacker, tmp_path / "preview")
    assert _codes(preview) == EXPECTED
    memo = preview / ".knowl" / "cache" / MEMO_CACHE
    _reseal_memo(memo, lambda m: m.update(diagnostics=[]))
    assert _codes(preview, code=0) == []  # the attacker's own machine trusts its own seal
    (attacker.root / ".knowl" / "cache").mkdir(parents=True)
    shutil.copyfile(memo, attacker.root / ".knowl" / "cache" / MEMO_CACHE)
    _commit_forced(attacker, ".knowl/cache/check.json", message="cache")

    machines.use("ci")
    ci = _export(attacker, tmp_path / "ci")
    assert (ci / ".knowl" / "cache" / MEMO_CACHE).read_bytes() == memo.read_bytes()
    assert _codes(ci) == EXPECTED
    sarif = invoke(["check", "--repo", str(ci), "--format", "sarif"], code=1)
    assert len(json.loads(sarif.stdout)["runs"][0]["results"]) >= 3
    assert _codes(ci, command="build") == EXPECTED  # refused
    assert not (ci / ".knowl" / "build" / "CURRENT").exists()


def test_memo_with_the_right_key_from_another_machine_is_ignored(
    tmp_path: Path, machines: Machines
) -> None:
    """With git, the memo's key holds HEAD; one computed for the clone's HEAD (and sealed by
    whoever made it) is still not this machine's."""
    machines.use("ci")
    proj = Project(tmp_path / "kb")
    proj.write({"knowledge/global/bad.md": BAD_PAGE, "knowl.toml": KB202_OFF})
    proj.commit("bad page")
    ci = _clone(proj, tmp_path / "ci")
    machines.use("attacker")
    assert _codes(ci) == EXPECTED
    _reseal_memo(ci / ".knowl" / "cache" / MEMO_CACHE, lambda m: m.update(diagnostics=[]))
    machines.use("ci")
    config = load_config(ci)
    memo = json.loads((ci / ".knowl" / "cache" / MEMO_CACHE).read_bytes().partition(b"\n")[2])
    assert memo["key"] == read_inputs(ci, config).fingerprint(config, utc_today())
    assert _codes(ci) == EXPECTED


# --- the parse cache --------------------------------------------------------------------------


def test_committed_parse_cache_does_not_hide_a_secret(tmp_path: Path, machines: Machines) -> None:
    """The red team's poc_cache_poison.sh: the cache maps the page with the token to the
    parse of the clean page (the line sealed again with the attacker's own key)."""
    machines.use("attacker")
    attacker = Project(tmp_path / "attacker")
    page = attacker.root / "knowledge" / "global" / "deploy.md"
    attacker.write({"knowledge/global/deploy.md": f"---\nsummary: deploy\n---\nUse {CLEAN} now.\n"})
    invoke(["check", "--repo", str(attacker.root)])
    cache = attacker.root / ".knowl" / "cache" / "pages.jsonl"
    header, line, _ = cache.read_bytes().split(b"\n")
    assert json.loads(header)["format"] == CACHE_FORMAT
    _tag, _digest, clean_parse = line.split(b" ", 2)
    evil = page.read_bytes().replace(CLEAN.encode(), SECRET.encode())
    page.write_bytes(evil)
    key = json.loads(header)["key"]
    sealer = trust.Sealer(machines.key(), f"parse-cache\0{key}")
    rest = hashlib.sha256(evil).hexdigest().encode() + b" " + clean_parse
    cache.write_bytes(header + b"\n" + sealer.seal(rest) + b" " + rest + b"\n")
    assert _codes(attacker.root, code=0) == []  # the attacker's machine trusts its own seal
    (attacker.root / ".knowl" / ".gitignore").unlink()
    _commit_forced(attacker, ".knowl/cache/pages.jsonl", message="docs: deploy notes")
    assert ".knowl/cache/pages.jsonl" in attacker.run_git("ls-files")

    machines.use("ci")
    ci = _clone(attacker, tmp_path / "ci")
    assert _codes(ci) == ["KB401"]
    assert _codes(ci, command="build") == ["KB401"]
    assert not (ci / ".knowl" / "build" / "CURRENT").exists()
    published = invoke(["build", "--repo", str(ci), "--allow-errors"])
    assert SECRET not in published.output
    folder = current_folder(ci / ".knowl" / "build")
    assert folder is not None
    assert "KB401" in (folder / "diagnostics.json").read_text()


def test_a_damaged_or_foreign_line_is_ignored_not_fatal(
    project: Callable[..., Project], counted: dict[str, int]
) -> None:
    proj = project({f"knowledge/global/p{i}.md": f"# Page {i}\n" for i in range(3)})
    memo = proj.root / ".knowl" / "cache" / MEMO_CACHE
    invoke(["check", "--repo", str(proj.root)])
    assert counted["parsed"] == 3
    cache = proj.root / ".knowl" / "cache" / "pages.jsonl"
    header, *lines, end = cache.read_bytes().split(b"\n")
    assert end == b"" and len(lines) == 3
    lines[0] = lines[0].replace(b"Page", b"Paje", 1)  # content changed under its seal
    lines[1] = b"0" * 64 + lines[1][64:]  # a seal made with another key
    cache.write_bytes(b"\n".join([header, *lines, b"half a li"]))  # and a torn append
    memo.unlink()
    invoke(["check", "--repo", str(proj.root)])
    assert counted["parsed"] == 3 + 2  # the third line was still good
    memo.unlink()
    invoke(["check", "--repo", str(proj.root)])
    assert counted["parsed"] == 5  # the cache was rewritten: every line sealed again
    assert cache.read_bytes().endswith(b"\n") and b"half a li" not in cache.read_bytes()


def test_a_cache_file_that_is_a_symlink_is_not_read(
    project: Callable[..., Project], counted: dict[str, int]
) -> None:
    """A committed link to a device (or any file) is not a cache: never read, never hangs."""
    proj = project({"knowledge/global/a.md": "# A\n", "knowl.toml": KB202_OFF})
    cache = proj.root / ".knowl" / "cache"
    cache.mkdir(parents=True)
    for name in ("check.json", "pages.jsonl", "history.json"):
        (cache / name).symlink_to("/dev/zero")
    invoke(["check", "--repo", str(proj.root)])
    assert counted["analyses"] == 1
    assert not (cache / "check.json").is_symlink()  # replaced by a sealed memo, not written through


# --- the history replay ---------------------------------------------------------------------------


HISTORY_PAGE = (
    "---\nsummary: Revenue\nsl_refs: [shop_pg.orders.total_revenue]\n"
    "meta: {last_validated_at: 2026-01-01T13:00:00Z}\n---\nRevenue.\n"
)


def test_committed_history_replay_does_not_hide_a_change(
    tmp_path: Path, machines: Machines
) -> None:
    """The measure changed after the page was validated (KB203). The attacker commits a
    replay, made at the previous commit and edited to say the measure never changed: the
    clone continues from it only if it trusts it."""
    machines.use("attacker")
    attacker = Project(tmp_path / "attacker")
    toml = KB202_OFF + "KB203 = 'error'\n"  # a gate that fails on definitions changed since review
    attacker.write({**SEMANTICS, "knowledge/global/revenue.md": HISTORY_PAGE, "knowl.toml": toml})
    attacker.commit("revenue")
    orders = "semantics/shop/orders.yaml"
    attacker.write({orders: SEMANTICS[orders].replace("sum(amount)", "sum(amount) * 2")})
    attacker.commit("double the revenue")
    assert _codes(attacker.root) == ["KB203"]
    history = attacker.root / ".knowl" / "cache" / "history.json"
    sealer = trust.Sealer(machines.key(), HISTORY_SEAL)
    replay = json.loads(sealer.unwrap(history.read_bytes()) or b"")
    for row in replay["replay"]["entities"].values():
        row[1] = None  # changed_in: never
    history.write_bytes(sealer.wrap(json.dumps(replay).encode()))
    _commit_forced(attacker, ".knowl/cache/history.json", message="cache")
    (attacker.root / ".knowl" / "cache" / MEMO_CACHE).unlink()
    assert _codes(attacker.root, code=0) == []  # the attacker's machine trusts its own seal

    machines.use("ci")
    ci = _clone(attacker, tmp_path / "ci")
    assert _codes(ci) == ["KB203"]


def test_history_replay_written_here_is_continued(
    tmp_path: Path, machines: Machines, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowl_build.core.config import Config
    from knowl_build.history.git import GitRepo
    from knowl_build.history.log import GitHistory
    from knowl_build.history.replay import trace
    from knowl_build.pipeline.analysis import load_layer

    machines.use("here")
    proj = Project(tmp_path / "kb").write({**SEMANTICS, "knowledge/global/a.md": "# A\n"})
    proj.commit("one")
    cache = tmp_path / "history.json"
    logs: list[object] = []

    def replay() -> None:
        config = Config()
        repo = GitRepo.find(proj.root)
        assert repo is not None
        reader = GitHistory(repo)
        log = reader.log

        def counting_log(pathspecs: list[str], since: str | None = None) -> Any:
            logs.append(since)
            return log(pathspecs, since=since)

        monkeypatch.setattr(reader, "log", counting_log)
        try:
            trace(reader, config, load_layer(read_inputs(proj.root, config)), cache=cache)
        finally:
            reader.close()

    replay()
    first = proj.run_git("rev-parse", "HEAD").strip()
    proj.write({"knowledge/global/b.md": "# B\n"})
    proj.commit("two")
    replay()
    assert logs == [None, first]  # the second replay read only the newer commits
    machines.use("elsewhere")
    replay()
    assert logs[-1] is None  # another machine's replay is not continued


# --- the previous build ---------------------------------------------------------------------------


def _forge_build(folder: Path, change: Callable[[bytes], bytes]) -> None:
    """Change the records and make the catalog and manifest agree, as an attacker would."""
    from tests.tamper import rehash, rewrite_records

    rewrite_records(folder, [change(line) for line in record_lines(folder)])
    rehash(folder)
    assert validate(folder) == []
    _reseal_build(folder)


def _reseal_build(folder: Path) -> None:
    """Seal the forged manifest with the attacker's own key (they have no other)."""
    sealer = trust.Sealer(trust.machine_key().secret or b"", BUILD_SEAL)
    token = (folder / BUILD_MARKER).read_bytes().split(b"\n")[0]
    tag = sealer.seal((folder / MANIFEST).read_bytes())
    (folder / BUILD_MARKER).write_bytes(token + b"\n" + tag + b"\n")


def test_committed_previous_build_is_not_reused(tmp_path: Path, machines: Machines) -> None:
    """A committed `.knowl/build` whose record of an unchanged page says something the page
    does not: an incremental build copies records whose signatures match, so CI would
    publish the forgery if it reused a build it did not make."""
    machines.use("attacker")
    attacker = Project(tmp_path / "attacker")
    attacker.write(
        {
            "knowledge/global/deploy.md": "---\nsummary: Deploy with the pipeline\n---\nUse the pipeline.\n",
            "knowledge/global/other.md": "# Other\n",
            "knowl.toml": KB202_OFF,
        }
    )
    attacker.commit("pages")
    invoke(["build", "--repo", str(attacker.root)])
    out = attacker.root / ".knowl" / "build"
    folder = current_folder(out)
    assert folder is not None
    _forge_build(
        folder, lambda data: data.replace(b"Use the pipeline.", b"Deploy by hand, token in #ops.")
    )
    (attacker.root / ".knowl" / ".gitignore").unlink()
    _commit_forced(attacker, ".knowl/build", message="build")
    # On the attacker's machine (whose seal it carries) the forgery is reused and published.
    control = _clone(attacker, tmp_path / "control")
    invoke(["build", "--repo", str(control)])
    reused = current_folder(control / ".knowl" / "build")
    assert reused is not None and b"by hand" in b"".join(record_lines(reused))

    machines.use("ci")
    ci = _clone(attacker, tmp_path / "ci")
    assert (ci / ".knowl" / "build" / "CURRENT").read_text() == (out / "CURRENT").read_text()
    built = invoke(["build", "--repo", str(ci), "--format", "json"])
    current = current_folder(ci / ".knowl" / "build")
    assert current is not None and current.name != folder.name
    manifest = json.loads((current / "manifest.json").read_bytes())
    assert manifest["records"]["reused"] == 0 and manifest["index"]["incremental"] is False
    assert b"by hand" not in b"".join(record_lines(current))
    assert b"Use the pipeline." in b"".join(record_lines(current))
    assert "by hand" not in built.output


def test_committed_previous_build_is_no_answer_for_an_unchanged_tree(
    tmp_path: Path, machines: Machines
) -> None:
    """Without git the no-op path compares only inputs and the day: the attacker's build
    of the same tree, with its findings emptied, would be the whole answer of `knowl build`."""
    machines.use("attacker")
    attacker = Project(tmp_path / "attacker")
    attacker.write({"knowledge/global/bad.md": BAD_PAGE, "knowl.toml": KB202_OFF})
    attacker.commit("bad page")
    preview = _export(attacker, tmp_path / "preview")
    invoke(["build", "--repo", str(preview), "--allow-errors"])
    folder = current_folder(preview / ".knowl" / "build")
    assert folder is not None

    def quiet(found: Path) -> None:
        document = {
            "version": 1,
            "diagnostics": [],
            "summary": {"error": 0, "warning": 0, "info": 0},
        }
        (found / "diagnostics.json").write_bytes(dump_json(document))

    quiet(folder)
    from tests.tamper import rehash

    rehash(folder)
    _reseal_build(folder)
    assert _codes(preview, code=0, command="build") == []  # the attacker's machine: a no-op
    shutil.copytree(preview / ".knowl" / "build", attacker.root / ".knowl" / "build")
    _commit_forced(attacker, ".knowl/build", message="build")

    machines.use("ci")
    ci = _export(attacker, tmp_path / "ci")
    result = invoke(["build", "--repo", str(ci), "--format", "json"], code=1)
    assert (
        sorted({d["code"] for d in json.loads(result.stdout)["diagnostics"]} - {"KB009"})
        == EXPECTED
    )
    assert current_folder(ci / ".knowl" / "build") == ci / ".knowl" / "build" / folder.name


# --- what this machine wrote is used ----------------------------------------------------------


def test_warm_check_answers_from_the_memo(
    project: Callable[..., Project], counted: dict[str, int], machines: Machines
) -> None:
    machines.use("here")
    proj = project({"knowledge/global/bad.md": BAD_PAGE, "knowl.toml": KB202_OFF})
    assert _codes(proj.root) == EXPECTED
    assert counted == {"analyses": 1, "parsed": 1}
    assert _codes(proj.root) == EXPECTED
    assert counted == {"analyses": 1, "parsed": 1}  # the memo answered
    memo = proj.root / ".knowl" / "cache" / MEMO_CACHE
    memo.write_bytes(memo.read_bytes().replace(b"KB401", b"KB999"))  # changed under its seal
    assert _codes(proj.root) == EXPECTED
    assert counted == {"analyses": 2, "parsed": 1}  # analysed again; pages from the parse cache


def test_builds_reuse_what_this_machine_built(
    project: Callable[..., Project], machines: Machines
) -> None:
    from knowl_build.pipeline.publish import build

    machines.use("here")
    proj = project({f"knowledge/global/p{i}.md": f"# Page {i}\n" for i in range(3)})
    config = load_config(proj.root)
    assert build(proj.root, config).status == "published"
    assert build(proj.root, config).status == "no-op"
    proj.write({"knowledge/global/p0.md": "# Page 0, edited\n"})
    again = build(proj.root, config)
    assert again.status == "published" and again.incremental
    assert again.folder is not None
    manifest = json.loads((again.folder / "manifest.json").read_bytes())
    assert manifest["records"] == {"reused": 2, "built": 1}
    # A sealed build changed afterwards is not reused: its manifest no longer matches.
    (again.folder / RECORDS).write_bytes(b"")
    proj.write({"knowledge/global/p1.md": "# Page 1, edited\n"})
    last = build(proj.root, config)
    assert last.status == "published" and not last.incremental


def test_a_shared_key_shares_caches_between_machines(
    project: Callable[..., Project], counted: dict[str, int], machines: Machines
) -> None:
    """Two machines (two cache homes) with the same KNOWL_CACHE_KEY trust each other's
    caches and builds; a third without it trusts neither."""
    from knowl_build.pipeline.publish import build

    secret = "ci-secret-" + "k" * 24
    machines.use("runner-1", secret)
    proj = project({"knowledge/global/bad.md": BAD_PAGE, "knowl.toml": KB202_OFF})
    assert _codes(proj.root) == EXPECTED
    config = load_config(proj.root)
    assert build(proj.root, config, allow_errors=True).status == "published"
    assert counted["analyses"] == 2 and counted["parsed"] == 1

    machines.use("runner-2", secret)
    assert _codes(proj.root) == EXPECTED
    assert counted["analyses"] == 2  # runner-1's memo answered
    assert build(proj.root, config, allow_errors=True).status == "no-op"

    machines.use("laptop")
    assert _codes(proj.root) == EXPECTED
    assert counted == {"analyses": 3, "parsed": 2}  # nothing of the runners' was trusted
    rebuilt = build(proj.root, config, allow_errors=True)
    assert rebuilt.status == "published" and not rebuilt.incremental
    assert not (machines.tmp_path / "cache-runner-1" / "knowl-build" / "machine-key").exists()


# --- the key ---------------------------------------------------------------------------------


def test_the_machine_key_is_private_and_made_once(machines: Machines) -> None:
    home = machines.use("fresh")
    first = trust.machine_key()
    path = home / "knowl-build" / trust.KEY_FILE
    assert first.secret is not None and len(first.secret) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert trust.machine_key() == first
    assert sorted(p.name for p in path.parent.iterdir()) == [trust.KEY_FILE]  # no temporary left
    path.chmod(0o644)
    loose = trust.machine_key()
    assert loose.secret is None and "chmod 600" in (loose.problem or "")
    path.chmod(0o600)
    path.write_bytes(b"short")
    assert "damaged" in (trust.machine_key().problem or "")


def test_a_short_shared_key_is_refused(machines: Machines) -> None:
    machines.use("ci", "short")
    key = trust.machine_key()
    assert key.secret is None and trust.ENV_KEY in (key.problem or "")


def test_without_a_usable_key_caches_are_off_and_builds_start_over(
    project: Callable[..., Project], counted: dict[str, int], machines: Machines, tmp_path: Path
) -> None:
    from knowl_build.pipeline.check import check
    from knowl_build.pipeline.publish import build

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache home would be\n")
    machines.monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    machines.monkeypatch.delenv(trust.ENV_KEY, raising=False)
    proj = project({"knowledge/global/a.md": "# A\n", "knowl.toml": KB202_OFF})
    config = load_config(proj.root)
    for _ in range(2):
        result = check(proj.root, config)
        assert [n for n in result.notices if "cannot seal its caches" in n] == result.notices
        assert len(result.notices) == 1
    assert counted == {"analyses": 2, "parsed": 2}
    assert not (proj.root / ".knowl" / "cache" / "pages.jsonl").exists()
    for _ in range(2):
        built = build(proj.root, config)
        assert built.status == "published" and not built.incremental
        assert len(built.notices) == 1
    cli = invoke(["check", "--repo", str(proj.root)])
    assert cli.stderr.count("cannot seal its caches") == 1
