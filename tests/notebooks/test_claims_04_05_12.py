"""The numbers that notebooks 04-06 state in their prose, recomputed.

Each test names the claim it backs and recomputes it from the package, not from the
notebook's own code. The notebooks print rounded values so that their stored outputs are the
same on every machine; a claim quoted to two decimals is checked here to that rounding (the
inputs are seeded, so the only freedom is the last bits of float64 arithmetic). Timings are
never asserted: notebook 12's time claims are checked through what does not depend on the
machine (FLOP counts, their slopes, bytes of memory).

The last tests check the shape of every exercise in 04-06 (a reader's cell holding ``...``,
a check that says "not yet" for it, a collapsed solution whose stored output says
"correct.") and that each notebook ends with references.
"""

import math
import tracemalloc
from pathlib import Path

import nbformat
import numpy as np
import pytest
from oracle import require_torch
from sklearn.decomposition import PCA

from mhattn import MultiHeadAttention, split_heads
from mhattn.pictures.embedding_shift import embedding_shift_2d

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = ["04_multi_head_attention", "05_embedding_shift", "12_efficiency"]


def quoted(value, text):
    """True when ``value`` prints as ``text`` (the notebook's rounding)."""
    decimals = len(text.partition(".")[2])
    return f"{value:.{decimals}f}" == text


@pytest.fixture(scope="module")
def example():
    """The chapter's worked example: 6 tokens of width 64 (global seed 123), a 4-head layer (seed 42)."""
    np.random.seed(123)
    x = np.random.randn(1, 6, 64)
    mha = MultiHeadAttention(64, 4)
    output, weights = mha(x)
    projection_only, _ = mha(x, mask=np.eye(6, dtype=bool))
    return {"x": x, "mha": mha, "inputs": x[0], "outputs": output[0], "weights": weights, "proj": projection_only[0]}


# Notebook 04 ---------------------------------------------------------------------------------


def test_04_scaled_scores_have_standard_deviation_2_and_rows_are_peaked(example):
    x, mha, weights = example["x"], example["mha"], example["weights"]
    Q, K, _ = np.split(x @ mha.W_qkv, 3, axis=-1)
    scores = split_heads(Q, 4) @ np.swapaxes(split_heads(K, 4), -1, -2) / math.sqrt(mha.d_k)
    assert quoted(scores.std(), "2.00")
    assert quoted(weights.max(axis=-1).mean(), "0.60")
    assert (weights.max(axis=-1) > 0.5).sum() >= weights[0, :, :, 0].size / 2, "many rows give one key over half"
    xavier = MultiHeadAttention(64, 4)
    xavier.W_qkv = mha.W_qkv * math.sqrt(2 / (64 + 3 * 64)) / math.sqrt(2 / 64)
    assert quoted(xavier(x)[1].max(axis=-1).mean(), "0.29")


def test_04_he_scale_gives_queries_twice_the_variance_of_the_input(example):
    # Each entry of x @ W_qkv sums d_model products of variance 2 / d_model: variance 2 for a unit input.
    mha = example["mha"]
    x = np.random.default_rng(0).standard_normal((20000, 64))
    variance = (x @ mha.W_qkv).var()
    # the mean squared column norm of W_qkv is 2 +- 2 * sqrt(2 / (64 * 192)) = 2 +- 0.03 over seeds
    assert abs(variance - 2) < 0.1


def test_04_query_0_favours_a_different_key_in_each_head(example):
    row = example["weights"][0, :, 0]  # (num_heads, seq_k): query 0 in each head
    assert row[0].argmax() == 5 and row[1].argmax() == 2 and row[3].argmax() == 3
    assert (row[0].max(), row[1].max(), row[3].max()) > (0.5, 0.5, 0.5)
    assert row[2].max() < 0.5 and (row[2] > 0.15).sum() == 3, "head 2 spreads query 0 over three keys"


# Notebook 05 ---------------------------------------------------------------------------------


