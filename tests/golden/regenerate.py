"""Regenerate the golden files: `python -m tests.golden.regenerate` from the repository root.

Golden files are never edited by hand; review the diff this script makes. (The reference
pages of the documentation are generated when the site is built: see docs/hooks/.)
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
            run = runner.invoke(
                cli,
                ["check", "--repo", str(project.root), "--format", fmt],
                env={"GITHUB_ACTIONS": ""},
            )
            assert run.exit_code == 1, run.output
            result[name] = run.stdout
        return result


def main() -> None:
    for name, text in outputs().items():
        (HERE / name).write_text(text, encoding="utf-8")
        print(f"wrote tests/golden/{name}")


if __name__ == "__main__":
    main()
