"""The documentation site: it builds with --strict, its reference pages cover the code, and the
README's links resolve. And the habits around it: one ruff and one mypy everywhere, CI as one
script.

The site is built once per session (`mkdocs build --strict` into a temporary folder, about a
second); the generators under docs/hooks/ are also tested on their own, with tables of their
own, so a change in the shape they read fails here first.
"""

from __future__ import annotations

import html
import importlib.util
import inspect
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import click
import markdown
import pytest
import yaml

from knowl_build import DOCS_URL
from knowl_build.cli import cli
from knowl_build.rules.registry import RULES

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _hook(name: str) -> ModuleType:
    """A module of docs/hooks/, loaded from its path as MkDocs loads it."""
    spec = importlib.util.spec_from_file_location(
        f"knowl_docs_{name}", ROOT / "docs" / "hooks" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _hook("reference")
click_help = _hook("click_help")


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}{run.stderr}"
    return out


def _page(site: Path, url_path: str) -> str:
    """The HTML of a page by its URL path under the site (`rules/`, `` for the home page)."""
    assert url_path == "" or url_path.endswith("/"), (
        f"{url_path!r}: pages are folders (use_directory_urls)"
    )
    page = site / url_path / "index.html"
    assert page.is_file(), f"no page at {url_path!r}"
    return page.read_text(encoding="utf-8")


def _ids(page_html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page_html))


def test_site_builds_strict_and_lives_at_docs_url(site: Path) -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["site_url"].rstrip("/") == DOCS_URL
    assert (site / "index.html").is_file()
    # The hooks are code: they are not published as pages or files.
    assert not (site / "hooks").exists()


def _commands(group: click.Command, path: str = "knowl") -> Iterator[str]:
    yield path
    if isinstance(group, click.Group):
        # As help lists them: the `knowl` group imports each command's module on demand.
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None
            yield from _commands(command, f"{path} {name}")


def test_every_command_and_subcommand_is_on_the_commands_page(site: Path) -> None:
    page = _page(site, "commands/")
    ids = _ids(page)
    paths = list(_commands(cli))
    assert len(paths) > 10
    for path in paths:
        anchor = path.replace(" ", "-")
        assert anchor in ids, f"{path}: no section #{anchor} on the commands page"
        assert f"{path}<" in page, f"{path}: no heading on the commands page"


def test_command_help_keeps_placeholders_and_examples(site: Path) -> None:
    page = _page(site, "commands/")
    code = html.unescape(
        "\n".join(re.findall(r'<code class="language-text">(.*?)</code>', page, flags=re.DOTALL))
    )
    examples = placeholders = 0
    for path in _commands(cli):
        command: click.Command = cli
        for name in path.split()[1:]:
            assert isinstance(command, click.Group)
            found = command.get_command(click.Context(command), name)
            assert found is not None
            command = found
        for line in inspect.cleandoc(command.help or "").splitlines():
            if line.startswith("  ") and line.strip():
                # click prints a `\b` block as it is written: on the site, it is code.
                examples += 1
                assert line.strip() in code, f"{path}: {line.strip()!r} is not code"
            else:
                # click's help is text: `<out_dir>` is shown, not swallowed as an HTML tag.
                for placeholder in re.findall(r"<[^<>]+>", line):
                    placeholders += 1
                    assert html.escape(placeholder) in page, f"{path}: {placeholder} is not text"
    assert examples > 10 and placeholders > 0


def test_every_rule_has_its_anchor_where_sarif_points(site: Path) -> None:
    page = _page(site, "rules/")
    ids = _ids(page)
    for rule in RULES:
        assert rule.code.lower() in ids, f"{rule.code}: no #{rule.code.lower()} on the rules page"
        assert html.escape(rule.name) in page
    # Every helpUri of the SARIF log (the golden file, itself checked against the code) resolves.
    sarif = json.loads((ROOT / "tests" / "golden" / "check.sarif").read_text(encoding="utf-8"))
    uris = [rule["helpUri"] for run in sarif["runs"] for rule in run["tool"]["driver"]["rules"]]
    assert len(uris) == len(RULES)
    for uri in uris:
        _assert_resolves(site, uri)


