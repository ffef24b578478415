"""How long the book's live explorer takes to redraw, in headless Chromium.

Writes the explorer alone (book/live_explorer.py) into a temporary folder, opens it from
file://, and for a few states, the heaviest ones included (d_model 64, 8 heads, 32 tokens,
RoPE; the trained model on 32 letters), changes a control back and forth and reports the
median and the worst of the page's own timing of each redraw (computing the frame and
drawing both canvases), and the bytes the explorer adds to the site.

    .venv/bin/python benchmarks/book_explorer_redraw.py [--repeats 20]
"""

import argparse
import importlib.util
import statistics
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
STATES = {  # name: the controls to set first, then the control moved back and forth
    "untrained, d_model 64, 4 heads, 8 tokens": ([], ("seed", ["0", "123"])),
    "untrained, d_model 64, 8 heads, 32 tokens, padding, RoPE": (
        [("numHeads", "8"), ("seqLen", "32"), ("mask", "padding"), ("rope", "on")], ("seed", ["0", "123"])),
    "trained, 32 letters": ([("trained", "1"), ("tokens", "abcdefghijklmnop" * 2)], ("layer", ["0", "1"])),
}


def set_control(page, name, value):
    control = page.locator(f"[data-control={name}]")
    if control.evaluate("el => el.tagName") == "SELECT":
        control.select_option(value)
    else:
        control.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("live_explorer", ROOT / "book" / "live_explorer.py")
    live_explorer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(live_explorer)
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        page_path = live_explorer.write_standalone(folder)
        names = [*live_explorer.SCRIPTS, live_explorer.STYLE]
        added = sum((Path(folder) / name).stat().st_size for name in names)
        print(f"added to the site: {added} bytes ({added / 1e6:.2f} MB)")
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for name, (setup, (control, values)) in STATES.items():
            page = browser.new_page(viewport={"width": 1000, "height": 1000})
            page.goto(page_path.as_uri())
            page.wait_for_function("() => window.__explorerFrame !== undefined")
            for setting in setup:
                set_control(page, *setting)
            times = []
            for i in range(args.repeats + 2):
                set_control(page, control, values[i % 2])
                if i >= 2:  # the first two warm up the JIT and decode the data
                    times.append(page.evaluate("() => window.__explorerFrame.ms"))
            print(f"{name}: median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms "
                  f"over {len(times)} redraws")
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
