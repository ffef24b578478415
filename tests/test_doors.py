# ruff: noqa: E501  (the table: one line per door)
"""Every public door of the package, knocked on with bad arguments: each answers with a message naming the argument.

``public_callables()`` finds every documented callable without a leading underscore in
``mhattn`` and its subpackages (``mhattn.checks`` holds the doors themselves), with the
public methods of public classes. ``DOORS`` holds one entry per callable: how to call it
well, and which arguments to spoil how; or, in words, why it takes nothing worth attacking.
A callable without an entry fails :func:`test_every_public_callable_has_an_entry`.
"""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import mhattn
from mhattn import KVCache, MultiHeadAttention
from mhattn.core import attention, grad, heads, masks, positions, softmax
from mhattn.engine import blocks, flash
from mhattn.explorer import controls, draw, frame
from mhattn.learn import circuits, generate, losses, model, optim, several_heads, task
from mhattn.learn import train as trainer
from mhattn.pictures import exercises

try:
    import torch
except ImportError:  # torch is optional: its doors say so (checks.require) and are not attacked
    torch = None

RNG = np.random.default_rng(0)


def public_callables():
    """``{qualified name: object}`` for every public, documented callable and public method of a public class."""
    names = ["mhattn"] + [m.name for m in pkgutil.walk_packages(mhattn.__path__, "mhattn.")]
    found = {}
    for name in names:
        if name.startswith("mhattn.checks") or any(part.startswith("_") for part in name.split(".")):
            continue
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or not callable(obj) or getattr(obj, "__module__", None) != name:
                continue
            if not inspect.getdoc(obj):
                continue
            found[f"{name}.{attr}"] = obj
            if inspect.isclass(obj):
                for method, member in vars(obj).items():
                    if method.startswith("_") or isinstance(member, property) or not getattr(member, "__doc__", None):
                        continue
                    if callable(member) or isinstance(member, (classmethod, staticmethod)):
                        found[f"{name}.{attr}.{method}"] = member
    return found


# --- the attacks -----------------------------------------------------------------------------

COUNT = [True, 1.5, 0, -1, "2"]  # a positive int
INDEX = [True, 1.5, -1, 10**6]  # an index: no negative index counts from the end
FLAG = ["yes", 1, None]
BASE = [True, float("nan"), float("inf"), 0.0, -1.0, "x"]
SEED = [True, -1, 2**32, 1.5]


def spoil(good, kind):
    """Bad values made from a good array: text, NaN, inf, a masked array, one axis too many."""
    good = np.asarray(good)
    bad = {"text": np.full(good.shape, "a"), "masked": np.ma.masked_array(good), "rank": good[None]}
    if good.dtype.kind == "f":
        bad["nan"], bad["inf"] = good.copy(), good.copy()
        bad["nan"].flat[0], bad["inf"].flat[-1] = np.nan, np.inf
    else:  # ints: a float array, a negative and a huge one
        bad["float"], bad["negative"], bad["huge"] = good + 0.5, good - 10**6, good + 10**6
    return [bad[k] for k in kind]


FLOATS = ("text", "nan", "inf", "masked", "rank")
ANY_RANK = ("text", "nan", "inf", "masked")  # a function of (..., n) arrays: any rank is right
IDS = ("text", "float", "masked", "negative", "huge", "rank")


def _tiny_model(num_layers=2):
    return model.InductionModel(num_layers, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0)


def _slots():
    return several_heads.TwoSlotModel(2, vocab=6, seq_len=5, d_model=8)


X3 = RNG.standard_normal((2, 3, 4))
W44 = RNG.standard_normal((4, 4))
Q2, K2, V2 = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4))
W4 = np.full((1, 2, 3, 3), 1 / 3)
IDS8 = np.arange(8)[None] % 6
SLOT_TOKENS = np.zeros((3, 5), dtype=int)


def _mha_method(name):
    return lambda **kw: getattr(MultiHeadAttention(4, 2), name)(**kw)


def _cache_method(name):
    def call(**kw):
        cache = KVCache()
        cache.extend(np.ones((1, 1, 2, 2)), np.ones((1, 1, 2, 2)))
        return getattr(cache, name)(**kw)
    return call


def _adam_step(**kw):
    return optim.Adam({"a": np.zeros(3)}).step(**kw)


INTERNAL = "internal to the engine: takes arrays its public door (flash_attention, blockwise_attention) checked"
NO_ARGUMENTS = "takes no arguments (or only self)"

