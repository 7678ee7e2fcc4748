"""The semantic layer: its entities and fingerprints (layer), read from Canonic files
(canonic) and from a dbt project (dbt); `load` reads them all into one layer."""
