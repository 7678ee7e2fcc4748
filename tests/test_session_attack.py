"""Attacks on the language server's session (`pipeline.session`): each case edits a project
and holds `Session.update` (or a new session where it declines) to a whole analysis of the
same inputs, finding for finding and the freshness of every page."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path

from knowl_build.core.config import Config
from knowl_build.core.diagnostics import Diagnostic
from knowl_build.lsp.workspace import Workspace
from knowl_build.pipeline import session as session_module
from knowl_build.pipeline.analysis import analyse
from knowl_build.pipeline.cache import ParseCache, cache_place
from knowl_build.pipeline.inputs import Inputs, read_inputs
from knowl_build.pipeline.pages import parse_cache_key
from knowl_build.pipeline.session import Session
from knowl_build.support import clock
from tests.helpers import Project
from tests.test_recheck import source


def shown(diagnostics: list[Diagnostic]) -> list[dict[str, object]]:
    return [{**d.to_json(), "subject": d.subject} for d in diagnostics]


class Run:
    """A session over a project, brought up to date after each edit and held to a whole
    analysis."""

    def __init__(
        self,
        tmp_path: Path,
        files: Mapping[str, str | bytes],
        config: Config | None = None,
        commit: bool = True,
        today: dt.date | None = None,
    ) -> None:
        self.proj = Project(tmp_path / "p")
        self.proj.write(files)
        if commit:
            self.proj.commit("start")
        self.config = config or Config()
        self.today = today or clock.today()
        self.caches = cache_place(self.proj.root)
        self.cache = ParseCache(
            self.caches.folder, parse_cache_key(self.config), machine=self.caches.key, resident=True
        )
        self.session = Session.start(
            self.proj.root, self.config, self.today, self.inputs(), self.caches, self.cache
        )
        self.updated = 0
        self.check(self.inputs())

    def inputs(self) -> Inputs:
        return read_inputs(self.proj.root, self.config)

    def edit(self, files: Mapping[str, str | bytes], inputs: Inputs | None = None) -> Session:
        self.proj.write(files)
        inputs = inputs or self.inputs()
        after = self.session.update(inputs, self.today)
        if after is None:
            after = Session.start(
                self.proj.root, self.config, self.today, inputs, self.caches, self.cache
            )
        elif after is not self.session:
            self.updated += 1
        self.session = after
        self.check(inputs)
        return after

    def check(self, inputs: Inputs) -> None:
        whole = analyse(
            self.proj.root, self.config, today=self.today, inputs=inputs, use_cache=False
        )
        ours = self.session.analysis
        assert shown(ours.diagnostics) == shown(whole.diagnostics)
        for p in whole.pages:
            mine, theirs = ours.assessments.get(p.path), whole.assessments.get(p.path)
            assert (mine and mine.to_json()) == (theirs and theirs.to_json()), p.path


G = "knowledge/global/"


def workspace_same(workspace: Workspace) -> None:
    """The workspace's analysis after `refresh` equals a whole analysis of its inputs."""
    workspace.refresh()
    inputs = workspace._overlaid(workspace._base())
    whole = analyse(
        workspace.root, workspace.config, today=clock.today(), inputs=inputs, use_cache=False
    )
    assert workspace.analysis is not None
    assert shown(workspace.analysis.diagnostics) == shown(whole.diagnostics)


def test_unsaved_pages_typed_into_and_read_by_another(tmp_path: Path) -> None:
    """A buffer for a page not on disk (`Workspace._overlaid` adds it to the discovery), typed
    into while a page on disk links to its heading and block, and the other way round."""
    proj = Project(tmp_path / "p")
    proj.write({G + "a.md": "# A\n\n[[new#Sec]] and [[new#^blk]]\n"}).commit("start")
    workspace = Workspace(proj.root)
    workspace_same(workspace)
    workspace.open(G + "new.md", "# New\n")
    workspace_same(workspace)
    for text in ("# New\n\n## Sec\n", "# New\n\n## Sec\n\npara ^blk\n", "# New\n\n## Se\n"):
        workspace.open(G + "new.md", text)
        workspace_same(workspace)
    workspace.open(G + "a.md", "# A\n\n[[new#Se]]\n")
    workspace_same(workspace)
    workspace.close(G + "new.md")
    workspace_same(workspace)


