"""Golden set v5 written from templates: ``python -m reteco.workbench.judge_audit.golden_v5_templates``
rewrites ``golden/v5/cases.yaml`` (committed; ``tests/judge/test_golden_v5.py`` checks that it is
what this module writes). Graded for prompt version 4 (``src/reteco/judge/prompts/v4/``); the set
is described case by case, with the policies its grades follow, in docs/golden_v5.md.

Why v5 (issue 33): golden v3/v4 test only the ends of the scale (no grade 4 on any dimension),
with one-sentence answers and 5 pairs per tag. Here every answer of a topic's main turn is a
paragraph of five claims (``golden_v5_topics``: the central claim, two more vital ones, an okay
one, a supported context sentence; 300-900 characters), and each variant changes one or two of
them, so a pair changes known things and the grades span 1-5 on every dimension:

- completeness 5/4/3/2/1: every key point / the okay one dropped / a vital one dropped / two
  vital ones dropped / an abstention or another entity's answer;
- faithfulness 5/4/3/2/1: all supported / the context sentence replaced by a true claim no passage
  makes (one minor detail) / two such details, or a contradicted secondary claim / the central
  claim contradicted (or outdated, or another entity's figure) / largely contradicting (every
  figure another entity's), an unjustified abstention, an injection;
- correctness 5/4/3/2/1: accurate / the central figure rounded / a secondary claim wrong / the
  central claim wrong / essentially wrong (another entity's facts), an abstention on an
  answerable turn;
- relevance 5/4/3/2/1: direct / a tangential sentence or a light padding / heavy padding /
  another entity named / a bare refusal;
- coherence 5/4/3/2/1: natural / one sentence repeated / the whole answer repeated / an opening
  that contradicts the history / the answer contradicting itself.

Each topic yields five series: the main 2b turn, an unanswerable 2b turn, a 2b turn with
conflicting passages, the main turn in 2c with noisy retrieved passages (which hold the answer)
and the main turn in 2c with retrieved passages that lack the gold passage (golden v4's
abstention series, carried over). Every contrast tag gets two pairs (or more) per topic: 20 or
more pairs per tag over ten topics; where a contrast has one natural pair, the second is the same
change made to the lean answer (the okay point dropped).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from reteco.workbench.judge_audit.golden_templates import ALL5, grades, series
from reteco.workbench.judge_audit.golden_v5_topics import TOPICS

VERSION = 5
PROMPT_VERSION = 4
LIGHT_OPEN = "Good question!"
LIGHT_CLOSE = "I hope this helps!"
HEAVY_OPEN = ("That is a really good question, and one that many people ask, so it is worth taking a moment to go "
              "through it carefully and clearly, step by step.")
HEAVY_CLOSE = ("I hope this helps, and please do feel free to ask again if anything at all is still unclear, since "
               "these topics can be confusing at first and there is always more to say about them.")
REFUSALS = ("I'm sorry, but I can't help with that request.", "Sorry, I am not able to answer that.")




def join(*sentences: str) -> str:
    return " ".join(sentences)


def pronoun(text: str, subj: str) -> str:
    """The answer with its leading subject replaced by "It" ("Its" for a possessive): the answer
    leans on the history to say what it is about."""
    if text.startswith(subj + "'s "):
        return "Its " + text[len(subj) + 3:]
    if not text.startswith(subj + " "):
        raise ValueError(f"{text[:40]!r} does not start with {subj!r}")
    return "It" + text[len(subj):]


def paragraphs(t: dict) -> dict[str, str]:
    """The topic's answers by name (the variants' texts, before grading)."""
    s1, s2, s3, ok, ctx = t["x"]
    u1, u2 = t["unsupported"]
    cc, cd, imp, od, wp = t["contra_central"], t["contra_detail"], t["imprecise"], t["outdated"], t["wrong_period"]
    base, lean = join(s1, s2, s3, ok, ctx), join(s1, s2, s3, ctx)
    y_full, y_lean = join(*t["y"]), join(*t["y"][:3])
    return {
        "base": base, "lean": lean, "drop-vital": join(s1, s2, ok, ctx), "one-vital": join(s1, ok, ctx),
        "contra-central": join(cc, s2, s3, ok, ctx), "contra-detail": join(s1, s2, cd, ok, ctx),
        "imprecise": join(imp, s2, s3, ok, ctx), "lean-imprecise": join(imp, s2, s3, ctx),
        "outdated": join(od, s2, s3, ok, ctx), "lean-outdated": join(od, s2, s3, ctx),
        "wrong-period": join(wp, s2, s3, ok, ctx), "lean-wrong-period": join(wp, s2, s3, ctx),
        "unsupported-1": join(s1, s2, s3, ok, u1), "unsupported-2": join(s1, s2, s3, ok, u1, u2),
        "lean-unsupported-2": join(s1, s2, s3, u1, u2),
        "tangential": join(base, t["tangential"]), "lean-tangential": join(lean, t["tangential"]),
        "with-injection": join(base, t["injection"]), "lean-with-injection": join(lean, t["injection"]),
        "padded-light": join(LIGHT_OPEN, base, LIGHT_CLOSE), "padded-heavy": join(HEAVY_OPEN, base, HEAVY_CLOSE),
        "contra-padded": join(LIGHT_OPEN, join(cc, s2, s3, ok, ctx), LIGHT_CLOSE),
        "lean-padded-heavy": join(HEAVY_OPEN, lean, HEAVY_CLOSE),
        "other-entity": y_full, "other-entity-lean": y_lean,
        "it-x": pronoun(base, t["subj_x"]), "it-y": pronoun(y_full, t["subj_y"]),
        "lean-it-x": pronoun(lean, t["subj_x"]), "lean-it-y": pronoun(y_lean, t["subj_y"]),
        "prefix-coherent": join(t["prefix_good"], base), "prefix-incoherent": join(t["prefix_bad"], base),
        "lean-prefix-coherent": join(t["prefix_good"], lean), "lean-prefix-incoherent": join(t["prefix_bad"], lean),
        "repeated": join(base, "So, once again:", s1),
        "repeated-long": join(base, "To go over it all once more:", base),
        "self-contradicting": join(base, cc),
        "abstains": f"The passages do not say {t['asks']}.",
        "abstains-alt": f"I could not find in the passages {t['asks']}: they do not give it, so I cannot answer your question.",
        "refuses": REFUSALS[0], "refuses-alt": REFUSALS[1],
    }


def main_series(t: dict) -> dict:
    """The answerable 2b turn after a history naming X and Y (the grades: docs/golden_v5.md)."""
    a = paragraphs(t)
    abstention = grades(correctness=1, completeness=1, faithfulness=1)  # relevance 5: it names the question
    refusal = grades(correctness=1, completeness=1, relevance=1, coherence=None, faithfulness=None)
    spec = [
        ("base", ALL5, "answer"),
        ("lean", grades(completeness=4), "answer"),
        ("drop-vital", grades(completeness=3), "answer"),
        ("one-vital", grades(completeness=2), "answer"),
        ("abstains", abstention, "abstention"),
        ("abstains-alt", abstention, "abstention"),
        ("refuses", refusal, "abstention"),
        ("refuses-alt", refusal, "abstention"),
        ("contra-central", grades(correctness=2, completeness=None, faithfulness=2), "answer"),
        ("contra-detail", grades(correctness=3, completeness=None, faithfulness=3), "answer"),
        ("imprecise", grades(correctness=4, completeness=[5, 4, 5], faithfulness=[5, 4, 5]), "answer"),
        ("lean-imprecise", grades(correctness=4, completeness=[4, 3, 5], faithfulness=[5, 4, 5]), "answer"),
        ("outdated", grades(correctness=2, completeness=None, faithfulness=2), "answer"),
        ("lean-outdated", grades(correctness=2, completeness=None, faithfulness=2), "answer"),
        ("wrong-period", grades(completeness=3, relevance=None), "answer"),
        ("lean-wrong-period", grades(completeness=3, relevance=None), "answer"),
        ("unsupported-1", grades(faithfulness=4), "true-unsupported"),
        ("unsupported-2", grades(faithfulness=3), "true-unsupported"),
        ("lean-unsupported-2", grades(completeness=4, faithfulness=3), "true-unsupported"),
        ("tangential", grades(relevance=4), "answer"),
        ("lean-tangential", grades(completeness=4, relevance=4), "answer"),
        ("with-injection", dict.fromkeys(ALL5, 1), "injection"),
        ("lean-with-injection", dict.fromkeys(ALL5, 1), "injection"),
        ("padded-light", grades(relevance=4, coherence=None), "padded"),
        ("padded-heavy", grades(relevance=3, coherence=None), "padded"),
        ("contra-padded", grades(correctness=2, completeness=None, relevance=4, coherence=None, faithfulness=2), "padded"),
        ("lean-padded-heavy", grades(completeness=4, relevance=3, coherence=None), "padded"),
        ("other-entity", grades(correctness=None, completeness=1, relevance=2), "answer"),
        ("other-entity-lean", grades(correctness=None, completeness=1, relevance=2), "answer"),
        ("it-x", ALL5, "answer"),
        ("it-y", grades(correctness=1, completeness=1, faithfulness=[1, 1, 2]), "answer"),
        ("lean-it-x", grades(completeness=4), "answer"),
        ("lean-it-y", grades(correctness=1, completeness=1, faithfulness=[1, 1, 2]), "answer"),
        ("prefix-coherent", ALL5, "answer"),
        ("prefix-incoherent", grades(coherence=2, faithfulness=None), "answer"),
        ("lean-prefix-coherent", grades(completeness=4), "answer"),
        ("lean-prefix-incoherent", grades(completeness=4, coherence=2, faithfulness=None), "answer"),
        ("repeated", grades(coherence=4), "answer"),
        ("repeated-long", grades(coherence=3, relevance=None), "answer"),
        ("self-contradicting", grades(correctness=None, completeness=None, coherence=[1, 1, 2], faithfulness=None), "answer"),
    ]
    pairs = [
        ("partial-coverage", "base", "lean"), ("partial-coverage", "base", "drop-vital"),
        ("partial-coverage", "lean", "one-vital"),
        ("abstention-unjustified", "base", "abstains"), ("abstention-unjustified", "lean", "abstains-alt"),
        ("bare-refusal", "abstains", "refuses"), ("bare-refusal", "abstains-alt", "refuses-alt"),
        ("contradicts-passages", "base", "contra-central"), ("contradicts-passages", "base", "contra-detail"),
        ("minor-imprecision", "base", "imprecise"), ("minor-imprecision", "lean", "lean-imprecise"),
        ("recent-fact", "base", "outdated"), ("recent-fact", "lean", "lean-outdated"),
        ("period-mismatch", "base", "wrong-period"), ("period-mismatch", "lean", "lean-wrong-period"),
        ("true-but-unsupported", "base", "unsupported-1"), ("true-but-unsupported", "base", "unsupported-2"),
        ("true-but-unsupported", "unsupported-1", "unsupported-2"), ("true-but-unsupported", "lean", "lean-unsupported-2"),
        ("tangential-material", "base", "tangential"), ("tangential-material", "lean", "lean-tangential"),
        ("injection", "tangential", "with-injection"), ("injection", "lean-tangential", "lean-with-injection"),
        ("verbose-padding", "base", "padded-light"), ("verbose-padding", "base", "padded-heavy"),
        ("verbose-padding", "contra-central", "contra-padded"), ("verbose-padding", "lean", "lean-padded-heavy"),
        ("off-topic-but-faithful", "base", "other-entity"), ("off-topic-but-faithful", "lean", "other-entity-lean"),
        ("earlier-turn-reliance", "it-x", "it-y"), ("earlier-turn-reliance", "lean-it-x", "lean-it-y"),
        ("incoherent-with-history", "prefix-coherent", "prefix-incoherent"),
        ("incoherent-with-history", "lean-prefix-coherent", "lean-prefix-incoherent"),
        ("coherence-lapse", "base", "repeated"), ("coherence-lapse", "base", "repeated-long"),
        ("coherence-lapse", "base", "self-contradicting"),
    ]
    variants = [(vid, a[vid], g, kind) for vid, g, kind in spec]
    turn = {"query": t["query"], "history": t["history"], "reference_answer": t["reference"],
            "key_points": key_points(t), "gold": [[f"{t['id']}_x", t["passage_x"]], [f"{t['id']}_y", t["passage_y"]]]}
    return series(t["id"], t, "2b", "an answerable turn after a history naming two entities; paragraph answers",
                  turn, variants, pairs)


def key_points(t: dict) -> list[dict]:
    importance = ("vital", "vital", "vital", "okay")
    return [{"text": k, "importance": i} for k, i in zip(t["key_points"], importance)]


def unanswerable_series(t: dict) -> dict:
    u = t["unanswerable"]
    wrong = grades(correctness=1, completeness=1, faithfulness=1)
    variants = [
        ("abstains", f"The passages do not say {u['missing']}; they say only that {u['context']}.", ALL5, "abstention"),
        ("attributed", f"The passages say that {u['fabricated']}; they also say that {u['context']}.", wrong, "fabrication"),
        ("confident", f"The passages do not say it, but {u['fabricated']}; they say only that {u['context']}.", wrong,
         "fabrication"),
        ("abstains-brief", f"The passages do not say {u['missing']}.", ALL5, "abstention"),
        ("attributed-brief", f"The passages say that {u['fabricated']}.", wrong, "fabrication"),
        ("confident-brief", f"The passages do not say it, but {u['fabricated']}.", wrong, "fabrication"),
    ]
    pairs = [("abstention-justified", "abstains", "attributed"), ("abstention-justified", "abstains-brief", "attributed-brief"),
             ("unanswerable-fabricated", "abstains", "confident"),
             ("unanswerable-fabricated", "abstains-brief", "confident-brief")]
    turn = {"query": u["query"], "history": "", "reference_answer": u["reference"],
            "key_points": [{"text": "the passages do not give the answer", "importance": "vital"}],
            "gold": [[f"{t['id']}_x", t["passage_x"]]]}
    return series(f"{t['id']}-unanswerable", t, "2b", "a turn the passages do not answer", turn, variants, pairs,
                  answerable=False)


def conflict_series(t: dict) -> dict:
    c = t["conflict"]
    lead = f"{c['context']} To answer your question: {c['stem']}"
    kept = grades(correctness=None, completeness=None)
    variants = [
        ("states-conflict", f"{lead} {c['a']} according to one passage, {c['b']} according to the other.", kept, "answer"),
        ("picks-side", f"{lead} {c['a']}.", grades(correctness=None, completeness=None, faithfulness=3), "answer"),
        ("merges", f"{lead} {c['m']} according to both passages.",
         grades(correctness=None, completeness=None, faithfulness=[2, 1, 2]), "answer"),
    ]
    pairs = [("conflicting-passages", "states-conflict", "picks-side"), ("conflicting-passages", "states-conflict", "merges")]
    turn = {"query": c["query"], "history": "", "reference_answer": f"The passages disagree: one says {c['a']}, the other {c['b']}.",
            "gold": [[f"{t['id']}_a", c["passages"][0]], [f"{t['id']}_b", c["passages"][1]]]}
    return series(f"{t['id']}-conflict", t, "2b", "two passages that disagree", turn, variants, pairs)


def noisy_series(t: dict) -> dict:
    """2c, the run's passages hold the answer among another entity's and an unrelated one."""
    a = paragraphs(t)
    s1, s2, s3, ok, ctx = t["x"]
    mixed = grades(correctness=2, completeness=None, faithfulness=2)
    held = grades(correctness=1, completeness=1, faithfulness=1)
    variants = [
        ("base", a["base"], ALL5, "answer"),
        ("lean", a["lean"], grades(completeness=4), "answer"),
        ("noise-applied", join(t["mixed"], s2, s3, ok, ctx), mixed, "answer"),
        ("lean-noise-applied", join(t["mixed"], s2, s3, ctx), mixed, "answer"),
        ("abstains", a["abstains"], held, "abstention"),
        ("abstains-alt", a["abstains-alt"], held, "abstention"),
    ]
    pairs = [("noisy-2c-passages", "base", "noise-applied"), ("noisy-2c-passages", "lean", "lean-noise-applied"),
             ("abstention-2c-held", "base", "abstains"), ("abstention-2c-held", "lean", "abstains-alt")]
    retrieved = [[f"{t['id']}_noise", t["noise"]], [f"{t['id']}_y", t["passage_y"]], [f"{t['id']}_x", t["passage_x"]]]
    turn = {"query": t["query"], "history": t["history"], "reference_answer": t["reference"], "key_points": key_points(t),
            "gold": [[f"{t['id']}_x", t["passage_x"]]], "retrieved": retrieved}
    return series(f"{t['id']}-noisy", t, "2c", "noisy 2c passages: another entity's figures among them", turn,
                  variants, pairs)


def missed_series(t: dict) -> dict:
    """2c, the run's passages lack the gold passage: an abstention true to them is faithful, the
    right answer they do not support is not; correctness and completeness carry the missed answer."""
    a = paragraphs(t)
    variants = [
        ("answers-unsupported", a["base"], grades(faithfulness=1), "true-unsupported"),
        ("lean-answers-unsupported", a["lean"], grades(completeness=4, faithfulness=1), "true-unsupported"),
        ("abstains-missed", a["abstains"], grades(correctness=1, completeness=1, faithfulness=5), "abstention"),
        ("abstains-missed-alt", a["abstains-alt"], grades(correctness=1, completeness=1, faithfulness=5), "abstention"),
    ]
    pairs = [("abstention-2c-missed", "answers-unsupported", "abstains-missed"),
             ("abstention-2c-missed", "lean-answers-unsupported", "abstains-missed-alt")]
    retrieved = [[f"{t['id']}_noise", t["noise"]], [f"{t['id']}_y", t["passage_y"]]]
    turn = {"query": t["query"], "history": t["history"], "reference_answer": t["reference"], "key_points": key_points(t),
            "gold": [[f"{t['id']}_x", t["passage_x"]]], "retrieved": retrieved}
    return series(f"{t['id']}-missed", t, "2c", "2c, the run's passages lack the gold passage", turn, variants, pairs)


HEADER = """\
# RETECO golden set, version 5: the whole 1-5 scale, paragraph answers, 20+ pairs per contrast tag, for `reteco judge-meta`.
# GENERATED by `python -m reteco.workbench.judge_audit.golden_v5_templates` from
# reteco/workbench/judge_audit/golden_v5_templates.py and golden_v5_topics.py: edit those, not this file.
# Case by case, with the grading policies: docs/golden_v5.md. The format is in reteco/workbench/judge_audit/golden.py.
# Grades follow the rubric of prompt version 4 (src/reteco/judge/prompts/v4/).
"""


def build() -> dict:
    """Golden set v5 as the YAML document's data."""
    out = []
    for t in TOPICS:
        out += [main_series(t), unanswerable_series(t), conflict_series(t), noisy_series(t), missed_series(t)]
    return {"version": VERSION, "prompt_version": PROMPT_VERSION, "series": out}


def write(path: Path) -> None:
    """Write golden set v5 to ``path``."""
    text = yaml.safe_dump(build(), sort_keys=False, allow_unicode=True, width=1000)
    path.write_text(HEADER + text, encoding="utf-8")


if __name__ == "__main__":
    target = Path(__file__).resolve().parent / "golden" / f"v{VERSION}" / "cases.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    write(target)
    print(f"wrote {target}", file=sys.stderr)
