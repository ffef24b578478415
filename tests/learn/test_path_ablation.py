"""Path ablation, the composition ceiling and accuracy over offset and gap, on models whose answer is known.

- :func:`path_ablation` is checked against the model's own layers: with every projection
  reading the changed stream, layer 1's output must be ``model.layers[1]`` applied to that
  stream, added to the *whole* stream before the unembedding. The two compute the same float64
  sums in another order (~1e-14 of the logits' size); 1e-12 leaves room for that only.
- Replacements that change nothing must change nothing: no head listed, or a batch of one
  sequence repeated (its mean and its resample are its own output).
- :func:`composition_ceiling` is reached by matrices built with aligned singular vectors, and
  never exceeded by random ones (von Neumann's trace inequality).
- :func:`offset_gap_accuracy` scores a model that reads the answer off the sequence (accuracy
  1 wherever a repeat fits, NaN elsewhere).
"""

import numpy as np
import pytest

from mhattn.core.masks import causal_mask
from mhattn.learn import offset_gap_accuracy as offset_gap_door
from mhattn.learn import path_ablation as path_ablation_door
from mhattn.learn.experiments import forward_without_key_path, offset_gap_accuracy
from mhattn.learn.model import InductionModel
from mhattn.learn.path_ablation import path_ablation
from mhattn.learn.task import induction_batch
from mhattn.learn.weight_circuits import composition_ceiling, composition_score


@pytest.fixture(scope="module")
def small():
    model = InductionModel(2, vocab=12, max_len=10, d_model=16, num_heads=4, seed=3)
    tokens = induction_batch(np.random.default_rng(4), 6, vocab=12, max_len=10)[0]  # (6, 10)
    return model, tokens


def tolerance(logits):
    return 1e-12 * np.abs(logits).max()


@pytest.mark.parametrize("method", ["zero", "mean", "resample"])
def test_with_no_head_listed_every_method_gives_the_forward(small, method):
    model, tokens = small
    expected = model.forward(tokens)[0]
    got = path_ablation(model, tokens, [], reads="QKV", method=method)
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance(expected))


@pytest.mark.parametrize("method", ["zero", "mean", "resample"])
def test_all_three_projections_read_the_changed_stream_and_the_unembedding_the_whole_one(small, method):
    model, tokens = small
    heads = [1, 3]
    mask = causal_mask(tokens.shape[1])
    h0 = model.embed[tokens] + model.pos[: tokens.shape[1]]
    per_head = []  # what each listed head writes, from a model with every other layer-0 head silenced
    for h in heads:
        others = [(0, k) for k in range(4) if k != h]
        per_head.append(model.ablated_layers(others)[0](h0, mask)[0])
    written = sum(per_head)
    replacement = {"zero": 0 * written, "mean": written.mean(axis=0, keepdims=True) + 0 * written,
                   "resample": written[[5, 0, 1, 2, 3, 4]]}[method]  # sequence b gets sequence b - 1's
    whole = h0 + model.layers[0](h0, mask)[0]
    changed = whole - written + replacement
    expected = (whole + model.layers[1](changed, mask)[0]) @ model.unembed
    got = path_ablation(model, tokens, heads, reads="QKV", method=method)
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance(expected))


def test_zero_on_the_keys_is_forward_without_key_path(small):
    model, tokens = small
    expected = forward_without_key_path(model, tokens, [0, 2])
    np.testing.assert_array_equal(path_ablation(model, tokens, [0, 2], reads="K", method="zero"), expected)


@pytest.mark.parametrize("reads", ["Q", "K", "V"])
def test_mean_and_resample_of_one_sequence_repeated_change_nothing_and_zero_does(small, reads):
    model, tokens = small
    same = np.repeat(tokens[:1], 4, axis=0)  # (4, 10): one sequence four times
    expected = model.forward(same)[0]
    for method in ("mean", "resample"):
        got = path_ablation(model, same, [0, 1, 2, 3], reads=reads, method=method)
        np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance(expected))
    assert np.abs(path_ablation(model, same, [0, 1, 2, 3], reads=reads, method="zero") - expected).max() > 1e-3


