"""accounting.compose: the δ of a whole program is never below the truth and close to it.

The truth comes from tests/_compose_reference.py: the exact convolution of every
coordinate's privacy-loss atoms, with rational positions and 60-digit masses.
"""

import math
from fractions import Fraction

import mpmath
import pytest

from _compose_reference import composed_delta
from _python import run_python
from dgauss import accounting as A
from dgauss.accounting import Gaussian, Laplace, _grids, _readouts, compose


def _program(rel):
    return compose(
        *(Gaussian(p, v, k) if kind == "gaussian" else Laplace(p, v, k) for kind, p, v, k in rel)
    )


# small programs, so that the exact convolution stays cheap; commensurate lattices (the grid
# is the lattice), incommensurate ones (the grid connects the dots), vectors and k
PROGRAMS = {
    "two sigma2 and a Laplace": [
        ("gaussian", 3, [1], 1),
        ("gaussian", 5, [1], 1),
        ("laplace", 2, [1], 1),
    ],
    "incommensurate sigma2": [("gaussian", "2.3", [1], 1), ("gaussian", "3.7", [1], 1)],
    "incommensurate, Laplace of sensitivity 3": [
        ("gaussian", "4.1", [1], 1),
        ("laplace", "2.9", [3], 1),
    ],
    "vector and k": [("gaussian", "1.9", [1, -1], 1), ("laplace", "1.3", [1], 3)],
    "Gaussian of sensitivity 2, two scales": [
        ("gaussian", "6.1", [2], 1),
        ("laplace", 3, [1], 1),
        ("laplace", "4.5", [1], 1),
    ],
}


def _atoms_near(rel, eps):
    """A composed loss value of the program near eps (an adversarial ε: an atom exactly)."""
    best = None
    kind, p, v, k = rel[0]
    # the loss values of the first coordinate plus those of the others' coordinates at their
    # centre make exact composite atoms
    values = [Fraction(0)]
    for kind, p, v, k in rel:
        for _ in range(k):
            for x in v:
                m, q = abs(x), Fraction(p)
                step = Fraction(m) / q if kind == "gaussian" else Fraction(2) / q
                start = Fraction(m * m) / (2 * q) if kind == "gaussian" else Fraction(m) / q
                values = [a + start - i * step for a in values for i in range(-3, 4)]
                values = sorted(set(values), key=lambda z: abs(z - Fraction(eps)))[:50]
    best = min(values, key=lambda z: abs(z - Fraction(eps)))
    return best


def _gridded(monkeypatch):
    """Make the PLD route use its grid even where the composed atoms are few enough to be
    enumerated exactly (small programs), so that the grid is tested too."""
    monkeypatch.setattr(_grids, "ENUM_MAX_ATOMS", 0)


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("eps", [0.25, 1, 2.5])
@pytest.mark.parametrize("on_atom", [False, True])
@pytest.mark.parametrize("exact", [True, False], ids=["atoms", "grid"])
def test_delta_is_an_upper_bound_within_a_thousandth(monkeypatch, name, eps, on_atom, exact):
    if not exact:
        _gridded(monkeypatch)
    rel = PROGRAMS[name]
    e = _atoms_near(rel, eps) if on_atom else Fraction(eps)
    if e < 0:
        e = Fraction(eps)
    lo, hi = composed_delta(rel, e, keep_digits=60)
    got = _program(rel).delta(e, log=True)
    assert mpmath.exp(got) >= hi  # never below the truth (hi: the reference's upper end)
    assert mpmath.exp(got) <= lo * mpmath.mpf("1.001")  # and within 0.1% of it


@pytest.mark.parametrize("log10_delta", [-20, -100, -300, -500])
def test_pld_route_agrees_with_theorem_15_down_to_tiny_deltas(log10_delta):
    """Two releases at one σ² have an exact route (Theorem 15); the PLD route, asked directly
    at the ε where δ has the given size, stays above it and within 0.1%."""
    program = compose(Gaussian(50), Gaussian(50, k=2))
    eps = Fraction(A.gaussian_epsilon(50, f"1e{log10_delta}", k=3))
    exact = A.gaussian_delta(50, eps, k=3, log=True)
    pld = program._pld(*_grids._choose(program._coords, float(eps), None))
    assert pld is not None
    got = pld.log_delta(float(eps))
    assert exact - 1e-8 <= got <= exact + math.log(1.001)


