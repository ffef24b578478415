"""The doors: every argument check of the package, and the one decorator, kept out of the teaching code.

Every public function of the teaching path carries one decorator line,
``@checked(some_args)``. The decorator validates the arguments *once*, at the package's
boundary, so that a beginner's mistake ends in a ``ValueError`` or ``TypeError`` naming the
argument, what was expected and what arrived, never in NumPy's broadcasting message deep
inside a matmul. What it does, in order:

1. ``some_args(**arguments)`` checks and normalises the arguments (lists become arrays,
   integers become float64, float16 becomes float32) and says in which dtype the result
   goes back (float16 in, float16 out: computed in float32, as PyTorch does on the CPU);
2. the function runs, with NumPy's floating-point warnings silenced, because
3. the result is checked instead: finite inputs that give a non-finite result overflowed
   (scores beyond float32's 3.4e38, say), and that is a ``FloatingPointError`` saying so,
   never a silent NaN.

A layer of the chapter calling another (``softmax`` inside attention, ``split_heads`` inside
the module, the engine's tiles) skips all three steps: its arguments were made by a layer
that was itself checked. Trust follows the folder (:func:`trusted`): a call from any module
of ``mhattn.core`` or ``mhattn.engine`` is trusted, whatever the module is called.
Everything else is checked, because its arguments come from a caller: user code, and the
package's public objects built on the layers (the model, the trainer, the explorer), whose
inputs (tokens, a checkpoint's weights) arrive from outside. Those objects also check at
their own door, so their errors name their own arguments. The rule reads the calling
module's name, never state, so threads and user code that runs inside a call (a subclass's
hook, a cache) cannot see or change it. One more duty: if a call that extended a KV cache
fails (an overflow, a KeyboardInterrupt), the cache is put back as it was, so a retry does
not cache twice; the cache does that itself (:meth:`mhattn.KVCache.undo_on_error`), and the
door only runs the call inside it.

What lives where (this package imports only NumPy and itself; everything else imports it):

- :mod:`.door`: :func:`checked`, :func:`moves_numbers` and the trust rule;
- :mod:`.values`: single values and arrays (ints, flags, seeds, dtypes, masks, the one
  overflow message);
- :mod:`.layers`, :mod:`.positions`, :mod:`.module`: the arguments of the teaching path;
- :mod:`.model`: the induction model's doors and its checkpoint files;
- :mod:`.optional`: optional dependencies, imported when first used.
"""

from .door import TRUSTED_LAYERS, checked, moves_numbers, trusted
from .layers import attention_args, combine_heads_args, dropout, scores_fit, softmax_args, split_heads_args
from .model import (
    ablate,
    check_extra,
    checkpoint_arrays,
    checkpoint_path,
    expected_shapes,
    history,
    layer_settings,
    parameters,
    read_checkpoint,
    scored_batch,
    tokens,
    write_atomic,
)
from .module import (
    MODULE_MASK_LAYOUTS,
    forward_args,
    head_counts,
    module_mask,
    separate_weights,
    torch_attention,
    weight,
)
from .optional import require
from .positions import (
    angles_args,
    batch_positions,
    count,
    module_positions,
    order_args,
    position_array,
    rope_args,
    rope_base_value,
    rope_pairing,
    rope_settings,
    sinusoidal_args,
)
from .values import (
    MASK_LAYOUTS,
    axis_index,
    compute_dtype,
    finite,
    flag,
    float_dtype,
    index,
    integer,
    learning_rate,
    mask_array,
    ndim,
    number_array,
    overflow_error,
    positive_int,
    real_array,
    real_number,
    seed,
    wider_dtype_hint,
)
