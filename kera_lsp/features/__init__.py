"""One module per feature, each with a ``setup(server)`` that registers its handlers."""

from kera_lsp.features import (
    actions,
    completion,
    diagnostics,
    formatting,
    hover,
    inlay,
    lowering,
    navigation,
    semantic_tokens,
    symbols,
    sync,
)

SETUPS = [
    sync.setup,
    diagnostics.setup,
    formatting.setup,
    hover.setup,
    navigation.setup,
    symbols.setup,
    semantic_tokens.setup,
    completion.setup,
    inlay.setup,
    actions.setup,
    lowering.setup,
]
