"""RETECO on Codabench, in three packages by who runs them:

- ``program``: what runs on the compute worker for each submission (the scoring program's body,
  the judge's setup it reads and the deadline it keeps, the judge probe's program, the worker's
  image);
- ``bundle``: what the organizers run to build the bundles (``reteco bundle``, ``make bundle``:
  the competition definition and leaderboard columns, the builder, the vendored wheels, the
  CodaLab Competitions v1.5 variant, the judge probe's bundle);
- ``check``: what the organizers run to check a bundle offline (``reteco check-bundle``: the
  unpacker's, competition, judge and exposure rules, upload storage, the simulated worker).

Each imports only those listed before it (``tests/test_house.py``): the worker loads nothing of
the builder or the checker. The Codabench entry points themselves are the repository's
``scoring_program/score.py`` (thin over ``program.scoring_program``) and
``ingestion_program/ingestion.py``.
"""
