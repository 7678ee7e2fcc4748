"""The build artifact: layout, manifest, atomic publication, pruning, the locks, validation.

The reader imports this module (never the build pipeline): it defines what an artifact is.

    <out_dir>/.knowl-out        a random token: this output folder belongs to knowl
    <out_dir>/.knowl-lock       while a build runs: `knowl-build <pid> <host>`
    <out_dir>/.knowl-write-lock while a governed write runs: the same
    <out_dir>/CURRENT           one line: the name of the published build folder
    <out_dir>/<build-id>/       manifest.json, pages.jsonl.gz, catalog.json, entities.json,
                                graph.json, diagnostics.json, signatures.json, index/
                                (Whoosh), vectors/ (optional), written once, never changed;
                                .knowl-build holds the token of the output folder that made it
                                and, on a second line, the seal of its manifest

knowl deletes only folders it made: a build or staging folder whose `.knowl-build` holds the
token of the output folder it lies in, never a folder recognised by a file name alone.

A build reuses the previous one (or answers with it, for an unchanged tree) only when its
manifest carries a seal made with this machine's key (`trust`): the manifest holds every
file's sha256, and the folder is validated against it, so a sealed build is one this machine
wrote. A build folder committed with the project, or built elsewhere, is not reused.
"""