DOORS = {
    # the teaching path
    "mhattn.core.softmax.softmax": (softmax.softmax, dict(x=Q2, axis=-1), {"x": spoil(Q2, ANY_RANK) + [[[True]]], "axis": [True, 1.5, 2, -3]}),
    "mhattn.core.attention.scaled_dot_product_attention": (attention.scaled_dot_product_attention, dict(Q=Q2, K=K2, V=V2), {"Q": spoil(Q2, ANY_RANK), "K": spoil(K2, ANY_RANK) + [K2[:, :3]], "V": spoil(V2, ANY_RANK) + [V2[:4]], "mask": [np.ones((3, 5)), np.ones((5, 3), bool)], "dropout_p": [True, 1.0, -0.1]}),
    "mhattn.core.heads.split_heads": (heads.split_heads, dict(x=X3, num_heads=2), {"x": [np.full((2, 3, 4), "a"), X3[0], np.ma.masked_array(X3)], "num_heads": COUNT + [3]}),
    "mhattn.core.heads.combine_heads": (heads.combine_heads, dict(x=X3[None]), {"x": [X3, np.full((1, 2, 3, 4), "a"), np.ma.masked_array(X3[None])]}),
    "mhattn.core.masks.causal_mask": (masks.causal_mask, dict(seq_len=3), {"seq_len": [True, 1.5, -1]}),
    "mhattn.core.masks.padding_mask": (masks.padding_mask, dict(lengths=np.array([2, 3]), seq_len=3), {"lengths": [np.array([1.5, 2]), np.array([4, 1]), np.array([-1, 1])], "seq_len": [True, 1.5, -1]}),
    "mhattn.core.positions.rope_angles": (positions.rope_angles, dict(positions=np.arange(3), d_k=4), {"positions": spoil(np.arange(3), ("float", "masked", "rank")) + [np.array([2**60])], "d_k": COUNT, "base": BASE}),
    "mhattn.core.positions.sinusoidal_encoding": (positions.sinusoidal_encoding, dict(seq_len=3, d_model=4), {"seq_len": [True, 1.5, -1], "d_model": COUNT, "base": BASE}),
    "mhattn.core.positions.apply_rope": (positions.apply_rope, dict(x=X3, positions=np.arange(3)), {"x": spoil(X3, ANY_RANK) + [X3[..., :3]], "positions": spoil(np.arange(3), ("float", "masked", "rank")) + [np.arange(4), np.array([0, 1, 2**60])], "base": BASE}),
    "mhattn.core.positions.apply_rope_interleaved": (positions.apply_rope_interleaved, dict(x=X3, positions=np.arange(3)), {"x": spoil(X3, ANY_RANK), "positions": spoil(np.arange(3), ("float", "masked")) + [np.array([0, 1, 2**60])], "base": BASE}),
    "mhattn.core.positions.interleaved_to_half_split": (positions.interleaved_to_half_split, dict(d_k=4), {"d_k": COUNT + [3]}),
    "mhattn.core.projection.qkv_columns": "the column layout of checked sizes, called by the module and the checks",
    "mhattn.core.projection.project_qkv": "the module's own step on checked arrays (MultiHeadAttention.project's door)",
    "mhattn.core.projection.repeat_kv": "the module's own step on checked arrays (grouped queries inside forward)",
    "mhattn.core.grad.softmax_vjp": (grad.softmax_vjp, dict(weights=Q2, d_weights=Q2), {"weights": spoil(Q2, ANY_RANK), "d_weights": spoil(Q2, FLOATS)}),
    "mhattn.core.grad.attention_vjp": (grad.attention_vjp, dict(Q=Q2, K=K2, V=V2, weights=np.ones((3, 5)), d_output=np.ones((3, 4))), {"Q": spoil(Q2, ANY_RANK), "K": spoil(K2, ANY_RANK), "V": spoil(V2, ANY_RANK), "weights": spoil(np.ones((3, 5)), FLOATS), "d_output": spoil(np.ones((3, 4)), FLOATS)}),
    "mhattn.core.grad.split_heads_vjp": (grad.split_heads_vjp, dict(d_heads=X3[None]), {"d_heads": spoil(X3[None], FLOATS) + [X3]}),
    "mhattn.core.grad.combine_heads_vjp": (grad.combine_heads_vjp, dict(d_x=X3, num_heads=2), {"d_x": spoil(X3, FLOATS), "num_heads": COUNT + [3]}),
    "mhattn.core.grad.linear_vjp": (grad.linear_vjp, dict(x=X3, W=np.ones((4, 5)), d_y=np.ones((2, 3, 5))), {"x": spoil(X3, ANY_RANK), "W": spoil(np.ones((4, 5)), FLOATS), "d_y": spoil(np.ones((2, 3, 5)), FLOATS)}),
    "mhattn.core.grad.repeat_kv_vjp": (grad.repeat_kv_vjp, dict(d_repeated=X3[None], group=2), {"d_repeated": spoil(X3[None], FLOATS), "group": COUNT + [3]}),
    "mhattn.core.grad.rope_vjp": (grad.rope_vjp, dict(d_rotated=X3, positions=np.arange(3)), {"d_rotated": spoil(X3, ANY_RANK), "positions": spoil(np.arange(3), ("float", "masked", "rank")) + [np.array([0, 1, np.iinfo(np.int64).min])], "base": BASE}),
    "mhattn.core.grad.rope_interleaved_vjp": (grad.rope_interleaved_vjp, dict(d_rotated=X3, positions=np.arange(3)), {"d_rotated": spoil(X3, ANY_RANK) + [X3[..., :3], X3[0, 0]], "positions": spoil(np.arange(3), ("float", "masked", "rank")) + [np.arange(4), np.array([0, 1, np.iinfo(np.int64).min])], "base": BASE}),
    "mhattn.core.grad.multihead_vjp": "the module's backward on checked arrays: MultiHeadAttention.vjp is its door (documented)",
    "mhattn.core.grad.module_vjp": "MultiHeadAttention.vjp itself (its entry attacks it)",
    "mhattn.core.multihead.MultiHeadAttention": (MultiHeadAttention, dict(d_model=4, num_heads=2), {"d_model": COUNT, "num_heads": COUNT + [3], "seed": SEED, "num_kv_heads": COUNT + [3], "rope": FLAG, "rope_base": BASE}),
    "mhattn.core.multihead.MultiHeadAttention.forward": (_mha_method("forward"), dict(x=X3), {"x": spoil(X3, FLOATS) + [X3[..., :3]], "mask": [np.ones((3, 3)), np.ones((2, 2), bool)], "need_weights": FLAG, "context": spoil(X3, FLOATS), "kv_cache": [[], "cache"]}),
    "mhattn.core.multihead.MultiHeadAttention.vjp": (_mha_method("vjp"), dict(x=X3), {"x": spoil(X3, FLOATS), "mask": [np.ones((3, 3))]}),
    "mhattn.core.multihead.MultiHeadAttention.from_weights": (MultiHeadAttention.from_weights, dict(W_q=W44, W_k=W44, W_v=W44, W_o=W44, num_heads=2, layout="torch"), {"W_q": spoil(W44, FLOATS) + [W44[:, :3]], "W_k": spoil(W44, FLOATS) + [W44[:2].T], "W_v": [W44[:2], np.full((4, 4), "a")], "W_o": spoil(W44, FLOATS) + [W44[:3]], "num_heads": COUNT + [3], "layout": [None, "TORCH", "numpy"], "num_kv_heads": COUNT + [3], "rope": FLAG, "rope_base": BASE}),
    "mhattn.core.multihead.MultiHeadAttention.project": "the forward's own step on checked arrays (W_qkv from weights())",
    "mhattn.core.multihead.MultiHeadAttention.head_weights": (_mha_method("head_weights"), dict(head=0), {"head": INDEX}),
    "mhattn.core.multihead.MultiHeadAttention.qkv_columns": NO_ARGUMENTS,
    "mhattn.core.multihead.MultiHeadAttention.weights": (_mha_method("weights"), dict(dtype=np.float64), {"dtype": []}),
    "mhattn.core.multihead.MultiHeadAttention.split_heads": (_mha_method("split_heads"), dict(x=X3), {"x": [X3[0]]}),
    "mhattn.core.multihead.MultiHeadAttention.combine_heads": (_mha_method("combine_heads"), dict(x=X3[None]), {"x": [X3]}),
}
if torch is None:
    DOORS |= dict.fromkeys(("mhattn.core.multihead.MultiHeadAttention.from_torch", "mhattn.core.multihead.MultiHeadAttention.to_torch"),
                           "torch is not installed here: the door names the extra to install (checks.require)")
