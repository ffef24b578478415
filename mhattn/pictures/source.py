"""Show the package's own code inside a notebook, so the chapter never keeps a copy."""

import ast
import inspect
import textwrap

from ..checks.optional import require


def show_source(obj, *, docstring=False):
    """Display the source of a function, class or method from ``mhattn`` as highlighted code.

    The notebooks call this instead of pasting code: what the reader sees is the code the
    package runs, and nbval fails if the package changes without the notebook's stored
    output being refreshed. The docstrings are left out unless asked for: the code is what a
    listing is for, and the documentation stays one ``?`` away (``obj?`` in Jupyter).

    Parameters
    ----------
    obj : function, class or method
    docstring : bool, keyword only, default False
        Keep the docstrings.

    Returns
    -------
    IPython.display.Markdown
        A fenced Python block; JupyterLab and GitHub both render it highlighted.
    """
    if not isinstance(docstring, bool):
        raise TypeError(f"docstring must be True or False; got {docstring!r} of type {type(docstring).__name__}")
    try:
        source = inspect.getsource(obj)
    except TypeError:
        raise TypeError(f"obj must be a function, class or method with Python source; got {obj!r}") from None
    code = source if docstring else without_docstrings(source)
    return require("IPython.display").Markdown(f"```python\n{code.rstrip()}\n```")


def without_docstrings(source):
    """``source`` with the docstring of every function and class in it removed (whole lines)."""
    dedented = textwrap.dedent(source)
    drop = set()
    for node in ast.walk(ast.parse(dedented)):
        definition = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if definition and ast.get_docstring(node) is not None:
            first = node.body[0]
            drop.update(range(first.lineno - 1, first.end_lineno))
    lines = source.splitlines(keepends=True)
    return "".join(line for number, line in enumerate(lines) if number not in drop)
