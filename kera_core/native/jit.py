"""The JIT loader: map code W^X and call it through ctypes.

Lifecycle of a :class:`LoadedCode`:

1. ``mmap`` an anonymous private region ``PROT_READ | PROT_WRITE`` (never executable),
2. copy the code in,
3. ``mprotect`` it to ``PROT_READ | PROT_EXEC`` (never writable from then on),
4. hand out callables (:meth:`LoadedCode.function`); each checks the mapping is still open,
   so calling after :meth:`LoadedCode.close` raises :class:`JITError` instead of jumping into
   unmapped memory,
5. ``munmap`` on :meth:`close`, on leaving a ``with`` block, or when the object is garbage
   collected (``weakref.finalize``).  Callables keep their code object alive.

At no moment is the region both writable and executable.  Linux only (the constants are
Linux's; macOS would need ``MAP_JIT``).
"""

from __future__ import annotations

import ctypes
import mmap as _mmap
import os
import platform
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

PROT_READ = 0x1
PROT_WRITE = 0x2
PROT_EXEC = 0x4
MAP_PRIVATE = 0x02
MAP_ANONYMOUS = 0x20


class JITError(RuntimeError):
    """The JIT cannot map, protect or call code."""


class JITUnavailable(JITError):
    """This platform cannot run JIT code (not Linux, or mmap refused)."""


_libc_lock = threading.Lock()
_libc: Any = None


def _lib() -> Any:
    global _libc
    with _libc_lock:
        if _libc is None:
            if not sys.platform.startswith("linux"):
                raise JITUnavailable(f"the JIT loader supports Linux only, not {sys.platform}")
            lib = ctypes.CDLL(None, use_errno=True)
            lib.mmap.restype = ctypes.c_void_p
            lib.mmap.argtypes = [
                ctypes.c_void_p,
                ctypes.c_size_t,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_long,
            ]
            lib.mprotect.restype = ctypes.c_int
            lib.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            lib.munmap.restype = ctypes.c_int
            lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            _libc = lib
        return _libc


def _sync_icache(addr: int, size: int) -> None:
    """On ARM64 the instruction cache does not see the data cache's writes: make it
    (libgcc's ``__clear_cache``). x86-64 keeps them coherent: nothing to do."""
    if platform.machine() not in ("aarch64", "arm64"):
        return
    try:
        gcc = ctypes.CDLL("libgcc_s.so.1")
    except OSError as e:
        raise JITUnavailable(f"no libgcc_s to synchronise the instruction cache: {e}") from None
    gcc.__clear_cache.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    gcc.__clear_cache(addr, addr + size)


def _errno_text() -> str:
    e = ctypes.get_errno()
    return f"{os.strerror(e)} (errno {e})"


def _unmap(addr: int, size: int) -> None:
    _lib().munmap(addr, size)


class LoadedCode:
    """Executable code owned by this object.  Use :func:`load` to make one."""

    def __init__(self, code: bytes, labels: dict[Any, int] | None = None):
        if not code:
            raise JITError("no code to load")
        lib = _lib()
        page = _mmap.PAGESIZE
        size = -(-len(code) // page) * page
        addr = lib.mmap(None, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            raise JITUnavailable(f"mmap of {size} bytes failed: {_errno_text()}")
        try:
            ctypes.memmove(addr, code, len(code))
            if lib.mprotect(addr, size, PROT_READ | PROT_EXEC) != 0:
                raise JITUnavailable(f"mprotect to R+X failed: {_errno_text()}")
            _sync_icache(addr, size)
        except BaseException:
            lib.munmap(addr, size)
            raise
        self._addr = addr
        self._size = size
        self._length = len(code)
        self._labels = dict(labels or {})
        self._closed = False
        self._finalizer = weakref.finalize(self, _unmap, addr, size)

    @property
    def address(self) -> int:
        self._check()
        return self._addr

    @property
    def size(self) -> int:
        """Bytes mapped (whole pages)."""
        return self._size

    @property
    def closed(self) -> bool:
        return self._closed

    def address_of(self, where: Any = 0) -> int:
        """Absolute address of a code offset (``int``) or of a label given to :func:`load`."""
        self._check()
        off = where if isinstance(where, int) else self._labels.get(where)
        if off is None:
            raise JITError(f"unknown label {where!r}")
        if not 0 <= off < self._length:
            raise JITError(f"offset {off} outside the {self._length} bytes of code")
        return self._addr + off

    def function(
        self, restype: Any, argtypes: Sequence[Any] = (), where: Any = 0
    ) -> Callable[..., Any]:
        """A Python callable for the code at ``where`` with C signature
        ``restype (*)(argtypes...)`` (ctypes types; ``None`` for void)."""
        proto = ctypes.CFUNCTYPE(restype, *argtypes)
        raw = proto(self.address_of(where))
        owner = self

        def call(*args: Any) -> Any:
            if owner._closed:
                raise JITError("the code this function belongs to has been unmapped")
            return raw(*args)

        call.__name__ = f"jit@{where}"
        call.owner = owner  # type: ignore[attr-defined]
        call.raw = raw  # type: ignore[attr-defined]
        return call

    def close(self) -> None:
        """Unmap the code.  Idempotent."""
        if not self._closed:
            self._closed = True
            self._finalizer()

    def _check(self) -> None:
        if self._closed:
            raise JITError("the code has been unmapped")

    def __enter__(self) -> LoadedCode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"at {self._addr:#x}"
        return f"<LoadedCode {self._length} bytes {state}>"


def load(code: bytes, labels: dict[Any, int] | None = None) -> LoadedCode:
    """Map ``code`` read+execute and return its owner (see the module docstring)."""
    return LoadedCode(code, labels)


def mapping_permissions(address: int) -> str | None:
    """The permission string (``r-xp``...) of the ``/proc/self/maps`` line holding
    ``address``, or ``None`` if no mapping holds it.  For tests and diagnostics."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                span, perms = line.split()[:2]
                lo, hi = (int(x, 16) for x in span.split("-"))
                if lo <= address < hi:
                    return perms
    except OSError:
        return None
    return None
