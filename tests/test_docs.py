"""The documentation runs: doctests pass, every Python example in README.md and docs/ runs,
every shell transcript there (a ```console block) prints what it shows, and CI runs exactly
the README's Quick start."""

from __future__ import annotations

import doctest
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

import dgauss
from dgauss import _accountant, _api, _mechanism, mechanisms, textbook
from dgauss.accounting import _composition, _neighbours

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "module",
    [dgauss, _api, mechanisms, _mechanism, textbook, _composition, _neighbours],
    ids=lambda m: m.__name__,
)
def test_doctests(module):
    """The modules with examples run them (and have some: a module without would pass vacuously)."""
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_the_rooms_doctests():
    """The examples in the methods of the classes mechanisms.py re-homed (their
    ``__module__`` is dgauss.mechanisms, so testmod of neither module finds the methods):
    found class by class against the module that defines the methods; as many as
    mechanisms.py held before the split (13 in all with the module's 6 and _mechanism's 3)."""
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    attempted = 0
    for room in (_accountant, _mechanism):
        for name, value in vars(room).items():
            if isinstance(value, type) and getattr(mechanisms, name, None) is value:
                for test in finder.find(value, name, module=room):
                    attempted += runner.run(test).attempted
    assert attempted >= 4 and runner.failures == 0


def test_dask_doctests():
    """dgauss.dask's examples run too, its module's and its samplers' (in dgauss._lazy);
    it needs the dask extra."""
    pytest.importorskip("dask")
    import dgauss._lazy
    import dgauss.dask

    test_doctests(dgauss.dask)
    lazy = doctest.testmod(dgauss._lazy, optionflags=doctest.ELLIPSIS)
    assert lazy.failed == 0


def test_ci_runs_exactly_the_quick_start():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    quick_start = [line for line in block.splitlines() if line.strip()]
    # exactly two commands: a venv made and entered, the install and the main job in one
    # line; then the tests, in that venv
    assert len(quick_start) == 2
    setup, tests = quick_start
    steps = [step.strip() for step in setup.split("&&")]
    assert steps[0].startswith("python3 -m venv ") and steps[1].startswith(". ")
    assert any("pip install" in step for step in steps)
    assert steps[-1].startswith("python3 -m dgauss sample ")
    assert tests == "python3 -m pytest"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    start = ci.index(setup)
    assert ci[start : start + 2] == quick_start
    # the site's getting-started page shows the same two commands
    page = (ROOT / "docs" / "getting-started.md").read_text()
    section = page.split("## Build and test from a checkout", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    assert [line for line in block.splitlines() if line.strip()] == quick_start


def test_the_readme_is_a_three_minute_read():
    """The README stays a front door (at most 200 lines); the rest lives in docs/."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move details to docs/"


def _doc_example(page: str, heading: str) -> tuple[str, dict]:
    """The first Python block under ``heading`` in ``page`` (relative to the repository's
    root), and the namespace it leaves."""
    section = (ROOT / page).read_text().split(heading, 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, f"{page} ({heading.lstrip('# ')})", "exec"), namespace)
    return block, namespace


def test_the_accounting_guide_example_runs_and_says_what_it_returns():
    """The calibration guide's example is executed, and its comments checked."""
    from fractions import Fraction

    from dgauss import accounting

    block, namespace = _doc_example("docs/howto/privacy-accounting.md", "# Calibrating")
    assert namespace["sigma2"] == Fraction(1785)
    assert namespace["scale"] == Fraction(833, 20)
    assert accounting.gaussian_delta(namespace["sigma2"], 1, k=100) <= 1e-6
    assert accounting.gaussian_interval(namespace["sigma2"], 0.05) == (-83, 83)
    assert accounting.calibrate_gaussian(1, "1e-6", k=100, method="zcdp") == 2053
    assert round(accounting.laplace_variance(namespace["scale"])) == 3469
    assert f"{accounting.gaussian_delta(2500, 1, log=True):.2f}" == "-1262.12"
    for comment in (
        "Fraction(1785)",
        "(-83, 83)",
        "Fraction(2053)",
        "Fraction(833, 20)",
        "-1262.12",
    ):
        assert comment in block


def test_the_program_guide_example_says_what_it_returns(capsys):
    """The whole-program example is executed, and the numbers in its comments recomputed."""
    from fractions import Fraction

    import dgauss
    from dgauss._rounding import _rounded_up

    block, namespace = _doc_example("docs/howto/census-program.md", "## A whole release program")
    program, acc = namespace["program"], namespace["acc"]
    delta = program.delta(1)
    assert delta <= 1e-6 and program.route(1) == "PLD"
    assert f"({_rounded_up(delta)}".replace("e-7", "e-07") in block
    assert f"{program.epsilon('1e-6'):.5f}" in block
    before = dgauss.Accountant(epsilon=1, delta="1e-6")  # the state when calibrate was called
    before.add_gaussian_noise([0], sigma2="35.7")
    before.add_gaussian_noise([0], sigma2="89.25")
    assert "# 119:" in block and before.calibrate_gaussian(sensitivity=[1, 1]) == Fraction(119)
    assert acc.spent.epsilon("1e-6") <= 1 and acc.spent.delta(1) <= 1e-6
    printed = capsys.readouterr().out
    assert printed.startswith("The 3 releases") and f"δ = {_rounded_up(delta)}" in printed
    for line in block.split("print(acc.report())", 1)[1].splitlines():
        words = line.lstrip("# ").split("(a certified")[0].split("; ...")[0]
        assert words.strip() in printed.replace("\n", " ")


# ---- every Python example in README.md and docs/**/*.md runs ---------------------------------
#
# Each example block runs *alone*, in a fresh namespace, as a reader who copies that one block
# would run it: so every block must make its own imports and variables.  A block is a fenced
# ```python (or ```py) block, run with exec, or any fenced block whose first line starts with
# ">>>", run as a doctest (ELLIPSIS on).  A block that truly cannot run here starts with the line
# "# not run: <reason>"; it is counted (and its reason shown) but not run.  EXPECTED_BLOCKS holds
# the count per page, so that a page whose examples stop being found, or a new page with
# examples, fails here until the count is updated on purpose.

DOC_PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.relative_to(ROOT).parts),
]

