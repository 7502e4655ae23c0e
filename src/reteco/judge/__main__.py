"""``python -m reteco.judge freeze N | check N``: freeze or verify a prompt version."""

import sys

from reteco.judge.prompts import _main

sys.exit(_main())
