"""A reader recalls its configuration's `out_dir` and `[peers] paths` (`app.config_memo`):
only while knowl.toml, pyproject.toml or the `--config` file are as this machine read them,
only once their stamps have settled, never with extra secret patterns, and only from a memo
this machine sealed in the user's cache; anything else in its place is no memo.

Stamps that have settled: a file's change time cannot be set back (os.utime sets the access
and modification times only), so a test that needs a memo written moves the clock the
reader takes its read time from (`project.time`) `SETTLE_NS` and more ahead. The settling
rule itself runs as written, and every stamp `recall` compares is the file's real one,
change time included; `SETTLE_NS` is never patched. The tests of unsettled files use the
real clock."""

from __future__ import annotations

import json
import os
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.app import config_memo, project
from knowl_build.app.project import Locator
from knowl_build.app.reading import CurrentReader
from knowl_build.core import config_loader
from knowl_build.core.config import Config
from knowl_build.support.clock import SETTLE_NS
from knowl_build.support.trust import machine_key
from tests.helpers import Project, invoke
from tests.tamper import run_cli

KB202_OFF = '[rules]\nKB202 = "off"\n'
AN_HOUR_NS = 3600 * 1_000_000_000


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KNOWL_CACHE_KEY", raising=False)


def _settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader's clock a minute ahead: every file written so far has settled for it."""
    ahead = types.SimpleNamespace(time_ns=lambda: time.time_ns() + 20 * SETTLE_NS)
    monkeypatch.setattr(project, "time", ahead)


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The roots the configuration is read for from now on (`read_config` imports the
    loader's `load_config` when called, so the patch reaches it)."""
    calls: list[Path] = []
    real = config_loader.load_config

    def counting(root: Path, explicit: Path | None = None) -> Config:
        calls.append(root)
        return real(root, explicit)

    monkeypatch.setattr(config_loader, "load_config", counting)
    return calls


def _no_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(root: Path, explicit: Path | None = None) -> Config:
        raise AssertionError(f"the configuration of {root} was read, not recalled")

    monkeypatch.setattr(config_loader, "load_config", refuse)


def _memos(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "cache" / "knowl-build" / "configs"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _places(root: Path, config: Path | None = None) -> project.ReaderPlaces:
    return Locator(root, config).reader_places()


def _page(summary: str) -> str:
    return f"---\ntitle: Revenue\nsummary: {summary}\n---\nRevenue counts completed orders.\n"


def _two_builds(tmp_path: Path) -> Project:
    """A project with a build in out/aa (summary Alpha) and one in out/bb (summary Bravo);
    knowl.toml names out/aa, with the modification time of an hour ago."""
    proj = Project(tmp_path / "kb")
    for folder, summary in (("out/aa", "Alpha"), ("out/bb", "Bravo")):
        proj.write(
            {
                "knowl.toml": f'out_dir = "{folder}"\n{KB202_OFF}',
                "knowledge/global/revenue.md": _page(summary),
            }
        )
        proj.commit(summary)
        invoke(["build", "--repo", str(proj.root)])
    proj.write({"knowl.toml": f'out_dir = "out/aa"\n{KB202_OFF}'})
    _age(proj.root / "knowl.toml")
    return proj


def _age(path: Path) -> None:
    old = time.time_ns() - AN_HOUR_NS
    os.utime(path, ns=(old, old))


def _show(root: Path) -> str:
    shown = json.loads(invoke(["show", "revenue", "--repo", str(root), "--json"]).stdout)
    summary = shown["summary"]
    assert isinstance(summary, str)
    return summary


# --- 1. a second read recalls, and answers as the first ----------------------------------------


def test_a_second_read_recalls_out_dir_and_peers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "kb", git=False).write(
        {"knowl.toml": 'out_dir = "out/here"\n[peers]\npaths = ["../other", "peer/b"]\n'}
    )
    _settled(monkeypatch)
    reads = _reads(monkeypatch)
    first = _places(proj.root)
    assert reads == [proj.root.resolve()]
    assert first.out_dir == proj.root.resolve() / "out" / "here"
    assert first.peers == (proj.root.resolve() / "../other", proj.root.resolve() / "peer/b")
    assert len(_memos(tmp_path)) == 1
    _no_reads(monkeypatch)
    assert _places(proj.root) == first
    assert _places(proj.root) == first  # a recall writes nothing and stays valid


def test_search_and_show_answer_the_same_with_and_without_the_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = _two_builds(tmp_path)
    _settled(monkeypatch)
    search = ["search", "revenue", "--repo", str(proj.root), "--json"]
    show = ["show", "revenue", "--repo", str(proj.root), "--json"]
    assert _memos(tmp_path) == []
    searched, shown = invoke(search).stdout, invoke(show).stdout  # read, then remembered
    assert len(_memos(tmp_path)) == 1
    assert "Alpha" in searched and "Alpha" in shown
    _no_reads(monkeypatch)
    assert invoke(search).stdout == searched
    assert invoke(show).stdout == shown


# --- 2. an edit is seen on the next read ---------------------------------------------------


def test_an_edit_of_the_same_size_and_modification_time_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hardest edit: same size, same inode (written in place), modification time put
    back; only the change time moves, and that is enough."""
    proj = _two_builds(tmp_path)
    toml = proj.root / "knowl.toml"
    _settled(monkeypatch)
    assert _show(proj.root) == "Alpha"
    assert _show(proj.root) == "Alpha"
    assert len(_memos(tmp_path)) == 1
    before = os.stat(toml)
    with toml.open("r+", encoding="utf-8") as handle:  # in place: the inode stays
        text = handle.read().replace("out/aa", "out/bb")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    os.utime(toml, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(toml)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    assert _show(proj.root) == "Bravo"
    reads = _reads(monkeypatch)
    assert _show(proj.root) == "Bravo"  # remembered anew (the clock is ahead)
    assert reads == []


def test_an_edit_of_the_peers_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = Project(tmp_path / "kb", git=False).write({"knowl.toml": '[peers]\npaths = ["p1"]\n'})
    _settled(monkeypatch)
    assert _places(proj.root).peers == (proj.root.resolve() / "p1",)
    assert _memos(tmp_path)
    proj.write({"knowl.toml": '[peers]\npaths = ["p2"]\n'})
    _age(proj.root / "knowl.toml")
    assert _places(proj.root).peers == (proj.root.resolve() / "p2",)


def test_a_pyproject_beside_knowl_toml_fails_after_a_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = _two_builds(tmp_path)
    _settled(monkeypatch)
    assert _show(proj.root) == "Alpha"
    assert len(_memos(tmp_path)) == 1
    proj.write({"pyproject.toml": '[tool.knowl]\nout_dir = "out/bb"\n'})
    _age(proj.root / "pyproject.toml")
    for args in (["search", "revenue"], ["show", "revenue"]):
        result = run_cli([*args, "--repo", str(proj.root)])
        assert result.exit_code == 2, result.output
        assert "both present" in result.stderr
        assert "Traceback" not in result.output
    # A pyproject.toml without [tool.knowl] is no configuration, but still a new file.
    proj.write({"pyproject.toml": '[project]\nname = "x"\n'})
    assert _show(proj.root) == "Alpha"


def test_removing_knowl_toml_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = Project(tmp_path / "kb", git=False).write({"knowl.toml": 'out_dir = "out/aa"\n'})
    _settled(monkeypatch)
    root = proj.root.resolve()
    assert _places(proj.root).out_dir == root / "out/aa"
    assert _memos(tmp_path)
    proj.remove("knowl.toml")
    assert _places(proj.root).out_dir == root / ".knowl/build"
    # [tool.knowl] in pyproject.toml, the other place the configuration is read from.
    proj.write({"pyproject.toml": '[tool.knowl]\nout_dir = "out/py"\n'})
    _age(proj.root / "pyproject.toml")
    assert _places(proj.root).out_dir == root / "out/py"
    assert _places(proj.root).out_dir == root / "out/py"
    proj.write({"pyproject.toml": '[tool.knowl]\nout_dir = "out/pz"\n'})
    assert _places(proj.root).out_dir == root / "out/pz"


def test_a_file_removed_while_it_is_read_is_not_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "kb", git=False).write({"knowl.toml": 'out_dir = "out/aa"\n'})
    _settled(monkeypatch)
    real = project.read_config

    def read_then_remove(root: Path, explicit: Path | None = None) -> Config:
        config = real(root, explicit)
        if (root / "knowl.toml").exists():
            (root / "knowl.toml").unlink()  # another process, between the read and keep
        return config

    monkeypatch.setattr(project, "read_config", read_then_remove)
    assert _places(proj.root).out_dir == proj.root.resolve() / "out/aa"  # as read
    assert _places(proj.root).out_dir == proj.root.resolve() / ".knowl/build"


def test_a_long_lived_reader_follows_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP server's CurrentReader asks for the places on every call: recalled while
    knowl.toml stays, read again (and the other build opened) once it is edited."""
    proj = _two_builds(tmp_path)
    _settled(monkeypatch)
    current = CurrentReader(Locator(proj.root), None)
    try:
        assert current.get().show("revenue")["summary"] == "Alpha"
        first = current.get()
        assert current.get() is first  # recalled, the same build: the same reader
        proj.write({"knowl.toml": f'out_dir = "out/bb"\n{KB202_OFF}'})
        assert current.get() is not first
        assert current.get().show("revenue")["summary"] == "Bravo"
    finally:
        current.close()


# --- 3, 4. what is never remembered ---------------------------------------------------------


def test_a_file_just_written_is_not_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real clock: knowl.toml was written just now. Setting its modification time an hour
    back changes nothing, its change time is still now."""
    proj = Project(tmp_path / "kb", git=False).write({"knowl.toml": 'out_dir = "out/aa"\n'})
    reads = _reads(monkeypatch)
    assert _places(proj.root).out_dir == proj.root.resolve() / "out/aa"
    _age(proj.root / "knowl.toml")
    assert _places(proj.root).out_dir == proj.root.resolve() / "out/aa"
    assert len(reads) == 2
    assert _memos(tmp_path) == []
    # A pyproject.toml written just now beside a settled knowl.toml: the same.
    proj.write({"pyproject.toml": '[project]\nname = "x"\n'})
    ahead = types.SimpleNamespace(time_ns=lambda: os.stat(proj.root / "pyproject.toml").st_ctime_ns)
    monkeypatch.setattr(project, "time", ahead)
    _places(proj.root)
    assert _memos(tmp_path) == []


def test_extra_secret_patterns_are_never_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "kb", git=False).write(
        {"knowl.toml": 'out_dir = "out/aa"\n[security]\nextra_patterns = ["corp.internal"]\n'}
    )
    _settled(monkeypatch)
    reads = _reads(monkeypatch)
    for _ in range(3):
        assert _places(proj.root).out_dir == proj.root.resolve() / "out/aa"
    assert len(reads) == 3
    assert _memos(tmp_path) == []


# --- 5. anything but this machine's memo is no memo -----------------------------------------


def _remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Project, Path]:
    """A project configured with out/real, and its memo."""
    proj = Project(tmp_path / "kb", git=False).write(
        {"knowl.toml": 'out_dir = "out/real"\n[peers]\npaths = ["peer"]\n'}
    )
    _settled(monkeypatch)
    _places(proj.root)
    (memo,) = _memos(tmp_path)
    return proj, memo


def _sealed(data: bytes) -> bytes:
    sealer = machine_key().sealer(config_memo.MEMO_SEAL)
    assert sealer is not None
    return sealer.wrap(data)


def _memo_json(root: Path, **changes: object) -> bytes:
    memo: dict[str, object] = {
        "state": config_memo._state(root, None),
        "out_dir": "out/fake",
        "peers": ["fake"],
    }
    memo.update(changes)
    return json.dumps(memo).encode()


BAD_MEMOS: dict[str, Callable[[Path, bytes], bytes]] = {
    "empty": lambda root, good: b"",
    "unsealed JSON": lambda root, good: _memo_json(root),
    "JSON under a seal line of its own": lambda root, good: b"0" * 64 + b"\n" + _memo_json(root),
    "forged content, the seal kept": lambda root, good: good.replace(b"out/real", b"out/fake"),
    "truncated": lambda root, good: good[: len(good) // 2],
    "seal only": lambda root, good: good.partition(b"\n")[0],
    "sealed for another purpose": lambda root, good: (
        machine_key().sealer("check-memo").wrap(_memo_json(root))  # type: ignore[union-attr]
    ),
    "sealed garbage": lambda root, good: _sealed(b"{not json"),
    "sealed invalid UTF-8": lambda root, good: _sealed(b'{"out_dir": "\xff"}'),
    "sealed deep nesting": lambda root, good: _sealed(b"[" * 100_000 + b"]" * 100_000),
    "sealed list": lambda root, good: _sealed(b'["out/fake", ["fake"]]'),
    "sealed without state": lambda root, good: _sealed(b'{"out_dir": "out/fake", "peers": []}'),
    "sealed, another project's state": lambda root, good: _sealed(
        _memo_json(root, state={**config_memo._state(root, None), "root": "/elsewhere"})
    ),
    "sealed, another version's state": lambda root, good: _sealed(
        _memo_json(root, state={**config_memo._state(root, None), "knowl": "0.0.0"})
    ),
    "sealed, out_dir a number": lambda root, good: _sealed(_memo_json(root, out_dir=7)),
    "sealed, out_dir null": lambda root, good: _sealed(_memo_json(root, out_dir=None)),
    "sealed, peers a string": lambda root, good: _sealed(_memo_json(root, peers="fake")),
    "sealed, a peer a number": lambda root, good: _sealed(_memo_json(root, peers=["a", 1])),
    "sealed, peers missing": lambda root, good: _sealed(
        json.dumps({"state": config_memo._state(root, None), "out_dir": "out/fake"}).encode()
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_MEMOS))
def test_a_memo_this_machine_did_not_write_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    proj, memo = _remembered(tmp_path, monkeypatch)
    root = proj.root.resolve()
    memo.write_bytes(BAD_MEMOS[name](root, memo.read_bytes()))
    reads = _reads(monkeypatch)
    places = _places(proj.root)
    assert (places.out_dir, places.peers) == (root / "out/real", (root / "peer",))
    assert len(reads) == 1
    result = run_cli(["search", "revenue", "--repo", str(proj.root)])
    assert "Traceback" not in result.output and "internal error" not in result.output
    assert "out/fake" not in result.output
    # The memo read again now, from the configuration, answers the next reader.
    memo.write_bytes(BAD_MEMOS[name](root, memo.read_bytes()))  # spoil it once more
    _places(proj.root)
    _no_reads(monkeypatch)
    assert _places(proj.root) == places


@pytest.mark.parametrize("kind", ["folder", "symlink", "fifo"])
def test_a_memo_that_is_no_regular_file_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    proj, memo = _remembered(tmp_path, monkeypatch)
    elsewhere = tmp_path / "valid-memo"
    elsewhere.write_bytes(_sealed(_memo_json(proj.root.resolve())))
    memo.unlink()
    if kind == "folder":
        memo.mkdir()
    elif kind == "symlink":  # to a memo with a valid seal: read through no link
        memo.symlink_to(elsewhere)
    else:
        os.mkfifo(memo)  # never waited on
    reads = _reads(monkeypatch)
    assert _places(proj.root).out_dir == proj.root.resolve() / "out/real"
    assert len(reads) == 1


def test_a_memo_sealed_under_another_cache_key_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "kb", git=False).write({"knowl.toml": 'out_dir = "out/real"\n'})
    root = proj.root.resolve()
    _settled(monkeypatch)
    monkeypatch.setenv("KNOWL_CACHE_KEY", "a shared CI secret, one")
    _places(proj.root)
    (memo,) = _memos(tmp_path)
    memo.write_bytes(_sealed(_memo_json(root)))  # out/fake, under the first key
    monkeypatch.setenv("KNOWL_CACHE_KEY", "a shared CI secret, two")
    reads = _reads(monkeypatch)
    assert _places(proj.root).out_dir == root / "out/real"
    monkeypatch.delenv("KNOWL_CACHE_KEY")  # the machine's own key file
    memo.write_bytes(memo.read_bytes().replace(b"out/real", b"out/fake"))
    assert _places(proj.root).out_dir == root / "out/real"
    assert len(reads) == 2
    # A key too short to use: no sealer, so nothing is recalled and nothing written.
    monkeypatch.setenv("KNOWL_CACHE_KEY", "short")
    for folder in _memos(tmp_path):
        folder.unlink()
    assert _places(proj.root).out_dir == root / "out/real"
    assert _memos(tmp_path) == []
    assert len(reads) == 3


# --- 6. --config is a memo of its own --------------------------------------------------------


def test_an_explicit_config_file_is_remembered_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "kb", git=False).write(
        {"knowl.toml": 'out_dir = "out/default"\n', "ci/alt.toml": 'out_dir = "out/alt"\n'}
    )
    root = proj.root.resolve()
    alt = proj.root / "ci" / "alt.toml"
    _settled(monkeypatch)
    assert _places(proj.root).out_dir == root / "out/default"
    assert _places(proj.root, alt).out_dir == root / "out/alt"
    assert _places(proj.root, Path("..") / tmp_path / "kb" / "ci" / "alt.toml").out_dir == (
        root / "out/alt"
    )
    assert len(_memos(tmp_path)) == 2
    # knowl.toml given as --config is read alone (no pyproject.toml check): a memo of its own.
    assert _places(proj.root, proj.root / "knowl.toml").out_dir == root / "out/default"
    assert len(_memos(tmp_path)) == 3
    _no_reads(monkeypatch)
    assert _places(proj.root).out_dir == root / "out/default"
    assert _places(proj.root, alt).out_dir == root / "out/alt"
    monkeypatch.undo()  # the real loader and clock again (the memos stay)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _settled(monkeypatch)
    # An edit of the explicit file is seen there; the default's memo still answers.
    proj.write({"ci/alt.toml": 'out_dir = "out/alt2"\n'})
    reads = _reads(monkeypatch)
    assert _places(proj.root, alt).out_dir == root / "out/alt2"
    assert _places(proj.root).out_dir == root / "out/default"
    assert len(reads) == 1
    # With --config, knowl.toml is not read: an edit of it leaves the explicit memo valid.
    proj.write({"knowl.toml": 'out_dir = "out/default2"\n'})
    assert _places(proj.root, alt).out_dir == root / "out/alt2"
    assert _places(proj.root).out_dir == root / "out/default2"
    assert len(reads) == 2
    # CLI: --config before the command, as the group takes it.
    result = invoke(["--config", str(alt), "show", "revenue", "--repo", str(proj.root)], code=2)
    assert "out/alt2" in result.stderr  # no build there: the edited file's out_dir


# --- 7. nothing in the repository is a memo ---------------------------------------------------


def test_nothing_in_the_repository_can_plant_a_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attacker who writes the repository (a pull request, a cloned project) knows the
    memo's name, its format and the project's state, and may ship a key of their own, in every
    folder a cache could be looked for in. The memo is looked for in the user's cache only,
    sealed under a key that never is in the repository."""
    victim = Project(tmp_path / "kb", git=False).write({"knowl.toml": 'out_dir = "out/real"\n'})
    root = victim.root.resolve()
    state = config_memo._state(root, None)
    name = config_memo._memo_path(state).name
    attacker_key = "the attacker's own key, shipped"
    monkeypatch.setenv("KNOWL_CACHE_KEY", attacker_key)
    planted = (
        machine_key()
        .sealer(config_memo.MEMO_SEAL)
        .wrap(  # type: ignore[union-attr]
            json.dumps({"state": state, "out_dir": "../../outside", "peers": ["/etc"]}).encode()
        )
    )
    monkeypatch.delenv("KNOWL_CACHE_KEY")
    for folder in (".knowl", ".cache/knowl-build", "knowl-build", ".knowl/build", "."):
        victim.write(
            {
                f"{folder}/configs/{name}": planted,
                f"{folder}/{name}": planted,
                f"{folder}/machine-key": attacker_key.encode()[:32].ljust(32, b"k"),
            }
        )
    for key in (".cache/knowl-build/machine-key", ".knowl/machine-key"):
        os.chmod(victim.root / key, 0o600)
    # The reader runs in the repository, HOME and a relative XDG_CACHE_HOME pointing into
    # it (XDG says a relative one is ignored).
    monkeypatch.chdir(victim.root)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _settled(monkeypatch)
    reads = _reads(monkeypatch)
    for cache in (str(tmp_path / "cache"), ".cache", "knowl-build/.."):
        monkeypatch.setenv("XDG_CACHE_HOME", cache)
        places = Locator(None, None, cwd=victim.root).reader_places()
        assert places.out_dir == root / "out/real"
        assert places.peers == ()
    assert len(reads) == 2  # the real cache and HOME's: each read once, then remembered
    # And a memo this machine sealed for another project answers nothing here.
    other = Project(tmp_path / "other", git=False).write({"knowl.toml": 'out_dir = "out/o"\n'})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _places(other.root)
    other_memo = config_memo._memo_path(config_memo._state(other.root.resolve(), None))
    mine = config_memo._memo_path(state)
    mine.write_bytes(other_memo.read_bytes())
    assert _places(victim.root).out_dir == root / "out/real"
    assert _places(other.root).out_dir == other.root.resolve() / "out/o"


def test_an_out_dir_the_configuration_refuses_is_never_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a memo holds is what the loader accepted: a knowl.toml with an out_dir outside
    the project fails every time (exit 2), with or without a memo of the valid one before."""
    proj = Project(tmp_path / "kb", git=False).write({"knowl.toml": 'out_dir = "out/ok"\n'})
    _settled(monkeypatch)
    assert _places(proj.root).out_dir == proj.root.resolve() / "out/ok"
    assert _memos(tmp_path)
    for hostile in ("../outside", "/etc", "out/../../outside", ".git/refs/heads"):
        proj.write({"knowl.toml": f'out_dir = "{hostile}"\n'})
        _age(proj.root / "knowl.toml")
        for _ in range(2):
            result = run_cli(["search", "revenue", "--repo", str(proj.root)])
            assert result.exit_code == 2, (hostile, result.output)
            assert "out_dir" in result.stderr
            assert "Traceback" not in result.output


# --- no cache, no home: only slower ----------------------------------------------------------


def test_a_cache_that_cannot_be_written_only_costs_a_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = Project(tmp_path / "kb", git=False).write({"knowl.toml": 'out_dir = "out/aa"\n'})
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder would be\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setenv("KNOWL_CACHE_KEY", "a shared CI secret, long enough")
    _settled(monkeypatch)
    reads = _reads(monkeypatch)
    for _ in range(2):
        assert _places(proj.root).out_dir == proj.root.resolve() / "out/aa"
    assert len(reads) == 2


def test_no_home_folder_only_costs_a_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Imported here: optional (POSIX only, as the uid without a passwd entry it stands for).
    import pwd

    proj = Project(tmp_path / "kb", git=False).write({"knowl.toml": 'out_dir = "out/aa"\n'})
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME", raising=False)

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    with pytest.raises(RuntimeError):
        Path.home()  # the condition: no home folder can be found
    monkeypatch.setenv("KNOWL_CACHE_KEY", "a shared CI secret, long enough")
    _settled(monkeypatch)
    assert _places(proj.root).out_dir == proj.root.resolve() / "out/aa"
