"""The headless Chromium of the pages' browser tests (one per test module)."""

from __future__ import annotations

import pytest

from reteco.workbench.codabench.chromium import BrowserUnavailable, Chromium


@pytest.fixture(scope="module")
def browser():
    """A started Chromium (``reteco.workbench.codabench.chromium``); the module is skipped when it does not run."""
    try:
        with Chromium() as chromium:
            yield chromium
    except BrowserUnavailable as exc:
        pytest.skip(f"Chromium is installed but does not run here: {exc}")
