"""The GPU runner: check, time and publish every snippet and notebook on a GPU.

    python -m triton_course.runner run [--only NAME] [--skip-notebooks]
    python -m triton_course.runner stale

See ``triton_course/runner/README.md``. Importing this package needs neither
torch nor triton (the staleness check runs in the docs environment).
"""

from triton_course.runner.measure import RunnerError, capture_ncu

__all__ = ["RunnerError", "capture_ncu"]
