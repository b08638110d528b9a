"""Type stubs for the compiled core (src/dgauss/_core.pyx)."""

from collections.abc import Callable

import numpy as np

HIGH_BITS: int
INVERSION_MAX: int
EXP_M1_PREFIX: int
INT_DIGITS: bool

def fill(
    kind: int,
    num: int,
    den: int,
    mu: int,
    source: object,
    out: np.ndarray,
    next_slice: Callable[[], tuple[int, int] | None] | None = None,
    *,
    high_bits: int = ...,
    fixed_point: bool = True,
) -> int: ...
def split_bits(t: int, high_bits: int = ...) -> int: ...
def int_roundtrip(v: int, by_bytes: bool = False) -> int: ...
def object_chunk(kind: int, num: int, den: int, mu: int = 0) -> int: ...
def exp_neg_floor(n: int, d: int, k: int) -> int: ...
def exp_neg_prefix(n: int, d: int, fixed_point: bool = True) -> int: ...
def exp_neg_prefix_fix(x_fix: int, slack: int = 1) -> int | None: ...
def geometric_thresholds(t: int, fixed_point: bool = True) -> list[int]: ...
def exp_table(t: int, h_values: list[int], fixed_point: bool = True) -> list[int]: ...
