"""Trust 1, continued: no file of an artifact can make a reader exhaust its memory (issue 10).

CPython's C unpickler keeps its memo in an array as long as the largest memo index a pickle
names: a 336-byte TOC (or a 9-byte pickle inside a segment) with `LONG_BINPUT 2**29` made
every reader allocate 8 GB, and `knowl verify` said ok. Untrusted pickles are now decoded by a
bounded pure-Python unpickler (memo indexes, lengths and operations bounded); the C unpickler
reads only index files that the full validation decoded in that very state.

Memory is measured with tracemalloc (the C unpickler's memo is a traced allocation), with a
memo index small enough that the old code would have allocated only 256 MB.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowl_build.artifacts import memo, opening, validate
from knowl_build.core.errors import ArtifactError
from knowl_build.index import ranking, unpickler
from knowl_build.index.stats import summed
from knowl_build.reader import Reader
from knowl_build.reader.view import ArtifactView
from tests.tamper import (
    assert_refused,
    module_corpus,
    peak,
    pickle_spans,
    reader_runs,
    rehash,
    tampered,
    toc_segments_offset,
)

# Under the C unpickler, LONG_BINPUT at this index resizes the memo to 2 * IDX pointers.
IDX = 1 << 24
BOUND = 32 << 20  # what reading a hostile index may allocate, at most, in these tests


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "limits")


def _memo_toc(folder: Path) -> None:
    """The red team's TOC: the real segment list, then LONG_BINPUT IDX of a fresh list."""
    toc = next((folder / "index").glob("_MAIN_*.toc"))
    data = toc.read_bytes()
    at = toc_segments_offset(data)
    segments = pickle.loads(data[at:])  # our own artifact: the attacker's tools load it so
    body = pickle.dumps(segments, 5)[11:]  # without its FRAME: frames are optional
    toc.write_bytes(data[:at] + b"\x80\x05" + body[:-1] + b"]r" + struct.pack("<I", IDX) + b"0.")


def _memo_seg(folder: Path) -> None:
    """The red team's segment: a pickle in the segment (the first of 9 bytes or more: a
    posting block's header, since the index holds no position lists) replaced by PROTO,
    EMPTY_LIST, LONG_BINPUT IDX, as many EMPTY_LISTs as keep its length, STOP."""
    seg = sorted((folder / "index").glob("*.seg"))[0]
    data = bytearray(seg.read_bytes())
    for start, end in pickle_spans(bytes(data)):
        if end - start >= 9:
            bomb = b"\x80\x05]r" + struct.pack("<I", IDX)
            data[start:end] = bomb + b"]" * (end - start - len(bomb) - 1) + b"."
            break
    else:
        raise AssertionError("no pickle of 9 bytes or more in the segment")
    seg.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["toc", "segment"])
def test_a_memo_index_bomb_is_refused_by_every_reader(
    artifact: Path, tmp_path: Path, where: str
) -> None:
    folder = tampered(artifact, tmp_path / "bomb", _memo_toc if where == "toc" else _memo_seg)
    for name, result in reader_runs(folder).items():
        assert_refused(result, name, one_line=name != "verify")
    assert "memo index beyond" in reader_runs(folder)["search"].stderr


@pytest.mark.parametrize("where", ["toc", "segment"])
def test_a_memo_index_bomb_allocates_nothing_much(
    artifact: Path, tmp_path: Path, where: str
) -> None:
    folder = tampered(artifact, tmp_path / "bomb", _memo_toc if where == "toc" else _memo_seg)
    assert peak(lambda: validate.validate(folder)) < BOUND
    assert validate.validate(folder) != []
    assert peak(lambda: ranking.Searcher(folder / "index").close()) < BOUND
    assert peak(lambda: Reader.open(folder).close()) < BOUND
    with pytest.raises(ArtifactError, match="memo index beyond"):
        Reader.open(folder)


