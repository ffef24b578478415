"""The exercises' answers, and the check that runs them in each notebook's own kernel.

nbval executes every notebook once. After its last cell, ``conftest.py`` runs
:func:`check_exercise` in that same kernel for each exercise below: the check must say "not
yet" to the pre-filled answer, accept a right answer, reject every wrong one, and never give
the answer away in what it says to a wrong one. The solutions live here, out of the notebooks'
text. This module is imported inside the kernel, so it needs only NumPy and the package.
"""

import math

import numpy as np

import mhattn
from mhattn.core.positions import apply_rope_interleaved


def multi_head_loop(x, mha, interleaved=False, apply_W_o=True):
    """The solution of exercise 2; ``interleaved`` and ``apply_W_o=False`` are two mistakes."""
    d_k = mha.d_k
    W_q, W_k, W_v = np.split(mha.W_qkv, 3, axis=1)  # each (d_model, d_model)
    outputs, weights = [], []
    for h in range(mha.num_heads):
        if interleaved:  # wrong: head h's q, k and v taken as three neighbouring blocks of W_qkv
            blocks = np.split(mha.W_qkv[:, 3 * h * d_k : 3 * (h + 1) * d_k], 3, axis=1)
        else:
            blocks = [W[:, h * d_k : (h + 1) * d_k] for W in (W_q, W_k, W_v)]  # each (d_model, d_k)
        out, w = mhattn.scaled_dot_product_attention(*(x @ W for W in blocks))
        outputs.append(out)
        weights.append(w)
    concatenated = np.concatenate(outputs, axis=-1)  # (batch, seq_len, d_model)
    return (concatenated @ mha.W_o if apply_W_o else concatenated), np.stack(weights, axis=1)


def head_columns(mha, order):
    return np.concatenate([np.arange(h * mha.d_k, (h + 1) * mha.d_k) for h in order])  # (d_model,)


def permute_heads(mha, order, move_W_o=True):
    columns = head_columns(mha, order)
    new = mhattn.MultiHeadAttention(mha.d_model, mha.num_heads)
    new.W_qkv = mha.W_qkv[:, np.concatenate([columns + part * mha.d_model for part in range(3)])]
    new.W_o = mha.W_o[columns] if move_W_o else mha.W_o
    return new


def tied_heads(mha, source, values=True, interleaved=False):
    """Exercise 04-1: every head a copy of head ``source``; ``values=False`` and ``interleaved`` are mistakes."""
    d_k, d_model = mha.d_k, mha.d_model
    if interleaved:  # wrong: reads W_qkv as [q_0 k_0 v_0 | q_1 k_1 v_1 | ...]
        block = mha.W_qkv[:, 3 * source * d_k : 3 * (source + 1) * d_k]  # (d_model, 3 * d_k)
        W_qkv = np.concatenate([np.tile(part, mha.num_heads) for part in np.split(block, 3, axis=1)], axis=1)
    else:
        thirds = np.split(mha.W_qkv, 3, axis=1)  # each (d_model, d_model)
        copied = [np.tile(third[:, source * d_k : (source + 1) * d_k], mha.num_heads) for third in thirds]
        if not values:
            copied[2] = thirds[2]
        W_qkv = np.concatenate(copied, axis=1)
    new = mhattn.MultiHeadAttention(d_model, mha.num_heads)
    new.W_qkv, new.W_o = W_qkv, mha.W_o
    return new


def layer_with_zero_columns(mha, third, zero_W_o=False):
    """Exercise 05-2: a copy of ``mha`` with the query, key or value columns of ``W_qkv`` set to zero."""
    index = ["queries", "keys", "values"].index(third)
    W_qkv = np.array(mha.W_qkv)
    W_qkv[:, index * mha.d_model : (index + 1) * mha.d_model] = 0.0
    new = mhattn.MultiHeadAttention(mha.d_model, mha.num_heads)
    new.W_qkv, new.W_o = W_qkv, np.zeros_like(mha.W_o) if zero_W_o else mha.W_o
    return new


