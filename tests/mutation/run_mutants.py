# ruff: noqa: E501  (the mutants: one line each, the code as it reads)
"""Mutation run over the doors: apply one realistic mutant at a time, run the tests that guard it, count the kills.

    python tests/mutation/run_mutants.py            # every mutant
    python tests/mutation/run_mutants.py 3 7        # mutants 3 and 7 only

Each mutant is a single edit (a flipped comparison, a dropped check, an off-by-one, a swapped
axis) to a module the door tests cover. A mutant is killed when its tests fail. The source
file is restored after every mutant, also on Ctrl-C. Not collected by pytest (no test_ prefix).
"""

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

GRAD = ["tests/core/test_grad_doors.py"]
ROPE = ["tests/core/test_rope_range.py", "tests/core/test_grad_doors.py"]
CIRCUITS = ["tests/learn/test_circuits_doors.py"]
SLOTS = ["tests/learn/test_circuits_doors.py"]
ADAM = ["tests/learn/test_optim.py"]
CHECKPOINT = ["tests/learn/test_checkpoints.py"]
CHECKPOINT_FILES = ["tests/learn/test_checkpoint_files.py"]
DOORS = ["tests/test_doors.py"]
MASKED = ["tests/core/test_masked_inputs.py"]
EXPLORER = ["tests/explorer/test_explorer_doors.py"]
CACHE = ["tests/engine/test_kv_cache_threads.py"]

