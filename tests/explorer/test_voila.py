"""The explorer in a real browser: Voila serves notebooks/explore.ipynb, Chromium drives it.

Voila runs as a reader runs it, ``voila notebooks/explore.ipynb`` from the repository root,
with no extra options: the repository's ``voila.json`` and ``voila.py`` are what keep the
console clean and the page offline (they load only the widget managers, and a template without
Voila's Font Awesome style sheets from a CDN). Every test asserts that the console holds no
warning and no error, and that the page asked nothing of any host but Voila's own.

Chromium is ``tests/browser_path.py``'s: ``MHATTN_CHROMIUM`` if set, else /usr/bin/chromium.
Skips with the reason when Chromium, Playwright or Voila is missing -- except under
``CI=true``, where a missing piece is a failure: CI installs all three.

The browser tests share one Voila and one Chromium, each page in a browser context of its own.
A test that changes the explorer gets it as a reader first sees it (a page no test has changed
yet, or a new load with a new kernel); a check that holds in every state reads the module's
page of its width as earlier tests left it.

Set ``MHATTN_SCREENSHOTS=/some/folder`` to keep a screenshot of each step.
"""

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from browser_path import chromium_path

from mhattn.explorer.draw import DPI, FIGSIZE, SCALE, SMALL, part_widths

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "explore.ipynb"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
GITHUB = "https://github.com/mhattn/mhattn/blob/HEAD/"
PAGE_LOAD_SECONDS = 25  # per attempt; about 1 Voila load in 15 never finishes, so reload
PAGE_LOAD_ATTEMPTS = 3
PICTURE = "img.widget-image"


def missing_requirement():
    """Why the browser test cannot run here, or None."""
    if not os.access(chromium_path(), os.X_OK):
        return (f"Chromium not found at {chromium_path()} (Debian/Ubuntu: apt-get install chromium; "
                "or set MHATTN_CHROMIUM to its path)")
    for module, install in (("playwright", "pip install playwright"), ("voila", "pip install voila")):
        if importlib.util.find_spec(module) is None:
            return f"Python package {module} not installed ({install})"
    return None


@pytest.fixture(scope="module")
def requirements():
    reason = missing_requirement()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and the browser test cannot run: {reason}")
    pytest.skip(reason)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def voila_server(home, *options, log_path=None):
    """Start ``voila notebooks/explore.ipynb`` as a reader does, with ``home`` as HOME; yield its URL.

    ``options``: more command-line options (the tests add none but a free port, unless they say so).
    ``log_path``: where its output goes (default: ``voila.log`` in ``home``).

    Raises RuntimeError if it does not answer within a minute; stops it (and its kernels) at the end.
    """
    port = free_port()
    log_path = Path(log_path or Path(home) / "voila.log")
    env = {**os.environ, "HOME": str(home), "MPLCONFIGDIR": str(Path(home) / "matplotlib"),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "voila", str(NOTEBOOK.relative_to(ROOT)), "--no-browser", f"--port={port}",
             "--Voila.ip=127.0.0.1", *options],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + 60
            while True:  # every GET / starts a kernel: poll a static file instead
                try:
                    with urllib.request.urlopen(url + "voila/static/voila.js", timeout=2) as reply:
                        if reply.status == 200:
                            break
                except OSError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(f"Voila did not start (exit code {server.poll()}):\n{log_path.read_text()}")
                time.sleep(0.1)
            yield url
        finally:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)  # the whole group: Voila shuts its kernels down
                try:
                    server.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """HOME for the module's Voila servers: Jupyter and matplotlib write here, not in the real home."""
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def voila_url(requirements, home):
    try:
        with voila_server(home) as url:
            yield url
    except RuntimeError as error:
        pytest.fail(str(error))


