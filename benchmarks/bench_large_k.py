"""Time the accounting's closed forms at k = 10^7 composed queries (one call each).

Run from a checkout or an installed dgauss::

    python benchmarks/bench_large_k.py

Before (issue 33, the same machine): ``laplace_epsilon(10, k=10**7, delta="1e-6")`` 38 s
(22 evaluations of Eq. 49, each about 2·10^4 terms with two log-gammas apiece) and
``gaussian_delta(100, 1000, k=10**7)`` 16 s (Theorem 7's sum from left of the centre, where
Euler–Maclaurin's remainder never closed, so every precision up to 8,192 bits was tried).
Each row prints the seconds of one call (the first, so imports and caches are included in
the first row only) and the value returned.
"""

from __future__ import annotations

import time

from dgauss import accounting as A

CASES = [
    (
        'laplace_epsilon(10, k=10**7, delta="1e-6")',
        lambda: A.laplace_epsilon(10, k=10**7, delta="1e-6"),
    ),
    ("laplace_delta(10, 50000, k=10**7)", lambda: A.laplace_delta(10, 50000, k=10**7)),
    ('calibrate_laplace(10, "1e-6", k=10**7)', lambda: A.calibrate_laplace(10, "1e-6", k=10**7)),
    ("gaussian_delta(100, 1000, k=10**7)", lambda: A.gaussian_delta(100, 1000, k=10**7)),
    ("gaussian_delta(5e6, 0.5, k=10**7)", lambda: A.gaussian_delta(5 * 10**6, "0.5", k=10**7)),
    ('gaussian_epsilon(1e8, "1e-6", k=10**7)', lambda: A.gaussian_epsilon(10**8, "1e-6", k=10**7)),
    ('calibrate_gaussian(1, "1e-6", k=10**7)', lambda: A.calibrate_gaussian(1, "1e-6", k=10**7)),
    (
        'calibrate_gaussian(1, "1e-6", k=10**7, round_up_safe=True)',
        lambda: A.calibrate_gaussian(1, "1e-6", k=10**7, round_up_safe=True),
    ),
]


def main() -> None:
    print("| call | seconds | value |")
    print("|---|---:|---|")
    for name, call in CASES:
        start = time.perf_counter()
        value = call()
        elapsed = time.perf_counter() - start
        print(f"| `{name}` | {elapsed:.2f} | {value} |")


if __name__ == "__main__":
    main()