def query_blocks(Q, K, V, mask, rows, broadcast=True, slice_keys=False, drop_last=False):
    """Exercise 06-2 with a preallocated output; the keyword arguments switch on typical mistakes."""
    seq_q, seq_k = Q.shape[-2], K.shape[-2]
    if mask is not None and broadcast:
        mask = np.broadcast_to(mask, np.broadcast_shapes(mask.shape, Q.shape[:-2] + (seq_q, seq_k)))
    output = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=np.result_type(Q, K, V))  # (..., seq_q, d_v)
    stop = seq_q - seq_q % rows if drop_last and seq_q % rows else seq_q
    for start in range(0, stop, rows):
        block = slice(start, start + rows)
        keys = block if slice_keys else slice(None)
        block_mask = None if mask is None else mask[..., block, keys]
        output[..., block, :] = mhattn.scaled_dot_product_attention(
            Q[..., block, :], K[..., keys, :], V[..., keys, :], block_mask
        )[0]
    return output


def rows_by_search(ridge, seq_k, d_k, write_scores=True, itemsize=4):
    """Exercise 06-3 by search: the fewest rows whose score product reaches ``ridge`` FLOPs per byte."""
    for rows in range(1, 2 * 10**5):
        moved = itemsize * (rows * d_k + seq_k * d_k + (rows * seq_k if write_scores else 0))
        if 2 * rows * seq_k * d_k >= ridge * moved:
            return rows
    return None


def components_for_90(stacked):
    """Exercise 1 of notebook 05, answered with scikit-learn (the check uses an SVD)."""
    from sklearn.decomposition import PCA

    kept = np.cumsum(PCA().fit(stacked).explained_variance_ratio_)
    return int(np.argmax(kept >= 0.9)) + 1


def cosines(a, b):
    return np.array([np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)) for u, v in zip(a, b, strict=True)])


def softmax_solution(x, axis=-1, subtract="slice", keep_dtype=True, fixed_axis=False):
    """Exercise 01-1; the keyword arguments switch on typical mistakes."""
    x = np.asarray(x) if keep_dtype else np.asarray(x, dtype=np.float64)
    axis = -1 if fixed_axis else axis
    if subtract == "slice":
        x = x - x.max(axis=axis, keepdims=True)
    elif subtract == "all":
        x = x - x.max()
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_without_keepdims(x, axis=-1):
    """Exercise 01-2 with the maximum and the sum reduced without keepdims: NumPy cannot broadcast them."""
    x = np.asarray(x)
    e = np.exp(x - np.expand_dims(x.max(axis=axis), axis))
    return e / e.sum(axis=axis)


def attention_with_K_T(Q, K, V, mask=None):
    """Exercise 02-2 with ``K.T``, which reverses every axis of a batched K: the product cannot be formed."""
    return attention_solution(Q, np.swapaxes(K.T, -1, -2), V, mask)  # scores = Q @ K.T


def softmax_from_scipy(x, axis=-1):
    """Exercise 01-1 answered with SciPy: a right answer that calls a function named softmax."""
    from scipy import special

    return special.softmax(x, axis=axis)


def logsumexp_solution(x, add_back=True, stable=True):
    x = np.asarray(x, dtype=np.float64)
    m = x.max() if stable else 0.0
    return (m if add_back else 0.0) + np.log(np.sum(np.exp(x - m)))


def attention_solution(Q, K, V, mask=None, divisor=None, fill=-np.inf, axis=-1, invert=False):
    """Exercise 02-1; ``divisor``, ``fill``, ``axis`` and ``invert`` give the typical mistakes."""
    scores = Q @ np.swapaxes(K, -1, -2) / (math.sqrt(Q.shape[-1]) if divisor is None else divisor(Q.shape[-1]))
    if mask is not None:
        scores = np.where(~mask if invert else mask, scores, fill)
    top = scores.max(axis=axis, keepdims=True)
    e = np.exp(scores - np.where(np.isneginf(top), 0, top))
    total = e.sum(axis=axis, keepdims=True)
    weights = e / np.where(total == 0, 1, total)
    return weights @ V, weights


