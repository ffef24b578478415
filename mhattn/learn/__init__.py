"""The learning code: models that train with the teaching path's own backward pass.

- :mod:`.losses` (cross-entropy) and :mod:`.optim` (Adam);
- :mod:`.several_heads` -- what two heads learn that one cannot;
- :mod:`.task` -- the induction task: sequences with a repeated block, and where to score them;
- :mod:`.model` -- the attention-only transformer of the induction notebook and its checkpoints;
- :mod:`.train` and :mod:`.cli` -- its training loop and ``python -m mhattn.train``;
- what its heads do, measured as the interpretability literature does (Elhage et al. 2021,
  Olsson et al. 2022): :mod:`.attention_patterns` (previous-token and prefix-matching scores),
  :mod:`.weight_circuits` (QK and OV circuits, copying and composition scores),
  :mod:`.in_context` (per-token losses, the in-context learning score) and
  :mod:`.experiments` (ablations, the key path, accuracy over offsets and gaps) and
  :mod:`.path_ablation` (what layer 1's queries, keys or values read from layer 0).

The names below are this package's surface: each function is shown behind its door (its
arguments checked, then the plain function of the same name in its module runs). The
package's own code imports the plain functions from the modules. It uses the teaching path
(:mod:`mhattn.core`), the engine and the checks; nothing in the teaching path or the engine
imports it.
"""

from .. import checks
from ..checks import (
    circuits_experiments,
    circuits_in_context,
    circuits_patterns,
    circuits_weights,
    training,
    training_heads,
    training_task,
)
from ..checks.door import door
from . import (
    attention_patterns,
    experiments,
    head_probes,
    in_context,
    letters,
    losses,
    several_heads,
    shipped,
    task,
    weight_circuits,
)
from . import generate as _generate
from . import path_ablation as _path_ablation
from . import train as _train
from .model import InductionModel
from .optim import Adam
from .several_heads import TwoSlotModel

previous_token_score = door(attention_patterns.previous_token_score, circuits_patterns.previous_token_args)
segments = door(attention_patterns.segments, circuits_patterns.segments_args)
prefix_matching_score = door(attention_patterns.prefix_matching_score, circuits_patterns.prefix_matching_args)
repeated_random_tokens = door(attention_patterns.repeated_random_tokens, circuits_patterns.repeated_tokens_args)
offset_repeats = door(attention_patterns.offset_repeats, circuits_patterns.offset_repeats_args)
previous_token_profile = door(attention_patterns.previous_token_profile, circuits_patterns.previous_token_profile_args,
                              results_finite=False)
prefix_matching_by_offset = door(attention_patterns.prefix_matching_by_offset,
                                 circuits_patterns.prefix_matching_by_offset_args)
head_weights = door(weight_circuits.head_weights, circuits_weights.head_args)
ov_circuit = door(weight_circuits.ov_circuit, circuits_weights.head_args)
qk_circuit = door(weight_circuits.qk_circuit, circuits_weights.qk_args)
copying_score = door(weight_circuits.copying_score, circuits_weights.copying_args)
composition_score = door(weight_circuits.composition_score, circuits_weights.composition_args)
composition_scores = door(weight_circuits.composition_scores, circuits_weights.composition_scores_args)
k_composition_scores = door(weight_circuits.k_composition_scores, circuits_weights.k_composition_args)
composition_ceiling = door(weight_circuits.composition_ceiling, circuits_weights.composition_args)
composition_ceilings = door(weight_circuits.composition_ceilings, circuits_weights.composition_scores_args)
composition_baseline = door(weight_circuits.composition_baseline, circuits_weights.composition_baseline_args)
token_losses = door(in_context.token_losses, circuits_in_context.token_loss_args)
in_context_learning_score = door(in_context.in_context_learning_score, circuits_in_context.icl_args)
icl_tokens = door(in_context.icl_tokens, circuits_in_context.icl_tokens_args)
mid_context_token = door(in_context.mid_context_token, circuits_in_context.icl_tokens_args)
induction_loss = door(in_context.induction_loss, circuits_in_context.induction_loss_args)
loss_report = door(in_context.loss_report, circuits_in_context.loss_report_args)
forward_without_key_path = door(experiments.forward_without_key_path, circuits_experiments.key_path_args)
offset_gap_accuracy = door(experiments.offset_gap_accuracy, circuits_experiments.offset_gap_accuracy_args,
                           results_finite=False)
