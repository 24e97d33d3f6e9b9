"""``python -m pondlib.cli``: the ``pond`` command line."""

import sys

from pondlib.cli import main

sys.exit(main())
