"""The chapter as a static website (book/build.py), checked in a real browser.

Every test here is named ``test_book_*``: ``pytest -k 'not test_book'`` deselects exactly
these (``-k 'not book'`` would also drop every test whose name holds "notebook").

The site is built once per test run into a temporary folder (conftest.py), served on
127.0.0.1 and opened page by page in Chromium through Playwright, as a reader sees it at
1280x900 and on a 390x844 phone. On every page:

- no console error, no failed request, and no request that leaves 127.0.0.1 (the site is
  self-contained); every image loads; math is typeset, with no raw ``$...$`` or ``\\(...\\)``;
- every collapsed block is closed on load and opens on a click; an exercise's solution is
  folded whole: the output it printed is inside the closed fold, not under it;
- no code box (a code cell, an output, display math) is cut off: content wider than its box
  scrolls inside it with a scrollbar that is drawn (Chromium runs without
  ``--hide-scrollbars``, so a scrollbar takes room exactly when it is shown);
- at 1280 px, no figure's smallest text is below 9 CSS px as displayed: the smallest text
  size the notebook recorded for the image (``output.metadata["mhattn"]["min_font_px"]``, in
  the PNG's own pixels, written by notebooks/refresh.sh) times the displayed width over the
  PNG's natural width;
- at 390 px, the page never scrolls sideways (``scrollWidth <= clientWidth``), every figure
  shown narrower than it was drawn (the landing page's too) opens full size on a tap, and the
  cue that says so never covers any part of a figure.

The search page shows snippets with the math as text, not raw TeX. Every internal link of
every page resolves (file and anchor). Set ``MHATTN_SCREENSHOTS=/some/folder`` to keep a
screenshot of each page there, to look at: the whole page at 1280 px (JPEG) and the phone's
first screen (PNG). They are drawn only then: the whole-page picture of a long page costs
seconds of Chromium's time, and no check reads it.

Each checker also runs against a deliberately broken copy of the site (an image removed, a
broken link, raw and untypeset math, a console error, a solution's output moved out of its fold, figures
shrunk, code boxes that hide their scrollbar or cut off, inline code that cannot wrap, the
search page without its snippet fix) and must report the fault.

Skips with the reason when Chromium, Playwright or the book tools are missing -- except under
``CI=true``, where a missing piece is a failure: CI installs all of them.
"""

import html.parser
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from browser_path import chromium_path
from serving import serve

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = chromium_path()  # MHATTN_CHROMIUM, else /usr/bin/chromium
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAGE_SECONDS = 20
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
MIN_TEXT_PX = 9  # the smallest figure text a reader is asked to read, in CSS pixels
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

spec = importlib.util.spec_from_file_location("book_build", ROOT / "book" / "build.py")
book_build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(book_build)

NOTEBOOKS = book_build.chapter_notebooks()
PAGES = ["index.html", *(f"notebooks/{path.stem}.html" for path in NOTEBOOKS), "references.html",
         "accessibility.html", "search.html"]
AXE = ROOT / "build" / "axe"  # axe-core, installed from npm by the accessibility test
AXE_SCRIPT = AXE / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21aa"]
PIXEL_CHECKED_BOXES = 3  # code boxes per page whose cue is checked in a screenshot
CUE_CONTRAST = 6  # how much darker (of 255) the cue's edge of a code box must be than its other edge


# ---------------------------------------------------------------- requirements, site, server

def missing(modules):
    """Why these checks cannot run here, or None."""
    for module, install in modules:
        if importlib.util.find_spec(module) is None:
            return f"Python package {module} not installed ({install})"
    return None


BOOK_TOOLS = [(module, 'pip install -e ".[book]"')
              for module in ("sphinx", "myst_nb", "sphinx_book_theme", "sphinx_copybutton", "mathjax")]


def require(reason):
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and the book test cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def site(built_book):
    """The built site's folder (built once per test run, from the stored outputs: conftest.py)."""
    require(missing(BOOK_TOOLS))
    return built_book


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
        # Playwright hides scrollbars in headless mode by default; a reader's browser draws them.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                              ignore_default_args=["--hide-scrollbars"])
        try:
            yield chromium
        finally:
            chromium.close()


def notebook_of(name):
    """The notebook (a dict) behind a page name such as ``notebooks/02_x.html``, or None."""
    for path in NOTEBOOKS:
        if name == f"notebooks/{path.stem}.html":
            return json.loads(path.read_text(encoding="utf-8"))
    return None


def notebook_named(prefix):
    """The page name of the chapter notebook whose file name starts with ``prefix``."""
    return next(f"notebooks/{path.stem}.html" for path in NOTEBOOKS if path.name.startswith(prefix))


# ---------------------------------------------------------------- checkers: links

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


# ---------------------------------------------------------------- checkers: one page in the browser

