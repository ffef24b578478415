"""The book's JavaScript twins, held to golden numbers that mhattn writes.

``book/_static/explorer-math.js``, ``explorer-frame.js`` and ``live-figures.js`` compute in the
browser what mhattn computes in Python: the explorer's frames
(:func:`mhattn.explorer.frame.compute_frame`) and the chapters' live figures. At book build time
``book/twin_goldens.py`` writes what mhattn gives for a representative set of states into
``book/goldens/*.json``. Here:

- the golden files are what mhattn computes now (no browser needed): a change to mhattn's
  numbers that the goldens do not carry yet fails, and says how to rebuild them;
- in Chromium, the JavaScript runs on every golden state and must give the golden numbers
  within float64 rounding (``tolerance``), the masks, token ids, guesses and continuations
  exactly, and a masked cell exactly 0;
- deliberately broken twins (a wrong mask, a scale by sqrt(d_model), a sign flip in RoPE, a PCA
  axis not made positive) and a changed golden number are each reported;
- every Python name the JavaScript's comments cite (``mhattn.x.y``) still exists, found by its
  dotted path, so that a reader of the JavaScript finds what it copies.

The browser part skips with the reason when Chromium or Playwright is missing, except under
``CI=true``.
"""

import importlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import test_book_explorer
from serving import serve

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted([*(ROOT / "book" / "_static").glob("explorer-*.js"), ROOT / "book" / "_static" / "live-figures.js"])
CITED = re.compile(r"\bmhattn(?:\.[A-Za-z_]\w*)+")
REBUILD = ("rebuild them with `python book/twin_goldens.py` (or `python book/build.py`), "
           "then run tests/book/test_book_twins.py in Chromium")


twin_goldens = test_book_explorer.load("twin_goldens", ROOT / "book" / "twin_goldens.py")
live_explorer = test_book_explorer.live_explorer
browser = test_book_explorer.browser  # the same Chromium fixture, launched once per module

# ---------------------------------------------------------------- the tolerance
#
# Both sides compute in IEEE float64, rounding to nearest (unit roundoff U = 2**-53), from the same
# float64 inputs: the page's data file holds mhattn's weights and tokens bit for bit, and both draw
# the untrained weights from the same MT19937 stream. They differ only in the order of the sums
# (NumPy's BLAS blocks and vectorises its dot products, the JavaScript adds left to right) and in
# exp, log, sin and cos (each within an ulp of the exact value on both sides). So each golden
# number and its twin are two roundings of one exact value, and their difference is bounded by
# twice one side's forward error:
#
# - a sum of k terms carries at most k roundings, each of U times the partial sum, below
#   U * sum|terms|; chained sums add their roundings. The longest chain is the trained model's:
#   per layer 64 (W_qkv) + 16 (a score) + 32 (the softmax's sum) + 32 (the weighted values) +
#   64 (W_o) + 1 (the residual), twice, then 64 for the PCA's covariance and a few sweeps of 64
#   in its backward-stable eigensolver: under CHAIN = 1024 roundings;
# - magnitudes: an absolute error in a score becomes the same relative error of its weight
#   (exp), and sum|terms| exceeds a result where terms cancel; the golden scores spread over at
#   most 34 (the log-weights' range) and the vectors stay under 10, so GROWTH = 64 bounds both;
# - an eigenvector computed in floating point is off by the covariance's rounding over the gap
#   between its eigenvalue and the next, relative to the largest (Davis and Kahan): each frame
#   carries that gap (``pca_gap``, from mhattn's eigenvalues), and the PCA's points divide by it.
#
# So a number of magnitude up to ``scale`` (at least 1) may differ by 2 * CHAIN * GROWTH * U *
# scale, about 1.5e-11 * scale (/ pca_gap for the PCA's points). Observed: 9e-16 for weights, 6e-14
# for PCA points. A wrong mask, scale, angle or sign moves numbers by 1e-3 or more. The goldens
# written again on another machine (or with other BLAS threads) differ by the same kind of
# rounding, so the check that they are current uses the same tolerance.
U = 2.0**-53
CHAIN, GROWTH = 1024, 64
PCA_KEYS = ("inputs_2d", "outputs_2d")


