"""The chapter as a static website (book/build.py), checked in a real browser.

The site is built once per session into a temporary folder, served on 127.0.0.1 and opened
page by page in Chromium through Playwright. Every page must load with no console error and
no failed request (a request that leaves 127.0.0.1 is aborted and reported: the site must be
self-contained), show typeset math and no raw ``$...$`` or ``\\(...\\)``, load every image,
keep collapsed solutions collapsed until clicked, and the explorer's page must show its
stored first frame. Every internal link of every page must resolve (file and anchor).

A screenshot of each page is saved in ``build/book-screenshots/`` (CI keeps it as an artefact).

The same checkers run against a deliberately broken copy of the site (a removed image, a
broken link, raw and untypeset math) and must report each fault.

Skips with the reason when Chromium, Playwright or the book tools are missing -- except under
``CI=true``, where a missing piece is a failure: CI installs all of them.
"""

import functools
import html.parser
import importlib.util
import json
import os
import re
import shutil
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "build" / "book-screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAGE_SECONDS = 20
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
book_build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(book_build)

NOTEBOOKS = book_build.chapter_notebooks()
PAGES = ["index.html", *(f"notebooks/{path.stem}.html" for path in NOTEBOOKS), "references.html",
         "genindex.html", "search.html"]


# ---------------------------------------------------------------- requirements, site, server

def missing(modules):
    """Why these checks cannot run here, or None."""
    for module, install in modules:
        if importlib.util.find_spec(module) is None:
            return f"Python package {module} not installed ({install})"
    return None


BOOK_TOOLS = [("sphinx", 'pip install -e ".[book]"'), ("myst_nb", 'pip install -e ".[book]"'),
              ("sphinx_book_theme", 'pip install -e ".[book]"'), ("mathjax", 'pip install -e ".[book]"')]


def require(reason):
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and the book test cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The built site's folder (built once per session, from the stored outputs)."""
    require(missing(BOOK_TOOLS))
    out = tmp_path_factory.mktemp("book") / "book"
    book_build.build(out)
    return out