def test_05_the_common_shift_is_a_third_of_the_arrows_and_lies_along_component_1(example):
    inputs, outputs = example["inputs"], example["outputs"]
    inputs_2d, outputs_2d, explained = embedding_shift_2d(inputs, outputs)
    assert quoted(explained.sum() * 100, "40.4")
    assert np.allclose(inputs_2d.mean(axis=0), -outputs_2d.mean(axis=0)), "the centres mirror each other"
    assert [f"{abs(v):.3f}" for v in inputs_2d.mean(axis=0)] == ["3.634", "0.979"]
    assert (outputs_2d[:, 0] > inputs_2d[:, 0]).all(), "every arrow points right"

    shift = outputs.mean(axis=0) - inputs.mean(axis=0)
    assert quoted(np.linalg.norm(inputs.mean(axis=0)), "3.22") and quoted(np.linalg.norm(shift), "7.70")
    assert quoted(np.linalg.norm(outputs.mean(axis=0)), "6.57")
    assert quoted(math.sqrt(64 / 6), "3.27"), "expected length of the mean of 6 standard normal vectors, about 3.3"
    arrows = outputs - inputs
    total, shared, own = np.sum(arrows**2), 6 * np.sum(shift**2), np.sum((arrows - shift) ** 2)
    assert math.isclose(total, shared + own, rel_tol=1e-12)
    assert f"{shared / total:.0%}" == "35%"
    component_1 = PCA(n_components=2).fit(np.vstack([inputs, outputs])).components_[0]
    assert quoted(abs(component_1 @ shift) / np.linalg.norm(shift), "0.944")

    _, _, explained_centred = embedding_shift_2d(inputs - inputs.mean(axis=0), outputs - outputs.mean(axis=0))
    assert quoted(explained_centred.sum() * 100, "37.0")


def test_05_mixing_pulls_every_token_toward_the_centre_in_64d_but_not_in_the_plane(example):
    outputs, proj = example["outputs"], example["proj"]
    centre = proj.mean(axis=0)
    before, after = np.linalg.norm(proj - centre, axis=1), np.linalg.norm(outputs - centre, axis=1)
    assert (after < before).all()
    assert before.argmin() == 3 and quoted(before[3], "10.22") and quoted(after[3], "9.82")
    start_2d, end_2d, _ = embedding_shift_2d(proj, outputs)
    star = start_2d.mean(axis=0)
    before_2d, after_2d = np.linalg.norm(start_2d - star, axis=1), np.linalg.norm(end_2d - star, axis=1)
    assert np.flatnonzero(after_2d > before_2d).tolist() == [3]
    assert quoted(before_2d[3], "1.22") and quoted(after_2d[3], "3.38")


def test_05_the_linear_map_alone_moves_tokens_further_and_doubles_the_spread(example):
    inputs, outputs, proj = example["inputs"], example["outputs"], example["proj"]

    def spread(vectors):
        return np.linalg.norm(vectors - vectors.mean(axis=0), axis=-1).mean()

    assert [f"{spread(v):.2f}" for v in (inputs, proj, outputs)] == ["7.34", "15.22", "7.29"]
    by_map, by_layer = np.linalg.norm(proj - inputs, axis=1), np.linalg.norm(outputs - inputs, axis=1)
    assert quoted(by_map.mean(), "18.07") and quoted(by_layer.mean(), "12.90")
    assert np.flatnonzero(by_map > by_layer).tolist() == [0, 1, 2, 4, 5]
    assert abs(by_map[3] - by_layer[3]) < 0.1, "pos 3: the two distances are almost equal"


