"""Parsing: frontmatter with positions, page bodies, semantic layer files."""