def tolerance(key, want, pca_gap=1.0):
    """The largest difference float64 rounding allows between two computations of ``want``."""
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    return 2 * CHAIN * GROWTH * U * scale / (pca_gap if key.split(".")[-1] in PCA_KEYS else 1.0)


def differences(got, want, where="", pca_gap=1.0):
    """How ``got`` (the JavaScript's numbers) differs from ``want`` (the golden ones): one line per difference.

    Floats and lists of floats compare within ``tolerance``, everything else exactly (masks, ids, labels, None).
    """
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where}: {type(got).__name__} instead of a dict"]
        return [line for key in want
                for line in differences(got.get(key, "<missing>"), want[key], f"{where}.{key}".lstrip("."), pca_gap)]
    if isinstance(want, float) or (isinstance(want, list) and want
                                   and all(isinstance(v, float) for v in np.ravel(np.array(want, dtype=object)))):
        if got is None or isinstance(got, (str, dict)):
            return [f"{where}: {str(got)[:80]} instead of numbers"]
        try:
            a, b = np.array(got, dtype=float), np.array(want, dtype=float)
        except (TypeError, ValueError):
            return [f"{where}: not numbers: {str(got)[:80]}"]
        if a.shape != b.shape:
            return [f"{where}: shape {a.shape} instead of {b.shape}"]
        error, allowed = float(np.abs(a - b).max()), tolerance(where, b, pca_gap)
        return [f"{where}: differs by {error:.3g} (at most {allowed:.3g} allowed)"] if not error <= allowed else []
    return [] if got == want else [f"{where}: {str(got)[:120]} instead of {str(want)[:120]}"]


def masked_cells_problems(got, want, where):
    """A masked cell's weight must be exactly 0 (and a query that may see nothing sums to exactly 0)."""
    weights, allowed = np.array(got["weights"], dtype=float), np.array(want["allowed"], dtype=bool)
    return [f"{where}: a masked cell has weight {weights[:, ~allowed].max():.3g}, not 0"] \
        if weights.shape[1:] == allowed.shape and (weights[:, ~allowed] != 0).any() else []


# ---------------------------------------------------------------- the goldens are mhattn's numbers

def golden_files():
    return {name: json.loads((twin_goldens.GOLDENS / name).read_text(encoding="utf-8"))
            for name in (twin_goldens.EXPLORER_FILE, twin_goldens.FIGURES_FILE)}


@pytest.fixture(scope="module")
def goldens():
    return golden_files()


@pytest.fixture(scope="module")
def now():
    return twin_goldens.goldens()


def stale(stored, now):
    """What the stored goldens lack of mhattn's numbers now (empty: they are current)."""
    problems = []
    for name in (twin_goldens.EXPLORER_FILE, twin_goldens.FIGURES_FILE):
        if set(stored[name]) != set(now[name]):
            problems.append(f"{name}: holds {sorted(stored[name])}, mhattn now writes {sorted(now[name])}")
            continue
        for key, value in now[name].items():
            if isinstance(value, list) and len(value) != len(stored[name][key]):
                problems.append(f"{name}: {len(stored[name][key])} {key}, mhattn now writes {len(value)}")
                continue
            for index, item in enumerate(value if isinstance(value, list) else [value]):
                old = stored[name][key][index] if isinstance(value, list) else stored[name][key]
                gap = item.get("pca_gap", 1.0) if isinstance(item, dict) else 1.0
                problems += [f"{name} {key}[{index}] {item.get('state', '') if isinstance(item, dict) else ''}: {line}"
                             for line in differences(old, item, "", gap)]
    return problems


def test_the_golden_files_hold_what_mhattn_computes_now(goldens, now):
    problems = stale(goldens, now)
    assert problems == [], (f"book/goldens/ is not what mhattn computes now ({len(problems)} differences); "
                            f"{REBUILD}:\n" + "\n".join(problems[:20]))