def test_05_exercise_answers(example):
    inputs, outputs = example["inputs"], example["outputs"]
    stacked = np.vstack([inputs, outputs])
    ratios = PCA().fit(stacked).explained_variance_ratio_
    assert (ratios[11:] < 1e-20).all() and (ratios[:11] > 0.001).all(), "at most 11 components carry variance"
    assert int(np.argmax(np.cumsum(ratios) >= 0.9)) + 1 == 8
    after = inputs + outputs
    cosine = (inputs * after).sum(axis=1) / np.linalg.norm(inputs, axis=1) / np.linalg.norm(after, axis=1)
    assert f"{cosine.min():.2f}" == "0.43" and cosine.argmin() == 3 and f"{cosine.max():.2f}" == "0.76"
    r = np.linalg.norm(outputs, axis=1) / np.linalg.norm(inputs, axis=1)
    assert f"{r.min():.2f}" == "0.93" and f"{r.max():.2f}" == "1.46", "the output is as long as the input"
    degrees = np.degrees(np.arccos(cosine))
    assert 40 <= degrees.min() < 41 and 64 < degrees.max() <= 65, "the sum turns each token by 40 to 65 degrees"
    own = (inputs * outputs).sum(axis=1) / np.linalg.norm(inputs, axis=1) / np.linalg.norm(outputs, axis=1)
    assert f"{own[3]:.2f}" == "-0.23" and r[3] > np.median(r), "pos 3: a long output pointing a little against it"
    assert np.allclose(cosine, 1 / np.sqrt(1 + r**2), atol=0.15), "near-right triangles: cos ~ 1 / sqrt(1 + r^2)"


