"""The measures of the circuits and the experiment of several_heads refuse what they cannot measure.

The circuits' measures are plain functions in their modules (:mod:`mhattn.learn.attention_patterns`,
``weight_circuits``, ``in_context``, ``experiments``, ``path_ablation``); the package shows each behind a door,
``door(plain, check)``, and these tests call the doors (``DOORS``). Every refusal names the argument;
every number that is returned is compared with its definition, computed here with NumPy from the
model's weights.
"""

import importlib
import inspect
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import assert_refused_by_name, raises, refusals

import mhattn
import mhattn.learn
from mhattn.learn import attention_patterns, experiments, in_context, several_heads, weight_circuits
from mhattn.learn.model import InductionModel

#: every measure as the package shows it: ``name = door(module.name, check)`` in ``mhattn/learn/__init__.py``
DOORS = {name: getattr(mhattn.learn, name) for name in [
    "previous_token_score", "segments", "prefix_matching_score", "repeated_random_tokens", "offset_repeats",
    "previous_token_profile", "prefix_matching_by_offset", "head_weights", "ov_circuit", "qk_circuit",
    "copying_score", "composition_score", "composition_scores", "k_composition_scores",
    "composition_baseline", "composition_ceiling", "composition_ceilings", "token_losses",
    "in_context_learning_score", "icl_tokens", "mid_context_token",
    "induction_loss", "loss_report", "forward_without_key_path", "offset_accuracy", "gap_accuracy", "measure",
    "claims", "offset_gap_accuracy", "path_ablation",
]}
learn = SimpleNamespace(**DOORS)
path_ablation = importlib.import_module("mhattn.learn.path_ablation")  # the package shows its door by that name
MODULES = (attention_patterns, weight_circuits, in_context, experiments, path_ablation)


def test_every_public_function_of_the_measures_has_a_door():
    public = {name for module in MODULES for name, obj in vars(module).items()
              if inspect.isfunction(obj) and obj.__module__ == module.__name__ and not name.startswith("_")}
    assert public == set(DOORS)
    for name, checked in DOORS.items():  # the plain function is the one its module holds
        assert checked.__wrapped__ is next(vars(m)[name] for m in MODULES if name in vars(m))


@pytest.fixture(scope="module")
def model():
    return InductionModel(2, vocab=12, max_len=9, d_model=16, num_heads=4, seed=3)


def _ov(model, layer, head):
    """W_E W_V^h W_O^h W_U from the raw W_qkv and W_o (head h: columns 2 d_model + h d_k ..., rows h d_k ...)."""
    mha, d_k, d = model.layers[layer], model.d_model // model.num_heads, model.d_model
    W_v = mha.W_qkv[:, 2 * d + head * d_k : 2 * d + (head + 1) * d_k]
    return model.embed @ W_v @ mha.W_o[head * d_k : (head + 1) * d_k] @ model.unembed


def _copying(ov):
    eigenvalues = np.linalg.eigvals(ov)
    return eigenvalues.sum().real / np.abs(eigenvalues).sum()


@pytest.mark.parametrize(("layer", "head", "name"), [(0, -1, "head"), (0, 4, "head"), (0, -2, "head"),
                                                      (0, 1.5, "head"), (2, 0, "layer"), (True, 0, "layer")])
def test_ov_and_qk_circuits_refuse_a_head_or_layer_out_of_range(model, layer, head, name):
    for circuit in (learn.ov_circuit, learn.qk_circuit):
        with pytest.raises((TypeError, ValueError), match=name):
            circuit(model, layer, head)


def test_ov_circuit_is_its_definition(model):
    np.testing.assert_allclose(learn.ov_circuit(model, 1, 3), _ov(model, 1, 3), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("early", "late", "name"), [(0, 3, "early"), (1, 0, "late"), (1, -1, "late"),
                                                      (1, 9, "late"), (1.0, 3, "early")])
def test_icl_score_refuses_tokens_outside_one_to_seq_len(model, early, late, name):
    tokens = np.arange(9)[None] % 12
    logits = model(tokens)[0]
    with pytest.raises((TypeError, ValueError), match=name):
        learn.in_context_learning_score(logits, tokens, early, late)


def test_icl_tokens_are_two_different_tokens_or_refused():
    with pytest.raises(ValueError, match="max_len"):
        learn.icl_tokens(1)
    for max_len in range(3, 600):
        early, late = learn.icl_tokens(max_len)
        assert 1 <= early < late < max_len
    assert learn.icl_tokens(512) == (50, 500)  # Olsson et al.'s tokens


