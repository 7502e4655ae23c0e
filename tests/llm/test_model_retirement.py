"""The table of announced shutdown dates (``reteco.llm.model_retirement``) is the installed openai
SDK's list, entry for entry (issue 31, item 5): a newer SDK with another list fails here until the
table is refreshed from it (and ``SOURCE`` names its version)."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import openai.types.shared.chat_model as chat_model

from reteco.llm.model_retirement import KNOWN_SHUTDOWN_DATES, SOURCE, known_shutdown


def sdk_shutdown_dates() -> dict[str, str]:
    """model -> announced shutdown date, read from the SDK's 'Deprecated values' docstring."""
    text = Path(chat_model.__file__).read_text(encoding="utf-8")
    notes = text[text.index('"""Deprecated values:'):]
    dates = {}
    for entry in re.split(r"\n- ", notes)[1:]:
        entry = " ".join(entry.split())
        found = re.search(r"Announced shutdown date: (\d{4}-\d{2}-\d{2})", entry)
        if found:
            for model in re.findall(r'"([^"]+)"', entry.split("Announced shutdown")[0]):
                dates[model] = found.group(1)
    return dates


def test_the_table_is_the_installed_sdks_list_and_names_its_version():
    sdk = sdk_shutdown_dates()
    assert len(sdk) > 50  # the list was read, not an empty match
    assert KNOWN_SHUTDOWN_DATES == sdk
    assert f"openai-python {version('openai')}," in SOURCE


def test_the_judged_phases_facts_the_issue_rests_on():
    # Every gpt-4o and gpt-4.1 snapshot leaves on day 5 of Evaluation (2027-01-10..31).
    assert {known_shutdown(m) for m in ("gpt-4o-2024-08-06", "gpt-4o", "gpt-4.1", "gpt-4.1-mini")} == {"2027-01-14"}
    assert known_shutdown("gpt-5.5-2026-04-23") is None and known_shutdown("gpt-5.1") == "2027-04-01"
