"""The Codabench bundle: leaderboard definitions, competition.yaml, build and offline check.

- ``leaderboards``: the scores.json keys of every sub-track (the one place they are defined),
  which of them may be legitimately absent, and the leaderboard columns built from them.
- ``competition``: the competition itself (phases, dates, limits, visibility, tasks, fact sheet,
  pages) and its rendering as ``competition.yaml`` for either layout (one competition per
  sub-track, the default, or one with five tasks per phase, which loses entries).
- ``image``: what the compute worker's Docker image provides, and the Python it runs.
- ``vendor``: the wheels the scoring program carries for what that image lacks.
- ``builder``: ``reteco bundle`` (``make bundle``).
- ``check_bundle``: ``reteco check-bundle``; its static rules are ``unpacker_rules`` (files,
  logo, programs, tasks, solutions, fact sheet) and ``competition_rules`` (phases, time limit,
  visibility, submission rule and lost entries, columns), ``upload_storage`` counts what one
  upload stores, and ``scoring_check`` runs every solution through ``worker_simulation``.
- ``detailed_results``: the ``detailed_results.html`` page the scoring program writes.
"""
