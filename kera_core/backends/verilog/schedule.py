"""The controller: a function's loop program as a finite-state machine, scheduled
sequentially onto the datapath (:mod:`datapath`), the memories and the float units.

Every statement becomes one or more controller states, entered one after another in the
loop program's order, so every value, every canonical-sum and matmul order and every
checked error is exactly the loop program's:

=================  ======================================================  ==============
statement          states                                                   cycles
=================  ======================================================  ==============
integer ``Op``     one: the destination register takes the expression       1
float ``Op``       issue (``valid_in`` with the operands), then wait for    latency + 1
                   the unit's ``valid_out`` and capture its result
``Load``           address the memory's synchronous read port; capture      2
``Store``          drive the memory's write port                            1
``Check``          to the error state with the check's number unless ok     1
``Loop``           init (counter ← lo, bound latched), then per iteration  2 + trips · (1 +
                   one test state (var ← counter, step budget) and body     body)
``While``          cond, a test state (step budget), body, back to cond
``If``             one branch state                                         1 + branch
``Alloc``          zero the memory, one element a cycle                     size + 1
``Copy``           read, write per element                                  2 · count + 1
``Free``           nothing                                                  0
=================  ======================================================  ==============

A float unit instance is shared by every operation of its kind: only one operation is in
flight at a time (a sequential schedule), so a unit's ``valid_out`` always belongs to the
state waiting for it. A sequential loop's initiation interval is therefore its body's
latency plus its test state. The exception: a ``lanes`` loop whose body allows it
(:meth:`Schedule.pipeline_refusal`) runs as a pipeline at II = 1
(:meth:`Schedule.pipelined_loop`: init, one pipeline state, trips + depth + 1 cycles);
:func:`Schedule.loop_report` gives the latency and II of every loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.loops.ir import (
    Alloc,
    Buf,
    Call,
    Check,
    Copy,
    Free,
    If,
    Imm,
    LFunction,
    Load,
    Loop,
    Op,
    Print,
    Store,
    Var,
    While,
)
from kera_core.loops.prims import PRIMS

from . import datapath as D

IDLE, FINISH = 0, 1


@dataclass
class State:
    id: int
    comment: str
    body: list[str] = field(default_factory=list)  # Verilog statements of its case arm


@dataclass
class Site:
    """A way the run can end with a checked error: err port value = index + 1."""

    code: str
    message: str
    node: bytes | None


@dataclass
class LoopInfo:
    var: str
    mark: str
    counted: bool
    body: int | None  # cycles per iteration (None: data-dependent)
    depth: int


@dataclass
class Memory:
    buf: Buf
    name: str
    width: int
    depth_expr: str  # a Verilog constant expression of the dimension parameters
    reads: list[tuple[int, str]] = field(default_factory=list)  # (state, address expr)
    writes: list[tuple[int, str, str, str]] = field(default_factory=list)  # state, a, d, cond


@dataclass
class UnitInst:
    unit: str
    name: str
    issues: list[tuple[int, dict[str, str]]] = field(default_factory=list)


class Schedule:
    def __init__(self, fn: LFunction) -> None:
        self.fn = fn
        self.states: list[State] = [State(IDLE, "idle"), State(FINISH, "finish")]
        self.regs: dict[int, tuple[str, int, str]] = {}  # var id -> (name, width, comment)
        self.extra_regs: list[tuple[str, int]] = []
        self.dims = {d.id: i for i, d in enumerate(fn.dims)}
        self.memories: dict[int, Memory] = {}
        self.units: dict[str, UnitInst] = {}
        self.sites: list[Site] = []
        self.loops: list[LoopInfo] = []
        self.helpers = D.Helpers(set())
        self._defs = _definitions(fn.body)
        self._uses = _uses(fn)
        self._depth = 0
        self.pipelined: dict[int, int] = {}  # id(Loop) -> iteration latency (II 1)
        for group in fn.params:
            for x in group:
                if isinstance(x, Buf):
                    self.memory(x)
                else:
                    self.reg(x)
        for group in fn.results:
            for x in group:
                if isinstance(x, Buf):
                    self.memory(x)
        self.entry = self.block(fn.body, FINISH)

    # --- resources -------------------------------------------------------------------------

    def new_state(self, comment: str) -> State:
        s = State(len(self.states), comment)
        self.states.append(s)
        return s

    def reg(self, v: Var) -> str:
        if v.lanes != 1:
            raise D.NotSupported("vector values (lanes > 1)")
        if v.id in self.dims:
            return f"D{self.dims[v.id]}"
        got = self.regs.get(v.id)
        if got is None:
            got = (f"r{v.id}", D.width(v.type), repr(v))
            self.regs[v.id] = got
        return got[0]

    def extra(self, name: str, w: int) -> str:
        self.extra_regs.append((name, w))
        return name

    def opnd(self, x) -> str:
        if isinstance(x, Imm):
            return D.imm_expr(x)
        return self.reg(x)

    def memory(self, b: Buf) -> Memory:
        m = self.memories.get(b.id)
        if m is None:
            depth = self.static(b.size, f"the size of {b!r}")
            m = Memory(b, f"m{b.id}", D.width(b.elem), depth)
            self.memories[b.id] = m
        return m

    def unit(self, name: str) -> UnitInst:
        u = self.units.get(name)
        if u is None:
            u = self.units[name] = UnitInst(name, f"u_{name}")
        return u

    def static(self, x, what: str) -> str:
        """``x`` as a Verilog constant expression of the dimension parameters."""
        if isinstance(x, Imm):
            v = x.bits & ((1 << 64) - 1)
            return str(v - (1 << 64) if v >> 63 else v)
        if x.id in self.dims:
            return f"D{self.dims[x.id]}"
        defs = self._defs.get(x.id, [])
        if len(defs) != 1 or not isinstance(defs[0], Op):
            raise D.NotSupported(f"{what} is not fixed by the dimension sizes")
        s = defs[0]
        a = [self.static(y, what) for y in s.args]
        ops = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
        if s.op in ops and len(a) == 2:
            return f"({a[0]} {ops[s.op]} {a[1]})"
        if s.op == "select" and isinstance(s.args[0], Imm):
            return a[1] if s.args[0].bits else a[2]
        if s.op in ("minimum", "maximum"):
            sym = "<" if s.op == "minimum" else ">"
            return f"(({a[0]} {sym} {a[1]}) ? {a[0]} : {a[1]})"
        raise D.NotSupported(f"{what} is not fixed by the dimension sizes (`{s.op}`)")

    def site(self, code: str, message: str, node: bytes | None) -> int:
        self.sites.append(Site(code, message, node))
        return len(self.sites)

    # --- statements (each returns its entry state; ``k`` is the state after it) ----------

    def block(self, stmts: list, k: int) -> int:
        for s in reversed(stmts):
            k = self.stmt(s, k)
        return k

    def stmt(self, s, k: int) -> int:
        t = type(s)
        if t is Op:
            return self.op(s, k)
        if t is Load:
            m = self.memory(s.buf)
            st = self.new_state(f"{s.dst!r} = load {s.buf!r}")
            cap = self.new_state(f"capture {s.dst!r}")
            m.reads.append((st.id, self.opnd(s.index)))
            st.body.append(f"state <= {cap.id};")
            cap.body += [f"{self.reg(s.dst)} <= {m.name}_q;", f"state <= {k};"]
            return st.id
        if t is Store:
            m = self.memory(s.buf)
            st = self.new_state(f"store {s.buf!r}")
            m.writes.append((st.id, self.opnd(s.index), self.opnd(s.value), "1'b1"))
            st.body.append(f"state <= {k};")
            return st.id
        if t is Check:
            n = self.site(s.code, s.message, s.node)
            st = self.new_state(f"check {s.code}")
            st.body.append(
                f"if (!{self.opnd(s.ok)}) begin err <= {n}; state <= {FINISH}; end"
                f" else state <= {k};"
            )
            return st.id
        if t is Loop:
            return self.loop(s, k)
        if t is While:
            return self.while_(s, k)
        if t is If:
            st = self.new_state("if")
            self._depth += 1
            then = self.block(s.then, k)
            orelse = self.block(s.orelse, k)
            self._depth -= 1
            st.body.append(f"state <= {self.opnd(s.cond)} ? {then} : {orelse};")
            return st.id
        if t is Alloc:
            m = self.memory(s.buf)
            z = self.extra(f"z{len(self.extra_regs)}", 64)
            init = self.new_state(f"alloc {s.buf!r}")
            clear = self.new_state(f"zero {s.buf!r}")
            init.body += [f"{z} <= 0;", f"state <= {clear.id};"]
            m.writes.append((clear.id, z, f"{m.width}'h0", f"({z} < N_{m.name})"))
            clear.body += [
                f"if ({z} < N_{m.name}) {z} <= {z} + 1;",
                f"else state <= {k};",
            ]
            return init.id
        if t is Free:
            self.memory(s.buf)
            return k
        if t is Copy:
            return self.copy(s, k)
        if t is Call:
            # (every call the optimizer's inliner may take was inlined: compile._inlined)
            raise D.NotSupported(
                "calls between functions where the callee could stop with a checked error at"
                " the call, or binds dimension expressions (not inlined)"
            )
        if t is Print:
            raise D.NotSupported(
                "print: a hardware design has no console (the verilog target compiles the"
                " functions that do not print; call them from one that does)"
            )
        raise D.NotSupported(f"the statement {t.__name__}")

    def op(self, s: Op, k: int) -> int:
        if s.op not in PRIMS:
            raise D.NotSupported(f"the primitive `{s.op}`")
        dst = self.reg(s.dst)
        arg_ts = tuple(a.type for a in s.args)
        for a in s.args:
            if isinstance(a, Var) and a.lanes != 1:
                raise D.NotSupported("vector values (lanes > 1)")
        if all(isinstance(a, Imm) for a in s.args) and s.op != "select":
            return self.const(s, k)
        a = [self.opnd(x) for x in s.args]
        if D.is_combinational(s.op, s.dst.type, arg_ts):
            if len(s.args) == 1 and isinstance(s.args[0], Imm):
                return self.const(s, k)
            consts = [x.bits if isinstance(x, Imm) else None for x in s.args]
            e = D.int_expr(s.op, s.dst.type, arg_ts, a, self.helpers, consts)
            st = self.new_state(f"{s.dst!r} = {s.op}")
            st.body += [f"{dst} <= {e};", f"state <= {k};"]
            return st.id
        if s.op == "roundeven":
            return self.roundeven(s, a[0], k)
        use = D.float_unit(s.op, s.dst.type, arg_ts, a)
        u = self.unit(use.unit)
        issue = self.new_state(f"{s.dst!r} = {s.op} (issue {u.name})")
        wait = self.new_state(f"{s.dst!r} = {s.op} (wait {use.latency})")
        u.issues.append((issue.id, use.ports))
        issue.body.append(f"state <= {wait.id};")
        res = use.result
        for port in ("y", "eq", "lt", "le", "un"):
            res = res.replace("{" + port + "}", f"{u.name}_{port}")
        wait.body.append(f"if ({u.name}_vo) begin {dst} <= {res}; state <= {k}; end")
        return issue.id

    def roundeven(self, s: Op, x: str, k: int) -> int:
        """``roundeven`` on the add unit: for |x| < 2^MW, (|x| + 2^MW) - 2^MW is |x| rounded
        to an integer, ties to even (the sum's ulp is 1, the subtraction exact), with x's
        sign put back (roundeven(-0.3) = -0); larger, infinite or NaN x is already integral
        (NaN: canonical)."""
        t = s.dst.type
        w, mw = D.width(t), 23 if t == "f32" else 52
        bias = 127 if t == "f32" else 1023
        magic = D.lit(t, (bias + mw) << mw)
        u = self.unit(f"{t}_add")
        tmp = self.extra(f"re{len(self.extra_regs)}", w)
        i1 = self.new_state(f"{s.dst!r} = roundeven (issue |x| + 2^{mw})")
        w1 = self.new_state("roundeven (wait)")
        i2 = self.new_state(f"{s.dst!r} = roundeven (issue - 2^{mw})")
        w2 = self.new_state("roundeven (wait)")
        u.issues.append((i1.id, {"a": f"{{1'b0, {x}[{w - 2}:0]}}", "b": magic, "sub": "1'b0"}))
        u.issues.append((i2.id, {"a": tmp, "b": magic, "sub": "1'b1"}))
        i1.body.append(f"state <= {w1.id};")
        w1.body.append(f"if ({u.name}_vo) begin {tmp} <= {u.name}_y; state <= {i2.id}; end")
        i2.body.append(f"state <= {w2.id};")
        big = f"({x}[{w - 2}:{mw}] >= {w - 1 - mw}'d{bias + mw})"
        keep = D.int_expr("canon", t, (t,), [x], self.helpers, [None])
        res = f"({big} ? {keep} : {{{x}[{w - 1}], {u.name}_y[{w - 2}:0]}})"
        w2.body.append(f"if ({u.name}_vo) begin {self.reg(s.dst)} <= {res}; state <= {k}; end")
        return i1.id

    def const(self, s: Op, k: int) -> int:
        """An operation on constants, folded by the primitive's own meaning."""
        bits = _const_bits(s)
        st = self.new_state(f"{s.dst!r} = {s.op} (constant)")
        st.body += [f"{self.reg(s.dst)} <= {D.lit(s.dst.type, bits)};", f"state <= {k};"]
        return st.id

    def step(self, node: bytes | None) -> str:
        """The step-budget test of one counted iteration (R0007), as a Verilog prefix."""
        n = self.site("R0007", "", node)
        return (
            f"if (limit_en && steps == max_steps) begin err <= {n}; state <= {FINISH}; end"
            " else begin steps <= steps + 1; "
        )

    def loop(self, s: Loop, k: int) -> int:
        if self.pipeline_refusal(s) is None:
            return self.pipelined_loop(s, k)
        var = self.reg(s.var)
        i = len(self.loops)
        cnt = self.extra(f"lc{i}", 64)
        hi = self.extra(f"lh{i}", 64)
        info = LoopInfo(repr(s.var), s.mark, s.counted, None, self._depth)
        self.loops.append(info)
        init = self.new_state(f"for {s.var!r} (init)")
        test = self.new_state(f"for {s.var!r} (test)")
        init.body += [
            f"{cnt} <= {self.opnd(s.lo)};",
            f"{hi} <= {self.opnd(s.hi)};",
            f"state <= {test.id};",
        ]
        self._depth += 1
        first = self.block(s.body, test.id)
        self._depth -= 1
        go = f"{var} <= {cnt}; {cnt} <= {cnt} + 1; state <= {first};"
        if s.counted:
            go = self.step(s.node) + go + " end"
        test.body.append(f"if ($signed({cnt}) < $signed({hi})) begin {go} end")
        test.body.append(f"else state <= {k};")
        info.body = body_cycles(s.body)
        return init.id

    # --- loop pipelining ------------------------------------------------------------------

    def pipeline_refusal(self, s: Loop) -> str | None:
        """Why the ``lanes`` loop ``s`` cannot run pipelined at II = 1 (None: it can).

        Its body must be straight-line ``Op``/``Load``/``Store`` (no check, branch, inner
        loop, allocation: a check's error order would need the sequential order), use each
        float unit at most once and each memory's read and write port at most once per
        iteration, a memory both read and written only at the loop variable with the read
        first (iterations then touch different elements; within one the read sees the old
        value, as in the sequential order), and define every value once, before its uses,
        never used outside the body (the mark promises it; it is checked)."""
        if s.mark != "lanes":
            return "not a lanes loop"
        for st in s.body:
            if not isinstance(st, (Op, Load, Store)):
                return f"a {type(st).__name__} in the body"
        units: set[str] = set()
        loads: dict[int, Load] = {}
        stores: dict[int, Store] = {}
        defined: set[int] = set()
        body_uses: dict[int, int] = {}
        body_defs = {st.dst.id for st in s.body if isinstance(st, (Op, Load))}
        for st in s.body:
            for x in _operands(st):
                body_uses[x.id] = body_uses.get(x.id, 0) + 1
                if x.lanes != 1:
                    return "vector values"
                if x.id in body_defs and x.id not in defined:
                    return f"{x!r} read before its definition (carried across iterations)"
            t = type(st)
            if t is Op:
                if st.op not in PRIMS:
                    return f"the primitive `{st.op}`"
                ts = tuple(a.type for a in st.args)
                consts = all(isinstance(a, Imm) for a in st.args) and st.op != "select"
                if not consts and not D.is_combinational(st.op, st.dst.type, ts):
                    if st.op == "roundeven":
                        return "roundeven (the add unit twice)"
                    u = D.float_unit(st.op, st.dst.type, ts, ["x"] * len(st.args)).unit
                    if u in units:
                        return f"the unit {u} twice in an iteration"
                    units.add(u)
                dst = st.dst
            elif t is Load:
                if st.buf.id in loads:
                    return f"two loads of {st.buf!r}"
                if st.buf.id in stores:
                    return f"a load of {st.buf!r} after its store"
                loads[st.buf.id] = st
                dst = st.dst
            else:
                if st.buf.id in stores:
                    return f"two stores to {st.buf!r}"
                stores[st.buf.id] = st
                continue
            if dst.id in defined or len(self._defs.get(dst.id, [])) != 1 or dst.lanes != 1:
                return f"{dst!r} defined more than once"
            defined.add(dst.id)
        for b, ld in loads.items():
            st = stores.get(b)
            if st is not None and not (ld.index is s.var and st.index is s.var):
                return f"{st.buf!r} read and written other than at the loop variable"
        for v in (*defined, s.var.id):
            if self._uses.get(v, 0) != body_uses.get(v, 0):
                return "a value of the body used outside it"
        return None

    def pipelined_loop(self, s: Loop, k: int) -> int:
        """A ``lanes`` loop as a pipeline at II = 1: one iteration enters every cycle.

        Each statement is placed at the earliest stage its operands allow (a combinational
        ``Op`` takes one stage, as in the sequential schedule; a float unit its latency +
        1; a ``Load`` 1 to the memory's synchronous read data; a ``Store`` writes at its
        stage, gated by the stage's valid bit). Every value has a register per stage from
        its definition to its last use, so iterations in flight never share one. The
        state runs until the last iteration has left the last stage (and every float unit
        it issued has answered, so a later sequential use of the unit sees only its own
        result). A counted loop spends its whole trip count of the step budget at once,
        before the first iteration: the body has no checks, so the only error it can end
        with is R0007, and the results of a run that ends with an error are never read."""
        i = len(self.loops)
        info = LoopInfo(repr(s.var), s.mark, s.counted, None, self._depth)
        self.loops.append(info)
        cnt = self.extra(f"lc{i}", 64)
        hi = self.extra(f"lh{i}", 64)
        init = self.new_state(f"for {s.var!r} (init, pipelined)")
        budget = self.new_state(f"for {s.var!r} (step budget)") if s.counted else None
        ps = self.new_state(f"for {s.var!r} (pipeline, II 1)")
        # value id -> (stage from which it can be read, the expression there if it is not
        # a register of that stage)
        avail: dict[int, tuple[int, str | None]] = {s.var.id: (0, None)}
        width: dict[int, int] = {s.var.id: D.width(s.var.type)}
        last: dict[int, int] = {s.var.id: 0}
        first_reg: dict[int, int] = {s.var.id: 0}
        moves: list[str] = []  # the stage registers' transfers, in the pipeline state
        name = f"q{i}"

        def reg_at(vid: int, stage: int) -> str:
            return f"{name}_{stage}_{vid}"

        def ref(x, stage: int) -> str:
            if isinstance(x, Imm):
                return D.imm_expr(x)
            got = avail.get(x.id)
            if got is None:
                return self.reg(x)  # defined before the loop: a stable register
            a, raw = got
            assert stage >= a
            last[x.id] = max(last[x.id], stage)
            return raw if (stage == a and raw is not None) else reg_at(x.id, stage)

        def at(*xs) -> int:
            return max([0] + [avail[x.id][0] for x in xs if isinstance(x, Var) and x.id in avail])

        def define(v: Var, stage: int, raw: str | None) -> None:
            avail[v.id] = (stage, raw)
            width[v.id] = D.width(v.type)
            last[v.id] = stage
            first_reg[v.id] = stage + 1 if raw is not None else stage

        end = 1  # the last stage (at least 1)
        load_stage: dict[int, int] = {}
        for st in s.body:
            if isinstance(st, Op):
                arg_ts = tuple(a.type for a in st.args)
                stage = at(*st.args)
                if all(isinstance(a, Imm) for a in st.args) and st.op != "select":
                    e = D.lit(st.dst.type, _const_bits(st))
                    moves.append(f"{reg_at(st.dst.id, stage + 1)} <= {e};")
                    define(st.dst, stage + 1, None)
                elif D.is_combinational(st.op, st.dst.type, arg_ts):
                    a = [ref(x, stage) for x in st.args]
                    consts = [x.bits if isinstance(x, Imm) else None for x in st.args]
                    if len(st.args) == 1 and isinstance(st.args[0], Imm):
                        e = D.lit(st.dst.type, _const_bits(st))
                    else:
                        e = D.int_expr(st.op, st.dst.type, arg_ts, a, self.helpers, consts)
                    moves.append(f"{reg_at(st.dst.id, stage + 1)} <= {e};")
                    define(st.dst, stage + 1, None)
                else:
                    a = [ref(x, stage) for x in st.args]
                    use = D.float_unit(st.op, st.dst.type, arg_ts, a)
                    u = self.unit(use.unit)
                    u.issues.append((ps.id, {**use.ports, "valid": f"{name}_v{stage}"}))
                    res = use.result
                    for port in ("y", "eq", "lt", "le", "un"):
                        res = res.replace("{" + port + "}", f"{u.name}_{port}")
                    got = stage + use.latency  # valid_out and the result, this stage
                    moves.append(f"{reg_at(st.dst.id, got + 1)} <= {res};")
                    define(st.dst, got + 1, None)
                    end = max(end, got)
            elif isinstance(st, Load):
                m = self.memory(st.buf)
                stage = at(st.index)
                m.reads.append((ps.id, ref(st.index, stage)))
                load_stage[st.buf.id] = stage
                define(st.dst, stage + 1, f"{m.name}_q")
            else:  # Store (after a load of the same memory: not before it)
                m = self.memory(st.buf)
                stage = max(at(st.index, st.value), load_stage.get(st.buf.id, 0))
                m.writes.append(
                    (ps.id, ref(st.index, stage), ref(st.value, stage), f"{name}_v{stage}")
                )
                end = max(end, stage)
        end = max([end] + [last[v] for v in last])
        valid = [f"{name}_v{j}" for j in range(end + 1)]
        for v in valid:
            self.extra(v, 1)
        for vid, lu in last.items():
            a, raw = avail[vid]
            for j in range(first_reg[vid], lu + 1):
                self.extra(reg_at(vid, j), width[vid])
                if j > a:
                    src = raw if (j == a + 1 and raw is not None) else reg_at(vid, j - 1)
                    moves.append(f"{reg_at(vid, j)} <= {src};")
        going = f"($signed({cnt}) < $signed({hi}))"
        init.body += [f"{cnt} <= {self.opnd(s.lo)};", f"{hi} <= {self.opnd(s.hi)};"]
        init.body += [f"{v} <= 1'b0;" for v in valid]
        init.body.append(f"state <= {(budget or ps).id};")
        if budget is not None:
            n = self.site("R0007", "", s.node)
            trips = f"({hi} - {cnt})"
            budget.body.append(
                f"if ({going} && limit_en && (max_steps - steps) < {trips}) begin "
                f"err <= {n}; state <= {FINISH}; end else begin "
                f"if ({going}) steps <= steps + {trips}; state <= {ps.id}; end"
            )
        ps.body.append(
            f"if ({going}) begin {valid[0]} <= 1'b1; {reg_at(s.var.id, 0)} <= {cnt}; "
            f"{cnt} <= {cnt} + 1; end else {valid[0]} <= 1'b0;"
        )
        ps.body += [f"{valid[j]} <= {valid[j - 1]};" for j in range(1, end + 1)]
        ps.body += moves
        busy = " | ".join(valid[:end])
        ps.body.append(f"if (!{going} && !({busy})) state <= {k};")
        self.pipelined[id(s)] = end + 1
        return init.id

    def while_(self, s: While, k: int) -> int:
        test = self.new_state("while (test)")
        self.loops.append(LoopInfo("while", "seq", True, None, self._depth))
        self._depth += 1
        cond = self.block(s.cond, test.id)
        first_body = self.block(s.body, cond)
        self._depth -= 1
        go = self.step(s.node) + f"state <= {first_body}; end"
        test.body.append(f"if ({self.opnd(s.test)}) begin {go} end else state <= {k};")
        return cond

    def copy(self, s: Copy, k: int) -> int:
        src, dst = self.memory(s.src), self.memory(s.dst)
        c = self.extra(f"cp{len(self.extra_regs)}", 64)
        init = self.new_state(f"copy {s.dst!r} <- {s.src!r} (init)")
        rd = self.new_state("copy (read)")
        wr = self.new_state("copy (write)")
        init.body += [f"{c} <= 0;", f"state <= {rd.id};"]
        n = self.opnd(s.count)
        src.reads.append((rd.id, f"({self.opnd(s.src_at)} + {c})"))
        rd.body.append(f"if ($signed({c}) < $signed({n})) state <= {wr.id}; else state <= {k};")
        dst.writes.append((wr.id, f"({self.opnd(s.dst_at)} + {c})", f"{src.name}_q", "1'b1"))
        wr.body += [f"{c} <= {c} + 1;", f"state <= {rd.id};"]
        return init.id

    # --- reports ---------------------------------------------------------------------------

    def loop_iis(self) -> list[tuple[str, int | None]]:
        """Per loop, in program order: (its variable, its II in cycles, or None when the
        latency of an iteration depends on the data)."""
        out: list[tuple[str, int | None]] = []

        def walk(stmts):
            for s in stmts:
                if isinstance(s, Loop):
                    body = body_cycles(s.body)
                    ii = 1 if id(s) in self.pipelined else None if body is None else body + 1
                    out.append((repr(s.var), ii))
                    walk(s.body)
                elif isinstance(s, While):
                    walk(s.cond)
                    walk(s.body)
                elif isinstance(s, If):
                    walk(s.then)
                    walk(s.orelse)

        walk(self.fn.body)
        return out

    def summary(self) -> str:
        n = len(self.pipelined)
        piped = f", {n} loop{'s' if n != 1 else ''} pipelined at II 1" if n else ""
        return f"{len(self.states)} states, sequential schedule{piped}"

    def loop_report(self) -> list[str]:
        """Per loop, in program order: its iteration latency and initiation interval."""
        out: list[str] = []
        _report(self.fn.body, 0, out, self.pipelined)
        return out


def _report(stmts: list, depth: int, out: list[str], pipelined: dict[int, int]) -> None:
    pad = "  " * depth
    for s in stmts:
        if isinstance(s, Loop) and id(s) in pipelined:
            out.append(
                f"{pad}loop {s.var!r} ({s.mark}{', counted' if s.counted else ''}): "
                f"iteration latency {pipelined[id(s)]} cycles, II 1 (pipelined)"
            )
        elif isinstance(s, Loop):
            body = body_cycles(s.body)
            if body is None:
                lat, ii = "data-dependent", "the iteration's latency"
            else:
                lat, ii = f"{body + 1} cycles", f"{body + 1}"
            out.append(
                f"{pad}loop {s.var!r} ({s.mark}{', counted' if s.counted else ''}): "
                f"iteration latency {lat}, II {ii} (sequential, not pipelined)"
            )
            _report(s.body, depth + 1, out, pipelined)
        elif isinstance(s, While):
            out.append(f"{pad}while loop: data-dependent latency, not pipelined")
            _report(s.cond, depth + 1, out, pipelined)
            _report(s.body, depth + 1, out, pipelined)
        elif isinstance(s, If):
            _report(s.then, depth, out, pipelined)
            _report(s.orelse, depth, out, pipelined)


def _const_bits(s: Op) -> int:
    """The bits of an operation on constants, folded by the primitive's own meaning."""
    import numpy as np

    from kera_core.loops.interp import imm_value

    with np.errstate(all="ignore"):
        v = PRIMS[s.op].run(s.dst.type, *(imm_value(x) for x in s.args))
    return int(np.asarray(v).reshape(1).view(f"u{np.asarray(v).dtype.itemsize}")[0])


_NESTED = ("body", "then", "orelse", "cond")


def _operands(s) -> list:
    """The values statement ``s`` itself reads (not its nested blocks'), buffer sizes
    included."""
    out: list = []

    def add(x) -> None:
        if isinstance(x, Var):
            out.append(x)
        elif isinstance(x, Buf):
            add(x.size)
        elif isinstance(x, tuple):
            for y in x:
                add(y)

    for f in type(s).__slots__:
        if f in ("dst", "var", "results") or (f in _NESTED and isinstance(getattr(s, f), list)):
            continue
        add(getattr(s, f))
    return out


def _uses(fn: LFunction) -> dict[int, int]:
    """Per value id, how often the function reads it (its results count as reads)."""
    out: dict[int, int] = {}

    def walk(stmts: list) -> None:
        for s in stmts:
            for x in _operands(s):
                out[x.id] = out.get(x.id, 0) + 1
            for f in _NESTED:
                sub = getattr(s, f, None)
                if isinstance(sub, list):
                    walk(sub)

    walk(fn.body)
    for group in fn.results:
        for x in group:
            if isinstance(x, Var):
                out[x.id] = out.get(x.id, 0) + 1
    return out


def _definitions(stmts: list, out: dict | None = None) -> dict[int, list]:
    out = {} if out is None else out
    for s in stmts:
        if isinstance(s, (Op, Load)):
            out.setdefault(s.dst.id, []).append(s)
        elif isinstance(s, Loop):
            out.setdefault(s.var.id, []).append(s)
            _definitions(s.body, out)
        elif isinstance(s, While):
            _definitions(s.cond, out)
            _definitions(s.body, out)
        elif isinstance(s, If):
            _definitions(s.then, out)
            _definitions(s.orelse, out)
        elif isinstance(s, Call):
            for r in s.results:
                if isinstance(r, Var):
                    out.setdefault(r.id, []).append(s)
    return out


def body_cycles(stmts: list) -> int | None:
    """The cycles of a straight-line block in the sequential schedule (None if it has
    loops, branches, allocations or copies: data-dependent)."""
    from .float_units import UNITS

    total = 0
    for s in stmts:
        if isinstance(s, Op):
            ts = tuple(a.type for a in s.args)
            if all(isinstance(a, Imm) for a in s.args) or D.is_combinational(s.op, s.dst.type, ts):
                total += 1
            elif s.op == "roundeven":
                total += 2 * (UNITS[f"{s.dst.type}_add"].latency + 1)
            else:
                a = ["x"] * len(s.args)
                total += UNITS[D.float_unit(s.op, s.dst.type, ts, a).unit].latency + 1
        elif isinstance(s, Load):
            total += 2
        elif isinstance(s, (Store, Check)):
            total += 1
        elif isinstance(s, Free):
            pass
        else:
            return None
    return total
