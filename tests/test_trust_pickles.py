"""Trust 1: no file of an artifact can make a reader run code (issue 10).

Hostile pickles of protocols 0-5 (GLOBAL and STACK_GLOBAL of os.system / builtins.eval,
dotted names through admitted modules, REDUCE / BUILD / NEWOBJ on admitted classes, INST,
OBJ, extensions, persistent ids) are spliced into each pickled file of a real artifact (the
TOC's segment list, and the pickles inside every segment's compound file), the manifest is
redone as an attacker would, and search, show, traverse, graph, verify and the MCP server
must all refuse with exit 2 (a tool error), one line, no traceback, and run nothing.
"""

from __future__ import annotations

import io
import shlex
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.core.errors import ArtifactError
from knowl_build.index import ranking, unpickler
from tests.tamper import (
    assert_refused,
    build_corpus,
    mcp_answers,
    module_corpus,
    pickle_spans,
    reader_runs,
    tampered,
    toc_segments_offset,
)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "pickles")


# --- hostile pickles, written opcode by opcode ----------------------------------------------------


def _text(proto: int, value: str) -> bytes:
    if proto == 0:
        return b"V" + value.encode("raw_unicode_escape") + b"\n"  # UNICODE
    data = value.encode()
    return b"X" + struct.pack("<I", len(data)) + data  # BINUNICODE


def _global(proto: int, module: str, name: str) -> bytes:
    if proto >= 4:  # STACK_GLOBAL resolves dotted names
        short = [b"\x8c" + bytes([len(s.encode())]) + s.encode() for s in (module, name)]
        return short[0] + short[1] + b"\x93"
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"  # GLOBAL


def _tuple(proto: int, *items: bytes) -> bytes:
    if proto >= 2 and len(items) <= 3:
        return b"".join(items) + (b")", b"\x85", b"\x86", b"\x87")[len(items)]
    return b"(" + b"".join(items) + b"t"


def _call(proto: int, func: bytes, *args: bytes) -> bytes:
    return func + _tuple(proto, *args) + b"R"  # REDUCE


def _pickle(proto: int, body: bytes) -> bytes:
    return (b"\x80" + bytes([proto]) if proto >= 2 else b"") + body + b"."


def _builtins(proto: int) -> str:
    return "__builtin__" if proto < 3 else "builtins"  # as protocols 0-2 spell it


W3 = "whoosh.codec.whoosh3"
PROTOCOLS = range(6)


def payloads(sentinel: Path) -> dict[str, Callable[[int], bytes]]:
    """Each hostile pickle by name, for a protocol; the code-running ones create `sentinel`."""
    touch = f"touch {shlex.quote(str(sentinel))}"
    code = f"open({str(sentinel)!r}, 'w').close()"

    def call(p: int, module: str, name: str, *args: bytes) -> bytes:
        return _pickle(p, _call(p, _global(p, module, name), *args))

    return {
        "GLOBAL os.system": lambda p: call(p, "os", "system", _text(p, touch)),
        "GLOBAL posix.system": lambda p: call(p, "posix", "system", _text(p, touch)),
        "GLOBAL builtins.eval": lambda p: call(p, _builtins(p), "eval", _text(p, code)),
        "GLOBAL builtins.exec": lambda p: call(p, _builtins(p), "exec", _text(p, code)),
        "__import__ chain": lambda p: _pickle(
            p,
            _call(
                p,
                _call(
                    p,
                    _global(p, _builtins(p), "getattr"),
                    _call(p, _global(p, _builtins(p), "__import__"), _text(p, "os")),
                    _text(p, "system"),
                ),
                _text(p, touch),
            ),
        ),
        "dotted through whoosh3": lambda p: call(p, W3, "compound.os.system", _text(p, touch)),
        "dotted through builtins": lambda p: call(
            p, _builtins(p), "eval.__self__.exec", _text(p, code)
        ),
        "dotted through an admitted class": lambda p: call(p, W3, "W3Segment.__init__.__globals__"),
        "private name": lambda p: call(p, "collections", "_sys.modules"),
        "INST os.system": lambda p: _pickle(p, b"(" + _text(p, touch) + b"ios\nsystem\n"),
        "OBJ os.system": lambda p: _pickle(
            p, b"(" + _global(p, "os", "system") + _text(p, touch) + b"o"
        ),
        "REDUCE admitted segment with a path": lambda p: call(
            p, W3, "W3Segment", b"N", _text(p, "../../../escape")
        ),
        "NEWOBJ admitted segment": lambda p: _pickle(
            p, _global(p, W3, "W3Segment") + _tuple(p, _text(p, "x")) + b"\x81"
        ),
        "BUILD on an admitted class": lambda p: _pickle(
            p,
            _global(p, W3, "W3Segment")
            + _tuple(p, b"N", b"}" + _text(p, "codec") + _global(p, "builtins", "int") + b"s")
            + b"b",
        ),
        "defaultdict of eval": lambda p: call(
            p, "collections", "defaultdict", _global(p, _builtins(p), "eval")
        ),
        "huge int": lambda p: call(p, _builtins(p), "int", _text(p, "9" * 5000)),
        "EXT1": lambda p: _pickle(p, b"\x82\x01"),
        "PERSID": lambda p: _pickle(p, b"Px\n"),
    }


