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

from dgauss import accounting
from dgauss._api import sample_bernoulli_exp, sample_gaussian, sample_laplace

__all__ = ["sample_gaussian", "sample_laplace", "sample_bernoulli_exp", "accounting"]
__version__ = "0.1.0"
