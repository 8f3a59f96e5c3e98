"""Browser tests: one real service for these tests, a fresh browser context per test.
Without chromium or Playwright the tests skip, and with CI=true they fail instead.

Playwright's sync API keeps an asyncio loop running in this thread while it is open, so it
is opened once for this package and closed before the rest of the suite's async tests run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.services import IN_CI


def require_browser() -> None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        message = f"Playwright is not installed: {exc}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    from tests.browser.site import chromium_path

    if chromium_path() is None:
        message = "chromium is not installed (apt-get install chromium)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="package")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_browser()
    from tests.browser.site import running_site

    with running_site(tmp_path_factory.mktemp("browser") / "var") as running:
        yield running


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    from tests.browser.site import launch

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, site: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    opened = context.new_page()
    # A destructive button asks first (site.js); the tests answer yes and keep the question.
    opened.confirmations = []
    opened.on(
        "dialog", lambda dialog: (opened.confirmations.append(dialog.message), dialog.accept())
    )
    # The site's Content-Security-Policy: a page that needs what it forbids is a broken page.
    refused: list[str] = []
    opened.on(
        "console",
        lambda message: (
            refused.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    yield opened
    context.close()
    assert refused == [], f"pages broke the site's content policy: {refused}"
