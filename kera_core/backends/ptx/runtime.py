"""Running a PTX artifact on an NVIDIA GPU through the CUDA driver API (``cuda-bindings``,
imported only here and only when a run is asked for).

A run: the inputs are checked and flattened exactly as for every loop-program runner
(:func:`kera_core.loops.run.prepare`), each buffer parameter is copied to device memory,
the ``io`` cells (dimensions, scalars as bits, buffer addresses, then one cell per result)
and the context cells (status, step budget, the arena, the print log) are written, and
``kera_main`` is launched on one CTA. Afterwards the status, the result cells, the result
buffers (device addresses inside a parameter or the run's arena) and the print log are
copied back; floats are canonicalised on the way out (semantics.md §3) and the log is
formatted exactly as the interpreter prints (interp/printing.py).

``dry_run=True`` does everything but touch a GPU: it checks and flattens the inputs and
builds the cells, and returns the :class:`Launch` (``scripts/gpu-check.sh --dry-run``).
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np

from kera_core.backends.ptx import select as S
from kera_core.interp import printing
from kera_core.interp.api import Output, RunResult, _Tee
from kera_core.interp.errors import InputError, InterpError
from kera_core.interp.fp import canon
from kera_core.interp.values import DTYPES, concrete_type, value_out
from kera_core.ir.types import Struct, strip_ref
from kera_core.loops import ir
from kera_core.loops.interp import imm_value
from kera_core.loops.lower import program_of
from kera_core.loops.run import flatten_value, prepare
from kera_core.loops.target import GRID as LOWERING

DEFAULT_MEMORY = 1 << 30  # the arena: what a run may allocate
SPACE_ARENA = 256 << 20  # the `pinned` and `unified` arenas
# the driver API's flag values (cuda.h): cuMemHostAlloc, cuMemAllocManaged
MEMHOSTALLOC_PORTABLE, MEMHOSTALLOC_DEVICEMAP, MEM_ATTACH_GLOBAL = 1, 2, 1
LOG_BYTES = 64 << 20  # the print log
NO_LIMIT = 1 << 62
CODE_NAMES = {v: k for k, v in S.ERROR_NUMBERS.items()}


class PtxMemoryError(InterpError):
    """The run's arena ran out (R0009): a limit of the machine (1 GiB on a GPU, 16 MiB on the
    emulator), not of the program — `kera run --target all` reports the target stopping."""

    machine_limit = True


def _driver():
    try:
        from cuda.bindings import driver  # cuda-bindings >= 12.6
    except ImportError:
        from cuda import cuda as driver  # older cuda-python
    return driver


_REASON: list[str | None] = []


def why_no_gpu() -> str | None:
    """None when a CUDA driver and a GPU are usable here, else one line saying why not."""
    if _REASON:
        return _REASON[0]
    reason = None
    try:
        cu = _driver()
    except ImportError:
        reason = "no CUDA driver bindings (pip install cuda-bindings)"
    else:
        try:
            (err,) = cu.cuInit(0)
            if err != cu.CUresult.CUDA_SUCCESS:
                reason = f"no CUDA driver or GPU here (cuInit: {_name(cu, err)})"
            else:
                err, n = cu.cuDeviceGetCount()
                if err != cu.CUresult.CUDA_SUCCESS or n == 0:
                    reason = "no GPU here (the CUDA driver sees no device)"
        except Exception as e:  # a missing libcuda.so surfaces as various errors
            reason = f"no CUDA driver here ({type(e).__name__}: {e})"
    _REASON.append(reason)
    return reason


def _name(cu, err) -> str:
    try:
        e, name = cu.cuGetErrorName(err)
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return str(err)


def ptx_key(text: str) -> bytes:
    return hashlib.sha3_256(text.encode()).digest()


class CudaError(RuntimeError):
    pass


def _ok(cu, res):
    err = res[0]
    if err != cu.CUresult.CUDA_SUCCESS:
        raise CudaError(f"CUDA error {_name(cu, err)}")
    return res[1] if len(res) == 2 else res[1:]


class Device:
    """The primary context of GPU 0, the run's arena and log, loaded modules (cached)."""

    _one: Device | None = None

    @classmethod
    def get(cls, memory: int) -> Device:
        if cls._one is None or cls._one.memory < memory:
            cls._one = Device(memory)
        return cls._one

    def __init__(self, memory: int) -> None:
        cu = self.cu = _driver()
        _ok(cu, cu.cuInit(0))
        dev = _ok(cu, cu.cuDeviceGet(0))
        self.ctx = _ok(cu, cu.cuDevicePrimaryCtxRetain(dev))
        _ok(cu, cu.cuCtxSetCurrent(self.ctx))
        _ok(cu, cu.cuCtxSetLimit(cu.CUlimit.CU_LIMIT_STACK_SIZE, 16384))
        self.memory = memory
        self.arena = _ok(cu, cu.cuMemAlloc(memory))
        self.log = _ok(cu, cu.cuMemAlloc(LOG_BYTES))
        # the other spaces' arenas: page-locked host memory mapped into the device, and
        # managed memory (kept small: managed memory past what the card has free can hang it)
        self.pinned_arena = self.alloc_in("pinned", SPACE_ARENA)
        self.unified_arena = self.alloc_in("unified", SPACE_ARENA)
        self.cells = _ok(cu, cu.cuMemAlloc(8 * S.CTX_CELLS))
        self.modules: dict[bytes, object] = {}
        self.images: dict[bytes, bytes] = {}  # PTX key -> a cubin ptxas made ahead of time
        self.events = None
        self.last_kernel_ms = 0.0  # the last launch's kernel time (CUDA events)

    def arch(self) -> str:
        """``sm_XY`` of GPU 0 (for assembling cubins ahead of time)."""
        cu = self.cu
        dev = _ok(cu, cu.cuDeviceGet(0))
        a = cu.CUdevice_attribute
        major = _ok(
            cu, cu.cuDeviceGetAttribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
        )
        minor = _ok(
            cu, cu.cuDeviceGetAttribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
        )
        return f"sm_{major}{minor}"

    def function(self, text: str):
        key = ptx_key(text)
        f = self.modules.get(key)
        if f is None:
            cu = self.cu
            image = self.images.get(key) or text.encode() + b"\0"
            mod = _ok(cu, cu.cuModuleLoadData(image))
            f = self.modules[key] = _ok(cu, cu.cuModuleGetFunction(mod, b"kera_main"))
        return f

    def alloc(self, nbytes: int):
        return _ok(self.cu, self.cu.cuMemAlloc(max(nbytes, 8)))

    def free(self, dptr) -> None:
        self.cu.cuMemFree(dptr)

    def alloc_in(self, space: str, nbytes: int) -> int:
        """``nbytes`` in memory space ``space``, as the kernel's address: device memory for
        `device` and `host` (staged), page-locked host memory mapped into the device for
        `pinned`, managed memory for `unified`."""
        cu = self.cu
        n = max(nbytes, 8)
        if space == "pinned":
            host = _ok(cu, cu.cuMemHostAlloc(n, MEMHOSTALLOC_PORTABLE | MEMHOSTALLOC_DEVICEMAP))
            return int(_ok(cu, cu.cuMemHostGetDevicePointer(host, 0)))
        if space == "unified":
            return int(_ok(cu, cu.cuMemAllocManaged(n, MEM_ATTACH_GLOBAL)))
        return int(self.alloc(n))

    def free_in(self, space: str, addr: int) -> None:
        cu = self.cu
        if space == "pinned":
            cu.cuMemFreeHost(addr)
        else:
            cu.cuMemFree(cu.CUdeviceptr(addr))

    def put(self, dptr, arr: np.ndarray) -> None:
        if arr.nbytes:
            _ok(self.cu, self.cu.cuMemcpyHtoD(dptr, np.ascontiguousarray(arr), arr.nbytes))

    def get_bytes(self, addr: int, nbytes: int) -> np.ndarray:
        """``nbytes`` at ``addr`` in any space (unified addressing: cuMemcpy)."""
        out = np.zeros(max(nbytes, 1), dtype=np.uint8)
        if nbytes:
            cu = self.cu
            dst = cu.CUdeviceptr(out.ctypes.data)
            _ok(cu, cu.cuMemcpy(dst, cu.CUdeviceptr(int(addr)), nbytes))
        return out[:nbytes]

    def launch(self, launch: Launch, text: str) -> tuple[np.ndarray, np.ndarray, bytes]:
        """Run the kernel: (context cells, io cells, the log's bytes) afterwards."""
        cu = self.cu
        f = self.function(text)
        bufs = []
        try:
            cells = list(launch.cells)
            for slot, arr, space in launch.buffers:
                d = self.alloc_in(space, arr.nbytes)
                bufs.append((space, d))
                if arr.nbytes:  # unified addressing: a copy into any space
                    src = cu.CUdeviceptr(np.ascontiguousarray(arr).ctypes.data)
                    _ok(cu, cu.cuMemcpy(cu.CUdeviceptr(d), src, arr.nbytes))
                cells[slot] = d
            io = np.array(cells + [0] * launch.n_results, dtype=np.uint64)
            dio = self.alloc(io.nbytes)
            bufs.append(("device", int(dio)))
            self.put(dio, io)
            log = int(self.log)
            arenas = {
                "device": (int(self.arena), self.memory),
                "pinned": (self.pinned_arena, SPACE_ARENA),
                "unified": (self.unified_arena, SPACE_ARENA),
            }
            ctx = context_cells(launch.steps, arenas, log, LOG_BYTES)
            self.put(self.cells, ctx)
            args = ((int(dio), int(self.cells)), (ctypes.c_uint64, ctypes.c_uint64))
            start, stop = self._events()
            _ok(cu, cu.cuEventRecord(start, 0))
            if launch.grid:
                # cooperative: every CTA resident at once, as the grid barrier needs
                blocks = self.resident_blocks(f, launch.threads)
                self.last_blocks = blocks
                _ok(
                    cu,
                    cu.cuLaunchCooperativeKernel(f, blocks, 1, 1, launch.threads, 1, 1, 0, 0, args),
                )
            else:
                self.last_blocks = 1
                _ok(cu, cu.cuLaunchKernel(f, 1, 1, 1, launch.threads, 1, 1, 0, 0, args, 0))
            _ok(cu, cu.cuEventRecord(stop, 0))
            _ok(cu, cu.cuCtxSynchronize())
            self.last_kernel_ms = float(_ok(cu, cu.cuEventElapsedTime(start, stop)))
            ctx_after = self.get_bytes(int(self.cells), ctx.nbytes).view(np.uint64)
            io_after = self.get_bytes(int(dio), io.nbytes).view(np.uint64)
            at = int(ctx_after[S.CTX_LOG_AT])
            logged = b"" if at == 2**64 - 1 else self.get_bytes(log, at - log).tobytes()
            return ctx_after, io_after, logged
        finally:
            self._pending = bufs

    def resident_blocks(self, f, threads: int) -> int:
        """How many CTAs of ``threads`` can be resident at once on the whole GPU (the grid
        of a cooperative launch)."""
        cu = self.cu
        per_sm = _ok(cu, cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(f, threads, 0))
        dev = _ok(cu, cu.cuDeviceGet(0))
        a = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        sms = _ok(cu, cu.cuDeviceGetAttribute(a, dev))
        return max(1, int(per_sm) * int(sms))

    def _events(self):
        """Two CUDA events (made once) timing the kernel alone: :attr:`last_kernel_ms`."""
        if self.events is None:
            cu = self.cu
            flags = cu.CUevent_flags.CU_EVENT_DEFAULT
            self.events = (_ok(cu, cu.cuEventCreate(flags)), _ok(cu, cu.cuEventCreate(flags)))
        return self.events

    def release(self) -> None:
        for space, d in getattr(self, "_pending", []):
            self.free_in(space, d)
        self._pending = []


