"""Regenerate the golden files: `python -m tests.golden.regenerate` from the repository root.

Golden files are never edited by hand; review the diff this script makes.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from click.testing import CliRunner

from knowl_build.cli import cli
from tests.golden_project import FILES
from tests.helpers import Project

HERE = Path(__file__).parent
FORMATS = {"json": "check.json", "github": "check.github", "sarif": "check.sarif"}


def outputs() -> dict[str, str]:
    os.environ["SOURCE_DATE_EPOCH"] = "1780000000"
    with tempfile.TemporaryDirectory() as tmp:
        project = Project(Path(tmp) / "proj").write(FILES)
        project.commit("golden")
        runner = CliRunner()
        result: dict[str, str] = {}
        for fmt, name in FORMATS.items():
            run = runner.invoke(cli, ["check", "--repo", str(project.root), "--format", fmt],
                                env={"GITHUB_ACTIONS": ""})
            assert run.exit_code == 1, run.output
            result[name] = run.stdout
        return result


README = HERE.parent.parent / "README.md"
COMMANDS = ["check", "build", "search", "show", "traverse", "timeline", "store", "supersede", "review", "conflicts", "stale", "fix", "graph", "verify", "mcp", "rules"]


def help_text(command: str | None) -> str:
    args = [command, "--help"] if command else ["--help"]
    run = CliRunner().invoke(cli, args, prog_name="knowl", terminal_width=88, max_content_width=88)
    assert run.exit_code == 0, run.output
    return run.stdout


def readme_sections() -> dict[str, str]:
    """The README's generated sections: the command reference and the rule table."""
    from knowl_build.rules.registry import RULES

    commands = ["```text\n$ knowl --help\n" + help_text(None) + "```\n"]
    for command in COMMANDS:
        commands.append(f"```text\n$ knowl {command} --help\n" + help_text(command) + "```\n")
    rows = ["| code | name | default | when |", "| --- | --- | --- | --- |"]
    rows += [f"| {r.code} | {r.name} | {r.default} | {r.summary} |" for r in RULES]
    docs = [f"- **{r.code} {r.name}**: {r.doc}" for r in RULES]
    return {
        "commands": "\n".join(commands),
        "rules": "\n".join(rows) + "\n\n" + "\n".join(docs) + "\n",
    }


def render_readme(text: str) -> str:
    for name, body in readme_sections().items():
        begin, end = f"<!-- BEGIN {name} (generated) -->", f"<!-- END {name} -->"
        head, sep, rest = text.partition(begin)
        if not sep:
            raise SystemExit(f"README.md has no '{begin}' marker")
        _, sep2, tail = rest.partition(end)
        if not sep2:
            raise SystemExit(f"README.md has no '{end}' marker")
        text = f"{head}{begin}\n{body}{end}{tail}"
    return text


def main() -> None:
    for name, text in outputs().items():
        (HERE / name).write_text(text, encoding="utf-8")
        print(f"wrote tests/golden/{name}")
    README.write_text(render_readme(README.read_text(encoding="utf-8")), encoding="utf-8")
    print("updated README.md (command reference, rules)")


if __name__ == "__main__":
    main()