def test_a_validated_artifact_changed_afterwards_is_validated_again(
    artifact: Path, tmp_path: Path
) -> None:
    """The C unpickler reads only what the full validation decoded in this very state: a
    segment swapped after `verify` remembered the folder is decoded by the bounded one."""
    folder = tampered(artifact, tmp_path / "swapped", lambda f: None)
    assert opening.verify(folder) == []  # remembered as validated
    with Reader.open(folder) as reader:
        assert reader.view.searcher._validated  # the fast path, for the validated state
        reader.search("revenue")
    _memo_seg(folder)
    rehash(folder)
    assert peak(lambda: Reader.open(folder).close()) < BOUND
    with pytest.raises(ArtifactError, match="memo index beyond"):
        Reader.open(folder)


def test_the_fast_path_needs_the_very_files_that_were_validated(
    artifact: Path, tmp_path: Path
) -> None:
    folder = tampered(artifact, tmp_path / "copy", lambda f: None)
    assert opening.verify(folder) == []
    state = memo.folder_state(folder)
    assert state is not None
    store = ArtifactView.open(folder)
    try:
        validated = store._validated_index()
    finally:
        store.close()
    assert validated is not None and set(validated) == {
        n.removeprefix("index/") for n in state["files"] if n.startswith("index/")
    }
    with ranking.Searcher(folder / "index", validated=validated) as searcher:
        assert searcher._validated
        assert searcher.query(["revenu"], {"body": 1.0}).top()
    other = {name: (size, 0, 0, 0) for name, (size, *_rest) in validated.items()}
    with pytest.raises(ArtifactError, match="changed after it was validated"):
        ranking.Searcher(folder / "index", validated=other)
    # Without a memo (no cache, or a changed folder) nothing is trusted.
    with ranking.Searcher(folder / "index") as searcher:
        assert not searcher._validated


# --- the bounded unpickler itself ------------------------------------------------------------


def bounded(data: bytes) -> Any:
    """Decode as an index file from elsewhere is decoded (no validated state)."""
    return unpickler.safe_loads(data)


def fast(data: bytes) -> Any:
    return unpickler._FastUnpickler(io.BytesIO(data), unpickler._DATA_GLOBALS).load()


HUGE = 1 << 40


@pytest.mark.parametrize(
    "payload",
    [
        b"\x8e" + struct.pack("<Q", HUGE),  # BINBYTES8
        b"\x8d" + struct.pack("<Q", HUGE),  # BINUNICODE8
        b"\x96" + struct.pack("<Q", 1 << 33),  # BYTEARRAY8: allocated before it is read
        b"\x95" + struct.pack("<Q", HUGE),  # FRAME
        b"\x8b" + struct.pack("<i", 1 << 30),  # LONG4
        b"\x8b" + struct.pack("<i", -5),  # LONG4, negative
        b"B" + struct.pack("<I", 1 << 31),  # BINBYTES
        b"X" + struct.pack("<I", 1 << 31),  # BINUNICODE
        b"T" + struct.pack("<i", 1 << 30),  # BINSTRING
        b"C\xff" + b"x" * 10,  # SHORT_BINBYTES, truncated
    ],
    ids=lambda p: p[:1].hex(),
)
@pytest.mark.parametrize("source", ["bytes", "stream"])
def test_lengths_beyond_the_input_are_refused_before_anything_is_allocated(
    payload: bytes, source: str
) -> None:
    data = b"\x80\x05" + payload + b"."

    def decode() -> Any:
        if source == "bytes":
            return bounded(data)
        # a file, as whoosh's StructFile.read_pickle passes it
        return unpickler.safe_load(io.BufferedReader(io.BytesIO(data)))

    with pytest.raises((unpickler.BadIndex, pickle.UnpicklingError, EOFError)):
        decode()
    assert peak(decode) < 1 << 20


@pytest.mark.parametrize(
    "payload",
    [
        b"]r" + struct.pack("<I", IDX) + b".",  # LONG_BINPUT
        b"]p16777216\n.",  # PUT (protocol 0)
    ],
)
def test_memo_indexes_are_bounded(payload: bytes) -> None:
    with pytest.raises(unpickler.BadIndex, match="memo index beyond"):
        bounded(b"\x80\x05" + payload)
    assert peak(lambda: bounded(b"\x80\x05" + payload)) < 1 << 20
    # Sequential memo indexes, as every pickler writes them, are fine.
    assert bounded(pickle.dumps([[1], [1]] * 3, 2)) == [[1], [1]] * 3