def left_padding_solution(lengths, seq_len, shift=0):
    return (np.arange(seq_len) >= seq_len - np.asarray(lengths)[:, None] + shift)[:, None, None, :]


def left_padding_from_package(lengths, seq_len):
    """Exercise 02-2 answered by reversing the package's right padding: right, and it calls padding_mask."""
    return mhattn.padding_mask(np.asarray(lengths), seq_len)[..., ::-1]


def split_solution(x, num_heads, transpose=True):
    batch, seq_len, d_model = x.shape
    if not transpose:
        return x.reshape(batch, num_heads, seq_len, d_model // num_heads)
    return x.reshape(batch, seq_len, num_heads, d_model // num_heads).transpose(0, 2, 1, 3)


def combine_solution(x, transpose=True):
    batch, num_heads, seq_len, d_k = x.shape
    if transpose:
        x = x.transpose(0, 2, 1, 3)
    return x.reshape(batch, seq_len, num_heads * d_k)


def split_qkv_solution(qkv, num_heads, order=(2, 0, 3, 1, 4), three_first=True):
    batch, seq_len, width = qkv.shape
    d_k = width // 3 // num_heads
    shape = (batch, seq_len, 3, num_heads, d_k) if three_first else (batch, seq_len, num_heads, 3, d_k)
    return qkv.reshape(shape).transpose(order)


EXERCISES_01_03 = [
    (
        "01_softmax",
        "check_exercise_1",
        lambda ns: (
            ns["global_max_prediction"],
            np.array([[math.e / (math.e + 1), 1 / (math.e + 1)], [np.nan, np.nan]]),  # row 1 is 0 / 0
            [
                np.array([[0.731, 0.269], [0.731, 0.269]]),  # as if the shift always cancelled
                np.array([[0.731, 0.269], [0.0, 0.0]]),  # underflow seen, 0 / 0 not
                np.array([[0.5, 0.5], [np.nan, np.nan]]),  # row 0 wrong
                np.array([0.731, 0.269]),  # one row only
            ],
        ),
    ),
    (
        "01_softmax",
        "check_exercise_2",
        lambda ns: (
            ns["my_softmax"],
            softmax_from_scipy,
            [
                lambda x, axis=-1: softmax_solution(x, axis, subtract="none"),  # overflows
                lambda x, axis=-1: softmax_solution(x, axis, subtract="all"),  # whole slices underflow
                lambda x, axis=-1: softmax_solution(x, axis, fixed_axis=True),  # ignores axis
                lambda x, axis=-1: softmax_solution(x, axis, keep_dtype=False),  # float32 -> float64
                softmax_without_keepdims,  # crashes inside the check: must become a hint
            ],
        ),
    ),
    (
        "01_softmax",
        "check_exercise_3",
        lambda ns: (
            ns["my_logsumexp"],
            logsumexp_solution,
            [lambda x: logsumexp_solution(x, stable=False), lambda x: logsumexp_solution(x, add_back=False)],
        ),
    ),
    (
        "02_scaled_dot_product_attention",
        "check_exercise_1",
        lambda ns: (
            ns["output_prediction"],
            10 * mhattn.softmax(np.array([[math.sqrt(2), 0.0]])),  # scores [2, 0] / sqrt(2), values 10 * I
            [
                10 * mhattn.softmax(np.array([[2.0, 0.0]])),  # no scale
                10 * mhattn.softmax(np.array([[1.0, 0.0]])),  # divided by d_k
                np.array([[5.0, 5.0]]),  # uniform
                np.array([[0.804, 0.196]]),  # the weights, not the output
            ],
        ),
    ),
    (
        "02_scaled_dot_product_attention",
        "check_exercise_2",
        lambda ns: (
            ns["my_attention"],
            attention_solution,
            [
                lambda Q, K, V, mask=None: attention_solution(Q, K, V, mask, divisor=np.sqrt),  # float32 -> float64
                lambda Q, K, V, mask=None: attention_solution(Q, K, V, mask, divisor=lambda d: 1.0),  # no scale
                lambda Q, K, V, mask=None: attention_solution(
                    Q, K, V, mask, divisor=lambda d: math.sqrt(3 * d)
                ),  # d_model
                lambda Q, K, V, mask=None: attention_solution(Q, K, V, mask, fill=-1e9),  # empty row -> uniform
                lambda Q, K, V, mask=None: attention_solution(Q, K, V, mask, axis=-2),  # wrong axis
                lambda Q, K, V, mask=None: attention_solution(Q, K, V, mask, invert=True),  # torch polarity
                attention_with_K_T,  # crashes on batched inputs: must become a hint
            ],
        ),
    ),
    (
        "02_scaled_dot_product_attention",
        "check_exercise_3",
        lambda ns: (
            ns["left_padding_mask"],
            left_padding_from_package,
            [
                lambda lengths, seq_len: mhattn.padding_mask(np.asarray(lengths), seq_len),  # right padding
                lambda lengths, seq_len: left_padding_solution(lengths, seq_len, shift=1),  # off by one
                lambda lengths, seq_len: left_padding_solution(lengths, seq_len)[:, 0, 0],  # 2-D
            ],
        ),
    ),
    (
        "03_splitting_heads",
        "check_exercise_1",
        lambda ns: (
            ns["row_prediction"],
            np.array([[14, 15], [30, 31]]),  # token 1's columns 4-5; numbers 18 and 19 in memory order
            [
                np.array([[14, 15], [14, 15]]),  # as if the buggy split were right
                np.array([[4, 5], [30, 31]]),  # token 0, not token 1
                np.array([[14, 15], [20, 21]]),  # buggy row counted in rows of d_model
            ],
        ),
    ),
    (
        "03_splitting_heads",
        "check_exercise_2",
        lambda ns: (
            (ns["my_split_heads"], ns["my_combine_heads"]),
            (split_solution, combine_solution),
            [
                (lambda x, h: split_solution(x, h, transpose=False), lambda x: combine_solution(x, transpose=False)),
                (lambda x, h: split_solution(x, h, transpose=False), combine_solution),
                (split_solution, lambda x: combine_solution(x, transpose=False)),
            ],
        ),
    ),
    (
        "03_splitting_heads",
        "check_exercise_3",
        lambda ns: (
            ns["split_qkv"],
            split_qkv_solution,
            [
                lambda qkv, h: split_qkv_solution(qkv, h, order=(3, 0, 2, 1, 4), three_first=False),  # heads before 3
                lambda qkv, h: split_qkv_solution(qkv, h, order=(2, 0, 1, 3, 4)),  # seq_len before heads
                lambda qkv, h: split_qkv_solution(qkv, h, order=(2, 0, 3, 1)),  # crashes: four axes named
            ],
        ),
    ),
]


# Each entry: notebook, checker, and a function of the notebook's namespace that returns
# (the pre-filled answer, a right answer, [wrong answers]).
EXERCISES = EXERCISES_01_03 + [
    (
        "04_multi_head_attention",
        "check_exercise_1",
        lambda ns: (
            ns["tied_heads"],
            tied_heads,
            [
                lambda mha, source: tied_heads(mha, source, values=False),  # weights right, output not
                lambda mha, source: tied_heads(mha, source, interleaved=True),  # per-head layout
                lambda mha, source: tied_heads(mha, 0),  # always head 0
                lambda mha, source: mha,  # the same layer
            ],
        ),
    ),
    (
        "04_multi_head_attention",
        "check_exercise_2",
        lambda ns: (
            ns["multi_head_loop"],
            multi_head_loop,
            [
                lambda x, mha: multi_head_loop(x, mha, interleaved=True),
                lambda x, mha: multi_head_loop(x, mha, apply_W_o=False),
            ],
        ),
    ),
    (
        "04_multi_head_attention",
        "check_exercise_3",
        lambda ns: (
            ns["permute_heads"],
            permute_heads,
            [lambda mha, order: permute_heads(mha, order, move_W_o=False), lambda mha, order: mha],
        ),
    ),
    (
        "05_embedding_shift",
        "check_exercise_1",
        lambda ns: (
            ns["components_for_90"],
            components_for_90(ns["stacked"]),
            [components_for_90(ns["stacked"]) - 1, components_for_90(ns["stacked"]) + 1, 0.9, 0],
        ),
    ),
    (
        "05_embedding_shift",
        "check_exercise_2",
        lambda ns: (
            ns["uniform_layer"],
            lambda mha: layer_with_zero_columns(mha, "keys"),  # zero keys: every score 0 as well
            [
                lambda mha: layer_with_zero_columns(mha, "values"),  # output 0, weights not uniform
                lambda mha: layer_with_zero_columns(mha, "queries", zero_W_o=True),  # uniform, output 0
                lambda mha: mha,  # the same layer
            ],
        ),
    ),
    (
        "05_embedding_shift",
        "check_exercise_3",
        lambda ns: (
            ns["residual_cosine"],
            cosines(ns["inputs"], ns["inputs"] + ns["outputs"]),
            [
                cosines(ns["inputs"], ns["outputs"]),  # forgot the residual
                cosines(ns["inputs"].T, (ns["inputs"] + ns["outputs"]).T),  # per feature, not per token
                np.dot(ns["inputs"].ravel(), (ns["inputs"] + ns["outputs"]).ravel()),  # one number
            ],
        ),
    ),
    (
        "12_efficiency",
        "check_exercise_1",
        lambda ns: (
            ns["predicted_peak_bytes"],
            lambda heads, n, d_k, rows: 4 * (heads * n * d_k + rows * n),  # the output and one block of scores
            [
                lambda heads, n, d_k, rows: 4 * heads * n * n,  # all the weights
                lambda heads, n, d_k, rows: 4 * heads * n * d_k,  # the output alone
                lambda heads, n, d_k, rows: 4 * rows * n,  # one block alone
                lambda heads, n, d_k, rows: 8 * (heads * n * d_k + rows * n),  # float64
            ],
        ),
    ),
    (
        "12_efficiency",
        "check_exercise_2",
        lambda ns: (
            ns["attention_by_query_blocks"],
            query_blocks,
            [
                lambda Q, K, V, mask, rows: query_blocks(Q, K, V, mask, rows, broadcast=False),  # padding mask
                lambda Q, K, V, mask, rows: query_blocks(Q, K, V, mask, rows, slice_keys=True),  # keys cut too
                lambda Q, K, V, mask, rows: query_blocks(Q, K, V, mask, rows, drop_last=True),  # last block lost
                lambda Q, K, V, mask, rows: mhattn.scaled_dot_product_attention(Q, K, V, mask)[0],  # all at once
            ],
        ),
    ),
    (
        "12_efficiency",
        "check_exercise_3",
        lambda ns: (
            ns["rows_to_reach"],
            rows_by_search,
            [
                lambda ridge, seq_k, d_k: rows_by_search(ridge, seq_k, d_k, write_scores=False),  # never None
                lambda ridge, seq_k, d_k: rows_by_search(ridge, seq_k, d_k, itemsize=8),  # float64 bytes
                lambda ridge, seq_k, d_k: (lambda r: r if r is None else r + 1)(rows_by_search(ridge, seq_k, d_k)),
            ],
        ),
    ),
    (
        "11_production",
        "check_exercise_1",
        lambda ns: (
            ns["merge"],
            ns["solution_merge"],
            [
                lambda a, b: (max(a[0], b[0]), a[1] + b[1], a[2] + b[2]),  # no rescaling
                lambda a, b: (  # the sums rescaled, the outputs not
                    max(a[0], b[0]),
                    np.exp(a[0] - max(a[0], b[0])) * a[1] + np.exp(b[0] - max(a[0], b[0])) * b[1],
                    a[2] + b[2],
                ),
                lambda a, b: (lambda m: (  # NaN when both maxima are -inf
                    m,
                    np.exp(a[0] - m) * a[1] + np.exp(b[0] - m) * b[1],
                    np.exp(a[0] - m) * a[2] + np.exp(b[0] - m) * b[2],
                ))(max(a[0], b[0])),
            ],
        ),
    ),
    (
        "11_production",
        "check_exercise_2",
        lambda ns: (
            ns["sequences_that_fit"],
            ns["solution_sequences_that_fit"],
            [
                lambda f, L, kv, d, t, by: f // (L * kv * d * t * by),  # forgot that K and V are both cached
                lambda f, L, kv, d, t, by: f / (2 * L * kv * d * t * by),  # a fraction of a sequence
                lambda f, L, kv, d, t, by: f // (2 * L * 64 * d * t * by),  # the query heads, not the KV heads
            ],
        ),
    ),
    (
        "11_production",
        "check_exercise_3",
        lambda ns: (ns["tiles_prediction"], ns["solution_tiles"], [(64, 8), (36, 0), (28, 8)]),
    ),
    (
        "08_why_several_heads",
        "check_exercise_1",
        lambda ns: (
            ns["parameter_count"],
            ns["solution_parameter_count"],
            [
                lambda v, s, d, h: 4 * d * d,  # the attention layer alone
                lambda v, s, d, h: v * d + s * d + 4 * d * d + d * v,  # one readout forgotten
                lambda v, s, d, h: v * d + 4 * d * d + 2 * d * v,  # positions forgotten
                lambda v, s, d, h: v * d + s * d + 3 * d * d + (d // h) ** 2 * h + 2 * d * v,  # W_o per head
            ],
        ),
    ),
    (
        "08_why_several_heads",
        "check_exercise_2",
        lambda ns: (
            ns["silenced_logits"],
            ns["solution_silenced_logits"],
            [
                lambda m, t, h: ns["solution_silenced_logits"](m, t, (h + 1) % m.num_heads),  # the wrong head
                lambda m, t, h: m(t)[0],  # nothing silenced
            ],
        ),
    ),
    (
        "08_why_several_heads",
        "check_exercise_3",
        lambda ns: (
            ns["copied_row_accuracy"],
            ns["solution_copied_row_accuracy"],
            [np.array([1.0, 1.0]), np.array([0.53, 0.53]), np.array([0.06, 1.0])],
        ),
    ),
    (
        "06_positions",
        "check_exercise_1",
        lambda ns: (
            ns["offset_matrix"],
            ns["solution_offset_matrix"],
            [
                lambda k, d: ns["solution_offset_matrix"](k, d).T,  # the inverse turn
                lambda k, d: np.eye(d),  # no turn at all
                lambda k, d: ns["solution_offset_matrix"](k + 1, d),  # off by one position
            ],
        ),
    ),
    (
        "06_positions",
        "check_exercise_2",
        lambda ns: (
            ns["rope_complex"],
            ns["solution_rope_complex"],
            [
                lambda x, p: ns["solution_rope_complex"](x, -p),  # turned backwards
                lambda x, p: apply_rope_interleaved(x, p),  # the other pairing
                lambda x, p: ns["solution_rope_complex"](x, p)[..., ::-1],  # columns reversed
            ],
        ),
    ),
    (
        "06_positions",
        "check_exercise_3",
        lambda ns: (ns["changed_positions"], {2, 3, 4, 5}, [{2, 5}, {2, 3, 4, 5, 6, 7}, set()]),
    ),
    (
        "10_real_model",
        "check_exercise_1",
        lambda ns: (
            ns["previous_heads"],
            ns["solution_previous_heads"],
            [
                lambda w, cut: ns["solution_previous_heads"](w, cut)[::-1],  # not sorted
                lambda w, cut: ns["solution_previous_heads"](w, cut / 2),  # the cut ignored
                lambda w, cut: [  # each token on itself, not on the one before
                    tuple(int(i) for i in pair)
                    for pair in zip(*np.nonzero(np.diagonal(w, axis1=-2, axis2=-1).mean(axis=(0, -1)) > cut),
                                    strict=True)
                ],
            ],
        ),
    ),
    (
        "10_real_model",
        "check_exercise_2",
        lambda ns: (ns["prediction_2"], "almost none", ["about as many as before", "none at all"]),
    ),
    (
        "07_learning_to_attend",
        "check_exercise_1",
        lambda ns: (
            ns["my_softmax_vjp"],
            ns["solution_softmax_vjp"],
            [
                lambda weights, d_weights: weights * d_weights,  # forgot the weighted mean
                lambda weights, d_weights: weights @ d_weights,  # crashes: must give a hint, not a traceback
                lambda weights, d_weights: d_weights - (weights * d_weights).sum(-1, keepdims=True),  # forgot p_j
            ],
        ),
    ),
    (
        "07_learning_to_attend",
        "check_exercise_2",
        lambda ns: (ns["prediction"], {"dQ", "dK"}, [{"dV"}, {"dQ"}, "dQ", {"dQ", "dK", "dX"}]),
    ),
    (
        "09_induction_heads",
        "check_exercise_1",
        lambda ns: (ns["prediction_1"], "between 0.4 and 0.9", ["above 0.9", "below 0.4"]),
    ),
    (
        "09_induction_heads",
        "check_exercise_2",
        lambda ns: (ns["prediction_2"], "above 0.95", ["between 0.5 and 0.95", "below 0.5"]),
    ),
]




# What no failure message of a check may say: the answer the reader is asked to find.
SPOILERS = {
    ("01_softmax", "check_exercise_1"): ["0.73", "0.27", "0 / 0"],
    ("01_softmax", "check_exercise_3"): ["log(5)", "log 5", "998"],
    ("02_scaled_dot_product_attention", "check_exercise_1"): ["8.0", "1.96", "0.80", "0.19"],
    ("03_splitting_heads", "check_exercise_1"): ["14", "15", "30", "31", "2 * d_k"],
    ("04_multi_head_attention", "check_exercise_1"): ["value columns", "W_o as it is"],
    ("04_multi_head_attention", "check_exercise_3"): ["rows of W_o", "value columns"],
    ("05_embedding_shift", "check_exercise_1"): ["8 components"],
    ("05_embedding_shift", "check_exercise_2"): ["quer", "key column", "value column", "complete-mixing"],
}
MORE_WRONGS = {  # mistakes that reach the checks the exercise's own list of wrong answers does not
    ("01_softmax", "check_exercise_3"): [
        lambda x: logsumexp_solution(x) if np.max(x) > -500 else -1000.0,  # finite, but log 5 forgotten
    ],
}




def check_exercise(notebook, checker, namespace):
    """In the kernel that ran ``notebook``: ``namespace[checker]`` tells right from wrong without a spoiler.

    Raises AssertionError, saying which answer went wrong, when the check says anything but
    "not yet" to the pre-filled answer or "... correct." to a right one, accepts a wrong
    answer (from :data:`EXERCISES` or :data:`MORE_WRONGS`), or names a words of
    :data:`SPOILERS` in what it says to one.
    """
    answers = next(answers for name, check, answers in EXERCISES if (name, check) == (notebook, checker))
    unanswered, right, wrongs = answers(namespace)
    check = namespace[checker]
    said = check(unanswered)
    assert "not yet" in said, f"the pre-filled answer must not fail the notebook: {said!r}"
    said = check(right)
    assert said.endswith("correct."), f"the right answer was refused: {said!r}"
    for index, wrong in enumerate([*wrongs, *MORE_WRONGS.get((notebook, checker), [])]):
        try:
            check(wrong)
        except AssertionError as failure:
            said = str(failure)
        else:
            raise AssertionError(f"wrong answer {index} was accepted")
        for words in SPOILERS.get((notebook, checker), ()):
            assert words not in said, f"{checker} of {notebook} says {words!r} to wrong answer {index}: {said}"
