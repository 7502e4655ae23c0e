"""Golden cases: hand-written answers whose grades their authors intended, to check the judge.

Two versions are packaged; both stay readable.

Version 1 (``golden/cases.jsonl``, read by ``reteco judge --golden``): 17 extreme cases, one
JSON object per line: ``{"id", "purpose", "expect": {"min", "max"}, "item": <JudgeItem>}``.
A case passes when the judge's score is in [min, max].

Version 2 (``golden/v2/cases.yaml``, read by ``reteco judge-meta``; thresholds in
``golden/v2/thresholds.yaml``): graded cases, most of them in minimal pairs and series. The
file is a list of series; a series is one turn and several answers to it (variants):

    version: 2
    series:
    - id: japan-entry                  # the series (pair) id
      domain: travel                   # the turn's domain (the item key's prefix)
      subtrack: 2b                     # 2b: the system had the gold passages; 2c: `retrieved`
      purpose: what the series tests
      turn:
        query: ...                     # the user's current turn
        history: ...                   # the dialogue before it ("" for a first turn)
        reference_answer: ...          # says "the passages do not say ..." on an unanswerable turn
        gold: [[doc_id, text], ...]    # the turn's gold passages (correctness, completeness)
        retrieved: [[doc_id, text], ...]   # 2c only: the run's top passages (faithfulness)
      variants:
      - id: base                       # the first variant is the series' base
        answer: ...
        grades: {correctness: 5, completeness: [4, 3, 5], ...}
      - id: one-point
        varies: completeness           # a minimal pair with the base: only completeness changes
        answer: ...
        grades: {completeness: 2}
        injection: false               # true: the answer tries to steer the judge (default false)

A grade is ``N`` (the intended grade; allowed range N-1..N+1, within 1..5) or ``[N, LOW,
HIGH]``. A variant with ``varies: D`` takes the base's grades on every other dimension (so
the pair differs in D alone, by construction) and must give D's grade, different from the
base's; any other variant gives its grades explicitly, only on the dimensions where an
intended grade can be defended.

Each (variant, graded dimension) is one ``GoldenCase``: ``id`` (``series/variant/dimension``),
``item.dimension``, ``grade`` (intended), ``min_score``..``max_score`` (allowed range),
``series`` (the pair/series id), ``variant``, ``varies`` (the one dimension the variant changes
against the base, or None), ``injection`` (whether the judge must flag it), ``base`` (the
series' base variant) and ``item`` (the JudgeItem: the turn's query, history and reference
answer, ``gold_evidence`` the gold passages, ``evidence`` the gold passages in 2b or the
retrieved ones in 2c, and the variant's answer). ``reteco.judge.meta_evaluation`` computes,
per dimension, how well a judge's scores follow the intended grades.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reteco.judge.items import DIMENSIONS, OK, JudgeItem, JudgeOutcome, item_from_json
from reteco.subtracks import JUDGED_SUBTRACK_IDS, RUN, SUBTRACKS

GOLDEN_ROOT = Path(__file__).resolve().parent / "golden"
PACKAGED_CASES = GOLDEN_ROOT / "cases.jsonl"  # version 1
LATEST_GOLDEN = 2
CASES_FILE = "cases.yaml"
THRESHOLDS_FILE = "thresholds.yaml"


@dataclass(frozen=True)
class GoldenCase:
    """One item, the score range a reasonable judge gives it and, from version 2 on, the
    intended grade and the series it belongs to (see the module docstring)."""

    id: str
    purpose: str
    item: JudgeItem
    min_score: int = 1
    max_score: int = 5
    grade: int | None = None
    series: str = ""
    variant: str = ""
    varies: str | None = None
    injection: bool = False
    base: str = ""


@dataclass(frozen=True)
class GoldenResult:
    """A case, the judge's outcome, and whether the score is in range (a non-ok outcome fails)."""

    case: GoldenCase
    outcome: JudgeOutcome

    @property
    def passed(self) -> bool:
        o = self.outcome
        return o.status == OK and o.score is not None and self.case.min_score <= o.score <= self.case.max_score


