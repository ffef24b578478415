"""The numbers that notebooks 01-03 state in their prose, recomputed.

Each test names the claim it backs. The notebooks print rounded values so that their stored
outputs are the same on every machine; here the claims are checked with tolerances derived
from the numbers themselves. A test also checks the shape of every exercise: a reader's cell
holding ``...``, a check that says "not yet" for it, and a collapsed solution cell whose
stored output says "correct.".
"""

import ast
import builtins
import contextlib
import math
import os
from pathlib import Path

import jupytext
import nbformat
import numpy as np
import pytest
from oracle import require_torch

import mhattn

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = ["01_softmax", "02_scaled_dot_product_attention", "03_splitting_heads"]


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """Run a notebook's code (magics dropped) in a scratch notebooks/ folder; return its namespace."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cache = {}

    def run(name):
        if name not in cache:
            nb = jupytext.read(NOTEBOOKS / f"{name}.py")
            lines = [
                line
                for cell in nb.cells
                if cell.cell_type == "code"
                for line in cell.source.splitlines()
                if not line.lstrip().startswith(("%", "!"))
            ]
            scratch = tmp_path_factory.mktemp(name) / "notebooks"
            scratch.mkdir()
            namespace = {"__name__": "__notebook__", "__builtins__": builtins, "display": lambda *a: None}
            previous = Path.cwd()
            os.chdir(scratch)
            try:
                with contextlib.redirect_stdout(None):
                    exec(compile("\n".join(lines), name, "exec"), namespace)
            finally:
                os.chdir(previous)
                plt.close("all")
            cache[name] = namespace
        return cache[name]

    return run


# 01: what dividing by the sum breaks, and why the weights are "non-negative" -------------------


def test_01_dividing_by_the_sum_with_mixed_signs_gives_negative_weights_and_weights_above_one():
    scores = np.array([3.0, 1.0, -0.5, -1.5])  # the notebook's scores
    weights = scores / scores.sum()
    assert weights.sum() == pytest.approx(1.0)
    assert weights.max() == pytest.approx(1.5) and (weights < 0).sum() == 2  # rule 1 broken


def test_01_dividing_all_negative_scores_by_their_sum_gives_valid_weights_in_reversed_order():
    scores = np.array([-1.0, -2.0])  # key 0 is the better match
    weights = scores / scores.sum()
    np.testing.assert_allclose(weights, [1 / 3, 2 / 3], rtol=2 * np.finfo(float).eps)
    assert (weights >= 0).all() and weights.sum() == pytest.approx(1.0)  # rule 1 holds ...
    assert weights[0] < weights[1]  # ... rule 2 does not: the worse key gets more
    assert mhattn.softmax(scores)[0] > mhattn.softmax(scores)[1]  # the softmax keeps the order


def test_01_softmax_weights_can_be_exactly_zero_so_they_are_non_negative_not_positive():
    assert np.exp(-800.0) == 0.0  # below float64's smallest subnormal, about e^-744.4
    assert math.log(np.finfo(np.float64).smallest_subnormal) == pytest.approx(-744.44, abs=0.01)
    weights = mhattn.softmax(np.array([0.0, -800.0]))
    assert weights.tolist() == [1.0, 0.0]
    rng = np.random.default_rng(0)
    for scale in (1.0, 100.0, 1e4):
        assert (mhattn.softmax(rng.normal(size=(50, 7)) * scale) >= 0).all()


def test_01_overflow_thresholds_quoted_in_the_text():
    assert math.log(np.finfo(np.float64).max) == pytest.approx(709.78, abs=0.005)
    assert math.log(np.finfo(np.float32).max) == pytest.approx(88.72, abs=0.005)
    assert float(np.finfo(np.float32).max) == pytest.approx(3.4e38, rel=0.01)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.float32(89.0))) and np.isinf(np.exp(np.float32(90.0)))
    assert np.exp(np.float32(88.0)) == pytest.approx(1.65e38, rel=0.01)  # "about 1.7e38", still finite


def test_01_exercise_1_answer_subtracting_the_global_maximum_gives_nan_for_the_low_row():
    x = np.array([[2.0, 1.0], [-1000.0, -1001.0]])
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max())
        weights = e / e.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(weights[0], [math.e / (math.e + 1), 1 / (math.e + 1)], rtol=1e-12)
    assert np.isnan(weights[1]).all()
    np.testing.assert_allclose(mhattn.softmax(x)[1], weights[0], rtol=1e-12)  # the per-row shift fixes it


def test_01_exercise_3_answer_logsumexp_of_five_equal_scores():
    assert -1000 + math.log(5) == pytest.approx(-998.39, abs=0.005)


# 02: the worked example, exercise 1, and where PyTorch's zero-row behaviour holds -----------------


def test_02_worked_example_weights_and_output_quoted_in_the_text():
    K = 4.0 * np.eye(4, 6)
    V = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [2.0, 3.0]])
    Q = np.array([K[2], (K[0] + K[1]) / 2, np.zeros(6)])
    output, weights = mhattn.scaled_dot_product_attention(Q, K, V)
    assert weights[0, 2] > 0.99
    np.testing.assert_allclose(weights[1], [0.482, 0.482, 0.018, 0.018], atol=5e-4)
    np.testing.assert_allclose(output[1], [0.5, 0.537], atol=5e-4)
    np.testing.assert_allclose(output[2], [0.5, 1.0], rtol=1e-12)


def test_02_exercise_1_answer_by_hand():
    Q, K, V = np.array([[1.0, 0.0]]), np.array([[2.0, 0.0], [0.0, 2.0]]), 10 * np.eye(2)
    output, weights = mhattn.scaled_dot_product_attention(Q, K, V)
    e = math.exp(2 / math.sqrt(2))
    np.testing.assert_allclose(weights[0], [e / (e + 1), 1 / (e + 1)], rtol=1e-12)
    np.testing.assert_allclose(weights[0], [0.804, 0.196], atol=5e-4)
    np.testing.assert_allclose(output[0], [8.04, 1.96], atol=5e-3)
    # the two mistakes the solution names
    np.testing.assert_allclose(10 * mhattn.softmax(np.array([2.0, 0.0])), [8.81, 1.19], atol=5e-3)
    np.testing.assert_allclose(10 * mhattn.softmax(np.array([1.0, 0.0])), [7.31, 2.69], atol=5e-3)


def test_02_exercise_3_answer_left_padding_with_a_causal_mask_empties_every_padding_row():
    lengths, seq_len = np.array([5, 2, 0]), 5
    left = (np.arange(seq_len) >= seq_len - lengths[:, None])[:, None, None, :]  # (batch, 1, 1, seq_len)
    both = mhattn.causal_mask(seq_len) & left
    assert (~both.any(axis=-1)).sum(axis=(1, 2)).tolist() == [0, 3, 5]
    right = mhattn.causal_mask(seq_len) & mhattn.padding_mask(lengths, seq_len)
    assert (~right.any(axis=-1)).sum(axis=(1, 2)).tolist() == [0, 0, 5]  # "none, unless the length is 0"


def _torch_with_zero_rows():
    torch = require_torch()
    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    if (major, minor) < (2, 5):
        pytest.skip(f"torch {torch.__version__}: the zero-row behaviour the notebook quotes starts at 2.5")
    return torch


def _empty_row_output(torch, device, dtype):
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 8, generator=generator).to(device=device, dtype=dtype) for n in (3, 4, 4))
    mask = torch.ones(3, 4, dtype=torch.bool, device=device)
    mask[1] = False  # query 1 may attend to nothing
    return q, k, v, mask


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_02_torch_sdpa_gives_a_fully_masked_row_zeros_on_the_cpu(dtype):
    torch = _torch_with_zero_rows()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v, mask = _empty_row_output(torch, "cpu", getattr(torch, dtype))
    outputs = [torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)]  # default dispatch
    with sdpa_kernel(SDPBackend.MATH):
        outputs.append(torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    for out in outputs:
        assert torch.isfinite(out).all()
        assert (out[..., 1, :] == 0).all(), f"empty row {out[..., 1, :]}"
        assert (out[..., 0, :] != 0).any()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("backend", ["MATH", "EFFICIENT_ATTENTION"])
def test_02_torch_sdpa_gives_a_fully_masked_row_zeros_in_cudas_math_and_memory_efficient_backends(backend, dtype):
    torch = _torch_with_zero_rows()
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (the notebook's CUDA claim; cuDNN's nonzero row is quoted, not asserted)")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v, mask = _empty_row_output(torch, "cuda", getattr(torch, dtype))
    with sdpa_kernel(getattr(SDPBackend, backend)):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.isfinite(out).all() and (out[..., 1, :] == 0).all(), f"empty row {out[..., 1, :]}"


# 03: the split is taught on projections; the meaning test's table --------------------------------


def _calls(tree, name):
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name
    ]


def test_03_never_runs_attention_with_one_array_as_queries_keys_and_values():
    """Q = K = V = split_heads(x) with no projection is notebook 04's "Bug 1"; 03 must not teach it."""
    tree = ast.parse(jupytext.writes(jupytext.read(NOTEBOOKS / "03_splitting_heads.py"), fmt="py:percent"))
    calls = _calls(tree, "scaled_dot_product_attention")
    assert calls, "03 runs attention in its meaning test"
    for call in calls:
        arguments = [ast.dump(argument) for argument in call.args[:3]]
        assert len(set(arguments)) == len(arguments), f"line {call.lineno}: Q, K and V are the same expression"


