"""`knowl fix`: proposals for what is fixable, as minimal edits (SPEC 7.4), one per page.

An entity that history shows renamed (removed in the commit that added one of the same kind
and definition) is renamed wherever the page names it: `sl_refs`, `bound_fingerprints` keys
and live-definition directives. An `sl_refs` entry whose entity was removed from the semantic
layer is proposed for removal (with its `bound_fingerprints` entry), and
`meta.last_validated_at` is set to null, since the page now needs a person's review; a
`bound_fingerprints` entry of a removed entity goes too. A `refs` entry naming a page that
history shows deleted is removed. Frozen pages and pages vouched for by people
(`human_curated`, `board_approved`) are reported, never edited.

Only pages the user may write are looked at (global pages and the user's own; anonymous: global
pages only): another user's page is neither edited nor named, as it is not visible.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from knowl_build.core.layouts import Layout
from knowl_build.core.model import Page
from knowl_build.core.names import valid_user
from knowl_build.core.pageref import page_id, writable
from knowl_build.core.resolve import place
from knowl_build.history.moves import page_moves
from knowl_build.parse.body import DIRECTIVE
from knowl_build.parse.frontmatter import split
from knowl_build.pipeline.analysis import Analysis
from knowl_build.writes.edit import EditError, FrontmatterEditor
from knowl_build.writes.pagefile import Change, PageBytes, WriteRefused, unified_diff, write_changes
from knowl_build.writes.relink import apply_relinks, moved_links

PROTECTED = ("human_curated", "board_approved")


@dataclass(frozen=True, slots=True)
class Proposal:
    path: str
    before: str
    after: str
    removed: tuple[str, ...]  # sl_refs to removed entities
    original: bytes | None = None  # the file's bytes the proposal was computed from
    bom: bool = False
    renamed: tuple[tuple[str, str], ...] = ()  # (old, new) entity names
    removed_pages: tuple[str, ...] = ()  # refs to deleted pages
    relinked: tuple[tuple[str, str], ...] = ()  # links to moved pages: (as written, new)

    def diff(self) -> str:
        return unified_diff(self.path, self.before, self.after)

    def change(self) -> Change:
        return Change(self.path, self.before, self.after, self.original, self.bom)


@dataclass(slots=True)
class FixPlan:
    proposals: list[Proposal] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)  # what needs a person, one line each
    layout: Layout = field(default_factory=Layout)
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


def renamed_entities(analysis: Analysis, page: Page) -> dict[str, str]:
    """Old name -> live name, for every entity the page names (in sl_refs, bound
    fingerprints, directives) that history shows renamed to a live entity."""
    if analysis.history is None:
        return {}
    fields = page.parsed.fields
    names = {ref.value for ref in fields.sl_refs} | {b.entity for b in fields.bound_fingerprints}
    names |= {d.name.rpartition(".")[0] for d in page.parsed.directives}
    found = {}
    for name in sorted(names - {""}):
        if name not in analysis.layer.entities:
            renamed = analysis.history.renamed(name, analysis.layer.entities)
            if renamed is not None:
                found[name] = renamed[0]
    return found


def _page_id(name: str) -> str:
    """The id a ref (an id, or a path under the scope folder) names."""
    return page_id(unicodedata.normalize("NFC", name))


def deleted_pages(analysis: Analysis, page: Page) -> list[str]:
    """The page's refs that name no page, where history shows a page of that id deleted."""
    history = analysis.history
    if history is None or not page.parsed.fields.refs:
        return []
    live = {p.path for p in analysis.pages}
    knowledge = analysis.config.layout
    gone = {
        where.id
        for p in history.page_commits
        if p not in live and (where := place(p, knowledge)) is not None
    }
    found = []
    for ref in page.parsed.fields.refs:
        resolution = analysis.index.resolve(ref.value, page.scope)
        if not resolution.pages and not resolution.hidden and _page_id(ref.value) in gone:
            found.append(ref.value)
    return found


def _renamed_directives(text: str, renames: dict[str, str]) -> str:
    """The text with each live-definition directive naming a renamed entity renamed."""
    parts = split(text)
    if parts.unclosed or not renames:
        return text
    body = text[parts.body_offset :]
    pieces, at = [], 0
    for match in DIRECTIVE.finditer(body):
        name = match.group(2) or match.group(3)
        entity, _, attribute = name.rpartition(".")
        if match.group(1) or entity not in renames:
            continue  # escaped, or not renamed
        start, end = match.span(2) if match.group(2) else match.span(3)
        pieces += [body[at:start], f"{renames[entity]}.{attribute}"]
        at = end
    return text[: parts.body_offset] + "".join(pieces) + body[at:]


