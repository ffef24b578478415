"""Optional dependencies: the library needs NumPy only; pictures and widgets need more.

``require("matplotlib.pyplot", "chapter")`` imports and returns the module, or raises an
``ImportError`` that says which extra installs it (``pip install "mhattn[chapter]"``).
"""

import importlib


def require(module, extra="chapter"):
    """Import ``module`` by name, or raise an ImportError naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.split(".")[0]
        raise ImportError(
            f"{module} is needed here but is not installed; install it with the chapter's extra: "
            f'pip install "mhattn[{extra}]" (or pip install {top})'
        ) from error