def test_a_dead_head_has_no_composition_score(model):
    dead = np.zeros((16, 16))
    with pytest.raises(ValueError, match="left"):
        learn.composition_score(dead, np.eye(16))
    silent = InductionModel(2, vocab=12, max_len=9, d_model=16, num_heads=4, seed=3)
    silent.layers[0].W_o[:4] = 0.0  # head 0 of layer 0 writes nothing
    with raises(ValueError, "head 0 of layer 0 is dead (its OV matrix is zero)"):
        learn.k_composition_scores(silent)
    for kind in "QKV":
        with raises(ValueError, "head 0 of layer 0 is dead (its OV matrix is zero)"):
            learn.composition_scores(silent, kind)
    deaf = InductionModel(2, vocab=12, max_len=9, d_model=16, num_heads=4, seed=3)
    deaf.layers[1].W_qkv[:, 20:24] = 0.0  # head 1 of layer 1 has no keys: its QK matrix is zero
    for kind, name in (("K", "QK"), ("Q", "QK")):
        with raises(ValueError, f"head 1 of layer 1 is dead (its {name} matrix is zero)"):
            learn.composition_scores(deaf, kind)
    assert np.isfinite(learn.composition_scores(deaf, "V")).all()  # its values still read the stream


def test_a_dead_heads_scores_are_nan_behind_the_door():
    """What measure() reports for a head that writes nothing: no copying, no composition, and the rest as defined."""
    silent = InductionModel(2, vocab=12, max_len=9, d_model=16, num_heads=4, seed=3)
    silent.layers[0].W_o[:4] = 0.0  # head 0 of layer 0 writes nothing
    table = weight_circuits.k_composition_scores(silent)
    assert np.isnan(table[0]).all() and np.isfinite(table[1:]).all()
    assert np.isnan(weight_circuits.copying_score(weight_circuits.ov_circuit(silent, 0, 0)))
    nilpotent = np.diag([1.0, 1.0], k=1)  # (3, 3), nonzero, every eigenvalue 0
    assert np.isnan(weight_circuits.copying_score(nilpotent))
    with raises(ValueError, "ov has only zero eigenvalues"):
        learn.copying_score(nilpotent)


def test_k_composition_of_a_one_layer_model_names_layer1():
    with pytest.raises(ValueError, match="layer1"):
        learn.k_composition_scores(InductionModel(1, vocab=12, max_len=9, d_model=16, num_heads=4))


