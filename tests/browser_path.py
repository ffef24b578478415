"""Where the browser tests find Chromium: the file ``MHATTN_CHROMIUM`` names, else /usr/bin/chromium.

Debian and Ubuntu install Chromium at /usr/bin/chromium (``apt-get install chromium``); set
``MHATTN_CHROMIUM=/path/to/chromium`` to run the browser tests with another build.
"""

import os

DEFAULT_CHROMIUM = "/usr/bin/chromium"


def chromium_path():
    """The Chromium executable the browser tests launch."""
    return os.environ.get("MHATTN_CHROMIUM") or DEFAULT_CHROMIUM
