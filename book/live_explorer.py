"""The book's live explorer: its data file, written from mhattn at build time, and its page.

The explorer's page (``notebooks/explore.ipynb``) holds an empty ``<div id="mhattn-live-explorer">``
(nothing shows in JupyterLab or Voila). On the book's page, ``_static/explorer.js`` fills it with
controls and two canvases, and computes every frame in the browser (``explorer-frame.js``,
``explorer-math.js``) from the data file written here, ``_static/explorer-data.js``:

- the trained model (:func:`mhattn.learn.shipped.load_trained`, the checkpoint installed now, so a
  retrained model ships with the next build), every array as little-endian float64 bytes in
  base64, so the page runs the very same weights;
- for each seed in ``SEEDS``, the untrained explorer's random token streams
  (``default_rng([seed, b + 1])``, :func:`mhattn.explorer.frame.random_tokens`); the layer's
  weights the page draws itself from ``RandomState(seed)``, as MultiHeadAttention does.

The chapters' live figures (``_static/live-figures.js``: the mask in chapter 2, the heads in 4, RoPE
in 6, a real model's heads in 10) run on the same engine and data. Chapter 10's figure shows
patterns that SmolLM2 computed (``smollm_heads.json``, beside this file, stored because the
model's weights are fetched, not shipped; ``python book/live_explorer.py --smollm`` rewrites it
from the model). A chapter's page holds ``<div class="mhattn-live-figure"
data-figure="NAME">`` (book/build.py writes it where the notebook says ``<!-- live-figure: NAME -->``).

What the scripts must compute from this data, mhattn's own numbers for a set of states, is in
``book/goldens/`` (written by book/twin_goldens.py when the book is built).

The data is a script (``window.MHATTN_EXPLORER = {...}``) loaded by a ``<script>`` tag, not
fetched, so the page also works from a folder opened as ``file://``.

Usage: ``install(site)`` after Sphinx has built the site (book/build.py calls it), or
``python book/live_explorer.py FOLDER`` for the explorer alone, as ``FOLDER/explorer.html``.
"""

import base64
import json
import shutil
import sys
from pathlib import Path

import numpy as np

from mhattn.explorer import frame
from mhattn.learn.shipped import load_trained
from mhattn.llm import load_smollm2

STATIC = Path(__file__).resolve().parent / "_static"
SCRIPTS = ["explorer-data.js", "explorer-math.js", "explorer-frame.js", "explorer-draw.js", "explorer.js",
           "live-figures.js"]
STYLE = "explorer.css"
SEEDS = (123, 0, 1, 2, 3, 4, 5, 6)  #: the seeds the page offers (each ships 2 x 32 x 64 token numbers)
CONTAINER = '<div id="mhattn-live-explorer"></div>'
PAGE = "notebooks/explore.html"
FIGURES = ("mask", "heads", "rope", "smollm")  #: the chapters' live figures (live-figures.js)
SMOLLM = Path(__file__).resolve().parent / "smollm_heads.json"  #: chapter 10's stored patterns
SMOLLM_TEXT = "The cat sat on the mat. The dog sat on the log. The cat sat on the"  #: notebook 10's sentence
SMOLLM_HEADS = [(18, 6, "induction"), (17, 4, "induction"), (17, 3, "induction"), (16, 0, "previous token"),
                (11, 1, "previous token"), (2, 1, "previous token"), (18, 8, "sink"), (0, 0, "first layer")]
LIVE = ('id="mhattn-live-explorer"', 'class="mhattn-live-figure"')  # a page that holds one of these gets the scripts


def figure_container(name):
    """The element a chapter's page holds where its live figure ``name`` goes."""
    if name not in FIGURES:
        raise ValueError(f"live figure must be one of {FIGURES}; got {name!r}")
    return f'<div class="mhattn-live-figure" data-figure="{name}"></div>'


def encode(array):
    """An array as base64 of its little-endian float64 bytes (row-major)."""
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f8").tobytes()).decode("ascii")


def explorer_data(seeds=SEEDS):
    """Everything the page computes from, as a JSON-ready dict."""
    model = load_trained()
    widest = max(frame.D_MODELS)
    tokens = {str(seed): [encode(sequence) for sequence in frame.random_tokens(seed, frame.MAX_SEQ_LEN, widest)]
              for seed in seeds}
    return {
        "limits": {"minSeqLen": frame.MIN_SEQ_LEN, "maxSeqLen": frame.MAX_SEQ_LEN, "dModels": list(frame.D_MODELS),
                   "maxHeads": frame.MAX_HEADS, "masks": list(frame.MASKS), "seeds": list(seeds),
                   "shown": frame.SHOWN, "defaultTokens": frame.DEFAULT_TOKENS, "rope": True,
                   "ropeBase": 10000.0},
        "random": {"tokens": tokens},
        "smollm": json.loads(SMOLLM.read_text(encoding="utf-8")),
        "trained": {"vocab": model.vocab, "maxLen": model.max_len, "dModel": model.d_model,
                    "numHeads": model.num_heads, "embed": encode(model.embed), "pos": encode(model.pos),
                    "unembed": encode(model.unembed),
                    "layers": [{"W_qkv": encode(layer.W_qkv), "W_o": encode(layer.W_o)} for layer in model.layers]},
    }


