"""The `json` finding format (SPEC 10)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from knowl_build.output.escapes import REORDERING

if TYPE_CHECKING:
    from knowl_build.core.diagnostics import Diagnostic

# What JSON may carry raw that a terminal acts on or that reorders what it shows: DEL, the C1
# controls (U+009B is a one-character CSI), the line and paragraph separators and the bidi
# controls (Trojan Source). They occur only inside strings, where `\\u009b` is the same value.
_TERMINAL = [0x7F, *range(0x80, 0xA0), *REORDERING]
_ESCAPE = {code: f"\\u{code:04x}" for code in _TERMINAL}


def printable(text: str) -> str:
    """JSON text with every character a terminal would act on written as a `\\uXXXX` escape:
    still valid JSON that decodes to the same value. The one escape of every JSON answer a
    command prints (json.dumps already escapes C0); artifact files keep their bytes."""
    return text.translate(_ESCAPE)


def dumps(data: Any) -> str:
    """`data` as the JSON a command prints: indented, sorted keys, finite numbers only
    (ValueError otherwise), made printable."""
    return printable(
        json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    )


def render(
    diagnostics: Sequence[Diagnostic],
    repo_prefix: str = "",
    baseline: dict[str, Any] | None = None,
) -> str:
    """The json document; with `--baseline`, a `baseline` object says against what the
    findings were compared and how many known ones were hidden."""
    # Findings only: an answer printed as JSON (`knowl search --json`) needs neither the
    # findings' document nor the secret scanner it loads (start-up time).
    from knowl_build.core.diagnostics import diagnostics_document

    document = diagnostics_document(diagnostics, repo_prefix)
    if baseline is not None:
        document["baseline"] = baseline
    return dumps(document) + "\n"
