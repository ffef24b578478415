"""The book's live explorer (book/live_explorer.py, book/_static/explorer*.js), checked in Chromium.

The page computes every frame in JavaScript. Here each control is moved in turn, and after each
move the page must have redrawn once, report the state the controls say, and hold the numbers
that :func:`mhattn.explorer.frame.compute_frame` gives for that state: attention weights, the
PCA points and their share of the variance, the trained model's guesses and its heads' scores,
within 1e-6 (both compute in float64; only the order of the sums differs). The canvas must show
those weights: the colour of sampled cells is matplotlib's "Blues" of mhattn's weight. No console
error, no request that leaves the page's own folder. The page runs from an HTTP server and from a
plain folder (file://), and the built book's explorer page loads it.

The same checks run on deliberately broken copies (a changed weight, a deaf control, a console
error, a request to another host, a transposed drawing) and must report each fault.

Skips with the reason when Chromium or Playwright is missing, except under ``CI=true``.
"""

import base64
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from browser_path import chromium_path
from serving import serve

from mhattn.explorer.frame import State, compute_frame

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = chromium_path()  # MHATTN_CHROMIUM, else /usr/bin/chromium
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


live_explorer = load("live_explorer", ROOT / "book" / "live_explorer.py")

TOLERANCE = 1e-6  # float64 on both sides: only the order of the sums differs (errors near 1e-14 seen)
COLOUR_LEVELS = 6  # the page interpolates Blues' nine colours; matplotlib uses a 256-entry table
# Each step: (control, value); every control appears, and the states sample both weights, every
# mask, RoPE on an even and an odd d_k, the widest layer and the longest sequence.
STEPS = [("seqLen", "13"), ("dModel", "12"), ("numHeads", "6"), ("mask", "causal"), ("seed", "3"),
         ("mask", "padding"), ("rope", "on"), ("numHeads", "4"), ("dModel", "64"), ("numHeads", "8"),
         ("seqLen", "32"), ("trained", "1"), ("tokens", "q w e r q w e r"), ("layer", "0"), ("positions", "none"),
         ("tokens", "q w 3")]


@pytest.fixture(scope="module")
def browser():
    reason = None if os.access(CHROMIUM, os.X_OK) else f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    if reason is None and importlib.util.find_spec("playwright") is None:
        reason = "Python package playwright not installed (pip install playwright)"
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the live explorer cannot be checked: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explorer")
    live_explorer.write_standalone(folder)
    return folder


def open_page(browser, url, base, viewport=(1000, 1000), ready="window.__explorerFrame"):
    """The page at ``url``, with its console errors and every request outside ``base`` in ``page.problems``.

    Returns once ``ready`` (a JavaScript expression) is defined: the page has drawn.
    """
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, device_scale_factor=1)
    page = context.new_page()
    page.problems = []

    def route(route):
        if route.request.url.startswith(base):
            return route.continue_()
        page.problems.append(f"off-site request: {route.request.url}")
        return route.abort()

    page.route("**/*", route)
    page.on("console", lambda message: message.type == "error" and page.problems.append(f"console: {message.text}"))
    page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
    page.goto(url, wait_until="load")
    page.wait_for_function(f"() => {ready} !== undefined", timeout=20000)
    return page


def state_of(js):
    """The :class:`State` the page says it drew."""
    return State(trained=js["trained"], seq_len=js["seq_len"], d_model=js["d_model"], num_heads=js["num_heads"],
                 seed=js["seed"], mask=js["mask"], tokens=js["tokens"], layer=js["layer"], positions=js["positions"])