@pytest.mark.parametrize("call", [
    lambda m: learn.previous_token_score(np.full((1, 2, 3, 3), np.nan)),
    lambda m: learn.in_context_learning_score(np.full((1, 4, 5), np.nan), np.zeros((1, 4), int), 1, 2),
    lambda m: learn.ov_circuit(m, 0, 0),
])
def test_nan_is_refused_not_passed_through(call):
    broken = InductionModel(2, vocab=12, max_len=9, d_model=16, num_heads=4)
    broken.embed[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        call(broken)


def test_previous_token_score_rejects_bad_input():
    with raises(ValueError, "weights must be 4-D with shape"):
        learn.previous_token_score(np.zeros((2, 3, 3)))
    with raises(ValueError, "queries must have shape"):
        learn.previous_token_score(np.zeros((1, 1, 4, 4)), np.ones((1, 3), dtype=bool))
    with raises(ValueError, "at least one query"):
        learn.previous_token_score(np.zeros((1, 1, 4, 4)), np.array([[True, False, False, False]]))


def test_prefix_matching_rejects_tokens_that_do_not_fit_or_never_repeat():
    weights = np.ones((1, 1, 4, 4)) / 4
    with raises(ValueError, "tokens must have shape"):
        learn.prefix_matching_score(weights, np.zeros((1, 5), dtype=int))
    with raises(ValueError, "repeat at least one token"):
        learn.prefix_matching_score(weights, np.arange(4)[None])
    repeats_once = np.array([[0, 1, 2, 3], [3, 1, 2, 1]])  # only the second sequence repeats, at its end
    assert learn.prefix_matching_score(np.ones((2, 1, 4, 4)) / 4, repeats_once) == pytest.approx(0.25)


def test_repeated_random_tokens_need_a_half_of_distinct_tokens():
    with raises(ValueError, "half_len must be in [1, vocab = 32]"):
        learn.repeated_random_tokens(np.random.default_rng(0), 1, 33, 32)


def test_copying_score_needs_a_square_matrix_that_writes_something():
    with raises(ValueError, "square"):
        learn.copying_score(np.ones((2, 3)))
    with raises(ValueError, "writes nothing"):
        learn.copying_score(np.zeros((3, 3)))


def test_segments_of_one_int_is_one_sequence():
    parts = learn.segments(4, 8)
    t = np.arange(8)
    np.testing.assert_array_equal(parts["second copy"], ((t >= 4) & (t < 8))[None])
    with pytest.raises(TypeError, match="n"):
        learn.segments(np.array([1.5]), 8)


def test_measure_works_for_an_odd_max_len_and_a_dead_head():
    model = InductionModel(2, vocab=12, max_len=9, d_model=16, num_heads=4, seed=3)
    model.layers[1].W_o[4:8] = 0.0  # head 1 of layer 1 writes nothing
    result = learn.measure(model, num_sequences=8)
    expected = [_copying(_ov(model, 1, h)) for h in (0, 2, 3)]
    assert np.isnan(result["copying"][1][1])
    np.testing.assert_allclose(np.delete(result["copying"][1], 1), expected, rtol=1e-10)
    assert np.isfinite(result["repeated_icl_score"])


def test_cross_entropy_refuses_a_negative_target():
    logits = np.array([[0.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="targets"):
        mhattn.learn.cross_entropy(logits, np.array([-1]))  # would be class vocab - 1
    with pytest.raises(ValueError, match="targets"):
        mhattn.learn.cross_entropy(logits, np.array([3]))  # one past the last class
    loss, _ = mhattn.learn.cross_entropy(logits, np.array([2]))
    assert loss == pytest.approx(-np.log(np.exp(2) / np.exp([0, 1, 2]).sum()), rel=1e-14)


@pytest.fixture(scope="module")
def slots():
    return several_heads.TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)


@pytest.mark.parametrize(("call", "name"), [
    (lambda m, t, y: mhattn.learn.slot_loss_and_grads(m, t, y - 1), "targets"),
    (lambda m, t, y: mhattn.learn.slot_loss_and_grads(m, t, y + 0.5), "targets"),
    (lambda m, t, y: mhattn.learn.slot_accuracy(m, t, y + 6), "targets"),
    (lambda m, t, y: mhattn.learn.offset_profile(m(t)[1].tolist(), 1.5), "max_offset"),
    (lambda m, t, y: mhattn.learn.offset_profile(m(t)[1][0], 1), "weights"),
    (lambda m, t, y: mhattn.learn.without_heads(m, 1), "heads"),
    (lambda m, t, y: mhattn.learn.without_heads(m, [2]), "heads"),
    (lambda m, t, y: mhattn.learn.logits_with_weights(m, t, np.full(m(t)[1].shape, np.nan)), "weights"),
    (lambda m, t, y: m(t.astype(float)), "tokens"),
])
def test_several_heads_names_the_argument(slots, call, name):
    tokens = np.zeros((3, 5), dtype=int)
    targets = np.zeros((2, 3, 5), dtype=int)
    with pytest.raises((TypeError, ValueError), match=name):
        call(slots, tokens, targets)


def test_offset_profile_of_a_list_is_its_definition(slots):
    weights = slots(np.arange(10).reshape(2, 5) % 6)[1]
    expected = [[np.mean([weights[b, h, t, t - k] for b in range(2) for t in range(1, 5)]) for k in range(2)]
                for h in range(2)]
    np.testing.assert_allclose(mhattn.learn.offset_profile(weights.tolist(), 1), expected, rtol=1e-13)


# --- where the repeat sits, composition against chance, the losses ------------------------------


@pytest.fixture(scope="module")
def few_letters():
    """A model whose vocabulary (4) holds fewer distinct tokens than half its context (16 / 2)."""
    return InductionModel(2, vocab=4, max_len=16, d_model=8, num_heads=2, seed=0)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda m: learn.offset_accuracy(m, [4.5]), TypeError, "lengths must be an int; got 4.5"),  # was rounded to 4
    (lambda m: learn.offset_accuracy(m, [True]), TypeError, "lengths must be an int; got True"),
    (lambda m: learn.offset_accuracy(m, [5]), ValueError, "lengths must not exceed the model's vocab = 4"),
    (lambda m: learn.offset_accuracy(m, [4], gap=9), ValueError, "2 * min(lengths) + gap <= max_len = 16"),
    (lambda m: learn.gap_accuracy(m, [0], [6]), ValueError, "lengths must not exceed the model's vocab = 4"),
    (lambda m: learn.gap_accuracy(m, [15], [2]), ValueError, "gaps must be in [0, max_len - 2 = 14]"),
    (lambda m: learn.prefix_matching_by_offset(m, half_len=4), ValueError, "half_len must be at least"),
    (lambda m: learn.previous_token_profile(m, layer=2), ValueError, "layer must be an int in [0, 1]; got 2"),
    (lambda m: learn.loss_report(m), ValueError, "max_len // 2 <= vocab"),
    (lambda m: learn.composition_scores(m, "k"), ValueError, "kind must be 'Q', 'K' or 'V'; got 'k'"),
    (lambda m: learn.composition_scores(m, "K", 1, 1), ValueError, "layer0 must come before layer1"),
    (lambda m: learn.forward_without_key_path(m, np.zeros(4, int), [0]), ValueError, "tokens must be a batch"),
    (lambda m: learn.forward_without_key_path(m, np.zeros((1, 4), int), [2]), ValueError, "heads must be"),
])
def test_the_measures_of_where_the_repeat_sits_name_the_argument(few_letters, call, error, message):
    with raises(error, message):
        call(few_letters)


