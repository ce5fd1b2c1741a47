"""Shared test set-up: hypothesis profiles.

`default` keeps the whole suite fast; `ci` is what CI runs; `fuzz` is for long local
fuzzing sessions: `HYPOTHESIS_PROFILE=fuzz pytest tests/test_fuzz_frontend.py`.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz", max_examples=20000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)
