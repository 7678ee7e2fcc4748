"""Every semantic file of the project read into one layer: Canonic files, and the dbt
project's model files when one is configured."""

from __future__ import annotations

from collections.abc import Iterable

from knowl_build.semantic.canonic import read_source_file
from knowl_build.semantic.dbt import DbtProject, read_dbt_file
from knowl_build.semantic.layer import SemanticLayer, combine


def load_semantic_layer(
    files: Iterable[tuple[str, bytes]],
    dbt_files: Iterable[tuple[str, bytes]] = (),
    dbt: DbtProject | None = None,
) -> SemanticLayer:
    """Read every Canonic semantic file (and, with a dbt project, its model files)."""
    reads = [read_source_file(path, data) for path, data in sorted(files)]
    if dbt is not None:
        reads += [read_dbt_file(path, data, dbt) for path, data in sorted(dbt_files)]
    return combine(reads)