#: page -> (blocks run, blocks marked "# not run: ..."); a page not listed must have none.
EXPECTED_BLOCKS = {
    "README.md": (4, 0),
    "docs/accounting.md": (1, 0),
    "docs/dask.md": (3, 0),
    "docs/evidence.md": (1, 0),
    "docs/explanation/algorithms.md": (1, 0),
    "docs/explanation/peers.md": (1, 0),
    "docs/explanation/sampling.md": (1, 0),
    "docs/getting-started.md": (2, 0),
    "docs/howto/census-program.md": (1, 0),
    "docs/howto/microdata.md": (1, 0),
    "docs/howto/pandas.md": (1, 0),
    "docs/howto/privacy-accounting.md": (1, 0),
    "docs/howto/reproducible.md": (1, 0),
    "docs/index.md": (1, 0),
    "docs/reconcile.md": (2, 0),
    "docs/spark.md": (0, 2),
}

PYTHON = ("python", "py", "python3")
NOT_RUN = re.compile(r"#\s*not run:\s*(\S.*)")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")


@dataclass(frozen=True)
class Example:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    kind: str  # "python" (exec) or "doctest"
    info: str  # the fence's language, e.g. "python"
    source: str
    not_run: str | None  # the reason, for a block marked "# not run: <reason>"

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def fenced_blocks(text: str):
    """(line of the opening fence, info string, body) for every fenced code block of ``text``.

    CommonMark's rules, as far as these pages need them: a fence is 3 or more backticks or
    tildes, indented at most 3 spaces; it closes at a line of the same character, at least as
    long, with nothing after it; an unclosed block runs to the end of the page."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, start = opening.group("fence"), i
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body = []
        i += 1
        while i < len(lines) and not closing.match(lines[i]):
            body.append(lines[i][len(opening.group("indent")) :])
            i += 1
        yield start + 1, opening.group("info").lower(), "\n".join(body) + "\n"
        i += 1


def examples(page: pathlib.Path, root: pathlib.Path = ROOT) -> list[Example]:
    found = []
    for line, info, body in fenced_blocks(page.read_text()):
        first = next((b.strip() for b in body.splitlines() if b.strip()), "")
        if first.startswith(">>>"):
            kind = "doctest"
        elif info in PYTHON:
            kind = "python"
        else:
            continue
        marker = NOT_RUN.match(first)
        name = page.relative_to(root).as_posix()
        found.append(Example(name, line, kind, info, body, marker.group(1) if marker else None))
    return found


ALL_EXAMPLES = [example for page in DOC_PAGES for example in examples(page)]


def test_the_examples_are_found_and_counted():
    """Extraction finds every page's examples: a changed fence, or a page that loses or gains
    examples, fails here instead of passing with nothing run."""
    counts: dict[str, tuple[int, int]] = {}
    for example in ALL_EXAMPLES:
        ran, skipped = counts.get(example.page, (0, 0))
        counts[example.page] = (ran, skipped + 1) if example.not_run else (ran + 1, skipped)
    assert counts == EXPECTED_BLOCKS, (
        "examples per page (run, not run) changed; update EXPECTED_BLOCKS on purpose"
    )
    assert sum(ran for ran, _ in counts.values()) > 0
    # the crude count agrees: every line that opens a python fence was taken as an example
    for page in DOC_PAGES:
        name = page.relative_to(ROOT).as_posix()
        opened = len(
            re.findall(r"^ {0,3}(?:`{3,}|~{3,})\s*py(?:thon3?)?\s*$", page.read_text(), re.M)
        )
        python_blocks = [e for e in ALL_EXAMPLES if e.page == name and e.info in PYTHON]
        assert len(python_blocks) == opened, name


@pytest.mark.parametrize("example", ALL_EXAMPLES, ids=lambda example: example.id)
def test_the_example_runs(example: Example):
    if example.not_run:
        pytest.skip(f"marked '# not run: {example.not_run}'")
    if example.kind == "doctest":
        test = doctest.DocTestParser().get_doctest(
            example.source, {}, example.id, example.page, example.line
        )
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test)
        result = runner.summarize(verbose=False)
        assert result.attempted > 0 and result.failed == 0
    else:
        # leading blank lines keep the traceback's line numbers those of the page; the block
        # runs as a script pasted from it would, as __main__ (so a block whose work sits under
        # `if __name__ == "__main__":`, as a cluster's start must, runs it)
        code = compile("\n" * example.line + example.source, example.page, "exec")
        exec(code, {"__name__": "__main__"})


def test_the_extraction_on_a_made_up_page(tmp_path):
    """Each kind of block is found, with its line; other languages and nested fences are not."""
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n"
        "```python\nx = 1\n```\n"  # line 2
        "~~~py\ny = 2\n~~~\n"  # line 5
        "```\n>>> 1 + 1\n2\n```\n"  # line 8: a doctest in a plain fence
        "```bash\necho no\n```\n"
        "````markdown\n```python\nnot = an example\n```\n````\n"
        "```python\n# not run: needs a peer package\nimport opendp\n```\n"  # line 20
    )
    found = examples(page, root=tmp_path)
    assert [(e.line, e.kind, e.not_run) for e in found] == [
        (2, "python", None),
        (5, "python", None),
        (8, "doctest", None),
        (20, "python", "needs a peer package"),
    ]
    test_the_example_runs(found[2])  # the doctest path runs, and fails on a wrong answer:
    wrong = Example("page.md", 8, "doctest", "", ">>> 1 + 1\n3\n", None)
    with pytest.raises(AssertionError):
        test_the_example_runs(wrong)


def test_the_readme_noising_example_says_what_it_returns():
    """The README's noising example runs, and the values its comments state are the true ones."""
    block, namespace = _doc_example("README.md", "## Noising a table")
    mech, acc = namespace["mech"], namespace["acc"]
    assert str(mech.sigma2) == "179/10" and str(mech.rho) == "5/179"
    assert mech.interval(0.05) == (-8, 8) and mech.delta(1) <= 1e-6
    assert (acc.spent.rho, acc.remaining.rho) == (Fraction(3, 4), Fraction(1, 4))
    assert namespace["released"].min() >= 0 and namespace["released"].dtype == np.int64
    for comment in ("179/10 5/179", "(-8, 8)", "3/4 1/4"):
        assert comment in block


