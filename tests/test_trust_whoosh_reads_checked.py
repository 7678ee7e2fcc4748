"""Whoosh reads only what knowl's reader checked, and knowl changes nothing of Whoosh.

Whoosh unpickles parts of an index without restriction. The index package used to make it
safe by replacing attributes of Whoosh's modules; now Whoosh is left as it is, and every
index it opens is opened through `storage.CheckedStorage`, which hands it a table of contents
rebuilt from checked values and a segment only once every pickle in it was decoded by the
bounded, restricted unpickler. These tests hold both: no attribute of any Whoosh module or
class differs after knowl wrote, updated, validated and searched an index; and a hostile
pickle in a previous artifact's index runs on no build, verify or search, while the very
same bytes run under Whoosh opened plainly (so refusing them proves something).
"""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from knowl_build.index import writer
from knowl_build.index.analysis import DOCS_FILE
from tests.helpers import Project
from tests.tamper import pickle_spans, run_cli, toc_segments_offset
from tests.test_trust_pickles import payloads

SNAPSHOT = textwrap.dedent(
    """
    import importlib, pkgutil, sys, tempfile
    from pathlib import Path
    import whoosh

    def snapshot():
        found = {}
        for info in pkgutil.walk_packages(whoosh.__path__, "whoosh."):
            try:
                importlib.import_module(info.name)
            except ImportError:
                continue
        for name, module in sorted(sys.modules.items()):
            if not name.startswith("whoosh") or module is None:
                continue
            for attr, value in vars(module).items():
                found[(name, attr)] = (id(value), repr(sorted(map(repr, value)))
                                       if isinstance(value, (dict, list, set)) else None)
                if isinstance(value, type) and value.__module__ == name:
                    for key, member in vars(value).items():
                        found[(name, attr, key)] = id(member)
        return found

    before = snapshot()
    import knowl_build
    for info in pkgutil.walk_packages(knowl_build.__path__, "knowl_build."):
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra (mcp, lsp) that is not installed
            pass
    from knowl_build.index import ranking, verify, writer
    from knowl_build.index.fields import SCHEMA_FIELDS

    folder = Path(tempfile.mkdtemp()) / "index"
    def doc(key):
        return writer.IndexDocument(key, {"scope": "global", "body": f"revenue {key}"})
    for keys in (["a", "b", "c"], ["a", "b", "d"], ["d"]):
        digests = {k: k + str(len(keys)) for k in keys}
        writer.write_index(folder, digests, doc, True, 16)
    assert verify.verify_index(folder) == [], verify.verify_index(folder)
    with ranking.Searcher(folder) as searcher:
        assert searcher.scores(["revenu"], {"body": 1.0})
        assert searcher.leaves
    after = snapshot()
    changed = sorted(k for k in before if k in after and before[k] != after[k])
    print(changed)
    sys.exit(1 if changed else 0)
    """
)