MUTANTS = [  # (file, original text, mutated text, tests)
    ("mhattn/checks/grad.py", "if d_x.shape[-1] % num_heads:", "if False:", GRAD + DOORS),
    ("mhattn/checks/grad.py", "ndim(\"d_heads\", d_heads, 4,", "ndim(\"d_heads\", d_heads, d_heads.ndim,", GRAD),
    ("mhattn/checks/grad.py", "_same_shape(\"d_weights\", d_weights, \"weights\", weights.shape)", "pass", GRAD),
    ("mhattn/checks/grad.py", "if x.shape[-1] != W.shape[0]:", "if x.shape[-1] != W.shape[1]:", GRAD),
    ("mhattn/checks/grad.py", "if d_repeated.shape[1] % group:", "if d_repeated.shape[0] % group:", GRAD),
    ("mhattn/checks/grad.py", "positions = position_array(positions, d_rotated.shape[-2])",
     "positions = np.asarray(positions)", ROPE),
    ("mhattn/checks/grad.py", "def _real(name, value, at_least=1):\n    \"\"\"``value`` as a finite float array of at least ``at_least`` axes.\"\"\"\n    array = real_array(name, value)\n    if array.ndim < at_least:\n        raise ValueError(f\"{name} must have at least {at_least} axes; got shape {array.shape}\")\n    return finite(name, array)",
     "def _real(name, value, at_least=1):\n    return real_array(name, value)", GRAD),
    ("mhattn/checks/positions.py", "int(array.max()) <= LARGEST_POSITION", "int(array.max()) <= 2**63 - 1", ROPE),
    ("mhattn/checks/positions.py", "-LARGEST_POSITION <= int(array.min())", "-(2**63) <= int(array.min())", ROPE),
    ("mhattn/core/positions.py", "return np.dtype(np.longdouble) if dtype == np.longdouble else", "return np.dtype(np.float64) if dtype == np.longdouble else", ROPE),
    ("mhattn/checks/values.py", "    if isinstance(value, np.ma.MaskedArray):\n        raise TypeError(\n            f\"{name} must be a plain ndarray",
     "    if False:\n        raise TypeError(\n            f\"{name} must be a plain ndarray", MASKED),
    ("mhattn/checks/values.py", "if array.dtype.kind not in \"iuf\":", "if array.dtype.kind not in \"iufU\":", DOORS),
    ("mhattn/checks/learning.py", "if weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2:", "if weights.shape[-1] < 2:", DOORS),
    ("mhattn/checks/learning.py", "    return finite(name, array)\n\n\ndef attention_weights", "    return array\n\n\ndef attention_weights", CIRCUITS + DOORS),
    ("mhattn/checks/learning.py", "if vocab is not None and array.size and (array.min() < 0 or array.max() >= vocab):",
     "if vocab is not None and array.size and (array.min() < -vocab or array.max() >= vocab):", CIRCUITS + DOORS),
    ("mhattn/checks/learning.py", "array.max() >= vocab):\n        raise ValueError(f\"{name} must lie in",
     "array.max() > vocab):\n        raise ValueError(f\"{name} must lie in", CIRCUITS + DOORS),
    ("mhattn/checks/circuits_in_context.py", "    if not 1 <= value < seq_len:", "    if not 0 <= value < seq_len:", CIRCUITS),
    ("mhattn/checks/circuits_in_context.py", "    if max_len < 3:", "    if max_len < 1:", CIRCUITS),
    ("mhattn/checks/circuits_weights.py", "    if layer0 >= layer1:", "    if layer0 > layer1:", DOORS),
    ("mhattn/checks/learning.py", "    for name, parameter in value.parameters().items():", "    for name, parameter in {}.items():", CIRCUITS),
    ("mhattn/checks/circuits_weights.py", "    if not np.abs(np.linalg.eigvals(ov)).sum() > 0:", "    if False:", CIRCUITS + DOORS),
    ("mhattn/checks/circuits_weights.py", "layer_head(model, layer, head)\n    return {\"model\"", "(layer, head)\n    return {\"model\"", CIRCUITS + DOORS),
    ("mhattn/checks/training_heads.py", "int_array(\"targets\", targets, (2,) + tokens.shape, model.vocab)",
     "int_array(\"targets\", targets, (2,) + tokens.shape)", SLOTS),
    ("mhattn/learn/in_context.py", "min(round(max_len * 500 / 512), max_len - 1)", "min(round(max_len * 500 / 512), max_len)", CIRCUITS),
    ("mhattn/learn/experiments.py", "*icl_tokens(repeated.shape[1])", "*icl_tokens(model.max_len)", CIRCUITS),
    ("mhattn/learn/experiments.py", "half_len = min(model.max_len // 2, model.vocab)", "half_len = model.max_len // 2 + 1", CIRCUITS),
    ("mhattn/learn/weight_circuits.py", "return float(eigenvalues.sum().real / total) if total > 0 else float(\"nan\")",
     "return float(eigenvalues.sum().real / max(total, 1e-300))", CIRCUITS),
    ("mhattn/checks/circuits_weights.py", "            if not np.abs(matrix).max() > 0:\n                raise ValueError(f\"head {head} of layer",
     "            if False:\n                raise ValueError(f\"head {head} of layer", CIRCUITS),
    ("mhattn/checks/training.py", "    if not 0 <= value < 1:", "    if not 0 <= value <= 1:", ADAM),
    ("mhattn/checks/training.py", "    if not (math.isfinite(eps) and eps > 0):", "    if not math.isfinite(eps):", ADAM),
    ("mhattn/checks/training.py", "    if not isinstance(grads, dict):\n", "    return {\"self\": self, \"grads\": grads}, None\n    if not isinstance(grads, dict):\n", ADAM),
    ("mhattn/checks/training.py", "        checked[name] = finite(f\"grads[{name!r}]\", g)", "        checked[name] = g", ADAM),
    ("mhattn/checks/training.py", "        if g.shape != p.shape:", "        if g.ndim != p.ndim:", ADAM),
    ("mhattn/checks/checkpoint_write.py", "        arrays[f\"layer{i}.rope\"], arrays[f\"layer{i}.rope_base\"] = np.array(pairing), np.array(float(base))",
     "        arrays[f\"layer{i}.rope\"], arrays[f\"layer{i}.rope_base\"] = np.array(\"none\"), np.array(float(base))", CHECKPOINT),
    ("mhattn/checks/checkpoint_write.py", "        if unknown:\n            raise ValueError(f\"save: layer{i} has",
     "        if False:\n            raise ValueError(f\"save: layer{i} has", CHECKPOINT),
    ("mhattn/checks/checkpoint_write.py", "        if array.dtype.kind not in \"biuf\":", "        if array.dtype.kind not in \"biufSU\":", CHECKPOINT),
    ("mhattn/checks/checkpoint_write.py", "or name in _SAVEZ_KEYWORDS:", ":", CHECKPOINT),
    ("mhattn/checks/checkpoint_write.py", "            os.replace(temporary, target)", "            os.replace(temporary, os.path.abspath(path))", CHECKPOINT),
    ("mhattn/checks/checkpoint_write.py", "                if mode is not None:\n                    os.fchmod", "                if False:\n                    os.fchmod", CHECKPOINT),
    ("mhattn/checks/checkpoint_write.py", "        self.previous = None\n        if threading", "        self.previous = None\n        if False and threading", CHECKPOINT),
    ("mhattn/checks/links.py", "    name = path if path.endswith(\".npz\") else path + \".npz\"",
     "    name = path if path.endswith(\".npz\") or os.path.isfile(path) else path + \".npz\"", CHECKPOINT_FILES),
    ("mhattn/checks/checkpoint.py", "            if not CANONICAL_LAYER.fullmatch(match.group(1)):", "            if False:", CHECKPOINT),
    ("mhattn/checks/checkpoint_read.py", "        if sizes[size] < 1:", "        if sizes[size] < 0:", CHECKPOINT),
    ("mhattn/checks/explorer.py", "    fields[\"layer\"] = index(\"layer\", fields[\"layer\"], TRAINED_LAYERS if model is None else len(model.layers))",
     "    fields[\"layer\"] = index(\"layer\", fields[\"layer\"], TRAINED_LAYERS)", EXPLORER),
    ("mhattn/checks/explorer.py", "    if max(ids) >= vocab:", "    if max(ids) > vocab:", EXPLORER),
    ("mhattn/checks/explorer.py", "    if fields[\"trained\"] or unused:", "    if True:", EXPLORER),
    ("mhattn/engine/flash.py", "    largest = np.maximum(V.max(initial=0), -V.min(initial=0)).astype(dtype)",
     "    largest = float(np.maximum(V.max(initial=0), -V.min(initial=0)))", MASKED),
    ("mhattn/engine/kv_cache.py", "        self._keys, self._values, self._length, self._owner = keys, values, length, owner", "        pass", CACHE),
]


