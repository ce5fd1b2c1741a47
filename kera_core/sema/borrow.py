"""The borrow checker's entry point; the implementation lives in `kera_core.sema.ownership`."""

from kera_core.sema.ownership import check_function, check_ownership

__all__ = ["check_function", "check_ownership"]