def golden_dir(version: int, root: Path = GOLDEN_ROOT) -> Path:
    """The folder of golden set ``version`` (2 on): its cases and its thresholds."""
    return Path(root) / f"v{version}"


def load_golden_set(version: int = LATEST_GOLDEN, root: Path = GOLDEN_ROOT) -> list[GoldenCase]:
    """The cases of golden set ``version`` (1: ``cases.jsonl``; 2 on: ``v<N>/cases.yaml``).

    Raises ValueError naming the file (and the series and variant) when it is malformed.
    """
    if version == 1:
        return load_golden_cases(Path(root) / PACKAGED_CASES.name)
    path = golden_dir(version, root) / CASES_FILE
    if not path.is_file():
        raise ValueError(f"golden set {version}: no file {path}")
    return read_golden_series(path, version)


def load_golden_cases(path: Path = PACKAGED_CASES) -> list[GoldenCase]:
    """Read a version-1 cases file (one JSON object per line: id, purpose, expect {min, max}, item).

    Version 1's items had one set of passages (the gold ones); it is also their
    ``gold_evidence``, so a version-2 prompt shows correctness the same passages.
    """
    cases = []
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            obj = json.loads(line)
            try:
                expect = obj.get("expect", {})
                item = item_from_json(obj["item"])
                if not item.gold_evidence:
                    item = JudgeItem(**{**item.__dict__, "gold_evidence": item.evidence})
                cases.append(GoldenCase(obj["id"], obj.get("purpose", ""), item,
                                        int(expect.get("min", 1)), int(expect.get("max", 5))))
            except (KeyError, ValueError) as exc:
                raise ValueError(f"{path}:{n}: {exc}") from None
    return cases


