"""The Codabench bundle: leaderboard definitions, competition.yaml, build and offline check.

- ``leaderboards``: the leaderboard columns, built from the sub-track table (``reteco.subtracks``,
  the one place the scores.json keys and which of them may be absent are defined).
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
- ``scoring_program``: the scoring program's body; the ``detailed_results.html`` page it writes is
  ``reteco.outputs.detailed_results``.
- ``judge_probe`` and ``judge_probe_bundle``: ``reteco judge-probe``, a small competition whose
  scoring program reports whether the judge's endpoint answers from the worker.
- ``exposure_rules``: check-bundle's ``[exposure]`` rules (what participants can reach of the
  reference data).
"""