def test_the_landing_example_says_what_it_prints(capsys):
    """The landing page's first release runs, and the values its comment states are printed."""
    block, namespace = _doc_example("docs/index.md", "## A first release")
    mech = namespace["mech"]
    assert str(mech.sigma2) == "179/10" and mech.interval(0.05) == (-8, 8)
    assert namespace["released"].min() >= 0 and namespace["released"].dtype == np.int64
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "179/10 (-8, 8)" and "# 179/10 (-8, 8)" in block


def test_the_peers_page_accounting_numbers_are_computed():
    """The peers page's program: its comments and prose give the exact and the zCDP ε as
    dgauss computes them, and the zCDP one is the larger."""
    from dgauss import accounting

    block, namespace = _doc_example("docs/explanation/peers.md", "## Tumult Analytics")
    program = namespace["program"]
    exact = program.epsilon("1e-6")
    zcdp = accounting.cdp_eps(program.rho, "1e-6")
    assert exact < 1 < zcdp
    assert f"# {exact:.5f}" in block and f"# {zcdp:.4f}" in block
    page = (ROOT / "docs" / "explanation" / "peers.md").read_text()
    assert f"at least {zcdp:.3f} where dgauss certifies {exact:.5f}" in page.replace("\n", " ")


@pytest.mark.long
def test_the_command_line_guide_runs(tmp_path):
    """The command-line guide's sample and noise blocks (docs/howto/command-line.md), line by
    line, as written but for sample counts cut to 1,000 (the guide's 10^10 samples fill 80
    GB), on files made here: every command succeeds and writes what its -o names.  (The
    guide's ledger block: tests/test_cli_ledger.py.)"""
    import os
    import subprocess
    import sys

    pytest.importorskip("pyarrow")  # the Parquet line needs the tables extra
    import pandas as pd

    page = (ROOT / "docs" / "howto" / "command-line.md").read_text()
    blocks = [b for b in re.findall(r"```bash\n(.*?)```", page, re.S) if "--ledger" not in b]
    assert len(blocks) == 2
    table = pd.DataFrame({"n": [12, 0, 7], "m": [5, 1, 2], "f": [7, 0, 4], "region": list("abc")})
    table.to_csv(tmp_path / "counts.csv", index=False)
    table.to_parquet(tmp_path / "counts.parquet")
    np.save(tmp_path / "counts.npy", np.array([12, 0, 7, 3]))
    # the dgauss these tests import (installed, or a source tree built in place)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dgauss.__file__)))
    ran = 0
    for line in "".join(blocks).splitlines():
        words = line.split("#")[0].split()
        assert words[0] == "dgauss", line
        if "-n" in words:
            words[words.index("-n") + 1] = "1000"
        done = subprocess.run(
            [sys.executable, "-m", "dgauss", *words[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (line, done.stderr)
        if "-o" in words:
            assert (tmp_path / words[words.index("-o") + 1]).stat().st_size > 0, line
        ran += 1
    assert ran == 8


# ---- every shell transcript in README.md and docs/**/*.md runs and prints what it shows -------
#
# A ```console block is a terminal session: a line "$ COMMAND" is a command, and the lines after
# it, up to the next "$" line, are what the terminal shows of it (stdout and stderr together).
# A line "$" alone is the prompt after the last command (the command before it printed nothing).
# A block's commands run in order in one bash process (so `$?` and files carry over), in a fresh
# empty folder, with `dgauss` the dgauss these tests import (`python3` this interpreter).
# Each command's output must match the page's as a doctest's does with ELLIPSIS: "..." inside
# a line matches any text (line breaks included), a line that is only "..." (indented or not)
# any lines or none, and spaces at line ends do not count.  Continued command lines (a trailing
# backslash) are not supported.  EXPECTED_TRANSCRIPTS holds the count per page, as
# EXPECTED_BLOCKS does for Python examples.

#: page -> its ```console blocks; a page not listed must have none.
EXPECTED_TRANSCRIPTS = {
    "docs/accounting.md": 1,
    "docs/cli.md": 2,
    "docs/evidence.md": 1,
    "docs/ledger.md": 1,
}

CONSOLE = ("console",)


@dataclass(frozen=True)
class Transcript:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    steps: tuple[tuple[str, str], ...]  # (command, the output the page shows), in order

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def transcripts(page: pathlib.Path, root: pathlib.Path = ROOT) -> list[Transcript]:
    found = []
    name = page.relative_to(root).as_posix()
    for line, info, body in fenced_blocks(page.read_text()):
        if info not in CONSOLE:
            continue
        steps: list[tuple[str, list[str]]] = []
        for text in body.splitlines():
            if text == "$" or text.startswith("$ "):
                assert not text.endswith("\\"), f"{name}:{line}: a continued command: {text}"
                steps.append((text[2:], []))
            else:
                assert steps, f"{name}:{line}: output before the first '$ ' command"
                steps[-1][1].append(text)
        outputs = tuple((command, "\n".join(shown)) for command, shown in steps)
        found.append(Transcript(name, line, outputs))
    return found


ALL_TRANSCRIPTS = [transcript for page in DOC_PAGES for transcript in transcripts(page)]


def _normalized(text: str) -> str:
    """``text`` with the spaces at its line ends and its trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "".join(line + "\n" for line in lines)


def shows(expected: str, output: str) -> bool:
    """Whether ``output`` is what a page's ``expected`` output shows (ELLIPSIS, as above)."""
    pattern = []
    for line in _normalized(expected).splitlines():
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")  # any whole lines, or none
        else:
            pattern.append(r"(?s:.*?)".join(map(re.escape, line.split("..."))) + r"\n")
    return re.fullmatch("".join(pattern), _normalized(output)) is not None


def run_transcript(transcript: Transcript, folder: pathlib.Path) -> None:
    """Run ``transcript``'s commands in ``folder / "work"`` (made if missing; the commands find
    there only what the caller put there) in one bash process, ``dgauss`` on its PATH being
    ``python -m dgauss`` of this interpreter and of the dgauss these tests import (and
    ``python3`` this interpreter); an
    AssertionError names the first command whose output is not the page's."""
    bin_dir, work = folder / "bin", folder / "work"
    bin_dir.mkdir(parents=True)
    work.mkdir(exist_ok=True)
    python = shlex.quote(sys.executable)
    for name, run in (("dgauss", f"{python} -m dgauss"), ("python3", python)):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec {run} "$@"\n')
        wrapper.chmod(0o755)
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=os.path.dirname(os.path.dirname(dgauss.__file__)),
    )
    # a marker line before each command splits the one stream into the commands' outputs
    # (printed by a function that leaves $? as the command before it left it)
    marker = f"@@transcript-{uuid.uuid4().hex}"
    script = [
        "exec 2>&1",
        f"__mark() {{ local status=$?; printf '\\n%s %s\\n' '{marker}' \"$1\"; return $status; }}",
    ]
    for i, (command, _) in enumerate(transcript.steps):
        script += [f"__mark {i}", command]
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", "\n".join(script) + "\n"],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        encoding="utf-8",
        timeout=300,
    )
    outputs = re.split(rf"\n{marker} \d+\n", done.stdout)
    assert outputs[0] == "" and len(outputs) == len(transcript.steps) + 1, done.stdout
    for (command, expected), output in zip(transcript.steps, outputs[1:], strict=True):
        assert shows(expected, output), (
            f"{transcript.id}: $ {command}\n--- the page shows:\n{expected}\n"
            f"--- the command printed:\n{output}"
        )


def _make_t_csv(work: pathlib.Path) -> None:
    """docs/ledger.md's t.csv, which its commands read: a table with count columns n and m, 3
    values each (the page's "on 3 values"); the two-query table of tests/test_cli_ledger.py
    (';' delimited, a byte-order mark)."""
    (work / "t.csv").write_bytes(
        "\ufeffregion;age;n;m\nnorth;0-17;10;3\nnorth;18+;20;4\nsouth;0-17;5;7\n".encode()
    )


def _can_run_cli_md(work: pathlib.Path) -> None:
    """docs/cli.md's session needs GNU coreutils' `timeout` (not on macOS by default), and
    its 10^9 samples to noise.txt pass the free-space check (2 bytes a sample) only with 2 GB
    free: else the run is refused at once instead of being killed while it draws."""
    if shutil.which("timeout") is None:
        pytest.skip("docs/cli.md's transcript needs the timeout command (GNU coreutils)")
    need = 2 * 10**9
    if shutil.disk_usage(work).free < need:
        pytest.skip(f"docs/cli.md's transcript needs {need:,} bytes free for its -o noise.txt")


#: page -> what the test does in the empty folder before the page's transcript runs
PREPARE = {"docs/ledger.md": _make_t_csv, "docs/cli.md": _can_run_cli_md}


def test_the_transcripts_are_found_and_counted():
    """Every page's ```console blocks are found (a page that gains or loses one fails here
    until EXPECTED_TRANSCRIPTS is updated on purpose), each with at least one command."""
    counts: dict[str, int] = {}
    for transcript in ALL_TRANSCRIPTS:
        counts[transcript.page] = counts.get(transcript.page, 0) + 1
        assert any(command for command, _ in transcript.steps), transcript.id
    assert counts == EXPECTED_TRANSCRIPTS, (
        "console blocks per page changed; update EXPECTED_TRANSCRIPTS on purpose"
    )
    # the crude count agrees: every line that opens a console fence was taken as a transcript
    for page in DOC_PAGES:
        name = page.relative_to(ROOT).as_posix()
        opened = len(re.findall(r"^ {0,3}(?:`{3,}|~{3,})\s*console\s*$", page.read_text(), re.M))
        assert len([t for t in ALL_TRANSCRIPTS if t.page == name]) == opened, name


@pytest.mark.parametrize("transcript", ALL_TRANSCRIPTS, ids=lambda transcript: transcript.id)
def test_the_transcript_runs_as_shown(transcript: Transcript, tmp_path):
    """The page's session, run as written, prints what the page shows.  (docs/cli.md's run of
    10^9 samples to a .txt is always killed by its `timeout` of 3 s: it writes about 7
    million samples a second, so it would take minutes; a .npy would take 5 s on a fast
    machine.)"""
    if transcript.page in PREPARE:
        (tmp_path / "work").mkdir()
        PREPARE[transcript.page](tmp_path / "work")
    run_transcript(transcript, tmp_path)


def test_a_made_up_transcript(tmp_path):
    """Commands, outputs and the closing prompt are found; $? and files carry over from one
    command to the next; "..." and line ends match as said; and a wrong output fails."""
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n"
        "```console\n"  # line 2
        "$ echo one > f; (echo two; echo three) >&2; false\n"
        "two\n"
        "...\n"
        "$ echo $?\n"
        "1\n"
        "$ cat f  \n"
        "one   \n"
        "$ printf 'a long line\\nand more'\n"
        "a ... more\n"
        "$\n"
        "```\n"
        "```bash\n$ not a transcript\n```\n"
    )
    (found,) = transcripts(page, root=tmp_path)
    assert (found.page, found.line, [command for command, _ in found.steps]) == (
        "page.md",
        2,
        [
            "echo one > f; (echo two; echo three) >&2; false",
            "echo $?",
            "cat f  ",
            "printf 'a long line\\nand more'",
            "",
        ],
    )
    run_transcript(found, tmp_path / "right")
    assert not shows("a ...", "b") and not shows("", "a") and shows("  ...\nb", "a\nb")
    for step, wrong in [(1, "0"), (2, "two"), (3, "a long line"), (4, "more")]:
        steps = list(found.steps)
        steps[step] = (steps[step][0], wrong)
        with pytest.raises(AssertionError):
            run_transcript(Transcript("page.md", 2, tuple(steps)), tmp_path / f"wrong{step}")