def read_golden_series(path: Path, version: int) -> list[GoldenCase]:
    """Expand a version-2 series file into its cases (series order, then variants, then
    ``DIMENSIONS`` order), checking it as the module docstring says."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != version or not isinstance(data.get("series"), list):
        raise ValueError(f"{path}: expected a mapping with 'version: {version}' and a list 'series'")
    cases: list[GoldenCase] = []
    seen: set[str] = set()
    for n, series in enumerate(data["series"], 1):
        where = f"{path}: series {n}"
        try:
            sid = _text(series, "id")
            where = f"{path}: series {sid!r}"
            if sid in seen:
                raise ValueError("the id is used twice")
            seen.add(sid)
            cases.extend(_series_cases(series, sid))
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"{where}: {_message(exc)}") from None
    return cases


def _series_cases(series: Mapping[str, Any], sid: str) -> list[GoldenCase]:
    domain, subtrack = _text(series, "domain"), _text(series, "subtrack")
    if subtrack not in JUDGED_SUBTRACK_IDS:
        raise ValueError(f"subtrack must be one of {', '.join(JUDGED_SUBTRACK_IDS)}")
    turn = series["turn"]
    gold = _pairs(turn, "gold")
    if not gold:
        raise ValueError("turn.gold: at least one gold passage")
    if SUBTRACKS[subtrack].evidence == RUN:
        evidence = _pairs(turn, "retrieved")
    elif "retrieved" in turn:
        raise ValueError("turn.retrieved: only a 2c turn has retrieved passages (2b's are the gold ones)")
    else:
        evidence = gold
    variants = series["variants"]
    if not isinstance(variants, list) or len(variants) < 2:
        raise ValueError("a series has at least two variants")
    base_grades: dict[str, tuple[int, int, int]] = {}
    base_id = ""
    out: list[GoldenCase] = []
    ids: set[str] = set()
    for k, variant in enumerate(variants):
        vid = _text(variant, "id")
        if vid in ids:
            raise ValueError(f"variant {vid!r}: the id is used twice")
        ids.add(vid)
        try:
            grades = {d: _grade(g) for d, g in _mapping(variant, "grades").items()}
            unknown = sorted(set(grades) - set(DIMENSIONS))
            if unknown:
                raise ValueError(f"grades: unknown dimension(s) {', '.join(unknown)}")
            varies = variant.get("varies")
            if k == 0:
                if varies is not None:
                    raise ValueError("the first variant is the base: it cannot vary")
                base_grades, base_id = grades, vid
            elif varies is not None:
                if varies not in base_grades:
                    raise ValueError(f"varies: {varies!r} is not a dimension the base is graded on")
                if set(grades) != {varies}:
                    raise ValueError(f"a variant that varies {varies} gives its grade alone (the others are the base's)")
                if grades[varies][0] == base_grades[varies][0]:
                    raise ValueError(f"varies {varies}, but its intended grade is the base's")
                grades = {**base_grades, **grades}
            if not grades:
                raise ValueError("grades: at least one dimension")
            injection = variant.get("injection", False)
            if not isinstance(injection, bool):
                raise ValueError("injection must be true or false")
            answer = _text(variant, "answer")
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"variant {vid!r}: {_message(exc)}") from None
        for d in DIMENSIONS:
            if d not in grades:
                continue
            grade, low, high = grades[d]
            item = JudgeItem(
                key=f"{domain}/golden_{sid}_{vid}",
                dimension=d,
                query=_text(turn, "query"),
                history=_text(turn, "history", required=False),
                answer=answer,
                evidence=evidence,
                reference_answer=_text(turn, "reference_answer"),
                gold_evidence=gold,
            )
            out.append(GoldenCase(
                id=f"{sid}/{vid}/{d}", purpose=str(series.get("purpose", "")), item=item, min_score=low,
                max_score=high, grade=grade, series=sid, variant=vid, varies=varies, injection=injection, base=base_id,
            ))
    return out


def _grade(value: Any) -> tuple[int, int, int]:
    """(grade, low, high) from ``N`` (range N-1..N+1 within 1..5) or ``[N, LOW, HIGH]``."""
    if isinstance(value, int) and not isinstance(value, bool):
        grade, low, high = value, max(1, value - 1), min(5, value + 1)
    elif isinstance(value, list) and len(value) == 3 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        grade, low, high = value
    else:
        raise ValueError(f"a grade is N or [N, LOW, HIGH], not {value!r}")
    if not 1 <= low <= grade <= high <= 5:
        raise ValueError(f"grade {value!r}: need 1 <= LOW <= N <= HIGH <= 5")
    return grade, low, high


def _text(obj: Mapping[str, Any], name: str, *, required: bool = True) -> str:
    """A string field: required ones must be present and not blank; others default to ""."""
    value = obj[name] if required else (obj.get(name) or "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise ValueError(f"{name} must be a {'non-empty ' if required else ''}string")
    return value


def _mapping(obj: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = obj[name]
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping")
    return value


def _pairs(obj: Mapping[str, Any], name: str) -> tuple[tuple[str, str], ...]:
    value = obj[name]
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) and x.strip() for x in p) for p in value
    ):
        raise ValueError(f"{name} must be a list of [doc_id, text] pairs")
    return tuple((doc_id, text) for doc_id, text in value)


def _message(exc: Exception) -> str:
    return f"missing {exc}" if isinstance(exc, KeyError) else str(exc)


def check_golden(cases: Sequence[GoldenCase], outcomes: Sequence[JudgeOutcome]) -> list[GoldenResult]:
    """Pair each case with its outcome (same order, as ``run_judge`` returns them)."""
    if len(cases) != len(outcomes):
        raise ValueError(f"{len(cases)} golden cases but {len(outcomes)} outcomes")
    return [GoldenResult(c, o) for c, o in zip(cases, outcomes)]


def golden_result_json(result: GoldenResult, judge_signature: str | None = None) -> dict:
    """One line of the golden report; ``judge_signature`` names the judge that gave the verdict."""
    o = result.outcome
    line = {
        "id": result.case.id,
        "purpose": result.case.purpose,
        "dimension": o.item.dimension,
        "expect": {"min": result.case.min_score, "max": result.case.max_score},
        "status": o.status,
        "score": o.score,
        "passed": result.passed,
        "rationale": o.rationale,
    }
    if judge_signature is not None:
        line["judge_signature"] = judge_signature
    return line
