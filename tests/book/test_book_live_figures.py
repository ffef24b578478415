"""The chapters' live figures (book/_static/live-figures.js), checked in Chromium against mhattn.

Each figure is driven through its states, control by control. After each change it must have
redrawn once and hold the numbers mhattn gives for that state, within 1e-6 (float64 on both
sides; only the order of the sums differs), its heatmap drawn in matplotlib's "Blues" of them:

- mask (chapter 2): ``scaled_dot_product_attention(x, x, x, mask)`` on the explorer's tokens, the
  masks built here from positions; a query with no key has weights and a row sum of exactly 0;
- heads (chapter 4): ``MultiHeadAttention(64, num_heads, seed)`` (tests/explorer_expected.py);
- rope (chapter 8): ``RotaryMultiHeadAttention(16, 1, seed=123)`` (``MultiHeadAttention`` with RoPE off), and
  the scores of token 0's query and key turned to every position by ``apply_rope``.
- smollm (chapter 10): the weights of SmolLM2's heads stored in book/smollm_heads.json, drawn for the
  chosen head (the model computed them; tests/notebooks/test_claims_10.py recomputes them).

Then the keyboard (Tab reaches every control with a visible ring, arrows move the sliders), touch
targets, the cell readout, a phone's width, and the built book's chapter pages. Without a browser:
the build turns a notebook's marker into the figure's container, and the chapters hold theirs.

Skips with the reason when Chromium or Playwright is missing, except under ``CI=true``.
"""

import json
import re
import shutil

import numpy as np
import pytest
import test_book_explorer
from explorer_expected import tokens_from_the_recipe
from serving import serve
from test_book_explorer import (
    MIN_TARGET_PX,
    ROOT,
    TOLERANCE,
    colour_problems,
    live_explorer,
    load,
    open_page,
    set_control,
)

from mhattn import MultiHeadAttention, RotaryMultiHeadAttention, scaled_dot_product_attention
from mhattn.core.positions import apply_rope

browser = test_book_explorer.browser  # the same Chromium fixture, launched once per module
SEED, SHOWN = 123, 1  # the explorer's first seed; it shows sequence 1 of its batch of two
READY = "(window.__liveFigures || {}).smollm"  # the last figure drawn
MASK_N, MASK_D, HEADS_N, HEADS_D, ROPE_N, ROPE_D = 6, 8, 6, 64, 12, 16
STEPS = {  # each figure's states: (control, value), from the state it starts in
    "mask": [("fillers", "5"), ("fillers", "0"), ("mask", "padding"), ("fillers", "3"), ("mask", "causal"),
             ("mask", "none"), ("mask", "left"), ("fillers", "1")],
    "heads": [("numHeads", "1"), ("numHeads", "2"), ("numHeads", "8"), ("seed", "3"), ("numHeads", "4"),
              ("seed", "0")],
    "rope": [("query", "0"), ("query", "11"), ("rope", "off"), ("query", "7"), ("rope", "on")],
    "smollm": [("index", "1"), ("index", "3"), ("index", "6"), ("index", "0")],
}
SMOLLM = json.loads((ROOT / "book" / "smollm_heads.json").read_text(encoding="utf-8"))


def mask_expected(state):
    n, fillers = MASK_N, state["fillers"]
    query, key = np.arange(n)[:, None], np.arange(n)[None, :]
    allowed = {"none": np.ones((n, n), dtype=bool), "causal": key <= query,
               "padding": np.broadcast_to(key < n - fillers, (n, n)),
               "left": (key <= query) & (key >= fillers)}[state["mask"]]  # padding first, then causal
    x = tokens_from_the_recipe(SEED, n, MASK_D)[SHOWN]
    _, weights = scaled_dot_product_attention(x, x, x, mask=allowed)
    return {"weights": weights[None], "allowed": allowed}


def heads_expected(state):
    x = tokens_from_the_recipe(state["seed"], HEADS_N, HEADS_D)
    _, weights = MultiHeadAttention(HEADS_D, state["num_heads"], seed=state["seed"])(x)
    return {"weights": weights[SHOWN], "allowed": np.ones((HEADS_N, HEADS_N), dtype=bool)}


