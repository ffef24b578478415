"""The tiny attention-only transformer and its shipped checkpoints.

The targets are the issue's, measured on fresh random sequences (a fixed seed the training
never saw). Training amplifies BLAS rounding, but the shipped weights are fixed: the only
rounding left is the forward's, ~1e-13, which cannot move an accuracy measured on 512
sequences, or a score averaged over thousands of weights, across a target.
"""

from importlib import resources

import numpy as np
import pytest

from mhattn import MultiHeadAttention, causal_mask, softmax
from mhattn.learn.model import InductionModel, decode_tokens, encode_letters, load_trained
from mhattn.learn.task import accuracy, determined_positions, induction_batch, repeated_positions


@pytest.fixture(scope="module")
def trained():
    return load_trained()


@pytest.fixture(scope="module")
def batch():
    """512 fresh sequences, from a seed the training never saw."""
    return induction_batch(np.random.default_rng(2024), 512, at_start=True)[:2]


# --- the checkpoint file ---------------------------------------------------------------------


def test_checkpoint_has_the_documented_keys_shapes_and_layout():
    path = resources.files("mhattn") / "data" / "induction.npz"
    with resources.as_file(path) as file, np.load(file) as data:
        arrays = {name: data[name] for name in data.files}
    vocab, d_model = arrays["embed"].shape
    max_len = arrays["pos"].shape[0]
    num_heads = int(arrays["num_heads"])
    assert arrays["num_heads"].shape == ()
    assert vocab >= 20 and max_len >= 24 and d_model <= 128 and d_model % num_heads == 0
    assert arrays["pos"].shape == (max_len, d_model)
    assert arrays["unembed"].shape == (d_model, vocab)
    for layer in (0, 1):
        assert arrays[f"layer{layer}.W_qkv"].shape == (d_model, 3 * d_model)
        assert arrays[f"layer{layer}.W_o"].shape == (d_model, d_model)
    assert "layer2.W_qkv" not in arrays
    for name in ("step", "loss", "accuracy"):  # the training curve, for the notebook's figure
        assert arrays[f"history.{name}"].ndim == 1 and len(arrays[f"history.{name}"]) == len(arrays["history.step"])
    assert arrays["machine"].dtype.kind == "U" and arrays["machine"].shape == ()  # where it was trained, in words
    assert all(np.isfinite(array).all() for name, array in arrays.items() if name != "machine")