# ---- every public docstring renders: its Returns, Yields, Raises and Warns entries -------------
#
# numpydoc reads each unindented line under "Returns" as one more return value (rendered as a
# bold name with nothing under it), so a paragraph written there renders as a column of bold
# half-sentences, and Sphinx does not warn.  Every entry of these sections must be a type (or
# "name : type") with an indented description; prose goes under the type or into Notes.

PUBLIC_MODULES = (
    "dgauss",
    "dgauss.accounting",
    "dgauss.dask",
    "dgauss.spark",
    "dgauss.mechanisms",
    "dgauss.reference",
    "dgauss.testing",
    "dgauss.textbook",
)

#: one term of a type: a dotted name, backquoted or not, with an optional [...] part
#: (``numpy.ndarray``, ``list[int]``) and at most one word before it ("Dask collection"), or a
#: set of literals ({None, numpy.int64, object}, read as "{}"); terms join with ", ", " or "
#: and " of "
_TYPE_TERM = re.compile(r"(?:[A-Za-z]+ )?`{0,2}[A-Za-z_][\w.]*(?:\[[\w., |]*\])?`{0,2}|\{\}")
_TYPE_JOIN = re.compile(r",\s*(?:or\s+)?|\s+or\s+|\s+of\s+")
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*")
_ENTRY_SECTIONS = ("Returns", "Yields", "Receives", "Raises", "Warns")


