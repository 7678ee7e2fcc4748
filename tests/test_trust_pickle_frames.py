"""Trust 1, continued: a pickle's FRAME may not reach past its STOP.

CPython's unpicklers (`pickle.load`, the C one) read a frame whole and leave the file at its
end; the bounded unpickler used to leave it just after STOP. A frame running past its STOP
made "the next pickle" start at two places: knowl's check decoded a benign one, Whoosh (or
the validated fast path) a hostile one. Reproduced by a reviewer on real artifacts: the
options after a compound directory ran code in `knowl site --artifact` while `knowl verify`
said ok; a posting block's header framed over its data ran code in `knowl site`; and the
same with a memo index bomb made `knowl search --artifact` allocate gigabytes once the memo
remembered the artifact as validated. Now a pickle whose STOP does not end its frame is
refused, and every reader leaves the file where the others do.
"""

from __future__ import annotations

import io
import pickle
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowl_build.artifacts import opening
from knowl_build.core.errors import ArtifactError
from knowl_build.index import unpickler
from knowl_build.index.segments import _TERM_INFO, Terms, _Unpickle
from knowl_build.reader import Reader
from tests.tamper import module_corpus, peak, reader_runs, run_cli, tampered
from tests.test_trust_pickles import payloads

BOUND = 32 << 20  # what reading a hostile index may allocate, at most, in these tests
# Under the C unpickler, LONG_BINPUT at this index resizes the memo to 2 * IDX pointers: small
# enough (256 MB) that a regression fails the test rather than the machine.
IDX = 1 << 24


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("KNOWL_EMBEDDINGS", "off")
    yield


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return module_corpus(tmp_path_factory, "frames")


# --- crafting: the red team's artifacts ----------------------------------------------------------


def framed(*pickles: bytes) -> bytes:
    """One protocol-5 frame holding `pickles` back to back (the first without its PROTO)."""
    body = pickles[0][2:] + b"".join(pickles[1:])
    return b"\x80\x05\x95" + struct.pack("<Q", len(body)) + body


def _ops(value: Any) -> bytes:
    """A protocol-5 pickle of `value` without a frame."""
    data = pickle.dumps(value, 5)
    return data[:2] + data[11:] if data[2] == 0x95 else data


def _parts(seg: Path) -> tuple[dict[str, bytearray], Any]:
    """A compound segment's parts and its options (the test's own index: trusted)."""
    data = seg.read_bytes()
    handle = io.BytesIO(data)
    handle.seek(int.from_bytes(data[:8], "big", signed=True))
    directory, options = pickle.load(handle), pickle.load(handle)
    return {
        name: bytearray(data[info["offset"] : info["offset"] + info["length"]])
        for name, info in directory.items()
    }, options


def _compound(parts: dict[str, bytearray], tail: Callable[[dict[str, Any]], bytes]) -> bytes:
    """A compound segment file of `parts`, its directory and options written by `tail`."""
    out = bytearray(12)
    directory = {}
    for name, content in parts.items():
        directory[name] = {"offset": len(out), "length": len(content)}
        out += content
    at = len(out)
    out += tail(directory)
    out[0:8] = at.to_bytes(8, "big", signed=True)
    out[8:12] = (len(out) - at).to_bytes(4, "big", signed=True)
    return bytes(out)


def _segment(folder: Path) -> Path:
    return sorted((folder / "index").glob("*.seg"))[0]


def hostile_options(payload: bytes) -> Callable[[Path], None]:
    """(1a) The directory and benign options in one frame, `payload` at the frame's end: the
    bounded unpickler used to read the benign options, Whoosh's CompoundStorage the payload."""

    def change(folder: Path) -> None:
        seg = _segment(folder)
        parts, options = _parts(seg)
        seg.write_bytes(
            _compound(
                parts,
                lambda d: framed(pickle.dumps(d, 2), pickle.dumps(options, 2)) + payload,
            )
        )

    return change