RAW_MATH = re.compile(r"\$\$.+?\$\$|(?<![\\\w])\$[^\s$][^$\n]*?\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)
RAW_TEX = re.compile(r"\\[()\[\]]|\\[A-Za-z]{2,}")  # a delimiter or a command such as \sqrt

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

# A solution's fold (MyST-NB's <details> with the prompt build.py gives solutions) must hold
# every output of its cell, hidden while it is closed.
SOLUTION_FOLDS = """() => {
    const problems = [], folds = [];
    for (const details of document.querySelectorAll('.bd-article .cell details')) {
        const summary = details.querySelector(':scope > summary');
        if (!summary || !/solution/i.test(summary.textContent)) continue;
        const cell = details.closest('.cell');
        const outputs = [...cell.querySelectorAll('.cell_output')];
        folds.push(outputs.length);
        outputs.forEach((output, k) => {
            const where = `solution ${folds.length}: output ${k}`;
            if (!details.contains(output))
                problems.push(`${where} is outside its fold: ${output.textContent.trim().slice(0, 50)}`);
            else if (output.checkVisibility()) problems.push(`${where} is visible while its fold is closed`);
        });
    }
    return {problems, folds};
}"""

# A box whose content is wider than itself must let the reader scroll to the rest, with a
# scrollbar that is drawn. Content that spills out of a box is judged by the first ancestor
# that clips it: a scroll box (fine when its scrollbar shows), a clipping box (cut off), or
# none (the page itself grows sideways).
CUT_OFF_BOXES = """() => {
    const problems = [], seen = new Set();
    const boxes = document.querySelectorAll(
        '.bd-article pre, .bd-article .cell_output, .bd-article div.math, .bd-article table, .bd-article img');
    const describe = e => {
        const cell = e.closest('.cell, .math, table');
        const text = (cell || e).textContent.trim().replace(/\\s+/g, ' ').slice(0, 50);
        return `${e.tagName.toLowerCase()}.${[...e.classList].slice(0, 2).join('.')} "${text}"`;
    };
    for (const box of boxes) {
        if (!box.checkVisibility()) continue;
        const wide = box.tagName === 'IMG' ? box.getBoundingClientRect().width : box.scrollWidth;
        if (box.tagName !== 'IMG' && wide <= box.clientWidth + 1) continue;
        let clip = box.tagName === 'IMG' ? box.parentElement : box;
        while (clip && clip !== document.body && getComputedStyle(clip).overflowX === 'visible')
            clip = clip.parentElement;
        if (!clip || clip === document.body) {
            if (box.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                problems.push(`wider than the page, in no scroll box: ${describe(box)}`);
            continue;
        }
        if (clip.scrollWidth <= clip.clientWidth + 1 || seen.has(clip)) continue;
        seen.add(clip);
        const style = getComputedStyle(clip);
        const bar = clip.offsetHeight - clip.clientHeight
            - parseFloat(style.borderTopWidth) - parseFloat(style.borderBottomWidth);
        if (!['auto', 'scroll'].includes(style.overflowX))
            problems.push(`cut off (overflow-x: ${style.overflowX}): ${describe(clip)}`);
        else if (bar < 4 || style.scrollbarWidth === 'none')
            problems.push(`cut off with no visible scrollbar (${bar}px): ${describe(clip)}`);
    }
    return problems;
}"""

# What the theme (pydata-sphinx-theme's addTabStopsToScrollableElements) gives a reader: every
# code block or output box that scrolls is a tab stop, the others are not.
TAB_STOPS_MATCH_THE_LAYOUT = """() => [...document.querySelectorAll('pre, .nboutput > .output_area, '
        + '.cell_output > .output, .jp-RenderedHTMLCommon, .pst-scrollable-table-container')]
    .every(e => e.tabIndex === (e.scrollWidth > e.clientWidth || e.scrollHeight > e.clientHeight ? 0 : -1))"""

FIGURE_SIZES = """() => [...document.querySelectorAll('.bd-article .cell_output img')].map(img => ({
    src: img.getAttribute('src'),
    natural: img.naturalWidth,
    displayed: img.getBoundingClientRect().width,
    shown: img.checkVisibility(),  // the explorer page's still frame is hidden while the live one runs
}))"""

PAGE_OVERFLOW = """() => {
    const width = document.documentElement.clientWidth;
    const clipped = e => {
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
            if (getComputedStyle(a).overflowX !== 'visible') return true;
        return false;
    };
    const culprits = [...document.querySelectorAll('.bd-main *')]
        .filter(e => e.getBoundingClientRect().right > width + 1 && !clipped(e))
        .filter((e, i, all) => !all.some(other => other !== e && e.contains(other)))  // innermost
        .slice(0, 3)
        .map(e => `${e.tagName.toLowerCase()}.${[...e.classList].slice(0, 2).join('.')} `
                  + `"${e.textContent.trim().slice(0, 40)}"`);
    return {scrollWidth: document.documentElement.scrollWidth, width, culprits};
}"""

PHONE_FIGURES = """() => [...document.querySelectorAll('.bd-article img')].filter(img => img.checkVisibility())
    .map(img => {
        const button = img.closest('button.figure-zoom'), cue = button && button.querySelector('.figure-zoom-cue');
        const shown = img.getBoundingClientRect(), mark = cue && cue.checkVisibility() && cue.getBoundingClientRect();
        const after = button && getComputedStyle(button, '::after');  // a cue drawn by CSS, laid over the button
        const overlay = !!after && !['none', 'normal'].includes(after.content) && after.position === 'absolute';
        return {src: img.getAttribute('src'), natural: img.naturalWidth, displayed: shown.width, zoomable: !!button,
                covered: overlay || (!!mark && mark.top < shown.bottom && mark.bottom > shown.top
                                     && mark.left < shown.right && mark.right > shown.left)};
    })"""

COLLAPSIBLES = ".bd-article details"


def check_figures_on_a_phone(figures):
    """Figures that a phone shows smaller than drawn with no tap to open them, or with a cue on them.

    figures: what :data:`PHONE_FIGURES` measured. A figure shrunk to fit the screen has its text
    shrunk too; the full-size view (a button around the figure) shows it as drawn. The cue that says
    "tap to enlarge" sits beside the figure, never over its ticks, labels or legend.
    """
    problems = []
    for figure in figures:
        name = figure["src"].rsplit("/", 1)[-1]
        if figure["displayed"] < figure["natural"] - 1 and not figure["zoomable"]:
            problems.append(f"{name}: shown at {figure['displayed'] / figure['natural']:.2f}x its width "
                            "and no tap opens it full size")
        if figure["covered"]:
            problems.append(f"{name}: the zoom cue covers part of the figure")
    return problems


def image_metadata(notebook, stem=""):
    """The output metadata of each image a notebook's page shows, in page order."""
    page = book_build.for_the_page(notebook, stem, [path.name for path in NOTEBOOKS])
    return [output.get("metadata", {}) for cell in page["cells"] if cell["cell_type"] == "code"
            for output in cell.get("outputs", []) if any(key.startswith("image/") for key in output.get("data", {}))]


def check_figure_text(sizes, metadata):
    """Figures whose smallest text, as displayed, is below MIN_TEXT_PX (or is not known).

    sizes: what the browser measured for each figure (natural and displayed width); metadata:
    each figure's output metadata from its notebook, in the same order.
    """
    if len(sizes) != len(metadata):
        return [f"the page shows {len(sizes)} figures, the notebook has {len(metadata)}"]
    problems = []
    for index, (size, meta) in enumerate(zip(sizes, metadata, strict=True), start=1):
        recorded = meta.get("mhattn", {})
        if not size.get("shown", True):
            continue  # not on the screen: nothing to read
        if "min_font_px" not in recorded:
            problems.append(f"figure {index}: no recorded text size (refresh the notebook with notebooks/refresh.sh)")
            continue
        scale = size["displayed"] / size["natural"] if size["natural"] else 0.0
        shown = recorded["min_font_px"] * scale
        if shown < MIN_TEXT_PX:
            problems.append(f"figure {index}: smallest text {shown:.1f} px as displayed (< {MIN_TEXT_PX}): "
                            f"{recorded['min_font_px']} px at dpi {recorded.get('dpi')}, shown at "
                            f"{size['displayed']:.0f} of {size['natural']} px")
    return problems


def check_page(browser, url, screenshots=None, notebook=None, stem="", axe_script=None, phone_figures=False):
    """Open one page of the site at 1280x900, then at 390x844; return ``(problems, report)``.

    problems: console errors, failed or external requests, images that did not load, math that
    MathJax did not typeset or raw TeX delimiters in the visible text, collapsed blocks that
    are open on load or do not open on click, solution outputs outside their closed folds, code
    boxes cut off without a scrollbar (at both sizes), figure text below MIN_TEXT_PX at 1280 px
    (when the page's ``notebook`` is given), and a page wider than the phone's screen. With
    ``axe_script``, axe-core's serious and critical violations at both sizes. With
    ``phone_figures`` and a notebook, at 390 px, figures too small both as shown and after one
    tap, and code boxes that scroll without a cue (:func:`check_phone_figures`,
    :func:`check_code_cues`). The page is loaded once: the phone's checks run on it after the
    viewport shrinks, every fold open.
    report: what the page held (counts, text). screenshots: two paths (desktop, phone) or None.
    """
    origin = "{0.scheme}://{0.netloc}/".format(urlsplit(url))
    problems = []
    context = browser.new_context(viewport=DESKTOP)
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
        folds = page.evaluate(SOLUTION_FOLDS)  # before anything is opened
        problems += folds["problems"]
        report["solution_folds"] = folds["folds"]
        report["collapsibles"] = page.locator(COLLAPSIBLES).count()
        problems += check_collapsibles(page)  # leaves every fold open: what is inside is checked too
        problems += [f"at 1280 px: {problem}" for problem in page.evaluate(CUT_OFF_BOXES)]
        report["figures"] = page.evaluate(FIGURE_SIZES)
        if notebook is not None:
            problems += [f"at 1280 px: {problem}"
                         for problem in check_figure_text(report["figures"], image_metadata(notebook, stem))]
        if axe_script is not None:
            problems += [f"axe-core at 1280 px: {violation}" for violation in run_axe(page, axe_script)]
        page.set_viewport_size(PHONE)
        # The theme makes boxes that now scroll focusable (tabindex 0) 300 ms after a resize.
        page.wait_for_function(TAB_STOPS_MATCH_THE_LAYOUT, timeout=PAGE_SECONDS * 1000, polling=50)
        phone = page.evaluate(PAGE_OVERFLOW)
        if phone["scrollWidth"] > phone["width"]:
            problems.append(f"at 390 px the page scrolls sideways ({phone['scrollWidth']} > {phone['width']} px): "
                            f"{phone['culprits']}")
        problems += [f"at 390 px: {problem}" for problem in page.evaluate(CUT_OFF_BOXES)]
        problems += [f"at 390 px: {problem}" for problem in check_figures_on_a_phone(page.evaluate(PHONE_FIGURES))]
        if axe_script is not None:
            problems += [f"axe-core at 390 px: {violation}" for violation in run_axe(page, axe_script)]
        if phone_figures and notebook is not None:
            problems += [f"at 390 px: {problem}" for problem in
                         check_phone_figures(page, image_metadata(notebook, stem)) + check_code_cues(page)]
        if screenshots:  # last: a full-page screenshot leaves the page laid out without scrollbars
            screenshots[0].parent.mkdir(parents=True, exist_ok=True)
            page.evaluate("() => { document.querySelectorAll('.bd-article details').forEach(d => d.open = false);"
                          " window.scrollTo(0, 0); }")
            page.screenshot(path=str(screenshots[1]))  # the phone's first screen
            page.set_viewport_size(DESKTOP)
            page.screenshot(path=str(screenshots[0]), full_page=True, type="jpeg", quality=80)
        page.wait_for_load_state("networkidle")  # requests started by a click are reported too
    finally:
        context.close()
    return problems, report


# Each collapsed block as the page loads it: what its summary says and whether it is open.
COLLAPSIBLES_ON_LOAD = f"""() => [...document.querySelectorAll('{COLLAPSIBLES}')].map(block => {{
    const summary = block.querySelector(':scope > summary');
    return {{label: summary ? summary.innerText.trim().slice(0, 40) : null, open: block.open}};
}})"""
# Block k's summary brought to the middle of the screen (clear of the sticky header), once the
# page has drawn it there: the point a reader clicks, or null when it is not shown.
SUMMARY_TO_CLICK = f"""async k => {{
    const summary = document.querySelectorAll('{COLLAPSIBLES}')[k].querySelector(':scope > summary');
    summary.scrollIntoView({{block: 'center', inline: 'nearest'}});
    await new Promise(requestAnimationFrame);
    const box = summary.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && summary.checkVisibility({{visibilityProperty: true}})
        ? [box.left + box.width / 2, box.top + box.height / 2] : null;
}}"""
# Block k is open and what it holds shows (the first element after its summary has a box and is visible).
OPENED = f"""k => {{
    const block = document.querySelectorAll('{COLLAPSIBLES}')[k];
    const content = block.querySelector(':scope > :not(summary)');
    if (!block.open || !content || !content.checkVisibility({{visibilityProperty: true}})) return false;
    const box = content.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
}}"""


def check_collapsibles(page):
    """Each collapsed block (``<details>``) in the text is closed on load and opens on a click.

    The click is the mouse's, at the middle of the block's summary as drawn on the screen: a
    summary that is hidden, or covered by something that takes the click, does not open.
    """
    problems = []
    for index, block in enumerate(page.evaluate(COLLAPSIBLES_ON_LOAD)):
        label = block["label"] or ""
        if block["open"]:
            problems.append(f"collapsed block {index} ({label!r}) is open on load")
            continue
        point = None if block["label"] is None else page.evaluate(SUMMARY_TO_CLICK, index)
        if point is not None:
            page.mouse.click(*point)
        if point is None or not page.evaluate(OPENED, index):
            problems.append(f"collapsed block {index} ({label!r}) does not open on click")
    return problems


def expected_collapsibles(notebook):
    """How many collapsed blocks a notebook's page must have: hidden cells plus <details> in Markdown."""
    count = 0
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            count += len(re.findall(r"<details[\s>]", source))
        elif cell["cell_type"] == "code":
            count += bool(book_build.hide_tags(cell.get("metadata", {}), book_build.is_solution(cell)))
    return count


def expected_solution_folds(notebook):
    """How many outputs each solution cell of a notebook has (one entry per solution)."""
    return [len(cell.get("outputs", [])) > 0 for cell in notebook["cells"]
            if cell["cell_type"] == "code" and book_build.is_solution(cell)]


def check_search(browser, url, query):
    """Search the site for ``query``; return ``(problems, texts)``: raw TeX in a snippet or a result's title."""
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url) else route.abort())
    try:
        page.goto(f"{url}search.html?q={query}", wait_until="load", timeout=PAGE_SECONDS * 1000)
        page.wait_for_function("() => /Search finished|did not match/.test("
                               "(document.querySelector('#search-results') || document.body).textContent)",
                               timeout=PAGE_SECONDS * 1000)
        page.wait_for_load_state("networkidle")
        page.wait_for_function("() => [...document.querySelectorAll('#search-results li')]"
                               ".every(li => li.querySelector('p.context') || li.querySelector('span'))",
                               timeout=PAGE_SECONDS * 1000)
        snippets = page.locator("#search-results li p.context").all_inner_texts()
        titles = page.locator("#search-results li > a").all_inner_texts()
    finally:
        context.close()
    problems = [f"raw TeX in a search {kind}: {RAW_TEX.findall(text)[:3]} in {text[:80]!r}"
                for kind, texts in (("snippet", snippets), ("result title", titles)) for text in texts
                if RAW_TEX.search(text)]
    return problems, snippets + titles


