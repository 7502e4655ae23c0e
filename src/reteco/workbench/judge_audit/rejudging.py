"""How stable the judge's verdicts are: a seeded subset of the judged answers judged again, by
the same judge with another sampling seed (``reteco judge-submissions --repeat-seed``) or by a
second judge configuration (``--second-judge-config``).

The subset is ``reteco.workbench.judge_audit.human_sample``'s stratified sample (domain x turn depth x
system, seeded by the repeat seed) of the answered (system, turn) items of the judged
submissions, ``share`` of them (at least one), judged on every dimension. Both sides are run
through ``reteco.judge.runner.run_judge`` with the same items generation scoring builds, so the
first judge's verdicts come from its cache (paid once, when the submissions were scored) and
the repeat's are cached under its own signature: a rerun pays for nothing it already has.

The repeat is ``dataclasses.replace(config, seed=S)``: the seed is part of the judge's
``signature`` (``reteco.judge.config``), so the repeat is another judge to the cache, which
cannot answer it with the first run's verdicts. At temperature 0 the figures measure the
server's nondeterminism; above it, the sampling's too.

The comparison is ``reteco.metrics.agreement.agreement`` with ``reference="judge"`` (two judges:
nothing calls either side humans): per dimension exact agreement, kappa, correlations, bias
(repeat minus first is ``-bias``), each with a bootstrap interval over conversations, and at
system level Kendall's tau-b and tau_AP (``reteco.metrics.rank_agreement``; positions from the
first judging, correctness from the repeat or the second judge) per dimension and for
judge_mean. The file written (``rejudging_<sub>.json`` or ``second_judge_<sub>.json``) is that
result with ``kind``, both signatures, the seed and the share in ``method`` (its format:
docs/organizers.md).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from reteco.formats.ratings import Rating, Ratings
from reteco.formats.reference import Reference
from reteco.formats.turns import read_turns
from reteco.metrics.agreement import DEFAULT_RESAMPLES, agreement
from reteco.metrics.rank_agreement import figure_text
from reteco.problems import InputError, UsageError
from reteco.subtracks import DIMENSIONS
from reteco.workbench.judge_audit.human_sample import judge_ratings, read_systems, sample

DEFAULT_SHARE = 0.1
KINDS = {"repeat": "rejudging", "second_judge": "second_judge"}


def repeat_config(config, seed: int):
    """The same judge with another sampling seed: another signature (module docstring)."""
    if config.seed == seed:
        raise UsageError(f"--repeat-seed {seed} is the judge config's own seed: the repeat would be the same judge "
                         "(its verdicts would come from the cache); choose another seed")
    return dataclasses.replace(config, seed=seed)


def rejudge(reference_dir: Path, paths: list[Path], first, other, *, kind: str, share: float, seed: int,
            cache_dir: Path | None, progress: bool = False, resamples: int = DEFAULT_RESAMPLES,
            names: list[str] | None = None) -> dict:
    """Judge the seeded subset of the submissions ``paths`` by ``first`` (from its cache) and by
    ``other`` (the repeat or the second judge), and compare them (module docstring); returns the
    JSON-ready result. ``kind``: "repeat" or "second_judge"; ``names``: the systems' names (a
    bulk download's owners), else from the paths."""
    reference = Reference.read(reference_dir)
    systems, _ = read_systems(reference, paths, names)
    turns = len(read_turns(reference))
    answered = sum(1 for s in systems for i in range(turns) if s.answers.get(i) is not None)
    n = max(1, round(share * answered))
    items, _ = sample(reference, systems, n, seed)
    # The dimensions both judges' prompt versions ask that ratings know (the table's), in its order.
    dimensions = [d for d in DIMENSIONS if all(d in c.prompts.dimension_names for c in (first, other))]
    if not dimensions:
        raise InputError(f"judges {first.signature} and {other.signature} share no dimension to compare", "judge-submissions")
    sides = []
    for config in (first, other):
        rows, counts, stats = judge_ratings(reference, items, dimensions, config, cache_dir, None, progress=progress)
        sides.append((config, rows, counts))
    for config, rows, counts in sides:
        if not rows:
            statuses = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
            raise InputError(f"judge {config.model}@{config.signature} gave no verdict on the {n} items ({statuses}): "
                             "nothing to compare", "judge-submissions")
    where = {item.item_id: item for item in items}
    ratings = [
        Ratings(f"{config.model}@{config.signature}", tuple(
            Rating(item_id, where[item_id].conversation_id, dimension, rater, score, where[item_id].system, line)
            for line, (item_id, dimension, rater, score) in enumerate(rows, 1)), True)
        for config, rows, _ in sides
    ]
    result = agreement(ratings[0], ratings[1], seed=seed, resamples=resamples, reference="judge")
    (first_config, _, first_counts), (other_config, _, other_counts) = sides
    result["kind"] = KINDS[kind]
    result["method"].update({
        "judge_signature": first_config.signature,
        "second_judge_signature": other_config.signature,
        "what": ("the same judge with another sampling seed (a separate signature)" if kind == "repeat"
                 else "a second judge configuration"),
        "subset": f"reteco.workbench.judge_audit.human_sample's stratified sample, seed {seed}, {n} of {answered} answered items",
        "subset_seed": seed,
        "share": share,
        "items_sampled": n,
        "items_answered": answered,
        "verdicts_first": dict(first_counts),
        "verdicts_second": dict(other_counts),
    })
    if kind == "repeat":
        result["method"]["repeat_seed"] = other_config.seed
    return result


def summary_lines(result: dict, label: str) -> list[str]:
    """The console's lines: per dimension exact agreement, then the system rankings' tau."""
    method = result["method"]
    who = "re-judging (same judge, another seed)" if result["kind"] == "rejudging" else "two judges"
    lines = [f"{label}: {who}: {method['judge_signature']} vs {method['second_judge_signature']}, "
             f"{method['items_sampled']} of {method['items_answered']} answered items"]
    for dimension, block in result["dimensions"].items():
        lines.append(f"{label}:   {dimension:<13} exact {figure_text(block['exact'])}  "
                     f"kappa {figure_text(block['kappa_quadratic'])}")
    level = result.get("system_level", {})
    blocks = {**level.get("dimensions", {}), **({"judge_mean": level["judge_mean"]} if "judge_mean" in level else {})}
    for name, block in blocks.items():
        note = block.get("interval_note")
        lines.append(f"{label}:   systems {name:<13} tau_b {figure_text(block['kendall_tau_b'], note)}  "
                     f"tau_AP {figure_text(block['tau_ap'], note)}" + (f" ({note})" if note else ""))
    return lines