@dataclass
class Launch:
    """Everything a launch needs from the host, built without a GPU."""

    cells: list[int]
    buffers: list[tuple[int, np.ndarray, str]]  # (io slot, the buffer's elements, space)
    n_results: int
    threads: int
    steps: int
    params_at: dict[int, np.ndarray] = field(default_factory=dict)
    grid: bool = False  # as many CTAs as fit at once, launched cooperatively (else one)


def context_cells(steps: int, arenas: dict, log: int, log_bytes: int) -> np.ndarray:
    """The run's context cells (select.py's ``CTX_*``) as the host writes them before a
    launch: the step budget, each memory space's arena (``arenas``: space -> (address,
    bytes); `host` shares the device arena), the print log, no failure yet."""
    ctx = np.zeros(S.CTX_CELLS, dtype=np.uint64)
    ctx[S.CTX_STEPS] = steps
    for space, (at, nbytes) in arenas.items():
        cur, _, end, first = S.ARENA_CELLS[space]
        ctx[cur], ctx[end], ctx[first] = at, at + nbytes, at
    ctx[S.CTX_LOG] = log
    ctx[S.CTX_LOG_AT] = log
    ctx[S.CTX_LOG_END] = log + log_bytes
    ctx[S.CTX_ERRMIN] = 2**64 - 1
    return ctx


