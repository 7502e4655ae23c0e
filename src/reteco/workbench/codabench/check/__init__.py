"""The offline checker, run by the organizers: ``reteco check-bundle BUNDLE.zip``.

- ``check_bundle``: the command's body and its report (``check_report``).
- Static rules: ``unpacker_rules`` (files, logo (``logo_image``), programs, tasks, solutions,
  fact sheet; ``bundle_paths``), ``competition_rules`` (phases, time limit, visibility,
  submission rule and lost entries, columns), ``judge_rules`` (the judge's setup: who sees the
  key), ``exposure_rules`` (what participants can reach of the reference data), and
  ``upload_storage`` (what one upload stores).
- ``scoring_check``: every solution of every task through the simulated compute worker
  (``worker_simulation``); ``codalab_rules`` and ``codalab_worker`` for CodaLab Competitions v1.5.

It reads the builder's definitions (``reteco.workbench.codabench.bundle``) and the scoring program's
formats (``reteco.codabench.program``); neither imports it.
"""
