"""The explorer app in a real browser: how long the first picture takes, and each redraw.

Run from the repository root (needs the test extra and Chromium, as tests/explorer/test_voila.py)::

    python benchmarks/bench_voila.py            # 5 page loads, 5 redraws of each kind per load
    python benchmarks/bench_voila.py --runs 3

Voila serves ``notebooks/explore.ipynb`` as a reader starts it (``voila notebooks/explore.ipynb``
here, with this folder's ``voila.json`` and ``voila.py``), and Chromium (``MHATTN_CHROMIUM`` or
/usr/bin/chromium) opens it at 1280 x 900, each run in a fresh page with a fresh kernel:

- **first paint**: from the page request to the first picture decoded in the page, the
  kernel's start and the notebook's run included;
- **redraw**: from a key pressed in the page to the last picture it brings, decoded (the
  picture is two images, the heatmaps and the PCA plot: the later of the two counts; the
  times are taken in the page, with ``performance.now()``): ``seq_len`` one step with the
  arrow keys (new ticks: the figure's static parts are drawn again), and ``seed`` typed in its
  box and Enter (only the heatmaps and points change).

Prints the median and the range of each, against the limits of an app that feels immediate
(``LIMITS``: a first picture within 5 s, a redraw within 150 ms, at the median). On a machine
busy with other work every number grows; the load average is printed beside them.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "explorer")]
from browser_path import chromium_path  # noqa: E402
from test_voila import CHROMIUM_ARGS, PAGE_LOAD_ATTEMPTS, PICTURE, voila_server  # noqa: E402

LIMITS = {"first paint": 5000.0, "redraw seq_len": 150.0, "redraw seed": 150.0}  # ms, at the median
STABLE_MS = 600  # a redraw is over when no new picture came for this long

# Records, in the page, when a key goes down and when each new picture has been decoded.
WATCH = f"""() => {{
    window.benchKeys = []; window.benchPictures = [];
    document.addEventListener('keydown', () => window.benchKeys.push(performance.now()), true);
    for (const img of document.querySelectorAll('{PICTURE}')) {{
        img.addEventListener('load', () => window.benchPictures.push(performance.now()));
    }}
}}"""


def first_paint(page, url):
    """Milliseconds from the request to the first decoded picture, or None if the load hung."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    start = time.monotonic()
    page.goto(url, wait_until="commit", timeout=30000)
    try:
        page.wait_for_function(f"() => {{ const images = [...document.querySelectorAll('{PICTURE}')];"
                               "return images.length === 2"
                               " && images.every(img => img.complete && img.naturalWidth > 0); }",
                               timeout=30000, polling=20)
    except PlaywrightTimeoutError:
        return None  # about 1 Voila load in 15 never finishes: the caller reloads
    return 1000 * (time.monotonic() - start)


def redraw(page, press):
    """Milliseconds from the key that ``press()`` sends to the last picture it brought."""
    page.evaluate("() => { window.benchKeys.length = 0; window.benchPictures.length = 0; }")
    press()
    page.wait_for_function("() => window.benchPictures.length > 0", timeout=20000, polling=20)
    while True:  # until no new picture for STABLE_MS
        page.wait_for_timeout(STABLE_MS)
        last = page.evaluate("() => [window.benchPictures.at(-1), performance.now()]")
        if last[1] - last[0] >= STABLE_MS:
            break
    key, picture = page.evaluate("() => [window.benchKeys.at(-1), window.benchPictures.at(-1)]")
    return picture - key


def one_run(browser, url, times, redraws):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        for _ in range(PAGE_LOAD_ATTEMPTS):
            paint = first_paint(page, url)
            if paint is not None:
                break
            times.setdefault("hung loads", []).append(1)
        else:
            return
        times["first paint"].append(paint)
        page.evaluate(WATCH)
        handle = page.locator(".widget-slider", has_text="seq_len").locator(".noUi-handle")
        seed = page.locator(".widget-text", has_text="seed").locator("input")
        for i in range(redraws):
            handle.focus()
            times["redraw seq_len"].append(redraw(page, lambda i=i: handle.press("ArrowRight" if i % 2 == 0
                                                                                 else "ArrowLeft")))
            seed.fill(str(200 + i))
            times["redraw seed"].append(redraw(page, lambda: seed.press("Enter")))
    finally:
        page.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="page loads, each with a fresh kernel")
    parser.add_argument("--redraws", type=int, default=5, help="redraws of each kind per page load")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    times = {name: [] for name in LIMITS}
    with tempfile.TemporaryDirectory() as home, voila_server(home) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            for _ in range(args.runs):
                one_run(browser, url, times, args.redraws)
        finally:
            browser.close()
    print(f"explorer app in Chromium, {args.runs} page loads; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    for name, limit in LIMITS.items():
        values = times[name]
        if not values:
            print(f"{name:>15}: no measurement")
            continue
        median = statistics.median(values)
        verdict = "within" if median <= limit else "over"
        print(f"{name:>15}: median {median:7.0f} ms  (min {min(values):.0f}, max {max(values):.0f}, "
              f"n={len(values)}; {verdict} {limit:.0f} ms)")
    if times.get("hung loads"):
        print(f"{'hung loads':>15}: {len(times['hung loads'])} (reloaded; not in the first-paint times)")


if __name__ == "__main__":
    main()