def grid_of(text: str) -> bool:
    """Whether an artifact's kernel runs as a grid (its header says ``grid``)."""
    head = text[: text.find("\n.version")] if ".version" in text else text[:512]
    return " grid\n" in head or head.rstrip().endswith(" grid")


def _cell(t: str, v) -> int:
    a = np.asarray(v, dtype=DTYPES[t])
    if t in ("f32", "f64"):
        a = canon(a)
        return int(a.view({4: np.uint32, 8: np.uint64}[a.dtype.itemsize]))
    if t == "bool":
        return int(bool(a))
    return int(a.astype(np.int64)) & (2**64 - 1) if t != "u64" else int(a)


def _from_cell(t: str, bits: int):
    """A scalar result or printed value from its cell; a float NaN comes out canonical
    (semantics.md §3): a GPU's own NaN is 0x7FFFFFFF, not Kera's 0x7FC00000."""
    width = 8 if t == "bool" else ir.BITS[t]
    v = imm_value(ir.Imm(t, int(bits) & ((1 << width) - 1)))
    return canon(v) if t in ("f32", "f64") else v


def build_launch(sig, args, bound, prog, fn_name: str, threads: int, steps: int) -> Launch:
    fn = sig.function
    lf = prog.functions[fn_name]
    cells: list[int] = [int(bound[i]) for i in range(fn.type.n_dims)]
    buffers: list[tuple[int, np.ndarray]] = []
    for group, (t, v) in zip(lf.params, zip(fn.type.params, args, strict=True), strict=True):
        flat: list = []
        flatten_value(t, v, flat)
        for x, val in zip(group, flat, strict=True):
            if isinstance(x, ir.Buf):
                arr = np.ascontiguousarray(val.reshape(-1))
                if arr.dtype.kind == "f":
                    arr = canon(arr)
                buffers.append((len(cells), arr, x.space))
                cells.append(0)
            else:
                cells.append(_cell(x.type, val))
    n_out = sum(len(g) for g in lf.results)
    return Launch(cells, buffers, n_out, threads, steps)


