"""``dgauss calibrate`` and ``dgauss account``, run in-process through :func:`dgauss.cli.main`.

Every printed number is checked against :mod:`dgauss.accounting` called with the same
inputs: parameters exactly, utilities to their printed digits, and each delta or epsilon
as rounded *up* to 4 significant digits (never below the accounting's value, and within
one unit of the last digit above it).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from fractions import Fraction

import mpmath
import pytest

import dgauss
from dgauss import accounting, cli

DIGITS = cli.PRIVACY_DIGITS
ROUTES = ("discrete Gaussian, exact", "discrete Gaussian, zCDP", "discrete Laplace")


def run(capsys, *argv: str, large: tuple[str, ...] = ()) -> str:
    """stdout of a successful ``dgauss ARGV``, whose stderr is empty but for a warning about
    each δ of ``large`` (10^-3 or more: docs/cli.md)."""
    assert cli.main(list(argv)) == 0
    captured = capsys.readouterr()
    warned = [f"dgauss {argv[0]}: warning: --delta {d} is large: " for d in large]
    lines = captured.err.splitlines()
    assert len(lines) == len(warned), captured.err
    assert all(line.startswith(w) for line, w in zip(lines, warned, strict=True)), captured.err
    return captured.out


def calibrate_rows(out: str) -> dict[str, list[str]]:
    """The table of ``calibrate``: route name -> [parameter, variance, std dev, interval]."""
    rows = {}
    for line in out.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] in ROUTES:
            rows[cells[0]] = cells[1:]
    assert set(rows) == set(ROUTES), out
    return rows


def table(out: str, first: str) -> dict[str, list[str]]:
    """The ``account`` table whose header starts with ``first``: first column -> the others."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [first])
    rows = {}
    for line in lines[start + 1 :]:
        if not line.strip() or line.strip().startswith("("):
            break
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return rows


def printed_ln(text: str) -> mpmath.mpf:
    """ln of a printed delta or epsilon such as '7.393e-549', '0.0005126' or 'e^-1.797e308'."""
    with mpmath.workdps(50):
        if text.startswith("e^"):
            return mpmath.mpf(text[2:])
        return mpmath.log(mpmath.mpf(text))


def assert_rounded_up(text: str, value: float = None, log_value: float = None) -> None:
    """``text`` is ``value`` (or e**log_value) rounded up to DIGITS significant digits."""
    assert text != "0"
    significant = text.lstrip("e^").split("e")[0].replace("-", "").replace(".", "").lstrip("0")
    assert len(significant) == DIGITS, f"{text!r} does not show {DIGITS} significant digits"
    with mpmath.workdps(50):
        if log_value is None:
            q = Fraction(value)
            ln_true = mpmath.log(mpmath.mpf(q.numerator) / q.denominator)
        else:
            ln_true = mpmath.mpf(log_value)
        ln_shown = printed_ln(text)
        if text.startswith("e^"):  # the exponent itself, rounded up
            assert ln_shown >= ln_true and ln_shown - ln_true <= abs(ln_true) * 10 ** (1 - DIGITS)
            return
        assert ln_shown >= ln_true, f"{text} is below the accounting's {value or log_value}"
        # one unit in the last digit is at most a relative 10**(1 - DIGITS)
        assert ln_shown - ln_true <= mpmath.log(1 + mpmath.mpf(10) ** (1 - DIGITS)), text


# ---- calibrate -----------------------------------------------------------------


@pytest.mark.parametrize(
    "eps, delta, k, sensitivity",
    [
        ("1", "1e-6", 100, "1"),
        ("1", "1e-6", 1, "1"),
        ("1/3", "1e-9", 10, "1,-1,2"),
        ("0.5", "1/1000", 3, "2"),
    ],
)
@pytest.mark.long
def test_calibrate_prints_the_accounting(capsys, eps, delta, k, sensitivity):
    out = run(
        capsys,
        "calibrate",
        "--eps",
        eps,
        "--delta",
        delta,
        "--k",
        str(k),
        "--sensitivity",
        sensitivity,
        large=(delta,) if Fraction(delta) >= Fraction(1, 1000) else (),
    )
    rows = calibrate_rows(out)
    vector = tuple(int(x) for x in sensitivity.split(","))
    sens = vector if len(vector) > 1 else vector[0]
    l1 = sum(abs(x) for x in vector)
    expected = {
        ROUTES[0]: (
            "sigma2",
            accounting.calibrate_gaussian(eps, delta, sens, k, method="exact", round_up_safe=True),
        ),
        ROUTES[1]: ("sigma2", accounting.calibrate_gaussian(eps, delta, sens, k, method="zcdp")),
        ROUTES[2]: ("scale", accounting.calibrate_laplace(eps, delta, l1, k)),
    }
    variances = {}
    for route, (symbol, param) in expected.items():
        shown, variance, std, interval = rows[route]
        name, value = shown.split(" = ")
        assert name == symbol
        assert Fraction(value) == param  # exactly the calibrated value
        assert len(value.replace(".", "").lstrip("0")) >= accounting.GRID_DIGITS  # 17.90, not 17.9
        if symbol == "sigma2":
            true_variance = accounting.gaussian_variance(param)
            width = accounting.gaussian_interval(param, "0.05")[1]
        else:
            true_variance = accounting.laplace_variance(param)
            width = accounting.laplace_interval(param, "0.05")[1]
        assert float(variance) == pytest.approx(true_variance, rel=1e-5)
        assert float(std) == pytest.approx(math.sqrt(true_variance), rel=1e-5)
        assert interval == f"+-{width}"
        variances[route] = true_variance
    saving = re.search(r"exact accounting needs ([\d.]+)% less variance than zCDP", out)
    assert saving, out
    exact, zcdp = variances[ROUTES[0]], variances[ROUTES[1]]
    assert float(saving.group(1)) == pytest.approx(100 * (zcdp - exact) / zcdp, abs=0.05)
    if len(vector) > 1:
        assert f"l1 norm {l1}" in out