path_ablation = door(_path_ablation.path_ablation, circuits_experiments.path_ablation_args)
offset_accuracy = door(experiments.offset_accuracy, circuits_experiments.offset_accuracy_args, results_finite=False)
gap_accuracy = door(experiments.gap_accuracy, circuits_experiments.gap_accuracy_args)
measure = door(experiments.measure, circuits_experiments.measure_args)
claims = door(experiments.claims, circuits_experiments.claims_args)
load_trained = door(shipped.load_trained, checks.load_trained_args)
load_shortcut = door(shipped.load_shortcut, checks.load_shortcut_args)
training_record = door(shipped.training_record, checks.training_record_args)
encode_letters = door(letters.encode_letters, checks.encode_letters_args)
decode_tokens = door(letters.decode_tokens, checks.decode_tokens_args)
cross_entropy = door(losses.cross_entropy, training.cross_entropy_args)
loss_and_grads = door(_train.loss_and_grads, training.loss_and_grads_args)
learning_rate_at = door(_train.learning_rate_at, training.schedule_args)
train = door(_train.train, training.train_args)
initial_model = door(_train.initial_model, training.initial_model_args)
generate = door(_generate.generate, training.generate_args)
induction_batch = door(task.induction_batch, training_task.induction_batch_args, results_finite=False)
layout = door(task.layout, training_task.layout_args, results_finite=False)
block_lengths = door(task.block_lengths, training_task.block_lengths_args, results_finite=False)
length_probabilities = door(task.length_probabilities, training_task.block_lengths_args)
repeated_positions = door(task.repeated_positions, training_task.repeated_positions_args, results_finite=False)
determined_positions = door(task.determined_positions, training_task.determined_positions_args, results_finite=False)
accuracy = door(task.accuracy, training_task.task_accuracy_args, results_finite=False)
two_slot_batch = door(several_heads.two_slot_batch, training_heads.two_slot_batch_args, results_finite=False)
slot_loss_and_grads = door(several_heads.loss_and_grads, training_heads.slot_batch_args)
slot_accuracy = door(head_probes.slot_accuracy, training_heads.slot_batch_args)
streams = door(several_heads.streams, training_heads.streams_args, results_finite=False)
train_heads = door(several_heads.train, training_heads.heads_train_args)
evaluation_batch = door(head_probes.evaluation_batch, training_heads.evaluation_batch_args, results_finite=False)
offset_profile = door(head_probes.offset_profile, training_heads.offset_profile_args)
mean_weights = door(head_probes.mean_weights, training_heads.model_tokens_args)
experiment = door(head_probes.experiment, training_heads.experiment_args, results_finite=False)
logits_with_weights = door(head_probes.logits_with_weights, training_heads.logits_with_weights_args)
without_heads = door(head_probes.without_heads, training_heads.without_heads_args, results_finite=False)

__all__ = [
    "Adam",
    "InductionModel",
    "TwoSlotModel",
    "accuracy",
    "block_lengths",
    "claims",
    "composition_baseline",
    "composition_ceiling",
    "composition_ceilings",
    "composition_score",
    "composition_scores",
    "copying_score",
    "cross_entropy",
    "decode_tokens",
    "determined_positions",
    "encode_letters",
    "evaluation_batch",
    "experiment",
    "forward_without_key_path",
    "gap_accuracy",
    "generate",
    "head_weights",
    "icl_tokens",
    "in_context_learning_score",
    "induction_batch",
    "induction_loss",
    "initial_model",
    "k_composition_scores",
    "layout",
    "learning_rate_at",
    "length_probabilities",
    "load_shortcut",
    "load_trained",
    "logits_with_weights",
    "loss_and_grads",
    "loss_report",
    "mean_weights",
    "measure",
    "mid_context_token",
    "offset_accuracy",
    "offset_gap_accuracy",
    "offset_profile",
    "offset_repeats",
    "ov_circuit",
    "path_ablation",
    "prefix_matching_by_offset",
    "prefix_matching_score",
    "previous_token_profile",
    "previous_token_score",
    "qk_circuit",
    "repeated_positions",
    "repeated_random_tokens",
    "segments",
    "slot_accuracy",
    "slot_loss_and_grads",
    "streams",
    "token_losses",
    "train",
    "train_heads",
    "training_record",
    "two_slot_batch",
    "without_heads",
]