def test_every_configuration_key_is_on_the_configuration_page(site: Path) -> None:
    from knowl_build.core import config

    schema = getattr(config, "SCHEMA", None)
    if schema is None:
        pytest.skip("knowl_build.core.config.SCHEMA is not declared yet")
    page = _page(site, "configuration/")
    ids = _ids(page)
    keys = [option.key for option in schema]
    assert keys, "the configuration schema is empty"
    for key in keys:
        assert html.escape(key, quote=False) in page, f"{key}: not on the configuration page"
        assert reference.option_anchor(key) in ids, f"{key}: no anchor on the configuration page"


def _assert_resolves(site: Path, url: str) -> None:
    assert url.startswith(DOCS_URL + "/"), url
    path, _, anchor = url[len(DOCS_URL) + 1 :].partition("#")
    page = _page(site, path)
    if anchor:
        assert anchor in _ids(page), f"{url}: no #{anchor} on that page"


def _readme_prose() -> str:
    """The README less its code blocks and code spans."""
    text = README.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def _readme_links() -> list[str]:
    text = _readme_prose()
    return re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"<(https?://[^>\s]+)>", text)


def _github_slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_links_resolve(site: Path) -> None:
    links = _readme_links()
    headings = re.findall(r"^#+ (.+)$", _readme_prose(), flags=re.MULTILINE)
    slugs = {_github_slug(heading) for heading in headings}
    into_docs = 0
    for link in links:
        if link.startswith("#"):
            assert link[1:] in slugs, f"README: {link} names no heading of the README"
        elif link.startswith(DOCS_URL):
            into_docs += 1
            _assert_resolves(site, link)
        elif not re.match(r"[a-z]+:", link):
            assert (ROOT / link.split("#")[0]).exists(), (
                f"README: {link} names no file of the repository"
            )
    assert into_docs >= 10, "the README should lead into the documentation"
    for page in ("rules/", "commands/", "configuration/", "ci/", "getting-started/"):
        assert f"{DOCS_URL}/{page}" in links, f"README: no link to {page}"


