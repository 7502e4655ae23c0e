"""Track 1's required time periods per query: ``temporal_periods.jsonl`` (format
``reteco-temporal-periods/1``) in every 1a and 1b reference folder, and ``periods.jsonl`` of a
frozen label folder (the same records without the oracle fields; ``reteco.formats.temporal_labels``).

``temporal_periods.jsonl`` (format ``reteco-temporal-periods/1``), in every 1a and 1b
   reference folder, written by ``reteco prepare`` from the release: one line per query ::

       {"query": "bitcoin/122291_22", "text": "<query text>",
        "is_temporal_query": true, "key_time_anchors": ["April 2023", "2024"],
        "oracle_relevant": ["bitcoin/25785deb_4434.txt", ...],
        "periods": [{"period": "p1", "step_id": "122291_22_step1",
                     "description": "<step text>", "instruction": "<step instruction>",
                     "start_iso": "2023-04", "end_iso": "2023-05", "granularity": "month",
                     "oracle_docs": ["bitcoin/25785deb_4434.txt", ...]}, ...]}

   Each step of a query is one required period (``p1``, ``p2``, ... in step order); its time
   scope spans the guidance's ``time_scope_guess`` of the step's gold passages (null when the
   guidance annotates none of them). ``oracle_relevant`` (the query's qrels) and
   ``oracle_docs`` (the step's gold ids) are the organizers' offline oracle, used when a split
   has no frozen labels: gold documents are temporally relevant, and a step's period is
   covered by that step's gold documents.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reteco.formats.jsonl_records import dumps, iter_jsonl, optional_iso, optional_text, string_field, string_list
from reteco.problems import InputError

PERIODS_FORMAT = "reteco-temporal-periods/1"
PERIODS_FILE = "temporal_periods.jsonl"  # in a reference folder
GRANULARITIES = ("decade", "year", "month", "date")  # coarse to fine
PERIOD_ID = re.compile(r"^p[1-9][0-9]*$")


@dataclass(frozen=True)
class Period:
    """One required period of a query (one step, for the release's data)."""

    period: str  # "p1", "p2", ...
    step_id: str = ""  # the step it stands for ("" when not tied to a step)
    description: str = ""
    instruction: str = ""
    start_iso: str | None = None
    end_iso: str | None = None
    granularity: str | None = None
    oracle_docs: tuple[str, ...] = ()

    def scope_text(self) -> str:
        """"2023-04 to 2023-05 (month)", or "" when the period has no time scope."""
        if not self.start_iso and not self.end_iso:
            return ""
        span = self.start_iso if self.start_iso == self.end_iso else f"{self.start_iso or '?'} to {self.end_iso or '?'}"
        return f"{span} ({self.granularity})" if self.granularity else span

    def to_json(self, oracle: bool) -> dict:
        out: dict[str, Any] = {
            "period": self.period,
            "step_id": self.step_id,
            "description": self.description,
            "instruction": self.instruction,
            "start_iso": self.start_iso,
            "end_iso": self.end_iso,
            "granularity": self.granularity,
        }
        if oracle:
            out["oracle_docs"] = list(self.oracle_docs)
        return out


@dataclass(frozen=True)
class QueryPeriods:
    """A query's text, temporal guidance and required periods (and the oracle's verdicts)."""

    query: str  # topic key <domain>/<query id>
    text: str = ""
    periods: tuple[Period, ...] = ()
    key_time_anchors: tuple[str, ...] = ()
    is_temporal_query: bool | None = None
    oracle_relevant: tuple[str, ...] = ()

    def period_ids(self) -> list[str]:
        return [p.period for p in self.periods]

    def to_json(self, oracle: bool) -> dict:
        out: dict[str, Any] = {
            "query": self.query,
            "text": self.text,
            "is_temporal_query": self.is_temporal_query,
            "key_time_anchors": list(self.key_time_anchors),
            "periods": [p.to_json(oracle) for p in self.periods],
        }
        if oracle:
            out["oracle_relevant"] = list(self.oracle_relevant)
        return out


def write_periods(path: Path, records: Iterable[QueryPeriods], oracle: bool) -> int:
    """Write a periods file (JSONL, one query per line, sorted keys); returns the line count."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for record in records:
            handle.write(dumps(record.to_json(oracle)) + "\n")
            n += 1
    return n


def read_periods(path: Path) -> dict[str, QueryPeriods]:
    """Read a periods file (reference or label folder); InputError with file and line if malformed."""
    out: dict[str, QueryPeriods] = {}
    for line, record in iter_jsonl(path):
        query = string_field(record.get("query"), '"query"', path, line)
        if query in out:
            raise InputError("a query appears twice", str(path), line)
        raw_periods = record.get("periods", [])
        if not isinstance(raw_periods, list):
            raise InputError('"periods" must be a list', str(path), line)
        periods = []
        for number, raw in enumerate(raw_periods, 1):
            if not isinstance(raw, dict):
                raise InputError(f"period {number} is not a JSON object", str(path), line)
            period_id = raw.get("period")
            if not isinstance(period_id, str) or not PERIOD_ID.match(period_id):
                raise InputError(f'period {number}: "period" must be an id like "p1"', str(path), line)
            granularity = raw.get("granularity")
            if granularity is not None and granularity not in GRANULARITIES:
                raise InputError(
                    f'period {number}: "granularity" must be one of {", ".join(GRANULARITIES)} or null', str(path), line
                )
            periods.append(
                Period(
                    period_id,
                    optional_text(raw.get("step_id")),
                    optional_text(raw.get("description")),
                    optional_text(raw.get("instruction")),
                    optional_iso(raw.get("start_iso"), number, "start_iso", path, line),
                    optional_iso(raw.get("end_iso"), number, "end_iso", path, line),
                    granularity,
                    tuple(string_list(raw.get("oracle_docs", []), f'period {number}: "oracle_docs"', path, line)),
                )
            )
        ids = [p.period for p in periods]
        if len(set(ids)) != len(ids):
            raise InputError("a period id repeats within the query", str(path), line)
        temporal = record.get("is_temporal_query")
        if temporal is not None and not isinstance(temporal, bool):
            raise InputError('"is_temporal_query" must be true, false or null', str(path), line)
        out[query] = QueryPeriods(
            query,
            optional_text(record.get("text")),
            tuple(periods),
            tuple(string_list(record.get("key_time_anchors", []), '"key_time_anchors"', path, line)),
            temporal,
            tuple(string_list(record.get("oracle_relevant", []), '"oracle_relevant"', path, line)),
        )
    return out
