"""The ARM64 register file as :class:`PReg` values.

``x31`` is not a register here: encoding 31 means SP or XZR depending on the instruction, so
both are listed separately with index 31.
"""

from __future__ import annotations

from ..vcode import PReg, RegClass

XREGS: tuple[PReg, ...] = tuple(PReg(f"x{i}", RegClass.INT, i) for i in range(31))
VREGS: tuple[PReg, ...] = tuple(PReg(f"v{i}", RegClass.FLOAT, i) for i in range(32))
SP = PReg("sp", RegClass.INT, 31)
XZR = PReg("xzr", RegClass.INT, 31)
FP = XREGS[29]  # x29, the frame pointer
LR = XREGS[30]  # x30, the link register
NZCV = PReg("nzcv", RegClass.FLAGS, 0)