# ---------------------------------------------------------------- the site as built

def screenshot_paths(name):
    """Where to keep the page's two screenshots: none unless ``MHATTN_SCREENSHOTS`` names a folder."""
    folder = os.environ.get("MHATTN_SCREENSHOTS")
    if not folder:
        return []
    stem = name.replace("/", "__").replace(".html", "")
    return [Path(folder) / f"{stem}.jpg", Path(folder) / f"{stem}-phone.png"]


@pytest.mark.parametrize("name", PAGES)
def test_book_page_in_browser(browser, site, site_url, axe, name):
    """Every check of :func:`check_page` on one page, axe-core and the phone's figures and code included."""
    notebook = notebook_of(name)
    problems, report = check_page(browser, site_url + name, screenshot_paths(name), notebook, Path(name).stem, axe,
                                  phone_figures=True)
    assert not problems, f"{name}:\n" + "\n".join(problems)
    if report["math"]:
        assert report["mathjax"] and report["typeset"] >= report["math"], report
    if notebook is not None:
        expected = expected_collapsibles(notebook)
        assert report["collapsibles"] == expected, (
            f"{name}: {report['collapsibles']} collapsed blocks on the page, the notebook has "
            f"{expected} (hidden cells and <details>)")
        with_output = expected_solution_folds(notebook)
        assert [count > 0 for count in report["solution_folds"]] == with_output, (
            f"{name}: solution folds holding outputs {report['solution_folds']}, the notebook's solutions "
            f"print {with_output}")


def test_book_every_page_is_built(site):
    for name in PAGES:
        assert (site / name).is_file(), name
    toc = (site / "index.html").read_text(encoding="utf-8")
    positions = [toc.find(f'href="notebooks/{path.stem}.html"') for path in NOTEBOOKS]
    assert -1 not in positions, "a notebook is missing from the landing page's reading order"
    assert positions == sorted(positions), "the landing page lists the notebooks out of order"
    assert 'href="references.html"' in toc


def test_book_contents_put_the_appendix_after_the_chapter_and_the_explorer(site):
    landing = (site / "index.html").read_text(encoding="utf-8")
    sidebar = landing[:landing.index('<article class="bd-article">')]
    captions = re.findall(r'<p aria-level="2" class="caption" role="heading"><span class="caption-text">(.*?)</span>',
                          sidebar)
    assert captions[:2] == ["The chapter", "Appendix"], captions
    chapter, appendix = sidebar.split('<span class="caption-text">Appendix</span>', 1)
    for path in NOTEBOOKS:
        where = appendix if path.stem in book_build.APPENDIX else chapter
        assert f'href="notebooks/{path.stem}.html"' in where, f"{path.stem} is not under its heading"
    article = landing[landing.index('<article class="bd-article">'):]
    for stem in book_build.APPENDIX:
        assert article.index("Appendix") < article.index(f'href="notebooks/{stem}.html"')