else:
    _nan_torch = torch.nn.MultiheadAttention(4, 2, bias=False)
    with torch.no_grad():
        _nan_torch.in_proj_weight[0, 0] = float("nan")
    DOORS |= {
        "mhattn.core.multihead.MultiHeadAttention.from_torch": (MultiHeadAttention.from_torch, dict(module=torch.nn.MultiheadAttention(4, 2, bias=False)), {"module": [None, torch.nn.Linear(4, 4, bias=False), torch.nn.MultiheadAttention(4, 2), torch.nn.MultiheadAttention(4, 2, bias=False, kdim=3, vdim=3), _nan_torch]}),
        "mhattn.core.multihead.MultiHeadAttention.to_torch": (_mha_method("to_torch"), dict(), {"batch_first": FLAG}),
    }

DOORS |= {
    # the engine
    "mhattn.engine.blocks.blockwise_attention": (blocks.blockwise_attention, dict(Q=Q2, K=K2, V=V2), {"Q": spoil(Q2, ANY_RANK), "K": spoil(K2, ANY_RANK), "V": spoil(V2, ANY_RANK), "mask": [np.ones((3, 5))], "block_size": COUNT, "need_weights": FLAG}),
    "mhattn.engine.blocks.blockwise_args": "blockwise_attention's argument check itself",
    "mhattn.engine.blocks.attention_in_blocks": INTERNAL,
    "mhattn.engine.flash.flash_attention": (flash.flash_attention, dict(Q=Q2, K=K2, V=V2), {"Q": spoil(Q2, ANY_RANK), "K": spoil(K2, ANY_RANK), "V": spoil(V2, ANY_RANK), "mask": [np.ones((3, 5))], "block_q": COUNT, "block_k": COUNT, "is_causal": FLAG, "return_lse": FLAG}),
    "mhattn.engine.flash.attention_in_tiles": INTERNAL,
    "mhattn.engine.bounds.same_leading_axes": INTERNAL,
    "mhattn.engine.bounds.key_norms": INTERNAL,
    "mhattn.engine.bounds.log_max_abs": INTERNAL,
    "mhattn.engine.bounds.safe_exponent": INTERNAL,
    "mhattn.engine.bounds.check_scores": INTERNAL,
    "mhattn.engine.fast_module.FastMultiHeadAttention": "MultiHeadAttention's constructor and doors, inherited (attacked there)",
    "mhattn.engine.kv_cache.KVCache": NO_ARGUMENTS,
    "mhattn.engine.kv_cache.KVCache.extend": (_cache_method("extend"), dict(K_new=np.ones((1, 1, 1, 2)), V_new=np.ones((1, 1, 1, 2))), {"K_new": [np.ones((1, 1, 1, 3)), np.ones((1, 1, 2)), np.full((1, 1, 1, 2), "a"), np.ma.masked_array(np.ones((1, 1, 1, 2)))], "V_new": [np.ones((1, 1, 2, 2)), np.ones((1, 1, 1, 2), int)]}),
    "mhattn.engine.kv_cache.KVCache.truncate": (_cache_method("truncate"), dict(length=1), {"length": [True, 1.5, -1, 3]}),
    "mhattn.engine.kv_cache.KVCache.undo_on_error": NO_ARGUMENTS,
    "mhattn.engine.kv_cache.KVCache.clear": NO_ARGUMENTS,
    # the learning code
    "mhattn.learn.losses.cross_entropy": (losses.cross_entropy, dict(logits=Q2, targets=np.array([0, 1, 3])), {"logits": spoil(Q2, FLOATS), "targets": spoil(np.array([0, 1, 3]), IDS)}),
    "mhattn.learn.optim.Adam": (optim.Adam, dict(params={"a": np.zeros(3)}), {"params": [{}, [np.zeros(3)], {"a": [0.0]}], "lr": BASE, "beta1": [True, 1.0, -0.1, "x"], "beta2": [1.0, -0.1], "eps": [0.0, -1.0, float("nan")]}),
    "mhattn.learn.optim.Adam.step": (_adam_step, dict(grads={"a": np.ones(3)}), {"grads": [{}, {"a": np.ones(2)}, {"a": np.full(3, np.nan)}, {"a": np.ones(3), "b": np.ones(3)}, [np.ones(3)], {"a": np.ma.masked_array(np.ones(3))}]}),
    "mhattn.learn.optim.Adam.check_grads": "Adam.step's check itself (attacked there)",
    "mhattn.learn.circuits.previous_token_score": (circuits.previous_token_score, dict(weights=W4), {"weights": spoil(W4, FLOATS) + [W4[..., :2]], "queries": [np.ones((1, 3)), np.ones((1, 2), bool), np.zeros((1, 3), bool)]}),
    "mhattn.learn.circuits.segments": (circuits.segments, dict(n=np.array([2]), seq_len=6), {"n": spoil(np.array([2]), ("float", "masked", "negative", "rank")), "seq_len": COUNT}),
    "mhattn.learn.circuits.prefix_matching_score": (circuits.prefix_matching_score, dict(weights=W4, tokens=np.array([[0, 1, 0]])), {"weights": spoil(W4, FLOATS), "tokens": spoil(np.array([[0, 1, 0]]), ("text", "float", "masked", "rank"))}),
    "mhattn.learn.circuits.repeated_random_tokens": (circuits.repeated_random_tokens, dict(rng=np.random.default_rng(0), batch_size=2, half_len=3, vocab=6), {"rng": [0, np.random.RandomState(0)], "batch_size": COUNT, "half_len": COUNT + [7], "vocab": COUNT}),
    "mhattn.learn.circuits.head_weights": (circuits.head_weights, dict(model=_tiny_model(), layer=0, head=0), {"model": [{}, None], "layer": INDEX, "head": INDEX}),
    "mhattn.learn.circuits.ov_circuit": (circuits.ov_circuit, dict(model=_tiny_model(), layer=0, head=0), {"model": [{}, None], "layer": INDEX, "head": INDEX}),
    "mhattn.learn.circuits.qk_circuit": (circuits.qk_circuit, dict(model=_tiny_model(), layer=1, head=0), {"model": [{}], "layer": INDEX, "head": INDEX, "key_through": [(0,), (0, 5), (-1, 0), "ab"]}),
    "mhattn.learn.circuits.copying_score": (circuits.copying_score, dict(ov=np.eye(3)), {"ov": spoil(np.eye(3), FLOATS) + [np.ones((2, 3)), np.zeros((3, 3))]}),
    "mhattn.learn.circuits.composition_score": (circuits.composition_score, dict(left=np.eye(3), right=np.eye(3)), {"left": spoil(np.eye(3), FLOATS) + [np.zeros((3, 3)), np.ones((3, 2))], "right": spoil(np.eye(3), FLOATS) + [np.zeros((3, 3))]}),
    "mhattn.learn.circuits.k_composition_scores": (circuits.k_composition_scores, dict(model=_tiny_model()), {"model": [{}], "layer0": INDEX + [1], "layer1": INDEX + [2]}),
    "mhattn.learn.circuits.token_losses": (circuits.token_losses, dict(logits=np.zeros((1, 3, 4)), tokens=np.array([[0, 1, 2]])), {"logits": spoil(np.zeros((1, 3, 4)), FLOATS), "tokens": spoil(np.array([[0, 1, 2]]), IDS)}),
    "mhattn.learn.circuits.in_context_learning_score": (circuits.in_context_learning_score, dict(logits=np.zeros((1, 4, 4)), tokens=np.array([[0, 1, 2, 3]]), early=1, late=3), {"logits": spoil(np.zeros((1, 4, 4)), FLOATS), "tokens": spoil(np.array([[0, 1, 2, 3]]), IDS), "early": [0, True, 1.5, 4], "late": [0, -1, 4, 2.0]}),
    "mhattn.learn.circuits.icl_tokens": (circuits.icl_tokens, dict(max_len=32), {"max_len": COUNT + [1, 2]}),
    "mhattn.learn.circuits.measure": (circuits.measure, dict(model=_tiny_model(), num_sequences=4), {"model": [{}, None], "num_sequences": COUNT, "seed": SEED}),
    "mhattn.learn.circuits.mid_context_token": (circuits.mid_context_token, dict(max_len=32), {"max_len": COUNT + [1, 2]}),
    "mhattn.learn.circuits.induction_loss": (circuits.induction_loss, dict(logits=np.zeros((1, 4, 4)), tokens=np.array([[0, 1, 0, 1]])), {"logits": spoil(np.zeros((1, 4, 4)), FLOATS), "tokens": spoil(np.array([[0, 1, 0, 1]]), IDS) + [np.array([[0, 1, 0]])]}),
    "mhattn.learn.circuits.offset_accuracy": (circuits.offset_accuracy, dict(model=_tiny_model(), lengths=[3, 4], per_cell=16), {"model": [{}, None], "lengths": [[], [0], [5], [True], [2.5], 4], "per_cell": COUNT, "seed": SEED, "gap": [True, -1, 1.5, 5]}),
    "mhattn.learn.circuits.gap_accuracy": (circuits.gap_accuracy, dict(model=_tiny_model(), gaps=[0, 2], lengths=[2, 3], num_sequences=4), {"model": [{}, None], "gaps": [[], [-1], [7], [1.5], [True], 3], "lengths": [[], [0], [True], [2.5], "ab"], "num_sequences": COUNT, "seed": SEED}),
    "mhattn.learn.circuits.previous_token_profile": (circuits.previous_token_profile, dict(model=_tiny_model(), num_sequences=4), {"model": [{}, None], "layer": INDEX + [2], "num_sequences": COUNT, "seed": SEED, "at_start": FLAG}),
    "mhattn.learn.circuits.offset_repeats": (circuits.offset_repeats, dict(rng=np.random.default_rng(0), batch_size=2, offset=1, half_len=2, vocab=6), {"rng": [0, np.random.RandomState(0)], "batch_size": COUNT, "offset": [True, -1, 1.5, 5], "half_len": COUNT + [6], "vocab": COUNT + [2]}),
    "mhattn.learn.circuits.prefix_matching_by_offset": (circuits.prefix_matching_by_offset, dict(model=_tiny_model(), half_len=2, num_sequences=2), {"model": [{}, None], "layer": INDEX + [2], "half_len": COUNT + [1, 5], "num_sequences": COUNT, "seed": SEED}),
    "mhattn.learn.circuits.composition_scores": (circuits.composition_scores, dict(model=_tiny_model(), kind="K"), {"model": [{}, None], "kind": ["k", "QK", 1, None], "layer0": INDEX + [1], "layer1": INDEX + [2]}),
    "mhattn.learn.circuits.composition_baseline": (circuits.composition_baseline, dict(d_model=4, rank=2, draws=3), {"d_model": COUNT, "rank": COUNT, "draws": COUNT, "seed": SEED}),
    "mhattn.learn.circuits.forward_without_key_path": (circuits.forward_without_key_path, dict(model=_tiny_model(), tokens=IDS8, heads=[0]), {"model": [{}, None, _tiny_model(1)], "tokens": spoil(IDS8, IDS) + [IDS8[0]], "heads": [0, [2], [-1], [1.5], [True]]}),
    "mhattn.learn.circuits.loss_report": (circuits.loss_report, dict(model=_tiny_model(), num_sequences=4), {"model": [{}, None, model.InductionModel(2, vocab=6, max_len=7, d_model=8, num_heads=2), model.InductionModel(2, vocab=6, max_len=16, d_model=8, num_heads=2)], "num_sequences": COUNT, "seed": SEED}),
    "mhattn.learn.generate.generate": (generate.generate, dict(model=_tiny_model(), prompt=[1, 2], num_tokens=3), {"model": [None, {}], "prompt": spoil(np.array([1, 2]), IDS) + [[]], "num_tokens": [True, 1.5, -1, 8, "3"], "temperature": BASE[:3] + [-1.0, "1"], "seed": SEED, "use_cache": FLAG}),
    "mhattn.learn.circuits.claims": (circuits.claims, dict(result=None), {"result": [None, {}, [1]]}),
    "mhattn.learn.several_heads.two_slot_batch": (several_heads.two_slot_batch, dict(rng=np.random.default_rng(0), batch_size=2), {"rng": [0], "batch_size": COUNT, "vocab": COUNT, "seq_len": COUNT}),
    "mhattn.learn.several_heads.TwoSlotModel": (several_heads.TwoSlotModel, dict(num_heads=2, vocab=6, seq_len=5, d_model=8), {"num_heads": COUNT + [3], "vocab": COUNT, "seq_len": COUNT + [2], "d_model": COUNT, "seed": SEED}),
    "mhattn.learn.several_heads.TwoSlotModel.forward": (lambda **kw: _slots().forward(**kw), dict(tokens=SLOT_TOKENS), {"tokens": spoil(SLOT_TOKENS, IDS) + [SLOT_TOKENS[:, :4], [[0, 1], [0]]]}),
    "mhattn.learn.several_heads.TwoSlotModel.check_tokens": "TwoSlotModel.forward's check itself (attacked there)",
    "mhattn.learn.several_heads.TwoSlotModel.parameters": NO_ARGUMENTS,
    "mhattn.learn.several_heads.TwoSlotModel.parameter_count": NO_ARGUMENTS,
    "mhattn.learn.several_heads.loss_and_grads": (several_heads.loss_and_grads, dict(model=_slots(), tokens=SLOT_TOKENS, targets=np.zeros((2, 3, 5), int)), {"model": [None], "tokens": spoil(SLOT_TOKENS, IDS), "targets": spoil(np.zeros((2, 3, 5), int), IDS)}),
    "mhattn.learn.several_heads.slot_accuracy": (several_heads.slot_accuracy, dict(model=_slots(), tokens=SLOT_TOKENS, targets=np.zeros((2, 3, 5), int)), {"model": [None], "tokens": spoil(SLOT_TOKENS, IDS), "targets": spoil(np.zeros((2, 3, 5), int), IDS)}),
    "mhattn.learn.several_heads.streams": (several_heads.streams, dict(seed=0), {"seed": SEED}),
    "mhattn.learn.several_heads.train": (several_heads.train, dict(num_heads=2, steps=1, batch_size=2), {"num_heads": COUNT + [3], "seed": SEED, "steps": COUNT, "batch_size": COUNT, "lr": BASE, "threads": COUNT}),
    "mhattn.learn.several_heads.evaluation_batch": (several_heads.evaluation_batch, dict(seed=0, num_sequences=2), {"seed": SEED, "num_sequences": COUNT, "vocab": COUNT, "seq_len": COUNT}),
    "mhattn.learn.several_heads.offset_profile": (several_heads.offset_profile, dict(weights=W4, max_offset=1), {"weights": spoil(W4, FLOATS), "max_offset": INDEX + [3]}),
    "mhattn.learn.several_heads.mean_weights": (several_heads.mean_weights, dict(model=_slots(), tokens=SLOT_TOKENS), {"model": [None], "tokens": spoil(SLOT_TOKENS, IDS)}),
    "mhattn.learn.several_heads.experiment": (several_heads.experiment, dict(head_counts=(1,), seeds=(0,), num_sequences=2, steps=1, batch_size=2), {"head_counts": [(), (0,), (1.5,), 3], "seeds": [(), (-1,), (True,)], "num_sequences": COUNT}),
    "mhattn.learn.several_heads.logits_with_weights": (several_heads.logits_with_weights, dict(model=_slots(), tokens=SLOT_TOKENS, weights=np.full((3, 2, 5, 5), 0.2)), {"model": [None], "tokens": spoil(SLOT_TOKENS, IDS), "weights": spoil(np.full((3, 2, 5, 5), 0.2), FLOATS)}),
    "mhattn.learn.several_heads.without_heads": (several_heads.without_heads, dict(model=_slots(), heads=[0]), {"model": [None], "heads": [1, [2], [-1], [1.5], [True]]}),
}

