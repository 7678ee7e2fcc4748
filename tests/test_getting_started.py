"""The getting-started walkthrough (docs/getting-started.md, "A first hour"), run as written.

Every `$ command` of the section's console blocks runs in one shell, in order, in a temporary
folder, with this environment's `knowl`; what each prints must be what the page shows, up to
what differs from run to run (commit and build ids, timestamps, timings, the folder).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import AUTHOR

PAGE = Path(__file__).resolve().parent.parent / "docs" / "getting-started.md"
HOME = "/home/ada"
_HEREDOC = re.compile(r"<<'(\w+)'\s*$")
_VARIABLE = [
    (re.compile(r"\b[0-9a-f]{12}(?:-dirty-[0-9a-f]{8})?\b"), "<id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "<time>"),
    (re.compile(r"\(\d{4}-\d\d-\d\d, "), "(<date>, "),
    (re.compile(r"\d+\.\d\d\b"), "<s>"),
]


def steps(page: str) -> list[tuple[str, list[str]]]:
    """The section's commands, each with the lines the page shows it printing."""
    section = page.split("## A first hour", 1)[1].split("\n## ", 1)[0]
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", section, re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            command = [lines[i].removeprefix("$ ")]
            i += 1
            heredoc = _HEREDOC.search(command[0])
            if heredoc is not None:
                while lines[i] != heredoc.group(1):
                    command.append(lines[i])
                    i += 1
                command.append(lines[i])
                i += 1
            output = []
            while i < len(lines) and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
            found.append(("\n".join(command), output))
    return found


def normalized(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        for pattern, placeholder in _VARIABLE:
            line = pattern.sub(placeholder, line)
        out.append(line.rstrip())
    return out


def test_the_first_hour_runs_as_written(tmp_path: Path) -> None:
    walkthrough = steps(PAGE.read_text(encoding="utf-8"))
    assert len(walkthrough) >= 12 and walkthrough[0][0].startswith("git init")
    # Each command a minute after the one before, as a person types them: the review's
    # timestamp differs from the pages' (knowl's clock is SOURCE_DATE_EPOCH when it is set).
    start = int(time.time())
    script = ["set -u"]
    for n, (command, _) in enumerate(walkthrough):
        script += [f"export SOURCE_DATE_EPOCH={start + 60 * n}", f"printf '@@@ {n}\\n'"]
        script += ["{", command, "} 2>&1", "printf '@@@ rc %s\\n' $?"]
    env = {
        **os.environ,
        **AUTHOR,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "COLUMNS": "80",
        "NO_COLOR": "1",
        "TERM": "dumb",
        "HOME": str(tmp_path),
    }
    env.pop("GITHUB_ACTIONS", None)
    run = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    printed = run.stdout.replace(str(tmp_path), HOME)
    # "@@@ n\n<output>@@@ rc <code>\n" for each command, in order.
    answers = re.findall(r"@@@ (\d+)\n(.*?)@@@ rc (\d+)\n", printed, re.S)
    assert [int(n) for n, _, _ in answers] == list(range(len(walkthrough))), run.stderr
    for (command, expected), (_, output, code) in zip(walkthrough, answers, strict=True):
        assert code == "0", f"$ {command}\n{output}"
        assert normalized(output.splitlines()) == normalized(expected), f"$ {command}"