def test_a_changed_golden_number_is_reported_with_the_way_to_rebuild(goldens, now):
    changed = json.loads(json.dumps(goldens))
    changed[twin_goldens.EXPLORER_FILE]["frames"][3]["numbers"]["weights"][0][2][1] += 1e-9
    changed[twin_goldens.FIGURES_FILE]["mask"][0]["numbers"]["allowed"][0][1] = False
    problems = stale(changed, now)
    assert len(problems) == 2, problems
    weights, allowed = problems
    assert weights.startswith(f"{twin_goldens.EXPLORER_FILE} frames[3]") and "numbers.weights: differs by" in weights
    assert allowed.startswith(f"{twin_goldens.FIGURES_FILE} mask[0]") and "numbers.allowed" in allowed


def test_the_goldens_cover_every_setting_the_page_offers(goldens):
    frames = goldens[twin_goldens.EXPLORER_FILE]["frames"]
    untrained = [f["state"] for f in frames if not f["state"]["trained"]]
    trained = [f["state"] for f in frames if f["state"]["trained"]]
    assert {s["mask"] for s in untrained} == {"none", "causal", "padding"}
    assert {s["positions"] for s in untrained} == {"none", "rope"}
    assert {s["positions"] for s in trained} == {"learned", "none"}
    assert {s["d_model"] for s in untrained} == {12, 16, 32, 48, 64}
    assert {s["num_heads"] for s in untrained} == {1, 3, 4, 6, 8}
    assert {s["seq_len"] for s in untrained} >= {2, 32} and {s["seq_len"] for s in trained} >= {4, 32}
    assert len({s["seed"] for s in untrained}) >= 5 and {s["layer"] for s in trained} == {0, 1}
    continuations = [f["numbers"]["continuation"] for f in frames if f["state"]["trained"]]
    assert {len(c) for c in continuations if c is not None} == {1, 3, 5} and None in continuations
    figures = goldens[twin_goldens.FIGURES_FILE]
    assert {(s["state"]["mask"], s["state"]["fillers"]) for s in figures["mask"]} >= {("left", k) for k in range(6)}
    assert {s["state"]["num_heads"] for s in figures["heads"]} == {1, 2, 4, 8}
    assert {s["state"]["rope"] for s in figures["rope"]} == {False, True}


def test_the_goldens_stay_within_the_tolerance_s_assumptions(goldens):
    """The spread of scores (the log-weights' range) and the PCA's points stay under GROWTH; gaps are not tiny."""
    frames = goldens[twin_goldens.EXPLORER_FILE]["frames"]
    weights = [np.array(f["numbers"]["weights"]) for f in frames]
    weights += [np.array(s["numbers"]["weights"]) for name in ("mask", "heads", "rope")
                for s in goldens[twin_goldens.FIGURES_FILE][name]]
    assert max(-np.log(w[w > 0]).max() for w in weights) < GROWTH
    assert max(np.abs(f["numbers"][key]).max() for f in frames for key in PCA_KEYS) < GROWTH
    assert min(f["pca_gap"] for f in frames) > 0.01  # else the PCA's points would be checked loosely


def test_the_golden_guesses_are_far_from_a_tie(goldens):
    """An exact comparison of argmax tokens is fair only if no two logits are within rounding of each other."""
    for frame in goldens[twin_goldens.EXPLORER_FILE]["frames"]:
        if frame["state"]["trained"]:
            assert frame["logit_margin"] > 2 * tolerance("logits", np.array([frame["logit_scale"]])), frame["state"]


# ---------------------------------------------------------------- the JavaScript on the golden states