def decode_log(prog: ir.Program, data: bytes) -> str:
    """The text the program printed, from the kernel's log records."""
    sites = S.print_sites(prog)
    words = np.frombuffer(data, dtype=np.uint64)
    out = []
    at = 0
    while at + 2 <= len(words):
        st = sites[int(words[at])]
        n = int(words[at + 1])
        payload = words[at + 2 : at + 2 + n]
        at += 2 + n
        if st.text is not None:
            out.append(st.text)
        elif isinstance(st.value, ir.Buf):
            rank = len(st.shape)
            dims = [int(d) for d in payload[:rank]]
            dt = np.dtype(DTYPES[st.value.elem])
            raw = payload[rank:]
            width = 8 if st.value.elem == "bool" else ir.BITS[st.value.elem]
            u = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
            arr = (raw & np.uint64((1 << width) - 1)).astype(u).view(dt).reshape(dims)
            if st.value.elem == "bool":
                arr = arr.astype(np.bool_)
            out.append(printing.format_value(canon(arr) if dt.kind == "f" else arr))
        else:
            v = _from_cell(st.value.type, int(payload[0]))
            out.append(printing.format_value(v))
    return "".join(out)


def run(
    text: str,
    threads: int,
    source,
    fn_name: str,
    inputs: dict,
    dims: dict | None = None,
    *,
    stdout: TextIO | None = None,
    max_steps: int | None = None,
    memory_limit: int = DEFAULT_MEMORY,
    dry_run: bool = False,
    emulate=None,
):
    """Run ``fn_name`` of an artifact's PTX ``text``: on GPU 0, or with ``emulate`` (an
    :class:`~kera_core.backends.ptx.emulate.Shape`) on the emulator, no GPU needed."""
    g = source.graph if hasattr(source, "graph") else source
    sig, args, bound, prog = prepare(
        source, fn_name, inputs, dims, program_of(g, fn_name, LOWERING)
    )
    steps = max_steps if max_steps is not None else NO_LIMIT
    launch = build_launch(sig, args, bound, prog, fn_name, threads, steps)
    launch.grid = grid_of(text)
    if dry_run:
        return launch
    if emulate is not None:
        from kera_core.backends.ptx.emulate import EmulatedDevice

        dev = EmulatedDevice(memory_limit, emulate)
    else:
        why = why_no_gpu()
        if why is not None:
            raise InputError("R0005", f"the ptx target cannot run here: {why}")
        dev = Device.get(memory_limit)
    try:
        ctx, io, logged = dev.launch(launch, text)
        tee = _Tee(stdout)
        tee.write(decode_log(prog, logged))
        status = int(ctx[S.CTX_STATUS])
        if status:
            code = CODE_NAMES.get(status, "R0008")
            msg = {"R0007": "step limit reached", "R0009": "memory limit reached"}
            error = PtxMemoryError if code == "R0009" else InterpError
            raise error(code, f"ptx: {msg.get(code, 'checked error')}")
        return _results(dev, sig, bound, prog, fn_name, io, len(launch.cells), tee)
    finally:
        dev.release()