def test_book_run_it_live_gives_the_readme_first_command(site):
    """The landing page's command to run the chapter on one's machine is the README's, character for character."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("<!-- first-command -->", 1)[1]
    command = re.search(r"```bash\n(.*?)\n```", readme, re.DOTALL).group(1).strip()
    landing = (site / "index.html").read_text(encoding="utf-8")
    live = landing[landing.index('id="run-it-live"'):]
    blocks = [html.unescape(re.sub(r"<[^>]+>", "", block)).strip()
              for block in re.findall(r"<pre>(.*?)</pre>", live, re.DOTALL)]
    assert command in blocks, blocks


def test_book_former_page_names_lead_to_the_pages_that_hold_them_now(browser, site, site_url):
    """A link to a page under its former name, with or without a #section, lands where that section is now."""
    built = {path.stem for path in NOTEBOOKS}
    moved = {old: new for old, new in book_build.MOVED.items() if new[0] in built}
    assert moved, "no former page name to check"
    ids = {stem: set(re.findall(r'<section id="([^"]+)"', (site / "notebooks" / f"{stem}.html").read_text("utf-8")))
           for stem in built}
    cases = [(old, "", new[0]) for old, new in moved.items()]
    for old, new in moved.items():  # a section found only on a later page goes there
        for other in new[1:]:
            only = sorted(ids.get(other, set()) - ids[new[0]])
            if only:
                cases.append((old, "#" + only[0], other))
        cases.append((old, "#" + sorted(ids[new[0]])[0], new[0]))
    assert any(hash_ and target != book_build.MOVED[old][0] for old, hash_, target in cases), cases
    # Where a page sends the reader is the address its document lands on: the pages themselves
    # (their scripts, styles and pictures, checked page by page above) are not loaded here.
    def documents_only(route):
        return route.continue_() if route.request.resource_type == "document" else route.abort()

    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.route("**/*", documents_only)
    try:
        for old, hash_, target in cases:
            assert (site / "notebooks" / f"{old}.html").is_file(), old
            page.goto(f"{site_url}notebooks/{old}.html{hash_}", wait_until="commit")
            page.wait_for_url(f"**/notebooks/{target}.html{hash_}", wait_until="commit", timeout=PAGE_SECONDS * 1000)
    finally:
        context.close()
    without_script = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = without_script.new_page()
    page.route("**/*", documents_only)
    try:
        old, new = next(iter(moved.items()))
        page.goto(f"{site_url}notebooks/{old}.html", wait_until="commit")
        page.wait_for_url(f"**/notebooks/{new[0]}.html", wait_until="commit", timeout=PAGE_SECONDS * 1000)
    finally:
        without_script.close()


def test_book_landing_page_lists_every_notebook_with_a_promise_and_a_reading_time(site):
    landing = (site / "index.html").read_text(encoding="utf-8")
    article = landing[landing.index('<article class="bd-article">'):]
    for name in book_build.LANDING_FIGURES:
        assert re.search(rf'<img[^>]+src="_images/{re.escape(name)}"', article), f"the landing page lacks {name}"
    for path in NOTEBOOKS:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        item = re.search(rf'<li><p><strong><a class="reference internal" href="notebooks/{path.stem}.html">'
                         rf'(.*?)</a></strong> <span class="reading-time">· (\d+) min</span><br />\s*(.+?)</p>',
                         article, re.DOTALL)
        assert item, f"the landing page has no line for {path.name}"
        shown = html.unescape(re.sub(r"<[^>]+>", "", item.group(1))).replace("\u2019", "'")
        assert shown == book_build.title_of(notebook).replace("\u2019", "'"), shown
        assert int(item.group(2)) == book_build.reading_minutes(notebook)
        assert len(item.group(3).split()) >= 6, f"{path.name}: no one-line promise ({item.group(3)!r})"
    assert "At the end you will be able to" in article


def test_book_every_notebook_has_its_own_promise():
    """A new notebook needs a line in book/build.py's PROMISES (the fallback is only a stopgap)."""
    assert [path.stem for path in NOTEBOOKS if path.stem not in book_build.PROMISES] == []


def test_book_reading_time_counts_prose_and_visible_code():
    words = " ".join(["word"] * 2000)  # 10 minutes at 200 words a minute
    code = "\n".join(["x = 1"] * 50 + ["# NBVAL_IGNORE_OUTPUT", ""])  # 50 lines at 6 s: 5 minutes
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": words},
                          {"cell_type": "code", "metadata": {}, "source": code, "outputs": []},
                          {"cell_type": "code", "metadata": {"jupyter": {"source_hidden": True}},
                           "source": "\n".join(["y = 2"] * 500), "outputs": []}]}
    assert book_build.reading_minutes(notebook) == 15
    notebook["cells"][1]["source"] = "x = 1\n"  # 10 min + 6 s: rounded up to the next 5 minutes
    assert book_build.reading_minutes(notebook) == 15
    assert book_build.reading_minutes({"cells": []}) == 5


def test_book_references_all_link_to_their_source(site):
    text = (site / "references.html").read_text(encoding="utf-8")
    article = text[text.index('<article class="bd-article">'):text.index("</article>")]
    items = re.findall(r"<li>(.*?)</li>", article, re.DOTALL)
    assert len(items) >= 15
    for item in items:
        assert re.search(r'<a class="reference external" href="https://', item), f"no link in: {item[:120]}"
    assert re.search(r"arxiv\.org/abs/1706\.03762", article) and re.search(r"doi\.org/10\.", article)


def test_book_next_links_show_titles(site):
    """A notebook's closing "Next: ..." link shows the next notebook's title, not its file name."""
    for path in NOTEBOOKS:
        page = (site / "notebooks" / f"{path.stem}.html").read_text(encoding="utf-8")
        shown = re.findall(r"<a\b[^>]*>\s*(?:<[^>]+>\s*)*(\d\d_\w+\.ipynb)", page)
        assert not shown, f"{path.name}: links show file names: {shown}"
        for match in re.finditer(r'<p class="prev-next-title">(.*?)</p>', page):
            assert ".ipynb" not in match.group(1), match.group(1)


def test_book_internal_links_resolve(site):
    assert check_links(site) == []


def test_book_math_is_served_by_the_site(site):
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    for name in PAGES:
        text = (site / name).read_text(encoding="utf-8")
        scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', text) + re.findall(r'<link[^>]*\bhref="([^"]+)"', text)
        assert not [url for url in scripts if urlsplit(url).scheme or url.startswith("//")], name


def test_book_code_cells_have_copy_buttons_and_outputs_do_not(browser, site_url):
    """Every code cell has a copy button; what a cell printed has none (code shown by show_source has)."""
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    try:
        page.goto(site_url + notebook_named("01_"), wait_until="load")
        page.wait_for_function("() => document.querySelectorAll('button.copybtn').length > 0")
        counts = page.evaluate("""() => ({
            inputs: document.querySelectorAll('.cell_input div.highlight pre').length,
            input_buttons: document.querySelectorAll('.cell_input button.copybtn').length,
            output_buttons: document.querySelectorAll('.cell_output .output button.copybtn').length})""")
    finally:
        context.close()
    assert counts["inputs"] > 0 and counts["input_buttons"] == counts["inputs"], counts
    assert counts["output_buttons"] == 0, counts


@pytest.mark.parametrize("query", ["divide", "why divide by"])  # the second also matches a section's title
def test_book_search_snippets_show_math_as_text(browser, site_url, query):
    problems, texts = check_search(browser, site_url, query)
    assert texts, "the search found nothing"
    assert not problems, problems
    assert any("√" in text for text in texts), "no snippet or title with math in it was checked"