@pytest.mark.parametrize("op", [b"N", b"\x8f", b"]", b"(t"])
def test_operations_per_pickle_are_bounded(op: bytes) -> None:
    """Empty sets are 216 bytes for one byte of input: a pickle may not run more than
    MAX_PICKLE_OPS operations (position lists of the largest bodies take far fewer)."""
    data = b"\x80\x05" + op * (unpickler.MAX_PICKLE_OPS + 1) + b"."
    with pytest.raises(unpickler.BadIndex, match="more than"):
        bounded(data)
    big = list(range(100_000))  # a position list of a 200,000-character body, at most
    assert bounded(pickle.dumps(big, 2)) == big


def test_positions_are_left_just_after_the_pickle() -> None:
    """whoosh reads a block header with read_pickle, then the block's data after it."""
    for proto in range(6):
        value = (3, 17, 1.5, None, "t\u00e9", b"xy" if proto >= 3 else [])  # bytes need 3+
        head = pickle.dumps(value, proto)
        for stream in (io.BytesIO(head + b"TAIL"), io.BufferedReader(io.BytesIO(head + b"TAIL"))):
            assert unpickler.safe_load(stream) == value
            assert stream.read() == b"TAIL"


VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(1 << 70), 1 << 70)
    | st.floats(allow_nan=False)
    | st.binary(max_size=300)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.lists(inner, max_size=6).map(tuple)
        | st.dictionaries(st.text(max_size=5) | st.integers(0, 9), inner, max_size=5)
        | st.frozensets(st.integers(0, 300), max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(value=VALUES, proto=st.integers(0, 5))
def test_the_bounded_unpickler_reads_what_pickle_writes(value: Any, proto: int) -> None:
    data = pickle.dumps(value, proto)
    try:
        decoded = bounded(data)
    except unpickler.UnsafePickle:  # bytes before protocol 3, frozensets before 4: a global
        with pytest.raises(unpickler.UnsafePickle):
            fast(data)
        assert proto < 4
        return
    assert decoded == value == fast(data)
    assert unpickler.safe_load(io.BytesIO(data + b"more")) == value


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_what_the_bounded_unpickler_accepts_the_fast_one_reads_alike(
    artifact: Path, data: st.DataObject
) -> None:
    """The fast path's premise: a pickle the bounded unpickler accepted (as validation does)
    decodes to the same value under the C unpickler. Real index pickles, randomly damaged."""
    pickles = _index_pickles(artifact)
    original = data.draw(st.sampled_from(pickles), label="pickle")
    assert repr(bounded(original)) == repr(fast(original))
    at = data.draw(st.integers(0, len(original) - 1), label="at")
    junk = data.draw(st.binary(min_size=1, max_size=6), label="junk")
    damaged = original[:at] + junk + original[at + len(junk) :]
    try:
        accepted = bounded(damaged)
    except Exception:  # refused: never read by the fast path
        return
    assert repr(fast(damaged)) == repr(accepted)


_PICKLES: dict[Path, list[bytes]] = {}


def _index_pickles(folder: Path) -> list[bytes]:
    """Every complete pickle inside the artifact's segment files."""
    if folder not in _PICKLES:
        found = []
        for seg in sorted((folder / "index").glob("*.seg")):
            data = seg.read_bytes()
            for start, end in pickle_spans(data):
                try:
                    bounded(data[start:end])
                except Exception:  # a span that is not a whole pickle
                    continue
                found.append(data[start:end])
        _PICKLES[folder] = found
    return _PICKLES[folder]


def test_every_pickle_of_a_real_index_reads_alike(artifact: Path) -> None:
    pickles = _index_pickles(artifact)
    assert len(pickles) > 20
    for data in pickles:
        assert repr(bounded(data)) == repr(fast(data)) == repr(pickle.loads(data))


def test_the_stats_of_a_real_index_hold_per_scope_sums(artifact: Path) -> None:
    stats = json.loads((artifact / "index" / "stats.json").read_bytes())
    assert set(stats["scopes"]) == {"global", "user:alice", "user:bob"}
    assert summed(stats["scopes"].values()) == summed([stats])