def _results(dev: Device, sig, bound, prog, fn_name, io, at: int, tee) -> RunResult:
    fn = sig.function
    lf = prog.functions[fn_name]
    outs: list[Output] = []
    for (kind, i), group, shapes in zip(fn.outputs, lf.results, lf.result_shapes, strict=True):
        vals = []
        for x, shape in zip(group, shapes, strict=True):
            bits = int(io[at])
            at += 1
            if isinstance(x, ir.Buf):
                sh = lf.sizes(shape, bound)
                count = int(np.prod(sh)) if sh else 1
                dt = np.dtype(DTYPES[x.elem])
                raw = dev.get_bytes(bits, count * dt.itemsize) if count else np.zeros(0, np.uint8)
                arr = raw.view(dt).reshape(sh).copy()
                vals.append(canon(arr) if dt.kind == "f" else arr)
            else:
                vals.append(_from_cell(x.type, bits))
        if kind == "result":
            name, key, t = "result", "result", fn.type.result
        else:
            name, key, t = sig.param_names[i], f"param{i}", strip_ref(fn.type.params[i])
        ct = concrete_type(t, bound)
        value = _rebuild(strip_ref(t), iter(vals))
        outs.append(Output(name, ct, value_out(ct, value), key))
    return RunResult(
        fn.name,
        outs,
        {sig.dim_names[i]: n for i, n in sorted(bound.items())},
        tee.buf.getvalue(),
        "io" in fn.type.effects,
    )


def _rebuild(t, it):
    if isinstance(t, Struct):
        return tuple(_rebuild(strip_ref(ft), it) for _, ft in t.fields)
    return next(it)
