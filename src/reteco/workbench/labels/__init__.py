"""The organizers' workflow that freezes labels: pool, label, review. Two kinds of label share
it (one label store, ``reteco.formats.label_store``): Track 1's temporal labels (below) and a
relevance round's graded labels (``relevance``: ``reteco relevance-pool``, ``label-relevance``,
``label-export --kind relevance``, ``label-import --kind relevance``).

    reteco pool --ref REF/1a --release RELEASE --out pool.jsonl RUN...     # pairs without a label
    reteco label-temporal --ref REF/1a --pool pool.jsonl                   # LLM verdicts, appended
    reteco label-export --ref REF/1a --out review.csv                      # for human review
    reteco label-import --ref REF/1a --csv review.csv --reviewer NAME      # overrides, recorded
    reteco score --ref REF/1a --res RUN --out OUT                          # uses the frozen labels

File formats: ``reteco.formats.temporal_labels`` (labels), ``pool`` (pool file), ``review``
(CSV). The commands are ``reteco.workbench.commands.temporal_labels``.
"""

from reteco.workbench.labels.label import label_pool
from reteco.workbench.labels.pool import pool_runs, read_pool, write_pool
from reteco.workbench.labels.review import export_csv, import_csv

__all__ = [
    "export_csv",
    "import_csv",
    "label_pool",
    "pool_runs",
    "read_pool",
    "write_pool",
]