def frame_problems(js, model):
    """How the page's numbers differ from mhattn's for the state it drew (empty: they agree)."""
    expected, problems = compute_frame(state_of(js["state"]), model), []
    pairs = [("weights", expected.weights), ("inputs_2d", expected.inputs_2d), ("outputs_2d", expected.outputs_2d),
             ("explained", expected.explained)]
    if expected.state.trained:
        pairs += [(f"scores.{name}", value) for name, value in expected.scores.items() if value is not None]
    for name, want in pairs:
        got = js[name] if "." not in name else js["scores"][name.split(".")[1]]
        got = np.array(got, dtype=float)
        scale = max(1.0, float(np.abs(want).max()))  # PCA coordinates are not bounded by 1
        if got.shape != want.shape or not np.allclose(got, want, rtol=0, atol=TOLERANCE * scale):
            problems.append(f"{name} differs from mhattn's")
    if not np.array_equal(np.array(js["allowed"]), np.broadcast_to(expected.allowed, expected.weights.shape[1:])):
        problems.append("masked cells differ from mhattn's")
    if expected.state.trained and js["predictions"] != expected.predictions.tolist():
        problems.append("predictions differ from mhattn's")
    continuation = None if expected.continuation is None else expected.continuation.tolist()
    if expected.state.trained and js.get("continuation") != continuation:
        problems.append(f"the continuation {js.get('continuation')} differs from mhattn's {continuation}")
    return problems


