"""Shared test set-up: hypothesis profiles.

`default` (local runs) draws fresh random examples every run, so repeated runs keep
exploring; `ci` is what CI runs: derandomized, so a green run here is a green run there and
a failure always reproduces; `fuzz` is for long local sessions, e.g.
`HYPOTHESIS_PROFILE=fuzz pytest tests/test_reparse.py -k random_edit`.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz", max_examples=20000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)
