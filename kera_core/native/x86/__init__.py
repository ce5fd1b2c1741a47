"""x86-64 pieces of the shared native layer: the register file (:mod:`.regs`), the
``MachineTarget`` (:mod:`.target`), the rel8/rel32 fix-up kinds (:mod:`.fixups`), a
data-driven instruction type (:mod:`.inst`) and the encoder glue plus function assembler
(:mod:`.emit`)."""