def test_book_tex_to_text_in_search_snippets(browser, site_url):
    cases = {
        r"\(\sqrt{d_k}\)": "√d_k",
        r"\(\operatorname{softmax}\!\left(\frac{Q K^\mathsf{T}}{\sqrt{d_k}}\right) V\)": "softmax ((Q Kᵀ)/(√d_k)) V",
        r"\[\alpha \le \beta \cdot 2\]": "α ≤ β · 2",
        r"\(x \in \mathbb{R}^{n}\)": "x ∈ ℝ^n",
    }
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    try:
        page.goto(site_url + "search.html", wait_until="load")
        got = {tex: page.evaluate("tex => window.mhattnTexToText(tex)", tex) for tex in cases}
    finally:
        context.close()
    assert got == cases


def test_book_explorer_shows_its_first_frame_only_without_javascript(browser, site, site_url):
    for javascript in (False, True):
        context = browser.new_context(viewport=DESKTOP, java_script_enabled=javascript)
        page = context.new_page()
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(site_url) else route.abort())
        try:
            page.goto(site_url + "notebooks/explore.html", wait_until="load")
            frames = page.locator(".cell_output img")
            assert frames.count() >= 1, "the explorer's page shows no stored frame"
            frame = frames.first
            if javascript:  # the live explorer replaces it: one picture, not two
                page.wait_for_selector("canvas.mhx-heads")
                assert not frame.is_visible() and not page.locator("a", has_text="Run it live").first.is_visible()
                continue
            frame.scroll_into_view_if_needed()
            assert frame.is_visible()
            box = frame.bounding_box()
            assert box["width"] > 300 and box["height"] > 150, box
            assert frame.evaluate("img => img.naturalWidth") > 0
            live = page.locator("a", has_text="Run it live")
            assert live.count() >= 1 and "voila" in live.first.get_attribute("href")
            text = page.locator("main").inner_text()
            assert "model_id" not in text and "widget-view" not in text, "widget JSON shown as text"
            assert "explorer page" not in text.split("Things to try")[0], "the page sends the reader to itself"
        finally:
            context.close()


def test_book_chapters_4_and_5_link_to_the_explorer_page(site):
    for prefix in ("04_", "05_"):
        text = (site / notebook_named(prefix)).read_text(encoding="utf-8")
        article = text[text.index('<article class="bd-article"'):]
        assert re.search(r'<a class="reference [a-z]+" href="explore\.html">The book', article), prefix


# ---------------------------------------------------------------- the page transform

def test_book_for_the_page_collapses_hidden_cells_and_replaces_live_widgets():
    frame = {"output_type": "display_data", "metadata": {"mhattn": {"caption": "The first <frame>"}},
             "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}
    widget = {"output_type": "execute_result", "execution_count": 1, "metadata": {},
              "data": {WIDGET_VIEW: {"model_id": "abc"}, "text/plain": "Explorer(...)"}}
    printed = {"output_type": "stream", "name": "stdout", "text": "Exercise 1: correct.\n"}
    notebook = {"metadata": {"widgets": {"state": {}}}, "nbformat": 4, "nbformat_minor": 5, "cells": [
        {"cell_type": "code", "metadata": {"jupyter": {"source_hidden": True}}, "source": "# Solution\nx = 1",
         "outputs": [printed], "execution_count": 1},
        {"cell_type": "code", "metadata": {"jupyter": {"source_hidden": True, "outputs_hidden": True}},
         "source": "y", "outputs": [], "execution_count": 2},
        {"cell_type": "code", "metadata": {"jupyter": {"source_hidden": True}}, "source": "plot()",
         "outputs": [frame], "execution_count": 3},
        {"cell_type": "code", "metadata": {}, "source": "# NBVAL_IGNORE_OUTPUT\nexplorer()", "outputs": [widget, frame],
         "execution_count": 4},
        {"cell_type": "markdown", "metadata": {}, "source": "<details><summary>Solution</summary>\n\nx\n</details>"},
        {"cell_type": "markdown", "metadata": {}, "source": "Next: [02_b.ipynb](02_b.ipynb), [see 03](03_c.ipynb), "
         "[notebook 02](https://github.com/mhattn/mhattn/blob/HEAD/notebooks/02_b.ipynb) and "
         "[a fork](https://github.com/mhattn/mhattn/blob/HEAD/notebooks/99_gone.ipynb)."},
        {"cell_type": "markdown", "metadata": {}, "source": "See [nb02].\n\n[nb02]: 02_b.ipynb\n[x]: a.ipynb\n"},
        {"cell_type": "markdown", "metadata": {}, "source": "And [nb02].\n\n[nb02]: 02_b.ipynb\n[X]: b.ipynb\n"},
    ]}
    page = book_build.for_the_page(notebook, "04_x", ["02_b.ipynb", "03_c.ipynb"])
    assert "widgets" not in page["metadata"] and "widgets" in notebook["metadata"]  # the input is untouched
    # A solution folds whole, even when only its input is marked hidden.
    assert page["cells"][0]["metadata"]["tags"] == ["hide-cell"]
    assert page["cells"][0]["metadata"]["mystnb"]["code_prompt_show"] == "Show the solution"
    assert page["cells"][1]["metadata"]["tags"] == ["hide-cell"]
    assert page["cells"][2]["metadata"]["tags"] == ["hide-input"]  # hidden code that draws: the figure shows
    assert page["cells"][3]["source"] == "explorer()"
    outputs = page["cells"][3]["outputs"]
    assert outputs[0] == frame and len(outputs) == 3
    caption = outputs[1]["data"]["text/html"]
    assert caption == ('<p class="figure-caption" id="figure-4-2"><span class="caption-number">Figure 4.2.</span>'
                       " The first &lt;frame&gt;</p>")
    assert "Figure 4.1." in page["cells"][2]["outputs"][1]["data"]["text/html"]
    assert "first frame" in outputs[2]["data"]["text/markdown"] and "Run it live" in outputs[2]["data"]["text/markdown"]
    assert page["cells"][4] == notebook["cells"][4]
    assert page["cells"][5]["source"] == ("Next: [](02_b.ipynb), [see 03](03_c.ipynb), [notebook 02](02_b.ipynb) and "
                                          "[a fork](https://github.com/mhattn/mhattn/blob/HEAD/notebooks/99_gone.ipynb).")
    # A definition repeated with the same target goes (one document on the page); a clash stays, for Sphinx to report.
    assert page["cells"][6]["source"] == notebook["cells"][6]["source"]
    assert page["cells"][7]["source"] == "And [nb02].\n\n[X]: b.ipynb\n"
    alone = book_build.for_the_page({**notebook, "cells": [{**notebook["cells"][3], "outputs": [widget]}]})
    note = alone["cells"][0]["outputs"][0]["data"]["text/markdown"]
    assert "Run it live" in note and "first frame" not in note  # says nothing of a frame it does not have
    assert expected_collapsibles(notebook) == 4
    assert expected_solution_folds(notebook) == [True]


def test_book_figure_text_is_measured_as_displayed():
    """The figure check on hand-made measurements: 12 px text shown at half its width is 6 px."""
    meta = [{"mhattn": {"min_font_px": 12.0, "dpi": 100.0}}, {"mhattn": {"min_font_px": 12.0, "dpi": 100.0}}, {}]
    sizes = [{"natural": 700, "displayed": 700.0}, {"natural": 1000, "displayed": 500.0},
             {"natural": 500, "displayed": 500.0}]
    problems = check_figure_text(sizes, meta)
    assert len(problems) == 2
    assert problems[0].startswith("figure 2: smallest text 6.0 px as displayed")
    assert problems[1].startswith("figure 3: no recorded text size")
    assert check_figure_text(sizes[:1], meta[:1]) == []
    assert check_figure_text(sizes, meta[:2]) == ["the page shows 3 figures, the notebook has 2"]


# ---------------------------------------------------------------- captions and alt text

def figure_problems(notebook, stem):
    """Figures of a notebook's page without a caption or alt text: ``["Figure N.k: why", ...]``.

    Also returns the alt texts, in page order, for the check that no two figures share one.
    """
    page = book_build.for_the_page(notebook, stem, [path.name for path in NOTEBOOKS])
    problems, alts = [], []
    for cell in page["cells"]:
        if cell["cell_type"] != "code":
            continue
        outputs = cell.get("outputs", [])
        images = [k for k, output in enumerate(outputs) if book_build.is_image(output)]
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
        for k in images:
            html_caption = outputs[k + 1]["data"].get("text/html", "") if k + 1 < len(outputs) else ""
            match = re.search(r'<span class="caption-number">(.*?)\.</span>(.*)</p>', html_caption)
            label = match.group(1) if match else f"image {k} of a cell"
            if not match or len(match.group(2).split()) < 5:
                problems.append(f"{label}: no caption that says what it means")
            if len(images) > 1 or len(alt.split()) < 8:
                problems.append(f"{label}: no alt text of its own (a cell of {len(images)} figures, alt {alt!r})")
            alts.append((label, alt))
    return problems, alts


def test_book_every_figure_has_a_caption_and_its_own_alt_text():
    problems, alts, count = [], {}, 0
    for path in NOTEBOOKS:
        found, page_alts = figure_problems(json.loads(path.read_text(encoding="utf-8")), path.stem)
        problems += [f"{path.name}: {problem}" for problem in found]
        for label, alt in page_alts:
            count += 1
            alts.setdefault(alt, []).append(f"{path.stem} {label}")
    problems += [f"alt text shared by {', '.join(labels)}" for alt, labels in alts.items() if len(labels) > 1]
    assert count >= 30, f"only {count} figures found"
    assert problems == [], "\n".join(problems)


def test_book_figure_checker_reports_a_figure_without_caption_or_alt():
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR"}}
    caption = {"cell_type": "markdown", "metadata": {"tags": ["figure-caption"]},
               "source": "**Figure 1 of 2.** What the first one means, in a sentence.\n\n"
                         "<!-- alt: What a reader sees in the first one, told in enough words. -->"}
    notebook = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5, "cells": [
        {"cell_type": "code", "metadata": {}, "source": "draw()", "outputs": [image, image], "execution_count": 1},
        caption,
        {"cell_type": "code", "metadata": {}, "source": "draw()", "outputs": [image], "execution_count": 2},
    ]}
    problems, alts = figure_problems(notebook, "03_x")
    assert problems == ["Figure 3.2: no caption that says what it means",
                        "Figure 3.2: no alt text of its own (a cell of 1 figures, alt '')",
                        "Figure 3.3: no caption that says what it means",
                        "Figure 3.3: no alt text of its own (a cell of 1 figures, alt '')"]
    assert alts[0] == ("Figure 3.1", "What a reader sees in the first one, told in enough words.")
    page = book_build.for_the_page(notebook, "03_x")
    assert [cell["cell_type"] for cell in page["cells"]] == ["code", "code", "code"]  # the caption cell went
    assert page["cells"][1]["metadata"]["tags"] == ["remove-input"]  # the second figure, cut off on its own


