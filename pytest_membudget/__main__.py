"""``python -m pytest_membudget``: the ``membudget`` command."""

import sys

from pytest_membudget.cli import main

sys.exit(main())
