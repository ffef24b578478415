"""The doors: every argument check of the package, and the one door that runs them.

The package shows a *surface*: the names in the ``__all__`` of :mod:`mhattn` and of its public
subpackages (:mod:`mhattn.engine`, :mod:`mhattn.learn`, :mod:`mhattn.pictures`,
:mod:`mhattn.explorer`). Every call through the surface is checked, whoever makes it, so that a
mistake ends in a ``ValueError`` or ``TypeError`` naming the argument, what was expected and
what arrived, never in NumPy's broadcasting message deep inside a matmul:

- a free function is shown as ``door(plain_function, its_check)`` in its package's
  ``__init__``; the plain function stays in its own module, and the package's own code calls
  that one, unchecked;
- a public class checks in its public methods, each carrying ``@checked(its_check)``.

What a door does, in order (:mod:`.door`): the check normalises the arguments (lists become
arrays, integers float64, float16 float32) and names the result's dtype; the plain code runs
with NumPy's floating-point warnings silenced; the result is checked, so finite inputs that
overflow raise ``FloatingPointError`` instead of returning NaN. Nothing here reads the call
stack: a door never asks who is calling.

What lives where (this package imports only NumPy and itself; everything else imports it):

- :mod:`.door`: :func:`door`, :func:`checked`, :func:`moves_numbers`;
- :mod:`.values`: single values and arrays (ints, flags, seeds, dtypes, masks, the one
  overflow message);
- :mod:`.layers`, :mod:`.positions`, :mod:`.module`: the arguments of the teaching path;
- :mod:`.model`: the induction model's doors; :mod:`.links`, :mod:`.checkpoint`,
  :mod:`.checkpoint_read` and :mod:`.checkpoint_write`: its checkpoint files;
- :mod:`.optional`: optional dependencies, imported when first used.
"""

from .checkpoint import expected_shapes
from .checkpoint_read import read_checkpoint
from .checkpoint_write import save_args, write_atomic
from .door import checked, door, moves_numbers
from .layers import attention_args, combine_heads_args, dropout, scores_fit, softmax_args, split_heads_args
from .links import checkpoint_path
from .model import (
    ablate,
    decode_tokens_args,
    encode_letters_args,
    load_shortcut_args,
    load_trained_args,
    parameters,
    scored_batch,
    tokens,
    training_record_args,
)
from .module import MODULE_MASK_LAYOUTS, head_counts, module_mask, weight
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
