"""The organizers' workflow that freezes Track 1 temporal labels: pool, label, review.

    reteco pool --ref REF/1a --release RELEASE --out pool.jsonl RUN...     # pairs without a label
    reteco label-temporal --ref REF/1a --pool pool.jsonl                   # LLM verdicts, appended
    reteco label-export --ref REF/1a --out review.csv                      # for human review
    reteco label-import --ref REF/1a --csv review.csv --reviewer NAME      # overrides, recorded
    reteco score --ref REF/1a --res RUN --out OUT                          # uses the frozen labels

File formats: ``reteco.formats.temporal_labels`` (labels), ``pool`` (pool file), ``review``
(CSV). The CLI wires the commands with ``add_pool_parser``, ``add_label_temporal_parser``,
``add_label_export_parser`` and ``add_label_import_parser`` (each takes the subparsers object of
an argparse parser and sets ``func``).
"""

from reteco.commands.temporal_labels import (
    add_label_export_parser,
    add_label_import_parser,
    add_pool_parser,
    cmd_label_export,
    cmd_label_import,
    cmd_pool,
)
from reteco.organizers.temporal_labelling.label import (
    add_label_temporal_parser,
    cmd_label_temporal,
    label_pool,
)
from reteco.organizers.temporal_labelling.pool import pool_runs, read_pool, write_pool
from reteco.organizers.temporal_labelling.review import export_csv, import_csv

__all__ = [
    "add_label_export_parser",
    "add_label_import_parser",
    "add_label_temporal_parser",
    "add_pool_parser",
    "cmd_label_export",
    "cmd_label_import",
    "cmd_label_temporal",
    "cmd_pool",
    "export_csv",
    "import_csv",
    "label_pool",
    "pool_runs",
    "read_pool",
    "write_pool",
]
