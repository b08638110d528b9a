"""Hostile ``--ledger`` files: each made here, then run through the real command line
(``dgauss account --ledger F``, ``dgauss noise ... --ledger F`` and ``dgauss calibrate --ledger
F``, in-process through :func:`dgauss.cli.main`; a file that could hang a read, in a child
process under a timeout).

What is checked, for every file that is not a ledger: exit status 1 (docs/cli.md: the ledger
cannot be used), one line on stderr naming the file and saying why (no traceback), nothing on
stdout, no output file, no temporary file left, and the file byte for byte and inode as it
was.  The few files that are genuinely ledgers (a byte-order mark, a compact layout, a budget
written as a JSON integer) are accepted, and a release through them is recorded.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys

import pytest

import dgauss
from dgauss import cli
from dgauss.cli import _ledger

SRC = os.path.dirname(os.path.dirname(dgauss.__file__))
ENV = dict(os.environ, PYTHONPATH=SRC)

#: A valid ledger: budget (1, 1e-6), one release of sigma2 = 40 (another of sigma2 = 50 fits).
VALID = {
    "format": "dgauss Accountant ledger",
    "version": 1,
    "budget": {"epsilon": "1", "delta": "1/1000000"},
    "releases": [{"kind": "gaussian", "sigma2": "40", "sensitivity": [1], "k": 1}],
}
VALID_TEXT = dgauss.Accountant.from_json(json.dumps(VALID)).to_json() + "\n"
assert json.loads(VALID_TEXT) == VALID  # the saved form of to_json, as the CLI writes it


def ledger(**changes) -> bytes:
    """VALID with top-level fields replaced (a value of ... removes the field)."""
    data = {**VALID, **changes}
    return json.dumps({k: v for k, v in data.items() if v is not ...}).encode()


def budget(value) -> bytes:
    return ledger(budget=value)


def release(**changes) -> bytes:
    """VALID whose release has fields replaced (... removes one)."""
    entry = {**VALID["releases"][0], **changes}
    return ledger(releases=[{k: v for k, v in entry.items() if v is not ...}])


def raw_budget(text: str) -> bytes:
    """VALID whose budget is the JSON text ``text`` (for what json.dumps cannot write)."""
    return ledger(budget="@").replace(b'"@"', text.encode())


DEEP = 100_000
TEXT = VALID_TEXT.encode()

#: name -> (the file's bytes, a fragment the error must hold)
HOSTILE: dict[str, tuple[bytes, str]] = {
    # not JSON
    "empty": (b"", "not valid JSON"),
    "whitespace": (b"  \n\t\r\n   ", "not valid JSON"),
    "binary-garbage": (bytes(range(256)) * 8, "not a usable ledger"),
    "nul-bytes": (b"\0" * 4096, "not a usable ledger"),
    "invalid-utf8": (TEXT.replace(b"Accountant", b"Acc\xff\xfeountant"), "not a usable ledger"),
    "latin1-text": (TEXT.replace(b"ledger", "l\xe9dger".encode("latin-1")), "not a usable"),
    "bom-then-garbage": (b"\xef\xbb\xbfnot json", "not valid JSON"),
    "python-repr": (repr(VALID).encode(), "not valid JSON"),
    "trailing-garbage": (TEXT + b"}", "not valid JSON"),
    "two-ledgers": (TEXT + TEXT, "not valid JSON"),
    "comment": (b"// my budget\n" + TEXT, "not valid JSON"),
    # truncated at several points
    **{
        f"truncated-{at}": (TEXT[:cut], "not valid JSON")
        for at, cut in [
            ("1", 1),
            ("in-a-key", TEXT.index(b"format") + 3),
            ("in-a-string", TEXT.index(b"Accountant")),
            ("a-third", len(TEXT) // 3),
            ("half", len(TEXT) // 2),
            ("in-releases", TEXT.index(b'"k"')),
            ("last-brace", len(TEXT) - 2),
        ]
    },
    # JSON, but not an object
    "list": (b"[]", "must be a JSON object, got list"),
    "list-of-ledger": (b"[" + TEXT + b"]", "must be a JSON object, got list"),
    "string": (b'"dgauss Accountant ledger"', "got str"),
    "number": (b"42", "got int"),
    "float": (b"1.5", "got float"),
    "null": (b"null", "got NoneType"),
    "true": (b"true", "got bool"),
    "false": (b"false", "got bool"),
    # fields missing, unknown or repeated
    "missing-format": (ledger(format=...), "lacks the field(s) 'format'"),
    "missing-version": (ledger(version=...), "lacks the field(s) 'version'"),
    "missing-budget": (ledger(budget=...), "lacks the field(s) 'budget'"),
    "missing-releases": (ledger(releases=...), "lacks the field(s) 'releases'"),
    "empty-object": (b"{}", "lacks the field(s)"),
    "unknown-field": (ledger(note="my budget"), "unknown field(s) 'note'"),
    "unknown-budget-field": (budget({"epsilon": "1", "delta": "1e-6", "x": "1"}), "budget"),
    "unknown-release-field": (release(note="x"), "unknown field(s) 'note'"),
    "missing-release-field": (release(k=...), "lacks the field(s) 'k'"),
    "duplicate-key": (TEXT.replace(b'"version": 1,', b'"version": 1, "version": 1,'), "repeats"),
    "duplicate-budget-key": (raw_budget('{"rho": "1", "rho": "2"}'), "repeats the field(s) 'rho'"),
    # format and version
    "other-format": (ledger(format="dgauss ledger"), "format must be"),
    "format-not-string": (ledger(format=1), "format must be"),
    "older-version": (ledger(version=0), "unknown ledger version 0"),
    "newer-version": (ledger(version=2), "unknown ledger version 2"),
    "version-string": (ledger(version="1"), "unknown ledger version '1'"),
    "version-float": (ledger(version=1.0), "unknown ledger version 1.0"),
    "version-true": (ledger(version=True), "unknown ledger version True"),
    # the budget: every wrong type and value
    "budget-string": (budget("1"), "budget must be a JSON object, got str"),
    "budget-list": (budget(["1"]), "budget must be a JSON object, got list"),
    "budget-null": (budget(None), "budget must be a JSON object"),
    "budget-empty": (budget({}), "budget must hold"),
    "budget-rho-and-epsilon": (budget({"rho": "1", "epsilon": "1"}), "budget must hold"),
    "budget-delta-alone": (budget({"delta": "1e-6"}), "budget must hold"),
    "rho-word": (budget({"rho": "abc"}), "budget.rho must be a number"),
    "rho-empty": (budget({"rho": ""}), "budget.rho"),
    "rho-float": (budget({"rho": 0.5}), "never a float"),
    "rho-list": (budget({"rho": [1]}), "never a float"),
    "rho-object": (budget({"rho": {"n": 1}}), "never a float"),
    "rho-true": (budget({"rho": True}), "never a float"),
    "rho-null": (budget({"rho": None}), "never a float"),
    "rho-negative": (budget({"rho": "-1"}), "rho"),
    "rho-zero": (budget({"rho": "0"}), "rho"),
    "rho-zero-int": (budget({"rho": 0}), "rho"),
    "rho-NaN": (raw_budget('{"rho": NaN}'), "never a float"),
    "rho-Infinity": (raw_budget('{"rho": Infinity}'), "never a float"),
    "rho-minus-Infinity": (raw_budget('{"rho": -Infinity}'), "never a float"),
    "rho-nan-string": (budget({"rho": "nan"}), "budget.rho must be a number"),
    "rho-inf-string": (budget({"rho": "inf"}), "budget.rho must be a number"),
    "rho-huge-exponent-number": (raw_budget('{"rho": 1e999999}'), "never a float"),
    "rho-huge-exponent": (budget({"rho": "1e999999"}), "over 16384 bits"),
    "rho-tiny-exponent": (budget({"rho": "1e-999999"}), "over 16384 bits"),
    "rho-exponent-beyond": (budget({"rho": "1e1000001"}), "exponent"),
    "rho-one-over-zero": (budget({"rho": "1/0"}), "zero denominator"),
    "rho-zero-over-zero": (budget({"rho": "0/0"}), "zero denominator"),
    "rho-10000-digits": (budget({"rho": "1" + "0" * 10_000}), "over 16384 bits"),
    "rho-10000-digit-denominator": (budget({"rho": "1/" + "7" * 10_000}), "over 16384 bits"),
    "rho-10000-digit-number": (raw_budget('{"rho": 1' + "0" * 10_000 + "}"), "digits"),
    "rho-underscore": (budget({"rho": "1_0"}), "budget.rho must be a number"),
    "epsilon-negative": (budget({"epsilon": "-1", "delta": "1e-6"}), "epsilon"),
    "delta-one": (budget({"epsilon": "1", "delta": "1"}), "delta"),
    "delta-zero": (budget({"epsilon": "1", "delta": "0"}), "do not fit its own budget"),
    "delta-float": (budget({"epsilon": "1", "delta": 1e-6}), "never a float"),
    "delta-huge-exponent": (budget({"epsilon": "1", "delta": "1e-999999"}), "16384 bits"),
    # the releases
    "releases-object": (ledger(releases={}), "releases must be a list, got dict"),
    "releases-string": (ledger(releases="none"), "releases must be a list, got str"),
    "releases-null": (ledger(releases=None), "releases must be a list"),
    "release-number": (ledger(releases=[42]), "release 0 must be an object"),
    "release-list": (ledger(releases=[["gaussian", "40"]]), "release 0 must be an object"),
    "release-kind-unknown": (release(kind="poisson"), "'poisson'"),
    "release-kind-missing": (release(kind=...), "release 0 must be an object"),
    "sigma2-negative": (release(sigma2="-40"), "sigma2"),
    "sigma2-zero": (release(sigma2="0"), "sigma2"),
    "sigma2-float": (release(sigma2=40.0), "never a float"),
    "sigma2-one-over-zero": (release(sigma2="1/0"), "zero denominator"),
    "sigma2-word": (release(sigma2="forty"), "sigma2"),
    "scale-negative": (release(kind="laplace", sigma2=..., scale="-3"), "scale"),
    "sensitivity-zero": (release(sensitivity=0), "sensitivity"),
    "sensitivity-negative": (release(sensitivity=-1), "sensitivity must be"),
    "sensitivity-zero-vector": (release(sensitivity=[0, 0]), "nonzero entry"),
    "sensitivity-string": (release(sensitivity="1"), "sensitivity must be"),
    "sensitivity-empty": (release(sensitivity=[]), "sensitivity must be"),
    "sensitivity-float": (release(sensitivity=[1.0]), "sensitivity must be"),
    "k-zero": (release(k=0), "k"),
    "k-negative": (release(k=-1), "k"),
    "k-string": (release(k="1"), "k must be an integer"),
    "k-float": (release(k=1.0), "k must be an integer"),
    # spent: above the budget, or not a spend
    "spent-above-budget": (release(sigma2="1/10"), "do not fit its own budget"),
    "spent-above-zcdp-budget": (
        ledger(budget={"rho": "1/100"}, releases=[VALID["releases"][0]] * 3),
        "do not fit its own budget",
    ),
    "many-releases-above-budget": (ledger(releases=[VALID["releases"][0]] * 1000), "do not fit"),
    # nesting 10^5 deep: the parser's recursion
    "deep-arrays": (b"[" * DEEP + b"]" * DEEP, "nested too deeply"),
    "deep-objects": (b'{"a":' * DEEP + b"1" + b"}" * DEEP, "nested too deeply"),
    "deep-unclosed": (b"[" * DEEP, "not a usable ledger"),
    "deep-budget": (raw_budget("[" * DEEP + "]" * DEEP), "nested too deeply"),
    "deep-release": (
        ledger(releases="@").replace(
            b'"@"', b'[{"kind": "gaussian", "sigma2": ' + b"[" * DEEP + b"]" * DEEP + b"}]"
        ),
        "nested too deeply",
    ),  # fmt: skip
    # larger than the bound: never read whole
    "50MB-whitespace": (b" " * (50 * 10**6), "larger than"),
    "valid-then-17MiB-whitespace": (TEXT + b" " * (17 * 2**20), "larger than"),
}


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("region,n\nnorth,10\nsouth,20\neast,5\n")
    return path


def noise_args(table, ledger_path, out) -> list[str]:
    """A release that fits VALID's budget: sigma2 = 50 on 3 counts."""
    return ["noise", str(table), "--column", "n", "--sigma2", "50", "--ledger", str(ledger_path),
            "-o", str(out)]  # fmt: skip


