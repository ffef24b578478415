"""Every number and comparison that notebook 09's prose states, recomputed from the shipped checkpoints.

Each test names the notebook section whose prose it checks and uses the notebook's own seeds,
so the prose and the outputs it describes cannot drift apart. Where the prose quotes an
ablation, the test names its method (zero, mean or resample) and the baseline it is compared
to. Where it can, a test recomputes the number with plain loops instead of the helper the
notebook calls. The model targets themselves (offsets, gaps, positions, prefix matching,
copying, ablations) are in test_induction_model.py.
"""

from importlib import resources

import numpy as np
import pytest

from mhattn import softmax
from mhattn.learn.circuits import (
    composition_baseline,
    composition_ceiling,
    composition_ceilings,
    composition_score,
    composition_scores,
    copying_score,
    measure,
    offset_accuracy,
    offset_gap_accuracy,
    ov_circuit,
    path_ablation,
    prefix_matching_by_offset,
    previous_token_profile,
    previous_token_score,
    qk_circuit,
    segments,
)
from mhattn.learn.generate import generate
from mhattn.learn.letters import decode_tokens, encode_letters
from mhattn.learn.shipped import load_shortcut, load_trained
from mhattn.learn.task import accuracy, induction_batch, layout
from mhattn.learn.train import initial_model
from mhattn.learn.weight_circuits import head_weights

CHANCE = 1 / 32  # one token of 32, guessed at random


@pytest.fixture(scope="module")
def model():
    return load_trained()


@pytest.fixture(scope="module")
def shortcut():
    return load_shortcut()


@pytest.fixture(scope="module")
def result(model):
    return measure(model)  # the notebook's measure(model): 512 sequences, seed 2024


@pytest.fixture(scope="module")
def batch():
    return induction_batch(np.random.default_rng(2024), 512)  # the set-up's batch, the one measure() uses


def cut(model, batch, heads, reads, method):
    """Accuracy with layer-0 ``heads`` replaced (``method``) in what layer 1's ``reads`` see."""
    tokens, n, offset, gap = batch
    return accuracy(path_ablation(model, tokens, heads, reads=reads, method=method), tokens, n, offset, gap)


def cell(m, n, offset, gap, per_cell=512, seed=11):
    """Accuracy of ``m`` on ``per_cell`` sequences with one block length, offset and gap."""
    rng = np.random.default_rng(seed)
    n_, o_, g_ = (np.full(per_cell, v) for v in (n, offset, gap))
    tokens = layout(rng, n_, o_, g_, vocab=32, max_len=32)
    return accuracy(m.forward(tokens)[0], tokens, n_, o_, g_)


def measure_accuracy(model, batch):
    tokens, n, offset, gap = batch
    return accuracy(model.forward(tokens)[0], tokens, n, offset, gap)


# --- set-up and section 1: the circuit -----------------------------------------------------------


def test_1_the_model_copies_98_percent_and_the_diagram_names_the_measured_heads(result):
    assert round(result["accuracy"], 2) == 0.98  # "98 %"
    assert result["previous_token_heads"] == [3] and result["induction_heads"] == [0, 1, 2]  # the diagram's heads


# --- section 2: where the heads look -------------------------------------------------------------


def test_2_before_training_about_even_weights_after_it_one_step_back_and_on_the_target(model, result, batch):
    """Loops over sequences and queries, independent of the notebook's vectorised helpers."""
    tokens, n, offset, gap = batch
    for m, trained in ((initial_model(2, seed=0), False), (model, True)):
        weights = m.forward(tokens[:64])[1]
        # queries t >= 8, which see at least 9 keys: even weights give at most 1/9 there
        one_back = np.array([[weights[0][b, :, t, t - 1] for t in range(8, 32)] for b in range(64)])  # (64, 24, 4)
        target = []
        for b in range(64):
            start = offset[b] + n[b] + gap[b]
            for t in range(start, start + n[b] - 1):
                target.append(weights[1][b, :, t, t - n[b] - gap[b] + 1])
        target = np.array(target)  # (queries, 4)
        if trained:
            assert np.flatnonzero(one_back.mean(axis=(0, 1)) > 0.5).tolist() == [3]  # "one previous-token head"
            assert np.flatnonzero(target.mean(axis=0) > 0.5).tolist() == [0, 1, 2]  # "three heads ... on the target"
        else:
            assert one_back.mean(axis=(0, 1)).max() <= 0.07  # "at most 0.07 on key t - 1"
            assert target.mean(axis=0).max() < 0.1


# --- section 3: measuring the heads --------------------------------------------------------------