_MODEL_METHOD = lambda name: lambda **kw: getattr(_tiny_model(), name)(**kw)  # noqa: E731

DOORS |= {
    "mhattn.learn.model.InductionModel": (model.InductionModel, dict(num_layers=1, vocab=6, max_len=8, d_model=8, num_heads=2), {"num_layers": COUNT, "vocab": COUNT, "max_len": COUNT, "d_model": COUNT, "num_heads": COUNT + [3], "seed": SEED}),
    "mhattn.learn.model.InductionModel.forward": (_MODEL_METHOD("forward"), dict(tokens=IDS8), {"tokens": spoil(IDS8, IDS) + [np.zeros((1, 9), int), [[0, 1], [0]]], "ablate": [[(0, 2)], [(2, 0)], [(0,)], 3], "use_positions": FLAG}),
    "mhattn.learn.model.InductionModel.predict": (_MODEL_METHOD("predict"), dict(tokens=IDS8), {"tokens": spoil(IDS8, IDS)}),
    "mhattn.learn.model.InductionModel.check_tokens": "InductionModel.forward's check itself (attacked there)",
    "mhattn.learn.model.InductionModel.ablated_layers": (_MODEL_METHOD("ablated_layers"), dict(ablate=[(0, 0)]), {"ablate": [[(0, 2)], [(2, 0)], [(0, -1)], 3]}),
    "mhattn.learn.model.InductionModel.parameters": NO_ARGUMENTS,
    "mhattn.learn.model.InductionModel.save": "a path and extras: tests/test_checkpoints.py attacks names, values, folders, links and signals",
    "mhattn.learn.model.InductionModel.load": "a path: tests/test_checkpoints.py attacks the file's every entry",
    "mhattn.learn.model.load_trained": (model.load_trained, dict(num_layers=2), {"num_layers": [True, 3, 0, "2"]}),
    "mhattn.learn.model.encode_letters": (model.encode_letters, dict(text="ab"), {"text": [1, ["a"], "a1"]}),
    "mhattn.learn.model.load_shortcut": NO_ARGUMENTS,
    "mhattn.learn.model.decode_tokens": "any ints become text: ids without a letter are written <id>",
    "mhattn.learn.task.induction_batch": (task.induction_batch, dict(rng=np.random.default_rng(0), batch_size=2), {"rng": [0, None], "batch_size": COUNT, "vocab": COUNT, "max_len": COUNT + [1], "at_start": FLAG}),
    "mhattn.learn.task.repeated_positions": (task.repeated_positions, dict(n=np.array([3, 4]), max_len=16), {"n": spoil(np.array([3, 4]), ("text", "float", "masked", "negative", "rank")), "max_len": COUNT, "offset": [np.array([1, 2, 3]), -1, 1.5], "gap": [np.array([1, 2, 3]), -1, 1.5]}),
    "mhattn.learn.task.determined_positions": (task.determined_positions, dict(tokens=np.zeros((2, 8), dtype=int), n=np.array([2, 3])), {"tokens": spoil(np.zeros((2, 8), dtype=int), ("text", "float", "masked", "rank")) + [np.zeros((2, 1), dtype=int)], "n": [np.array([2]), np.array([2.0, 3.0]), np.array([-1, 2])], "offset": [-1, np.array([1, 2, 3])], "gap": [1.5, np.array([-2, 0])]}),
    "mhattn.learn.task.accuracy": (task.accuracy, dict(logits=np.zeros((2, 8, 4)), tokens=np.zeros((2, 8), dtype=int), n=np.array([2, 3])), {"logits": spoil(np.zeros((2, 8, 4)), FLOATS) + [np.zeros((2, 7, 4))], "tokens": spoil(np.zeros((2, 8), dtype=int), ("text", "float", "masked", "rank")), "n": [np.array([2]), np.array([2.5, 3.0])], "offset": [-1], "gap": [np.array([0, 0, 0])]}),
    "mhattn.learn.task.block_lengths": (task.block_lengths, dict(max_len=32), {"max_len": COUNT + [1]}),
    "mhattn.learn.task.length_probabilities": (task.length_probabilities, dict(max_len=32), {"max_len": COUNT + [1]}),
    "mhattn.learn.model.training_record": (model.training_record, dict(num_layers=2), {"num_layers": [True, 3, 0, "2"]}),
    "mhattn.learn.cli.machine": NO_ARGUMENTS,
    "mhattn.learn.task.layout": (task.layout, dict(rng=np.random.default_rng(0), n=np.array([2]), offset=np.array([1]), gap=np.array([0]), vocab=6, max_len=8), {"rng": [0, None], "n": spoil(np.array([2]), IDS), "offset": spoil(np.array([1]), ("text", "float", "masked", "negative", "rank")) + [np.array([1, 1])], "gap": spoil(np.array([0]), ("text", "float", "masked", "negative", "rank")), "vocab": COUNT + [1], "max_len": COUNT}),
    "mhattn.learn.train.loss_and_grads": (trainer.loss_and_grads, dict(model=_tiny_model(), tokens=np.zeros((2, 8), int), n=np.array([2, 3])), {"tokens": spoil(np.zeros((2, 8), int), IDS), "n": [np.array([0, 2]), np.array([2.0, 3.0]), np.array([5, 2])], "dtype": ["float16", "int"]}),
    "mhattn.learn.train.train": (trainer.train, dict(num_layers=1, steps=1, batch_size=2), {"num_layers": COUNT, "seed": SEED, "steps": COUNT, "lr": BASE, "batch_size": COUNT, "eval_every": COUNT, "progress": FLAG, "threads": COUNT, "dtype": ["float16"]}),
    "mhattn.learn.train.initial_model": (trainer.initial_model, dict(num_layers=1, seed=0), {"num_layers": COUNT, "seed": SEED}),
    "mhattn.learn.train.keep_freed_memory": NO_ARGUMENTS,
    "mhattn.learn.train.learning_rate_at": (trainer.learning_rate_at, dict(step=1, steps=10, lr=0.1), {"step": [True, 1.5, 0, 11, "1"], "steps": COUNT, "lr": BASE, "warmup": [True, -1, 1.5], "final_fraction": [True, float("nan"), -0.1, 1.5, "x"]}),
    "mhattn.learn.cli.main": "argv: every option is attacked through argparse in tests/test_train.py and test_cli_first_run.py",
    "mhattn.learn.cli.parse": "argv: every option is attacked through argparse in tests/test_train.py",
    "mhattn.learn.cli.parser": NO_ARGUMENTS,
    "mhattn.learn.cli.writable_out": "a path: the --out option (tests/test_train.py)",
    "mhattn.learn.cli.missing_extras": "a flag read from --quiet (tests/test_cli_first_run.py)",
    # the explorer and the pictures
    "mhattn.explorer.frame.compute_frame": (frame.compute_frame, dict(state=frame.State()), {"state": [{}, None], "model": [object(), 3]}),
    "mhattn.explorer.frame.check_state": (frame.check_state, dict(state=frame.State()), {"state": [{}, None]}),
    "mhattn.explorer.frame.State": "a frozen record of settings: check_state and compute_frame check it",
    "mhattn.explorer.frame.Frame": "a record of computed numbers, made by compute_frame",
    "mhattn.explorer.frame.parse_tokens": (frame.parse_tokens, dict(text="ab"), {"text:tokens": [1, "a", "a 1"]}),  # the setting
    "mhattn.explorer.frame.head_choices": "the explorer's menus: read from checked settings",
    "mhattn.explorer.frame.padded_length": "the explorer's menus: read from checked settings",
    "mhattn.explorer.frame.rope_available": NO_ARGUMENTS,
    "mhattn.explorer.frame.rope_fits": "the explorer's menus: read from checked settings",
    "mhattn.explorer.frame.position_choices": "the explorer's menus: read from checked settings",
    "mhattn.explorer.frame.random_tokens": "the explorer's own data: seed and sizes from a checked State",
    "mhattn.explorer.controls.LatestWins": (controls.LatestWins, dict(work=print), {"work": [None, 3], "background": FLAG}),
    "mhattn.explorer.controls.LatestWins.wait": (lambda **kw: controls.LatestWins(print).wait(**kw), dict(timeout=0.1), {"timeout": [True, "1", float("nan"), -1.0]}),
    "mhattn.pictures.exercises.exercise": (exercises.exercise, dict(number=1, crash_hint="a hint"), {"number": COUNT, "crash_hint": ["", None, 3]}),
    "mhattn.pictures.exercises.NotYet": "an exception: not_yet raises it, the checker that exercise() builds catches it",
    "mhattn.pictures.exercises.not_yet": "takes any value: only the placeholder ... is special",
}
DOORS["mhattn.explorer.draw.png_bytes"] = (draw.png_bytes, dict(rgb=np.zeros((2, 3, 3), np.uint8)), {"rgb": [
    np.zeros((2, 3, 3)), [[[0, 0, 0]]], np.zeros((2, 3, 4), np.uint8), np.zeros((0, 3, 3), np.uint8), np.zeros((2, 3), np.uint8)]})
