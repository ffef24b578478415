"""Decoding with one KV cache per layer writes exactly what recomputing the whole prefix writes."""

import importlib
import re

import numpy as np
import pytest
from helpers import assert_refused_by_name, refusals

import mhattn
import mhattn.learn
from mhattn.learn.generate import generate
from mhattn.learn.letters import decode_tokens, encode_letters
from mhattn.learn.model import InductionModel

generation = importlib.import_module("mhattn.learn.generate")  # the module (mhattn.learn.generate is its door)


def logits_by_recomputing(model, prompt, written):
    """The next-token logits after every prefix, from the full forward pass."""
    sequence = np.concatenate([prompt, written])
    return [model.forward(sequence[: len(prompt) + i])[0][-1] for i in range(len(written))]


@pytest.mark.parametrize("num_layers", [1, 2])
def test_greedy_cached_decoding_equals_recomputing_the_prefix(num_layers):
    model = InductionModel(num_layers, seed=3)  # untrained: its choices are far from ties only by chance
    prompt = np.array([5, 1, 7, 2])
    cached = generate(model, prompt, 20)
    assert cached.tolist() == generate(model, prompt, 20, use_cache=False).tolist()
    for logits, token in zip(logits_by_recomputing(model, prompt, cached), cached, strict=True):
        assert token == int(np.argmax(logits))


def test_sampling_is_seeded_and_the_same_with_and_without_the_cache(model):
    prompt = encode_letters("a b c")
    runs = [generate(model, prompt, 25, temperature=1.5, seed=s).tolist() for s in (4, 4, 5)]
    assert runs[0] == runs[1] != runs[2]
    assert runs[0] == generate(model, prompt, 25, temperature=1.5, seed=4, use_cache=False).tolist()


def test_a_tiny_temperature_is_greedy(model):
    prompt = encode_letters("q w e r q w")
    assert generate(model, prompt, 6, temperature=1e-6, seed=1).tolist() == generate(model, prompt, 6).tolist()


def test_the_trained_model_continues_a_repeat(model):
    assert decode_tokens(generate(model, encode_letters("a b c d e a b"), 3)) == "c d e"


def test_generation_fills_the_context_and_no_further(model):
    prompt = encode_letters("a b c d")
    assert len(generate(model, prompt, 29)) == 29  # the last token is predicted at position 31
    with pytest.raises(ValueError, match=r"num_tokens must be in \[0, max_len \+ 1 - prompt_len = 29\]; got 30"):
        mhattn.learn.generate(model, prompt, 30)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"temperature": -1}, ValueError, "temperature must be a finite float >= 0; got -1.0"),
        ({"temperature": "hot"}, TypeError, "temperature must be a float >= 0; got 'hot'"),
        ({"seed": -1}, ValueError, "seed must be an int"),
        ({"use_cache": "yes"}, TypeError, "use_cache must be True or False"),
        ({"temperature": True}, TypeError, "temperature must be a float >= 0; got True"),  # True is not 1.0
        ({"temperature": "1.5"}, TypeError, "temperature must be a float >= 0; got '1.5'"),
        ({"temperature": float("nan")}, ValueError, "temperature must be a finite float >= 0; got nan"),
    ],
)
def test_generate_rejects_bad_arguments(model, kwargs, error, message):
    with pytest.raises(error, match=message):
        mhattn.learn.generate(model, [1, 2], 3, **kwargs)


def test_generate_rejects_a_batch_of_prompts(model):
    with pytest.raises(ValueError, match="prompt must be one sequence"):
        mhattn.learn.generate(model, [[1, 2], [3, 4]], 3)


@pytest.mark.parametrize(
    ("model_or_none", "prompt", "error", "message"),
    [
        (None, [1, 2], TypeError, "model must be an mhattn InductionModel; got None"),
        ("model", [1.5, 2], TypeError, "prompt must be integer ids"),
        ("model", [], ValueError, "prompt must be integer ids"),
        ("model", [1, 40], ValueError, "prompt must be integer ids in [0, 32)"),
    ],
)
def test_generate_names_the_model_and_the_prompt(model, model_or_none, prompt, error, message):
    with pytest.raises(error, match=re.escape(message)):
        mhattn.learn.generate(model if model_or_none == "model" else model_or_none, prompt, 3)


@pytest.mark.parametrize("temperature", [5e-324, 1e-310, 1e-300])
def test_a_subnormal_temperature_is_the_greedy_limit(model, temperature):
    """logits / 5e-324 overflowed to inf and inf - inf = NaN sampled token 0; the limit is the argmax."""
    prompt = encode_letters("q w e r q w")
    greedy = generate(model, prompt, 6).tolist()
    assert mhattn.learn.generate(model, prompt, 6, temperature=temperature, seed=1).tolist() == greedy


def test_at_a_vanishing_temperature_tied_best_tokens_share_the_draws():
    """The limit of softmax(logits / T) as T -> 0: uniform on the tied maxima, nothing elsewhere."""
    logits = np.array([1.0, 3.0, -2.0, 3.0])
    rng = np.random.default_rng(0)
    draws = [generation._choose(logits, 5e-324, rng) for _ in range(400)]
    assert set(draws) == {1, 3}
    assert abs(draws.count(1) - 200) < 6 * 10  # binomial(400, 1/2): standard deviation 10


# --- what a door refuses given the other arguments (each refusal names the argument) ---------------




REFUSED_GIVEN_THE_OTHERS = [  # (door, the arguments of a good call, the argument spoiled, its bad value)
    *refusals(
        mhattn.learn.generate,
        dict(model=mhattn.learn.InductionModel(2, vocab=6, max_len=8, d_model=8, num_heads=2, seed=0), prompt=[1, 2],
             num_tokens=3),
        prompt=[np.full((2,), np.str_('a')), np.random.default_rng(0).standard_normal((2,)),
                np.ma.masked_array(np.array([1, 2])), np.array([-999999, -999998]), np.array([1000001, 1000002]),
                np.array([[1, 2]])],
        num_tokens=[8, '3']),
]


@pytest.mark.parametrize(("door", "good", "argument", "bad"), REFUSED_GIVEN_THE_OTHERS)
def test_a_door_refuses_what_the_other_arguments_rule_out_and_names_it(door, good, argument, bad):
    assert_refused_by_name(door, good, argument, bad)
