"""Fixtures of the page tests: one headless Chromium per test module."""

from __future__ import annotations

import pytest

from reteco.outputs.chromium import BrowserUnavailable, Chromium


@pytest.fixture(scope="module")
def browser():
    """A running headless Chromium (the module is skipped when it cannot start); the test
    modules skip themselves when it is not installed."""
    try:
        with Chromium() as chromium:
            yield chromium
    except BrowserUnavailable as exc:
        pytest.skip(f"Chromium is installed but does not run here: {exc}")
