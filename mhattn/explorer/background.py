"""How the explorer draws: the newest setting only, in a thread of its own inside a kernel.

:class:`LatestWins` runs a piece of work on the newest item submitted and drops the ones in
between, so that a slider dragged across many values draws only where it stops.
:func:`in_a_kernel` says whether the work should run in the background (a Jupyter kernel
reads the browser's next message while a picture is drawn), and :func:`one_blas_thread` keeps
the tiny matrices of a frame on one BLAS thread.
"""

import sys
import threading
import traceback

from ..checks.door import checked
from ..checks.explorer import latest_wins_args, wait_args
from ..checks.optional import require

_NOTHING = object()


class LatestWins:
    """Runs ``work(item)`` on the newest item submitted; the items in between are dropped, never queued.

    While one item is being worked on, each :meth:`submit` replaces the one waiting, so when the
    work ends only the newest waits, and it runs next. With ``background=True`` the work runs
    in a thread of its own and :meth:`submit` returns at once: in a Jupyter kernel, that frees
    the kernel to read the next message from the browser (a slider moved further) while the
    previous setting is still being drawn. With ``background=False`` the work runs inside
    :meth:`submit` (a submission made by the work itself waits for it to end).

    Attributes
    ----------
    done, dropped : int
        How many items were worked on, and how many were replaced before their turn.
    error : BaseException or None
        The last exception the background work raised (it goes on with the next item).
    """

    @checked(latest_wins_args)
    def __init__(self, work, background=False):
        self._work, self._background = work, background
        self._idle = threading.Condition()
        self._pending, self._running = _NOTHING, False
        self.done, self.dropped, self.error = 0, 0, None

    def submit(self, item):
        """Work on ``item`` next, in place of the one waiting (if any)."""
        with self._idle:
            if self._pending is not _NOTHING:
                self.dropped += 1
            self._pending = item
            if self._running:
                return
            self._running = True
        if self._background:
            threading.Thread(target=self._drain, name="mhattn-explorer-draw", daemon=True).start()
        else:
            self._drain()

    @checked(wait_args)
    def wait(self, timeout=None):
        """Block until nothing is being worked on or waits; True if so before ``timeout`` seconds (None: no limit)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._running, timeout)

    def _drain(self):
        try:
            while True:
                with self._idle:
                    item, self._pending = self._pending, _NOTHING
                    if item is _NOTHING:
                        return
                try:
                    self._work(item)
                except Exception as error:
                    if not self._background:
                        raise
                    self.error = error
                    traceback.print_exc(file=sys.stderr)
                self.done += 1
        finally:
            with self._idle:
                self._pending, self._running = _NOTHING, False
                self._idle.notify_all()


def in_a_kernel():
    """Whether this runs inside a Jupyter kernel (JupyterLab, Notebook, Voila), where messages queue."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return getattr(shell, "kernel", None) is not None


_blas = []  # one ThreadpoolController for the process: building one inspects every loaded library


def one_blas_thread():
    """A context in which BLAS computes on one thread.

    The matrices of a frame are tiny: BLAS worker threads cost far more than they save (and
    spin on the cores matplotlib needs next).
    """
    if not _blas:
        _blas.append(require("threadpoolctl").ThreadpoolController())
    return _blas[0].limit(limits=1, user_api="blas")
