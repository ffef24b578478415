"""Golden numbers for the book's JavaScript twins, computed by mhattn and written as JSON.

The book's live explorer and live figures compute in the browser, in JavaScript, what mhattn
computes in Python (``_static/explorer-math.js``, ``explorer-frame.js``, ``live-figures.js``).
This module writes what mhattn gives for a representative set of states, so that the JavaScript
can be held to those numbers:

- ``goldens/explorer-frames.json``: :func:`mhattn.explorer.frame.compute_frame` on untrained
  layers (every d_model, head counts from 1 to 8, lengths from 2 to 32, every mask, several
  seeds, RoPE on and off) and on the trained model (both layers, learned positions and none,
  tokens with and without repeats, the greedy continuation up to the model's longest input),
  and the small helpers the page shares with it (head counts, padded lengths, typed tokens);
- ``goldens/live-figures.json``: the numbers of the chapters' live figures (the mask of
  chapter 2, the heads of chapter 4, RoPE in chapter 8) for every state their controls reach
  or a sample of them.

Every float is written with ``repr`` precision (JSON round-trips a float64 exactly). The data
the page computes from (``explorer-data.js``: the trained weights and the random tokens) is
written by book/live_explorer.py from the same package, so a twin that agrees with these files
agrees with mhattn.

Usage: ``python book/twin_goldens.py`` rewrites the files (``python book/build.py`` does too).
"""

import json
import sys
from pathlib import Path

import numpy as np

from mhattn import (
    MultiHeadAttention,
    RotaryMultiHeadAttention,
    apply_rope,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)
from mhattn.explorer import State, compute_frame
from mhattn.explorer import frame as explorer
from mhattn.learn.shipped import load_trained

GOLDENS = Path(__file__).resolve().parent / "goldens"
EXPLORER_FILE, FIGURES_FILE = "explorer-frames.json", "live-figures.json"

#: The explorer's states: each d_model, 1 to 8 heads (d_k from 1 to 64), lengths 2 to 32, every
#: mask, RoPE on even d_k of several sizes; then the trained model (see the module docstring).
EXPLORER_STATES = [
    State(),  # the explorer's first frame
    State(seq_len=13, d_model=12, num_heads=6, seed=3, mask="causal"),
    State(seq_len=13, d_model=12, num_heads=6, seed=3, mask="padding", positions="rope"),  # d_k = 2
    State(seq_len=7, d_model=16, num_heads=1, seed=0, mask="padding"),  # one head, d_k = 16, odd length
    State(seq_len=2, d_model=32, num_heads=8, seed=5, mask="causal", positions="rope"),  # the shortest
    State(seq_len=5, d_model=48, num_heads=3, seed=1, mask="none", positions="rope"),  # d_k = 16
    State(seq_len=10, d_model=48, num_heads=6, seed=4, mask="padding"),
    State(seq_len=9, d_model=12, num_heads=4, seed=2, mask="none"),  # d_k = 3: no RoPE
    State(seq_len=32, d_model=64, num_heads=8, seed=6, mask="padding", positions="rope"),  # the largest
    State(trained=True),  # learned positions, layer 1: predictions, scores and the continuation
    State(trained=True, tokens="q w e r q w e r", layer=0),
    State(trained=True, tokens="q w e r q w e r", positions="none"),  # no positions, no continuation
    State(trained=True, tokens="a b c d", layer=1),  # no token repeats: no prefix-matching score
    State(trained=True, tokens="m n o p q r s t u v w x y z a b c d e f m n o p q r s t u v", layer=1),  # 30: 3 more
    State(trained=True, tokens="abcdefghabcdefghabcdefghabcdefgh", layer=0),  # 32, the longest: 1 more
]
#: Typed tokens for the parser: valid ones (spaces optional, upper case), a wrong letter, too few, too many.
TYPED = ["a b c d x a b c", "QWERqwer", "q w 3", "a", "a" * 33, "ab  c-d"]
#: The live figures' states: every one the mask figure reaches, every (num_heads, seed) of the
#: heads figure for two seeds plus a sample of the others, RoPE off and on with queries at both ends.
MASK_FIGURE = {"n": 6, "d": 8, "seed": 123}
HEADS_FIGURE = {"n": 6, "d": 64}
ROPE_FIGURE = {"n": 12, "d": 16, "seed": 123, "base": 10000.0}
FIGURE_STATES = {
    "mask": [{"mask": "none", "fillers": 0}, {"mask": "causal", "fillers": 0}]
    + [{"mask": mask, "fillers": k} for mask in ("padding", "left") for k in range(MASK_FIGURE["n"])],
    "heads": [{"num_heads": h, "seed": seed} for seed in (123, 3) for h in explorer.head_choices(HEADS_FIGURE["d"])]
    + [{"num_heads": 4, "seed": seed} for seed in (0, 6)],
    "rope": [{"rope": rope, "query": query} for rope in (False, True) for query in (0, 5, ROPE_FIGURE["n"] - 1)],
}


