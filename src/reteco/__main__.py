"""``python -m reteco``: the ``reteco`` command."""

import sys

from reteco.commands import main

sys.exit(main())