def hostile_block(payload: bytes) -> Callable[[Path], None]:
    """(1b, 1c) One term's postings moved to a new list whose one block has a header framed
    over the block's (benign) data, `payload` at the frame's end: the bounded unpickler used
    to read the data after the header's STOP, Whoosh's W3LeafMatcher (and the C fast path)
    the payload."""

    def change(folder: Path) -> None:
        seg = _segment(folder)
        parts, options = _parts(seg)
        trm = next(name for name in parts if name.endswith(".trm"))
        pst = next(name for name in parts if name.endswith(".pst"))
        terms = Terms(bytes(parts[trm]), _Unpickle(False))
        for _term, item in terms.items_of("body"):
            keylen = int.from_bytes(parts[trm][item : item + 4], "big")
            info = item + 8 + keylen
            if parts[trm][info] == 0:  # postings not inlined
                break
        where = info + _TERM_INFO.size
        offset = int.from_bytes(parts[trm][where : where + 8], "big", signed=True)
        postings = parts[pst]
        length = abs(int.from_bytes(postings[offset + 4 : offset + 8], "big", signed=True))
        block = io.BytesIO(bytes(postings[offset + 8 : offset + 8 + length]))
        header, body = pickle.load(block), block.read()
        data = pickle.loads(zlib.decompress(body)) if header[3] else pickle.loads(body)
        block_bytes = framed(_ops((*header[:3], 0, *header[4:])), _ops(data)) + payload
        parts[trm][where : where + 8] = len(postings).to_bytes(8, "big", signed=True)
        postings += b"W3Bl" + (-len(block_bytes)).to_bytes(4, "big", signed=True) + block_bytes
        seg.write_bytes(_compound(parts, lambda d: pickle.dumps(d, 2) + pickle.dumps(options, 2)))

    return change


def memo_bomb() -> bytes:
    return b"\x80\x05]r" + struct.pack("<I", IDX) + b"."


# --- the attacks -----------------------------------------------------------------------------


def test_the_premise_cpython_reads_on_at_the_end_of_the_frame() -> None:
    """What made the attacks work, and what the fix relies on: CPython's unpicklers leave the
    file at the end of the frame that holds STOP."""
    data = framed(pickle.dumps("first", 2), pickle.dumps("second", 2)) + pickle.dumps("third", 2)
    for load in (pickle.load, _python):
        handle = io.BytesIO(data)
        assert load(handle) == "first"
        assert load(handle) == "third"
    with pytest.raises(unpickler.BadIndex, match="stops before the end of its frame"):
        unpickler.safe_load(io.BytesIO(data))
    with pytest.raises(unpickler.BadIndex, match="stops before the end of its frame"):
        unpickler.safe_loads(data)
    with pytest.raises(unpickler.BadIndex, match="stops before the end of its frame"):
        unpickler.safe_load(io.BufferedReader(io.BytesIO(data)))


@pytest.mark.parametrize("attack", ["options", "block"])
def test_a_frame_past_its_stop_runs_no_code(artifact: Path, tmp_path: Path, attack: str) -> None:
    """(1a, 1b) `knowl verify` refuses the artifact; `knowl site`, every reader command and the
    fast path after a verify refuse it too, and the payload never runs."""
    sentinel = tmp_path / "pwned"
    payload = payloads(sentinel)["GLOBAL os.system"](2)
    change = hostile_options if attack == "options" else hostile_block
    folder = tampered(artifact, tmp_path / "hostile", change(payload))
    assert payload in _segment(folder).read_bytes()
    verify = run_cli(["verify", "--artifact", str(folder)])
    assert verify.exit_code == 2 and "stops before the end of its frame" in verify.output
    assert opening.verify(folder) != []
    site = run_cli(["site", "--artifact", str(folder), "--out", str(tmp_path / "site"), "-q"])
    assert site.exit_code == 2, site.output
    for name, result in reader_runs(folder).items():
        assert result.exit_code == 2, (name, result.output)
    assert not sentinel.exists()


