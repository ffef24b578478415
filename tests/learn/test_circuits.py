"""The head measurements, plain, against loops written differently and hand-built heads.

Every score is an average of products of float64 numbers of order 1 over at most a few
thousand terms, so a correct vectorised version agrees with its loop to ~1e-13; 1e-12 leaves
room for summation order and nothing else.
"""

import math

import numpy as np
import pytest

from mhattn import softmax
from mhattn.learn.attention_patterns import (
    prefix_matching_score,
    previous_token_score,
    repeated_random_tokens,
    segments,
)
from mhattn.learn.in_context import icl_tokens, in_context_learning_score, token_losses
from mhattn.learn.model import InductionModel
from mhattn.learn.weight_circuits import (
    composition_score,
    copying_score,
    head_weights,
    k_composition_scores,
    ov_circuit,
    qk_circuit,
)

TOL = 1e-12


def random_weights(rng, batch, heads, seq):
    scores = rng.standard_normal((batch, heads, seq, seq)) * 2
    scores[..., ~np.tri(seq, dtype=bool)] = -np.inf  # causal, as the model's
    return softmax(scores)


# --- previous-token score ----------------------------------------------------------------------


def test_previous_token_score_equals_a_loop_over_queries():
    rng = np.random.default_rng(0)
    weights = random_weights(rng, 3, 2, 9)
    queries = rng.random((3, 9)) < 0.5
    queries[0, 1] = True
    for mask in (None, queries):
        expected = []
        for h in range(2):
            terms = [weights[b, h, t, t - 1] for b in range(3) for t in range(1, 9) if mask is None or mask[b, t]]
            expected.append(sum(terms) / len(terms))
        np.testing.assert_allclose(previous_token_score(weights, mask), expected, rtol=TOL)


def test_a_pure_previous_token_head_scores_1_and_a_uniform_head_the_harmonic_mean():
    seq = 10
    pure = np.zeros((1, 2, seq, seq))
    pure[0, 0, 0, 0] = 1.0
    pure[0, 0, np.arange(1, seq), np.arange(seq - 1)] = 1.0  # head 0: one step back
    pure[0, 1] = np.tri(seq) / np.arange(1, seq + 1)[:, None]  # head 1: uniform over the past
    score = previous_token_score(pure)
    assert score[0] == 1.0
    assert score[1] == pytest.approx(np.mean([1 / (t + 1) for t in range(1, seq)]), rel=TOL)


def test_segments_split_every_sequence_into_three_parts():
    n = np.array([3, 5])
    parts = segments(n, 12)
    for b, length in enumerate(n):
        for t in range(12):
            names = [name for name, mask in parts.items() if mask[b, t]]
            assert names == ["first copy" if t < length else "second copy" if t < 2 * length else "rest"]


# --- prefix matching ---------------------------------------------------------------------------


def prefix_matching_loop(weights, tokens):
    """Olsson et al.'s definition, spelled out: for each query, find the earlier occurrences."""
    batch, heads, seq, _ = weights.shape
    scores = []
    for h in range(heads):
        per_query = []
        for b in range(batch):
            for t in range(seq):
                keys = {s + 1 for s in range(t) if tokens[b, s] == tokens[b, t]}  # after each earlier occurrence
                if keys:
                    per_query.append(sum(weights[b, h, t, j] for j in keys))
        scores.append(sum(per_query) / len(per_query))
    return np.array(scores)


def test_prefix_matching_equals_the_loop_on_tokens_with_many_repeats():
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 4, size=(3, 11))  # a vocabulary of 4: most tokens occurred before, several times
    weights = random_weights(rng, 3, 3, 11)
    np.testing.assert_allclose(prefix_matching_score(weights, tokens), prefix_matching_loop(weights, tokens), rtol=TOL)


