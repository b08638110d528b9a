"""Noising arrays of counts: the discrete Gaussian and discrete Laplace mechanisms, with the
privacy guarantee attached, and an accountant that spends one budget over several releases.

A mechanism adds exact noise (the compiled samplers) to every value of an array; its noise
is set in exactly one way (a variance or scale, a zCDP ρ, or an (ε, δ) target calibrated by
:mod:`dgauss.accounting`), and it reports what it gives through the same module.

>>> import numpy as np, dgauss
>>> counts = np.array([12, 0, 7, 3])
>>> mech = dgauss.GaussianMechanism(rho=0.5)          # one count per person: sensitivity 1
>>> mech.sigma2
Fraction(1, 1)
>>> noisy = mech(counts, rng=np.random.default_rng(1))  # seeded: for examples only
>>> noisy.dtype, noisy.shape
(dtype('int64'), (4,))

The rules every entry point follows (the functions, the mechanisms' calls, the Accountant's
``add_*_noise``):

* **Inputs**, of any shape: Python ints, floats, lists and nested lists; NumPy arrays of any
  integer dtype, 0-d to N-D, C- or Fortran-ordered or strided views; object arrays of Python
  ints; pandas Series and DataFrames (returned with their index and columns; ``columns=``
  chooses the count columns, the others come back as they were); Dask arrays, DataFrames
  and Series (noised lazily, :mod:`dgauss.dask`).  The result has the input's shape and
  form (a Python scalar for a scalar, an ndarray for a list).  Floats, bools and anything
  else are refused, unless a ``granularity`` g is given: then values (floats, ints,
  Fractions, Decimals) must be exact multiples of g (never rounded), the mechanism counts
  sensitivity, σ² and scale in steps of g, adds g·(integer noise), and returns float64,
  each value the double nearest the exact value + g·noise.
* **One noise value per element**, drawn in one batch in C order (a DataFrame's rows, each
  across the columns in the order of ``columns=``): with a seeded ``rng`` the noise is that
  of one ``sample_gaussian(σ², n, rng=rng)`` (``sample_laplace``) of n values.
* **The input is never modified** unless ``out=`` is the input itself.  ``out``: an ndarray
  of the values' shape, of any layout, int64 or object (float64 with a granularity; object
  with ``overflow="object"``).
* **Overflow is never silent**: small and unsigned dtypes give int64 results (negatives
  allowed); a result outside int64 raises ``OverflowError``, or with ``overflow="object"``
  comes back as an object array of exact Python ints.  Object arrays, and Python ints
  beyond int64, come back as exact Python ints.  With a granularity the integers are exact
  on the way and ``overflow`` does not apply; a result beyond float64 raises
  ``OverflowError``.
* ``clip=(lo, hi)`` clips the noisy values (e.g. ``(0, None)`` for counts): post-processing,
  free privacy-wise.  Integers, in the values' units; with a granularity any rationals,
  narrowed to the multiples of g between them (the result stays on the lattice).
* **Every check runs before the budget is taken**: the input (shape, dtype, lattice, missing
  values, columns) and every option (``clip``, ``out``, ``overflow``, ``sensitivity``,
  ``rng``, ``workers``) are checked before a release is counted; a refused call leaves a
  mechanism's count and an Accountant's spent, remaining and ledger as they were.
* **What can fail after the draw** is an overflow (``OverflowError``: a value + noise beyond
  int64 with ``overflow="raise"`` or beyond an int64 ``out``, or beyond float64 with a
  granularity).  The release is then counted: whether it overflows depends on the values
  and the noise, so the error is itself an output.  Nothing is returned, the input is as
  it was, and ``out`` holds what it held or the noise alone, never a value.  A Dask
  collection's values are read when it is computed: a value off the lattice, a missing
  value or an overflow raises then, after the release was counted.
* **Timing**: the noise of a call is drawn in one batch before the data are touched; see the
  README's security notes for what the time of a call can still reveal.
"""

from __future__ import annotations

# The names are defined in three rooms: _inputs (input handling and the release path),
# _mechanism (the mechanisms) and _accountant (the Accountant); this module is their
# public face.
from dgauss import _accountant, _inputs, _mechanism
from dgauss._accountant import LEDGER_FORMAT as LEDGER_FORMAT  # names the module always had
from dgauss._accountant import LEDGER_VERSION as LEDGER_VERSION
from dgauss._accountant import Accountant, PrivacyLoss, Remaining
from dgauss._inputs import INT64_MAX as INT64_MAX
from dgauss._inputs import INT64_MIN as INT64_MIN
from dgauss._kinds import Kind as Kind
from dgauss._mechanism import (
    BudgetCopyWarning,
    GaussianMechanism,
    LaplaceMechanism,
    PrivacyBudgetError,
    add_gaussian_noise,
    add_laplace_noise,
)

# Every class of the three rooms lived in this module before the split, and says so: in
# reprs, tracebacks and pickles (which name a class by module and name: a pickle made
# before the split loads, and one made now loads wherever this module exists).
for _room in (_inputs, _mechanism, _accountant):
    for _name, _value in list(vars(_room).items()):
        if isinstance(_value, type) and _value.__module__ == _room.__name__:
            _value.__module__ = __name__
            globals()[_name] = _value
del _room, _name, _value

__all__ = [
    "GaussianMechanism",
    "LaplaceMechanism",
    "Accountant",
    "PrivacyLoss",
    "PrivacyBudgetError",
    "BudgetCopyWarning",
    "Remaining",
    "add_gaussian_noise",
    "add_laplace_noise",
]