@pytest.fixture(scope="module")
def browser(requirements):
    """One Chromium for the module; every page opens in a browser context of its own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def load_explorer(browser, voila_url, width):
    """Open the explorer in a new browser context ``width`` px wide; return the page once the plot shows.

    The page records what its console says and every URL it asks for that Voila does not serve,
    in ``page.errors``, ``page.warnings`` and ``page.elsewhere``.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    errors, warnings, elsewhere = [], [], []
    context = browser.new_context(viewport={"width": width, "height": 1200})
    page = context.new_page()
    page.on("request", lambda asked: None if is_voila_s(asked.url, voila_url) else elsewhere.append(asked.url))
    page.on("console", lambda message: {"error": errors, "warning": warnings}.get(message.type, []).append(
        message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        for attempt in range(1, PAGE_LOAD_ATTEMPTS + 1):  # each load gets a fresh kernel
            for seen in (errors, warnings, elsewhere):  # an abandoned load may log messages of its own
                seen.clear()
            try:
                page.goto(voila_url, wait_until="commit", timeout=PAGE_LOAD_SECONDS * 1000)
                page.wait_for_selector(PICTURE, timeout=PAGE_LOAD_SECONDS * 1000)
                break
            except PlaywrightTimeoutError:
                if attempt == PAGE_LOAD_ATTEMPTS:
                    raise
    except BaseException:
        context.close()
        raise
    page.errors, page.warnings, page.elsewhere = errors, warnings, elsewhere
    return page


class LoadedPages:
    """The explorer loaded once per width for the module, and which of those pages a test has changed."""

    def __init__(self, browser, voila_url):
        self.browser, self.voila_url = browser, voila_url
        self.pages, self.changed = {}, set()

    def at(self, width):
        if width not in self.pages:
            self.pages[width] = load_explorer(self.browser, self.voila_url, width)
        return self.pages[width]

    def close(self):
        for page in self.pages.values():
            page.context.close()


@pytest.fixture(scope="module")
def loaded_pages(browser, voila_url):
    pages = LoadedPages(browser, voila_url)
    yield pages
    pages.close()


@pytest.fixture
def shown_page(loaded_pages, request):
    """The module's explorer page at the width the test asks for (default 1280 px), in whatever state
    earlier tests left it: for checks that hold in every state of the explorer."""
    return loaded_pages.at(getattr(request, "param", 1280))


@pytest.fixture
def page(loaded_pages, request):
    """The explorer as a reader first sees it, at the width the test asks for (default 1280 px), for a
    test to change: the module's page at that width while no test has changed it, else a new load (and
    so a new kernel) in a new browser context."""
    width = getattr(request, "param", 1280)
    if width not in loaded_pages.changed:
        loaded_pages.changed.add(width)
        yield loaded_pages.at(width)
        return
    page = load_explorer(loaded_pages.browser, loaded_pages.voila_url, width)
    try:
        yield page
    finally:
        page.context.close()


def is_voila_s(url, voila_url):
    """Whether ``url`` is served by Voila itself (``blob:`` and ``data:`` URLs are the page's own)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "blob":
        parts = urllib.parse.urlsplit(parts.path)
    elif parts.scheme == "data":
        return True
    return f"{parts.scheme}://{parts.netloc}/" == voila_url


def picture_src(page):
    return page.get_attribute(PICTURE, "src")


def wait_for_new_picture(page, old_src):
    """Wait until the plot shows a new image, then until it has stopped changing for 0.5 s."""
    page.wait_for_function(f"old => document.querySelector('{PICTURE}').src !== old", arg=old_src, timeout=20000)
    src, since = picture_src(page), time.monotonic()
    while time.monotonic() - since < 0.5:
        page.wait_for_timeout(100)
        if (now := picture_src(page)) != src:
            src, since = now, time.monotonic()
    return src


def picture_is_drawn(page):
    """Both <img> hold a decoded picture of their part's size (900 x 850 and 600 x 850), not a broken image."""
    widths = [round(width * SCALE) for width in part_widths()]
    height = round(FIGSIZE[1] * DPI * SCALE)
    return page.evaluate(f"""() => {{
        const images = [...document.querySelectorAll('{PICTURE}')];
        return images.length === 2 && images.every((img, i) =>
            img.complete && img.naturalWidth === {widths}[i] && img.naturalHeight === {height});
    }}""")


def shown_pictures(page):
    """Each part's box on the page and its natural width, in pixels."""
    return page.evaluate(f"""() => [...document.querySelectorAll('{PICTURE}')].map(img => {{
        const box = img.getBoundingClientRect();
        return {{x: box.x, y: box.y, width: box.width, height: box.height, natural: img.naturalWidth}};
    }})""")


def smallest_text_px(shown):
    """The smallest text of a part as shown, in CSS pixels: the figure's smallest, scaled as the image is."""
    return SMALL * DPI / 72 * shown["width"] / (shown["natural"] / SCALE)


def readout(page):
    return page.inner_text(".widget-html:has(code)")


def assert_clean_console(page):
    """No warning, no error, and no request to any host but Voila's."""
    assert page.errors == [], page.errors
    assert page.warnings == [], page.warnings
    assert page.elsewhere == [], page.elsewhere


def screenshot(page, name):
    folder = os.environ.get("MHATTN_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_the_console_stays_clean_but_hides_no_message_of_its_own(shown_page):
    """The template leaves off only webpack's notes on shared-module versions: a warning still shows."""
    page = shown_page
    assert_clean_console(page)
    own = {"warning": "a warning of the page", "error": "an error of the page"}
    page.evaluate(f"console.warn('{own['warning']}'); console.error('{own['error']}')")
    try:
        deadline = time.monotonic() + 5
        while not (page.warnings and page.errors) and time.monotonic() < deadline:
            page.wait_for_timeout(20)
        assert page.warnings == [own["warning"]] and page.errors == [own["error"]]
    finally:  # the page's own two messages, and only those, leave the record: later checks see the rest
        for seen, text in ((page.warnings, own["warning"]), (page.errors, own["error"])):
            while text in seen:
                seen.remove(text)


@pytest.mark.parametrize("shown_page", [390, 1280], indirect=True)
def test_the_picture_reads_without_zooming_on_a_phone_and_sits_in_one_row_on_a_desktop(shown_page):
    """Two parts, each never stretched; stacked on a phone, with no text under 9 CSS px."""
    page = shown_page
    assert picture_is_drawn(page)
    heads, pca = shown_pictures(page)
    width = page.viewport_size["width"]
    for part in (heads, pca):
        assert part["x"] >= 0 and part["x"] + part["width"] <= width, part
        assert part["width"] <= part["natural"] / SCALE + 0.5, part  # at most its CSS width: sharp
        assert smallest_text_px(part) >= 9, part
    if width < sum(part_widths()):
        assert pca["y"] >= heads["y"] + heads["height"] - 1, (heads, pca)  # one above the other
    else:
        assert pca["y"] == heads["y"] and pca["x"] >= heads["x"] + heads["width"] - 1, (heads, pca)
        assert heads["width"] == part_widths()[0] and pca["width"] == part_widths()[1]
    folder = os.environ.get("MHATTN_SCREENSHOTS")
    if folder:  # the two images and the row that holds them (Voila's page scrolls inside itself)
        page.locator(PICTURE).first.locator("..").screenshot(path=str(Path(folder) / f"7_picture_at_{width}_px.png"))
    assert_clean_console(page)


def test_explorer_redraws_in_a_real_browser(page):
    screenshot(page, "0_loaded")
    assert picture_is_drawn(page)
    assert "seq_len=8 · num_heads=4 · d_k=16" in readout(page)
    check_static_copy_and_links(page)

    # seq_len: one step right with the keyboard, as a reader would nudge the slider
    slider = page.locator(".widget-slider", has_text="seq_len")
    handle = slider.locator(".noUi-handle")
    src = picture_src(page)
    handle.focus()
    handle.press("ArrowRight")
    src = wait_for_new_picture(page, src)
    assert handle.get_attribute("aria-valuenow").startswith("9")
    assert "seq_len=9 · num_heads=4" in readout(page)
    assert "row sums, queries 0 to 8" in readout(page)
    assert picture_is_drawn(page)
    screenshot(page, "1_seq_len_9")
    assert_clean_console(page)

    # num_heads: pick 2 from the dropdown
    heads = page.locator(".widget-dropdown", has_text="num_heads").locator("select")
    heads.select_option(label="2")
    src = wait_for_new_picture(page, src)
    assert "seq_len=9 · num_heads=2 · d_k=32" in readout(page)
    assert picture_is_drawn(page)
    screenshot(page, "2_num_heads_2")
    assert_clean_console(page)

    # d_model: the num_heads dropdown now offers only the divisors of 12
    page.locator(".widget-dropdown", has_text="d_model").locator("select").select_option(label="12")
    src = wait_for_new_picture(page, src)
    options = heads.locator("option").all_inner_texts()
    assert options == ["1", "2", "3", "4", "6"]
    assert "num_heads=2 · d_k=6" in readout(page)

    # the causal mask
    page.get_by_role("button", name="causal").click()
    src = wait_for_new_picture(page, src)
    assert "mask=causal" in readout(page)
    assert picture_is_drawn(page)
    screenshot(page, "3_causal")
    assert_clean_console(page)


def check_static_copy_and_links(page):
    """The stored picture (for renderers without a kernel) hides once the live widget is there.

    Every link answers: anchors name an element of the page, GitHub links a file of this
    repository, and anything else must be served by Voila itself (no 403 for a notebook).
    """
    assert_clean_console(page)
    static_copies = page.locator(".jp-OutputArea-child:has(.jp-RenderedImage) img")
    assert static_copies.count() == 1 and not static_copies.first.is_visible()
    assert page.locator(PICTURE).first.is_visible()
    links = page.eval_on_selector_all("a[href]", "links => links.map(a => [a.getAttribute('href'), a.href])")
    assert any(href.startswith(GITHUB) for href, _ in links)
    for href, url in links:
        if href.startswith("#"):
            assert page.locator(f"[id='{href[1:]}']").count() == 1, href
        elif href.startswith(GITHUB):
            assert (ROOT / href.removeprefix(GITHUB)).is_file(), href
        else:
            assert page.request.get(url).status == 200, (href, url)
    assert_clean_console(page)


def test_trained_weights_and_typed_tokens_in_a_real_browser(page):
    src = picture_src(page)
    page.get_by_role("button", name="trained (induction)").click()
    src = wait_for_new_picture(page, src)
    assert "trained model · layer 1 of 2" in readout(page)
    assert "8 tokens: a b c d x a b c" in readout(page)
    assert not page.locator(".widget-slider", has_text="seq_len").is_visible()  # only the controls that act
    screenshot(page, "4_trained")

    box = page.locator(".widget-text", has_text="tokens").locator("input")
    box.fill("q w e r q w e r")
    box.press("Enter")
    src = wait_for_new_picture(page, src)
    assert "8 tokens: q w e r q w e r" in readout(page) and "prefix-matching score per head" in readout(page)
    assert picture_is_drawn(page)

    page.get_by_role("button", name="layer 0").click()
    src = wait_for_new_picture(page, src)
    assert "layer 0 of 2" in readout(page)
    screenshot(page, "5_layer_0")

    box.fill("q w 3")
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('.widget-html code').innerText.includes('still showing')",
                           timeout=20000)
    assert "8 tokens: q w e r q w e r" in readout(page)
    assert_clean_console(page)

    # untrained again, with the bad tokens still in the hidden box: the untrained controls draw
    page.get_by_role("button", name="untrained").click()
    src = wait_for_new_picture(page, src)
    assert "still showing" not in readout(page) and "seq_len=8 · num_heads=4" in readout(page)
    handle = page.locator(".widget-slider", has_text="seq_len").locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    wait_for_new_picture(page, src)
    assert "seq_len=9 · num_heads=4" in readout(page)
    assert_clean_console(page)


@pytest.mark.parametrize("page", [390], indirect=True)
def test_seq_len_and_num_heads_work_on_a_phone(page):
    """At 390 px the rows of controls wrap: the slider and the dropdown are whole on screen and act."""
    slider = page.locator(".widget-slider", has_text="seq_len")
    heads = page.locator(".widget-dropdown", has_text="num_heads").locator("select")
    for control in (slider.locator(".noUi-handle"), slider.locator(".widget-readout"), heads):
        box = control.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    src = picture_src(page)
    handle = slider.locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    src = wait_for_new_picture(page, src)
    assert "seq_len=9 · num_heads=4" in readout(page)
    heads.select_option(label="2")
    wait_for_new_picture(page, src)
    assert "seq_len=9 · num_heads=2" in readout(page)
    screenshot(page, "6_phone")
    assert_clean_console(page)


# ---------------------------------------------------------------- kernels of closed pages

def test_voila_json_shuts_down_the_kernel_of_a_page_closed_for_two_minutes():
    """The repository's voila.json, read as Voila reads it, gives its kernel manager the culling settings."""
    pytest.importorskip("voila")
    from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
    from traitlets.config.loader import JSONFileConfigLoader

    config = JSONFileConfigLoader("voila.json", path=str(ROOT)).load_config()
    manager = AsyncMappingKernelManager(config=config)
    assert manager.cull_idle_timeout == 120  # seconds without a connection or activity; 0 would keep it forever
    assert 0 < manager.cull_interval <= manager.cull_idle_timeout / 2
    assert not manager.cull_connected  # an open page keeps its kernel, however long the reader pauses
    assert not manager.cull_busy


def test_voila_shuts_down_the_kernel_of_a_page_nobody_has_open(requirements, home, tmp_path):
    """A page view whose browser never connects (or has gone) loses its kernel once idle; the server goes on.

    Voila runs from the repository root, with only the culling's times shortened (10 s idle, checked every
    second; rendering the page keeps its kernel busy, so it is not culled before the page is served).
    """
    log = tmp_path / "voila.log"
    with voila_server(home, "--MappingKernelManager.cull_idle_timeout=10",
                      "--MappingKernelManager.cull_interval=1", log_path=log) as url:
        with urllib.request.urlopen(url, timeout=120) as reply:  # renders the page: one kernel starts
            assert reply.status == 200 and "widget-view" in reply.read().decode()
        started = re.findall(r"Kernel started: ([0-9a-f-]+)", log.read_text())
        assert len(started) == 1, log.read_text()[-3000:]
        deadline = time.monotonic() + 90
        while f"Kernel shutdown: {started[0]}" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.25)
        text = log.read_text()
        assert f"Kernel shutdown: {started[0]}" in text and "Culling" in text, text[-3000:]
        with urllib.request.urlopen(url + "voila/static/voila.js", timeout=10) as reply:
            assert reply.status == 200
