"""`knowl fix`: proposals for what is fixable, as minimal edits (SPEC 7.4).

An `sl_refs` entry whose entity was removed from the semantic layer is proposed for removal
(with its `bound_fingerprints` entry), and `meta.last_validated_at` is set to null, since the
page now needs a person's review. Frozen pages and pages vouched for by people
(`human_curated`, `board_approved`) are reported, never edited.

Only pages the user may write are looked at (global pages and the user's own; anonymous: global
pages only): another user's page is neither edited nor named, as it is not visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.names import valid_user
from knowl_build.pageref import writable
from knowl_build.pipeline.analysis import Analysis
from knowl_build.writes.edit import EditError, FrontmatterEditor
from knowl_build.writes.pagefile import Change, PageBytes, WriteRefused, unified_diff, write_changes

PROTECTED = ("human_curated", "board_approved")


@dataclass(frozen=True, slots=True)
class Proposal:
    path: str
    before: str
    after: str
    removed: tuple[str, ...]
    original: bytes | None = None  # the file's bytes the proposal was computed from
    bom: bool = False

    def diff(self) -> str:
        return unified_diff(self.path, self.before, self.after)

    def change(self) -> Change:
        return Change(self.path, self.before, self.after, self.original, self.bom)


@dataclass(slots=True)
class FixPlan:
    proposals: list[Proposal] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)  # what needs a person, one line each
    knowledge_dir: str = "knowledge"
    # Pages that need a fix no edit can make safely (also in `reported`): `apply` refuses.
    refused: list[str] = field(default_factory=list)


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


def plan(analysis: Analysis, user: str | None = None) -> FixPlan:
    """Proposals for the pages `user` may write (anonymous: global pages only)."""
    user = valid_user(user)
    result = FixPlan(knowledge_dir=analysis.config.knowledge_dir)
    for page in sorted(analysis.pages, key=lambda p: p.path):
        if not page.parsed.text_ok or not writable(page.scope, user):
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
        try:
            source = PageBytes.read(analysis.root, page.path)
            editor = FrontmatterEditor.of(source.text)
            bound = {b.entity for b in fields.bound_fingerprints}
            # One removal per listed ref: a ref listed twice is removed twice (each operation
            # works on the result of the last one), and the last leaves `sl_refs: []`.
            for name in gone:
                editor.remove_list_item(["sl_refs"], name)
                if name in bound:
                    editor.remove_key(["meta", "bound_fingerprints"], name)
            editor.set_scalar(["meta", "last_validated_at"], "null")
        except (EditError, WriteRefused) as exc:
            line = str(exc) if isinstance(exc, WriteRefused) else f"{page.path}: {exc}"
            result.reported.append(line)
            result.refused.append(line)
            continue
        result.proposals.append(
            Proposal(page.path, source.text, editor.result(), tuple(gone), source.data, source.bom)
        )
    return result


def apply(root: Path, fix_plan: FixPlan) -> list[str]:
    """Write every proposal, or none: each file must still hold the bytes it was planned on,
    and a page whose fix cannot be made safely refuses the whole write (WriteRefused).
    Returns the paths really written, one per proposal (a symlinked page's target)."""
    if fix_plan.refused:
        more = f" (and {len(fix_plan.refused) - 1} more)" if len(fix_plan.refused) > 1 else ""
        raise WriteRefused(f"{fix_plan.refused[0]}{more}; nothing was written")
    return write_changes(root, fix_plan.knowledge_dir, [p.change() for p in fix_plan.proposals])
