"""Show the package's own code inside a notebook, so the chapter never keeps a copy."""

import ast
import inspect
import textwrap

from ..checks.optional import require

#: the decorators that put a door on a method: what a listing leaves out (the check is one ``?`` away)
DOOR_DECORATORS = ("checked", "moves_numbers")


def show_source(obj, *, docstring=False):
    """Display the source of a function, class or method from ``mhattn`` as highlighted code.

    The notebooks call this instead of pasting code: what the reader sees is the code the
    package runs, and nbval fails if the package changes without the notebook's stored
    output being refreshed. A listing shows what the code does: the plain function behind a
    door (``__wrapped__``), without the ``@checked(...)`` lines that check a method's
    arguments, without a class's ``__repr__`` (how it prints), and without docstrings unless
    asked for. The documentation and the checks stay one ``?`` away (``obj?`` in Jupyter).

    Parameters
    ----------
    obj : function, class or method
    docstring : bool, keyword only, default False
        Keep the docstrings.

    Returns
    -------
    IPython.display.Markdown
        A fenced Python block; JupyterLab and GitHub both render it highlighted.

    Examples
    --------
    >>> listing = show_source(without_docstrings)  # an IPython Markdown object
    >>> listing.data.splitlines()[:2]
    ['```python', 'def without_docstrings(source):']
    """
    source = without_reprs(without_door_decorators(inspect.getsource(inspect.unwrap(obj))))
    code = source if docstring else without_docstrings(source)
    return require("IPython.display").Markdown(f"```python\n{code.rstrip()}\n```")


def _definitions(source):
    """Every function and class defined in ``source`` (which may be indented, a method's)."""
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node


def _without_lines(source, drop):
    lines = source.splitlines(keepends=True)
    return "".join(line for number, line in enumerate(lines) if number not in drop)


def without_docstrings(source):
    """``source`` with the docstring of every function and class in it removed (whole lines).

    A class's docstring goes with the blank line after it, which separated it from the methods.
    """
    drop, lines = set(), source.splitlines()
    for node in _definitions(source):
        if ast.get_docstring(node) is not None:
            first = node.body[0]
            drop.update(range(first.lineno - 1, first.end_lineno))
            if isinstance(node, ast.ClassDef) and first.end_lineno < len(lines) and not lines[first.end_lineno].strip():
                drop.add(first.end_lineno)
    return _without_lines(source, drop)


def without_reprs(source):
    """``source`` without the ``__repr__`` methods of its classes, and the blank line before each (whole lines)."""
    drop, lines = set(), source.splitlines()
    for node in _definitions(source):
        if isinstance(node, ast.FunctionDef) and node.name == "__repr__" and node.col_offset > 0:
            start = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list]) - 1
            drop.update(range(start, node.end_lineno))
            if start > 0 and not lines[start - 1].strip():
                drop.add(start - 1)
    return _without_lines(source, drop)


def without_door_decorators(source):
    """``source`` without the ``@checked(...)`` (and ``@moves_numbers(...)``) decorators (whole lines)."""
    drop = set()
    for node in _definitions(source):
        for decorator in node.decorator_list:
            call = decorator.func if isinstance(decorator, ast.Call) else decorator
            name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", None)
            if name in DOOR_DECORATORS:
                drop.update(range(decorator.lineno - 1, decorator.end_lineno))
    return _without_lines(source, drop)
