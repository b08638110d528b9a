"""Sphinx configuration for dgauss's documentation site (built by ``bash tools/docs``).

The pages are Markdown (MyST); the API reference is rendered from the docstrings (numpydoc
style) and the command line's from its argparse parsers (sphinx-argparse).  The build is
offline (no intersphinx), the site reads offline too (MathJax is copied into it), and every
warning is an error.
"""

from __future__ import annotations

import glob
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# A source tree built in place (python setup.py build_ext --inplace) documents itself; an
# unbuilt one (a fresh clone whose dgauss is installed) must not shadow the installed
# package, whose compiled core the samplers' entries need.
_SRC = os.path.join(ROOT, "src")
if any(glob.glob(os.path.join(_SRC, "dgauss", pattern)) for pattern in ("_core*.so", "_core*.pyd")):
    sys.path.insert(0, _SRC)

import dgauss  # noqa: E402

project = "dgauss"
author = "the dgauss developers"
copyright = "2026, the dgauss developers"
release = version = dgauss.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax shipped with the site: it renders with no network
    "sphinxarg.ext",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
smartquotes = False  # "--eps" must stay two hyphens, not an en dash (the CLI reference)
root_doc = "index"
exclude_patterns = ["_build", "figures/*.md"]

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc sections say the types
numpydoc_show_class_members = False
# numpydoc's own checks, the ones every docstring here meets: a returned value with no
# description (RT03: what a paragraph left unindented under Returns becomes), and an unknown
# section (GL06).  tests/test_docs.py checks the same sections more strictly, without a build.
numpydoc_validation_checks = {"RT03", "GL06"}

html_theme = "pydata_sphinx_theme"
html_title = f"dgauss {version}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # one sidebar: the section's pages, then this page's headings, so that the article column
    # holds a 100-column code line on a 1280-pixel screen (with two sidebars it held 70)
    "secondary_sidebar_items": [],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"**": ["sidebar-nav-bs", "page-toc", "sourcelink"]}
html_static_path = ["_static"]
html_css_files = ["dgauss.css"]  # a wider column for code; long lines scroll, never wrap

# Docstrings write absolute values as |X| (plain text reads best); reStructuredText would take
# |X| for a substitution.  Escape the bars of such a span before numpydoc and docutils see it,
# except in mathematics (a :math:`...` role, or a ".. math::" block), where |X| is LaTeX's.
_ABSOLUTE = re.compile(r"(?<![|\\`])\|([^|\s`][^|`\n]*?)\|(?![|_])")
_MATH_ROLE = re.compile(r"(:math:`[^`]*`)")


def _escape_bars(app, what, name, obj, options, lines):
    in_math, indent = False, 0
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        depth = len(line) - len(stripped)
        if in_math and stripped and depth <= indent:
            in_math = False
        if stripped.startswith(".. math::"):
            in_math, indent = True, depth
            continue
        if in_math:
            continue
        parts = _MATH_ROLE.split(line)  # odd parts are math roles, kept as written
        lines[i] = "".join(
            part if k % 2 else _ABSOLUTE.sub(r"\\|\1\\|", part) for k, part in enumerate(parts)
        )


def setup(app):
    app.connect("autodoc-process-docstring", _escape_bars, priority=100)