def test_only_the_named_projection_changes(small):
    """Cutting from the keys alone differs from cutting from the queries alone, and from cutting from both."""
    model, tokens = small
    k, q, qk = (path_ablation(model, tokens, [2], reads=r, method="zero") for r in ("K", "Q", "QK"))
    assert min(np.abs(k - q).max(), np.abs(k - qk).max(), np.abs(q - qk).max()) > 1e-3


@pytest.mark.parametrize(("arguments", "named"), [
    ({"reads": "X"}, "reads"), ({"reads": ""}, "reads"), ({"reads": 1}, "reads"),
    ({"method": "shuffle"}, "method"), ({"method": None}, "method"),
])
def test_the_door_refuses_bad_reads_and_methods_by_name(small, arguments, named):
    model, tokens = small
    with pytest.raises((TypeError, ValueError), match=named):
        path_ablation_door(model, tokens, [0], **arguments)


def test_the_door_refuses_resampling_a_batch_of_one(small):
    model, tokens = small
    with pytest.raises(ValueError, match="tokens"):
        path_ablation_door(model, tokens[:1], [0], method="resample")
    assert path_ablation_door(model, tokens[:1], [0], method="mean").shape == (1, 10, 12)


def test_the_ceiling_is_reached_with_aligned_singular_vectors_and_never_exceeded():
    rng = np.random.default_rng(0)
    U, V, W = (np.linalg.qr(rng.standard_normal((8, 8)))[0] for _ in range(3))
    a, b = np.array([5.0, 3, 2, 1, 0, 0, 0, 0]), np.array([4.0, 4, 1, 0.5, 0.5, 0.2, 0, 0])
    left, right = U @ np.diag(a) @ V.T, V @ np.diag(b) @ W.T  # what left writes most, right reads most
    expected = np.sqrt(np.sum(a**2 * b**2)) / (np.linalg.norm(a) * np.linalg.norm(b))
    assert composition_ceiling(left, right) == pytest.approx(expected, rel=1e-12)
    assert composition_score(left, right) == pytest.approx(expected, rel=1e-12)
    for _ in range(50):
        x, y = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
        assert composition_score(x, y) <= composition_ceiling(x, y) + 1e-12


def test_a_projector_of_rank_r_onto_what_a_map_writes_scores_one_over_root_r():
    rng = np.random.default_rng(1)
    writes = rng.standard_normal((12, 4)) @ rng.standard_normal((4, 12))  # rank 4
    projector = np.linalg.pinv(writes) @ writes
    assert composition_score(writes, projector) == pytest.approx(0.5, abs=1e-12)


class Reader:
    """A model that reads the next token off the sequence: right wherever it is scored."""

    vocab, max_len = 12, 10

    def forward(self, tokens):
        logits = np.zeros(tokens.shape + (self.vocab,))
        logits[:, :-1] = np.eye(self.vocab)[tokens[:, 1:]]
        return logits, []


def test_offset_gap_accuracy_scores_every_cell_that_fits_and_leaves_the_rest_nan():
    table = offset_gap_accuracy(Reader(), 3, per_cell=4, seed=0)
    room = 10 - 2 * 3
    fits = np.add.outer(np.arange(room + 1), np.arange(room + 1)) <= room
    assert table.shape == (room + 1, room + 1)
    assert np.all(table[fits] == 1.0) and np.isnan(table[~fits]).all()


def test_offset_gap_accuracy_refuses_a_block_that_does_not_fit_twice():
    model = InductionModel(2, vocab=12, max_len=10, d_model=16, num_heads=4, seed=3)
    with pytest.raises(ValueError, match="n must fit"):
        offset_gap_door(model, 6)