def test_readme_is_short_and_keeps_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "pip install . && knowl build --repo sample_repo\n" in text
    test_command = 'pip install -e ".[test]" && python -m pytest'
    assert test_command + "\n" in text
    # CI runs exactly the README's test command, so a missing install step fails CI.
    assert test_command + "\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_one_ruff_and_one_mypy_for_pre_commit_ci_and_the_workflow() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    test_extra = pyproject["project"]["optional-dependencies"]["test"]
    pins = {re.split(r"[=<>~!\[ ]", req, maxsplit=1)[0]: req for req in test_extra}
    for tool in ("ruff", "mypy", "import-linter", "mkdocs", "mkdocs-click"):
        assert re.fullmatch(rf"{tool}==[\w.]+", pins[tool]), (
            f"{tool}: pin one version, not {pins[tool]!r}"
        )
        assert pins[tool] == f"{tool}=={version(tool)}", (
            f"{tool}: installed {version(tool)}; reinstall .[test]"
        )
    # pre-commit runs the environment's ruff and mypy (the pinned ones), not copies of its own.
    precommit = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = {
        hook["id"]: (repo["repo"], hook) for repo in precommit["repos"] for hook in repo["hooks"]
    }
    for hook_id in ("ruff", "ruff-format", "mypy", "lint-imports"):
        repo, hook = hooks[hook_id]
        assert (repo, hook["language"]) == ("local", "system"), hook_id
        assert "files" not in hook or hook_id == "lint-imports", f"{hook_id} skips files"
    # The workflow runs .ci/run, which runs the linters, the site and the README's tests.
    workflow = yaml.safe_load(
        (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    )
    assert {"run": "bash .ci/run"} in workflow["jobs"]["test"]["steps"]
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for step in ("ruff check .", "ruff format --check .", "mypy", "lint-imports"):
        assert step in ci_run, step
    assert any(line.startswith('mkdocs build --strict --site-dir "$tmp/') for line in ci_run)


# The generators, on tables of their own.


class FakeOption(NamedTuple):
    key: str
    kind: str
    default: object
    doc: str


FAKE_SCHEMA = (
    FakeOption("knowledge_dir", "string", "knowledge", "Where the pages live."),
    FakeOption("repo_name", "string", None, "The repository's name in federated answers."),
    FakeOption("staleness_days", "integer >= 0", 90, "Days before a page is stale (`KB202`)."),
    FakeOption("rules.<CODE>", "severity", "the rule's default", "A rule's severity."),
    FakeOption(
        "rules.per-path.<glob>.<CODE>", "severity", None, "A rule's severity on matching paths."
    ),
    FakeOption("search.boosts", "table", {"summary": 3.0, "tags": 2.0}, "Field boosts."),
    FakeOption("security.reject_secrets", "boolean", True, "Report secrets."),
    FakeOption("security.extra_patterns", "list of strings", (), "More secrets."),
    FakeOption("semantics.dbt.project_dir", "string", None, "The dbt project."),
)


def _render(text: str) -> str:
    return markdown.markdown(text, extensions=["toc", "attr_list", "tables"])


def test_configuration_reference_has_every_key_with_its_anchor_default_and_doc() -> None:
    source = reference.config_reference(FAKE_SCHEMA)
    page = _render(source)
    ids = _ids(page)
    for option in FAKE_SCHEMA:
        assert f"<code>{html.escape(option.key, quote=False)}</code>" in page
        assert reference.option_anchor(option.key) in ids
    assert len({reference.option_anchor(o.key) for o in FAKE_SCHEMA}) == len(FAKE_SCHEMA)
    # Defaults as they are written in knowl.toml; `>=` is text.
    for expected in (
        '"knowledge"',
        "<code>90</code>",
        "{ summary = 3.0, tags = 2.0 }",
        "<code>true</code>",
        "<code>[]</code>",
        "integer &gt;= 0",
        "default none",
    ):
        assert expected in page, expected
    # One section per TOML table, in the order of the schema.
    tables = re.findall(r"^## (.+?) \{", source, flags=re.MULTILINE)
    assert tables == ["Top-level keys", "`[rules]`", "`[search]`", "`[security]`", "`[semantics]`"]


def test_configuration_default_without_a_toml_spelling_is_an_error() -> None:
    with pytest.raises(TypeError, match="no TOML spelling"):
        reference.config_reference([FakeOption("x", "thing", object(), "")])


class FakeRule(NamedTuple):
    code: str
    name: str
    default: str
    summary: str
    doc: str


def test_rules_reference_anchors_each_code_and_keeps_placeholders_as_text() -> None:
    rules = [
        FakeRule(
            "KB004",
            "misplaced-page",
            "error",
            "outside user/<owner>/ | elsewhere",
            "See `<owner>` and <owner>.",
        ),
        FakeRule("KB401", "secret", "error", "a secret", "Stops at one of `< > |`."),
    ]
    page = _render(reference.rules_reference(rules))
    assert {"kb004", "kb401"} <= _ids(page)
    assert "user/&lt;owner&gt;/ | elsewhere" in page  # one cell, not two
    assert page.count("<td>") == 2 * 4
    assert "<code>&lt;owner&gt;</code> and &lt;owner&gt;." in page
    assert "<code>&lt; &gt; |</code>" in page


def test_generated_sections_are_named() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").rstrip("\n")
    assert reference.expand("a\n<!-- generated: changelog -->\nb") == f"a\n{changelog}\nb"
    with pytest.raises(Exception, match="unknown generated section"):
        reference.expand("<!-- generated: nothing -->")


def test_click_help_examples_become_code_and_text_is_escaped() -> None:
    lines = [
        "Publish the build at <out_dir>/CURRENT.",
        "",
        "Examples:",
        "  knowl build",
        "  knowl build \\",
        "      --full",
        "",
        "More.",
    ]
    assert click_help.describe(lines) == [
        "Publish the build at &lt;out_dir&gt;/CURRENT.",
        "",
        "Examples:",
        "",
        "```text",
        "knowl build",
        "knowl build \\",
        "    --full",
        "```",
        "",
        "",
        "More.",
    ]
