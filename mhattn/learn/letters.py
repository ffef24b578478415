"""Letters for people: the induction model's token ids 0..25 written as a..z."""

import numpy as np

from ..checks.model import LETTERS


def encode_letters(text):
    """Token ids for a string of letters: ``"a b c d x a b c"`` -> ``[0, 1, 2, 3, 23, 0, 1, 2]``.

    Spaces are optional (``"abcdxabc"`` gives the same); upper case counts as lower case.
    Anything else raises ``ValueError`` naming it.

    Examples
    --------
    >>> encode_letters("a b c x")
    array([ 0,  1,  2, 23])
    """
    return np.array([LETTERS.index(c) for c in "".join(text.lower().split())], dtype=np.int64)


def decode_tokens(tokens):
    """Letters for token ids, space separated: ``[0, 1, 27]`` -> ``"a b <27>"`` (ids >= 26 have no letter).

    Examples
    --------
    >>> decode_tokens(np.array([0, 1, 27]))
    'a b <27>'
    """
    return " ".join(LETTERS[t] if 0 <= t < len(LETTERS) else f"<{t}>" for t in np.asarray(tokens).tolist())