def test_a_memo_bomb_behind_a_frame_allocates_nothing_much(artifact: Path, tmp_path: Path) -> None:
    """(1c) The memo bomb a framed block header hid from the validation: verify refuses it, so
    the fast path (C unpickler) never reads the artifact, and no reader allocates much."""
    folder = tampered(artifact, tmp_path / "bomb", hostile_block(memo_bomb()))
    assert peak(lambda: opening.verify(folder)) < BOUND
    assert opening.verify(folder) != []  # and nothing is remembered as validated

    def search() -> None:
        with Reader.open(folder) as reader:
            reader.search("revenue orders")

    assert peak(search) < BOUND
    with pytest.raises(ArtifactError, match="stops before the end of its frame"):
        search()


# --- honest pickles, and where each reader leaves the file -------------------------------------


VALUES = st.recursive(
    st.none() | st.integers(-(1 << 40), 1 << 40) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=8) | st.lists(inner, max_size=8).map(tuple),
    max_leaves=60,
)


def _fast(handle: io.BytesIO) -> Any:
    return unpickler._FastUnpickler(handle, unpickler._DATA_GLOBALS).load()


def _python(handle: io.BytesIO) -> Any:
    return pickle._Unpickler(handle).load()


def _ends(data: bytes) -> tuple[int, int, int]:
    """Where the bounded, the C and the pure-Python unpicklers leave a file holding `data`."""
    ends = []
    for load in (unpickler.safe_load, _fast, _python):
        handle = io.BytesIO(data)
        load(handle)
        ends.append(handle.tell())
    return ends[0], ends[1], ends[2]


@settings(max_examples=200, deadline=None)
@given(value=VALUES, proto=st.integers(2, 5), tail=st.binary(max_size=20))
def test_every_reader_leaves_the_file_where_the_bounded_one_does(
    value: Any, proto: int, tail: bytes
) -> None:
    data = pickle.dumps(value, proto)
    bounded, fast, python = _ends(data + tail)
    assert bounded == fast == python == len(data)


@pytest.mark.parametrize("size", [10, 20_000, 200_000])
def test_pickles_of_several_frames_are_accepted(size: int) -> None:
    """A pickle over 64 KiB has several frames, the last ending at STOP (or STOP after the
    last frame): accepted, and read on from the same place by every reader."""
    value = (list(range(size)), [f"t{n}" for n in range(size // 10)])
    for proto in (4, 5):
        data = pickle.dumps(value, proto)
        assert unpickler.safe_loads(data) == value
        assert _ends(data + b"TAIL") == (len(data),) * 3


@settings(max_examples=300, deadline=None)
@given(
    first=VALUES,
    second=VALUES,
    junk=st.binary(max_size=8),
    cut=st.integers(0, 40),
)
def test_what_the_bounded_unpickler_accepts_every_reader_ends_alike(
    first: Any, second: Any, junk: bytes, cut: int
) -> None:
    """Frames of any length around pickles: whatever the bounded unpickler accepts, the C and
    pure-Python unpicklers decode alike and leave the file at the same place."""
    one, two = pickle.dumps(first, 2), pickle.dumps(second, 2)
    body = one[2:] + two + junk
    size = max(0, len(body) - cut)
    data = b"\x80\x05\x95" + struct.pack("<Q", size) + body
    try:
        handle = io.BytesIO(data)
        accepted = unpickler.safe_load(handle)
    except (unpickler.BadIndex, pickle.UnpicklingError, EOFError, IndexError):
        return
    end = handle.tell()
    for load in (_fast, _python):
        handle = io.BytesIO(data)
        assert repr(load(handle)) == repr(accepted)
        assert handle.tell() == end


def test_a_real_index_verifies(artifact: Path) -> None:
    assert opening.verify(artifact) == []
