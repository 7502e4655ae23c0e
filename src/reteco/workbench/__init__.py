"""The organizers' workbench: every tool that runs on the organizers' side, cut by workflow.

The scorer (``formats``, ``metrics``, ``llm``, the judge's runtime ``judge``, ``scoring``,
``outputs``, ``release``, ``codabench.program``, ``api``, ``commands``) is what scores one
submission, wherever it runs: the scoring program on Codabench's worker, the starting kit, the
CLI, the Python API. It never imports the workbench; the bundles' ``vendor/`` and the starting
kit carry the scorer alone. The workbench imports the scorer, and each slice imports only the
slices listed before it (``SLICES``; ``tests/test_house.py`` checks both rules):

- ``labels``: pool, label with an LLM, review and freeze Track 1's temporal labels and a
  relevance round's graded labels (``reteco pool``, ``label-temporal``, ``relevance-pool``,
  ``label-relevance``, ``label-export``, ``label-import``);
- ``judge_audit``: the judge's audit and disclosure: golden sets and their meta-evaluation, the
  cost estimate, the human-rating sample and its annotators' guide, re-judging, the judge report,
  the agreement page (``reteco judge-meta``, ``human-sample``, ``judge-report``, ``agreement``);
- ``leaderboard``: a phase's submissions ranked with their significance, intervals, topic-set
  stability, human-corrected figures and the relevance round's effect, as JSON, CSV, HTML,
  LaTeX and plots; judging a phase's bulk download (``reteco leaderboard``, ``judge-submissions``);
- ``codabench``: the bundle builder and the offline checker (``reteco bundle``,
  ``check-bundle``, ``judge-probe``), and the headless Chromium client that photographs pages;
- ``commands``: the workbench's subcommands of ``reteco`` (listed by ``reteco.commands.COMMANDS``
  by module name, so the CLI offers them only where the workbench is installed).
"""

#: The slices in order: each may import the scorer and the slices before it, never one after it.
SLICES = ("labels", "judge_audit", "leaderboard", "codabench", "commands")
