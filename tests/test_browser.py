"""The explorer in a real browser: Voila serves notebooks/explore.ipynb, Chromium drives it.

Skips with the reason when Chromium, Playwright or Voila is missing -- except under
``CI=true``, where a missing piece is a failure: CI installs all three.

Set ``MHATTN_SCREENSHOTS=/some/folder`` to keep a screenshot of each step.
"""

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "explore.ipynb"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# JupyterLab extensions built for a newer JupyterLab than the one inside Voila fail to load
# and log errors that have nothing to do with the explorer; Voila needs none of them.
DENIED_EXTENSIONS = '["jupyterlab-jupytext", "@jupyter-notebook/lab-extension", "@voila-dashboards/jupyterlab-preview"]'
PAGE_LOAD_SECONDS = 25  # per attempt; about 1 Voila load in 15 never finishes, so reload
PAGE_LOAD_ATTEMPTS = 3
PICTURE = "img.widget-image"


def missing_requirement():
    """Why the browser test cannot run here, or None."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"Chromium not found at {CHROMIUM} (Debian/Ubuntu: apt-get install chromium)"
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


@pytest.fixture(scope="module")
def voila_url(requirements, tmp_path_factory):
    home = tmp_path_factory.mktemp("home")  # Jupyter and matplotlib write here, not in the real home
    port = free_port()
    log = (home / "voila.log").open("w")
    env = {**os.environ, "HOME": str(home), "MPLCONFIGDIR": str(home / "matplotlib"),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "voila", str(NOTEBOOK), "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1",
         f"--VoilaConfiguration.extension_denylist={DENIED_EXTENSIONS}"],
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
                pytest.fail(f"Voila did not start (exit code {server.poll()}):\n{(home / 'voila.log').read_text()}")
            time.sleep(0.25)
        yield url
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # the whole group: Voila shuts its kernels down
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()


@pytest.fixture
def page(voila_url):
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import sync_playwright

    errors = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1200})
            # Voila asks a CDN for fonts: answer locally instead (an abort would log an error).
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(voila_url)
                       else route.fulfill(status=204, body=""))
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            for attempt in range(1, PAGE_LOAD_ATTEMPTS + 1):  # each load gets a fresh kernel
                errors.clear()  # an abandoned load may log errors of its own
                try:
                    page.goto(voila_url, wait_until="commit", timeout=PAGE_LOAD_SECONDS * 1000)
                    page.wait_for_selector(PICTURE, timeout=PAGE_LOAD_SECONDS * 1000)
                    break
                except PlaywrightTimeoutError:
                    if attempt == PAGE_LOAD_ATTEMPTS:
                        raise
            page.errors = errors
            yield page
        finally:
            browser.close()


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
    """The <img> holds a decoded picture of the figure's size (960 x 456), not a broken image."""
    return page.evaluate(f"""() => {{
        const img = document.querySelector('{PICTURE}');
        return img.complete && img.naturalWidth === 960 && img.naturalHeight === 456;
    }}""")


def readout(page):
    return page.inner_text(".widget-html:has-text('row sums')")


def screenshot(page, name):
    folder = os.environ.get("MHATTN_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def test_explorer_redraws_in_a_real_browser(page):
    screenshot(page, "0_loaded")
    assert picture_is_drawn(page)
    assert "seq_len=8 · num_heads=4 · d_k=16" in readout(page)
    assert page.errors == [], page.errors

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
    assert page.errors == [], page.errors

    # num_heads: pick 2 from the dropdown
    heads = page.locator(".widget-dropdown", has_text="num_heads").locator("select")
    heads.select_option(label="2")
    src = wait_for_new_picture(page, src)
    assert "seq_len=9 · num_heads=2 · d_k=32" in readout(page)
    assert picture_is_drawn(page)
    screenshot(page, "2_num_heads_2")
    assert page.errors == [], page.errors

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
    assert page.errors == [], page.errors