def test_05_without_positions_shuffling_the_tokens_shuffles_the_outputs_the_same_way(example):
    x, mha = example["x"], example["mha"]
    order = np.random.default_rng(5).permutation(x.shape[1])
    output, weights = mha(x)
    shuffled_output, shuffled_weights = mha(x[:, order])
    np.testing.assert_allclose(shuffled_output, output[:, order], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(shuffled_weights, weights[:, :, order][..., order], rtol=1e-12, atol=1e-12)


def test_05_exercise_3_the_residual_arrows_are_shorter_but_as_long_as_the_inputs(example):
    """With the residual, an arrow is the output alone: shorter than before, not short, in 64-D and in the plane."""
    inputs, outputs = example["inputs"], example["outputs"]
    lengths = {
        "output": np.linalg.norm(outputs, axis=1),  # input -> input + output
        "before": np.linalg.norm(outputs - inputs, axis=1),  # section 3's arrows
        "input": np.linalg.norm(inputs, axis=1),
    }
    quoted_ranges = {"output": ("7.2", "11.6"), "before": ("10.1", "14.5"), "input": ("6.9", "9.4")}
    for name, (low, high) in quoted_ranges.items():
        assert quoted(lengths[name].min(), low) and quoted(lengths[name].max(), high), name
    assert (lengths["output"] < lengths["before"]).all(), "every arrow gets shorter"
    start_2d, end_2d, _ = embedding_shift_2d(inputs, inputs + outputs)
    inputs_2d, outputs_2d, _ = embedding_shift_2d(inputs, outputs)  # section 3's picture
    in_plane = np.linalg.norm(end_2d - start_2d, axis=1)
    assert (in_plane < np.linalg.norm(outputs_2d - inputs_2d, axis=1)).all(), "shorter in the picture too"
    assert in_plane.argmin() == 5 and quoted(in_plane[5], "1.5") and quoted(lengths["output"][5], "7.2")


# Notebook 12 ---------------------------------------------------------------------------------


def flops(seq_len, d_model, batch=1):
    """The four matrix products of a forward pass, counted product by product."""
    products = [(batch * seq_len, d_model, 3 * d_model), (batch * seq_len, d_model, d_model)]  # projections
    products += [(seq_len, d_model, seq_len), (seq_len, seq_len, d_model)]  # all heads' scores and outputs
    return sum(2 * m * k * p for m, k, p in products)


def test_12_attention_is_half_the_work_at_n_equal_2d_and_the_table_of_shares():
    shares = {n: (4 * n**2 * 256) / flops(n, 256) for n in (6, 128, 512, 4096)}
    assert [f"{share:.0%}" for share in shares.values()] == ["1%", "20%", "50%", "89%"]
    assert f"{flops(4096, 256) / 1e9:.4f}" == "19.3274"


def test_12_flop_slope_formula_its_landmarks_and_the_printed_table():
    def slope(n, d):  # the formula of the notebook
        return 2 * (n + d) / (n + 2 * d)

    for d in (32, 64, 256):
        for n in (16, 256, 2048, 65536):
            h = 1e-6  # d log F / d log n by a central difference
            numeric = (math.log(flops(n * math.exp(h), d)) - math.log(flops(n * math.exp(-h), d))) / (2 * h)
            assert math.isclose(slope(n, d), numeric, rel_tol=1e-6)
    assert slope(2 * 256, 256) == 1.5 and math.isclose(slope(18 * 256, 256), 1.9)
    assert slope(256, 256) < slope(2048, 256) < 1.9 < slope(2048, 32)
    assert [f"{slope(n, 256):.2f}" for n in (256, 2048)] == ["1.33", "1.80"]  # "1.3 to 1.8"
    assert [f"{slope(n, 32):.2f}" for n in (256, 2048)] == ["1.80", "1.97"]
    lengths = [256, 512, 1024, 2048]  # the slopes between the measured lengths: "1.85 to 1.96", "1.4 to 1.7"
    for d, text in ((32, ["1.85", "1.92", "1.96"]), (256, ["1.42", "1.58", "1.74"])):
        pairs = zip(lengths[:-1], lengths[1:], strict=True)
        secants = [math.log(flops(b, d) / flops(a, d)) / math.log(b / a) for a, b in pairs]
        assert [f"{s:.2f}" for s in secants] == text


def test_12_arithmetic_intensities_and_the_block_size():
    from mhattn.engine import blocks

    def intensity(m, k, p):
        return 2 * m * k * p / (4 * (m * k + k * p + m * p))

    assert f"{intensity(128, 64, 2048):.2f}" == "20.90" and f"{intensity(1, 64, 2048):.2f}" == "0.49"
    assert f"{intensity(2048, 256, 768):.0f}" == "88" and f"{intensity(512, 512, 512):.0f}" == "85"
    assert blocks.BLOCK_SCORES * 4 == 2**20, "the text says 1 MiB"
    assert 4 * 4096**2 * 4 == 256 * 2**20 and 4 * 1024**2 * 4 == 16 * 2**20 and 4 * 2048**2 * 4 == 64 * 2**20


def test_12_peak_memory_full_is_the_weights_blocks_are_the_output_and_one_block():
    from mhattn import scaled_dot_product_attention
    from mhattn.engine import blockwise_attention

    def peak(function):
        tracemalloc.start()
        try:
            function()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    heads, d_k, rows = 4, 64, 64
    full, blocked = [], []
    for n in (128, 256, 512, 1024, 2048):
        Q, K, V = (np.ones((1, heads, n, d_k), dtype=np.float32) for _ in range(3))
        full.append(peak(lambda Q=Q, K=K, V=V: scaled_dot_product_attention(Q, K, V)))
        blocked.append(peak(lambda Q=Q, K=K, V=V: blockwise_attention(Q, K, V, block_size=rows)))
        weights, floor = heads * n * n * 4, (heads * n * d_k + rows * n) * 4
        assert 3 * weights <= full[-1] <= 3.1 * weights + 2**16, "three score-sized arrays at once"
        assert floor <= blocked[-1] <= 1.1 * floor + 2**16
        # the notebook's table prints each peak as its formula "+ under 0.2" MiB
        assert full[-1] - 3 * weights < 0.2 * 2**20 and blocked[-1] - floor < 0.2 * 2**20
    full, blocked = full[2:], blocked[2:]  # the slopes of the last three points, as printed
    slopes = [np.polyfit(np.log([512, 1024, 2048]), np.log(values), 1)[0] for values in (full, blocked)]
    assert [f"{slope:.1f}" for slope in slopes] == ["2.0", "1.0"]


def test_12_the_memory_figures_alt_text_quotes_the_peaks_it_plots():
    """The alt text: the full path "from under 1 to about 190 MiB", the blocks "from about 0.2 to 2.5 MiB"."""
    from mhattn import scaled_dot_product_attention
    from mhattn.engine import blockwise_attention

    def peak_mib(function):
        tracemalloc.start()
        try:
            function()
            return tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()

    full, blocked = {}, {}
    for n in (128, 2048):
        Q, K, V = (np.ones((1, 4, n, 64), dtype=np.float32) for _ in range(3))
        full[n] = peak_mib(lambda Q=Q, K=K, V=V: scaled_dot_product_attention(Q, K, V))
        blocked[n] = peak_mib(lambda Q=Q, K=K, V=V: blockwise_attention(Q, K, V, block_size=64))
    assert full[128] < 1 and 185 <= full[2048] <= 195
    assert abs(blocked[128] - 0.2) < 0.1 and abs(blocked[2048] - 2.5) < 0.1, blocked


def test_12_says_skip_it_once_and_sends_no_reader_to_the_tests():
    nb = nbformat.read(NOTEBOOKS / "12_efficiency.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert text.lower().count("skip it on a first reading") == 1
    assert "tests/" not in text and "package's tests" not in text


def test_12_exercise_3_answers():
    def smallest_rows(ridge, seq_k, d_k):  # by search, not by the solution's formula
        for rows in range(1, 10**6):
            if 2 * rows * seq_k * d_k >= ridge * 4 * (rows * d_k + seq_k * d_k + rows * seq_k):
                return rows
        return None

    assert smallest_rows(20, 2048, 64) == 113 <= 128
    assert smallest_rows(20, 2048, 16) is None, "d_k 16 caps the intensity at d_k / 2 = 8"
    assert 2 * 2048 * 16 / (4 * (16 + 2048)) < 16 / 2


# Every exercise: a "..." to replace, a check that says "not yet", a collapsed solution that passes --


@pytest.mark.parametrize("name", NAMES)
def test_every_notebook_ends_with_references(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert "## References" in text
    references = text[text.index("## References") :]
    assert "Vaswani" in references and "arXiv:1706.03762" in references
    expected = {
        "04_multi_head_attention": ["Glorot", "He, K.", "LLMs-from-scratch", "annotated-transformer"],
        "05_embedding_shift": ["Pearson", "Mu, J.", "transformer-circuits.pub"],
        "12_efficiency": ["Dao, T.", "Williams, S.", "Rabe, M."],
    }[name]
    for word in expected:
        assert word in references, f"{name}: the references should include {word}"


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_04_heads_share_the_projection_and_product_flops_but_each_has_its_own_scores(num_heads):
    """All heads cost one full-width head's projections and products; scores and weights grow H-fold."""
    d_model, n = 64, 10
    mha = MultiHeadAttention(d_model, num_heads)
    assert mha.W_qkv.shape == (d_model, 3 * d_model) and mha.W_o.shape == (d_model, d_model)
    d_k = d_model // num_heads
    assert num_heads * 2 * n * n * d_k == 2 * n * n * d_model, "QK^T and weights @ V: 2 n^2 d_k per head"
    _, weights = mha(np.random.default_rng(0).normal(size=(1, n, d_model)))
    assert weights.shape == (1, num_heads, n, n) and weights.size == num_heads * n * n, "an n x n grid per head"


def test_04_torch_initialises_in_proj_by_xavier_and_out_proj_by_linears_default_with_zero_biases():
    torch = require_torch()
    torch.manual_seed(0)
    d_model = 64
    layer = torch.nn.MultiheadAttention(d_model, 4)
    xavier_bound = math.sqrt(6 / (d_model + 3 * d_model))  # in_proj_weight is (3 d_model, d_model)
    linear_bound = 1 / math.sqrt(d_model)  # nn.Linear: kaiming_uniform(a=sqrt(5)) = U(+-1/sqrt(fan_in))
    in_proj = layer.in_proj_weight.detach().abs()
    out_proj = layer.out_proj.weight.detach().abs()
    # 12288 and 4096 uniform draws: the chance that the largest stays 1 % below the bound is < 1e-17
    assert 0.99 * xavier_bound < in_proj.max().item() <= xavier_bound
    assert 0.99 * linear_bound < out_proj.max().item() <= linear_bound < xavier_bound * 0.9
    assert not layer.in_proj_bias.any() and not layer.out_proj.bias.any(), "both biases start at zero"
