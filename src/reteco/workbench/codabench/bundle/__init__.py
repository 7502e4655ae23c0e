"""The bundle builder, run by the organizers: ``reteco bundle`` (``make bundle``).

- ``competition``: the competition itself (phases, dates, limits, visibility, tasks, fact sheet,
  pages) and its rendering as ``competition.yaml`` for either layout (one competition per
  sub-track, the default, or one with five tasks per phase, which loses entries).
- ``leaderboards``: the leaderboard columns, built from the sub-track table (``reteco.subtracks``,
  the one place the scores.json keys and which of them may be absent are defined).
- ``builder``: the bundle zips (pages, programs, reference data, solutions, starting kit).
- ``vendor``: the wheels the scoring program carries for what the worker's image lacks.
- ``input_data``: the input data of code submissions (the release without labels).
- ``codalab`` and ``page_markdown``: the CodaLab Competitions v1.5 variant (docs/codalab.md).
- ``judge_probe_bundle``: the judge probe's small competition (``reteco judge-probe``).

It imports the scoring program's package (``reteco.codabench.program``: the judge setup it
writes, the image it targets), never the checker.
"""
