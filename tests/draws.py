"""Guards against a program generator that silently stopped drawing a construct.

A test that counts what a fixed number of examples happened to contain depends on luck and
on the hypothesis version's example order (CI once drew 150 imperative programs without a
single `.step_by(`). `assert_draws` instead searches, for each construct on its own, for an
example that contains it — a construct reached by ~1 % of draws is found well within the
budget, one the generator can no longer draw fails the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

T = TypeVar("T")

SEARCH = settings(
    max_examples=3000,
    phases=[Phase.generate],
    database=None,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def assert_reaches(strategy: st.SearchStrategy[T], goals: dict[str, Callable[[T], bool]]) -> None:
    """Each goal holds for some drawn example (searched for on its own)."""
    missing = []
    for name, holds in goals.items():
        try:
            find(strategy, holds, settings=SEARCH)
        except NoSuchExample:
            missing.append(name)
    assert not missing, f"the generator no longer reaches {missing}"


def assert_draws(
    strategy: st.SearchStrategy[T], render: Callable[[T], str], constructs: Iterable[str]
) -> None:
    """Each of `constructs` (a substring of the rendered text) occurs in some drawn example."""
    assert_reaches(strategy, {c: (lambda ex, c=c: c in render(ex)) for c in constructs})