def colour_problems(page, js, canvas="canvas.mhx-heads"):
    """Sampled cells of every head: the pixel's colour must be Blues(weight), or grey where masked.

    ``canvas`` selects the heatmap's canvas (the first that matches).
    """
    import matplotlib

    blues = matplotlib.colormaps["Blues"]
    weights, n = np.array(js["weights"], dtype=float), len(js["labels"])  # float: an int would index the colormap
    cells = sorted({(i, j) for i in (0, n // 2, n - 1) for j in (0, n // 3, n - 1)})
    points = [[panel["x"] + (j + 0.5) * panel["cell"], panel["y"] + (i + 0.5) * panel["cell"]]
              for panel in js["panels"] for i, j in cells]
    pixels = page.evaluate("""([points, canvas]) => { const ctx = document.querySelector(canvas).getContext('2d');
        return points.map(([x, y]) => Array.from(ctx.getImageData(Math.floor(x), Math.floor(y), 1, 1).data)); }""",
                           [points, canvas])
    expected = [np.round(np.array(blues(weights[h, i, j])[:3]) * 255) if js["allowed"][i][j] else [200, 200, 200]
                for h in range(len(js["panels"])) for i, j in cells]
    wrong = [k for k, (got, want) in enumerate(zip(pixels, expected, strict=True))
             if np.abs(np.array(got[:3]) - want).max() > COLOUR_LEVELS]
    return [f"{len(wrong)} sampled cells drawn in the wrong colour"] if wrong else []


def set_control(page, name, value):
    control = page.locator(f"[data-control={name}]")
    tag, kind = control.evaluate("el => [el.tagName, el.type]")
    if tag == "SELECT":
        control.select_option(value)
    elif kind == "range":
        control.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", value)
    else:
        control.fill(value)


def check_controls(page, model, steps=STEPS):
    """Move each control; return every problem seen (redraws, numbers, colours, console, requests)."""
    problems = []
    js = page.evaluate("() => window.__explorerFrame")
    problems += frame_problems(js, model) + colour_problems(page, js)
    for name, value in steps:
        before = js["redraws"]
        set_control(page, name, value)
        js = page.evaluate("() => window.__explorerFrame")
        if js["redraws"] != before + 1:
            problems.append(f"{name}: {js['redraws'] - before} redraws, expected 1")
            continue
        problems += [f"{name}={value}: {p}" for p in frame_problems(js, model) + colour_problems(page, js)]
    return problems + page.problems, js


def test_each_control_redraws_the_numbers_of_mhattn(browser, site, model):
    with serve(site) as url:
        page = open_page(browser, url + "explorer.html", url)
        problems, last = check_controls(page, model)
        readout = page.inner_text(".mhx-readout")
        page.context.close()
    assert problems == []
    # the last step typed a digit: the page says why and keeps drawing the tokens before it
    assert last["state"]["tokens"] == "q w e r q w e r" and "still showing the tokens below" in readout
    assert last["state"]["positions"] == "none" and last["state"]["layer"] == 0


def test_rope_is_applied_only_where_d_k_is_even(browser, site, model):
    with serve(site) as url:
        page = open_page(browser, url + "explorer.html", url)
        problems, js = check_controls(page, model, [("dModel", "12"), ("numHeads", "6"), ("rope", "on")])
        assert js["state"]["positions"] == "rope"
        problems_odd, js = check_controls(page, model, [("numHeads", "4")])
        assert js["state"]["positions"] == "none" and "d_k = 3 is odd" in page.inner_text(".mhx-readout")
        page.context.close()
    assert problems == problems_odd == []


def test_the_page_works_from_a_plain_folder(browser, site, model, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    base = copy.as_uri() + "/"
    page = open_page(browser, base + "explorer.html", base)
    problems, _ = check_controls(page, model, [("trained", "1"), ("tokens", "a b a b")])
    page.context.close()
    assert problems == []


def test_the_page_fits_a_phone(browser, site):
    with serve(site) as url:
        page = open_page(browser, url + "explorer.html", url, viewport=(390, 800))
        set_control(page, "numHeads", "8")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        boxes = [page.locator(f"[data-control={name}]").bounding_box() for name in ("seqLen", "numHeads")]
        page.context.close()
    assert width <= 390 and all(box["x"] >= 0 and box["x"] + box["width"] <= 390 for box in boxes)


def test_the_added_weight_is_at_most_2_mb(site):
    names = [*live_explorer.SCRIPTS, live_explorer.STYLE]
    assert sum((site / name).stat().st_size for name in names) <= 2_000_000


# ---------------------------------------------------------------- deliberately broken copies

def broken_copy(site, folder, name, old, new):
    shutil.copytree(site, folder)
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{name} no longer holds {old!r}: update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return folder


def changed_weight(site):
    """One weight of the trained model (layer 0, W_qkv) changed by 1e-3: (old base64, new base64)."""
    text = (site / "explorer-data.js").read_text(encoding="utf-8")
    data = json.loads(text.split("=", 1)[1].rstrip().rstrip(";"))
    old = data["trained"]["layers"][0]["W_qkv"]
    values = np.frombuffer(base64.b64decode(old), dtype="<f8").copy()
    values[5] += 1e-3
    return old, base64.b64encode(values.tobytes()).decode("ascii")


BROKEN = {
    "weight": lambda site: ("explorer-data.js", *changed_weight(site)),
    "deaf control": lambda site: ("explorer.js", "Object.values(c).forEach(",
                                  "Object.values(c).filter((control) => control !== c.mask).forEach("),
    "console error": lambda site: ("explorer.js", "redraw();\n  }", "redraw(); console.error('broken');\n  }"),
    "off-site request": lambda site: ("explorer.js", "redraw();\n  }",
                                      "redraw(); new Image().src = 'https://example.org/pixel.png';\n  }"),
    "transposed drawing": lambda site: ("explorer-draw.js", "blues(weights[i][j])", "blues(weights[j][i])"),
}
CAUGHT = {  # what a report of each fault says (which of the trained model's numbers shows a changed weight first
    # depends on the weights: any of them differing is the catch)
    "weight": r"trained=1: \w+ differs from mhattn's", "deaf control": "mask: 0 redraws, expected 1",
    "console error": "console: broken", "off-site request": "off-site request: https://example\\.org/pixel\\.png",
    "transposed drawing": "seqLen=13: ",
}


@pytest.mark.parametrize("fault", list(BROKEN))
def test_the_checks_catch_a_broken_copy(browser, site, model, tmp_path, fault):
    folder = broken_copy(site, tmp_path / "broken", *BROKEN[fault](site))
    with serve(folder) as url:
        page = open_page(browser, url + "explorer.html", url)
        problems, _ = check_controls(page, model, STEPS[:12])
        page.context.close()
    assert any(re.match(CAUGHT[fault], problem) for problem in problems), problems
    if fault == "transposed drawing":
        assert all("colour" in problem for problem in problems), problems  # the numbers are still right


def test_the_built_book_page_runs_the_explorer(browser, model, built_book):
    with serve(built_book) as url:
        page = open_page(browser, url + "notebooks/explore.html", url)
        problems, _ = check_controls(page, model, [("mask", "causal"), ("trained", "1")])
        page.context.close()
    assert problems == []


# ---------------------------------------------------------------- keyboard, touch, readouts

MIN_TARGET_PX = 24  # WCAG 2.2, 2.5.8: the smallest touch target


def test_the_explorer_works_from_the_keyboard_alone(browser, site, model):
    with serve(site) as url:
        page = open_page(browser, url + "explorer.html", url)
        controls = page.locator("[data-control]")
        wanted = {controls.nth(k).get_attribute("data-control") for k in range(controls.count())
                  if controls.nth(k).is_visible()}
        reached, rings = set(), []
        page.locator("h1").click()
        for _ in range(40):
            page.keyboard.press("Tab")
            focused = page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
                return [e.dataset.control || null, s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2]; }""")
            if focused[0]:
                reached.add(focused[0])
                rings.append(focused)
        before = page.evaluate("() => window.__explorerFrame")
        page.locator("[data-control=seqLen]").focus()
        page.keyboard.press("ArrowRight")
        after = page.evaluate("() => window.__explorerFrame")
        sizes = page.evaluate("""() => [...document.querySelectorAll('.mhx [data-control]')]
            .filter(e => e.checkVisibility()).map(e => [e.dataset.control, e.getBoundingClientRect().height])""")
        problems = frame_problems(after, model) + page.problems
        page.context.close()
    assert wanted <= reached, f"Tab never reaches {sorted(wanted - reached)}"
    assert all(ring for _, ring in rings), f"no visible focus ring on {[name for name, ring in rings if not ring]}"
    assert after["state"]["seq_len"] == before["state"]["seq_len"] + 1 and after["redraws"] == before["redraws"] + 1
    assert problems == []
    assert [name for name, height in sizes if height < MIN_TARGET_PX] == [], sizes


def test_the_readout_shows_each_row_sum_and_a_cell_its_weight(browser, site, model):
    with serve(site) as url:
        page = open_page(browser, url + "explorer.html", url)
        set_control(page, "mask", "padding")
        js = page.evaluate("() => window.__explorerFrame")
        readout = page.inner_text(".mhx-readout")
        panel, (i, j) = js["panels"][1], (3, 1)
        box = page.locator("canvas.mhx-heads").bounding_box()
        page.mouse.move(box["x"] + panel["x"] + (j + 0.5) * panel["cell"],
                        box["y"] + panel["y"] + (i + 0.5) * panel["cell"])
        cell = page.evaluate("() => window.__explorerCell")
        text = page.inner_text(".mhx-cell")
        page.context.close()
    weights = compute_frame(state_of(js["state"]), model).weights  # (heads, n, n)
    sums = weights.sum(axis=-1)
    for head, row in enumerate(sums):  # the readout prints every row's sum, to 2 decimals
        assert f"row sums, head {head}: " + " ".join(f"{v:.2f}" for v in row) in readout
    assert cell["head"] == 1 and (cell["i"], cell["j"]) == (i, j)
    assert abs(cell["weight"] - weights[1, i, j]) <= TOLERANCE and abs(cell["rowSum"] - sums[1, i]) <= TOLERANCE
    shown = re.search(r"weight ([0-9.e+-]+).*sums to ([0-9.e+-]+)", text)  # printed to 6 significant digits
    assert shown, text
    assert abs(float(shown.group(1)) - weights[1, i, j]) <= 1e-6 and abs(float(shown.group(2)) - sums[1, i]) <= 1e-5