# Under an unrestricted unpickler these run code (checked in test_the_payloads_are_live).
LIVE = {
    "GLOBAL os.system": PROTOCOLS,
    "GLOBAL posix.system": PROTOCOLS,
    "GLOBAL builtins.eval": PROTOCOLS,
    "GLOBAL builtins.exec": PROTOCOLS,
    "__import__ chain": PROTOCOLS,
    "dotted through whoosh3": range(4, 6),
    "dotted through builtins": range(4, 6),
    "INST os.system": PROTOCOLS,
    "OBJ os.system": PROTOCOLS,
}
NAMES = sorted(payloads(Path("x")))


# --- where they go -------------------------------------------------------------------------------


def sites(folder: Path) -> list[tuple[str, int]]:
    """Every pickle of the artifact: ("index/<toc>", -1) for the TOC's segment list, and
    ("index/<segment>.seg", start) for each pickle inside a compound segment file."""
    toc = next((folder / "index").glob("_MAIN_*.toc"))
    found = [(f"index/{toc.name}", -1)]
    for seg in sorted((folder / "index").glob("*.seg")):
        found += [(f"index/{seg.name}", start) for start, _end in pickle_spans(seg.read_bytes())]
    return found


def splice(name: str, start: int, payload: bytes) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        path = folder / name
        data = path.read_bytes()
        if start < 0:  # the TOC: keep the header and the skipped schema, replace the segments
            data = data[: toc_segments_offset(data)] + payload
        else:  # in place: pickle.load stops at STOP, the bytes after it stay as they were
            data = data[:start] + payload + data[start + len(payload) :]
        path.write_bytes(data)

    return change


def assert_every_reader_refuses(folder: Path, sentinel: Path) -> None:
    for name, result in reader_runs(folder).items():
        assert_refused(result, name, one_line=name != "verify")
    assert not sentinel.exists()


def whoosh_classes_untouched() -> None:
    """No BUILD reached a whoosh class (a class attribute set by a pickle would outlive it)."""
    from whoosh.codec.whoosh3 import W3Codec, W3Segment

    assert "codec" in W3Segment.__dict__ and callable(W3Segment.__dict__["codec"])
    assert not hasattr(unpickler.SegmentState, "codec") and not hasattr(W3Codec, "codec_")


# --- the tests -----------------------------------------------------------------------------------


def test_the_artifact_has_pickles_in_every_index_file(artifact: Path) -> None:
    found = sites(artifact)
    segs = {name for name, start in found if start >= 0}
    assert len(list((artifact / "index").glob("*.seg"))) == 2 == len(segs)
    assert len(found) > 20


