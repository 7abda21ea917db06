"""Run small dense linear algebra on one BLAS thread.

The matrices here are small (tens to a few hundred variables). Multi-threaded OpenBLAS gains
nothing on them and, on a busy machine, a 100 x 100 ``eigh`` can take 300 ms instead of 1 ms
because the threads wait for each other. ``single_blas_thread`` limits BLAS to one thread for
the duration of a call (via threadpoolctl, a scikit-learn dependency) and is re-entrant.
"""

from __future__ import annotations

import functools

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover
    ThreadpoolController = None

_depth = 0
_controller = None


def _limit():
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()  # inspecting the loaded libraries once is the slow part
    return _controller.limit(limits=1, user_api="blas")


def single_blas_thread(func):
    """Decorator: run ``func`` with BLAS limited to one thread (outermost call only)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        global _depth
        if ThreadpoolController is None or _depth > 0:
            return func(*args, **kwargs)
        _depth += 1
        try:
            with _limit():
                return func(*args, **kwargs)
        finally:
            _depth -= 1

    return wrapper