def _numpydoc():
    return pytest.importorskip(
        "numpydoc.docscrape",
        reason="numpydoc (in the docs extra) parses the docstrings: pip install 'dgauss[docs]'",
    )


def docstring_defects(doc: str) -> list[str]:
    """What in ``doc`` would not render as numpydoc means it: a Returns/Yields/Receives entry
    whose type is missing or is not a type (a line of prose read as one), whose name is not an
    identifier, or that has no description; a Raises/Warns entry that is not exception names
    or has no description; and whatever numpydoc itself warns of (say, an unknown section)."""
    import warnings

    docscrape = _numpydoc()
    defects = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            parsed = docscrape.NumpyDocString(doc)
        except ValueError as error:  # a section twice, and the like
            return [f"numpydoc: {error}"]
    defects += [f"numpydoc: {warning.message}" for warning in caught]
    for section in _ENTRY_SECTIONS:
        for entry in parsed[section]:
            shown = f"{section}: {(entry.name + ' : ' if entry.name else '')}{entry.type!r}"
            if not "".join(entry.desc).strip():
                defects.append(f"{shown} has no description (prose under it must be indented)")
            if section in ("Raises", "Warns"):
                names = re.split(r",\s*|\s+or\s+", entry.type.strip())
                if not entry.type.strip() or not all(_EXCEPTION.fullmatch(n) for n in names):
                    defects.append(f"{shown} is not a list of exception names")
                continue
            if entry.name and not entry.name.isidentifier():
                defects.append(f"{shown}: the name is not an identifier")
            # a set of literals is one term: its commas are not the list's
            terms = _TYPE_JOIN.split(re.sub(r"\{[^{}]*\}", "{}", entry.type.strip()))
            if not entry.type.strip() or not all(_TYPE_TERM.fullmatch(t) for t in terms):
                defects.append(f"{shown} is not a type")
    return defects


