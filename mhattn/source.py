"""Show the package's own code inside a notebook, so the chapter never keeps a copy."""

import inspect

from IPython.display import Markdown


def show_source(obj):
    """Display the source of a function or class from ``mhattn`` as highlighted code.

    The notebooks call this instead of pasting code: what the reader sees is the code the
    package runs, and nbval fails if the package changes without the notebook's stored
    output being refreshed.

    Parameters
    ----------
    obj : function, class or method

    Returns
    -------
    IPython.display.Markdown
        A fenced Python block; JupyterLab and GitHub both render it highlighted.
    """
    return Markdown(f"```python\n{inspect.getsource(obj).rstrip()}\n```")