def test_an_ideal_induction_head_scores_1_and_a_previous_token_head_0_on_repeated_tokens():
    tokens = repeated_random_tokens(np.random.default_rng(2), 4, 8, 32)  # (4, 16), first half all different
    seq, half = 16, 8
    weights = np.zeros((4, 2, seq, seq))
    weights[:, :, np.arange(seq), np.arange(seq)] = 1.0  # the first half attends to itself
    t = np.arange(half, seq)
    weights[:, 0, t] = 0.0
    weights[:, 0, t, t - half + 1] = 1.0  # head 0: the token after the earlier copy
    weights[:, 1, t] = 0.0
    weights[:, 1, t, t - 1] = 1.0  # head 1: one step back
    np.testing.assert_array_equal(prefix_matching_score(weights, tokens), [1.0, 0.0])


def test_repeated_random_tokens_repeat_a_first_half_without_repeats():
    tokens = repeated_random_tokens(np.random.default_rng(3), 50, 16, 32)
    assert tokens.shape == (50, 32)
    assert np.array_equal(tokens[:, :16], tokens[:, 16:])
    assert all(len(set(row[:16].tolist())) == 16 for row in tokens)


# --- the OV and QK circuits ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_layer():
    return InductionModel(1, vocab=10, max_len=6, d_model=8, num_heads=2, seed=4)


def test_ov_circuit_is_what_a_head_adds_to_the_logits_when_it_attends_to_one_token(one_layer):
    """A one-token sequence attends to itself with weight 1: the head's logit change is the OV row."""
    for head in range(2):
        for token in range(10):
            logits, _ = one_layer.forward(np.array([token]), ablate=[(0, 1 - head)], use_positions=False)
            direct = one_layer.embed[token] @ one_layer.unembed  # the residual path
            np.testing.assert_allclose(logits[0] - direct, ov_circuit(one_layer, 0, head)[token], rtol=0, atol=1e-12)


def test_qk_circuit_gives_the_modules_attention_scores(one_layer):
    """For the sequence [b, a], log(w[a -> b] / w[a -> a]) = qk[a, b] - qk[a, a]."""
    for head in range(2):
        qk = qk_circuit(one_layer, 0, head)
        for a, b in [(0, 1), (3, 7), (9, 2)]:
            _, weights = one_layer.forward(np.array([b, a]), use_positions=False)
            w = weights[0][head, 1]  # the query at position 1 (token a)
            assert math.log(w[0] / w[1]) == pytest.approx(qk[a, b] - qk[a, a], abs=1e-12)


def test_qk_circuit_through_an_earlier_head_reads_what_that_head_wrote():
    model = InductionModel(2, vocab=6, max_len=4, d_model=8, num_heads=2, seed=5)
    W_q, W_k, _, _ = head_weights(model, 1, 0)
    _, _, W_v, W_o = head_weights(model, 0, 1)
    keys = model.embed @ W_v @ W_o  # (vocab, d_model)
    expected = np.array([[(model.embed[a] @ W_q) @ (keys[b] @ W_k) for b in range(6)] for a in range(6)]) / 2
    np.testing.assert_allclose(qk_circuit(model, 1, 0, key_through=(0, 1)), expected, rtol=0, atol=1e-12)


def test_copying_score_of_hand_built_circuits():
    assert copying_score(np.eye(5)) == pytest.approx(1.0)
    assert copying_score(-2 * np.eye(5)) == pytest.approx(-1.0)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues +i and -i: no copying, no anti-copying
    assert copying_score(rotation) == pytest.approx(0.0, abs=1e-15)
    assert copying_score(np.diag([2.0, -1.0, 0.0])) == pytest.approx(1 / 3)
    assert np.isnan(copying_score(np.zeros((3, 3))))  # a head that writes nothing copies nothing


def test_copying_score_equals_the_eigenvalues_of_the_small_cyclic_product(one_layer):
    """AB and BA have the same non-zero eigenvalues: W_V W_O W_U W_E is d_k x d_k, a different matrix."""
    for head in range(2):
        _, _, W_v, W_o = head_weights(one_layer, 0, head)
        small = W_v.T @ one_layer.embed.T @ (one_layer.unembed.T @ W_o.T)  # (d_k, d_k), transposed cycle
        eig = np.linalg.eigvals(small)
        assert copying_score(ov_circuit(one_layer, 0, head)) == pytest.approx(eig.sum().real / np.abs(eig).sum(),
                                                                              rel=1e-9)