def public_docstrings() -> list[tuple[str, str]]:
    """(qualified name, docstring) of the public modules, their public functions and classes,
    and the classes' public methods and properties (each object once)."""
    import importlib
    import inspect

    found, seen = [], set()
    for module_name in PUBLIC_MODULES:
        if module_name == "dgauss.dask" and importlib.util.find_spec("dask") is None:
            continue
        module = importlib.import_module(module_name)
        found.append((module_name, module.__doc__ or ""))
        names = getattr(module, "__all__", None) or dir(module)
        for name in names:
            value = getattr(module, name)
            if name.startswith("_") or inspect.ismodule(value) or id(value) in seen:
                continue
            if not (inspect.isclass(value) or inspect.isroutine(value)):
                continue
            seen.add(id(value))
            found.append((f"{module_name}.{name}", inspect.getdoc(value) or ""))
            if inspect.isclass(value):
                for attribute, member in vars(value).items():
                    if attribute.startswith("_"):
                        continue
                    member = member.fget if isinstance(member, property) else member
                    member = getattr(member, "__func__", member)
                    if inspect.isroutine(member) and member.__doc__:
                        found.append((f"{module_name}.{name}.{attribute}", inspect.getdoc(member)))
    return found


def test_every_public_docstring_renders():
    """No public docstring has a Returns/Yields/Raises entry that renders wrong: the check
    below, over every public name (dgauss.reconcile and add_gaussian_noise among them)."""
    _numpydoc()
    docstrings = public_docstrings()
    names = {name for name, _ in docstrings}
    assert {"dgauss.reconcile", "dgauss.add_gaussian_noise", "dgauss.Accountant.spent"} <= names
    assert len(docstrings) > 100
    defects = {name: found for name, doc in docstrings if (found := docstring_defects(doc))}
    assert defects == {}