def test_the_payloads_are_live(tmp_path: Path) -> None:
    """An unrestricted unpickler runs each LIVE payload (so refusing them proves something)."""
    script = "import pickle, sys\nfor path in sys.argv[1:]:\n    try:\n        pickle.loads(open(path, 'rb').read())\n    except Exception:\n        pass\n"
    files: list[str] = []
    sentinels: list[tuple[str, int, Path]] = []
    for name, protocols in LIVE.items():
        for proto in protocols:
            sentinel = tmp_path / f"ran-{len(files)}"
            path = tmp_path / f"payload-{len(files)}.pickle"
            path.write_bytes(payloads(sentinel)[name](proto))
            files.append(str(path))
            sentinels.append((name, proto, sentinel))
    subprocess.run([sys.executable, "-c", script, *files], check=True, cwd=tmp_path)
    assert [(n, p) for n, p, s in sentinels if not s.exists()] == []


@pytest.mark.parametrize("proto", PROTOCOLS)
@pytest.mark.parametrize("name", NAMES)
def test_a_hostile_toc_is_refused_by_every_reader(
    artifact: Path, tmp_path: Path, name: str, proto: int
) -> None:
    sentinel = tmp_path / "pwned"
    toc = sites(artifact)[0][0]
    folder = tampered(artifact, tmp_path / "evil", splice(toc, -1, payloads(sentinel)[name](proto)))
    for command, result in reader_runs(folder).items():
        assert_refused(result, command, one_line=command != "verify")
    search = reader_runs(folder)["search"].stderr
    reasons = ("never loads", "does not decode", "malformed", "damaged")
    assert any(reason in search for reason in reasons), search
    if proto in LIVE.get(name, ()):  # code it would run: refused by name, before anything
        assert "never loads" in search, search
    assert not sentinel.exists()
    whoosh_classes_untouched()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_hostile_pickles_anywhere_in_the_index_are_refused(
    artifact: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    where = tmp_path_factory.mktemp("evil")
    sentinel = where / "pwned"
    name, start = data.draw(st.sampled_from(sites(artifact)), label="site")
    payload = data.draw(st.sampled_from(NAMES), label="payload")
    proto = data.draw(st.sampled_from(PROTOCOLS), label="protocol")
    folder = tampered(
        artifact, where / "artifact", splice(name, start, payloads(sentinel)[payload](proto))
    )
    assert_every_reader_refuses(folder, sentinel)
    whoosh_classes_untouched()


def test_each_segment_file_refuses_a_pickle_that_show_never_reads(
    artifact: Path, tmp_path: Path
) -> None:
    """The last pickle of each segment (its compound directory's options) is read by no
    query; the full validation on open decodes it, so show refuses as search does."""
    sentinel = tmp_path / "pwned"
    by_file: dict[str, list[int]] = {}
    for name, start in sites(artifact):
        by_file.setdefault(name, []).append(start)
    for name, starts in sorted(by_file.items()):
        if name.endswith(".toc"):
            continue
        for start in (starts[0], starts[-1]):
            payload = payloads(sentinel)["GLOBAL os.system"](4)
            folder = tampered(
                artifact,
                tmp_path / f"evil-{len(list(tmp_path.iterdir()))}",
                splice(name, start, payload),
            )
            assert_every_reader_refuses(folder, sentinel)


@pytest.mark.parametrize("target", ["toc", "segment"])
def test_the_mcp_server_refuses_hostile_pickles(
    artifact: Path, tmp_path: Path, target: str
) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    sentinel = tmp_path / "pwned"
    found = sites(artifact)
    name, start = found[0] if target == "toc" else found[-1]
    payload = payloads(sentinel)["GLOBAL builtins.eval"](2 if target == "toc" else 5)
    folder = tampered(artifact, tmp_path / "evil", splice(name, start, payload))
    answers = mcp_answers(folder)
    for tool, answer in answers.items():
        assert answer.is_error, (tool, answer.content)
        text = answer.content[0].text
        assert "Traceback" not in text and "\n" not in text.strip(), (tool, text)
    assert not sentinel.exists()


# --- the unpickler itself -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [unpickler.BoundedUnpickler, unpickler._FastUnpickler])
def test_exact_pairs_only_whatever_the_module(kind: type) -> None:
    """Both unpicklers (the bounded one for what is not validated, the C one for what is)
    admit the same exact pairs."""
    toc = kind(io.BytesIO(), unpickler.TOC_GLOBALS)
    assert toc.find_class("__builtin__", "int") is int  # protocol 2 spelling
    assert toc.find_class("collections", "defaultdict").__name__ == "defaultdict"
    assert toc.find_class(W3, "W3Segment") is unpickler.SegmentState  # a stand-in, never the class
    for module, name in [
        (W3, "W3Segment.__init__"),
        (W3, "compound"),
        (W3, "W3LeafMatcher"),
        ("whoosh.fields", "Schema"),
        ("builtins", "set"),
        ("builtins", "eval"),
        ("collections", "OrderedDict"),
        ("copyreg", "_reconstructor"),
    ]:
        with pytest.raises(unpickler.UnsafePickle):
            toc.find_class(module, name)
    data = kind(io.BytesIO(), unpickler._DATA_GLOBALS)
    for module, name in [("builtins", "int"), (W3, "W3Segment"), ("collections", "defaultdict")]:
        with pytest.raises(unpickler.UnsafePickle):
            data.find_class(module, name)


def test_the_searcher_refuses_without_validation(artifact: Path, tmp_path: Path) -> None:
    """The restricted unpickler guards every read, validated or not (the memo only spares
    work): opening a hostile index directly is an ArtifactError, not code."""
    sentinel = tmp_path / "pwned"
    toc = sites(artifact)[0][0]
    folder = tampered(
        artifact, tmp_path / "evil", splice(toc, -1, payloads(sentinel)["GLOBAL os.system"](2))
    )
    with pytest.raises(ArtifactError, match="never loads"):
        ranking.Searcher(folder / "index")
    assert not sentinel.exists()


@pytest.mark.parametrize("segid", ["../../../etc/passwd", "UPPER", "", "a" * 65, "x/y"])
def test_segment_ids_that_would_name_other_files_are_refused(
    artifact: Path, tmp_path: Path, segid: str
) -> None:
    import pickle

    from whoosh.codec.whoosh3 import W3Codec, W3Segment

    segment = W3Segment(W3Codec(), "MAIN", 1, "abc")
    segment._fieldlengths = {}
    segment.segid = segid
    payload = pickle.dumps([segment], 5)
    toc = sites(artifact)[0][0]
    folder = tampered(artifact, tmp_path / "evil", splice(toc, -1, payload))
    with pytest.raises(ArtifactError, match="names a segment knowl never writes"):
        ranking.Searcher(folder / "index")


def test_a_build_over_a_hostile_previous_index_rebuilds_it(tmp_path: Path) -> None:
    """The build reads the previous index to update it: a hostile pickle there is refused
    too, and the build writes a full index instead of failing or running it."""
    from tests.helpers import Project, invoke
    from tests.tamper import rehash

    sentinel = tmp_path / "pwned"
    current = build_corpus(tmp_path / "kb")
    name, start = sites(current)[-1]
    splice(name, start, payloads(sentinel)["GLOBAL os.system"](5))(current)
    rehash(current)
    proj = Project.__new__(Project)
    proj.root, proj.git, proj.ticks = tmp_path / "kb", True, 5
    proj.write({"knowledge/global/shared.md": "---\nsummary: Shared guidance\n---\nNew text.\n"})
    proj.commit("shared")
    invoke(["build", "--repo", str(proj.root)])
    assert "ok" in invoke(["verify", "--repo", str(proj.root)]).stdout
    assert not sentinel.exists()
