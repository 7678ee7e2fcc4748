"""The stages of the pipeline, one module each, in the order they run.

`discovery` (the inputs, and the build before), `parsing` (the semantic layer and the pages),
`resolution` (the page index, git facts and freshness: everything the rules need), `findings`
(the rules, severities and suppressions), `rendering` (the records and the artifact's files),
`indexing` (the search index and vectors) and `release` (the manifest, the publication).
`knowl check`, the writes and the language server run the first four through
`pipeline.analysis.analyse`; `knowl build` (`pipeline.publish.build`) runs them all, passing
one `state.BuildState` along."""

# The stages a front end shows as they start (the analyse and check stages are part of parse).
STAGES = ("discover", "parse", "render", "index", "vectors", "publish")