def test_head_moves_while_buffers_are_open(tmp_path: Path) -> None:
    """A commit (HEAD moves, the git facts change: an uncommitted definition is committed),
    then a checkout back, with an edited buffer open throughout."""
    proj = Project(tmp_path / "p")
    proj.write(
        {
            "semantics/s.yaml": source("s", "sum(x)"),
            G + "a.md": "---\nsl_refs: [db.s.total]\n---\n# A\n\n[[b]]\n",
            G + "b.md": "# B\n",
        }
    )
    first = proj.commit("start")
    workspace = Workspace(proj.root)
    workspace.open(G + "b.md", "# B\n\ntyped\n")
    workspace_same(workspace)
    proj.write({"semantics/s.yaml": source("s", "sum(y)")})
    workspace.files_changed()
    workspace_same(workspace)
    proj.commit("definition")
    workspace_same(workspace)
    workspace.open(G + "b.md", "# B\n\ntyped more\n")
    workspace_same(workspace)
    proj.run_git("checkout", "-q", first)
    workspace.files_changed()
    workspace_same(workspace)
    workspace.open(G + "b.md", "# B\n\ntyped again\n")
    workspace_same(workspace)


def test_what_readers_read_changes_without_names(tmp_path: Path) -> None:
    """Headings and block ids a wiki-link and a Markdown link read, a parse finding that comes
    and goes (KB001, KB002), refs in frontmatter, a suppression in the reader that stops hiding
    anything (KB011) and hides again."""
    run = Run(
        tmp_path,
        {
            G + "a.md": "---\ntitle: [unclosed\n---\n# A\n\n## Sec\n\npara ^blk\n",
            G + "b.md": "# B\n\n[[a#Sec]] [[a#^blk]] [x](a.md#sec)\n",
            G + "c.md": "---\nrefs: [a, zz]\n---\n# C\n\n"
            "<!-- knowl: disable-next-line KB102 -->\n[[a#Sec]]\n",
        },
    )
    for text in (
        "---\ntitle: ok\n---\n# A\n\n## Other\n\npara\n",
        "---\nrefs: 7\nmeta: 3\n---\n# A\n\n## Sec\n\npara ^blk\n",
        "# A\n",
        "# A\n\n## Sec\n",
    ):
        run.edit({G + "a.md": text})
    run.edit({G + "c.md": "---\nrefs: [a]\n---\n# C\n\n[[a#Sec]]\n"})
    assert run.updated == 5


def test_governance_fields_change_without_names(tmp_path: Path) -> None:
    """Status, superseded_by and conflict keys (KB301, KB302), edited page by page; two pages
    of one id (d.md and the bundle d/index.md, KB005), one superseded by d."""
    run = Run(
        tmp_path,
        {
            G + "a.md": "# A\n",
            G + "b.md": "# B\n\n[[a]]\n",
            G + "d.md": "# D\n\n## H\n",
            G + "d/index.md": "# D2\n",
            G + "e.md": "# E\n\n[[d#H]] [x](d.md#h)\n",
        },
    )
    conflict = "conflict:\n  key: {}\n  exclusive: true\n"
    for path, text in (
        ("a.md", f"---\n{conflict.format('k')}---\n# A\n"),
        ("b.md", f"---\n{conflict.format('K')}---\n# B\n"),
        ("b.md", f"---\nstatus: superseded\nsuperseded_by: a\n{conflict.format('K')}---\n# B\n"),
        ("a.md", "---\nstatus: superseded\nsuperseded_by: b\n---\n# A\n"),
        ("a.md", "---\nstatus: deprecated\n---\n# A\n"),
        ("d.md", "# D\n"),
        ("d/index.md", "# D2\n\n## H\n"),
        ("d.md", "---\nstatus: superseded\nsuperseded_by: d\n---\n# D\n"),
    ):
        run.edit({G + path: text})
    assert run.updated == 8