def write_assets(static_dir, seeds=SEEDS):
    """Write the data file and copy the scripts and style into ``static_dir``; return the bytes written."""
    static_dir = Path(static_dir)
    static_dir.mkdir(parents=True, exist_ok=True)
    data = "window.MHATTN_EXPLORER = " + json.dumps(explorer_data(seeds), separators=(",", ":")) + ";\n"
    (static_dir / SCRIPTS[0]).write_text(data, encoding="utf-8")
    for name in [*SCRIPTS[1:], STYLE]:
        shutil.copy2(STATIC / name, static_dir / name)
    return sum((static_dir / name).stat().st_size for name in [*SCRIPTS, STYLE])


def tags(prefix):
    """The ``<link>`` and ``<script>`` tags that load the explorer from ``prefix`` (a relative folder)."""
    style = f'<link rel="stylesheet" href="{prefix}{STYLE}">'
    return style, "".join(f'<script src="{prefix}{name}"></script>' for name in SCRIPTS)


def install(site):
    """Add the live explorer and figures to a built book: the assets in ``_static/``, the tags in their pages.

    The pages are those of ``notebooks/`` that hold the explorer's ``<div id="mhattn-live-explorer">``
    or a live figure's container. Returns the pages changed (none, and nothing written, for a book
    built from other notebooks).
    """
    site = Path(site)
    pages = [page for page in sorted((site / "notebooks").glob("*.html"))
             if any(marker in page.read_text(encoding="utf-8") for marker in LIVE)]
    if not pages:
        return []
    write_assets(site / "_static")
    style, scripts = tags("../_static/")
    for page in pages:
        text = page.read_text(encoding="utf-8")
        text = text.replace("</head>", style + "\n</head>", 1).replace("</body>", scripts + "\n</body>", 1)
        page.write_text(text, encoding="utf-8")
    return pages


def write_standalone(folder, seeds=SEEDS, figures=False):
    """The explorer alone, ``folder/explorer.html`` with its assets beside it; return the page's path.

    With ``figures``, the chapters' live figures instead, one after another, in ``folder/figures.html``.
    """
    folder = Path(folder)
    write_assets(folder, seeds)
    style, scripts = tags("")
    title = "The chapters' live figures" if figures else "Multi-head attention explorer"
    body = "\n".join(f"<h2>{name}</h2>\n{figure_container(name)}" for name in FIGURES) if figures else CONTAINER
    page = folder / ("figures.html" if figures else "explorer.html")
    page.write_text(f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
                    f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
                    f"<title>{title}</title>\n{style}</head>\n"
                    f"<body><main style='max-width:800px;margin:auto;font-family:sans-serif'>\n"
                    f"<h1>{title}</h1>\n{body}\n</main>\n{scripts}\n</body></html>\n",
                    encoding="utf-8")
    return page


def smollm_patterns(model):
    """Chapter 10's figure data: the weights of ``SMOLLM_HEADS`` on ``SMOLLM_TEXT``, rounded to 4 decimals."""
    ids = model.tokenize(SMOLLM_TEXT)  # (seq,)
    weights = model(ids[None], need_weights=True)[1][0]  # (layers, heads, seq, seq)
    return {"text": SMOLLM_TEXT, "tokens": [model.detokenize(ids[i : i + 1]) for i in range(len(ids))],
            "heads": [{"layer": layer, "head": head, "kind": kind,
                       "weights": np.round(weights[layer, head].astype(np.float64), 4).tolist()}
                      for layer, head, kind in SMOLLM_HEADS]}


if __name__ == "__main__":
    if sys.argv[1:] == ["--smollm"]:
        SMOLLM.write_text(json.dumps(smollm_patterns(load_smollm2()), separators=(",", ":")) + "\n", encoding="utf-8")
        sys.exit(f"wrote {SMOLLM}")
    if len(sys.argv) != 2:
        sys.exit("usage: python book/live_explorer.py FOLDER  (writes FOLDER/explorer.html and its assets)")
    print(f"wrote {write_standalone(sys.argv[1])}")
