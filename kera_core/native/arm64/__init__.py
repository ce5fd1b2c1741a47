"""ARM64 pieces of the shared native layer: the register file and the fix-up kinds.

Instruction selection, the ``MachineTarget`` and the encoder for ARM64 are the ARM64
backend's; the AAPCS64 calling convention lives in :mod:`kera_core.native.abi`.
"""