RUN_TWINS = """(goldens) => {
  const ns = window.MhattnExplorer, data = window.MHATTN_EXPLORER, L = data.limits;
  const arrays = (weights) => weights.map((w) => w.map((row) => Array.from(row)));
  const frames = goldens.frames.map(({ state: s }) => {
    const ids = s.trained ? ns.frame.parseTokens(s.tokens, L.maxSeqLen).ids : null;
    const f = ns.frame.compute({ trained: s.trained, seqLen: s.seq_len, dModel: s.d_model, numHeads: s.num_heads,
      seed: s.seed, mask: s.mask, layer: s.layer, positions: s.positions }, data, ids);
    const numbers = { weights: arrays(f.weights), allowed: f.allowed, inputs_2d: f.inputs2d, outputs_2d: f.outputs2d,
      explained: f.explained, real: f.real, labels: f.labels };
    if (s.trained) Object.assign(numbers, { tokens: f.tokens, predictions: f.predictions, scores: f.scores,
      continuation: f.continuation });
    return numbers;
  });
  const h = goldens.helpers;
  const helpers = {
    head_choices: Object.fromEntries(Object.keys(h.head_choices)
      .map((d) => [d, ns.frame.headChoices(Number(d), L.maxHeads)])),
    padded_length: Object.fromEntries(Object.keys(h.padded_length)
      .map((n) => [n, ns.frame.paddedLength(Number(n))])),
    parse_tokens: h.parse_tokens.map(({ text }) => {
      const parsed = ns.frame.parseTokens(text, L.maxSeqLen);
      return parsed.error ? { text, error: parsed.error } : { text, ids: parsed.ids };
    }),
  };
  return { frames, helpers };
}"""
RUN_FIGURES = """(goldens) => {
  const ns = window.MhattnExplorer, data = window.MHATTN_EXPLORER, out = {};
  for (const name of ["mask", "heads", "rope"]) {
    out[name] = goldens[name].map(({ state }) => {
      const f = ns.figures[name](state, data);
      const numbers = { weights: f.weights.map((w) => w.map((row) => Array.from(row))), allowed: f.allowed };
      if (name === "rope") Object.assign(numbers, { scores: f.scores, curve: f.curve });
      return numbers;
    });
  }
  return out;
}"""
PAGE = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>twins</title>'
        '<link rel="icon" href="data:,"></head><body>'
        + "".join(f'<script src="{name}"></script>' for name in ("explorer-data.js", "explorer-math.js",
                                                                 "explorer-frame.js", "live-figures.js"))
        + "</body></html>\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The page's scripts and data, as the book installs them, and a page that loads only them."""
    folder = tmp_path_factory.mktemp("twins")
    live_explorer.write_assets(folder)
    (folder / "twins.html").write_text(PAGE, encoding="utf-8")
    return folder


def run_twins(browser, folder, goldens):
    """The JavaScript's numbers for every golden state, and the page's own problems (console, requests)."""
    with serve(folder) as url:
        page = test_book_explorer.open_page(browser, url + "twins.html", url, ready="window.MhattnExplorer.figures")
        stored, figures = goldens[twin_goldens.EXPLORER_FILE], goldens[twin_goldens.FIGURES_FILE]
        states = lambda items: [{"state": item["state"]} for item in items]  # noqa: E731 (the numbers stay here)
        explorer = page.evaluate(RUN_TWINS, {"frames": states(stored["frames"]), "helpers": stored["helpers"]})
        figures = page.evaluate(RUN_FIGURES, {name: states(figures[name]) for name in ("mask", "heads", "rope")})
        problems = page.problems
        page.context.close()
    return explorer, figures, problems


def twin_problems(explorer, figures, goldens):
    """Every way the JavaScript's numbers differ from the golden ones (empty: they agree)."""
    stored, problems = goldens[twin_goldens.EXPLORER_FILE], []
    for index, (got, want) in enumerate(zip(explorer["frames"], stored["frames"], strict=True)):
        where = f"frame {index} {want['state']}"
        problems += [f"{where}: {line}" for line in differences(got, want["numbers"], "", want["pca_gap"])]
        problems += masked_cells_problems(got, want["numbers"], where)
    problems += [f"helpers: {line}" for line in helper_differences(explorer["helpers"], stored["helpers"])]
    for name in ("mask", "heads", "rope"):
        for got, want in zip(figures[name], goldens[twin_goldens.FIGURES_FILE][name], strict=True):
            where = f"figure {name} {want['state']}"
            problems += [f"{where}: {line}" for line in differences(got, want["numbers"])]
            problems += masked_cells_problems(got, want["numbers"], where)
    return problems


def helper_differences(got, want):
    """The helpers agree; a refused text is refused by both, for the same reason (the message up to '; got')."""
    reason = lambda item: {**item, "error": item["error"].split("; got")[0]} if "error" in item else item  # noqa: E731
    return differences({**got, "parse_tokens": [reason(i) for i in got["parse_tokens"]]},
                       {**want, "parse_tokens": [reason(i) for i in want["parse_tokens"]]})