def test_obsidian_and_dendron_readers(tmp_path: Path) -> None:
    """Obsidian: an alias's page loses and regains a heading and a block id, two pages of one
    name in different folders (a tie, KB108) trade a heading; Dendron: `[[label|note#h]]`
    (`label_first`) while the note's heading changes."""
    obsidian = Config(link_resolution="obsidian", source="knowl.toml")
    run = Run(
        tmp_path / "o",
        {
            G + "a.md": "---\naliases: [Alpha]\n---\n# A\n\n## Sec\n",
            G + "c.md": "# C\n\n[[Alpha#Sec]] ![[alpha#^blk]] [[n#H]]\n",
            G + "x/n.md": "# N1\n\n## H\n",
            G + "y/n.md": "# N2\n",
            "knowl.toml": "[links]\nresolution = 'obsidian'\n",
        },
        obsidian,
    )
    run.edit({G + "a.md": "---\naliases: [Alpha]\n---\n# A\n\n## sec\n\npara ^blk\n"})
    run.edit({G + "a.md": "---\naliases: [Alpha]\n---\n# A\n"})
    run.edit({G + "x/n.md": "# N1\n"})
    run.edit({G + "y/n.md": "# N2\n\n## H\n"})
    assert run.updated == 4
    dendron = Config(link_resolution="dendron", source="knowl.toml")
    run = Run(
        tmp_path / "d",
        {
            G + "a.b.md": "# A\n\n## Sec\n",
            G + "c.md": "# C\n\n[[a.b#sec]] [[label|a.b#sec]]\n",
            "knowl.toml": "[links]\nresolution = 'dendron'\n",
        },
        dendron,
    )
    run.edit({G + "a.b.md": "# A\n\n## Other\n"})
    run.edit({G + "c.md": "# C\n\n[[a.b#other]] [[lab|a.b#sec]]\n"})
    assert run.updated == 2


def test_scopes_and_a_page_becoming_binary(tmp_path: Path) -> None:
    """A user's page shadowing a global one (KB303) gains the heading a user's link reads; a
    global page reads a user's page it cannot see (KB104); a page becomes non-UTF-8 and back
    (a new session each time: it is another kind of page)."""
    user = "knowledge/user/u/"
    run = Run(
        tmp_path,
        {
            G + "a.md": "# A\n\n## H\n",
            G + "g.md": "# G\n\n[[v]]\n",
            user + "a.md": "# UA\n",
            user + "b.md": "# B\n\n[[a#H]]\n",
            user + "v.md": "# V\n",
        },
    )
    run.edit({user + "a.md": "# UA\n\n## H\n"})
    run.edit({G + "a.md": "# A\n"})
    run.edit({user + "v.md": "# V\n\n## More\n"})
    assert run.updated == 3
    run.edit({G + "a.md": b"# A\n\xff\xfe\n"})
    run.edit({G + "a.md": "# A\n"})
    assert run.updated == 3