def test_the_docstring_check_on_made_up_docstrings():
    """A paragraph left unindented under Returns fails (each of its lines is read as a return
    value without a description), as do a return without a description, a name that is not an
    identifier, and prose under Raises; the same docstrings written right pass."""
    _numpydoc()
    head = "Summary.\n\nParameters\n----------\nx : int\n    A value.\n\n"
    good = [
        "Returns\n-------\nReconciliation\n    The tables.\n\nNotes\n-----\nProse here.\n",
        "Returns\n-------\nint or numpy.ndarray of bool\n    A value.\n",
        "Returns\n-------\ntotal : int, float or ``None``\n    A value.\n",
        "Returns\n-------\n{None, numpy.int64, object}\n    A value.\n",
        "Yields\n------\nlist[int]\n    A value.\n",
        "Raises\n------\nTypeError, ValueError\n    Naming it.\nOverflowError\n    If too big.\n",
    ]
    bad = [
        # the defect this check was written for: a paragraph after the return's entry
        "Returns\n-------\nReconciliation\n    The tables.\n\n"
        "The estimate is the generalised least-squares solution (each noisy value weighted\n"
        "by 1/variance), computed in O(n).\n",
        # a description and no type: each line a pseudo-type
        "Returns\n-------\nThe noisy values in the input's form: a Python int for a scalar,\n"
        "an ndarray of the input's shape.\n",
        "Returns\n-------\nint or numpy.ndarray\n",  # no description
        "Returns\n-------\nthe total : int\n    A value.\n",  # not an identifier
        "Raises\n------\nOn any bad input, naming it\n    Before anything is drawn.\n",
        "Raises\n------\nValueError\n",  # no description
        "Retruns\n-------\nint\n    A value.\n",  # numpydoc warns: an unknown section
    ]
    assert [docstring_defects(head + doc) for doc in good] == [[]] * len(good)
    for doc in bad:
        assert docstring_defects(head + doc), doc