def snapshot(path) -> tuple:
    """What a run must not change: the bytes (a huge file: its size and time), inode, mode."""
    st = os.stat(path, follow_symlinks=False)
    small = stat.S_ISREG(st.st_mode) and st.st_size <= 2**26
    data = path.read_bytes() if small else None
    return data, st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode, st.st_nlink


def check_refused(capsys, args: list[str], command: str, fragment: str) -> str:
    """Run ``args`` in-process: status 1, one line on stderr naming what is wrong."""
    status = cli.main(args)
    out, err = capsys.readouterr()
    assert status == 1, err
    assert out == "" and "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err  # one line
    assert err.startswith(f"dgauss {command}: error: ") and fragment in err, err
    return err


def run_all_three(capsys, tmp_path, table, path, fragment) -> None:
    """account, noise and calibrate through ``path``: each refused, nothing changed."""
    before, files = snapshot(path), sorted(os.listdir(tmp_path))
    out = tmp_path / "out.csv"
    for command, args in [
        ("account", ["account", "--ledger", str(path)]),
        ("noise", noise_args(table, path, out)),
        ("calibrate", ["calibrate", "--ledger", str(path), "--k", "1"]),
    ]:
        err = check_refused(capsys, args, command, fragment)
        assert str(path) in err  # names the file
        assert snapshot(path) == before and not out.exists()
        assert sorted(os.listdir(tmp_path)) == files  # no temporary file, no lock file