def test_03_attention_in_heads_is_the_modules_forward_without_its_output_projection(notebook):
    namespace = notebook("03_splitting_heads")
    rng = np.random.default_rng(3)
    d_model, num_heads = 12, 3
    x = rng.normal(size=(2, 5, d_model))
    W_q, W_k, W_v = rng.normal(size=(3, d_model, d_model)) / math.sqrt(d_model)
    mha = mhattn.MultiHeadAttention(d_model, num_heads)
    mha.W_qkv = np.concatenate([W_q, W_k, W_v], axis=1)  # (d_model, 3 * d_model): queries, keys, values
    mha.W_o = np.eye(d_model)
    for mask in (None, mhattn.causal_mask(5)):
        got = namespace["attention_in_heads"](
            x, W_q, W_k, W_v, mhattn.split_heads, mhattn.combine_heads, num_heads, mask
        )
        # float64, d_model 12: a few ulp of rounding from a different order of products
        np.testing.assert_allclose(got, mha.forward(x, mask)[0], rtol=1e-12, atol=1e-12)


def test_03_meaning_test_table_which_tokens_move_when_the_last_one_changes(notebook):
    namespace = notebook("03_splitting_heads")
    x, change = namespace["x"], namespace["tokens_that_change"]
    split, combine = mhattn.split_heads, mhattn.combine_heads
    split_buggy, combine_buggy = namespace["split_heads_buggy"], namespace["combine_heads_buggy"]
    causal = mhattn.causal_mask(5)
    table = {
        "correct": (change(x, split, combine, None), change(x, split, combine, causal)),
        "buggy pair": (change(x, split_buggy, combine_buggy, None), change(x, split_buggy, combine_buggy, causal)),
        "mixed": (change(x, split_buggy, combine, None), change(x, split_buggy, combine, causal)),
    }
    got = {name: (free.tolist(), masked.tolist()) for name, (free, masked) in table.items()}
    assert got == {
        "correct": ([0, 1, 2, 3, 4], [4]),
        "buggy pair": ([3, 4], [4]),  # "tokens 0 to 2 never see token 4"
        "mixed": ([0, 1, 2, 3, 4], [2, 3, 4]),  # "tokens 2 and 3 react to token 4"
    }


