"""`python -m goenv`: the goenv command line."""

import sys

from goenv.cli import main

sys.exit(main())
