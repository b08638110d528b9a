"""Build of dgauss's compiled core.  Metadata lives in pyproject.toml.

The core links the system GMP (Debian/Ubuntu: ``apt-get install libgmp-dev``;
Fedora: ``dnf install gmp-devel``; macOS: ``brew install gmp``).  It never
links the private copy of libgmp bundled in gmpy2's wheels.
"""

import glob
import hashlib
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup

GMP_HELP = (
    "dgauss needs the GMP library and its header gmp.h to build.\n"
    "Install it first, e.g.  apt-get install libgmp-dev  (Debian/Ubuntu),\n"
    "dnf install gmp-devel (Fedora) or brew install gmp (macOS),\n"
    "or point CFLAGS=-I<dir> and LDFLAGS=-L<dir> at an existing installation."
)


def fail(message):
    sys.exit("\nerror: " + message + "\n")


def require_build_tools():
    try:
        import Cython
    except ImportError:
        fail("building dgauss needs Cython >= 3.0 (pip install 'cython>=3').")
    if int(Cython.__version__.split(".")[0]) < 3:
        fail(f"building dgauss needs Cython >= 3.0, found {Cython.__version__}.")
    try:
        import numpy
    except ImportError:
        fail("building dgauss needs NumPy >= 1.26 (pip install numpy).")
    return numpy.get_include()


def gmp_flags():
    """Compiler and linker flags for GMP: pkg-config first, then the default paths."""
    if shutil.which("pkg-config"):
        try:
            cflags = subprocess.check_output(["pkg-config", "--cflags", "gmp"], text=True).split()
            libs = subprocess.check_output(["pkg-config", "--libs", "gmp"], text=True).split()
            include_dirs = [f[2:] for f in cflags if f.startswith("-I")]
            library_dirs = [f[2:] for f in libs if f.startswith("-L")]
            return include_dirs, library_dirs
        except (subprocess.CalledProcessError, OSError):
            pass
    # no pkg-config file: look for the header where compilers look by default
    candidates = [d for d in os.environ.get("CPATH", "").split(os.pathsep) if d]
    candidates += [
        "/usr/include",
        "/usr/local/include",
        "/opt/homebrew/include",
        "/usr/include/x86_64-linux-gnu",
        "/usr/include/aarch64-linux-gnu",
    ]
    cflags = os.environ.get("CFLAGS", "")
    candidates += [f[2:] for f in cflags.split() if f.startswith("-I")]
    if not any(os.path.exists(os.path.join(d, "gmp.h")) for d in candidates):
        fail(GMP_HELP)
    return [], []


#: The core's own sources: what its generated C and its object code are made from.
CORE_SOURCES = ["src/dgauss/_core.pyx"] + [
    "csrc/dg_rng.c",
    "csrc/dg_prim.c",
    "csrc/dg_exp.c",
    "csrc/dg_inv.c",
    "csrc/dg_chacha.c",
    "csrc/dg_ahead.c",
]
#: Written beside the generated C once Cython has made it: a digest of everything it was made
#: from.  A later build in the same tree (a second ``pip install .``, say for another extra)
#: whose digest matches compiles nothing again.
STAMP = "build/dgauss-core-c.sha256"


def translation_digest():
    """SHA-256 of the core's Cython and C sources and of the Cython and NumPy versions that
    translate them: the generated C is a function of these alone."""
    import Cython
    import numpy

    digest = hashlib.sha256()
    digest.update(f"Cython {Cython.__version__} NumPy {numpy.__version__}\n".encode())
    patterns = ["src/dgauss/*.pyx", "src/dgauss/*.pxi", "src/dgauss/*.pxd", "src/dgauss/*.h"]
    patterns += ["csrc/*.c", "csrc/*.h"]
    for path in sorted(p for pattern in patterns for p in glob.glob(pattern)):
        with open(path, "rb") as f:
            digest.update(path.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def translated(digest):
    """Whether src/dgauss/_core.c was generated from exactly these sources and versions.

    pip builds each install in a fresh environment whose Cython includes are new files, so
    Cython's own check (file times) would translate the core again, and the new C would then
    be compiled again, for nothing; the digest looks at contents only."""
    if not os.path.exists("src/dgauss/_core.c") or not os.path.exists(STAMP):
        return False
    with open(STAMP) as f:
        return f.read().strip() == digest


def extensions():
    numpy_include = require_build_tools()
    from Cython.Build import cythonize

    gmp_include, gmp_lib = gmp_flags()
    digest = translation_digest()
    reuse = translated(digest)
    sources = list(CORE_SOURCES)
    if reuse:
        sources[0] = "src/dgauss/_core.c"
    core = Extension(
        "dgauss._core",
        sources=sources,
        # the paper's loops, the tables, the jobs and the int conversion are included by
        # _core.pyx (one unit)
        depends=[
            "src/dgauss/_algorithms.pxi",
            "src/dgauss/_bit_sources.pxi",
            "src/dgauss/_tables.pxi",
            "src/dgauss/_os_chacha.pxi",
            "src/dgauss/_job.pxi",
            "src/dgauss/_pylong.h",
            "src/dgauss/_csrc.pxd",
            "src/dgauss/_gmp.pxd",
            "csrc/dg_rng.h",
            "csrc/dg_prim.h",
            "csrc/dg_exp.h",
            "csrc/dg_inv.h",
            "csrc/dg_chacha.h",
            "csrc/dg_ahead.h",
        ],
        include_dirs=["csrc", numpy_include, *gmp_include],
        library_dirs=gmp_lib,
        # libdl: dlsym (the C library's getrandom, csrc/dg_rng.c), in libc itself from glibc 2.34
        libraries=["gmp", *(["dl"] if sys.platform.startswith("linux") else [])],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        # hidden: calls between the C files and the Cython module skip the PLT.  -g0: no
        # debug information (Python's own flags ask for -g), which took half of the C
        # compiler's time on the 3.5 MB the core's Cython becomes (docs/performance.md,
        # *Building from source*)
        extra_compile_args=["-O3", "-std=gnu11", "-fvisibility=hidden", "-g0", "-pthread"],
        # the OS source's reader thread (csrc/dg_ahead.c): libpthread before glibc 2.34
        extra_link_args=["-pthread"],
    )
    if reuse:
        return [core]
    built = cythonize([core], compiler_directives={"language_level": 3})
    os.makedirs(os.path.dirname(STAMP), exist_ok=True)
    with open(STAMP, "w") as f:
        f.write(digest + "\n")
    return built


# Metadata-only commands must not need GMP or Cython.
if len(sys.argv) >= 2 and sys.argv[1] in {"egg_info", "dist_info", "--version", "clean"}:
    setup()
else:
    setup(ext_modules=extensions())