def test_checkpoint_layout_is_the_modules_queries_keys_values(trained):
    """Columns [0, d) make queries, [d, 2d) keys, [2d, 3d): recomputing head h by hand gives the module's weights."""
    tokens = induction_batch(np.random.default_rng(0), 2)[0]
    layer = trained.layers[0]
    x = trained.embed[tokens] + trained.pos  # (2, max_len, d_model)
    _, weights = layer(x, causal_mask(trained.max_len))
    d, d_k = layer.d_model, layer.d_k
    for h in range(layer.num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        q = x @ layer.W_qkv[:, :d][:, cols]  # (2, seq, d_k)
        k = x @ layer.W_qkv[:, d : 2 * d][:, cols]
        scores = np.where(causal_mask(trained.max_len), q @ k.transpose(0, 2, 1) / np.sqrt(d_k), -np.inf)
        np.testing.assert_allclose(weights[:, h], softmax(scores), rtol=0, atol=1e-12)


def test_load_trained_gives_independent_copies():
    first, second = load_trained(), load_trained()
    first.layers[0].W_o[...] = 0.0
    first.embed[...] = 0.0
    assert np.abs(second.layers[0].W_o).max() > 0 and np.abs(second.embed).max() > 0


def test_load_trained_rejects_other_layer_counts():
    with pytest.raises(ValueError, match="num_layers must be 1 or 2"):
        load_trained(3)


def test_save_and_load_round_trip(tmp_path):
    model = InductionModel(2, seed=3)
    model.history = {"step": np.array([1, 2]), "loss": np.array([3.0, 2.0]), "accuracy": np.array([0.1, 0.2])}
    model.save(tmp_path / "m.npz", seed=3)
    again = InductionModel.load(tmp_path / "m.npz")
    for name, array in model.parameters().items():
        assert np.array_equal(again.parameters()[name], array)
    assert np.array_equal(again.history["loss"], model.history["loss"])


# --- the shipped checkpoint at work (the heads' scores: tests/test_circuits.py) ---------------------


def test_accuracy_on_the_repeated_half_is_at_least_0_9(trained, batch):
    tokens, n = batch
    assert accuracy(trained.forward(tokens)[0], tokens, n) >= 0.9


def test_zeroing_layer0_costs_at_least_0_4(trained, batch):
    tokens, n = batch
    full = accuracy(trained.forward(tokens)[0], tokens, n)
    assert full - accuracy(trained.forward(tokens, ablate=[(0, None)])[0], tokens, n) >= 0.4


def test_one_layer_trained_the_same_way_stays_far_below(batch):
    tokens, n = batch
    assert accuracy(load_trained(1).forward(tokens)[0], tokens, n) < 0.7


def test_without_positions_the_induction_circuit_breaks(trained):
    """The previous-token head finds t - 1 by position: without positions it cannot, and induction fails."""
    tokens, n, *_ = induction_batch(np.random.default_rng(5), 256, at_start=True)
    logits, _ = trained.forward(tokens, use_positions=False)
    assert accuracy(logits, tokens, n) < 0.5


def test_typed_letters_light_up_the_induction_head(trained):
    """The explorer's example: on the repeat of "a b c d x", a layer-1 head looks right after the earlier copy.

    The repeat starts at position 0 here; the model copies at other offsets too
    (tests/test_induction_model.py measures every offset).
    """
    tokens = encode_letters("a b c d x a b c")
    logits, weights = trained.forward(tokens)
    assert decode_tokens(logits.argmax(-1)[5:]) == "b c d"  # the second a, b, c predict what followed them
    on_target = weights[1][:, [5, 6, 7], [1, 2, 3]]  # (num_heads, 3): the second a, b, c -> keys 1, 2, 3
    assert on_target.mean(axis=1).max() > 0.5


def test_induction_batch_repeats_the_first_n_tokens():
    tokens, n, *_ = induction_batch(np.random.default_rng(7), 200, vocab=32, max_len=32, at_start=True)
    assert tokens.shape == (200, 32) and tokens.min() >= 0 and tokens.max() < 32
    assert n.min() == 4 and n.max() == 16  # both ends of [max_len // 8, max_len // 2] occur in 200 draws
    for b in range(200):
        assert np.array_equal(tokens[b, n[b] : 2 * n[b]], tokens[b, : n[b]])
    scored = repeated_positions(n)
    assert np.array_equal(scored.sum(axis=1), n - 1)


def test_accuracy_counts_only_the_determined_positions():
    """Positions of the second copy whose next token the sequence determines (tests/test_induction_model.py)."""
    tokens, n, *_ = induction_batch(np.random.default_rng(8), 4, at_start=True)
    logits = np.zeros(tokens.shape + (32,))
    logits[np.arange(4)[:, None], np.arange(31), tokens[:, 1:]] = 1.0  # perfect everywhere
    assert accuracy(logits, tokens, n) == 1.0
    scored = determined_positions(tokens, n)
    logits[scored] = 0.0
    logits[..., 31] = 0.5  # wrong on the scored positions (unless the token is 31)
    wrong = tokens[:, 1:][scored[:, :-1]] != 31
    assert accuracy(logits, tokens, n) == pytest.approx(1 - wrong.mean())


# --- the forward pass --------------------------------------------------------------------------------


def naive_forward(model, tokens, ablated=()):
    """The model for one sequence, with every head as its own loop: an independent oracle."""
    seq = len(tokens)
    h = model.embed[tokens] + model.pos[:seq]  # (seq, d_model)
    for i, layer in enumerate(model.layers):
        d, d_k = layer.d_model, layer.d_k
        out = np.zeros_like(h)
        for head in range(layer.num_heads):
            if (i, head) in ablated or (i, None) in ablated:
                continue
            cols = np.arange(head * d_k, (head + 1) * d_k)
            q, k, v = (h @ layer.W_qkv[:, part * d + cols] for part in range(3))
            for t in range(seq):
                scores = np.array([q[t] @ k[j] / np.sqrt(d_k) for j in range(t + 1)])
                w = np.exp(scores - scores.max())
                w /= w.sum()
                out[t] += (w @ v[: t + 1]) @ layer.W_o[cols]
        h = h + out
    return h @ model.unembed


@pytest.mark.parametrize("ablate", [(), ((0, None),), ((1, 2),), ((0, 1), (1, 0), (1, 3))])
def test_forward_and_ablation_equal_a_loop_over_heads(trained, ablate):
    tokens = induction_batch(np.random.default_rng(9), 1)[0][0][:20]
    logits, weights = trained.forward(tokens, ablate=ablate)
    assert logits.shape == (20, trained.vocab) and [w.shape for w in weights] == [(4, 20, 20)] * 2
    np.testing.assert_allclose(logits, naive_forward(trained, tokens, set(ablate)), rtol=0, atol=1e-10)


def test_batched_forward_equals_one_sequence_at_a_time(trained):
    tokens = induction_batch(np.random.default_rng(10), 3)[0]
    logits, weights = trained.forward(tokens)
    assert logits.shape == (3, 32, 32) and weights[0].shape == (3, 4, 32, 32)
    for b in range(3):
        single, single_weights = trained.forward(tokens[b])
        np.testing.assert_allclose(logits[b], single, rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights[1][b], single_weights[1], rtol=0, atol=1e-15)
    assert np.array_equal(trained.predict(tokens), logits.argmax(-1))


def test_ablation_leaves_the_model_untouched(trained):
    before = {name: array.copy() for name, array in trained.parameters().items()}
    trained.forward(np.arange(10), ablate=[(0, None), (1, 2)])
    assert all(np.array_equal(array, before[name]) for name, array in trained.parameters().items())


def test_layers_are_the_chapters_module(trained):
    assert all(type(layer) is MultiHeadAttention for layer in trained.layers)
    assert trained.vocab == 32 and trained.max_len == 32 and trained.d_model == 64 and trained.num_heads == 4


def test_without_positions_and_mask_attention_is_permutation_equivariant(trained):
    """Shuffle the tokens, and the outputs shuffle the same way: attention alone cannot see order."""
    tokens = encode_letters("a b c d x a b c")
    perm = np.random.default_rng(11).permutation(len(tokens))
    layer = trained.layers[0]
    x = trained.embed[tokens][None]  # (1, 8, d_model): no positions
    out, _ = layer(x)
    out_shuffled, _ = layer(x[:, perm])
    np.testing.assert_allclose(out_shuffled, out[:, perm], rtol=0, atol=1e-12)
    # with positions added after the shuffle, the shuffled sequence is a different input
    shuffled_with_positions = x[:, perm] + trained.pos[:8]
    assert not np.allclose(layer(shuffled_with_positions)[0], layer(x + trained.pos[:8])[0][:, perm], atol=1e-3)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (np.array([1.0, 2.0]), TypeError, "integer ids"),
        (np.zeros((2, 2, 2), dtype=int), ValueError, "shape"),
        (np.zeros(33, dtype=int), ValueError, "max_len = 32"),
        (np.array([0, 32]), ValueError, r"ids in \[0, 32\)"),
        (np.array([-1, 3]), ValueError, r"ids in \[0, 32\)"),
    ],
)
def test_forward_rejects_bad_tokens(trained, bad, error, message):
    with pytest.raises(error, match=message):
        trained.forward(bad)


def test_ablate_rejects_layers_and_heads_that_do_not_exist(trained):
    with pytest.raises(ValueError, match="layer must be in"):
        trained.forward(np.arange(4), ablate=[(2, None)])
    with pytest.raises(ValueError, match="head must be None or in"):
        trained.forward(np.arange(4), ablate=[(0, 4)])


# --- letters -----------------------------------------------------------------------------------------


def test_encode_letters_with_and_without_spaces():
    assert encode_letters("a b c d x a b c").tolist() == [0, 1, 2, 3, 23, 0, 1, 2]
    assert encode_letters("abcdXabc").tolist() == [0, 1, 2, 3, 23, 0, 1, 2]
    assert encode_letters("").tolist() == []
    assert decode_tokens([0, 1, 25, 27]) == "a b z <27>"
    assert decode_tokens(encode_letters("hello")) == "h e l l o"


def test_encode_letters_names_what_it_cannot_encode():
    with pytest.raises(ValueError, match=r"\['1', '!'\]|\['!', '1'\]"):
        encode_letters("a 1 b!")
    with pytest.raises(TypeError, match="string of letters"):
        encode_letters([0, 1])