def test_knowl_replaces_no_attribute_of_whoosh() -> None:
    """Import every module of knowl_build, write an index (full, incremental, merged),
    validate and search it: every attribute of every Whoosh module and class is the one
    Whoosh defined."""
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _whoosh_names(tree: ast.Module) -> set[str]:
    """The names a module binds to Whoosh's modules, classes and functions."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {
                a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("whoosh")
            }
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("whoosh"):
            names |= {a.asname or a.name for a in node.names}
    return names


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node


def test_no_module_assigns_to_whoosh() -> None:
    """The same, read from the source: no assignment (or setattr, or del) to an attribute of
    a Whoosh name, in any module of knowl_build."""
    found = []
    for path in sorted((Path(__file__).parent.parent / "knowl_build").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = _whoosh_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
                targets = (
                    node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                )
                changed: list[ast.expr] = [
                    t for t in targets if isinstance(t, ast.Attribute | ast.Subscript)
                ]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                "setattr",
                "delattr",
            ):
                changed = node.args[:1]
            else:
                continue
            if any(isinstance(r := _root(t), ast.Name) and r.id in names for t in changed):
                found.append(f"{path.relative_to(path.parents[1])}:{node.lineno}")
    assert found == []


# --- a hostile previous index ------------------------------------------------------------------


def _documents(count: int) -> tuple[dict[str, str], Callable[[str], writer.IndexDocument]]:
    digests = {f"p{i:03}": f"v{i}" for i in range(count)}

    def document(key: str) -> writer.IndexDocument:
        body = f"revenue orders {key} " + " ".join(f"w{j}" for j in range(int(key[1:]) % 40))
        return writer.IndexDocument(key, {"scope": "global", "body": body})

    return digests, document


def _two_segments(folder: Path) -> None:
    digests, document = _documents(120)
    writer.write_index(folder, dict(list(digests.items())[:100]), document, True, 16)
    writer.write_index(folder, digests, document, True, 16)
    assert len(list(folder.glob("*.seg"))) == 2


def _hostile(folder: Path, where: str, payload: bytes) -> None:
    """`payload` in place of the TOC's segment list, or of the first or last pickle of the
    first segment file."""
    if where == "toc":
        toc = next(folder.glob("_MAIN_*.toc"))
        data = toc.read_bytes()
        toc.write_bytes(data[: toc_segments_offset(data)] + payload)
        return
    seg = sorted(folder.glob("*.seg"))[0]
    data = seg.read_bytes()
    spans = pickle_spans(data)
    start = spans[0 if where == "first" else -1][0]
    seg.write_bytes(data[:start] + payload + data[start + len(payload) :])


PLAIN_WHOOSH = textwrap.dedent(
    """
    import sys
    from whoosh.index import FileIndex
    from whoosh.filedb.filestore import FileStorage
    from knowl_build.index.analysis import schema
    try:
        ix = FileIndex(FileStorage(sys.argv[1]), schema=schema(), indexname="MAIN")
        ix.writer().commit(optimize=True)
    except Exception:
        pass
    """
)


@pytest.mark.parametrize("where", ["toc", "first", "last"])
def test_the_writer_never_lets_whoosh_unpickle_a_hostile_segment(
    tmp_path: Path, where: str
) -> None:
    """An incremental write that merges every segment (most documents changed): Whoosh reads
    each of them; the hostile one is refused before, and the index written in full."""
    sentinel = tmp_path / "pwned"
    folder = tmp_path / "index"
    _two_segments(folder)
    _hostile(folder, where, payloads(sentinel)["GLOBAL os.system"](4))
    control = tmp_path / "control"
    subprocess.run(["cp", "-r", str(folder), str(control)], check=True)
    digests, document = _documents(120)
    changed = {key: value + "'" for key, value in digests.items()}
    update = writer.write_index(folder, changed, document, True, 16)
    assert not sentinel.exists()
    assert (update.added, update.updated) == (120, 0)  # the previous index was refused
    assert (folder / DOCS_FILE).is_file()
    # The same bytes, read by Whoosh opened plainly, run the payload.
    subprocess.run([sys.executable, "-c", PLAIN_WHOOSH, str(control)], check=False)
    assert sentinel.exists()


@pytest.mark.parametrize("where", ["toc", "first", "last"])
def test_a_hostile_previous_artifact_runs_on_no_build_verify_or_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A committed `.knowl` folder (or an artifact from elsewhere) whose index holds a hostile
    pickle: `knowl verify` and `knowl search` refuse it, the next (incremental) `knowl build`
    writes a sound index, and nothing runs."""
    from tests.tamper import rehash

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("KNOWL_EMBEDDINGS", "off")
    sentinel = tmp_path / "pwned"
    proj = Project(tmp_path / "kb")
    pages = {
        f"knowledge/global/p{i}.md": f"---\nsummary: Page {i}\n---\nRevenue orders {i}.\n"
        for i in range(12)
    }
    proj.write({"knowl.toml": "[rules]\nKB202 = 'off'\n", **pages})
    proj.commit("pages")
    assert run_cli(["build", "--repo", str(proj.root), "-q"]).exit_code == 0
    proj.write({"knowledge/global/p0.md": "---\nsummary: Page zero\n---\nRevenue zero.\n"})
    proj.commit("one page")
    assert run_cli(["build", "--repo", str(proj.root), "-q"]).exit_code == 0
    out = proj.root / ".knowl" / "build"
    artifact = out / (out / "CURRENT").read_text().strip()
    _hostile(artifact / "index", where, payloads(sentinel)["GLOBAL os.system"](4))
    rehash(artifact)
    for args in (["verify"], ["search", "revenue", "--json"]):
        result = run_cli([*args, "--artifact", str(artifact)])
        assert result.exit_code == 2, (args, result.output)
        assert not sentinel.exists()
    # Most pages changed: the writer would merge the segments it read.
    proj.write({path: text.replace("orders", "sales") for path, text in pages.items()})
    proj.commit("most pages")
    result = run_cli(["build", "--repo", str(proj.root), "-q"])
    assert result.exit_code == 0, result.output
    assert not sentinel.exists()
    built = out / (out / "CURRENT").read_text().strip()
    assert run_cli(["verify", "--artifact", str(built)]).exit_code == 0
    found = run_cli(["search", "sales", "--json", "--artifact", str(built)])
    assert found.exit_code == 0 and '"p1"' in found.output
    assert not sentinel.exists()


def _term_table(folder: Path) -> tuple[Path, int, bytes]:
    """The first segment file, where its term table starts in it, and the table's bytes."""
    seg = sorted(folder.glob("*.seg"))[0]
    data = seg.read_bytes()
    at = int.from_bytes(data[:8], "big", signed=True)
    directory = pickle.loads(data[at:])  # the test's own index: trusted
    part = next(info for name, info in directory.items() if name.endswith(".trm"))
    start = part["offset"]
    return seg, start, data[start : start + part["length"]]


@pytest.mark.parametrize("where", ["slot", "ordered"])
def test_a_term_table_that_points_between_its_terms_is_refused(tmp_path: Path, where: str) -> None:
    """Whoosh finds a term info through a hash slot or the ordered index as well as by walking
    the items: a position between items would hand it bytes the validation never decoded."""
    from knowl_build.index import verify
    from knowl_build.index.segments import Terms, _Unpickle

    folder = tmp_path / "index"
    _two_segments(folder)
    seg, start, table = _term_table(folder)
    terms = Terms(table, _Unpickle(False))
    if where == "slot":
        at = next(
            s + n * 12
            for s, count in terms.tables
            for n in range(count)
            if int.from_bytes(table[s + n * 12 + 4 : s + n * 12 + 12], "big")
        )
        at += 4  # the item's position, after the key's hash
        width = 8
    else:
        at, width = terms._positions_at + terms._position.size, terms._position.size
    old = int.from_bytes(table[at : at + width], "big")
    data = bytearray(seg.read_bytes())
    data[start + at : start + at + width] = (old + 1).to_bytes(width, "big")
    seg.write_bytes(bytes(data))
    assert verify.verify_index(folder) == [
        f"segment {seg.stem.split('_', 1)[1]}: a term table that points between its terms"
    ]
