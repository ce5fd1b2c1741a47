"""The PTX backend: the loop program as PTX for NVIDIA GPUs (docs/targets/ptx.md)."""