@contextmanager
def serve(folder):
    """Serve ``folder`` on 127.0.0.1 (a free port) in a thread; yield the base URL."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="session")
def site_url(site):
    with serve(site) as url:
        yield url


@pytest.fixture(scope="module")  # closed before other modules start their own Playwright (one per thread at a time)
def browser():
    reason = None if os.access(CHROMIUM, os.X_OK) else f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    require(reason or missing([("playwright", "pip install playwright"), *BOOK_TOOLS]))
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


# ---------------------------------------------------------------- checkers

class _LinkParser(html.parser.HTMLParser):
    """Collects the ids (anchors) of one page and the URLs it links or loads."""

    def __init__(self):
        super().__init__()
        self.ids, self.urls = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(name):
                self.ids.add(attrs[name])
        for name in ("href", "src"):
            if attrs.get(name) and tag in ("a", "img", "link", "script", "iframe", "source"):
                self.urls.append(attrs[name])


def _parse(path):
    parser = _LinkParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def check_links(folder):
    """Every internal link and resource of every page of the site in ``folder`` that does not resolve.

    Returns a list of ``"page: url (why)"``; external links (with a scheme) are not followed.
    """
    folder = Path(folder)
    problems, parsed = [], {}
    for page in sorted(folder.rglob("*.html")):
        if page.relative_to(folder).parts[0] == "_static":
            continue  # the theme's templates, not pages
        for url in _parse(page).urls:
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or url.startswith("#") and len(url) == 1:
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(folder)}: {url}"
            if not target.is_relative_to(folder.resolve()):
                problems.append(f"{where} (points outside the site)")
            elif not target.is_file():
                problems.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                if target not in parsed:
                    parsed[target] = _parse(target).ids
                ids = parsed[target]
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{where} (no anchor #{parts.fragment} in {target.name})")
    return problems


RAW_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\\w])\$[^\s$][^$\n]*?\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)

PAGE_REPORT = """async () => {
    const mathjax = window.MathJax;
    if (mathjax && mathjax.startup && mathjax.startup.promise) await mathjax.startup.promise;
    const images = [];
    for (const img of document.querySelectorAll('img')) {
        img.loading = 'eager';  // collapsed solutions hold images too
        try { await img.decode(); } catch (error) { /* reported below: naturalWidth stays 0 */ }
        images.push({src: img.getAttribute('src'), width: img.naturalWidth});
    }
    const article = document.querySelector('main') || document.body;
    const text = article.cloneNode(true);
    text.querySelectorAll('pre, code, script, style, textarea, mjx-container').forEach(e => e.remove());
    const math = [...article.querySelectorAll('.math')];
    return {
        mathjax: Boolean(mathjax && mathjax.startup),
        math: math.length,
        untypeset: math.filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.trim()),
        typeset: article.querySelectorAll('mjx-container').length,
        text: text.textContent,
        images: images,
    };
}"""

COLLAPSIBLES = ".bd-article details"


def check_page(browser, url, screenshot=None):
    """Open one page of the site; return ``(problems, report)``.

    problems: console errors, failed or external requests, images that did not load, math that
    MathJax did not typeset or raw TeX delimiters in the visible text, and collapsed blocks that
    are open on load or do not open on click. report: what the page held (counts, text).
    """
    origin = "{0.scheme}://{0.netloc}/".format(urlsplit(url))
    problems = []
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()

    def route(request_route):
        if request_route.request.url.startswith(origin) or request_route.request.url.startswith("data:"):
            request_route.continue_()
        else:
            problems.append(f"external request: {request_route.request.url}")
            request_route.abort()

    def response(reply):
        if reply.status >= 400:
            problems.append(f"HTTP {reply.status}: {reply.url}")

    page.route("**/*", route)
    page.on("console", lambda message: problems.append(f"console error: {message.text}")
            if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("requestfailed", lambda request: problems.append(f"request failed: {request.url} ({request.failure})"))
    page.on("response", response)
    try:
        page.goto(url, wait_until="load", timeout=PAGE_SECONDS * 1000)
        if page.locator(".math").count():
            try:  # MathJax loads deferred, then typesets
                page.wait_for_function("() => window.MathJax && window.MathJax.startup", timeout=PAGE_SECONDS * 1000)
            except Exception:  # noqa: BLE001 (Playwright's TimeoutError): reported below as untypeset math
                pass
        report = page.evaluate(PAGE_REPORT)
        for image in report["images"]:
            if image["width"] == 0:
                problems.append(f"image did not load: {image['src']}")
        if report["untypeset"]:
            problems.append(f"math not typeset ({len(report['untypeset'])}): {report['untypeset'][:3]}")
        raw = RAW_MATH.findall(report["text"])
        if raw:
            problems.append(f"raw TeX in the text ({len(raw)}): {raw[:3]}")
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
        report["collapsibles"] = page.locator(COLLAPSIBLES).count()
        problems += check_collapsibles(page)
        page.wait_for_load_state("networkidle")  # requests started by a click are reported too
    finally:
        context.close()
    return problems, report


def check_collapsibles(page):
    """Each collapsed block (``<details>``) in the text is closed on load and opens on a click."""
    problems = []
    blocks = page.locator(COLLAPSIBLES)
    for index in range(blocks.count()):
        block = blocks.nth(index)
        summary = block.locator(":scope > summary")
        label = summary.inner_text().strip()[:40]
        if block.evaluate("e => e.open"):
            problems.append(f"collapsed block {index} ({label!r}) is open on load")
            continue
        summary.scroll_into_view_if_needed()
        summary.click(timeout=5000)
        content = block.locator(":scope > :not(summary)").first
        if not block.evaluate("e => e.open") or not content.is_visible():
            problems.append(f"collapsed block {index} ({label!r}) does not open on click")
    return problems


def expected_collapsibles(notebook):
    """How many collapsed blocks a notebook's page must have: hidden cells plus <details> in Markdown."""
    count = 0
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            count += len(re.findall(r"<details[\s>]", source))
        elif cell["cell_type"] == "code" and book_build.hide_tags(cell.get("metadata", {})):
            count += 1
    return count