DOORS["mhattn.explorer.draw.split_column"] = NO_ARGUMENTS
DOORS["mhattn.explorer.draw.part_widths"] = NO_ARGUMENTS
DOORS["mhattn.explorer.draw.FrameDrawing.png"] = NO_ARGUMENTS
PARTS_OF_THE_WIDGET = "the explorer's widget and drawing: they show a Frame that compute_frame checked"
for _name in ("explorer.draw.panel_layout", "explorer.draw.colormap", "explorer.draw.FrameDrawing",
              "explorer.draw.FrameDrawing.draw", "explorer.draw.FrameDrawing.min_font_px", "explorer.text.readout_html",
              "explorer.text.explanation_html", "explorer.controls.Explorer", "explorer.controls.Explorer.display_outputs",
              "explorer.controls.Explorer.static_copy_metadata", "explorer.controls.Explorer.current_state",
              "explorer.controls.Explorer.current_state_and_note",
              "explorer.controls.Explorer.update", "explorer.controls.explorer", "explorer.fixed.IntSlider",
              "explorer.fixed.BoundedIntText", "explorer.fixed.Dropdown", "explorer.fixed.ToggleButtons"):
    DOORS[f"mhattn.{_name}"] = PARTS_OF_THE_WIDGET + " (tests/test_widgets.py knocks on explorer())"
