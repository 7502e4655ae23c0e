"""The starting kit's BM25 baseline as a RETECO code submission.

The ingestion program calls ``run(input_dir, output_dir, subtrack, split)``: ``input_dir`` is the
split's release files without labels (the organizers' layout), ``output_dir`` receives what a
results submission holds. Zip this folder with ``reteco_baseline.py`` beside this file and the
pure-Python packages it needs (bm25s) in ``vendor/`` (the starting kit's README, "Code
submissions", shows the commands; ``reteco bundle --code-submission`` builds the same zip as a
solution). numpy and scipy come with the platform's image, reteco with the ingestion program.
"""

from pathlib import Path

from reteco_baseline import run_baseline


def run(input_dir: Path, output_dir: Path, subtrack: str, split: str) -> None:
    # Writes output_dir/<subtrack>/run.txt (and answers.jsonl): the scoring program reads that folder.
    run_baseline(Path(input_dir), split, Path(output_dir), [subtrack], progress=False)