# ---------------------------------------------------------------- the site as built

@pytest.mark.parametrize("name", PAGES)
def test_page_in_browser(browser, site, site_url, name):
    screenshot = SCREENSHOTS / name.replace("/", "__").replace(".html", ".png")
    problems, report = check_page(browser, site_url + name, screenshot)
    assert not problems, f"{name}:\n" + "\n".join(problems)
    if report["math"]:
        assert report["mathjax"] and report["typeset"] >= report["math"], report
    stem = Path(name).stem
    for path in NOTEBOOKS:
        if path.stem == stem:
            expected = expected_collapsibles(json.loads(path.read_text(encoding="utf-8")))
            assert report["collapsibles"] == expected, (
                f"{name}: {report['collapsibles']} collapsed blocks on the page, the notebook has "
                f"{expected} (hidden cells and <details>)")


def test_every_page_is_built(site):
    for name in PAGES:
        assert (site / name).is_file(), name
    toc = (site / "index.html").read_text(encoding="utf-8")
    positions = [toc.find(f'href="notebooks/{path.stem}.html"') for path in NOTEBOOKS]
    assert -1 not in positions, "a notebook is missing from the landing page's reading order"
    assert positions == sorted(positions), "the landing page lists the notebooks out of order"
    assert 'href="references.html"' in toc


def test_internal_links_resolve(site):
    assert check_links(site) == []


def test_math_is_served_by_the_site(site):
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    for name in PAGES:
        text = (site / name).read_text(encoding="utf-8")
        scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', text) + re.findall(r'<link[^>]*\bhref="([^"]+)"', text)
        assert not [url for url in scripts if urlsplit(url).scheme or url.startswith("//")], name


def test_explorer_shows_its_first_frame(browser, site, site_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(site_url) else route.abort())
    try:
        page.goto(site_url + "notebooks/explore.html", wait_until="load")
        frames = page.locator(".cell_output img")
        assert frames.count() >= 1, "the explorer's page shows no stored frame"
        frame = frames.first
        frame.scroll_into_view_if_needed()
        assert frame.is_visible()
        box = frame.bounding_box()
        assert box["width"] > 300 and box["height"] > 150, box
        assert frame.evaluate("img => img.naturalWidth") > 0
        live = page.locator("a", has_text="Run it live")
        assert live.count() >= 1 and "voila" in live.first.get_attribute("href")
        text = page.locator("main").inner_text()
        assert "model_id" not in text and "widget-view" not in text, "widget JSON shown as text"
    finally:
        context.close()


# ---------------------------------------------------------------- the page transform

