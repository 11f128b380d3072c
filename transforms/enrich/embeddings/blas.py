"""How many threads BLAS runs in this process (threadpoolctl), for the code
that multiplies small matrices many times: the local embedder's worker
threads and BERTScore's greedy matching. OpenBLAS otherwise splits even a
(60 x 384) @ (384 x 60) product over every core, and waking and waiting for
its threads then costs more CPU than the product (measured: greedy matching
took ten times the CPU with two BLAS threads as with one)."""
from __future__ import annotations

import threading

_BLAS_LOCK = threading.Lock()
_BLAS_USERS = 0
_BLAS_LIMITER = None
_CONTROLLER: list = []


def controller():
    """threadpoolctl's view of the loaded BLAS libraries (built once: ~0.01 ms per
    limit then, instead of ~0.7 ms for a fresh scan), or None without threadpoolctl."""
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController
            _CONTROLLER.append(ThreadpoolController())
        except ImportError:  # pragma: no cover - a dependency of the product
            _CONTROLLER.append(None)
    return _CONTROLLER[0]


class blas_threads:
    """Limit BLAS to n threads while at least one caller is inside (re-entrant
    across threads: the limit is lifted when the last one leaves). Needs
    threadpoolctl; without it this does nothing."""

    def __init__(self, n: int):
        self.n = n

    def __enter__(self):
        global _BLAS_USERS, _BLAS_LIMITER
        with _BLAS_LOCK:
            if _BLAS_USERS == 0:
                ctl = controller()
                _BLAS_LIMITER = (ctl.limit(limits=self.n, user_api="blas")
                                 if ctl is not None else None)
            _BLAS_USERS += 1
        return self

    def __exit__(self, *exc):
        global _BLAS_USERS, _BLAS_LIMITER
        with _BLAS_LOCK:
            _BLAS_USERS -= 1
            if _BLAS_USERS == 0 and _BLAS_LIMITER is not None:
                _BLAS_LIMITER.restore_original_limits()
                _BLAS_LIMITER = None
        return False


