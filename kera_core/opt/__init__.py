"""The optimizer: graph-to-graph passes that never change a result's bits.

    from kera_core.opt import optimize, format_report
    result = optimize(graph)          # OptResult(graph, report)

Passes (docs/optimizer.md): ``inline``, ``fold``, ``cse``, ``dce``, ``fuse``,
``vectorize``; they run in rounds until a round changes nothing, and the invariant
validator (:mod:`kera_core.ir.verify`) runs after every pass.
"""

from kera_core.opt.cse import CSE
from kera_core.opt.dce import DCE
from kera_core.opt.fold import ConstFold
from kera_core.opt.fuse import Fuse
from kera_core.opt.inline import Inline
from kera_core.opt.manager import (
    DEFAULT,
    PASSES,
    OptimizerError,
    OptReport,
    OptResult,
    Pass,
    PassRun,
    check,
    default_passes,
    format_report,
    make_passes,
    optimize,
)
from kera_core.opt.vectorize import Vectorize

__all__ = [
    "CSE",
    "DCE",
    "DEFAULT",
    "PASSES",
    "ConstFold",
    "Fuse",
    "Inline",
    "OptReport",
    "OptResult",
    "OptimizerError",
    "Pass",
    "PassRun",
    "Vectorize",
    "check",
    "default_passes",
    "format_report",
    "make_passes",
    "optimize",
]