def test_the_javascript_twins_give_the_golden_numbers(browser, site, goldens):
    explorer, figures, page_problems = run_twins(browser, site, goldens)
    problems = twin_problems(explorer, figures, goldens)
    assert problems + page_problems == [], "\n".join(problems[:20] + page_problems)


#: Deliberately broken twins: (file, text it holds, its replacement, a problem that must be reported)
BROKEN = {
    "padding mask off by one": ("explorer-frame.js", "j < real[b]", "j <= real[b]", "allowed"),
    "scaled by sqrt(d_model)": ("explorer-math.js", "root = Math.sqrt(dk)", "root = Math.sqrt(d)", "weights: differs"),
    "RoPE turning backwards": ("explorer-math.js", "out[p * dk + c] = x1 * cos - x2 * sin",
                               "out[p * dk + c] = x1 * cos + x2 * sin", "weights: differs"),
    "a PCA axis not made positive": ("explorer-math.js", "(v[big] < 0 ? -1 : 1)", "1", "inputs_2d: differs"),
    "the left padding ignored": ("live-figures.js", "(i, j) => j <= i && j >= fillers", "(i, j) => j <= i",
                                 "figure mask"),
    "a masked weight left at 1e-300": ("explorer-math.js", "row[j] = total > 0 ? row[j] / total : 0",
                                       "row[j] = total > 0 ? row[j] / total + 1e-300 : 0", "not 0"),
}


def shorter(goldens, longest=13):
    """The goldens without their longest sequences (each fault shows in the short ones; they run faster)."""
    explorer = goldens[twin_goldens.EXPLORER_FILE]
    frames = [f for f in explorer["frames"] if f["state"]["seq_len"] <= longest]
    return {**goldens, twin_goldens.EXPLORER_FILE: {**explorer, "frames": frames}}


@pytest.mark.parametrize("fault", list(BROKEN))
def test_the_comparison_reports_a_broken_twin(browser, site, goldens, tmp_path, fault):
    name, old, new, reported = BROKEN[fault]
    goldens = shorter(goldens)
    folder = tmp_path / "broken"
    shutil.copytree(site, folder)
    text = (folder / name).read_text(encoding="utf-8")
    assert old in text, f"{name} no longer holds {old!r}: update this test"
    (folder / name).write_text(text.replace(old, new), encoding="utf-8")
    explorer, figures, _ = run_twins(browser, folder, goldens)
    problems = twin_problems(explorer, figures, goldens)
    assert any(reported in problem for problem in problems), problems[:10]


# ---------------------------------------------------------------- the names the JavaScript cites

def resolve(dotted):
    """The object at a dotted path: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(target, name):
                raise LookupError(f"{dotted}: {'.'.join(parts[:cut])} has no {name!r}")
            target = getattr(target, name)
        return target
    raise LookupError(f"{dotted}: no module {parts[0]!r}")


def cited_names(scripts=SCRIPTS):
    return sorted({name for path in scripts for name in CITED.findall(path.read_text(encoding="utf-8"))})


def test_book_every_python_name_the_javascript_cites_exists():
    names = cited_names()
    assert len(names) >= 8, names
    missing = []
    for name in names:
        try:
            resolve(name)
        except LookupError as error:
            missing.append(str(error))
    assert missing == [], "names cited in book/_static/*.js that the package lacks:\n" + "\n".join(missing)


def test_book_the_guard_reports_a_moved_name(tmp_path):
    script = tmp_path / "explorer-x.js"
    cited = "// as mhattn.core.positions.apply_rope and mhattn.core.positions.no_such_rope do\n"
    script.write_text(cited, encoding="utf-8")
    assert cited_names([script]) == ["mhattn.core.positions.apply_rope", "mhattn.core.positions.no_such_rope"]
    with pytest.raises(LookupError, match="mhattn.core.positions has no 'no_such_rope'"):
        resolve("mhattn.core.positions.no_such_rope")
    with pytest.raises(LookupError, match="mhattn has no 'nowhere'"):
        resolve("mhattn.nowhere.f")