def floats(array):
    """An array as nested lists of Python floats (NaN and inf are not expected: a clear error if met)."""
    array = np.asarray(array, dtype=float)
    if not np.isfinite(array).all():
        raise ValueError("a golden number is not finite")
    return array.tolist()


def explorer_golden(state, model):
    """One explorer state and the numbers :func:`compute_frame` gives for it."""
    frame = compute_frame(state, model)
    s = frame.state
    numbers = {"weights": floats(frame.weights), "allowed": np.asarray(frame.allowed, dtype=bool).tolist(),
               "inputs_2d": floats(frame.inputs_2d), "outputs_2d": floats(frame.outputs_2d),
               "explained": floats(frame.explained), "real": frame.real.tolist(), "labels": list(frame.labels)}
    if s.trained:
        numbers.update(tokens=frame.tokens.tolist(), predictions=frame.predictions.tolist(),
                       scores={name: None if value is None else floats(value) for name, value in frame.scores.items()},
                       continuation=None if frame.continuation is None else frame.continuation.tolist())
    shown = 0 if s.trained else explorer.SHOWN
    extra = {"pca_gap": pca_gap(frame.x[shown], frame.output[shown])}
    if s.trained:
        extra.update(logit_margins(model, frame.tokens, frame.continuation, s.position_mode == "learned"))
    return {"state": {"trained": s.trained, "seq_len": frame.seq_len, "d_model": s.d_model if not s.trained
                      else model.d_model, "num_heads": frame.num_heads, "seed": s.seed, "mask": s.mask,
                      "tokens": s.tokens, "layer": s.layer, "positions": s.position_mode},
            "numbers": numbers, **extra}


def pca_gap(inputs, outputs):
    """The PCA's smallest gap between its two eigenvalues and their neighbours, over the largest eigenvalue.

    An eigenvector computed in floating point is off by about the rounding of the covariance divided
    by this gap (Davis and Kahan): the tolerance of the PCA's points is divided by it.
    """
    stacked = np.vstack([inputs, outputs])  # (2 * seq_len, d_model)
    centred = stacked - stacked.mean(axis=0)
    eigenvalues = np.append(np.linalg.svd(centred, compute_uv=False) ** 2, [0.0, 0.0])  # descending
    return float(min(eigenvalues[0] - eigenvalues[1], eigenvalues[1] - eigenvalues[2]) / eigenvalues[0])


def logit_margins(model, tokens, continuation, use_positions):
    """The smallest lead of the best logit over the second, over every guess and every token written.

    A twin's guesses may be compared exactly only where this lead is far above rounding.
    """
    logits = [model.forward(tokens, use_positions=use_positions)[0]]  # (seq_len, vocab)
    written = [] if continuation is None else continuation.tolist()
    for k in range(len(written)):  # the logits each written token was the argmax of
        logits.append(model.forward(np.concatenate([tokens, written[:k]]).astype(np.int64))[0][-1:])
    top = np.sort(np.concatenate(logits), axis=-1)[:, -2:]  # (rows, 2)
    return {"logit_margin": float((top[:, 1] - top[:, 0]).min()),
            "logit_scale": float(np.abs(np.concatenate(logits)).max())}


def helpers_golden():
    """The explorer's small helpers: head counts per d_model, padded lengths, typed tokens parsed."""
    typed = []
    for text in TYPED:
        try:
            typed.append({"text": text, "ids": np.asarray(explorer.parse_tokens(text)).tolist()})
        except ValueError as error:
            typed.append({"text": text, "error": str(error)})
    return {"head_choices": {str(d): list(explorer.head_choices(d)) for d in explorer.D_MODELS},
            "padded_length": {str(n): explorer.padded_length(n)
                              for n in range(explorer.MIN_SEQ_LEN, explorer.MAX_SEQ_LEN + 1)},
            "parse_tokens": typed}


