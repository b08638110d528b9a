"""What a ``fill`` backend samples: one code per sampler, shared by the compiled core
(``dgauss._core`` checks its C enum against these values when it is imported), the
driver (:mod:`dgauss._driver`) and the pure-Python oracle (:mod:`dgauss.reference`).

Pure Python on purpose: the oracle must import without the compiled core.
"""

from enum import IntEnum


class Kind(IntEnum):
    """The samplers, named as in the paper (Canonne, Kamath & Steinke 2020, Section 5)."""

    BERNOULLI_EXP = 0  #: Algorithm 1, Bernoulli(exp(-gamma)), parameter gamma = num/den
    DISCRETE_LAPLACE = 1  #: Algorithm 2, Lap_Z(t/s), parameter t/s = num/den
    DISCRETE_GAUSSIAN = 2  #: Algorithm 3, N_Z(0, sigma^2), parameter sigma^2 = num/den
    BERNOULLI = 3  #: the primitive Bernoulli(n/d), for dgauss.testing
    UNIFORM = 4  #: the primitive uniform(m) (parameter m/1), for dgauss.testing


BERNOULLI_EXP = Kind.BERNOULLI_EXP
DISCRETE_LAPLACE = Kind.DISCRETE_LAPLACE
DISCRETE_GAUSSIAN = Kind.DISCRETE_GAUSSIAN
BERNOULLI = Kind.BERNOULLI
UNIFORM = Kind.UNIFORM
