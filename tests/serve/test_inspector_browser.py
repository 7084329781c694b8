"""The inspector in a real headless Chromium (Debian's), driven by Playwright: what a person sees, read-only."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests._services._skip import missing_service
from tests.cli._support import DETAIL, OTHER, SUPPORT, Populated

from ._servers import Served, get, serve

CHROMIUM = os.environ.get('DURABLE_RECALL_CHROMIUM', '/usr/bin/chromium')
SHOTS = os.environ.get('DURABLE_RECALL_SCREENSHOTS')
"""A directory to save screenshots into (the docs' images are made so); unset: none are saved."""
TOKEN = 'ZEBRA-browser-token-0123456789'


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope='module')
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        missing_service(f'no Chromium at {CHROMIUM} (apt-get install chromium)')
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
        )
        yield browser
        browser.close()


@pytest.fixture(scope='module')
def inspector(served_store: Populated) -> Iterator[Served]:
    with serve(['ui', '--store', served_store.store, '--all']) as served:
        yield served


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name), full_page=False)


def test_a_person_browses_searches_and_checks(browser: Browser, inspector: Served, served_store: Populated) -> None:
    page = browser.new_page(viewport={'width': 1200, 'height': 860})
    page.goto(inspector.url + '/')
    assert page.title() == 'Conversations · durable-recall'
    rows = page.locator('tbody tr')
    assert SUPPORT in rows.nth(0).inner_text() and '6' in rows.nth(0).inner_text()
    assert OTHER in page.locator('main').inner_text()
    _shot(page, 'inspector-conversations.png')

    page.click(f'text={SUPPORT}')
    main = page.locator('main')
    assert f'Conversation {SUPPORT}' in main.inner_text()
    assert DETAIL in main.inner_text()
    assert page.locator('li.run-head').count() == 6
    assert page.locator('li.cut').count() >= 1  # the demo's sliding window leaves a compaction mark
    folded = page.locator('details.part').first
    assert not folded.locator('pre').is_visible()  # tool traffic is folded until opened
    folded.locator('summary').click()
    assert folded.locator('pre').is_visible()
    _shot(page, 'inspector-timeline.png')
    page.locator('li.cut').first.scroll_into_view_if_needed()
    assert 'compaction cut' in page.locator('li.cut').first.inner_text()
    _shot(page, 'inspector-compaction-cut.png')

    page.goto(inspector.url + '/search')
    page.fill('input[name=q]', 'billing export s3')
    page.check('input[name=role][value=user]')
    page.click('button[type=submit]')
    marks = page.locator('section.hit mark')
    assert marks.count() >= 2
    assert {text.lower() for text in marks.all_inner_texts()} >= {'billing', 'export'}
    assert DETAIL in page.locator('section.hit').first.inner_text()
    _shot(page, 'inspector-search.png')

    page.goto(inspector.url + '/check')
    assert 'No problems found.' in page.locator('main').inner_text()
    _shot(page, 'inspector-check.png')
    page.close()


def test_stored_text_is_escaped(browser: Browser, inspector: Served) -> None:
    page = browser.new_page()
    page.goto(inspector.url + '/search?q=%3Cscript%3Ealert(1)%3C/script%3E+ZEBRA')
    assert page.locator('input[name=q]').input_value() == '<script>alert(1)</script> ZEBRA'
    assert page.locator('main script').count() == 0
    page.close()


def test_crawling_every_page_changes_no_byte_of_the_store(
    browser: Browser, inspector: Served, served_store: Populated
) -> None:
    before = _digest(served_store.store)
    page = browser.new_page()
    seen: set[str] = set()
    queue = ['/', '/search?q=billing+export', '/search?q=vault&ranking=bm25', '/check']
    while queue and len(seen) < 300:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        response = page.goto(inspector.url + path)
        assert response is not None and response.status == 200, path
        for href in page.eval_on_selector_all('a[href]', 'links => links.map(a => a.getAttribute("href"))'):
            target = urlparse(urljoin(inspector.url + path, href))
            if target.netloc == urlparse(inspector.url).netloc:
                queue.append(target.path + (f'?{target.query}' if target.query else ''))
    page.close()
    assert any(path.startswith('/run?') for path in seen) and any(path.startswith('/conversation?') for path in seen)
    for method in ('POST', 'PUT', 'DELETE', 'PATCH'):
        assert get(inspector.url + '/', method=method)[0] == 405
    assert _digest(served_store.store) == before


def test_a_scoped_inspector_shows_one_conversation(browser: Browser, served_store: Populated) -> None:
    with serve(['ui', '--store', served_store.store, '--conversation', SUPPORT]) as served:
        page = browser.new_page()
        page.goto(served.url + '/')
        assert SUPPORT in page.locator('main').inner_text() and OTHER not in page.content()
        page.goto(served.url + '/search?q=ZEBRA+vault+code')
        assert 'vault code is' not in page.content()
        other_run = served_store.runs[OTHER][0]
        for path, status in ((f'/run?id={other_run}', 404), ('/run?id=no-such-run', 404), ('/check', 403)):
            response = page.goto(served.url + path)
            assert response is not None and response.status == status, path
        page.close()


def test_with_a_token_every_request_carries_it(browser: Browser, served_store: Populated) -> None:
    with serve(['ui', '--store', served_store.store, '--all'], token=TOKEN) as served:
        assert get(served.url + '/')[0] == 401
        assert get(served.url + '/style.css', {'Authorization': 'Bearer not-the-token-0000000'})[0] == 401
        assert get(served.url + '/', {'Authorization': f'Bearer {TOKEN}'})[0] == 200
        context = browser.new_context(http_credentials={'username': 'me', 'password': TOKEN})
        page = context.new_page()
        page.goto(served.url + '/')
        assert SUPPORT in page.locator('main').inner_text()
        context.close()


def test_chromium_is_debians(browser: Browser) -> None:
    assert shutil.which('chromium') or Path(CHROMIUM).exists()
