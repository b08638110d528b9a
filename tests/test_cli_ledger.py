"""``--ledger FILE``: one privacy budget across ``dgauss`` runs, each run a real process.

What is checked: a release is admitted exactly when an in-process Accountant would admit it
(and, for a zCDP budget, when the exact sum of the rhos fits); a refused one leaves the
ledger and the output byte for byte as they were; two runs at once are serialized by the
lock (no lost update, and only as many admitted as fit); a process killed between any two
steps never leaves an output whose release the ledger lacks; ``--k 2`` gives the sigma2 of
``calibrate --k 2``, which two releases truly meet (the exact delta, summed here by brute
force).
"""

from __future__ import annotations

import csv
import fcntl
import json
import math
import os
import re
import subprocess
import sys
import textwrap
from fractions import Fraction

import pytest

import dgauss
from dgauss import accounting
from dgauss._rounding import _rounded_up

SRC = os.path.dirname(os.path.dirname(dgauss.__file__))  # the dgauss the tests import
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout
ENV = dict(os.environ, PYTHONPATH=SRC)


def dgauss_run(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dgauss", *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start(*args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "dgauss", *map(str, args)],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def table(tmp_path):
    """The issue's table: ';' delimited, a byte-order mark, two count columns."""
    path = tmp_path / "t.csv"
    path.write_bytes(
        "\ufeffregion;age;n;m\nnorth;0-17;10;3\nnorth;18+;20;4\nsouth;0-17;5;7\n".encode()
    )
    return path


def init(ledger, *budget) -> None:
    done = dgauss_run("account", "--ledger", ledger, "--init", *budget)
    assert done.returncode == 0, done.stderr
    assert "created the ledger" in done.stdout


def releases(ledger) -> tuple:
    with open(ledger, "rb") as f:
        return dgauss.Accountant.from_json(f.read()).spent.releases


def snapshot(path) -> tuple:
    st = os.stat(path)
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def exact_delta_two_unit_shifts(sigma2: Fraction, eps: float) -> float:
    """The exact delta at ``eps`` of two discrete Gaussian releases N_Z(0, sigma2), each
    moved by 1 (the worst pair of neighbours): the hockey-stick divergence summed over
    the sum s = x1 + x2 (privacy loss (2 - 2s)/(2 sigma2)), by brute force."""
    s2 = float(sigma2)
    width = int(60 * math.sqrt(s2)) + 10
    xs = range(-width, width + 1)
    weights = [math.exp(-(x * x) / (2 * s2)) for x in xs]
    total = sum(weights)
    p = [w / total for w in weights]
    conv: dict[int, float] = {}
    for i, a in enumerate(p):
        for j, b in enumerate(p):
            s = 2 * -width + i + j
            conv[s] = conv.get(s, 0.0) + a * b
    return sum(
        q * (1 - math.exp(eps - (2 - 2 * s) / (2 * s2)))
        for s, q in conv.items()
        if (2 - 2 * s) / (2 * s2) > eps
    )


@pytest.mark.long
def test_the_two_query_task_end_to_end(tmp_path, table):
    """The issue's task: (1, 1e-6) for two queries, each released with --k 2."""
    ledger = tmp_path / "budget.json"
    init(ledger, "--eps", 1, "--delta", "1e-6")
    assert releases(ledger) == ()
    for column in ("n", "m"):
        done = dgauss_run(
            "noise", table, "--column", column, "--ledger", ledger, "--k", 2, "-o",
            tmp_path / f"{column}.csv",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "sigma2 = 35.73" in done.stderr
    (first, second) = releases(ledger)
    assert first == second == accounting.Gaussian(Fraction(3573, 100), 1)
    with open(tmp_path / "m.csv", newline="") as f:
        rows = list(csv.reader(f, delimiter=";"))
    assert rows[0] == ["region", "age", "n", "m"] and [r[2] for r in rows[1:]] == ["10", "20", "5"]
    # the pair truly meets (1, 1e-6): the exact delta, summed here
    assert exact_delta_two_unit_shifts(Fraction(3573, 100), 1.0) <= 1e-6
    # the naive split of the budget costs about twice the variance (the 69.76)
    naive = accounting.calibrate_gaussian("0.5", "5e-7", round_up_safe=True)
    assert naive / Fraction(3573, 100) > Fraction(19, 10)

    done = dgauss_run("account", "--ledger", ledger)
    assert done.returncode == 0, done.stderr
    acc = dgauss.Accountant.from_json(ledger.read_bytes())
    spent = _rounded_up(acc.spent.delta(1))
    assert spent == "9.967e-7"  # 2 x 35.73 by Theorem 15, as the accountant composes it
    assert f"delta = {spent} at eps = 1, of the budget's delta = 1e-6" in done.stdout
    assert "1-2. discrete Gaussian, sigma2 = 35.73, sensitivity 1" in done.stdout
    assert "The 2 releases" in done.stdout

    third = dgauss_run("noise", table, "--column", "n", "--ledger", ledger, "--k", 2)
    assert third.returncode == 3 and third.stdout == ""
    assert "does not fit" in third.stderr and len(releases(ledger)) == 2


@pytest.mark.long
def test_k_gives_the_sigma2_of_calibrate_k(tmp_path, table):
    shown = dgauss_run("calibrate", "--eps", 1, "--delta", "1e-6", "--k", 2)
    exact = re.search(r"discrete Gaussian, exact\s+sigma2 = (\S+)", shown.stdout).group(1)
    scale = re.search(r"discrete Laplace\s+scale = (\S+)", shown.stdout).group(1)
    assert exact == "35.73"
    gauss = dgauss_run("noise", table, "--column", "n", "--eps", 1, "--delta", "1e-6", "--k", 2)
    assert gauss.returncode == 0, gauss.stderr
    assert f"sigma2 = {exact}," in gauss.stderr and "one of k = 2 planned" in gauss.stderr
    lap = dgauss_run("noise", table, "--column", "n", "--laplace", "--eps", 1, "--k", 2)
    assert lap.returncode == 0, lap.stderr
    assert f"scale = {float(Fraction(scale)):g}," in lap.stderr  # 2 (the pure eps k/scale = 1)
    # --rho R --k K: sigma2 = K / (2 R) exactly
    rho = dgauss_run("noise", table, "--column", "n", "--rho", "1/8", "--k", 3)
    assert rho.returncode == 0, rho.stderr
    assert f"sigma2 = {Fraction(3) / (2 * Fraction(1, 8))}," in rho.stderr


def test_refused_release_writes_nothing(tmp_path, table):
    ledger = tmp_path / "L.json"
    init(ledger, "--eps", 1, "--delta", "1e-6")
    out = tmp_path / "out.csv"
    out.write_text("an older file\n")
    before, out_before = snapshot(ledger), snapshot(out)
    files = set(os.listdir(tmp_path))
    done = dgauss_run("noise", table, "--column", "n", "--sigma2", 1, "--ledger", ledger, "-o", out)
    assert done.returncode == 3, done.stderr
    assert "does not fit" in done.stderr and "untouched" in done.stderr
    assert snapshot(ledger) == before and snapshot(out) == out_before
    assert set(os.listdir(tmp_path)) == files  # no temporary file left


@pytest.mark.long
def test_a_pure_budget_refuses_the_gaussian(tmp_path, table):
    ledger = tmp_path / "L.json"
    init(ledger, "--eps", 1)
    before = snapshot(ledger)
    gauss = dgauss_run("noise", table, "--column", "n", "--sigma2", 10**6, "--ledger", ledger)
    assert gauss.returncode == 3 and snapshot(ledger) == before
    lap = dgauss_run("noise", table, "--column", "n", "--laplace", "--k", 4, "--ledger", ledger)
    assert lap.returncode == 0, lap.stderr
    assert releases(ledger) == (accounting.Laplace(4, 1),)  # eps 1 split 4 ways: scale 4


def run_sequence(tmp_path, table, budget, steps) -> list[bool]:
    ledger = tmp_path / "seq.json"
    init(ledger, *budget)
    decisions = []
    for kind, param in steps:
        noise = ["--sigma2", param] if kind == "gaussian" else ["--laplace", "--scale", param]
        done = dgauss_run("noise", table, "--column", "n", *noise, "--ledger", ledger)
        assert done.returncode in (0, 3), done.stderr
        decisions.append(done.returncode == 0)
    return decisions


@pytest.mark.long
def test_decisions_equal_an_in_process_accountant(tmp_path, table):
    steps = [
        ("gaussian", "40"),
        ("laplace", "3"),
        ("gaussian", "9"),  # too much after those
        ("gaussian", "200"),
        ("gaussian", "40"),
        ("laplace", "1/2"),
        ("gaussian", "80"),
        ("gaussian", "80"),
        ("gaussian", "80"),
    ]
    decisions = run_sequence(tmp_path, table, ["--eps", 1, "--delta", "1e-6"], steps)
    acc = dgauss.Accountant(epsilon=1, delta="1e-6")
    expected = []
    for kind, param in steps:
        try:
            if kind == "gaussian":
                acc.add_gaussian_noise([10, 20, 5], sigma2=param)
            else:
                acc.add_laplace_noise([10, 20, 5], scale=param)
            expected.append(True)
        except dgauss.PrivacyBudgetError:
            expected.append(False)
    assert decisions == expected and True in expected and False in expected
    assert releases(tmp_path / "seq.json") == acc.spent.releases


@pytest.mark.long
def test_a_zcdp_ledger_adds_the_rhos_exactly(tmp_path, table):
    """Admitted exactly while the sum of 1/(2 sigma2) (and (1/t)^2/2) stays <= rho."""
    budget = Fraction(1, 10)
    steps = [("gaussian", "20"), ("gaussian", "10"), ("laplace", "5"), ("gaussian", "25")]
    steps += [("gaussian", "50"), ("gaussian", "100")]
    decisions = run_sequence(tmp_path, table, ["--rho", budget], steps)
    total, expected = Fraction(0), []
    for kind, param in steps:
        rho = 1 / (2 * Fraction(param)) if kind == "gaussian" else (1 / Fraction(param)) ** 2 / 2
        expected.append(total + rho <= budget)
        total += rho if expected[-1] else 0
    assert decisions == expected == [True, True, True, False, False, True]
    assert total == budget  # 1/40 + 1/20 + 1/50 + 1/200: the last fills it exactly


def hold_lock(ledger):
    """Lock the ledger as a run does: flock on the file itself."""
    fd = os.open(ledger, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


@pytest.mark.parametrize("fit", [2, 1])
@pytest.mark.long
def test_two_runs_at_once(tmp_path, table, fit):
    """Both start while the test holds the lock, so they contend; both are admitted when
    both fit (neither release lost), exactly one when only one fits."""
    ledger = tmp_path / "L.json"
    init(ledger, "--rho", Fraction(fit, 100))  # each release below: rho = 1/100
    fd = hold_lock(ledger)
    runs = [
        start(
            "noise",
            table,
            "--column",
            "n",
            "--sigma2",
            50,
            "--ledger",
            ledger,
            "-o",
            tmp_path / f"out{i}.csv",
        )  # fmt: skip
        for i in range(2)
    ]
    try:
        for run in runs:  # each has read its options and its input, and waits
            assert "waiting for the ledger" in run.stderr.readline()
    finally:
        os.close(fd)
    statuses = sorted(run.wait(timeout=120) for run in runs)
    assert statuses == ([0, 0] if fit == 2 else [0, 3])
    assert releases(ledger) == (accounting.Gaussian(50, 1),) * fit
    assert sum((tmp_path / f"out{i}.csv").exists() for i in range(2)) == fit


@pytest.mark.long
def test_a_held_lock_times_out_clearly(tmp_path, table):
    ledger = tmp_path / "L.json"
    init(ledger, "--rho", 1)
    before = snapshot(ledger)
    fd = hold_lock(ledger)
    try:
        done = dgauss_run(
            "noise", table, "--column", "n", "--sigma2", 50, "--ledger", ledger,
            "--lock-timeout", "0.2", "-o", tmp_path / "out.csv",
        )  # fmt: skip
    finally:
        os.close(fd)
    assert done.returncode == 1
    assert "gave up after 0.2 s" in done.stderr and "nothing was released" in done.stderr
    assert snapshot(ledger) == before and not (tmp_path / "out.csv").exists()


#: A run that kills itself (SIGKILL: no clean-up at all) at one step of a release.
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import dgauss
    from dgauss import cli, mechanisms

    point, ledger, out = sys.argv[1], os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])

    def die(at):
        if point == at:
            os.kill(os.getpid(), signal.SIGKILL)

    real_replace = os.replace

    def replace(src, dst):
        dst = os.path.realpath(dst)
        die({ledger: "ledger-before-rename", out: "output-before-rename"}.get(dst))
        real_replace(src, dst)
        die({ledger: "ledger-after-rename", out: "output-after-rename"}.get(dst))

    os.replace = replace
    real_call = mechanisms.GaussianMechanism.__call__

    def call(self, *args, **kwargs):
        die("before-draw")
        result = real_call(self, *args, **kwargs)
        die("after-draw")
        return result

    mechanisms.GaussianMechanism.__call__ = call
    sys.exit(cli.main(sys.argv[4:]))
    """
)

#: The steps in order; a kill from "ledger-after-rename" on finds the release recorded.
POINTS = [
    "ledger-before-rename",
    "ledger-after-rename",
    "before-draw",
    "after-draw",
    "output-before-rename",
    "output-after-rename",
]


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.long
def test_a_kill_between_steps_never_leaves_a_release_unrecorded(tmp_path, table, point):
    ledger, out = tmp_path / "L.json", tmp_path / "out.csv"
    init(ledger, "--eps", 1, "--delta", "1e-6")
    args = ["noise", table, "--column", "n", "--sigma2", 50, "--ledger", ledger, "-o", out]
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, point, ledger, out, *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr  # it died where asked
    recorded = len(releases(ledger))  # still a valid ledger
    assert recorded == (POINTS.index(point) >= 1)
    assert out.exists() == (point == "output-after-rename")
    assert not out.exists() or recorded  # an output is never out unrecorded
    # the kernel dropped the dead run's lock: the next run goes ahead at once
    done = dgauss_run(*args, "--lock-timeout", 10)
    assert done.returncode == 0, done.stderr and out.exists()
    assert len(releases(ledger)) == recorded + 1


@pytest.mark.long
def test_share_splits_what_is_left(tmp_path, table):
    ledger = tmp_path / "L.json"
    init(ledger, "--eps", 1, "--delta", "1e-6")
    first = dgauss_run("noise", table, "--column", "n", "--ledger", ledger, "--share", 3)
    assert first.returncode == 0, first.stderr
    # what is left split 2 ways, then 1: three releases fill the budget
    for k in (2, 1):
        done = dgauss_run("noise", table, "--column", "m", "--ledger", ledger, "--share", k)
        assert done.returncode == 0, done.stderr
    made = releases(ledger)
    assert len(made) == 3
    assert accounting.compose(*made).delta(1) <= 1e-6  # composed afresh, in this process
    sigma2s = [r.sigma2 for r in made]
    assert sigma2s[0] == dgauss.Accountant(epsilon=1, delta="1e-6").calibrate_gaussian(1, 3)
    # each the least that fits: a tenth less on the last would not have
    too_small = accounting.Gaussian(sigma2s[2] * Fraction(9, 10), 1)
    assert accounting.compose(*made[:2], too_small).delta(1) > 1e-6
    shown = dgauss_run("calibrate", "--ledger", ledger, "--k", 1)
    assert shown.returncode == 0 and "3 releases made" in shown.stdout


def test_output_failure_after_recording_keeps_the_budget_spent(tmp_path, table):
    ledger = tmp_path / "L.json"
    init(ledger, "--eps", 1, "--delta", "1e-6")
    out = tmp_path / "no-such-folder" / "out.csv"
    done = dgauss_run(
        "noise", table, "--column", "n", "--sigma2", 50, "--ledger", ledger, "-o", out
    )
    assert done.returncode == 1
    assert "recorded in the ledger" in done.stderr and "stays spent" in done.stderr
    assert len(releases(ledger)) == 1


@pytest.mark.parametrize(
    "args, status, message",
    [
        (["--sigma2", 4, "--share", 2, "--ledger", "L.json"], 2, "--share K sets the noise"),
        (["--sigma2", 4, "--share", 2], 2, "add --ledger FILE"),
        (["--sigma2", 4, "--k", 2], 2, "--sigma2 sets it already"),
        (["--k", 2], 2, "--k K needs the target"),
        (["--k", 2, "--ledger", "missing.json"], 1, "create it first"),
        (["--sigma2", 4, "--ledger", "missing.json"], 1, "create it first"),
        (["--sigma2", 4, "--ledger", "bad.json"], 1, "is not a usable ledger"),
    ],
)
@pytest.mark.long
def test_noise_option_errors(tmp_path, table, args, status, message):
    (tmp_path / "bad.json").write_text('{"format": "dgauss Accountant ledger"}')
    init(tmp_path / "L.json", "--rho", 1)
    done = subprocess.run(
        [sys.executable, "-m", "dgauss", "noise", str(table), "--column", "n", *map(str, args)],
        env=ENV,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == status and message in done.stderr, done.stderr
    assert not (tmp_path / "missing.json").exists()  # noise never creates a ledger


@pytest.mark.long
def test_account_and_calibrate_errors(tmp_path):
    ledger = tmp_path / "L.json"
    init(ledger, "--eps", 2, "--delta", "1e-9")
    before = snapshot(ledger)
    again = dgauss_run("account", "--ledger", ledger, "--init", "--rho", 1)
    assert again.returncode == 1 and "exists already" in again.stderr
    assert snapshot(ledger) == before
    for args, message in [
        (["--init"], "--init needs the budget"),
        (["--init", "--rho", 1, "--eps", 1], "set the budget in one way"),
        (["--init", "--eps", 0], "--eps must be > 0"),
        (["--sigma2", 4], "with --ledger, account prints"),
    ]:
        done = dgauss_run("account", "--ledger", tmp_path / "new.json", *args)
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "new.json").exists()
    assert dgauss_run("account", "--init", "--rho", 1).returncode == 2
    done = dgauss_run("calibrate", "--k", 2)
    assert done.returncode == 2 and "--eps and --delta required" in done.stderr
    done = dgauss_run("calibrate", "--ledger", ledger, "--eps", 1)
    assert done.returncode == 2 and "what is left" in done.stderr
    empty = dgauss_run("account", "--ledger", ledger)
    assert empty.returncode == 0 and "nothing released yet" in empty.stdout


@pytest.mark.long
def test_the_guides_ledger_example_runs_as_written(tmp_path, table):
    """The command-line guide's ledger block, command by command, and the numbers in its
    comments."""
    # the checkout's docs (next to tests/), not the installed package's directory
    guide = os.path.join(ROOT, "docs", "howto", "command-line.md")
    section = open(guide, encoding="utf-8").read()
    block = next(b for b in re.findall(r"```bash\n(.*?)```", section, re.S) if "--ledger" in b)
    commands = [line.split("#")[0].split() for line in block.splitlines() if line.strip()]
    assert [c[:2] for c in commands] == [["dgauss", "account"]] + [["dgauss", "noise"]] * 2 + [
        ["dgauss", "account"]
    ]
    outputs = []
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", *command],
            env=ENV,
            capture_output=True,
            text=True,
            cwd=tmp_path,  # where the fixture wrote t.csv
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout + done.stderr)
    assert "sigma2 = 35.73" in block and all("sigma2 = 35.73," in out for out in outputs[1:3])
    assert "delta = 9.967e-7 at eps = 1" in block and "delta = 9.967e-7 at eps = 1" in outputs[3]


# ---- one ledger whatever its name ---------------------------------------------------------


def noise_through(table, name, out=None) -> list[str]:
    """A release of rho = 1/100 (sigma2 = 50, sensitivity 1) through the name ``name``."""
    args = ["noise", table, "--column", "n", "--sigma2", 50, "--ledger", name]
    return list(map(str, args + (["-o", out] if out is not None else [])))


def run_in(capsys, *args) -> tuple[int, str]:
    """A run in this process (cli.main, faster than a child): its status and stderr."""
    from dgauss import cli

    status = cli.main(list(map(str, args)))
    return status, capsys.readouterr().err


def init_in(capsys, ledger, *budget) -> None:
    assert run_in(capsys, "account", "--ledger", ledger, "--init", *budget)[0] == 0


def test_a_hard_link_cannot_double_the_budget(tmp_path, table, capsys):
    """The budget fits one release; with a second name (ln L.json L2.json) each name would
    admit one if the names could diverge: a release through either is refused up front, and
    once the link is gone the ledger spends as before."""
    ledger, other = tmp_path / "L.json", tmp_path / "L2.json"
    init_in(capsys, ledger, "--rho", "1/100")
    os.link(ledger, other)
    before = snapshot(ledger)
    for name in (ledger, other):
        status, err = run_in(capsys, *noise_through(table, name, tmp_path / "out.csv"))
        assert status == 1 and err.count("\n") == 1, err
        assert "has 2 names (hard links)" in err and "nothing was released" in err
        assert snapshot(ledger) == before and not (tmp_path / "out.csv").exists()
    other.unlink()
    assert run_in(capsys, *noise_through(table, ledger))[0] == 0
    assert run_in(capsys, *noise_through(table, ledger))[0] == 3  # the budget is spent
    assert releases(ledger) == (accounting.Gaussian(50, 1),)


def test_a_symlink_and_other_spellings_share_one_budget(tmp_path, table, capsys):
    ledger = tmp_path / "L.json"
    init_in(capsys, ledger, "--rho", "1/100")
    link = tmp_path / "link.json"
    link.symlink_to(ledger)
    (tmp_path / "sub").mkdir()
    status, err = run_in(capsys, *noise_through(table, link))
    assert status == 0, err
    assert link.is_symlink() and os.readlink(link) == str(ledger)  # the file replaced, not it
    assert releases(ledger) == (accounting.Gaussian(50, 1),)
    for name in (ledger, link, tmp_path / "sub" / ".." / "L.json"):
        status, err = run_in(capsys, *noise_through(table, name))
        assert status == 3 and "does not fit" in err, err
    assert releases(ledger) == (accounting.Gaussian(50, 1),)


@pytest.mark.long
def test_runs_at_once_through_different_names_never_overspend(tmp_path, table, capsys):
    """Four runs at once, through four names of one ledger (its path, a symlink to it,
    sub/../L.json and a symlinked folder), while the test holds the lock through yet another
    name: each waits on the one lock; then, the budget fitting two, exactly two are admitted.
    The runs that waited on the file the first rename replaced lock the new one and read it
    (else each would find the budget unspent)."""
    ledger = tmp_path / "L.json"
    init_in(capsys, ledger, "--rho", "2/100")
    (tmp_path / "link.json").symlink_to(ledger)
    (tmp_path / "sub").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path)
    names = [ledger, tmp_path / "link.json", tmp_path / "sub/../L.json", tmp_path / "alias/L.json"]
    fd = hold_lock(tmp_path / "alias" / "link.json")
    runs = [start(*noise_through(table, name, tmp_path / f"out{i}.csv")) for i, name in
            enumerate(names)]  # fmt: skip
    try:
        for run in runs:  # each has read its input, and waits for the one lock
            assert "waiting for the ledger" in run.stderr.readline()
    finally:
        os.close(fd)
    statuses = sorted(run.wait(timeout=120) for run in runs)
    assert statuses == [0, 0, 3, 3]
    assert releases(ledger) == (accounting.Gaussian(50, 1),) * 2
    assert sum((tmp_path / f"out{i}.csv").exists() for i in range(4)) == 2
    left = {p for p in os.listdir(tmp_path) if p.startswith(".") or p.endswith(".lock")}
    assert left == set()  # no temporary file, no lock file


def test_inits_at_once_make_one_ledger(tmp_path):
    """Three `account --init` at once, each with its own budget: exactly one creates the
    ledger, whose budget is its own; the others say it exists and change nothing."""
    ledger = tmp_path / "L.json"
    budgets = ["1/10", "1/20", "1/30"]
    runs = [start("account", "--ledger", ledger, "--init", "--rho", rho) for rho in budgets]
    done = [(*run.communicate(timeout=120), run.returncode) for run in runs]
    done = [(status, out, err) for out, err, status in done]
    made = [rho for rho, (status, _, _) in zip(budgets, done, strict=True) if status == 0]
    assert len(made) == 1, done
    assert all("exists already" in err for status, _, err in done if status != 0)
    assert dgauss.Accountant.from_json(ledger.read_bytes()).spent.releases == ()
    assert json.loads(ledger.read_text())["budget"] == {"rho": made[0]}
    assert os.stat(ledger).st_nlink == 1 and sorted(os.listdir(tmp_path)) == ["L.json"]


def test_a_link_made_during_the_write_is_refused(tmp_path, table, monkeypatch, capsys):
    """A hard link made after the lock was taken, before the rename (in-process: made by
    the test when the new ledger is ready): the rename is not done, nothing recorded."""
    from dgauss import cli
    from dgauss.cli import _ledger

    ledger = tmp_path / "L.json"
    init_in(capsys, ledger, "--rho", 1)
    before = snapshot(ledger)
    real = _ledger._temporary

    def temporary(*args):
        made = real(*args)
        os.link(ledger, tmp_path / "L2.json")
        return made

    monkeypatch.setattr(_ledger, "_temporary", temporary)
    assert cli.main(noise_through(table, ledger, tmp_path / "out.csv")) == 1
    assert "has 2 names (hard links)" in capsys.readouterr().err
    assert snapshot(ledger) == before and not (tmp_path / "out.csv").exists()
    assert sorted(os.listdir(tmp_path)) == ["L.json", "L2.json", "t.csv"]  # no temporary file


def test_init_without_hard_links(tmp_path, monkeypatch, capsys):
    """On a file system without hard links (os.link fails), --init creates the name itself,
    still only once."""
    from dgauss import cli

    def no_links(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    ledger = tmp_path / "L.json"
    assert cli.main(["account", "--ledger", str(ledger), "--init", "--rho", "1/2"]) == 0
    assert cli.main(["account", "--ledger", str(ledger), "--init", "--rho", "1"]) == 1
    assert "exists already" in capsys.readouterr().err
    assert json.loads(ledger.read_text())["budget"] == {"rho": "1/2"}
    assert sorted(os.listdir(tmp_path)) == ["L.json"]