def mask_golden(state):
    """Chapter 2's figure: one head, Q = K = V = the explorer's shown tokens, under a mask built by mhattn."""
    n, d, fillers = MASK_FIGURE["n"], MASK_FIGURE["d"], state["fillers"]
    x = explorer.random_tokens(MASK_FIGURE["seed"], n, d)[explorer.SHOWN]  # (n, d)
    real_at_end = padding_mask(np.array([n - fillers]), n)[0, 0]  # (1, n): the last `fillers` keys are padding
    allowed = {"none": np.ones((n, n), dtype=bool), "causal": causal_mask(n),
               "padding": np.broadcast_to(real_at_end, (n, n)),
               "left": causal_mask(n) & real_at_end[:, ::-1]}[state["mask"]]  # padding first, then causal
    _, weights = scaled_dot_product_attention(x, x, x, mask=allowed)  # (n, n)
    return {"weights": floats(weights[None]), "allowed": allowed.tolist()}


def heads_golden(state):
    """Chapter 4's figure: every head of the explorer's untrained layer on its shown sequence."""
    n, d, seed = HEADS_FIGURE["n"], HEADS_FIGURE["d"], state["seed"]
    _, weights = MultiHeadAttention(d, state["num_heads"], seed=seed)(explorer.random_tokens(seed, n, d))
    return {"weights": floats(weights[explorer.SHOWN]), "allowed": np.ones((n, n), dtype=bool).tolist()}


def rope_golden(state):
    """Chapter 8's figure: one head with RoPE on or off, and token 0's query and key turned to every position."""
    n, d, seed = ROPE_FIGURE["n"], ROPE_FIGURE["d"], ROPE_FIGURE["seed"]
    x = explorer.random_tokens(seed, n, d)  # (2, n, d)
    rotary = RotaryMultiHeadAttention(d, 1, seed=seed) if state["rope"] else None
    layer = rotary or MultiHeadAttention(d, 1, seed=seed)  # the same weights either way
    _, weights = layer(x)
    token = x[explorer.SHOWN, 0]  # (d,)
    q, k = token @ layer.W_qkv[:, :d], token @ layer.W_qkv[:, d:2 * d]  # its query and key
    queries, keys = np.tile(q, (n, 1)), np.tile(k, (n, 1))  # (n, d): the same vectors at every position
    if state["rope"]:
        queries = apply_rope(queries, np.arange(n), base=ROPE_FIGURE["base"])
        keys = apply_rope(keys, np.arange(n), base=ROPE_FIGURE["base"])
    scores = queries @ keys.T  # scores[i, j]: the query at position i with the key at position j
    curve = [scores[max(0, -o), max(0, o)] for o in range(-(n - 1), n)]  # against the offset j - i
    return {"weights": floats(weights[explorer.SHOWN]), "allowed": np.ones((n, n), dtype=bool).tolist(),
            "scores": floats(scores), "curve": floats(curve)}


FIGURES = {"mask": mask_golden, "heads": heads_golden, "rope": rope_golden}


def goldens(model=None):
    """Both files' contents: ``{EXPLORER_FILE: {...}, FIGURES_FILE: {...}}``."""
    model = load_trained() if model is None else model
    frames = {"frames": [explorer_golden(state, model) for state in EXPLORER_STATES], "helpers": helpers_golden()}
    figures = {name: [{"state": state, "numbers": FIGURES[name](state)} for state in states]
               for name, states in FIGURE_STATES.items()}
    figures["constants"] = {"mask": MASK_FIGURE, "heads": HEADS_FIGURE, "rope": ROPE_FIGURE}
    return {EXPLORER_FILE: frames, FIGURES_FILE: figures}


def dumps(content):
    """One golden file's text: JSON, one state per line, so that a change shows in a diff where it is."""
    head = {key: value for key, value in content.items() if not isinstance(value, list)}
    lists = {key: value for key, value in content.items() if isinstance(value, list)}
    parts = [f" {json.dumps(key)}: [\n" + ",\n".join("  " + json.dumps(item, separators=(",", ":"))
                                                       for item in items) + "\n ]" for key, items in lists.items()]
    parts += [f" {json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}" for key, value in head.items()]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write(folder=GOLDENS, model=None):
    """Write both golden files into ``folder``; return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, content in goldens(model).items():
        (folder / name).write_text(dumps(content), encoding="utf-8")
        paths.append(folder / name)
    return paths


if __name__ == "__main__":
    if len(sys.argv) > 2:
        sys.exit("usage: python book/twin_goldens.py [FOLDER]  (default: book/goldens)")
    for path in write(Path(sys.argv[1]) if len(sys.argv) == 2 else GOLDENS):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