def run(number, mutant):
    path, original, mutated, tests = mutant
    file = ROOT / path
    source = file.read_text(encoding="utf-8")
    if source.count(original) != 1:
        return "stale"  # the code changed: the mutant no longer applies
    file.write_text(source.replace(original, mutated), encoding="utf-8")
    try:
        env = os.environ | {"OPENBLAS_NUM_THREADS": "1"}
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-k", "not test_the_good_call", *tests],
                                cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
        return "killed" if result.returncode != 0 else "survived"
    finally:
        file.write_text(source, encoding="utf-8")


def main(argv):
    chosen = [int(a) for a in argv] or range(len(MUTANTS))
    outcomes = {}
    for number in chosen:
        start = time.perf_counter()
        outcomes[number] = run(number, MUTANTS[number])
        path, original = MUTANTS[number][:2]
        print(f"{number:3d} {outcomes[number]:8s} {time.perf_counter() - start:5.1f} s  {path}: {original[:60]!r}",
              flush=True)
    applied = [o for o in outcomes.values() if o != "stale"]
    killed = applied.count("killed")
    print(f"killed {killed} of {len(applied)} mutants ({100 * killed / max(len(applied), 1):.0f} %); "
          f"{len(outcomes) - len(applied)} stale")
    return 0 if killed == len(applied) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