def test_offset_repeats_names_its_arguments_before_drawing():
    with raises(ValueError, "offset + half_len must be <= vocab = 6"):
        learn.offset_repeats(np.random.default_rng(0), 2, 4, 3, 6)
    with raises(TypeError, "offset must be an int >= 0; got 1.5"):
        learn.offset_repeats(np.random.default_rng(0), 2, 1.5, 3, 6)


@pytest.mark.parametrize("seq_len", [3, 5, 2])
def test_induction_loss_needs_two_halves(seq_len):
    """Tokens h + 1 .. 2h - 1 repeat: an odd length, or halves of one token, have no such tokens to score."""
    with raises(ValueError, "tokens must be two halves of h >= 2 tokens each"):
        learn.induction_loss(np.zeros((1, seq_len, 4)), np.zeros((1, seq_len), int))


def test_induction_loss_is_the_mean_loss_of_the_predictable_half():
    logits = np.random.default_rng(5).standard_normal((3, 8, 6))
    tokens = np.random.default_rng(6).integers(0, 6, (3, 8))
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))  # (batch, position, vocab)
    expected = np.mean([-log_p[b, t - 1, tokens[b, t]] for b in range(3) for t in range(5, 8)])  # tokens h+1 .. 2h-1
    assert learn.induction_loss(logits, tokens) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("max_len", "expected"), [(3, 1), (32, 16), (33, 16)])
def test_mid_context_token_is_half_the_context(max_len, expected):
    assert learn.mid_context_token(max_len) == expected