@pytest.mark.long
def test_heterogeneous_pld_agrees_with_the_exact_route_of_its_lattice():
    """σ² = 100 and 200 share the loss lattice 1/200: the PLD route is exact there, so it
    must equal a computation that sums the lattice directly (reference) to 1e−8."""
    rel = [("gaussian", 100, [1], 1), ("gaussian", 200, [1], 1), ("laplace", 10, [1], 1)]
    lo, hi = composed_delta(rel, 1, keep_digits=70)
    got = mpmath.exp(_program(rel).delta(1, log=True))
    assert hi <= got <= lo * (1 + mpmath.mpf("1e-8"))


@pytest.mark.parametrize("name", ["two sigma2 and a Laplace", "incommensurate sigma2"])
@pytest.mark.parametrize("delta", ["1e-3", "1e-9", "1e-40"])
def test_epsilon_is_certified_and_tight(name, delta):
    program = _program(PROGRAMS[name])
    eps = program.epsilon(delta)
    assert program.delta(eps) <= float(delta) * (1 + 1e-12)
    assert program.delta(eps * (1 - 2e-3)) > float(delta)


def test_the_issues_mixed_program_is_admitted_by_plain_composition_and_tighter():
    """A Gaussian at (0.5, 5e-7) and a Laplace at ε = 0.5 give (1, 5e-7) by plain
    composition; the composed δ at ε = 1 must be at most that, and the zCDP route is not."""
    sigma2 = A.calibrate_gaussian("0.5", "5e-7")
    program = compose(Gaussian(sigma2), Laplace(2))
    assert program.delta(1) <= 5e-7
    assert program.route(1) == "PLD"
    assert A.cdp_delta(program.rho, 1) > 5e-7


def test_routes_and_exact_quantities():
    one = compose(Gaussian(100), Gaussian(100, [1, -1], k=2))
    assert one.route(1) == "Theorem 15"
    assert one.delta(1) == A.gaussian_delta(100, 1, [1, 1, -1, 1, -1])
    assert one.rho == Fraction(1, 200) + Fraction(2 * 2, 200)
    lap = compose(Laplace(4, k=3), Laplace(4))
    assert lap.route("0.5") == "Eq. 49" and lap.delta("0.5") == A.laplace_delta(4, "0.5", k=4)
    assert lap.pure_epsilon == 1 and lap.delta(1) == 0 and lap.route(1) == "pure DP"
    assert lap.epsilon(0) == 1.0
    mixed = compose(Gaussian("71.41"), Laplace(4))
    assert mixed.pure_epsilon is None and mixed.route(1) == "PLD"
    assert mixed.rho == Fraction(100, 2 * 7141) + Fraction(1, 32)
    assert "Gaussian(sigma2=71.41)" in repr(mixed) and "Laplace(scale=4)" in repr(mixed)