def rope_expected(state):
    n, d = ROPE_N, ROPE_D
    x = tokens_from_the_recipe(SEED, n, d)
    layer = RotaryMultiHeadAttention(d, 1, seed=SEED) if state["rope"] else MultiHeadAttention(d, 1, seed=SEED)
    _, weights = layer(x)
    q, k = x[SHOWN, 0] @ layer.W_qkv[:, :d], x[SHOWN, 0] @ layer.W_qkv[:, d:2 * d]  # token 0's query and key
    queries, keys = np.tile(q, (n, 1)), np.tile(k, (n, 1))  # the same vectors at every position
    if state["rope"]:
        queries, keys = apply_rope(queries, np.arange(n)), apply_rope(keys, np.arange(n))
    scores = queries @ keys.T  # scores[i, j]: the query at position i with the key at position j
    curve = [scores[max(0, -o), max(0, o)] for o in range(-(n - 1), n)]  # against the offset j - i
    return {"weights": weights[SHOWN], "allowed": np.ones((n, n), dtype=bool), "scores": scores,
            "curve": np.array(curve), "dots": scores[state["query"]]}


def smollm_expected(state):
    stored = SMOLLM["heads"][state["index"]]  # SmolLM2's numbers (tests/notebooks/test_claims_10.py checks them)
    assert (stored["layer"], stored["head"]) == (state["layer"], state["head"])
    n = len(SMOLLM["tokens"])
    return {"weights": np.array([stored["weights"]]), "allowed": np.tri(n, dtype=bool)}


EXPECTED = {"mask": mask_expected, "heads": heads_expected, "rope": rope_expected, "smollm": smollm_expected}


def figure_problems(js, name):
    """How a figure's numbers differ from mhattn's for the state it drew (empty: they agree)."""
    want, problems = EXPECTED[name](js["state"]), []
    got = {"weights": js["weights"], "row_sums": js["row_sums"]}
    want["row_sums"] = want["weights"].sum(axis=-1)
    if name == "rope":
        got.update(scores=js["scores"], curve=js["curve"], dots=js["scores"][js["state"]["query"]])
    for key in got:
        a, b = np.array(got[key], dtype=float), want[key]
        if a.shape != b.shape or not np.allclose(a, b, rtol=0, atol=TOLERANCE * max(1.0, np.abs(b).max())):
            problems.append(f"{name} {js['state']}: {key} differs from mhattn's")
    if not np.array_equal(np.array(js["allowed"]), want["allowed"]):
        problems.append(f"{name} {js['state']}: masked cells differ from mhattn's")
    empty = ~want["allowed"].any(axis=-1)  # a query that may see nothing: exactly zero
    if empty.any() and not (np.array(js["weights"])[:, empty] == 0).all():
        problems.append(f"{name} {js['state']}: a query with no key has nonzero weights")
    return problems


def control(page, name, control_name):
    return page.locator(f"[data-figure={name}] [data-control={control_name}]")


def drive(page, name, steps):
    """Move each control of one figure; return every problem seen, and the state drawn last."""
    canvas = f"[data-figure={name}] canvas.mhx-heads"
    js = page.evaluate(f"() => window.__liveFigures.{name}")
    problems = figure_problems(js, name) + colour_problems(page, js, canvas)
    for control_name, value in steps:
        before = js["redraws"]
        set_control(page.locator(f"[data-figure={name}]"), control_name, value)
        js = page.evaluate(f"() => window.__liveFigures.{name}")
        if js["redraws"] != before + 1:
            problems.append(f"{name}.{control_name}: {js['redraws'] - before} redraws, expected 1")
            continue
        problems += figure_problems(js, name) + colour_problems(page, js, canvas)
    return problems, js


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("figures")
    live_explorer.write_standalone(folder, figures=True)
    return folder


@pytest.mark.parametrize("name", list(STEPS))
def test_each_figure_redraws_the_numbers_of_mhattn(browser, site, name):
    with serve(site) as url:
        page = open_page(browser, url + "figures.html", url, ready=READY)
        problems, last = drive(page, name, STEPS[name])
        readout = page.inner_text(f"[data-figure={name}] .mhx-readout")
        page.context.close()
    assert problems + page.problems == []
    if name == "mask":  # the last state: padding at the start, one filler query that sees nothing
        assert last["state"] == {"mask": "left", "fillers": 1} and "queries 0 may attend to nothing" in readout
    if name == "rope":  # RoPE on: the query's scores lie on the one curve of the offset
        n, i = ROPE_N, last["state"]["query"]
        assert np.allclose(last["scores"][i], np.array(last["curve"])[np.arange(n) - i + n - 1], atol=1e-12)


