"""``python -m mhattn.train``: train the induction model from a terminal (see :mod:`mhattn.learn.cli`)."""

import sys

from .learn.cli import main

if __name__ == "__main__":
    sys.exit(main())
