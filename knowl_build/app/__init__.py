"""The application layer: every user operation, one function each, for every front end.

The command line (`knowl_build.cli`) and the MCP server (`knowl_build.mcp_server`) only
translate their arguments into these calls and render what comes back; the checks that
protect the user (valid names, who may write, redaction of secrets) happen here or below.

- `project`: finding the project, loading its configuration;
- `checking`: `check` and `build` (with `--baseline`), `stale`, `conflicts`, the rule table;
- `reading`: `search`, `show`, `traverse`, the graph export, `verify`, from an artifact;
- `writing`: `store`, `supersede`, `review`, `fix`;
- `history`: `timeline` and `show --at`, from git.
"""