@pytest.mark.parametrize("bound, shown", [(1, False), (2, True), (5, True)])
def test_calibrate_says_what_a_bound_sensitivity_means_for_each_noise(capsys, bound, shown):
    """A bound Δ ≥ 2 is a ball in each noise's own norm: ℓ2 for the Gaussian rows, ℓ1 for the
    Laplace's (the two rows compare different neighbours); the output says so."""
    out = run(capsys, "calibrate", "--eps", "1", "--delta", "1e-6", "--sensitivity", str(bound))
    note = (
        f"the Gaussian accounts every integer difference vector of l2 norm <= {bound}, "
        f"the Laplace of l1 norm <= {bound}"
    )
    assert (note in out) == shown, out


def test_calibrate_reference_numbers(capsys):
    """The paper's numbers at eps = 1, delta = 1e-6, k = 100 (on the 4-digit grid)."""
    rows = calibrate_rows(run(capsys, "calibrate", "--eps", "1", "--delta", "1e-6", "--k", "100"))
    assert rows[ROUTES[0]][0] == "sigma2 = 1785"  # 1784.8 off the grid
    assert rows[ROUTES[1]][0] == "sigma2 = 2053"  # 2052.9 off the grid
    assert rows[ROUTES[2]][0] == "scale = 41.65"
    assert float(rows[ROUTES[2]][1]) == pytest.approx(3469, abs=1)
    rows = calibrate_rows(run(capsys, "calibrate", "--eps", "1", "--delta", "1e-6"))
    assert rows[ROUTES[0]][0] == "sigma2 = 17.90"
    assert rows[ROUTES[1]][0] == "sigma2 = 20.53"


def test_exact_route_certifies_the_printed_sigma2(capsys):
    rows = calibrate_rows(run(capsys, "calibrate", "--eps", "1", "--delta", "1e-6", "--k", "100"))
    sigma2 = Fraction(rows[ROUTES[0]][0].split(" = ")[1])
    assert accounting.gaussian_delta(sigma2, 1, k=100) <= 1e-6
    assert accounting.gaussian_delta(sigma2 - 1, 1, k=100) > 1e-6  # the grid point below fails


def test_calibrate_prints_a_value_you_can_round_up(capsys):
    """At large eps the exact delta is a sawtooth in sigma2: the printed sigma2 is the least
    from which every larger grid value certifies, and the smaller one that certifies alone is
    named beside it."""
    out = run(capsys, "calibrate", "--eps", "8", "--delta", "1e-20")
    rows = calibrate_rows(out)
    assert rows[ROUTES[0]][0] == "sigma2 = 1.420"
    assert accounting.gaussian_delta("1.407", 8) > 1e-20  # why 1.313 is not printed
    assert "note: sigma2 = 1.313 alone also reaches the target" in out
    assert "not monotone in sigma2" in out
    assert "note:" not in run(capsys, "calibrate", "--eps", "1", "--delta", "1e-6")


def test_calibrate_words_a_difference_that_rounds_to_100_or_0_percent(capsys):
    out = run(capsys, "calibrate", "--eps", "100", "--delta", "1e-300")
    assert "100.0%" not in out
    ratio = re.search(r"discrete Laplace needs ([\d.e+-]+) times the variance of the exact", out)
    rows = calibrate_rows(out)
    assert ratio, out
    assert float(ratio.group(1)) == pytest.approx(
        float(rows[ROUTES[2]][1]) / float(rows[ROUTES[0]][1]), rel=0.05
    )
    from dgauss.cli._common import _relative

    assert _relative(1.0, 1.0004, "zCDP") == "the same variance as zCDP (to within 0.05%)"
    assert _relative(1.0, 0.5, "X") == "100.0% more variance than X"
    assert _relative(20.0, 1.0, "X") == "20 times the variance of X"
    assert _relative(0.8, 1.0, "X") == "20.0% less variance than X"
    assert _relative(0.0004, 1.0, "X") == "0.0004 times the variance of X"


