"""IDE queries over a :class:`~kera_core.workspace.Analysis`: pure functions from a document
snapshot (and a byte offset or span) to plain results with byte spans.

The language server (``kera_lsp``) only converts these to and from LSP. Each query
lives in its own module:

* :mod:`.hover` — types, effects, memory spaces, docs, saved fingerprints;
* :mod:`.navigation` — definition, references, rename;
* :mod:`.outline` — document symbols, folding ranges, selection ranges;
* :mod:`.tokens` — semantic tokens;
* :mod:`.completion`, :mod:`.signature`, :mod:`.inlay`;
* :mod:`.targets` — fingerprints, lowering previews, compilation, code lenses;
* :mod:`.builtins` — what builtins, primitive types, spaces and effects are called and mean.
"""
