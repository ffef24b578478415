"""The explorer's words: the readout under the controls and the explanation under the picture.

Plain functions of a :class:`~mhattn.explorer.frame.Frame`, returning HTML.
"""

import html

import numpy as np

from ..learn.letters import decode_tokens
from .frame import padded_length


def _runs(values):
    """``["1.000", "1.000", "0.000"]`` -> ``"1.000×2 0.000"``: one entry per query, repeats counted."""
    runs = []
    for value in values:
        if runs and runs[-1][0] == value:
            runs[-1][1] += 1
        else:
            runs.append([value, 1])
    return " ".join(value if count == 1 else f"{value}×{count}" for value, count in runs)


def _note(note):
    return f"<code style='color:#b00020'>{html.escape(note)}</code><br>" if note else ""


def readout_html(frame, note=None):
    """The settings, ``d_k``, and the row sums (untrained) or each head's scores and the guesses (trained).

    ``note``, if given, comes first, in red: why a setting is not what the controls say.
    """
    if frame.state.trained:
        return _note(note) + _trained_readout_html(frame)
    state, weights = frame.state, frame.weights
    num_heads, seq_len = frame.num_heads, frame.seq_len
    sums = weights.sum(axis=-1)  # (num_heads, seq_len): one sum per head and query
    per_query = _runs([f"{s:.3f}" for s in sums[0]])
    same = np.allclose(sums, sums[0], atol=5e-4)
    heads_note = "same in every head" if same else f"head 0; heads range {sums.min():.3f} to {sums.max():.3f}"
    if state.mask == "padding":
        pad = seq_len - padded_length(seq_len)
        pad_note = f" (padding rows: {pad}; they still sum to 1, the mask hides keys, not queries)"
    else:
        pad_note = " (padding rows: 0)"
    return _note(note) + (
        f"<code>seq_len={seq_len} · num_heads={num_heads} · d_k={state.d_model // num_heads} · "
        f"mask={state.mask} · positions={state.position_mode}</code><br>"
        f"<code>row sums, queries 0 to {seq_len - 1} ({heads_note}): {per_query}{pad_note}</code>"
    )


def _trained_readout_html(frame):
    state, num_heads, seq_len = frame.state, frame.num_heads, frame.seq_len
    d_model = frame.x.shape[-1]
    letters = html.escape(" ".join(frame.labels))
    lines = [f"<code>trained model · layer {state.layer} of {frame.num_layers} · num_heads={num_heads} · "
             f"d_k={d_model // num_heads} · mask=causal · positions={state.position_mode} · "
             f"{seq_len} tokens: {letters}</code>"]
    previous = " ".join(f"{s:.2f}" for s in frame.scores["previous_token"])
    lines.append(f"<code>previous-token score per head (weight on the key just before): {previous}</code>")
    matching = frame.scores["prefix_matching"]
    if matching is None:
        lines.append("<code>prefix-matching score per head: no letter repeats yet (type one twice)</code>")
    else:
        scores = " ".join(f"{s:.2f}" for s in matching)
        lines.append(f"<code>prefix-matching score per head (weight on the letters that followed earlier "
                     f"occurrences of the query's letter): {scores}</code>")
    lines.append(f"<code>the model's guess for the next letter, after each token: "
                 f"{html.escape(decode_tokens(frame.predictions))}</code>")
    if frame.continuation is not None and len(frame.continuation):
        lines.append(f"<code>the model writes on, one letter at a time (greedy, with the KV cache): "
                     f"{html.escape(decode_tokens(frame.continuation))}</code>")
    return "<br>".join(lines)


def explanation_html(frame):
    """A paragraph on what the current picture shows and what to try."""
    state, seq_len = frame.state, frame.seq_len
    if state.trained:
        text = ("The chapter's trained model (notebook 07): two layers of attention, no MLP, trained to continue "
                "sequences of random letters that repeat. It reads the letters in the tokens box. Once a letter "
                "repeats, induction heads in layer 1 look from it to the letter that followed its earlier "
                "occurrence, and that letter is the model's guess for what comes next: type a b c d x a b c and "
                "look at the last three rows of layer 1 (the prefix-matching score says which heads do it). "
                "Layer 0 prepares the keys they match (the previous-token score "
                "shows which of its heads look one token back). Switch positions to none: without its "
                "position embeddings, the model can no longer tell which token came just before. "
                "Switch to untrained for a random layer.")
    elif state.mask == "none":
        text = ("Every query may look at every key, so each row of a heatmap shares out a total weight of 1 "
                "among all positions. The heads share the input but each has its own slice of "
                "W_qkv, so they put their weight in different places.")
    elif state.mask == "causal":
        text = ("The causal mask lets query i see keys 0 to i only: everything above the diagonal is grey, and "
                "row 0 puts all its weight on key 0. Move seq_len: the rows that were already there do "
                "not change, because no query can see the tokens added after it.")
    else:
        real = padded_length(seq_len)
        text = (f"Sequence 2 has {real} real tokens; positions {real} to {seq_len - 1} are padding that only "
                "makes it as long as sequence 1. The padding mask hides those keys (grey columns) from every "
                "query, so the real tokens' outputs are what they would be without the padding. The padding "
                "queries (below the dashed line, grey points on the right) still get outputs; a model ignores them.")
    if not state.trained and state.position_mode == "rope":
        text += (" RoPE rotates each query and key by an angle that grows with its position, so the scores "
                 "depend on how far apart two tokens are.")
    return f"<div style='max-width:750px;font-size:0.95em;line-height:1.35'>{text}</div>"