# ---------------------------------------------------------------- on a phone: figures, code

ZOOM_STATE = """() => { const view = document.querySelector('.figure-zoom-view');
    if (!view || view.hidden) return null;
    const box = view.getBoundingClientRect();
    return {scale: window.mhattnFigureZoom.scale(), role: view.getAttribute('role'),
            covers: box.left <= 0 && box.top <= 0 && box.right >= innerWidth && box.bottom >= innerHeight,
            focusInside: view.contains(document.activeElement)}; }"""


ZOOM_BUTTONS = """() => [...document.querySelectorAll('.bd-article button.figure-zoom')].map(button => {
    const img = button.querySelector('img'), box = button.getBoundingClientRect();
    return {shown: box.width > 0 && box.height > 0 && button.checkVisibility({visibilityProperty: true}),
            natural: img.naturalWidth, displayed: img.getBoundingClientRect().width}; })"""
ZOOM_OPEN = """() => { const view = document.querySelector('.figure-zoom-view');
    return Boolean(view && !view.hidden && window.mhattnFigureZoom.scale() > 0); }"""
ZOOM_SECONDS = 5  # how long a full-size view may take to open and lay out its figure
AFTER_ESCAPE = f"""k => ({{state: ({ZOOM_STATE})(),
    focusBack: document.activeElement === document.querySelectorAll('.bd-article button.figure-zoom')[k]}})"""


def zoom_state_once_open(page):
    """:data:`ZOOM_STATE` once the full-size view shows its figure laid out (or ZOOM_SECONDS have passed)."""
    try:
        page.wait_for_function(ZOOM_OPEN, timeout=ZOOM_SECONDS * 1000)
    except Exception:  # noqa: BLE001 (Playwright's TimeoutError): the state read now says what is wrong
        pass
    return page.evaluate(ZOOM_STATE)


def check_phone_figures(page, metadata):
    """Figures whose smallest text is below MIN_TEXT_PX on the phone, both as shown and after one tap.

    Each figure too small as shown is opened from the keyboard (focus, Enter): the full-size view
    must cover the screen, hold the focus, show the text at >= MIN_TEXT_PX, close on Escape and
    give the focus back to the figure.
    """
    buttons = page.evaluate(ZOOM_BUTTONS)
    if len(buttons) != len(metadata):
        return [f"{len(buttons)} zoomable figures on the page, {len(metadata)} in the notebook"]
    problems = []
    for index, (size, meta) in enumerate(zip(buttons, metadata, strict=True), start=1):
        if not size["shown"]:
            continue  # inside a closed fold
        smallest = meta.get("mhattn", {}).get("min_font_px", 0.0)
        if smallest * size["displayed"] / max(size["natural"], 1) >= MIN_TEXT_PX:
            continue
        page.evaluate("k => document.querySelectorAll('.bd-article button.figure-zoom')[k].focus()", index - 1)
        page.keyboard.press("Enter")
        state = zoom_state_once_open(page)
        if state is None:
            problems.append(f"figure {index}: too small on the phone and Enter opens no full-size view")
            continue
        if state["role"] != "dialog" or not state["covers"] or not state["focusInside"]:
            problems.append(f"figure {index}: the full-size view is not a full-screen dialog with the focus: {state}")
        if smallest * state["scale"] < MIN_TEXT_PX:
            problems.append(f"figure {index}: smallest text {smallest * state['scale']:.1f} px after one tap")
        page.keyboard.press("Escape")
        after = page.evaluate(AFTER_ESCAPE, index - 1)
        if after["state"] is not None:
            problems.append(f"figure {index}: Escape does not close the full-size view")
        elif not after["focusBack"]:
            problems.append(f"figure {index}: the focus does not come back to the figure")
    return problems


CODE_BOXES = """() => [...document.querySelectorAll('.bd-article div.highlight pre')].map((pre, index) => ({
    index, visible: pre.checkVisibility(), overflows: pre.scrollWidth > pre.clientWidth + 1,
    cue: getComputedStyle(pre).backgroundImage, attached: getComputedStyle(pre).backgroundAttachment}))"""


