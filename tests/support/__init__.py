"""What the tests share and the bench scripts import: the oracles and the helpers, no test.

The oracles are independent of ``reteco``: ``independent_scorer`` (the retrieval rules and
metrics written again, plainly) and ``fake_openai_server`` (a real HTTP server on 127.0.0.1
speaking enough of the OpenAI API). The helpers build inputs (``tiny_track2``,
``bundle_edits``, ``detailed_results_samples``, ``judged_program``), run commands
(``terminal``, ``hostile_harness``) and say where things are (``paths``).

pytest puts ``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml), so tests import
``support.<module>``; a bench script inserts ``tests/`` itself and imports the same names.
Pytest fixtures are not here: they are in the conftest.py files.
"""