# ---- account -------------------------------------------------------------------


def test_account_gaussian_prints_the_accounting(capsys):
    out = run(capsys, "account", "--sigma2", "2500", "--k", "100")
    rho = 100 * accounting.gaussian_rho(2500)
    assert "rho = k*|sensitivity|^2/(2*sigma2) = 1/50 (0.02)" in out
    deltas = table(out, "eps")
    assert list(deltas) == ["0.5", "1", "2", "4", "8"]
    for eps, (exact, zcdp) in deltas.items():
        value = accounting.gaussian_delta(2500, eps, k=100)
        if value > cli.TINY_DELTA:
            assert_rounded_up(exact, value)
        else:
            assert_rounded_up(
                exact, log_value=accounting.gaussian_delta(2500, eps, k=100, log=True)
            )
        zvalue = accounting.cdp_delta(rho, eps)
        if zvalue > cli.TINY_DELTA:
            assert_rounded_up(zcdp, zvalue)
        else:
            assert_rounded_up(zcdp, log_value=accounting.cdp_delta(rho, eps, log=True))
    assert deltas["1"] == ["1.755e-8", "8.826e-8"]
    assert deltas["8"][0] == "9.913e-351"  # far below the float range
    epsilons = table(out, "delta")
    assert list(epsilons) == ["1e-5", "1e-6", "1e-9"]
    for delta, (exact, zcdp) in epsilons.items():
        assert_rounded_up(exact, accounting.gaussian_epsilon(2500, delta, k=100))
        assert_rounded_up(zcdp, accounting.cdp_eps(rho, delta))


def test_account_tiny_delta_from_the_log(capsys):
    """delta(2500, eps=1) = 7.4e-549 is printed from log=True, not as the float floor 5e-324."""
    out = run(capsys, "account", "--sigma2", "2500", "--eps", "1", "--delta", "1e-6")
    ((exact, zcdp),) = table(out, "eps").values()
    assert exact.startswith("7.39") and exact.endswith("e-549")
    assert_rounded_up(exact, log_value=accounting.gaussian_delta(2500, 1, log=True))
    assert "e-324" not in out


def test_account_user_lists_and_vector(capsys):
    out = run(
        capsys,
        "account",
        "--sigma2",
        "1/3",
        "--eps",
        "0, 1/2 ,3",
        "--delta",
        "0.25",
        "--sensitivity",
        "1,-1",
        "--k",
        "2",
        large=("0.25",),
    )
    rho = 2 * accounting.gaussian_rho("1/3", (1, -1))
    assert rho == 6
    deltas = table(out, "eps")
    assert list(deltas) == ["0", "1/2", "3"]
    for eps, (exact, zcdp) in deltas.items():
        assert_rounded_up(exact, accounting.gaussian_delta("1/3", eps, (1, -1), 2))
        assert_rounded_up(zcdp, accounting.cdp_delta(rho, eps))
    ((exact, zcdp),) = table(out, "delta").values()
    assert_rounded_up(exact, accounting.gaussian_epsilon("1/3", "0.25", (1, -1), 2))
    assert_rounded_up(zcdp, accounting.cdp_eps(rho, "0.25"))


def test_account_laplace(capsys):
    out = run(capsys, "account", "--laplace", "35.36", "--k", "100")
    pure = re.search(r"pure eps = \S+ = (\S+) \(delta = 0\)", out)
    assert pure, out
    assert_rounded_up(pure.group(1), Fraction(100) / Fraction("35.36"))
    assert pure.group(1) == "2.829"  # the paper's 2.83
    deltas = table(out, "eps")
    for eps, (shown,) in deltas.items():
        value = accounting.laplace_delta("35.36", eps, k=100)
        if value == 0:
            assert shown == "0" and float(eps) >= 100 / 35.36
        else:
            assert_rounded_up(shown, value)
    assert deltas["1"] == ["2.054e-5"]  # the paper's 206e-7
    for delta, (shown,) in table(out, "delta").items():
        eps = Fraction(shown)
        assert accounting.laplace_delta("35.36", eps, k=100) <= Fraction(delta)  # certified
        assert accounting.laplace_delta("35.36", eps * Fraction(998, 1000), k=100) > Fraction(delta)