def _actions(gone: list[str], renames: dict[str, str], pages: list[str]) -> str:
    """What a person is to do on a page knowl does not edit, in a few words."""
    done = [f"rename {old} to {new}" for old, new in renames.items()]
    done += [f"remove sl_ref {name}" for name in dict.fromkeys(gone)]
    done += [f"remove ref {name}" for name in dict.fromkeys(pages)]
    return "; ".join(done)


def plan(analysis: Analysis, user: str | None = None) -> FixPlan:
    """Proposals for the pages `user` may write (anonymous: global pages only)."""
    user = valid_user(user)
    result = FixPlan(layout=analysis.config.layout)
    history = analysis.history
    git = analysis.discovery.git
    present = [*(p.path for p in analysis.pages), *analysis.discovery.other_files]
    moves = page_moves(git, analysis.config.knowledge_dir, present) if git is not None else {}
    for page in sorted(analysis.pages, key=lambda p: p.path):
        if not page.parsed.text_ok or not writable(page.scope, user):
            continue
        fields = page.parsed.fields
        renames = renamed_entities(analysis, page)
        gone = [name for name in removed_refs(analysis, page.path) if name not in renames]
        # A bound entry of a removed entity that is not in sl_refs (KB107) goes too.
        stray = [
            b.entity
            for b in fields.bound_fingerprints
            if b.entity not in renames
            and b.entity not in gone
            and b.entity not in analysis.layer.entities
            and history is not None
            and (record := history.entities.get(b.entity)) is not None
            and record.removed_in is not None
        ]
        pages = deleted_pages(analysis, page)
        relinks = moved_links(analysis, page, moves)
        result.reported.extend(relinks.refused)
        if not (renames or gone or stray or pages or relinks):
            continue
        if fields.frozen or fields.provenance in PROTECTED:
            why = "frozen" if fields.frozen else f"provenance {fields.provenance}"
            actions = "; ".join(filter(None, [_actions(gone, renames, pages), *relinks.shown()]))
            result.reported.append(
                f"{page.path}: not edited ({why}): {actions} by hand after review"
            )
            continue
        try:
            source = PageBytes.read(analysis.root, page.path)
            relinked = apply_relinks(source.text, relinks.edits)
            editor = FrontmatterEditor.of(_renamed_directives(relinked, renames))
            refs = [ref.value for ref in fields.sl_refs]
            bound = {b.entity for b in fields.bound_fingerprints}
            for old, new in renames.items():
                # A name already listed is not written twice: the old entry goes instead.
                if new in refs:
                    while editor.remove_list_item(["sl_refs"], old):
                        pass
                else:
                    editor.rename(["sl_refs"], old, new)
                if new in bound:
                    editor.remove_key(["meta", "bound_fingerprints"], old)
                else:
                    editor.rename(["meta", "bound_fingerprints"], old, new)
            # One removal per listed ref: a ref listed twice is removed twice (each operation
            # works on the result of the last one), and the last leaves `sl_refs: []`.
            for name in gone:
                editor.remove_list_item(["sl_refs"], name)
            for name in dict.fromkeys([*gone, *stray]):
                if name in bound:
                    editor.remove_key(["meta", "bound_fingerprints"], name)
            for name in pages:
                editor.remove_list_item(["refs"], name)
            if gone:
                editor.set_scalar(["meta", "last_validated_at"], "null")
        except (EditError, WriteRefused) as exc:
            line = str(exc) if isinstance(exc, WriteRefused) else f"{page.path}: {exc}"
            result.reported.append(line)
            result.refused.append(line)
            continue
        result.proposals.append(
            Proposal(
                page.path,
                source.text,
                editor.result(),
                tuple(gone),
                source.data,
                source.bom,
                tuple(renames.items()),
                tuple(pages),
                tuple((r.old, r.new) for r in relinks.edits),
            )
        )
    return result


def apply(root: Path, fix_plan: FixPlan) -> list[str]:
    """Write every proposal, or none: each file must still hold the bytes it was planned on,
    and a page whose fix cannot be made safely refuses the whole write (WriteRefused).
    Returns the paths really written, one per proposal (a symlinked page's target)."""
    if fix_plan.refused:
        more = f" (and {len(fix_plan.refused) - 1} more)" if len(fix_plan.refused) > 1 else ""
        raise WriteRefused(f"{fix_plan.refused[0]}{more}; nothing was written")
    return write_changes(root, fix_plan.layout, [p.change() for p in fix_plan.proposals])
