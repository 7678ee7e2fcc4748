from __future__ import annotations

from pathlib import Path

import pytest

from knowl_build.app.project import load_config
from knowl_build.core.config import Config
from knowl_build.core.errors import ConfigError
from knowl_build.rules.registry import severity
from tests.helpers import invoke


def write(root: Path, name: str, text: str) -> None:
    (root / name).write_text(text, encoding="utf-8")


def test_defaults_without_file(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == Config()
    assert severity(config, "KB202") == "warning"
    assert config.search.boosts == {
        "summary": 3.0,
        "tags": 2.0,
        "title": 1.0,
        "body": 1.0,
        "headings": 0.5,
    }


def test_partial_tables_merge_over_defaults(tmp_path: Path) -> None:
    write(
        tmp_path,
        "knowl.toml",
        "staleness_days = 30\n[rules]\nKB202 = 'off'\n"
        "[search]\nboosts = { title = 5 }\n[security]\nextra_patterns = ['acme-internal']\n",
    )
    config = load_config(tmp_path)
    assert config.staleness_days == 30
    assert severity(config, "KB202") == "off"
    assert config.search.boosts == {
        "summary": 3.0,
        "tags": 2.0,
        "title": 5.0,
        "body": 1.0,
        "headings": 0.5,
    }
    assert config.search.max_caveats == 3
    assert config.security.extra_patterns == ("acme-internal",)
    assert config.security.reject_secrets is True


def test_pyproject_tool_table(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n[tool.knowl]\nkeep_builds = 5\n")
    assert load_config(tmp_path).keep_builds == 5


def test_pyproject_without_tool_table_is_defaults(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n")
    assert load_config(tmp_path) == Config()


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "staleness_day = 3\n",
            "knowl.toml: 'staleness_day': unknown key (did you mean 'staleness_days'?)",
        ),
        ("[rules]\nKB999 = 'off'\n", "knowl.toml: 'rules.KB999': unknown rule code"),
        (
            "[rules]\nKB202 = 'of'\n",
            "knowl.toml: 'rules.KB202': severity must be one of error, warning, info, off, got 'of' (did you mean 'off'?)",
        ),
        (
            "[search]\nboosts = { summry = 2.0 }\n",
            "knowl.toml: 'search.boosts.summry': unknown key (did you mean 'summary'?)",
        ),
        (
            "[search]\nboosts = { body = 0 }\n",
            "knowl.toml: 'search.boosts.body': must be a number greater than 0, at most 1000, got 0",
        ),
        (
            "staleness_days = 'ninety'\n",
            "knowl.toml: 'staleness_days': expected an integer, got str",
        ),
        ("keep_builds = 0\n", "knowl.toml: 'keep_builds': must be at least 1, got 0"),
        (
            "[security]\nreject_secrets = 1\n",
            "knowl.toml: 'security.reject_secrets': expected a boolean, got int",
        ),
        (
            "[security]\nmax_body_chars = true\n",
            "knowl.toml: 'security.max_body_chars': expected an integer, got a boolean",
        ),
        (
            "out_dir = '../elsewhere'\n",
            "knowl.toml: 'out_dir': must be a folder inside the project, got '../elsewhere'",
        ),
        ("[peers]\npath = []\n", "knowl.toml: 'peers.path': unknown key (did you mean 'paths'?)"),
        ("rules = 3\n", "knowl.toml: 'rules': expected a table, got int"),
        ("staleness_days = \n", "knowl.toml: invalid TOML"),
    ],
)
def test_bad_configuration(tmp_path: Path, text: str, message: str) -> None:
    write(tmp_path, "knowl.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value).startswith(message)


def test_both_files_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "knowl.toml", "")
    write(tmp_path, "pyproject.toml", "[tool.knowl]\n")
    with pytest.raises(ConfigError, match="both present"):
        load_config(tmp_path)


def test_cli_config_error_is_exit_2_with_one_line(tmp_path: Path) -> None:
    write(tmp_path, "knowl.toml", "[rules]\nKB103 = 'loud'\n")
    result = invoke(["--repo", str(tmp_path), "check"], code=2)
    assert result.stderr.strip().splitlines() == [
        "knowl: error: knowl.toml: 'rules.KB103': severity must be one of error, warning, "
        "info, off, got 'loud'"
    ]
    assert "Traceback" not in result.output


def test_explicit_config_file(tmp_path: Path) -> None:
    other = tmp_path / "ci.toml"
    other.write_text("[rules]\nKB202 = 'error'\n")
    config = load_config(tmp_path, other)
    assert severity(config, "KB202") == "error"
    assert config.source == str(other)


def test_config_hash_is_stable_and_sensitive(tmp_path: Path) -> None:
    assert Config().sha256 == Config().sha256
    write(tmp_path, "knowl.toml", "staleness_days = 91\n")
    assert load_config(tmp_path).sha256 != Config().sha256
