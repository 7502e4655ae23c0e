"""RETECO on Codabench, the organizers' side, in two packages by who runs them:

- ``bundle``: what the organizers run to build the bundles (``reteco bundle``, ``make bundle``:
  the competition definition and leaderboard columns, the builder, the vendored wheels, the
  CodaLab Competitions v1.5 variant, the judge probe's bundle);
- ``check``: what the organizers run to check a bundle offline (``reteco check-bundle``: the
  unpacker's, competition, judge and exposure rules, upload storage, the simulated worker).

``check`` may import ``bundle``, never the reverse (``tests/test_house.py``). What runs on the
compute worker is the scorer's ``reteco.codabench.program``. ``chromium`` photographs pages
(``python -m reteco.workbench.commands.screenshots``, the browser tests).
"""