# --- composition --------------------------------------------------------------------------------


def test_composition_score_of_hand_built_matrices():
    u, v, w = np.eye(4)[0], np.eye(4)[1], np.eye(4)[2]
    assert composition_score(np.outer(u, v), np.outer(v, w)) == pytest.approx(1.0)  # all of one read by the other
    assert composition_score(np.outer(u, v), np.outer(w, u)) == 0.0  # written to v, read from w
    projection = np.diag([1.0, 1.0, 1.0, 0.0])
    assert composition_score(projection, projection) == pytest.approx(1 / np.sqrt(3))


def test_k_composition_equals_elhages_column_vector_formula():
    """||W_QK^{h1} W_OV^{h0}||_F / (||W_QK|| ||W_OV||) with W_QK = W_Q^T W_K, W_OV = W_O W_V acting on columns."""
    model = InductionModel(2, vocab=6, max_len=4, d_model=12, num_heads=3, seed=6)
    table = k_composition_scores(model)
    for h0 in range(3):
        for h1 in range(3):
            q_cols, k_cols, _, _ = head_weights(model, 1, h1)
            _, _, v_cols, o_rows = head_weights(model, 0, h0)
            W_QK = q_cols @ k_cols.T  # column convention: x_q^T W_QK x_k, with W_Q = q_cols^T
            W_OV = o_rows.T @ v_cols.T  # column convention: W_O W_V x
            expected = np.linalg.norm(W_QK @ W_OV) / (np.linalg.norm(W_QK) * np.linalg.norm(W_OV))
            assert table[h0, h1] == pytest.approx(expected, rel=1e-12)


def test_k_composition_finds_the_head_whose_output_the_keys_read():
    """Layer-1 head 0's keys read exactly the subspace layer-0 head 1 writes: that pair scores highest."""
    model = InductionModel(2, vocab=6, max_len=4, d_model=8, num_heads=2, seed=7)
    d = 8
    _, _, _, W_o = head_weights(model, 0, 1)  # (d_k, d_model): head 1 writes into the row space of W_o
    basis = np.linalg.qr(W_o.T, mode="complete")[0]  # (d_model, d_model): the first d_k columns span it
    model.layers[0].W_o[:4] = np.random.default_rng(0).standard_normal((4, 4)) @ basis[:, 4:].T  # head 0: the rest
    model.layers[1].W_qkv[:, d : d + 4] = basis[:, :4]  # layer-1 head 0's keys read only head 1's subspace
    table = k_composition_scores(model)
    assert table[1, 0] > 0.3 and table[0, 0] < 1e-12


# --- in-context learning score -----------------------------------------------------------------


def test_token_losses_equal_a_loop_of_log_sum_exp():
    rng = np.random.default_rng(8)
    logits = rng.standard_normal((2, 5, 7)) * 3
    tokens = rng.integers(0, 7, size=(2, 5))
    losses = token_losses(logits, tokens)
    for b in range(2):
        for t in range(4):
            expected = math.log(sum(math.exp(z) for z in logits[b, t])) - logits[b, t, tokens[b, t + 1]]
            assert losses[b, t] == pytest.approx(expected, rel=1e-13)


def test_icl_score_of_a_model_that_only_knows_the_late_token_is_minus_log_vocab():
    vocab, seq = 8, 6
    tokens = np.tile(np.arange(seq), (3, 1))
    logits = np.zeros((3, seq, vocab))  # uniform everywhere: loss log(vocab)
    logits[:, 4, tokens[0, 5]] = 1e3  # certain of token 5
    assert in_context_learning_score(logits, tokens, early=2, late=5) == pytest.approx(-math.log(vocab), rel=1e-12)


def test_icl_tokens_scale_olssons_50_and_500_of_512():
    assert icl_tokens(512) == (50, 500)
    assert icl_tokens(32) == (3, 31)
