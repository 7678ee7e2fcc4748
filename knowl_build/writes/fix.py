"""`knowl fix`: proposals for what is fixable, as minimal edits (SPEC 7.4).

An `sl_refs` entry whose entity was removed from the semantic layer is proposed for removal
(with its `bound_fingerprints` entry), and `meta.last_validated_at` is set to null, since the
page now needs a person's review. Frozen pages and pages vouched for by people
(`human_curated`, `board_approved`) are reported, never edited.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from knowl_build.writes.edit import EditError, FrontmatterEditor

if TYPE_CHECKING:
    from knowl_build.build import Analysis

PROTECTED = ("human_curated", "board_approved")


@dataclass(frozen=True, slots=True)
class Proposal:
    path: str
    before: str
    after: str
    removed: tuple[str, ...]

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{self.path}",
                tofile=f"b/{self.path}",
            )
        )


@dataclass(slots=True)
class FixPlan:
    proposals: list[Proposal] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)  # what needs a person, one line each


def removed_refs(analysis: Analysis, path: str) -> list[str]:
    """The page's sl_refs whose entity history shows was removed from the semantic layer."""
    history = analysis.history
    page = next(p for p in analysis.pages if p.path == path)
    gone = []
    for ref in page.parsed.fields.sl_refs:
        if ref.value in analysis.layer.entities:
            continue
        record = history.entities.get(ref.value) if history else None
        if record is not None and record.removed_in is not None:
            gone.append(ref.value)
    return gone


def plan(analysis: Analysis) -> FixPlan:
    result = FixPlan()
    for page in sorted(analysis.pages, key=lambda p: p.path):
        if not page.parsed.text_ok:
            continue
        gone = removed_refs(analysis, page.path)
        if not gone:
            continue
        fields = page.parsed.fields
        if fields.frozen or fields.provenance in PROTECTED:
            why = "frozen" if fields.frozen else f"provenance {fields.provenance}"
            result.reported.append(
                f"{page.path}: not edited ({why}): remove sl_ref {', '.join(gone)} by hand after review"
            )
            continue
        before = (analysis.root / page.path).read_text(encoding="utf-8")
        try:
            editor = FrontmatterEditor.of(before)
            bound = {b.entity for b in fields.bound_fingerprints}
            for name in gone:
                editor.remove_list_item(["sl_refs"], name)
                if name in bound:
                    editor.remove_key(["meta", "bound_fingerprints"], name)
            editor.set_scalar(["meta", "last_validated_at"], "null")
        except EditError as exc:
            result.reported.append(f"{page.path}: not edited: {exc}")
            continue
        result.proposals.append(Proposal(page.path, before, editor.result(), tuple(gone)))
    return result


def apply(root: Path, fix_plan: FixPlan) -> list[str]:
    from knowl_build.files import atomic_write

    written = []
    for proposal in fix_plan.proposals:
        path = root / proposal.path
        if path.read_text(encoding="utf-8") != proposal.before:
            raise EditError(f"{proposal.path} changed while fixing; run knowl fix again")
        atomic_write(path, proposal.after.encode("utf-8"))
        written.append(proposal.path)
    return written
