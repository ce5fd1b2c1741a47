"""The event parser: recursive descent with Pratt binding powers; emits events only."""