def test_flat_layout_with_users_and_unsaved_pages(tmp_path: Path) -> None:
    """The knowledge folder is the project's root (flat layout, a users folder): an unsaved
    page is added and typed into while pages on disk read its heading, a user's page and a
    file beside the pages."""
    proj = Project(tmp_path / "p")
    proj.write(
        {
            "knowl.toml": 'knowledge_dir = "."\n[knowledge]\nlayout = "flat"\n'
            'users_dir = "people"\n',
            "_index.md": "# Home\n\n[[docs/b#Later]] [x](docs/b.md#later) [[new#H]] "
            "[y](people/u1/mine.md) [z](src/app.py)\n",
            "docs/b.md": "# B\n",
            "people/u1/mine.md": "# Mine\n",
            "src/app.py": "x = 1\n",
        }
    ).commit("start")
    workspace = Workspace(proj.root)
    workspace_same(workspace)
    for path, text in (
        ("new.md", "# New\n"),
        ("new.md", "# New\n\n## H\n"),
        ("docs/b.md", "# B\n\n## Later\n"),
        ("people/u1/mine.md", "# Mine\n\n[[new]]\n"),
        ("new.md", "# New\n"),
    ):
        workspace.open(path, text)
        workspace_same(workspace)


def test_an_affected_path_outside_the_knowledge_folder_changes_in_the_working_tree(
    tmp_path: Path,
) -> None:
    """KB204 compares an affected path in the working tree with `source_commit`: the file
    edited (no page, no semantic file, HEAD where it was), then a body edit of another page.
    The session keeps the last run's git facts, in which the file had not changed."""
    run = Run(tmp_path, {"src/app.py": "x = 1\n", G + "b.md": "# B\n"})
    base = run.proj.run_git("rev-parse", "HEAD").strip()
    run.edit({G + "a.md": f"---\nsource_commit: {base}\naffected_paths: [src/app.py]\n---\n# A\n"})
    run.proj.write({"src/app.py": "x = 2\n"})
    run.edit({G + "b.md": "# B\n\nedited\n"})


def test_an_affected_page_is_edited(tmp_path: Path) -> None:
    """A page says a change to another page affects it; that page is edited and saved: the
    session keeps the git facts in which the affected page had not changed."""
    run = Run(tmp_path, {G + "c.md": "# C\n"})
    base = run.proj.run_git("rev-parse", "HEAD").strip()
    run.edit({G + "a.md": f"---\nsource_commit: {base}\naffected_paths: [{G}c.md]\n---\n# A\n"})
    run.edit({G + "c.md": "# C\n\nedited\n"})


def test_a_file_outside_the_knowledge_folder_appears_and_the_linking_page_is_edited(
    tmp_path: Path,
) -> None:
    """A Markdown link to `../../README.md`, missing at the start; the file is created (outside
    the knowledge folder: no input changes), then the linking page is edited. The index the
    session carries on keeps its lookups on disk (`LinkSettings.asked`), made at the start."""
    run = Run(tmp_path, {G + "a.md": "# A\n\n[readme](../../README.md)\n", G + "b.md": "# B\n"})
    run.proj.write({"README.md": "# Readme\n"})
    run.edit({G + "a.md": "# A\n\n[readme](../../README.md)\n\nedited\n"})


def test_a_file_outside_the_knowledge_folder_goes_while_another_page_is_edited(
    tmp_path: Path,
) -> None:
    """The linked file is removed, then a page that does not link it is edited: the linking
    page's findings come from the ledger, which `knowl check` holds to its memo of the
    lookups (`pipeline.memos`) and the session does not."""
    run = Run(
        tmp_path,
        {"README.md": "# R\n", G + "a.md": "# A\n\n[r](../../README.md)\n", G + "b.md": "# B\n"},
    )
    (run.proj.root / "README.md").unlink()
    run.edit({G + "b.md": "# B\n\nedited\n"})


def test_a_keystroke_keeps_the_other_pages_in_the_parse_cache(tmp_path: Path) -> None:
    """After one keystroke the resident parse cache (and its file) should still hold every
    unchanged page: the next new session (a commit, a new page) parses only what changed.
    `Session.update` parses the edited page alone, so `used` holds only it, and `save` finds
    most entries stale and rewrites the cache with the edited page alone."""
    run = Run(tmp_path, {G + f"p{i}.md": f"# P{i}\n" for i in range(10)})
    digests = {path: digest for path, (_, digest) in run.inputs().pages.items()}
    run.edit({G + "p0.md": "# P0\n\nmore\n"})
    assert run.updated == 1
    on_disk = ParseCache(run.caches.folder, run.cache.key, machine=run.caches.key)
    kept = [path for path, digest in digests.items() if digest in on_disk.entries]
    assert len(kept) >= 9, kept