def edge_brightness(image, width, height):
    """Mean grey level (0-255) of a narrow strip at the left and at the right edge of a box's image.

    ``width`` and ``height``: the box's inside, without its scrollbars. Only the middle of its
    height is read (the page's sticky header may cover the top of a tall box's screenshot).
    """
    strip, rows = max(2, min(8, width // 20)), min(image.height, max(1, height))
    top, bottom = rows // 3, max(rows // 3 + 1, 2 * rows // 3)

    def mean(left):
        box = image.crop((left, top, left + strip, bottom))
        return sum(box.histogram()[v] * v for v in range(256)) / (strip * (bottom - top))

    return mean(1), mean(min(width, image.width) - strip - 1)


def check_code_cues(page):
    """Code boxes that scroll sideways on the phone with no visible cue at the edge where code hides.

    Every such box must declare the cue (covers that scroll with the text and two edge shadows that
    stay with the box: four gradients in its background, two of them attached with ``scroll``);
    on the first PIXEL_CHECKED_BOXES of the page the cue is also seen: with the text made
    transparent and the box scrolled to its start, its right edge must be drawn darker than its
    left edge (the shadow of the hidden part).
    """
    from io import BytesIO

    from PIL import Image

    boxes = [box for box in page.evaluate(CODE_BOXES) if box["visible"] and box["overflows"]]
    problems = [f"code box {box['index']} scrolls sideways with no cue declared (background: {box['cue']})"
                for box in boxes if box["cue"].count("gradient") < 4 or box["attached"].count("scroll") < 2]
    boxes = boxes[:PIXEL_CHECKED_BOXES]  # a screenshot each: the first few of the page are enough
    if not boxes:
        return problems
    page.add_style_tag(content=".bd-article pre, .bd-article pre * { color: transparent !important; "
                               "text-shadow: none !important; }")
    for box in boxes:
        pre = page.locator(".bd-article div.highlight pre").nth(box["index"])
        pre.evaluate("pre => { pre.scrollLeft = 0; }")
        pre.scroll_into_view_if_needed()
        box_on_screen = pre.evaluate("""pre => { const r = pre.getBoundingClientRect();
            const top = Math.max(r.top, 0), bottom = Math.min(r.top + pre.clientHeight, innerHeight);
            return {x: r.left, y: top, width: pre.clientWidth, height: Math.max(bottom - top, 1)}; }""")
        image = Image.open(BytesIO(page.screenshot(clip=box_on_screen))).convert("L")  # what the reader sees
        left, right = edge_brightness(image, box_on_screen["width"], box_on_screen["height"])
        if left - right < CUE_CONTRAST:
            text = pre.inner_text()[:40].replace("\n", " ")
            problems.append(f"code box {box['index']} scrolls sideways with no cue at its edge "
                            f"({left:.0f} vs {right:.0f}): {text!r}")
    return problems


def open_on_phone(browser, url, touch=False):
    context = browser.new_context(viewport=PHONE, device_scale_factor=1, has_touch=touch)
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url.split("/notebooks")[0])
               or route.request.url.startswith("data:") else route.abort())
    page.goto(url, wait_until="load", timeout=PAGE_SECONDS * 1000)
    page.wait_for_function("() => window.mhattnFigureZoom !== undefined", timeout=PAGE_SECONDS * 1000)
    return context, page


def test_book_a_tap_opens_a_figure_and_a_tap_closes_it(browser, site_url):
    context, page = open_on_phone(browser, site_url + notebook_named("02_"), touch=True)
    try:
        button = page.locator(".bd-article button.figure-zoom").first
        button.scroll_into_view_if_needed()
        button.tap()
        opened = zoom_state_once_open(page)
        page.locator(".figure-zoom-pane").tap()
        closed = page.evaluate(ZOOM_STATE)
    finally:
        context.close()
    assert opened is not None and opened["scale"] == 1 and opened["covers"], opened
    assert closed is None


PNG_1500 = ("iVBORw0KGgoAAAANSUhEUgAABdwAAAAKCAAAAACLAcMtAAAANklEQVR42u3UMQ0AAAzDsEIv9KLYM9kQciQF4J1IAGDuAJg7AOYOgLkD"
            "YO4A5g6AuQNg7gBcGpy/TbQr4LUxAAAAAElFTkSuQmCC")  # a 1500 x 10 grey image


def test_book_phone_figure_checker_reports_a_shrunk_figure_and_a_cue_on_a_figure(browser, tmp_path):
    """A figure shrunk with no button around it, and cues laid over zoomable ones (an element, a CSS ::after)."""
    image = f'<img alt="a wide figure" src="data:image/png;base64,{PNG_1500}" style="max-width:100%">'
    (tmp_path / "figures.html").write_text(
        '<html lang="en"><body><article class="bd-article">'
        f'<figure>{image}</figure>'
        f'<button class="figure-zoom" style="position:relative;max-width:100%">{image}'
        '<span class="figure-zoom-cue" style="position:absolute;right:0;bottom:0">tap to enlarge</span></button>'
        f'<button class="figure-zoom" style="max-width:100%">{image}'
        '<span class="figure-zoom-cue" style="display:block">tap to enlarge</span></button>'
        f'<button class="figure-zoom overlay" style="position:relative;max-width:100%">{image}</button>'
        '<style>.overlay::after { content: "tap"; position: absolute; right: 0; bottom: 0; }</style>'
        '</article></body></html>', encoding="utf-8")
    with serve(tmp_path) as url:
        context = browser.new_context(viewport=PHONE, device_scale_factor=1)
        page = context.new_page()
        try:
            page.goto(url + "figures.html", wait_until="load")
            figures = page.evaluate(PHONE_FIGURES)
        finally:
            context.close()
    assert len(figures) == 4 and all(figure["natural"] == 1500 for figure in figures), figures
    problems = check_figures_on_a_phone(figures)
    assert len(problems) == 3, problems
    assert re.match(r"\S+: shown at 0\.\d\dx its width and no tap opens it full size", problems[0]), problems
    assert problems[1].endswith("the zoom cue covers part of the figure")  # a cue element on the figure
    assert problems[2].endswith("the zoom cue covers part of the figure")  # a cue drawn by CSS on the figure


def test_book_collapsible_checker_reports_blocks_open_on_load_or_deaf_to_a_click(browser, tmp_path):
    """A block open on load, one whose summary ignores clicks, one under a cover; the last one opens."""
    (tmp_path / "folds.html").write_text(
        '<html lang="en"><body><article class="bd-article">'
        '<details open><summary>open on load</summary><p>shown</p></details>'
        '<details><summary onclick="event.preventDefault()">deaf</summary><p>never shown</p></details>'
        '<div style="position:relative"><details><summary>covered</summary><p>never shown</p></details>'
        '<div style="position:absolute;inset:0"></div></div>'
        '<details><summary>fine</summary><p>shown on a click</p></details>'
        '</article></body></html>', encoding="utf-8")
    with serve(tmp_path) as url:
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        try:
            page.goto(url + "folds.html", wait_until="load")
            problems = check_collapsibles(page)
            last_open = page.evaluate("() => document.querySelectorAll('details')[3].open")
        finally:
            context.close()
    assert problems == ["collapsed block 0 ('open on load') is open on load",
                        "collapsed block 1 ('deaf') does not open on click",
                        "collapsed block 2 ('covered') does not open on click"], problems
    assert last_open


def test_book_phone_checkers_report_small_figures_and_code_without_a_cue(broken_reports):
    """On the broken copy, the zoom script is gone and code boxes lost their shadows."""
    problems = broken_reports[notebook_named("02_")]
    assert [p for p in problems if p.startswith("at 390 px: 0 zoomable figures on the page")], problems
    assert any("no cue declared" in problem for problem in problems), problems
    assert any("no cue at its edge" in problem for problem in problems), problems  # and none is seen


# ---------------------------------------------------------------- axe-core, every page, both sizes