def test_the_list_is_long_and_distinct():
    """At least 49 distinct hostile files (and the valid ledger is not one of them)."""
    contents = [content for content, _ in HOSTILE.values()]
    assert len(set(contents)) == len(contents) >= 49
    assert TEXT not in contents


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_file_is_refused_in_one_line(capsys, tmp_path, table, name):
    content, fragment = HOSTILE[name]
    path = tmp_path / "L.json"
    path.write_bytes(content)
    run_all_three(capsys, tmp_path, table, path, fragment)


#: Files that are genuinely ledgers, each VALID's content.
ACCEPTED = {
    "as-written": TEXT,
    "byte-order-mark": b"\xef\xbb\xbf" + TEXT,  # json reads UTF-8 with a BOM as UTF-8
    "compact": json.dumps(VALID, separators=(",", ":")).encode(),
    "keys-reordered": json.dumps(dict(reversed(list(VALID.items())))).encode(),
    "crlf-and-indent": json.dumps(VALID, indent=8).replace("\n", "\r\n").encode(),
    "integer-budget": budget({"epsilon": 1, "delta": "1e-6"}),
}


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_a_genuine_ledger_is_accepted(capsys, tmp_path, table, name):
    path = tmp_path / "L.json"
    path.write_bytes(ACCEPTED[name])
    assert cli.main(["account", "--ledger", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert "1. discrete Gaussian, sigma2 = 40, sensitivity 1" in out
    assert cli.main(noise_args(table, path, tmp_path / "out.csv")) == 0, capsys.readouterr().err
    assert (tmp_path / "out.csv").exists()
    made = dgauss.Accountant.from_json(path.read_bytes()).spent.releases
    assert [r.sigma2 for r in made] == [40, 50]  # the old release kept, the new one recorded


# ---- files that are not regular files --------------------------------------------------


def test_a_folder(capsys, tmp_path, table):
    path = tmp_path / "L.json"
    path.mkdir()
    run_all_three(capsys, tmp_path, table, path, "it is a folder, not a regular file")


def test_a_socket(capsys, tmp_path, table):
    path = tmp_path / "L.json"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        run_all_three(capsys, tmp_path, table, path, "it is a socket")


def test_a_symlink_loop(capsys, tmp_path, table):
    path, other = tmp_path / "L.json", tmp_path / "M.json"
    path.symlink_to(other)
    other.symlink_to(path)
    run_all_three(capsys, tmp_path, table, path, "cannot read the ledger")


def test_a_dangling_symlink(capsys, tmp_path, table):
    path = tmp_path / "L.json"
    path.symlink_to(tmp_path / "gone.json")
    run_all_three(capsys, tmp_path, table, path, "create it first")
    assert not (tmp_path / "gone.json").exists()  # noise never creates a ledger


def test_a_symlink_to_a_hostile_file(capsys, tmp_path, table):
    target = tmp_path / "bad.json"
    target.write_bytes(HOSTILE["deep-arrays"][0])
    path = tmp_path / "L.json"
    path.symlink_to(target)
    before = snapshot(target)
    run_all_three(capsys, tmp_path, table, path, "nested too deeply")
    assert snapshot(target) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file(capsys, tmp_path, table):
    path = tmp_path / "L.json"
    path.write_bytes(TEXT)
    path.chmod(0)
    try:
        run_all_three(capsys, tmp_path, table, path, "Permission denied")
    finally:
        path.chmod(0o600)


def test_a_hard_linked_ledger_spends_nothing(capsys, tmp_path, table):
    """A release through either name is refused (the names would become two ledgers);
    reading it is harmless and allowed."""
    path, other = tmp_path / "L.json", tmp_path / "L2.json"
    path.write_bytes(TEXT)
    os.link(path, other)
    before, out = snapshot(path), tmp_path / "out.csv"
    for name in (path, other):
        check_refused(capsys, noise_args(table, name, out), "noise", "has 2 names (hard links)")
        assert snapshot(path) == before and not out.exists()
    assert cli.main(["account", "--ledger", str(other)]) == 0
    assert "sigma2 = 40" in capsys.readouterr().out


def run_child(args: list[str]) -> subprocess.CompletedProcess:
    """``python -m dgauss`` in a child process, killed if it takes a minute (a hang)."""
    return subprocess.run(
        [sys.executable, "-m", "dgauss", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-urandom", "dev-null", "fifo-symlink"])
@pytest.mark.long
def test_a_file_that_could_hang_the_read(tmp_path, table, kind):
    """A FIFO with no writer blocks a plain open, /dev/zero never ends: each refused at once,
    in a child process under a timeout (a hang fails the test instead of hanging it)."""
    path = tmp_path / "L.json"
    if kind.startswith("fifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        (path.symlink_to(fifo) if kind == "fifo-symlink" else os.rename(fifo, path))
        fragment = "it is a FIFO (named pipe), not a regular file"
    else:
        device = "/dev/" + kind.split("-")[1]
        if not os.path.exists(device):
            pytest.skip(f"no {device}")
        path.symlink_to(device)
        fragment = "it is a character device, not a regular file"
    out = tmp_path / "out.csv"
    runs = [("noise", noise_args(table, path, out))]
    if kind in ("fifo", "dev-zero"):  # the other commands too (a child each: ~1 s)
        runs += [
            ("account", ["account", "--ledger", str(path)]),
            ("calibrate", ["calibrate", "--ledger", str(path), "--k", "1"]),
        ]
    for command, args in runs:
        done = run_child(args)
        assert done.returncode == 1 and done.stdout == "", done.stderr
        assert done.stderr.count("\n") == 1 and fragment in done.stderr, done.stderr
        assert done.stderr.startswith(f"dgauss {command}: error: ")
        assert not out.exists()


def test_a_sparse_endless_looking_file(capsys, tmp_path, table):
    """A file of 1 TiB (sparse: zeros it never stores) is refused by its size, not read."""
    path = tmp_path / "L.json"
    with open(path, "wb") as f:
        try:
            f.truncate(2**40)
        except OSError:
            pytest.skip("the file system does not take a sparse 1 TiB file")
    run_all_three(capsys, tmp_path, table, path, f"larger than {_ledger.MAX_LEDGER_BYTES:,} bytes")


def test_the_bound_is_exact(capsys, tmp_path):
    """A valid ledger padded to exactly MAX_LEDGER_BYTES is read; one byte more is not."""
    path = tmp_path / "L.json"
    path.write_bytes(TEXT + b" " * (_ledger.MAX_LEDGER_BYTES - len(TEXT)))
    assert cli.main(["account", "--ledger", str(path)]) == 0
    capsys.readouterr()
    with open(path, "ab") as f:
        f.write(b" ")
    check_refused(capsys, ["account", "--ledger", str(path)], "account", "larger than")


def test_init_over_a_hostile_path_replaces_nothing(capsys, tmp_path):
    """``account --init`` never replaces what is there, whatever it is."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "garbage").write_bytes(b"\0\1\2")
    (tmp_path / "dangling").symlink_to(tmp_path / "folder" / "no-such-dir" / "L.json")
    os.mkfifo(tmp_path / "fifo")
    for name, fragment in [
        ("folder", "exists already"),
        ("garbage", "exists already"),
        ("fifo", "exists already"),
        ("dangling", "cannot write the ledger"),  # its target's folder does not exist
    ]:
        path = tmp_path / name
        before = snapshot(path)
        args = ["account", "--ledger", str(path), "--init", "--rho", "1"]
        check_refused(capsys, args, "account", fragment)
        assert snapshot(path) == before
    assert sorted(os.listdir(tmp_path)) == ["dangling", "fifo", "folder", "garbage"]