def test_3_the_previous_token_heads_part_scores_are_predicted_by_position_alone(model, result, batch):
    tokens, n, offset, gap = batch
    head = result["previous_token_heads"][0]
    profile = previous_token_profile(model, num_sequences=1024, seed=13)[head]  # (32,), other sequences
    weights = model.forward(tokens)[1][0]
    for name, queries in segments(n, 32, offset, gap).items():
        measured = previous_token_score(weights, queries)[head]
        by_position = np.mean([profile[t] for b, t in zip(*np.nonzero(queries), strict=True) if t >= 1])
        assert abs(measured - by_position) < 0.005, name  # "to within a few thousandths"
    parts = result["previous_token_by_segment"][0]
    assert min(parts[name][head] for name in parts) > 0.9


def test_3_three_induction_heads_match_at_every_offset_and_copy(model, result):
    assert result["induction_heads"] == [0, 1, 2]
    assert prefix_matching_by_offset(model, half_len=8, num_sequences=256, seed=14).max(axis=1).min() > 0.5
    copying = result["copying"][1]
    assert copying[[0, 1, 2]].min() > 0.95 and copying[3] < -0.9  # "near 1"; "near -1"
    assert result["copying"][0][3] < -0.9  # the previous-token head "near -1 too"


def test_3_the_ov_and_qk_diagonals_win_for_most_tokens(model, result):
    best = int(np.argmax(result["prefix_matching"][1]))
    ov, qk = ov_circuit(model, 1, best), qk_circuit(model, 1, best, key_through=(0, 3))
    assert copying_score(ov) > 0.95
    for matrix in (ov, qk):
        assert np.mean(matrix.argmax(axis=1) == np.arange(32)) > 0.5  # "for most tokens"


# --- section 4: composition on its scale, and the path ablation ---------------------------------


def test_4_chance_the_exact_reader_and_the_ceiling(model):
    mean, sd = composition_baseline(64, 16, draws=2000, seed=0)
    assert round(mean, 3) == 0.125 and sd == pytest.approx(0.007, abs=0.001)  # "0.125"
    _, _, W_v, W_o = head_weights(model, 0, 3)
    writes = W_v @ W_o
    projector = np.linalg.pinv(writes) @ writes  # reads exactly the 16 directions the head writes
    assert composition_score(writes, projector) == pytest.approx(0.25, abs=1e-9)  # "1 / sqrt(16) = 0.25"
    assert composition_ceiling(writes, projector) == pytest.approx(0.25, abs=1e-9)  # a projector reaches its ceiling
    ceilings = composition_ceilings(model, "K")[3, [0, 1, 2]]
    assert 0.29 <= ceilings.min() and ceilings.max() < 0.305  # "the ceiling of these spectra (0.30)"


def test_4_k_composition_far_from_chance_and_two_thirds_of_the_ceiling_q_and_v_at_or_below_chance(model):
    mean, sd = composition_baseline(64, 16, draws=2000, seed=0)
    K, Q, V = (composition_scores(model, kind) for kind in "KQV")
    k = K[3, [0, 1, 2]]
    assert 0.175 <= k.min() and k.max() < 0.205  # "0.18-0.20"
    assert round((k.min() - mean) / sd) == 9 and round((k.max() - mean) / sd) == 11  # "9-11 standard deviations"
    share = k / composition_ceilings(model, "K")[3, [0, 1, 2]]
    assert 0.55 < share.min() and share.max() < 0.7  # "about two thirds of the ceiling"
    assert Q[3, [0, 1, 2]].max() < mean + sd and V[3, [0, 1, 2]].max() < mean + sd  # "at or below chance"
    q_others = Q[np.ix_([1, 2], [0, 1, 2])]
    assert 0.165 <= q_others.min() and q_others.max() < 0.205  # heads 1 and 2: "0.17-0.20", "as strongly"


def test_4_the_key_path_ablation_by_each_method_against_the_whole_model(model, result, batch):
    """Baseline: the model with nothing cut (0.98). Resample is the method the prose relies on."""
    assert round(result["accuracy"], 2) == 0.98
    assert round(cut(model, batch, [3], "K", "resample"), 2) == 0.36
    assert round(cut(model, batch, [3], "K", "mean"), 2) == 0.71
    assert round(cut(model, batch, [3], "K", "zero"), 2) == 0.58


