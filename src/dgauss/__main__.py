"""``python -m dgauss``: the command line of :mod:`dgauss.cli`."""

from dgauss.cli import main

raise SystemExit(main())