def test_out_of_the_pld_range_falls_back_to_a_valid_route():
    """A σ² too wide to enumerate leaves the PLD route out; basic composition answers (the
    Laplace at its pure ε = 1/10, the Gaussian's exact δ at the rest), below zCDP."""
    program = compose(Gaussian("1e30"), Laplace(10))
    assert program.route(1) == "basic composition"
    assert program.delta(1) == A.gaussian_delta("1e30", Fraction(9, 10))
    assert program.delta(1) < A.cdp_delta(program.rho, 1)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: compose(), "release"),
        (lambda: Gaussian(0), "sigma2"),
        (lambda: Gaussian(1, k=0), "k"),
        (lambda: Laplace(-1), "scale"),
        (lambda: Laplace(1, sensitivity=0), "sensitivity"),
        (lambda: compose(Gaussian(1)).delta(-1), "epsilon"),
        (lambda: compose(Gaussian(1)).epsilon(0), "delta"),
        (lambda: compose(Gaussian(1)).epsilon(1), "delta"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_a_release_must_be_gaussian_or_laplace():
    with pytest.raises(TypeError, match="Gaussian"):
        compose(Gaussian(1), 3)


@pytest.mark.parametrize("eps", [10, 18, 26])
@pytest.mark.parametrize("exact", [True, False], ids=["atoms", "grid"])
@pytest.mark.long
def test_connect_the_dots_stays_above_the_truth_down_to_tiny_deltas(monkeypatch, eps, exact):
    """Incommensurate σ² and scale (their losses share no usable lattice, so the grid connects
    the dots) at ε where δ is 1e-28, 1e-92 and 1e-196: against the exact convolution with
    atoms and composed masses kept to 10^-260, never below and within 0.1%."""
    rel = [
        ("gaussian", "2.3000001", [1], 1),
        ("gaussian", "3.7000003", [1], 1),
        ("laplace", "2.9000007", [2], 1),
    ]
    if not exact:
        _gridded(monkeypatch)
    program = _program(rel)
    assert _grids._choose(program._coords, float(eps), None)[2] is None  # not on a lattice
    lo, hi = composed_delta(rel, eps, keep_digits=260, cut_digits=260)
    assert hi < lo * (1 + mpmath.mpf("1e-12"))  # the truth is pinned
    got = mpmath.exp(program.delta(eps, log=True))
    assert hi <= got <= lo * mpmath.mpf("1.001")


def _without_lattice(monkeypatch):
    """Make the PLD route connect the dots even where the losses share a lattice."""
    monkeypatch.setattr(_grids, "_lattice", lambda coords: Fraction(0))


def test_a_long_composition_connects_the_dots_within_a_thousandth(monkeypatch):
    """300 coordinates of one σ² through the PLD route with the grid forced off the lattice,
    against Theorem 15 at δ = 1e-12: the truncations (Hoeffding, measured) and the carried FFT
    error keep it above the truth and within 0.1%."""
    _without_lattice(monkeypatch)
    program = compose(Gaussian("40.9", k=300))
    eps = Fraction(A.gaussian_epsilon("40.9", "1e-12", k=300))
    exact = A.gaussian_delta("40.9", eps, k=300, log=True)
    alpha, h, lattice = _grids._choose(program._coords, float(eps), None)
    assert lattice is None
    got = _readouts._PLD(program._coords, alpha, h, None).log_delta(float(eps))
    assert exact - 1e-9 <= got <= exact + math.log(1.001)


@pytest.mark.slow
@pytest.mark.parametrize("sigma2, k, delta", [(10**6, 10**5, "1e-6"), ("1000.7", 2000, "1e-100")])
def test_very_long_compositions_stay_within_a_thousandth(monkeypatch, sigma2, k, delta):
    """10^5 and 2000 coordinates (the fine grid, seconds each), checked as above."""
    _without_lattice(monkeypatch)
    program = compose(Gaussian(sigma2, k=k))
    eps = Fraction(A.gaussian_epsilon(sigma2, delta, k=k))
    exact = A.gaussian_delta(sigma2, eps, k=k, log=True)
    got = program._pld(*_grids._choose(program._coords, float(eps), None)).log_delta(float(eps))
    assert exact - 1e-9 <= got <= exact + math.log(1.002)


def test_a_huge_program_answers_within_bounded_memory():
    """10^7 Gaussian queries and a Laplace: the PLD vectors outgrew memory (the process was
    killed); now the Hoeffding cut keeps them short: it answers in about 10 s, peaking under
    2 GiB (and under a 6 GiB address-space cap, a MemoryError would be an answer too)."""
    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))\n"
        "from dgauss.accounting import compose, Gaussian, Laplace\n"
        "p = compose(Gaussian(10**6, k=10**7), Laplace(10))\n"
        "print(p.delta(1), p.route(1), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = run_python(code, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    delta, *route, peak_kib = done.stdout.split()  # a route name may have a space
    assert 0 < float(delta) <= A.cdp_delta(Fraction(10**7, 2 * 10**6) + Fraction(1, 200), 1)
    assert int(peak_kib) < 2 << 20  # 0.66 GiB here; the vectors alone once took > 6 GiB
