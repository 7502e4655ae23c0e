"""What judging a phase will cost, from its reference folder, before any submission exists.

``estimate_phase`` builds the judge items one submission of a 2b/2c phase would make (every
reference turn answered, on the five dimensions) and counts them with
``reteco.workbench.judge_audit.estimate.estimate_judging``, then scales to the expected number of submissions.
A submission's answers are not known yet, so each turn's answer is its reference answer, a
stand-in of the right kind of length; 2b's passages are the gold ones (as scoring gives them), and
2c's the turn's gold passages followed by other passages of the same reference up to the run's
top 5 (a run's own top 5 are as long as any passages of the collection). Used by
``reteco judge-submissions --estimate``.
"""

from __future__ import annotations

from pathlib import Path

from reteco.formats.passages import PassageStore, PassageTexts
from reteco.formats.reference import PASSAGES, Reference
from reteco.formats.turns import read_turns
from reteco.scoring.generation import TOP_K_2C
from reteco.scoring.judge_run import judge_items
from reteco.subtracks import RUN


def phase_items(reference: Reference, dimensions: tuple[str, ...] | None = None) -> list:
    """The judge items of one submission answering every turn of ``reference`` (module docstring),
    on ``dimensions`` (the judge's prompt version's; None: the sub-track rows')."""
    turns = read_turns(reference)
    store = PassageStore(reference.root / PASSAGES)
    try:
        texts = PassageTexts(store)
        gold = [texts.of(t.domain, list(t.gold_doc_ids)) for t in turns]
    finally:
        store.close()
    pool = [p for passages in gold for p in passages]
    items = []
    for i, turn in enumerate(turns):
        evidence = gold[i]
        if reference.row.evidence == RUN:  # the run's top documents: the gold ones and others
            others = [p for p in pool[i:] + pool[:i] if p not in gold[i]]
            evidence = (*gold[i], *others)[:TOP_K_2C]
        items += judge_items(turn, turn.answer, evidence, gold[i], *(() if dimensions is None else (dimensions,)))
    return items


def estimate_phase(reference_dir: Path, config, submissions: int):
    """The estimate (``reteco.workbench.judge_audit.estimate.Estimate``) for ``submissions`` submissions of the
    phase whose reference folder is ``reference_dir``; and the figures of one submission."""
    from reteco.workbench.judge_audit.estimate import estimate_judging

    one = estimate_judging(phase_items(Reference.read(Path(reference_dir)), config.prompts.dimension_names), config)
    return one.scaled(submissions), one