for _name in ("plots.plot_attention", "plots.plot_heads", "plots.plot_embedding_shift", "embedding_shift.embedding_shift_2d",
              "figures.save_figure", "source.show_source", "source.without_docstrings"):
    DOORS[f"mhattn.pictures.{_name}"] = "pictures: their doors are attacked in tests/test_plots.py and test_reliability_plots.py"

ATTACKS = [(name, argument, i, bad) for name, entry in DOORS.items() if not isinstance(entry, str)
           for argument, values in entry[2].items() for i, bad in enumerate(values)]


def test_every_public_callable_has_an_entry():
    found = set(public_callables())
    assert not found - set(DOORS), f"public callables without an entry in DOORS: {sorted(found - set(DOORS))}"
    assert not set(DOORS) - found, f"entries for callables that are gone: {sorted(set(DOORS) - found)}"


@pytest.mark.parametrize(("name", "argument", "i", "bad"), ATTACKS, ids=[f"{n}-{a}-{i}" for n, a, i, _ in ATTACKS])
def test_a_bad_argument_is_refused_by_name(name, argument, i, bad):
    function, good, _ = DOORS[name]
    argument, _, named = argument.partition(":")  # "text:tokens": the message names the explorer's setting
    with pytest.raises((TypeError, ValueError)) as error:
        function(**(good | {argument: bad}))
    assert (named or argument) in str(error.value), f"{name}({argument}={bad!r}): {error.value}"


@pytest.mark.parametrize("name", [n for n, e in DOORS.items() if not isinstance(e, str)])
def test_the_good_call_of_each_entry_works(name):
    function, good, _ = DOORS[name]
    function(**good) if name != "mhattn.learn.circuits.claims" else None
