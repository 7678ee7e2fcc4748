"""`knowl lsp` inside a real editor: Neovim headless, its built-in LSP client, a page of a real
git repository. The editor edits the buffer (never saved) and gets KB103 at the link's
position, completes `[[`, jumps to an entity's line in its YAML and applies a rename's
workspace edit; a Lua script records what the editor saw in a JSON file this test reads.

Without `nvim` the test skips, except in CI (the CI variable set), where it fails: .ci/run
installs Debian's neovim. The script works with Neovim 0.7 (Debian 12's) and later."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Project
from tests.test_lsp import ENV, FILES, NOTES, ORDERS

NVIM = shutil.which("nvim")

INIT = r"""
local root = os.getenv("KNOWL_ROOT")
local result = {}

local function labels(response)
  local out = {}
  for _, answer in pairs(response or {}) do
    local items = answer.result and (answer.result.items or answer.result) or {}
    for _, item in ipairs(items) do table.insert(out, item.label) end
  end
  return out
end

local function first(response)
  for _, answer in pairs(response or {}) do
    if answer.result ~= nil then return answer.result end
    if answer.error ~= nil then error(vim.inspect(answer.error)) end
  end
end

local function run()
  vim.cmd("edit " .. vim.fn.fnameescape(root .. "/knowledge/global/notes.md"))
  local notes = vim.api.nvim_get_current_buf()
  local client = vim.lsp.start_client({
    name = "knowl",
    cmd = vim.fn.json_decode(os.getenv("KNOWL_LSP_CMD")),
    root_dir = root,
  })
  vim.lsp.buf_attach_client(notes, client)
  assert(vim.wait(60000, function()
    local c = vim.lsp.get_client_by_id(client)
    return c ~= nil and c.initialized
  end, 50), "the server did not start")

  -- An unsaved edit: a broken link on a new last line.
  vim.api.nvim_buf_set_lines(notes, -1, -1, false, { "Also [[missing-page]] here." })
  assert(vim.wait(60000, function() return #vim.diagnostic.get(notes) > 0 end, 50),
    "no diagnostics")
  result.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(notes)) do
    local lsp = (d.user_data or {}).lsp or {}
    table.insert(result.diagnostics, {
      code = d.code or lsp.code, lnum = d.lnum, col = d.col,
      end_lnum = d.end_lnum, end_col = d.end_col, severity = d.severity,
    })
  end
  result.last_line = vim.api.nvim_buf_line_count(notes) - 1

  -- Completion after `[[`.
  vim.api.nvim_buf_set_lines(notes, -1, -1, false, { "[[rev" })
  local line = vim.api.nvim_buf_line_count(notes) - 1
  local uri = vim.uri_from_bufnr(notes)
  result.completion = labels(vim.lsp.buf_request_sync(notes, "textDocument/completion", {
    textDocument = { uri = uri }, position = { line = line, character = 5 },
  }, 20000))
  vim.api.nvim_buf_set_lines(notes, line - 1, line + 1, false, {})  -- the two lines go again

  -- Go to an entity's definition from the page that names it.
  vim.cmd("edit " .. vim.fn.fnameescape(root .. "/knowledge/global/revenue.md"))
  local revenue = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(revenue, client)
  local found = first(vim.lsp.buf_request_sync(revenue, "textDocument/definition", {
    textDocument = { uri = vim.uri_from_bufnr(revenue) }, position = { line = 2, character = 15 },
  }, 20000))
  local location = found[1] or found
  vim.lsp.util.jump_to_location(location, "utf-16")
  result.definition = {
    file = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1],
  }

  -- Rename the page a link names, and apply the workspace edit as the editor does.
  vim.cmd("buffer " .. notes)
  local edit = first(vim.lsp.buf_request_sync(notes, "textDocument/rename", {
    textDocument = { uri = uri }, position = { line = 6, character = 8 }, newName = "income",
  }, 20000))
  vim.lsp.util.apply_workspace_edit(edit, "utf-16")
  result.renamed_line = vim.api.nvim_buf_get_lines(notes, 6, 7, false)[1]
  result.renamed_file = vim.fn.filereadable(root .. "/knowledge/global/income.md") == 1
  result.old_file = vim.fn.filereadable(root .. "/knowledge/global/revenue.md") == 1
end

local ok, problem = pcall(run)
result.ok = ok
result.error = problem and tostring(problem) or nil
local handle = io.open(os.getenv("KNOWL_NVIM_OUT"), "w")
handle:write(vim.fn.json_encode(result))
handle:close()
vim.cmd("qa!")
"""


def test_neovim_gets_diagnostics_completes_jumps_and_renames(tmp_path: Path) -> None:
    if NVIM is None:
        if os.environ.get("CI"):
            pytest.fail("nvim is not installed (.ci/run installs Debian's neovim)")
        pytest.skip("nvim is not installed")
    pytest.importorskip("pygls")
    project = Project(tmp_path / "repo").write(FILES)
    project.commit("pages")
    init = tmp_path / "init.lua"
    init.write_text(INIT, encoding="utf-8")
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        **ENV,
        "KNOWL_ROOT": str(project.root),
        "KNOWL_NVIM_OUT": str(out),
        "KNOWL_LSP_CMD": json.dumps([sys.executable, "-m", "knowl_build", "lsp"]),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # where Neovim logs the server's stderr
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-u", str(init)],
        cwd=project.root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=180,
        check=False,
    )
    seen: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    log = tmp_path / "cache" / "nvim" / "lsp.log"
    assert seen["ok"], (seen["error"], log.read_text()[-3000:] if log.exists() else "")
    line = seen["last_line"]
    assert seen["diagnostics"] == [
        {
            "code": "KB103",
            "lnum": line,
            "col": 5,
            "end_lnum": line,
            "end_col": 21,
            "severity": 1,
        }
    ]
    assert seen["completion"] == ["revenue"]
    yaml_line = (
        FILES[ORDERS]
        .split("\n")
        .index(
            '  - { name: total_revenue, expr: "sum(amount)", additivity: additive, description: '
            "Revenue. }"
        )
    )
    assert seen["definition"] == {"file": str(project.root / ORDERS), "line": yaml_line + 1}
    assert seen["renamed_line"] == (
        "See [[income]], [[income#Definition|the definition]] and [the page](income.md)."
    )
    assert seen["renamed_file"] and not seen["old_file"]
    assert (project.root / NOTES).read_text(encoding="utf-8") == FILES[NOTES]  # never saved
