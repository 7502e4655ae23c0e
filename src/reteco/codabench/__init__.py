"""RETECO on Codabench, the part that runs on the compute worker for each submission
(``program``: the scoring program's body, the judge's setup it reads and the deadline it keeps,
the judge probe's program, the worker's image). The Codabench entry points themselves are the
repository's ``scoring_program/score.py`` (thin over ``program.scoring_program``) and
``ingestion_program/ingestion.py``. The organizers' builder and checker are the workbench's
(``reteco.workbench.codabench``).
"""
