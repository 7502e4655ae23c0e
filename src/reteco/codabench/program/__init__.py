"""What runs on Codabench's compute worker, once per submission, and what it reads there.

- ``scoring_program``: the scoring program's body (``scoring_program/score.py`` is its entry
  point); the ``detailed_results.html`` page it writes is ``reteco.outputs.detailed_results``.
- ``judge_setup``: the judge's setup in a phase's reference data (``judge/``), read and verified
  here; the bundle builder writes it with the same module, so writer and reader share one format.
- ``judge_plan``: when judging must end for the run to finish within the phase's time limit.
- ``judge_probe``: the judge probe's scoring program (``reteco judge-probe``), standard library only.
- ``image``: the worker's Docker image the programs run in (what it provides, the Python).

Nothing here imports the builder (``reteco.workbench.codabench.bundle``) or the checker
(``reteco.workbench.codabench.check``): the worker loads only what scoring needs (``tests/test_house.py``).
"""
