"""What every exercise checker of the chapter shares: the placeholder, a crash turned into a hint, "correct".

A checker in a notebook keeps its own assertions (what is right, and what each wrong
answer tells), and gets the rest from one decorator::

    @exercise(2, crash_hint="my_attention should return (output, weights)")
    def check_exercise_2(function):
        out, weights = function(Q, K, V)     # `not_yet(...)` below turns `...` into "not yet"
        assert out.shape == (2, 3, 4, 6), "output should have shape ..."

The decorated checker returns ``"Exercise 2: correct."``, or ``"Exercise 2: not yet. ..."``
while the reader's answer (or what their function returns) is still ``...``; a wrong answer
raises ``AssertionError`` with the checker's hint, and an answer that crashes (``ValueError``,
``TypeError``, ``IndexError``, ``AttributeError``) raises ``AssertionError`` with ``crash_hint``
instead of a traceback.
"""

import functools

CRASHES = (ValueError, TypeError, IndexError, AttributeError, KeyError)  #: a near miss, not a bug of the checker


class NotYet(Exception):  # noqa: N818 - a signal that the reader has not answered, not an error
    """The reader has not answered yet: the answer is still the placeholder ``...``.

    Examples
    --------
    >>> answer = ...  # what an exercise cell holds until the reader fills it in
    >>> try:
    ...     not_yet(answer)
    ... except NotYet:
    ...     print("not answered yet")
    not answered yet
    """


def not_yet(value):
    """``value``, or :class:`NotYet` if it is the placeholder ``...`` (a function that returns ``...`` too).

    Examples
    --------
    >>> not_yet("my answer")  # any answer but the placeholder comes back as it is
    'my answer'
    >>> try:
    ...     not_yet(...)
    ... except NotYet:
    ...     print("not answered yet")
    not answered yet
    """
    if value is ...:
        raise NotYet
    return value


def exercise(number, *, crash_hint):
    """Decorator for ``check(answer)``: the shared scaffolding around an exercise's own assertions.

    Examples
    --------
    >>> import numpy as np
    >>> @exercise(1, crash_hint="my_softmax should take an array and return one of its shape")
    ... def check_exercise_1(my_softmax):
    ...     assert np.allclose(my_softmax(np.zeros(2)), 0.5), "two equal scores should get 0.5 each"
    >>> check_exercise_1(lambda scores: np.exp(scores) / np.exp(scores).sum())
    'Exercise 1: correct.'
    >>> check_exercise_1(...)
    'Exercise 1: not yet. Replace the ... with your answer and run the cell again.'
    """

    def decorate(check):
        @functools.wraps(check)
        def run(answer):
            try:
                check(not_yet(answer))
            except NotYet:
                return f"Exercise {number}: not yet. Replace the ... with your answer and run the cell again."
            except CRASHES as error:  # a near miss that crashes gets a hint, not a traceback
                raise AssertionError(
                    f"Exercise {number}: your answer raised {type(error).__name__}: {error}. {crash_hint}"
                ) from None
            except AssertionError as error:
                raise AssertionError(f"Exercise {number}: {error}") from None
            return f"Exercise {number}: correct."

        return run

    return decorate
