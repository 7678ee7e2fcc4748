"""Trust, round three (issue 21, items 3, 6 and 10): what a named output path is, and what output
carries.

- `--sarif FILE` writes what FILE names and never replaces it: a device or a FIFO is written
  through (a failed write is one line, exit 2), a symlink's target is written (the link stays),
  a regular or absent path is written atomically. `--sarif /dev/stdout` prints.
  $GITHUB_STEP_SUMMARY is appended the same way.
- A ref name given to `--baseline` passes the one redaction wherever it is printed.
- JSON a command prints escapes DEL, the C1 controls, the line separators and the bidi
  controls as `\\uXXXX`; text output escapes the bidi controls too. Artifact files keep their
  bytes.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.helpers import Project, current_build, invoke

PAGES = {
    "knowl.toml": "[rules]\nKB202 = 'off'\n",
    "knowledge/global/revenue.md": "---\nsummary: Revenue is the sum of orders\n---\n# Revenue\n",
}
COMMANDS = [["check", "-q"], ["build", "-q"]]
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")


def _sarif(text: str | bytes) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(text)
    assert log["version"] == "2.1.0"
    return log


def _one_line_error(result: Result, *parts: str) -> None:
    assert result.stderr.startswith("knowl: error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    for part in parts:
        assert part in result.stderr, result.stderr


def _no_temporary_files(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".knowl-")]


# --- --sarif FILE is written, never replaced ------------------------------------------------


@ROOT_ONLY
@pytest.mark.parametrize("command", COMMANDS)
def test_sarif_to_a_char_device_is_written_through(
    project: Callable[..., Project], tmp_path: Path, command: list[str]
) -> None:
    proj = project(PAGES)
    null, full = tmp_path / "null", tmp_path / "full"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    invoke([*command, "--repo", str(proj.root), "--sarif", str(null)])
    assert stat.S_ISCHR(null.lstat().st_mode)
    # /dev/full: the write fails (ENOSPC), and says so; the node is still the device.
    result = invoke([*command, "--repo", str(proj.root), "--sarif", str(full)], code=2)
    _one_line_error(result, f"{full}: cannot write the SARIF log", "No space left on device")
    assert stat.S_ISCHR(full.lstat().st_mode)
    _no_temporary_files(tmp_path)


@pytest.mark.parametrize("command", COMMANDS)
def test_sarif_to_a_fifo_is_written_through(
    project: Callable[..., Project], tmp_path: Path, command: list[str]
) -> None:
    proj = project(PAGES)
    fifo = tmp_path / "sarif.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as reader:
            got.append(reader.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    invoke([*command, "--repo", str(proj.root), "--sarif", str(fifo)])
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    _sarif(got[0])
    _no_temporary_files(tmp_path)


@pytest.mark.parametrize("command", COMMANDS)
def test_sarif_through_a_symlink_writes_its_target(
    project: Callable[..., Project], tmp_path: Path, command: list[str]
) -> None:
    proj = project(PAGES)
    real = tmp_path / "out" / "realfile"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "linkfile"
    link.symlink_to(Path("out") / "realfile")  # relative, as `ln -s` makes one
    invoke([*command, "--repo", str(proj.root), "--sarif", str(link)])
    assert link.is_symlink() and os.readlink(link) == str(Path("out") / "realfile")
    _sarif(real.read_text())
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    _no_temporary_files(tmp_path)
    _no_temporary_files(real.parent)

    # A link to a file not there yet: the target is created, the link stays a link.
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "out" / "new.sarif")
    invoke([*command, "--repo", str(proj.root), "--sarif", str(dangling)])
    assert dangling.is_symlink()
    _sarif((tmp_path / "out" / "new.sarif").read_text())


def test_sarif_to_a_regular_or_absent_path_is_atomic(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    proj = project(PAGES)
    absent = tmp_path / "new" / "knowl.sarif"
    invoke(["check", "-q", "--repo", str(proj.root), "--sarif", str(absent)])
    _sarif(absent.read_text())
    before = absent.stat().st_ino
    invoke(["check", "-q", "--repo", str(proj.root), "--sarif", str(absent)])
    _sarif(absent.read_text())
    assert absent.stat().st_ino != before  # renamed into place, not written in place
    _no_temporary_files(absent.parent)
    # A folder is refused in one line, and left as it is.
    result = invoke(["check", "-q", "--repo", str(proj.root), "--sarif", str(tmp_path)], code=2)
    _one_line_error(result, "cannot write the SARIF log")
    _no_temporary_files(tmp_path)


def test_sarif_to_dev_stdout_prints(project: Callable[..., Project], tmp_path: Path) -> None:
    proj = project(PAGES)
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")  # what /dev/stdout is
    args = [sys.executable, "-m", "knowl_build", "check", "-q", "--repo", str(proj.root)]
    done = subprocess.run(
        [*args, "--sarif", str(stdout)], capture_output=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    _sarif(done.stdout)
    assert stdout.is_symlink()
    # Standard output sent to a file (`> out.sarif`): the file the shell opened gets the log.
    out = tmp_path / "out.sarif"
    with open(out, "wb") as handle:
        done = subprocess.run(
            [*args, "--sarif", str(stdout)], stdout=handle, check=False, timeout=120
        )
    assert done.returncode == 0
    _sarif(out.read_bytes())
    assert stdout.is_symlink()


def test_step_summary_is_appended_through_what_it_names(
    project: Callable[..., Project], tmp_path: Path
) -> None:
    proj = project(PAGES)
    real = tmp_path / "summary.md"
    real.write_text("before\n")
    link = tmp_path / "summary-link"
    link.symlink_to(real)
    args = ["check", "--format", "github", "--repo", str(proj.root)]
    invoke(args, env={"GITHUB_STEP_SUMMARY": str(link)})
    assert link.is_symlink()
    assert real.read_text().startswith("before\n") and "knowl check" in real.read_text()
    if os.geteuid() == 0:
        full = tmp_path / "full"
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        result = invoke(args, code=2, env={"GITHUB_STEP_SUMMARY": str(full)})
        _one_line_error(result, "GITHUB_STEP_SUMMARY", "No space left on device")
        assert stat.S_ISCHR(full.lstat().st_mode)


# --- a ref name passes the redaction --------------------------------------------------------

KEY_REF = "v-AKIAQWERTYUIOPASDFGH"  # AKIA and 16 more: an AWS access key id to the scanner


def test_baseline_ref_named_like_a_secret_is_redacted(project: Callable[..., Project]) -> None:
    proj = project(PAGES)
    proj.run_git("tag", KEY_REF)
    proj.run_git("branch", f"feat/{KEY_REF[2:]}")
    root = str(proj.root)
    for ref in (KEY_REF, f"feat/{KEY_REF[2:]}"):
        for command in (["check"], ["build"]):
            result = invoke([*command, "--repo", root, "--baseline", ref])
            assert "AKIA" not in result.stdout + result.stderr
            assert "known finding(s) hidden: they are in the project at " in result.stderr
            assert "[redacted]" in result.stderr
        result = invoke(["check", "--repo", root, "--baseline", ref, "--format", "json"])
        assert "AKIA" not in result.stdout + result.stderr
        assert json.loads(result.stdout)["baseline"]["ref"].endswith("[redacted]")
        result = invoke(["check", "--repo", root, "--baseline", ref, "--format", "sarif"])
        assert "AKIA" not in result.stdout + result.stderr
        for shown in (
            invoke(["show", "revenue", "--repo", root, "--at", ref]),
            invoke(["show", "revenue", "--repo", root, "--at", ref, "--json"]),
        ):
            assert "AKIA" not in shown.stdout + shown.stderr
    # A ref that is not there: redacted as well.
    result = invoke(["check", "--repo", root, "--baseline", "v-AKIAZXCVBNMLKJHGFDSA"], code=2)
    assert "AKIA" not in result.stdout + result.stderr


# --- JSON and text output escape what a terminal acts on ------------------------------------

TITLE = "A\x1b[31mred\a\x00nul\x7f\u0085nel\u2028ls\u202eRLO\x9b31m\u2066iso\u2069"
ACTED_ON = {0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F)}
ACTED_ON |= set(range(0x2066, 0x206A)) | set(range(0x00, 0x20)) - {0x0A}


def _raw(text: str) -> list[str]:
    return [hex(ord(c)) for c in text if ord(c) in ACTED_ON]


def test_json_output_escapes_terminal_controls(project: Callable[..., Project]) -> None:
    proj = project(
        {
            **PAGES,
            "knowledge/global/revenue.md": f"---\ntitle: {json.dumps(TITLE)}\nsummary: s\n---\n"
            "# R\n\n[[gone\u202e\x7f\x9bx]]\n",
        }
    )
    root = str(proj.root)
    invoke(["build", "--allow-errors", "--repo", root])
    artifact = (current_build(proj.root) / "graph.json").read_text(encoding="utf-8")
    assert "\u202e" in artifact and "\x7f" in artifact  # the artifact's bytes are data

    graph = invoke(["graph", "--repo", root]).stdout
    assert not _raw(graph.replace("\n", ""))
    assert json.loads(graph) == json.loads(artifact)  # the same value, escaped
    assert "\\u009b31m" in graph and "\\u202eRLO" in graph and "\\u007f" in graph

    shown = invoke(["show", "revenue", "--repo", root, "--json"]).stdout
    assert not _raw(shown.replace("\n", ""))
    assert json.loads(shown)["title"] == TITLE

    for fmt in ("json", "sarif"):
        out = invoke(["check", "--repo", root, "--format", fmt], code=1).stdout
        assert not _raw(out.replace("\n", ""))
        assert "\u202e" in json.dumps(json.loads(out), ensure_ascii=False)


def test_text_output_escapes_bidi_controls(project: Callable[..., Project]) -> None:
    proj = project(
        {
            **PAGES,
            "knowledge/global/revenue.md": f"---\ntitle: {json.dumps(TITLE)}\nsummary: s\n---\n"
            "# R\n\nBody \u202etxt.exe\u202c \u2067x\u2069\n",
        }
    )
    root = str(proj.root)
    invoke(["build", "--repo", root])
    for args in (["show", "revenue"], ["search", "revenue"], ["graph", "--format", "dot"]):
        out = invoke([*args, "--repo", root]).stdout
        assert not _raw(out.replace("\n", "")), args
    out = invoke(["show", "revenue", "--repo", root]).stdout
    assert "\\u202eRLO" in out and "\\u202etxt.exe\\u202c \\u2067x\\u2069" in out