# ---- the pages speak of the product, not of how it was made ------------------------------------
#
# A page says what dgauss does and what was measured (with the date and the command), never the
# project's private history: numbered issues, a hostile review, "the issue", "the review", "the
# seed" (the project's source documents).  "the seed" in a generator's sense is common here;
# the one such phrase the pattern cannot tell apart, "the seed's *i*-th child" (Dask's per-block
# streams), is let through: any other use of the seed of a generator is worded without "the".

PRIVATE_HISTORY = re.compile(
    r"\bissues? #?\d+"
    r"|\bhostile review"
    r"|\bthe (?:issue|review)(?:'s|s)?\b"
    r"|\bthe seeds?\b(?!'s \*?i\*?-th\b)"
    r"|\b(?:first|second|third|this|that|last|previous|earlier|next) session\b",
    re.IGNORECASE,
)


def private_history(text: str) -> list[tuple[int, str]]:
    """(line, phrase) for every phrase of ``text`` that matches PRIVATE_HISTORY."""
    return [
        (number, found.group(0))
        for number, line in enumerate(text.splitlines(), 1)
        for found in PRIVATE_HISTORY.finditer(line)
    ]


def test_no_page_speaks_of_the_project_history():
    found = {
        page.relative_to(ROOT).as_posix(): hits
        for page in DOC_PAGES
        if (hits := private_history(page.read_text()))
    }
    assert found == {}


def test_the_history_check_on_a_made_up_page():
    """A made-up page with each kind of phrase is caught, line by line; the legitimate uses
    of the pages (a seed= parameter, the seed's i-th child, a reviewer, a session-free
    sentence) are not."""
    page = (
        "## Small calls (issue 35, a first step)\n"  # 1
        "Issues 25 and 35 measured it; Issue 4's targets hold.\n"  # 2
        "Found by the hostile review, fixed after the review's findings.\n"  # 3
        "The issue found 1.68e-4 (the issue's mechanism).\n"  # 4
        "Kaplan et al. (VLDB 2018, in the seed's further reading); the seed asks for it.\n"  # 5
        "Measured again in a second session.\n"  # 6
        "rng=np.random.SeedSequence(s): block *i* draws from the seed's *i*-th child,\n"  # 7
        "integers(seed=0); --seed S; a seeded generator; whoever knows its seed.\n"  # 8
        "What a reviewer checks; Harvard Data Science Review 2022; reviewed code.\n"  # 9
        "A tissue 4 times; reissue 2.\n"  # 10
    )
    assert private_history(page) == [
        (1, "issue 35"),
        (2, "Issues 25"),
        (2, "Issue 4"),
        (3, "hostile review"),
        (3, "the review's"),
        (4, "The issue"),
        (4, "the issue's"),
        (5, "the seed"),
        (5, "the seed"),
        (6, "second session"),
    ]
