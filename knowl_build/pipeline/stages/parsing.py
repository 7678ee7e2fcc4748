"""The parse stage: the semantic layer and every page, parsed through the parse cache."""

from __future__ import annotations

from knowl_build.core.config import Config
from knowl_build.core.errors import UsageError
from knowl_build.pipeline.cache import CachePlace, ParseCache
from knowl_build.pipeline.inputs import UNREADABLE, Inputs
from knowl_build.pipeline.pages import parse_cache_key, parse_pages
from knowl_build.pipeline.stages.state import BuildState
from knowl_build.pipeline.stages.values import Parsed, ParsedProject
from knowl_build.semantic.layer import SemanticLayer
from knowl_build.semantic.load import load_semantic_layer


def load_layer(inputs: Inputs) -> SemanticLayer:
    """Canonic files, and the dbt project's model files when one is configured."""
    discovery = inputs.discovery

    def data(path: str) -> bytes:
        raw = inputs.semantics[path][0]
        return raw if raw is not None else b"\x00"

    return load_semantic_layer(
        [(p, data(p)) for p in discovery.semantic_files],
        [(p, data(p)) for p in discovery.dbt_files],
        discovery.dbt,
    )


def parse_project(
    config: Config,
    inputs: Inputs,
    caches: CachePlace,
    *,
    use_cache: bool = True,
    parsed: Parsed | None = None,
    cache: ParseCache | None = None,
) -> ParsedProject:
    """The semantic layer, then every page (`use_cache=False`: parsed again, not read from
    the cache; `cache`: this parse cache, a resident one, when it is this configuration's).
    `parsed` hears of the layer and the placed pages, batch by batch in path order, as they
    are parsed (a build indexes them meanwhile)."""
    layer = load_layer(inputs)
    key = parse_cache_key(config)
    if cache is None or cache.key != key or not use_cache:
        cache = ParseCache(caches.folder, key, enabled=use_cache, machine=caches.key)
    pages, findings = parse_pages(
        inputs,
        config,
        cache,
        None if parsed is None else (lambda batch: parsed(batch, layer)),
    )
    cache.save()
    return ParsedProject(layer, pages, findings)


def parse(state: BuildState) -> None:
    """The build's parse stage: `parse_project`, each batch of pages sent meanwhile to the
    index written apart (a full build). From here on the build holds the pages' digests,
    not their bytes (`rendering.Texts` reads a page again when its record is made)."""
    # Loaded by a build that writes an artifact only: the index, Whoosh (start-up time of
    # `knowl check`).
    from knowl_build.pipeline.stages.indexing import write_apart

    state.clock.start("parse")
    sent = write_apart(state)
    state.parsed = parse_project(state.config, state.inputs, state.caches, parsed=sent)
    if state.inputs.changed:  # the input hash and the documents sent hold what it was
        changed = min(state.inputs.changed)
        raise UsageError(f"{changed} changed while the build ran; run the build again")
    if state.apart is not None:
        state.apart.finish()
    pages = state.inputs.pages
    state.content = {path: digest for path, (_, digest) in pages.items()}
    state.readable = {path: d for path, (_, d) in pages.items() if d != UNREADABLE}
    state.inputs.pages = {}