def test_an_explicit_configuration_file_changes(tmp_path: Path) -> None:
    """The server started with `--config conf/knowl.toml`: an edit of that file should be read
    anew, as one of `knowl.toml` is; `Workspace._reload_if_changed` stamps only the root's
    `knowl.toml` and `pyproject.toml`, so the session carries on with the old rules."""
    proj = Project(tmp_path / "p")
    proj.write(
        {G + "a.md": "# A\n\n[[missing]]\n", "conf/knowl.toml": "[rules]\nKB103 = 'error'\n"}
    ).commit("start")
    workspace = Workspace(proj.root, proj.root / "conf" / "knowl.toml")
    workspace_same(workspace)
    proj.write({"conf/knowl.toml": "[rules]\nKB103 = 'off'\n"})
    workspace.open(G + "a.md", "# A\n\n[[missing]]\n\ntyped\n")
    workspace.refresh()
    assert workspace.analysis is not None
    assert not [d for d in workspace.analysis.diagnostics if d.code == "KB103"]


def test_typing_markdown_links_out_of_the_knowledge_folder_keeps_memory_bounded(
    tmp_path: Path,
) -> None:
    """Typing a Markdown link to a file outside the knowledge folder asks the disk for each
    prefix typed; the session's index carries its `LinkSettings.asked` (one `ProjectFiles`)
    from update to update and the ledger's `linked` takes it all in, so both grow with every
    keystroke until a new session, whatever the pages link now."""
    run = Run(tmp_path, {G + "a.md": "# A\n", G + "b.md": "# B\n"})
    session = run.session
    for i in range(200):
        run.proj.write({G + "a.md": f"# A\n\n[x](../../{'r' * (i % 50)}{i})\n"})
        session = session.update(run.inputs(), run.today) or session
    ledger = session.analysis.ledger
    assert ledger is not None
    asked = session.resolved.index.link_settings.asked
    # A new session starts past MAX_LOOKUPS: what is kept stays bounded.
    assert len(asked) <= session_module.MAX_LOOKUPS + 2
    assert len(ledger.linked) <= session_module.MAX_LOOKUPS + 2


def test_the_editor_shows_a_stale_link_to_a_file_outside_the_knowledge_folder(
    tmp_path: Path,
) -> None:
    """Through the Workspace: README.md is created beside the knowledge folder (the polled
    stamp covers only the knowledge and semantic folders), then the linking page is typed
    into: KB103 stays."""
    proj = Project(tmp_path / "p")
    proj.write({G + "a.md": "# A\n\n[r](../../README.md)\n"}).commit("start")
    workspace = Workspace(proj.root)
    workspace_same(workspace)
    proj.write({"README.md": "# R\n"})
    workspace.open(G + "a.md", "# A\n\n[r](../../README.md)\n\ntyped\n")
    workspace_same(workspace)


def test_a_buffer_with_a_lone_surrogate(tmp_path: Path) -> None:
    """JSON lets the client send `\\ud800` in a buffer's text; `Workspace._overlaid` encodes
    it with `text.encode("utf-8")`, which raises: every analysis fails (the server says "the
    analysis failed") until the buffer changes, and no page's findings are published."""
    proj = Project(tmp_path / "p")
    proj.write({G + "a.md": "# A\n", G + "b.md": "# B\n\n[[missing]]\n"}).commit("start")
    workspace = Workspace(proj.root)
    workspace_same(workspace)
    workspace.open(G + "a.md", "# A\ud800\n")
    workspace_same(workspace)
