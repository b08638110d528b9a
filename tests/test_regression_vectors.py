"""Regression vectors: hashes of seeded outputs, pinned in tests/data/regression_vectors.json.

Core and oracle change together, so a change of the bit-consumption contract would
pass every parity test; these hashes do not move unless the samples do.  Both the
compiled core and the pure-Python oracle must reproduce every one.  A deliberate
contract change updates them with ``python tests/test_regression_vectors.py --update``
(and says so in its commit).

The cases cover four NumPy bit generators; σ² from 1/4 to 10^100 (int64 and object
outputs) by rejection and from 1/64 to 2^100 by inversion (blocked to 2^24, enveloped
beyond); a shift μ; the discrete Laplace from scale 1 to beyond 2^40 by rejection and from
1/64 to 2^40 by inversion; and Bernoulli(exp(−γ)) for γ below and above 1.
"""

import hashlib
import json
import pathlib
import sys

import numpy as np
import pytest

import dgauss
from dgauss import reference

DATA = pathlib.Path(__file__).resolve().parent / "data" / "regression_vectors.json"
SIZE = 500

#: (name, sampler, parameter, keyword arguments, bit generator, seed)
CASES = [
    ("gaussian 1/4", "gaussian", "1/4", {"method": "rejection"}, "PCG64", 1),
    ("gaussian 1", "gaussian", "1", {"method": "rejection"}, "Philox", 2),
    ("gaussian 1/3 mu=-5", "gaussian", "1/3", {"mu": -5, "method": "rejection"}, "SFC64", 3),
    ("gaussian 100", "gaussian", "100", {"method": "rejection"}, "MT19937", 4),
    ("gaussian 10^6", "gaussian", "1000000", {"method": "rejection"}, "PCG64", 5),
    ("gaussian 10^10", "gaussian", "10000000000", {"method": "rejection"}, "Philox", 6),
    ("gaussian 10^100 (object)", "gaussian", "1e100", {}, "SFC64", 7),
    ("gaussian 2^101 mu=2^70 (object)", "gaussian", str(2**101), {"mu": 2**70}, "MT19937", 8),
    ("gaussian 1/64 by inversion", "gaussian", "1/64", {"method": "inversion"}, "PCG64", 16),
    ("gaussian 1/4 by inversion", "gaussian", "1/4", {"method": "inversion"}, "Philox", 17),
    (
        "gaussian 7/3 mu=-5 by inversion",
        "gaussian",
        "7/3",
        {"mu": -5, "method": "inversion"},
        "SFC64",
        18,
    ),
    ("gaussian 100 by inversion", "gaussian", "100", {"method": "inversion"}, "MT19937", 19),
    ("gaussian 10^6 by inversion", "gaussian", "1000000", {"method": "inversion"}, "PCG64", 20),
    ("gaussian 2^24 by inversion", "gaussian", str(2**24), {"method": "inversion"}, "Philox", 21),
    (
        "gaussian 2^16+1/3 mu=9 by blocked inversion",
        "gaussian",
        "196609/3",
        {"mu": 9, "method": "inversion"},
        "MT19937",
        27,
    ),
    (
        "gaussian 2^24+1/3 by enveloped inversion",
        "gaussian",
        "50331649/3",
        {"method": "inversion"},
        "SFC64",
        31,
    ),
    ("gaussian 10^12 by enveloped inversion", "gaussian", "1000000000000", {}, "PCG64", 29),
    (
        "gaussian 2^100 mu=-2^61 by enveloped inversion",
        "gaussian",
        str(2**100),
        {"mu": -(2**61), "method": "inversion"},
        "Philox",
        30,
    ),
    ("laplace 1", "laplace", "1", {"method": "rejection"}, "PCG64", 9),
    ("laplace 7/3", "laplace", "7/3", {"method": "rejection"}, "Philox", 10),
    ("laplace 1000", "laplace", "1000", {"method": "rejection"}, "SFC64", 11),
    ("laplace 10^6 mu=7", "laplace", "1000000", {"mu": 7, "method": "rejection"}, "MT19937", 12),
    ("laplace 2^41+1 (object)", "laplace", str(2**41 + 1), {}, "PCG64", 13),
    ("laplace 1/64 by inversion", "laplace", "1/64", {"method": "inversion"}, "SFC64", 22),
    ("laplace 7/3 by inversion", "laplace", "7/3", {"method": "inversion"}, "PCG64", 23),
    (
        "laplace 1000 mu=-3 by inversion",
        "laplace",
        "1000",
        {"mu": -3, "method": "inversion"},
        "Philox",
        24,
    ),
    ("laplace 2^20 by inversion", "laplace", str(2**20), {"method": "inversion"}, "MT19937", 25),
    ("laplace 511/2 by inversion", "laplace", "511/2", {"method": "inversion"}, "PCG64", 28),
    (
        "laplace 10^4+1/3 mu=5 by blocked inversion",
        "laplace",
        "30001/3",
        {"mu": 5, "method": "inversion"},
        "SFC64",
        26,
    ),
    (
        "laplace 10^8/3 mu=4 by enveloped inversion",
        "laplace",
        "100000000/3",
        {"mu": 4, "method": "inversion"},
        "PCG64",
        33,
    ),
    (
        "laplace 2^40 by enveloped inversion",
        "laplace",
        str(2**40),
        {"method": "inversion"},
        "MT19937",
        32,
    ),
    ("bernoulli_exp 1/2", "bernoulli_exp", "1/2", {}, "Philox", 14),
    ("bernoulli_exp 7/3", "bernoulli_exp", "7/3", {}, "SFC64", 15),
]


def draw(module, case):
    name, sampler, param, kwargs, generator, seed = case
    rng = np.random.Generator(getattr(np.random, generator)(seed))
    return getattr(module, f"sample_{sampler}")(param, SIZE, rng=rng, **kwargs)


def digest(values) -> str:
    """sha256 of the samples in decimal, one per line (the same for int64, object and bool)."""
    text = "\n".join(str(int(v)) for v in np.asarray(values).ravel())
    return hashlib.sha256(text.encode()).hexdigest()


def pinned():
    return json.loads(DATA.read_text())


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_seeded_output_matches_its_pinned_hash(implementation, case):
    assert digest(draw(implementation, case)) == pinned()[case[0]], (
        f"{case[0]}: the samples changed; if the bit-consumption contract changed on purpose, "
        "run python tests/test_regression_vectors.py --update"
    )


def test_every_case_is_pinned_and_nothing_else():
    assert sorted(pinned()) == sorted(c[0] for c in CASES)


def test_the_hash_sees_a_single_changed_sample():
    values = draw(reference, CASES[3])
    changed = values.copy()
    changed[SIZE // 2] += 1
    assert digest(changed) != digest(values)


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python tests/test_regression_vectors.py --update")
    DATA.parent.mkdir(exist_ok=True)
    hashes = {case[0]: digest(draw(dgauss, case)) for case in CASES}
    DATA.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(hashes)} hashes to {DATA}")