def test_account_laplace_sensitivity_is_l1(capsys):
    out = run(capsys, "account", "--laplace", "10", "--sensitivity", "1,-2", "--eps", "0.1")
    ((shown,),) = table(out, "eps").values()
    assert_rounded_up(shown, accounting.laplace_delta("10", "0.1", 3))
    assert "pure eps = k*|sensitivity|_1/scale = 0.3000" in out


# ---- formatting ----------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [
        (0.8999352676606419, "0.9000"),
        (1.7546170722359844e-08, "1.755e-8"),
        (Fraction(2), "2.000"),
        (0.0005126, "0.0005126"),
        (0.0, "0"),
    ],
)
def test_rounded_up(value, text):
    assert cli._rounded_up(value) == text


def test_rounded_up_from_log_matches_mpmath():
    for log_value in (-1262.1187458809895, -805.9135343468528, -50.5, -1.7976931348623157e308):
        text = cli._rounded_up_from_log(log_value)
        assert_rounded_up(text, log_value=log_value)


@pytest.mark.parametrize(
    "value, text",
    [
        (Fraction(179, 10), "17.90"),
        (Fraction(1785), "1785"),
        (Fraction(833, 20), "41.65"),
        (Fraction(1), "1.000"),
        (Fraction(5937 * 10**5), "593700000"),
        (Fraction(1234 * 10**97), "1.234e100"),
        (Fraction(1, 3), "1/3"),
    ],
)
def test_grid_text(value, text):
    assert cli._grid_text(value) == text


# ---- bad input -----------------------------------------------------------------

CALIBRATE_OK = ["--eps", "1", "--delta", "1e-6"]


@pytest.mark.parametrize(
    "args, option",
    [
        (["calibrate", "--eps", "-1", "--delta", "1e-6"], "--eps"),
        (["calibrate", "--eps", "0", "--delta", "1e-6"], "--eps"),
        (["calibrate", "--eps", "abc", "--delta", "1e-6"], "--eps"),
        (["calibrate", "--eps", "1", "--delta", "0"], "--delta"),
        (["calibrate", "--eps", "1", "--delta", "1.5"], "--delta"),
        (["calibrate", "--eps", "1", "--delta", "1e-6x"], "--delta"),
        (["calibrate", *CALIBRATE_OK, "--k", "0"], "--k"),
        (["calibrate", *CALIBRATE_OK, "--k", "many"], "--k"),
        (["calibrate", *CALIBRATE_OK, "--sensitivity", "0"], "--sensitivity"),
        (["calibrate", *CALIBRATE_OK, "--sensitivity", "1.5"], "--sensitivity"),
        (["calibrate", *CALIBRATE_OK, "--sensitivity", "0,0"], "--sensitivity"),
        (["calibrate", *CALIBRATE_OK, "--sensitivity", "1,,2"], "--sensitivity"),
        (["calibrate", *CALIBRATE_OK, "--sensitivity", "one"], "--sensitivity"),
        (["calibrate", "--delta", "1e-6"], "--eps"),
        (["calibrate", "--eps", "1"], "--delta"),
        (["account"], "--sigma2"),
        (["account", "--sigma2", "1", "--laplace", "1"], "--laplace"),
        (["account", "--sigma2", "-1"], "--sigma2"),
        (["account", "--sigma2", "0"], "--sigma2"),
        (["account", "--sigma2", "garbage"], "--sigma2"),
        (["account", "--laplace", "0"], "--laplace"),
        (["account", "--sigma2", "1", "--eps", "-1"], "--eps"),
        (["account", "--sigma2", "1", "--eps", "1,,2"], "--eps"),
        (["account", "--sigma2", "1", "--delta", "0"], "--delta"),
        (["account", "--sigma2", "1", "--delta", "1e-6,1.5"], "--delta"),
        (["account", "--laplace", "1", "--delta", "1.5"], "--delta"),
        (["account", "--laplace", "1", "--delta", "x"], "--delta"),
        (["account", "--laplace", "1", "--eps", "-2"], "--eps"),
        (["account", "--sigma2", "1", "--k", "0"], "--k"),
        (["account", "--sigma2", "1", "--sensitivity", "0"], "--sensitivity"),
    ],
)
def test_bad_arguments_one_line_naming_the_option(capsys, args, option):
    status = cli.main(args)
    captured = capsys.readouterr()
    assert status == cli.EXIT_USAGE
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"dgauss {args[0]}: error: ")
    assert option in lines[0]
    assert "Traceback" not in captured.err


def test_help_lists_the_new_commands(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "calibrate" in out and "account" in out


def test_python_dash_m_account():
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dgauss.__file__)))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dgauss",
            "account",
            "--sigma2",
            "2500",
            "--eps",
            "1",
            "--delta",
            "1e-6",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "7.39" in result.stdout and "e-549" in result.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "dgauss", "calibrate", "--eps", "1", "--delta", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "--delta" in bad.stderr and "Traceback" not in bad.stderr
