"""The CSV pieces that ``dgauss noise`` and its pyarrow path (``_tables``) share: the input
error, the delimiter sniffed from a header, one column per ``--column`` name, a value on
the lattice g·ℤ as text, and rows written as csv.writer writes them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction
from typing import TextIO


class InputError(Exception):
    """A problem with the input file: reported in one line, exit status 1."""


#: The delimiters a CSV header is sniffed for, in order of preference on a tie.
_DELIMITERS = (",", ";", "\t", "|")


def _delimiter(given: str | None, header_line: str) -> str:
    """The --delimiter (one character; ``\\t`` for tab), or the one of , ; tab | that the
    header line uses most (outside quotes), ``,`` when it has none."""
    if given is not None:
        return given
    unquoted = re.sub(r'"[^"]*"', "", header_line)
    counts = [(unquoted.count(d), -i, d) for i, d in enumerate(_DELIMITERS)]
    best = max(counts)
    return best[2] if best[0] > 0 else ","


def _one_column(path: str, names: list[str], name: str) -> None:
    """InputError when several columns bear the --column ``name``: which one is meant is
    not clear, and the others would be released with their true values."""
    where = [str(j + 1) for j, n in enumerate(names) if n == name]
    if len(where) > 1:
        raise InputError(
            f"{path}: {len(where)} columns are named {name!r} (columns {', '.join(where)}); "
            "--column must name one column: rename the others"
        )


def _lattice_text(steps: int, g: Fraction) -> str:
    """``steps * g`` exactly: a decimal with as many places as ``g`` has (g = 0.5: 3.5, 4.0;
    g = 1: 7) when ``g`` is a terminating decimal, else a fraction (g = 1/3: 7/3, 2)."""
    value = steps * g
    den, twos, fives = g.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    places = max(twos, fives)
    if den != 1:
        return str(value)
    scaled = value * 10**places  # an integer: 10**places is a multiple of g's denominator
    digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
    sign = "-" if value < 0 else ""
    if not places:
        return sign + digits
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def write_csv_rows(out: TextIO, rows: Sequence[Sequence[str]], delimiter: str) -> None:
    """``rows`` (lists of strings) written to ``out`` as :func:`csv.writer` writes them with
    ``lineterminator="\\n"``, except that a field holding a carriage return is quoted on
    every Python, as 3.13's writer does: 3.10-3.12 wrote ``\\r`` bare, which reads back as a
    line end (the other columns would not come out as they went in).  A row holding one is
    written with the line end ``\\r\\n`` (the writer then quotes ``\\r`` and ``\\n``
    alike), turned back to ``\\n``."""
    import csv
    import io

    plain = csv.writer(out, lineterminator="\n", delimiter=delimiter)
    if not any("\r" in field for row in rows for field in row):
        plain.writerows(rows)
        return
    line = io.StringIO()
    crlf = csv.writer(line, lineterminator="\r\n", delimiter=delimiter)
    for row in rows:
        if not any("\r" in field for field in row):
            plain.writerow(row)
            continue
        line.seek(0)
        line.truncate()
        crlf.writerow(row)
        out.write(line.getvalue()[:-2] + "\n")