@pytest.mark.parametrize("max_len", [0, 2, True, 3.0])
def test_mid_context_token_needs_a_context_of_three(max_len):
    with pytest.raises((TypeError, ValueError), match="max_len must be"):
        learn.mid_context_token(max_len)


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.learn.previous_token_score,
        dict(weights=np.full((1, 2, 3, 3), 0.3333333333333333)),
        weights=[np.full((1, 1, 2, 3, 3), 0.3333333333333333), np.full((1, 2, 3, 2), 0.3333333333333333)],
        queries=[np.full((1, 3), 1.0), np.ones((1, 2), bool), np.zeros((1, 3), bool)]),
    *refusals(
        mhattn.learn.segments,
        dict(n=np.full((1,), 2), seq_len=6),
        n=[np.full((1,), -999998), np.full((1, 1), 2)],
        seq_len=[0]),
    *refusals(
        mhattn.learn.prefix_matching_score,
        dict(weights=np.full((1, 2, 3, 3), 0.3333333333333333), tokens=np.array([[0, 1, 0]])),
        weights=[np.full((1, 1, 2, 3, 3), 0.3333333333333333)],
        tokens=[np.array([[[0, 1, 0]]])]),
    *refusals(
        mhattn.learn.repeated_random_tokens,
        dict(rng=np.random.default_rng(0), batch_size=2, half_len=3, vocab=6),
        rng=[np.random.RandomState(0)],
        half_len=[7]),
    *refusals(
        mhattn.learn.qk_circuit,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0), layer=1, head=0),
        key_through=[(0, 5)]),
    *refusals(
        mhattn.learn.copying_score,
        dict(ov=np.random.default_rng(0).standard_normal((3, 3))),
        ov=[np.random.default_rng(0).standard_normal((1, 3, 3)), np.full((2, 3), 1.0), np.full((3, 3), 0.0)]),
    *refusals(
        mhattn.learn.composition_score,
        dict(left=np.random.default_rng(0).standard_normal((3, 3)),
             right=np.random.default_rng(0).standard_normal((3, 3))),
        left=[np.random.default_rng(0).standard_normal((1, 3, 3)), np.full((3, 3), 0.0), np.full((3, 2), 1.0)],
        right=[np.random.default_rng(0).standard_normal((1, 3, 3)), np.full((3, 3), 0.0)]),
    *refusals(
        mhattn.learn.k_composition_scores,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)),
        layer0=[1],
        layer1=[2]),
    *refusals(
        mhattn.learn.token_losses,
        dict(logits=np.full((1, 3, 4), 0.0), tokens=np.array([[0, 1, 2]])),
        logits=[np.full((1, 1, 3, 4), 0.0)],
        tokens=[np.array([[-1000000, -999999, -999998]]), np.array([[1000000, 1000001, 1000002]]),
                np.array([[[0, 1, 2]]])]),
    *refusals(
        mhattn.learn.in_context_learning_score,
        dict(logits=np.full((1, 4, 4), 0.0), tokens=np.array([[0, 1, 2, 3]]), early=1, late=3),
        logits=[np.full((1, 1, 4, 4), 0.0)],
        tokens=[np.array([[-1000000, -999999, -999998, -999997]]), np.array([[1000000, 1000001, 1000002, 1000003]]),
                np.array([[[0, 1, 2, 3]]])],
        early=[4],
        late=[4, 2.0]),
    *refusals(
        mhattn.learn.icl_tokens,
        dict(max_len=32),
        max_len=[1, 2]),
    *refusals(
        mhattn.learn.mid_context_token,
        dict(max_len=32),
        max_len=[1, 2]),
    *refusals(
        mhattn.learn.induction_loss,
        dict(logits=np.full((1, 4, 4), 0.0), tokens=np.array([[0, 1, 0, 1]])),
        logits=[np.full((1, 1, 4, 4), 0.0)],
        tokens=[np.array([[-1000000, -999999, -1000000, -999999]]), np.array([[1000000, 1000001, 1000000, 1000001]]),
                np.array([[[0, 1, 0, 1]]]), np.array([[0, 1, 0]])]),
    *refusals(
        mhattn.learn.offset_accuracy,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0), lengths=[3, 4],
             per_cell=16),
        lengths=[[], [0], [5], 4],
        gap=[5]),
    *refusals(
        mhattn.learn.gap_accuracy,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0), gaps=[0, 2],
             lengths=[2, 3], num_sequences=4),
        gaps=[[7]],
        lengths=[[], [0], 'ab']),
    *refusals(
        mhattn.learn.previous_token_profile,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0), num_sequences=4),
        layer=[2]),
    *refusals(
        mhattn.learn.offset_repeats,
        dict(rng=np.random.default_rng(0), batch_size=2, offset=1, half_len=2, vocab=6),
        rng=[np.random.RandomState(0)],
        offset=[5],
        half_len=[6],
        vocab=[2]),
    *refusals(
        mhattn.learn.prefix_matching_by_offset,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0), half_len=2,
             num_sequences=2),
        layer=[2],
        half_len=[1, 5]),
    *refusals(
        mhattn.learn.composition_scores,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0), kind='K'),
        layer0=[1],
        layer1=[2]),
    *refusals(
        mhattn.learn.forward_without_key_path,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0),
             tokens=np.array([[0, 1, 2, 3, 4, 5, 0, 1]]), heads=[0]),
        model=[mhattn.learn.InductionModel(1, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)],
        tokens=[np.array([[-1000000, -999999, -999998, -999997, -999996, -999995, -1000000, -999999]]),
                np.array([[1000000, 1000001, 1000002, 1000003, 1000004, 1000005, 1000000, 1000001]]),
                np.array([[[0, 1, 2, 3, 4, 5, 0, 1]]]), np.array([0, 1, 2, 3, 4, 5, 0, 1])],
        heads=[0, [2]]),
    *refusals(
        mhattn.learn.loss_report,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0), num_sequences=4),
        model=[mhattn.learn.InductionModel(2, vocab=6, max_len=7, d_model=8, num_heads=2, seed=0),
               mhattn.learn.InductionModel(2, vocab=6, max_len=16, d_model=8, num_heads=2, seed=0)]),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
