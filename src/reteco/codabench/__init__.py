"""The Codabench bundle: leaderboard definitions, competition.yaml, build and offline check.

- ``leaderboards``: the scores.json keys of every sub-track (the one place they are defined),
  which of them may be legitimately absent, and the leaderboard columns built from them.
- ``definition``: the competition itself (phases, dates, limits, tasks, fact sheet, pages) and
  its rendering as ``competition.yaml`` for either layout (one competition, or one per
  sub-track).
- ``image``: what the compute worker's Docker image provides, and the Python it runs.
- ``vendor``: the wheels the scoring program carries for what that image lacks.
- ``builder``: ``reteco bundle`` (``make bundle``).
- ``checker`` and ``worker``: ``reteco check-bundle``, the unpacker's rules and a simulated
  compute worker.
- ``detailed_results``: the ``detailed_results.html`` page the scoring program writes.
"""
