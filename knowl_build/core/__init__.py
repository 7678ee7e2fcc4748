"""The core every layer builds on: the records of pages and links, findings and their
severities, errors, names and places, and the configuration (declared once, loaded, checked)."""
