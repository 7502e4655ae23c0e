"""``python -m reteco.tracks.judge freeze N | check N``: freeze or verify a prompt version."""

import sys

from reteco.tracks.judge.prompting import _main

sys.exit(_main())
