"""dgauss: exact discrete Gaussian and discrete Laplace noise for differential privacy.

Samples are drawn with the exact algorithms of Canonne, Kamath & Steinke,
"The Discrete Gaussian for Differential Privacy" (NeurIPS 2020): random bits and
integer arithmetic only, no floating point on the sampling path, compiled over
GMP and written straight into NumPy arrays.

>>> import dgauss
>>> noise = dgauss.sample_gaussian(100, size=1000)      # N_Z(0, 100), OS randomness
>>> noise.dtype
dtype('int64')

:mod:`dgauss.accounting` turns a privacy target into σ² and back, exactly and
never optimistically (the paper's Sections 2–4).
:mod:`dgauss.reference` holds the same samplers in readable pure Python (the
test oracle); docs/contract.md documents the bit-consumption contract they share.
"""

from __future__ import annotations

from typing import Any

from dgauss import accounting
from dgauss._chacha import ChaCha20
from dgauss._reconcile import Reconciliation, reconcile
from dgauss._tabulate import Table, tabulate
from dgauss.mechanisms import (
    Accountant,
    BudgetCopyWarning,
    GaussianMechanism,
    LaplaceMechanism,
    PrivacyBudgetError,
    PrivacyLoss,
    add_gaussian_noise,
    add_laplace_noise,
)

__all__ = [
    "sample_gaussian",
    "sample_laplace",
    "sample_bernoulli_exp",
    "accounting",
    "ChaCha20",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Accountant",
    "PrivacyLoss",
    "PrivacyBudgetError",
    "BudgetCopyWarning",
    "add_gaussian_noise",
    "add_laplace_noise",
    "reconcile",
    "Reconciliation",
    "tabulate",
    "Table",
]
__version__ = "0.1.0"

_SAMPLERS = ("sample_gaussian", "sample_laplace", "sample_bernoulli_exp")


def __getattr__(name: str) -> Any:
    """The samplers, loaded with the compiled core on first use (PEP 562), so that the
    pure-Python parts (``dgauss.reference``, ``dgauss.accounting``) import without it."""
    if name in _SAMPLERS:
        try:
            from dgauss import _api
        except ImportError as exc:
            raise ImportError(
                f"dgauss.{name} needs dgauss's compiled core, which does not import ({exc}); "
                "build it with `python3 -m pip install .` (needs GMP's headers, see README)"
            ) from exc
        value = getattr(_api, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'dgauss' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SAMPLERS))
