"""The code's rooms (docs/design.md): no import circle among dgauss's modules, counting the
imports made inside functions too, and the oracle independent of production's helpers."""

from __future__ import annotations

import ast
import pathlib

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "dgauss"
PACKAGES = {"dgauss", "dgauss.accounting", "dgauss.cli"}  # their __init__ re-export names


def _module_name(path: pathlib.Path) -> str:
    name = "dgauss." + ".".join(path.relative_to(SRC).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _imports(path: pathlib.Path, modules: set[str]) -> set[str]:
    """The dgauss modules ``path`` imports anywhere (top level or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dgauss"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("dgauss"))
    return found & modules


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in SRC.rglob("*.py")}
    modules = set(files)
    return {name: _imports(path, modules) - {name} for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of the graph among modules that are not packages (a package's
    ``__init__`` re-exporting its modules' names is not a circle of concerns)."""
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in PACKAGES:
            continue
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    found.append(path)
                elif nxt not in path and nxt not in PACKAGES:
                    stack.append((nxt, [*path, nxt]))
    return found


def test_no_import_circle():
    """dgauss's modules import each other one way only (issue 37's rooms): the oracle,
    production's inversion and the driver, the mechanisms and the Dask extra."""
    graph = import_graph()
    assert len(graph) > 30 and "dgauss._inputs" in graph["dgauss.dask"]
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_planted_circle():
    """The check above can fail: a planted circle, lazy or not, is found."""
    graph = import_graph()
    graph["dgauss._inputs"] = graph["dgauss._inputs"] | {"dgauss.dask"}  # the old lazy import
    assert any(set(c) >= {"dgauss._inputs", "dgauss.dask"} for c in cycles(graph))


def test_the_oracle_and_production_share_only_neutral_arithmetic():
    """Production's Python steps (_inversion, _driver) never import the oracle; both take
    the digits of exp(-gamma) from dgauss._exact."""
    graph = import_graph()
    for production in ("dgauss._inversion", "dgauss._driver", "dgauss._inputs"):
        assert "dgauss.reference" not in graph[production], production
    assert "dgauss._exact" in graph["dgauss._inversion"]
    assert "dgauss._exact" in graph["dgauss.reference"]