def test_4_the_other_paths_cost_little_and_the_previous_token_head_in_the_queries_some(model, batch):
    """Controls, each against the whole model's 0.98: heads 1, 2 in the queries; head 3 in the values and queries."""
    assert round(cut(model, batch, [1, 2], "Q", "resample"), 2) == 0.98  # "almost nothing (0.98 by resampling)"
    for method in ("resample", "mean", "zero"):
        assert cut(model, batch, [1, 2], "Q", method) > 0.97
        assert cut(model, batch, [3], "V", method) > 0.97  # "into the values costs nothing"
    assert round(cut(model, batch, [3], "Q", "resample"), 2) == 0.86  # "falls to 0.86"
    assert cut(model, batch, [3], "Q", "zero") > 0.97 and cut(model, batch, [3], "Q", "mean") > 0.97


def test_4_the_key_path_cut_breaks_the_copy_outside_the_training_layout_too(model):
    """On the prefix-matching probe (16 random tokens repeated once), resampling the key path breaks the copy."""
    rng = np.random.default_rng(5)
    first = rng.permuted(np.tile(np.arange(32), (512, 1)), axis=1)[:, :16]
    tokens = np.concatenate([first, first], axis=1)  # (512, 32)
    n, zero = np.full(512, 16), np.zeros(512, dtype=np.int64)
    whole = accuracy(model.forward(tokens)[0], tokens, n, zero, zero)
    assert whole > 0.95
    assert cut(model, (tokens, n, zero, zero), [3], "K", "resample") < whole - 0.4


# --- section 5: whole heads switched off (zero ablation of each head's W_o rows) ------------------


def test_5_one_previous_token_head_redundant_induction_heads_and_a_head_that_suppresses_the_copy(model, result, batch):
    tokens, n, offset, gap = batch

    def acc(ablate):
        return accuracy(model.forward(tokens, ablate=ablate)[0], tokens, n, offset, gap)

    whole = result["accuracy"]
    assert abs(acc([(0, 3)]) - acc([(0, None)])) < 0.02 and acc([(0, 3)]) < 0.1  # "as much as all of layer 0"
    costs = [whole - acc([(1, h)]) for h in (0, 1, 2)]
    assert 0.065 <= min(costs) and max(costs) < 0.175  # "each alone costs 0.07 to 0.17"
    together = acc([(1, h) for h in (0, 1, 2)])
    assert round(together, 3) == 0.003 and together < CHANCE  # "0.003, below chance"
    layer1 = acc([(1, None)])
    assert round(layer1, 3) == 0.035 and abs(layer1 - CHANCE) < 0.01  # "back up to chance, 0.035"
    assert acc([(1, 3)]) > 0.97  # alone, head 3 costs nothing


# --- section 6: circuit or shortcut --------------------------------------------------------------


def test_6_with_no_gap_the_shortcut_falls_as_the_repeat_moves_and_the_trained_model_does_not(model, shortcut):
    short = offset_accuracy(shortcut, [4, 8, 12], per_cell=256, seed=11)  # gap 0, as the figure says
    trained = offset_accuracy(model, [4, 8, 12], per_cell=256, seed=11)
    assert short[:, 0].min() > 0.95
    assert np.nanmin(short[:2], axis=1).max() < 0.1  # n = 4 and 8 "near 0"
    assert round(np.nanmin(short[2]), 2) == 0.49  # n = 12 "to 0.49"
    assert np.nanmin(trained) >= 0.85  # "at least 0.85 everywhere"


def test_6_with_the_first_copy_in_place_the_gap_alone_decides(shortcut):
    """Independent cells of 512 sequences each, not the notebook's grid."""
    assert abs(cell(shortcut, 4, 5, 0) - 0.25) < 0.03 and cell(shortcut, 4, 5, 5) > 0.99  # "a quarter", "all"
    assert abs(cell(shortcut, 6, 9, 0) - 0.25) < 0.03 and 0.9 < cell(shortcut, 6, 9, 8) < 0.95  # "0.25", "0.92"


@pytest.fixture(scope="module")
def grids(model, shortcut):
    return {name: offset_gap_accuracy(m, 4, per_cell=32, seed=11) for name, m in
            (("shortcut", shortcut), ("trained", model))}


def test_6_the_shortcut_copies_inside_its_two_rules_and_fails_outside_the_trained_model_everywhere(grids):
    o, g = np.meshgrid(np.arange(25), np.arange(25), indexing="ij")
    rules = (o <= 12) & (g >= o) & (g <= 12)
    short = grids["shortcut"]
    assert np.nanmin(short[rules]) >= 0.96  # inside both rules "0.96 or more in every cell"
    assert 0.28 < np.nanmean(short[~rules]) < 0.4  # outside "mostly fails (about a third on average)"
    assert np.nanmean(short[(o > 12) & ~np.isnan(short)]) < 0.15  # the first copy past 15: layer 0's rule
    assert np.nanmean(short[(o <= 12) & (g <= o - 4)]) < 0.35  # gap well below the offset: layer 1's rule
    assert np.nanmean(short[(o <= 8) & (g >= 16)]) < 0.3  # copies further apart than training put them
    assert round(np.nanmin(grids["trained"]), 2) == 0.84  # "at least 0.84 in every cell"


