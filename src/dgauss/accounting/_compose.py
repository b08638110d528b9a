"""Kept for old pickles only: the name pickles written before the accounting package's split
gave the composition's classes.

Such a pickle names ``dgauss.accounting._compose.Composition`` (and ``.Gaussian``,
``.Laplace``); this module keeps it loading.  Nothing imports it: the classes live in
:mod:`._composition` and :mod:`._releases`, and pickles now name the package,
``dgauss.accounting``.
"""

from dgauss.accounting._composition import Composition
from dgauss.accounting._releases import Gaussian, Laplace

__all__ = ["Composition", "Gaussian", "Laplace"]