def test_for_the_page_collapses_hidden_cells_and_replaces_live_widgets():
    frame = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}
    widget = {"output_type": "execute_result", "execution_count": 1, "metadata": {},
              "data": {WIDGET_VIEW: {"model_id": "abc"}, "text/plain": "Explorer(...)"}}
    notebook = {"metadata": {"widgets": {"state": {}}}, "nbformat": 4, "nbformat_minor": 5, "cells": [
        {"cell_type": "code", "metadata": {"jupyter": {"source_hidden": True}}, "source": "# Solution\nx = 1",
         "outputs": [], "execution_count": 1},
        {"cell_type": "code", "metadata": {"jupyter": {"source_hidden": True, "outputs_hidden": True}},
         "source": "y", "outputs": [], "execution_count": 2},
        {"cell_type": "code", "metadata": {}, "source": "# NBVAL_IGNORE_OUTPUT\nexplorer()", "outputs": [widget, frame],
         "execution_count": 3},
        {"cell_type": "markdown", "metadata": {}, "source": "<details><summary>Solution</summary>\n\nx\n</details>"},
    ]}
    page = book_build.for_the_page(notebook)
    assert "widgets" not in page["metadata"] and "widgets" in notebook["metadata"]  # the input is untouched
    assert page["cells"][0]["metadata"]["tags"] == ["hide-input"]
    assert page["cells"][0]["metadata"]["mystnb"]["code_prompt_show"] == "Show the solution"
    assert page["cells"][1]["metadata"]["tags"] == ["hide-cell"]
    assert page["cells"][2]["source"] == "explorer()"
    outputs = page["cells"][2]["outputs"]
    assert outputs[0] == frame and len(outputs) == 2
    assert "first frame" in outputs[1]["data"]["text/markdown"] and "Run it live" in outputs[1]["data"]["text/markdown"]
    assert page["cells"][3] == notebook["cells"][3]
    alone = book_build.for_the_page({**notebook, "cells": [{**notebook["cells"][2], "outputs": [widget]}]})
    note = alone["cells"][0]["outputs"][0]["data"]["text/markdown"]
    assert "Run it live" in note and "first frame" not in note  # says nothing of a frame it does not have
    assert expected_collapsibles(notebook) == 3



# ---------------------------------------------------------------- a deliberately broken copy

@pytest.fixture(scope="session")
def broken_site(site, tmp_path_factory):
    """A copy of the site with one image removed, one broken link and raw / untypeset math."""
    broken = tmp_path_factory.mktemp("broken") / "book"
    shutil.copytree(site, broken)
    page = broken / "notebooks" / f"{NOTEBOOKS[0].stem}.html"
    image = re.search(r'<img[^>]*\bsrc="([^"]+\.png)"', page.read_text(encoding="utf-8")).group(1)
    (page.parent / image).unlink()
    index = broken / "index.html"
    text = index.read_text(encoding="utf-8")
    index.write_text(text.replace('href="references.html"', 'href="referencs.html"', 1), encoding="utf-8")
    references = broken / "references.html"
    text = references.read_text(encoding="utf-8")
    # A "$...$" that the Markdown parser left alone, a "\\(...\\)" that MathJax was told to skip,
    # and a math element that MathJax finds nothing to typeset in.
    text = text.replace("<h1>", '<p>raw: $x^2$, <span class="mathjax_ignore">\\(y_1\\)</span> and '
                                '<span class="math">z_2</span></p><h1>', 1)
    references.write_text(text, encoding="utf-8")
    return {"folder": broken, "image": image}


def test_checkers_report_a_broken_link(broken_site):
    problems = check_links(broken_site["folder"])
    assert problems == ["index.html: referencs.html (no such file)",
                        f"notebooks/{NOTEBOOKS[0].stem}.html: {broken_site['image']} (no such file)"]


def test_checkers_report_a_missing_image(browser, broken_site):
    with serve(broken_site["folder"]) as url:
        problems, _ = check_page(browser, url + f"notebooks/{NOTEBOOKS[0].stem}.html")
    assert f"image did not load: {broken_site['image']}" in problems
    assert any(problem.startswith("HTTP 404") and broken_site["image"].lstrip("./") in problem for problem in problems)


def test_checkers_report_raw_and_untypeset_math(browser, broken_site):
    with serve(broken_site["folder"]) as url:
        problems, _ = check_page(browser, url + "references.html")
    assert "math not typeset (1): ['z_2']" in problems, problems
    assert "raw TeX in the text (2): ['$x^2$', '\\\\(y_1\\\\)']" in problems, problems


def test_checkers_report_external_requests(browser, tmp_path):
    page = tmp_path / "external.html"
    page.write_text('<html><body><img src="https://example.org/x.png"></body></html>', encoding="utf-8")
    with serve(tmp_path) as url:
        problems, _ = check_page(browser, url + "external.html")
    assert "external request: https://example.org/x.png" in problems
    assert "image did not load: https://example.org/x.png" in problems