@pytest.fixture(scope="session")
def axe():
    """axe-core's script, installed from the npm registry into build/axe when it is missing."""
    if not AXE_SCRIPT.is_file():
        npm = shutil.which("npm")
        require(None if npm else "npm not found: axe-core is installed from the npm registry (apt-get install npm)")
        import subprocess

        AXE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([npm, "install", "--prefix", str(AXE), "--no-audit", "--no-fund", "axe-core"],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0 or not AXE_SCRIPT.is_file():
            require(f"npm could not install axe-core: {done.stderr.strip()[-300:]}")
    return AXE_SCRIPT


AXE_RUN = """async tags => { const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
    return result.violations.filter(v => ['serious', 'critical'].includes(v.impact)).map(v =>
        `${v.impact} ${v.id}: ${v.help} (${v.nodes.length}: `
        + `${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')})`); }"""


def run_axe(page, axe_script):
    """axe-core's serious and critical violations on the page as it is now (each as one line)."""
    if page.locator(".math").count():
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=PAGE_SECONDS * 1000)
        page.evaluate("() => MathJax.startup.promise")
    if not page.evaluate("() => window.axe !== undefined"):
        page.add_script_tag(path=str(axe_script))
    return page.evaluate(AXE_RUN, AXE_TAGS)


def axe_violations(browser, url, size, axe_script):
    """axe-core's serious and critical violations on one page, freshly loaded at one size."""
    context = browser.new_context(viewport=size, device_scale_factor=1)
    page = context.new_page()
    origin = "{0.scheme}://{0.netloc}/".format(urlsplit(url))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith((origin, "data:"))
               else route.abort())
    try:
        page.goto(url, wait_until="load", timeout=PAGE_SECONDS * 1000)
        return run_axe(page, axe_script)
    finally:
        context.close()


def test_book_axe_reports_a_page_with_violations(browser, axe, tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<html lang="en"><body><p style="color:#bbb;background:#fff">faint text</p>'
                    '<button></button><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></body></html>',
                    encoding="utf-8")
    with serve(tmp_path) as url:
        violations = axe_violations(browser, url + "bad.html", PHONE, axe)
    found = {line.split(":")[0].split()[1] for line in violations}
    assert {"color-contrast", "button-name", "image-alt"} <= found, violations


# ---------------------------------------------------------------- a deliberately broken copy

BROKEN_CSS = """
/* Each rule below brings back one fault the book's checks must catch. */
.bd-article .cell_output img { max-width: 50% !important; }                /* figures shrunk */
.bd-article .cell_input pre { overflow-x: hidden !important; }             /* code cut off */
.bd-article .cell_output pre::-webkit-scrollbar { display: none; }         /* no visible scrollbar */
.bd-article code.literal span.pre { white-space: nowrap !important; }      /* inline code too long for a phone */
.bd-article div.highlight pre { background: none !important; }            /* code boxes without their cue */
"""


@pytest.fixture(scope="session")
def broken_site(site, tmp_path_factory):
    """A copy of the site with each fault the checks look for put back in, one by one."""
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
    text = text.replace("</body>", '<script>console.error("broken on purpose")</script></body>', 1)
    references.write_text(text, encoding="utf-8")
    # A solution folded as its input alone: its printed line sits under the closed fold.
    solutions = broken / notebook_named("01_")
    text = solutions.read_text(encoding="utf-8")
    fold = re.search(r'(<div class="cell tag_hide-cell[^"]*">\s*<details[^>]*>.*?)'
                     r'(<div class="cell_output.*?</div>\s*</div>\s*)(</details>)', text, re.DOTALL)
    solutions.write_text(text[:fold.start()] + fold.group(1) + fold.group(3) + fold.group(2) + text[fold.end():],
                         encoding="utf-8")
    with (broken / "_static" / "book.css").open("a", encoding="utf-8") as css:
        css.write(BROKEN_CSS)
    search = broken / "search.html"
    text = search.read_text(encoding="utf-8")
    search.write_text(re.sub(r'<script src="_static/search-snippets\.js[^"]*"></script>', "", text), encoding="utf-8")
    zoom = broken / notebook_named("02_")  # figures that no tap opens full size
    text = zoom.read_text(encoding="utf-8")
    zoom.write_text(re.sub(r'<script src="\.\./_static/figure-zoom\.js[^"]*"></script>', "", text), encoding="utf-8")
    return {"folder": broken, "image": image}


@pytest.fixture(scope="module")
def broken_reports(browser, broken_site):
    """The problems check_page reports on the broken copy's pages (each page opened once, shared).

    The phone's figures and code boxes are checked on the page whose zoom script is gone.
    """
    names = ["references.html", notebook_named("01_"), notebook_named("02_")]
    with serve(broken_site["folder"]) as url:
        return {name: check_page(browser, url + name, notebook=notebook_of(name), stem=Path(name).stem,
                                 phone_figures=name == notebook_named("02_"))[0]
                for name in names}


def test_book_checkers_report_a_broken_link(broken_site):
    problems = check_links(broken_site["folder"])
    assert problems == ["index.html: referencs.html (no such file)",
                        f"notebooks/{NOTEBOOKS[0].stem}.html: {broken_site['image']} (no such file)"]


def test_book_checkers_report_a_missing_image(broken_reports, broken_site):
    problems = broken_reports[notebook_named("01_")]
    assert f"image did not load: {broken_site['image']}" in problems
    assert any(problem.startswith("HTTP 404") and broken_site["image"].lstrip("./") in problem for problem in problems)


def test_book_checkers_report_raw_and_untypeset_math(broken_reports):
    problems = broken_reports["references.html"]
    assert "math not typeset (1): ['z_2']" in problems, problems
    assert "raw TeX in the text (2): ['$x^2$', '\\\\(y_1\\\\)']" in problems, problems


def test_book_checkers_report_a_console_error(broken_reports):
    assert "console error: broken on purpose" in broken_reports["references.html"]


def test_book_checkers_report_a_solution_output_outside_its_fold(broken_reports):
    problems = broken_reports[notebook_named("01_")]
    assert [p for p in problems if p.startswith("solution 1: output 0 is outside its fold")], problems
    assert not [p for p in problems if p.startswith("solution 2:")], problems  # the others are folded whole


def test_book_checkers_report_figure_text_too_small(broken_reports):
    problems = broken_reports[notebook_named("02_")]
    too_small = re.compile(r"at 1280 px: figure \d+: smallest text .* px as displayed \(< 9\)")
    assert [p for p in problems if too_small.match(p)], problems


def test_book_checkers_report_code_cut_off_without_a_scrollbar(broken_reports):
    problems = broken_reports[notebook_named("02_")]
    assert [p for p in problems if p.startswith("at 1280 px: cut off (overflow-x: hidden): pre")], problems


def test_book_checkers_report_a_hidden_scrollbar(broken_reports):
    problems = broken_reports[notebook_named("02_")]
    assert [p for p in problems if p.startswith("at 390 px: cut off with no visible scrollbar (0px): pre")], problems


def test_book_checkers_report_a_page_wider_than_a_phone(broken_reports):
    problems = broken_reports[notebook_named("02_")]
    assert [p for p in problems if p.startswith("at 390 px the page scrolls sideways")], problems


def test_book_checkers_report_raw_tex_in_search_snippets(browser, broken_site):
    with serve(broken_site["folder"]) as url:
        problems, texts = check_search(browser, url, "why divide by")
    assert [p for p in problems if p.startswith("raw TeX in a search snippet")], (problems, texts)
    assert [p for p in problems if p.startswith("raw TeX in a search result title")], (problems, texts)


def test_book_checkers_report_external_requests(browser, tmp_path):
    page = tmp_path / "external.html"
    page.write_text('<html><body><img src="https://example.org/x.png"></body></html>', encoding="utf-8")
    with serve(tmp_path) as url:
        problems, _ = check_page(browser, url + "external.html")
    assert "external request: https://example.org/x.png" in problems
    assert "image did not load: https://example.org/x.png" in problems