def test_6_both_previous_token_heads_are_position_tables_of_different_reach(model, shortcut):
    short = previous_token_profile(shortcut, num_sequences=1024, seed=13, at_start=True)
    trained = previous_token_profile(model, num_sequences=1024, seed=13)
    for profile, reach in ((short, 15), (trained, 30)):
        best = profile[int(np.nanargmax(np.nanmean(profile, axis=1)))]
        assert np.flatnonzero(best >= 0.5).min() == 1 and np.flatnonzero(best >= 0.5).max() == reach  # "1-15", "1-30"
    best_short = short[int(np.nanargmax(np.nanmean(short, axis=1)))]
    assert best_short[16:].max() < 0.1  # near 0 after the band
    best_trained = trained[3]
    assert best_trained[1:31].min() > 0.9 and best_trained[31] < 0.05  # "above 0.9 from 1 to 30", "0 at 31"


def test_6_the_shortcut_was_trained_for_1500_steps():
    with resources.as_file(resources.files("mhattn") / "data" / "induction_at_start.npz") as path, np.load(path) as f:
        assert int(f["steps"]) == 1500


def test_6_without_positions_the_previous_token_head_is_gone(model, result, batch):
    assert result["accuracy_without_positions"] < 0.15
    scores = previous_token_score(model.forward(batch[0], use_positions=False)[1][0])
    assert scores.max() < 0.11  # "no more than even weights give (0.10)"


# --- section 7: the circuit at work --------------------------------------------------------------


def test_7_the_model_continues_a_b_c_d_e_a_b_and_hedges(model):
    prompt = encode_letters("a b c d e a b")
    late = encode_letters("q w e r t y u i o p l k j h g f a b c d e a b")
    assert decode_tokens(generate(model, prompt, 3)) == "c d e" == decode_tokens(generate(model, late, 3))
    logits = model.forward(prompt)[0][-1]
    assert 0.4 < softmax(logits)[2] < 0.6  # "about half"
    assert softmax(logits / 0.5)[2] > 0.9
    assert decode_tokens(generate(model, prompt, 3, temperature=1.0, seed=0)) != "c d e"  # wanders
    for seed in (0, 1):
        assert decode_tokens(generate(model, prompt, 3, temperature=0.5, seed=seed)) == "c d e"


def test_7_in_training_a_repeated_token_is_followed_by_the_earlier_successor_about_half_the_time():
    tokens = induction_batch(np.random.default_rng(0), 4000)[0]
    right = []
    for row in tokens:
        for t in range(31):
            earlier = np.flatnonzero(row[:t] == row[t])
            if len(earlier):
                right.append(row[t + 1] == row[earlier[-1] + 1])
    assert round(np.mean(right), 2) == 0.49  # "only about half of the time (0.49)"


# --- exercises -----------------------------------------------------------------------------------


def test_exercise_1_each_induction_head_alone_keeps_about_half(model, result, batch):
    tokens, n, offset, gap = batch
    for kept in result["induction_heads"]:
        others = [(1, h) for h in result["induction_heads"] if h != kept]
        assert 0.5 < accuracy(model.forward(tokens, ablate=others)[0], tokens, n, offset, gap) < 0.6


def test_exercise_1_in_the_shortcut_one_head_suffices_and_the_choice_matters(shortcut):
    tokens, n, *_ = induction_batch(np.random.default_rng(2024), 512, at_start=True)
    alone = [accuracy(shortcut.forward(tokens, ablate=[(1, h) for h in range(4) if h != kept])[0], tokens, n)
             for kept in range(4)]
    assert round(alone[0], 2) == 0.98 and 0.25 < alone[2] < 0.45  # "nearly all (0.98)", "about a third"


def test_exercise_2_the_other_heads_in_the_keys_depend_on_the_method(model, batch):
    assert round(cut(model, batch, [0, 1, 2], "K", "resample"), 2) == 0.85  # "about 0.85 by resampling"
    for method in ("mean", "zero"):  # "0.98-0.99 by mean or zero ablation, as much as the whole model"
        assert abs(cut(model, batch, [0, 1, 2], "K", method) - measure_accuracy(model, batch)) < 0.005