def test_the_checks_catch_a_figure_that_ignores_its_mask(browser, site, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(site, broken)
    script = broken / "live-figures.js"
    text = script.read_text(encoding="utf-8")
    old = "(i, j) => j <= i && j >= fillers"
    assert old in text, "live-figures.js no longer holds the left-padding mask: update this test"
    script.write_text(text.replace(old, "(i, j) => j <= i"), encoding="utf-8")
    with serve(broken) as url:
        page = open_page(browser, url + "figures.html", url, ready=READY)
        problems, _ = drive(page, "mask", [])
        page.context.close()
    assert any("weights differs" in p for p in problems) and any("masked cells" in p for p in problems), problems


def test_the_figures_work_from_the_keyboard_alone(browser, site):
    with serve(site) as url:
        page = open_page(browser, url + "figures.html", url, ready=READY)
        wanted = set(page.evaluate("""() => [...document.querySelectorAll('[data-figure] [data-control]')]
            .filter(e => e.checkVisibility())
            .map(e => e.closest('[data-figure]').dataset.figure + '.' + e.dataset.control)"""))
        reached, rings = set(), []
        page.locator("h1").click()
        for _ in range(40):
            page.keyboard.press("Tab")
            focused = page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e),
                f = e.closest('[data-figure]');
                return [f && e.dataset.control ? f.dataset.figure + '.' + e.dataset.control : null,
                        s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2]; }""")
            if focused[0]:
                reached.add(focused[0])
                rings.append(focused)
        moved = {}
        for name, slider in [("mask", "fillers"), ("rope", "query")]:
            before = page.evaluate(f"() => window.__liveFigures.{name}")
            control(page, name, slider).focus()
            page.keyboard.press("ArrowRight")
            after = page.evaluate(f"() => window.__liveFigures.{name}")
            moved[name] = (before, after)
        sizes = page.evaluate("""() => [...document.querySelectorAll('[data-figure] [data-control]')]
            .filter(e => e.checkVisibility()).map(e => [e.dataset.control, e.getBoundingClientRect().height])""")
        page.context.close()
    assert wanted <= reached, f"Tab never reaches {sorted(wanted - reached)}"
    assert all(ring for _, ring in rings), f"no visible focus ring on {[name for name, ring in rings if not ring]}"
    (mask_before, mask_after), (rope_before, rope_after) = moved["mask"], moved["rope"]
    assert mask_after["state"]["fillers"] == mask_before["state"]["fillers"] + 1
    assert rope_after["state"]["query"] == rope_before["state"]["query"] + 1
    assert all(after["redraws"] == before["redraws"] + 1 for before, after in moved.values())
    assert figure_problems(mask_after, "mask") + figure_problems(rope_after, "rope") == []
    assert [name for name, height in sizes if height < MIN_TARGET_PX] == [], sizes


def test_pointing_at_a_cell_reads_its_weight_and_its_row_sum(browser, site):
    with serve(site) as url:
        page = open_page(browser, url + "figures.html", url, ready=READY)
        read = {}
        for name, head, (i, j) in [("mask", 0, (0, 0)), ("mask", 0, (4, 2)), ("heads", 1, (3, 1))]:
            js = page.evaluate(f"() => window.__liveFigures.{name}")
            canvas = page.locator(f"[data-figure={name}] canvas.mhx-heads")
            canvas.scroll_into_view_if_needed()
            panel, box = js["panels"][head], canvas.bounding_box()
            page.mouse.move(box["x"] + panel["x"] + (j + 0.5) * panel["cell"],
                            box["y"] + panel["y"] + (i + 0.5) * panel["cell"])
            read[name, i, j] = (js["state"], page.evaluate("() => window.__liveCell"),
                                page.inner_text(f"[data-figure={name}] .mhx-cell"))
        page.context.close()
    for (name, i, j), (state, cell, text) in read.items():
        weights = EXPECTED[name](state)["weights"]
        head = cell["head"]
        assert cell["figure"] == name and (cell["i"], cell["j"]) == (i, j)
        assert abs(cell["weight"] - weights[head, i, j]) <= TOLERANCE
        assert abs(cell["rowSum"] - weights[head, i].sum()) <= TOLERANCE
        shown = re.search(r"weight ([0-9.e+-]+).*sums to ([0-9.e+-]+)", text)  # 6 significant digits
        assert shown and abs(float(shown.group(1)) - weights[head, i, j]) <= 1e-6, text
        assert abs(float(shown.group(2)) - weights[head, i].sum()) <= 1e-5, text
    # the mask figure starts with padding at the start: query 0 may see nothing, and sums to 0
    assert read["mask", 0, 0][1]["rowSum"] == 0 and "(masked)" in read["mask", 0, 0][2]


def test_the_keyboard_reads_a_cell_too_and_marks_it(browser, site):
    """Tab to the heatmaps, then the arrows move the cell read and Page Down goes to the next head."""
    with serve(site) as url:
        page = open_page(browser, url + "figures.html", url, ready=READY)
        canvas = page.locator("[data-figure=heads] canvas.mhx-heads")
        canvas.focus()
        for key in ("ArrowRight", "ArrowRight", "ArrowDown", "PageDown", "ArrowLeft", "ArrowUp", "ArrowUp"):
            page.keyboard.press(key)  # from the first cell: (0, 1), (0, 2), (1, 2), head 1, (1, 1), (0, 1), (0, 1)
        js = page.evaluate("() => window.__liveFigures.heads")
        cell, text = page.evaluate("() => window.__liveCell"), page.inner_text("[data-figure=heads] .mhx-cell")
        marker = page.locator("[data-figure=heads] .mhx-cell-marker").bounding_box()
        box, ring = canvas.bounding_box(), canvas.evaluate("c => getComputedStyle(c).outlineStyle")
        page.keyboard.press("Tab")
        hidden = page.locator("[data-figure=heads] .mhx-cell-marker").is_hidden()
        page.context.close()
    weights = EXPECTED["heads"](js["state"])["weights"]
    assert (cell["figure"], cell["head"], cell["i"], cell["j"]) == ("heads", 1, 0, 1)
    assert abs(cell["weight"] - weights[1, 0, 1]) <= TOLERANCE
    assert abs(cell["rowSum"] - weights[1, 0].sum()) <= TOLERANCE
    assert "head 1, query" in text and ring != "none"
    panel = js["panels"][1]  # the marker outlines exactly that cell
    expected = (box["x"] + panel["x"] + panel["cell"], box["y"] + panel["y"], panel["cell"])
    assert max(abs(a - b) for a, b in zip((marker["x"], marker["y"], marker["width"]), expected, strict=True)) <= 1
    assert hidden, "the marker stays after the heatmaps lose the focus"


MIN_TEXT_PX, CANVAS_FONT_PX = 9, 12  # explorer-draw.js writes every label at 12 px of its canvas


def test_the_figures_read_on_a_phone(browser, site):
    with serve(site) as url:
        page = open_page(browser, url + "figures.html", url, viewport=(390, 844), ready=READY)
        width = page.evaluate("() => document.documentElement.scrollWidth")
        scales = page.evaluate("""() => [...document.querySelectorAll('[data-figure] canvas')].map(c =>
            c.getBoundingClientRect().width / parseFloat(c.style.width))""")
        page.context.close()
    assert width <= 390
    assert len(scales) == 5 and min(scales) * CANVAS_FONT_PX >= MIN_TEXT_PX, scales


# ---------------------------------------------------------------- the book: markers and pages

BOOK = load("book_build", ROOT / "book" / "build.py")
CHAPTERS = {"mask": "02_scaled_dot_product_attention", "heads": "04_multi_head_attention", "rope": "06_positions",
            "smollm": "10_real_model"}


def test_book_a_marker_becomes_the_container_of_its_figure():
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "Text.\n\n<!-- live-figure: rope -->\n"}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    page = BOOK.for_the_page(notebook, "06_positions")
    assert page["cells"][0]["source"] == 'Text.\n\n<div class="mhattn-live-figure" data-figure="rope"></div>\n'
    notebook["cells"][0]["source"] = "<!-- live-figure: nothing -->"
    with pytest.raises(ValueError, match="live figure must be one of .*; got 'nothing'"):
        BOOK.for_the_page(notebook, "06_positions")


@pytest.mark.parametrize("name", list(CHAPTERS))
def test_book_each_chapter_holds_its_marker_once(name):
    notebook = json.loads((ROOT / "notebooks" / f"{CHAPTERS[name]}.ipynb").read_text(encoding="utf-8"))
    markdown = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown"]
    assert sum(text.count(f"<!-- live-figure: {name} -->") for text in markdown) == 1


def test_book_chapter_pages_run_their_figures(browser, built_book):
    problems = []
    with serve(built_book) as url:
        for name, stem in CHAPTERS.items():
            ready = f"(window.__liveFigures || {{}}).{name}"
            page = open_page(browser, f"{url}notebooks/{stem}.html", url, ready=ready)
            found, _ = drive(page, name, STEPS[name][:2])
            problems += found + page.problems
            page.context.close()
    assert problems == []