def test_03_exercise_1_answer_rows_of_the_right_and_the_buggy_split(notebook):
    namespace = notebook("03_splitting_heads")
    Q = (10 * np.arange(4)[:, None] + np.arange(6))[None].astype(float)  # (1, 4, 6)
    assert mhattn.split_heads(Q, 3)[0, 2, 1].tolist() == [14.0, 15.0]
    assert namespace["split_heads_buggy"](Q, 3)[0, 2, 1].tolist() == [30.0, 31.0]


# Every exercise: a "..." to replace, a check that says "not yet", a collapsed solution that passes --


@pytest.mark.parametrize("name", NAMES)
def test_every_notebook_ends_with_references(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    references = text[text.index("## References") :]
    assert "Vaswani" in references and "arXiv:1706.03762" in references
    for anchor in ("d2l.ai", "LLMs-from-scratch", "annotated-transformer", "transformer-explainer"):
        assert anchor in references, f"{name}: the read-next anchors should include {anchor}"


def test_03_reshape_bug_cuts_q_across_head_0_gets_tokens_0_and_1_and_a_row_is_half_a_token():
    """The picture of the bug: 4 tokens of width 8, 2 heads, reshaped without the transpose."""
    seq_len, d_model, num_heads = 4, 8, 2
    token_of = np.broadcast_to(np.arange(seq_len)[None, :, None], (1, seq_len, d_model))
    column_of = np.broadcast_to(np.arange(d_model)[None, None, :], (1, seq_len, d_model))
    d_k = d_model // num_heads
    buggy = [array.reshape(1, num_heads, seq_len, d_k) for array in (token_of, column_of)]  # no transpose
    # memory order: head h holds Q's rows 2h and 2h + 1, a cut across Q after token 1
    assert [sorted(set(buggy[0][0, h].ravel().tolist())) for h in range(num_heads)] == [[0, 1], [2, 3]]
    for h in range(num_heads):
        for row in range(seq_len):
            assert len(set(buggy[0][0, h, row].tolist())) == 1, "a row holds entries of one token"
            assert buggy[1][0, h, row].tolist() in ([0, 1, 2, 3], [4, 5, 6, 7]), "half of that token's columns"
    right = [mhattn.split_heads(array, num_heads) for array in (token_of, column_of)]
    assert all(sorted(set(right[0][0, h].ravel().tolist())) == [0, 1, 2, 3] for h in range(num_heads))
    assert [right[1][0, h, 0].tolist() for h in range(num_heads)] == [[0, 1, 2, 3], [4, 5, 6, 7]], "a cut down Q"
