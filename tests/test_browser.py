"""The live view in a real browser: Debian's Chromium, driven by Playwright, against the real demo.

The page must show values and charts for the demo's models, refresh itself without a reload,
fit a phone's width, and log no console error or failed request. Chromium comes from
``scripts/install-system-deps``; a machine without it fails here (never skips).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers import free_port

pytestmark = pytest.mark.integration

# Loopback only: never through an HTTP(S)_PROXY from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# Chromium as root in a container, on a machine with no network: no sandbox, no background traffic.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "Chromium is missing: run scripts/install-system-deps (Debian package chromium)"
    return path


def results(url: str) -> dict[str, Any]:
    with _OPENER.open(url + "/api/v1/results", timeout=5) as answer:
        data: dict[str, Any] = json.load(answer)["data"]
        return data


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real ``fairwatch demo`` until the module ends; its URL once both models have values."""
    port = free_port()
    folder = tmp_path_factory.mktemp("demo")
    log = folder / "demo.log"  # a file, not a pipe: nobody reads the live table, it must not block
    command = [
        sys.executable,
        "-m",
        "monitor.cli",
        "demo",
        "--dir",
        str(folder / "demo"),
        "--port",
        str(port),
    ]
    with log.open("w") as out:
        process = subprocess.Popen([*command, "--duration", "300", "--speed", "600"], stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                data = results(url)
                if {m["name"] for m in data["models"] if m["evaluated_at"]} == {"toxicity", "moderation"}:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the demo served no values within 90 s"
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


class Watched:
    """A page whose console errors, page errors and failed requests are collected."""

    def __init__(self, browser: Any, **context: Any) -> None:
        self.context = browser.new_context(**context)
        self.page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(m.text))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"failed: {r.url}"))
        self.page.on("response", lambda r: r.status >= 400 and self.problems.append(f"{r.status}: {r.url}"))

    def close(self) -> None:
        self.context.close()


def test_the_live_view_shows_values_and_charts_and_refreshes_itself(demo: str, browser: Any) -> None:
    watched = Watched(browser, viewport={"width": 1280, "height": 900})
    page = watched.page
    try:
        page.goto(demo + "/?model=toxicity")
        # the group x metric table: a row per judged metric, numbers in its cells
        rows = page.locator("table.matrix tbody tr")
        assert rows.count() >= 5
        first_cell = page.locator("table.matrix tbody tr td b").first.inner_text()
        float(first_cell)  # a number, or "-" for an undefined value would fail here
        metrics = page.locator("table.matrix tbody th a").all_inner_texts()
        assert {"disparate_impact", "subgroup_auc", "bpsn_auc"} <= set(metrics)
        # charts: per judged metric the current intervals, the history and the state timeline
        cards = page.locator(".cards > section.card")
        assert cards.count() == len(metrics)
        card = page.locator("#m-toxicity-1h-disparate_impact")
        assert card.locator("svg.chart.intervals circle").count() >= 5  # a dot per defined group
        assert card.locator("svg.chart.intervals rect.fair").count() == 1
        assert card.locator("svg.chart.history path.series").count() >= 5
        assert card.locator("svg.chart.timeline rect").count() >= 5
        box = card.locator("svg.chart.history").bounding_box()
        assert box and box["width"] > 300 and box["height"] > 100  # drawn, not collapsed
        # it refreshes itself: the fragment is fetched and swapped in, the evaluation time moves on
        facts = page.locator("p.facts").inner_text()
        page.wait_for_function(
            "Number(document.getElementById('live').dataset.updates || 0) >= 2", timeout=30_000
        )
        assert page.locator("p.facts").inner_text() != facts
        assert (
            page.locator("main").count() == 1 and page.locator("header").count() == 1
        )  # swapped, not nested
        assert "live" in page.locator("#live-status").inner_text()
        # the other model, and a window tab
        page.click("nav[aria-label=models] >> text=moderation")
        page.wait_for_url("**model=moderation**")
        assert page.locator("table.matrix tbody tr").count() >= 1
        page.locator("nav.tabs a").last.click()
        assert (
            page.locator("nav.tabs a[aria-current=page]").inner_text()
            == page.locator("nav.tabs a").last.inner_text()
        )
        assert watched.problems == []
    finally:
        watched.close()


def test_the_live_view_fits_a_phone(demo: str, browser: Any) -> None:
    watched = Watched(browser, viewport={"width": 390, "height": 844}, is_mobile=True, device_scale_factor=2)
    page = watched.page
    try:
        page.goto(demo + "/?model=toxicity")
        assert page.locator("table.matrix").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the table scrolls in its box
        chart = page.locator("svg.chart.history").first.bounding_box()
        assert chart and chart["width"] <= 390
        # every group's column can be reached: scrolled to its end, the table's last column is on screen
        box = page.locator("div.scroll:has(table.matrix)").first
        box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
        last = page.locator("table.matrix thead th").last.bounding_box()
        assert last and last["x"] >= 0 and last["x"] + last["width"] <= 390 + 1
        # and stays there across refreshes (the fragment is swapped in every few seconds)
        scrolled = box.evaluate("b => b.scrollLeft")
        assert scrolled > 0
        updates = int(page.evaluate("Number(document.getElementById('live').dataset.updates || 0)"))
        page.wait_for_function(
            f"Number(document.getElementById('live').dataset.updates || 0) >= {updates + 2}", timeout=30_000
        )
        after = page.locator("div.scroll:has(table.matrix)").first.evaluate("b => b.scrollLeft")
        assert after == scrolled
        assert watched.problems == []
    finally:
        watched.close()


# -- the report, printed ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loan_report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The loan scenario's report (tests/loans.py), written by the real ``fairwatch report``."""
    from tests.loans import write_loan_report

    return write_loan_report(tmp_path_factory.mktemp("loan-report"))


def test_the_report_prints_every_group_on_a4(loan_report: Any, browser: Any, tmp_path: Any) -> None:
    """Print to PDF through Chromium: the group table's 15 groups on one A4 page (not cut after the
    first few), and each cell's state in words (a black-and-white print keeps it)."""
    from pypdf import PdfReader

    watched = Watched(browser)
    try:
        watched.page.goto(loan_report.as_uri())
        pdf = tmp_path / "report.pdf"
        watched.page.pdf(path=str(pdf), format="A4", prefer_css_page_size=True, print_background=True)
        assert watched.problems == []
    finally:
        watched.close()
    pages = [page.extract_text() or "" for page in PdfReader(pdf).pages]
    width, height = (float(x) for x in PdfReader(pdf).pages[0].mediabox[2:])
    # A4 is 595.3 x 841.9 points (Chromium rounds to its pixels)
    assert abs(min(width, height) - 595.3) < 2 and abs(max(width, height) - 841.9) < 2
    # the page that holds the group table holds every one of its columns
    table_page = next(text for text in pages if "Hispanic&F" in text)  # the table comes before the charts
    assert "disparate_impact" in table_page
    from tests.loans import RACES

    groups = [*RACES[1:], "F", *(f"{r}&{s}" for r in RACES for s in ("F", "M"))]
    missing = [g for g in groups if g not in table_page]
    assert not missing, f"cut from the printed table: {missing}"
    assert "VIOLATION" in table_page  # Black's disparate impact, in words (capitals when printed)
    # a folded section is printed too (the report opens them all): the power figures' table
    assert "rows needed" in "".join(pages)
