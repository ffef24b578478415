"""Where a checkpoint is on disk: its name, and the symbolic links that may lead to it.

- A checkpoint's file is ``path`` if it ends in ``.npz``, else ``path + ".npz"`` (as
  ``np.savez`` names it), whatever stands at ``path`` itself; never a folder. Saving and
  loading both use this rule, so ``load(p)`` reads what ``save(p)`` wrote.
- A symbolic link, at the path or among its folders, is followed only if it belongs to the
  current user or to root (POSIX). A link that another user planted (in ``/tmp``, say) is
  refused, whatever it points to: following it would let them choose the file that is
  replaced, or read.
"""

import errno
import os
import stat

MAX_LINKS = 40  #: links followed in one path, as Linux does before ELOOP


def checkpoint_path(path):
    """The file a checkpoint at ``path`` is: ``path`` if it ends in ``.npz``, else ``path + ".npz"``; never a folder."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise TypeError(f"path must be a file name (str or os.PathLike); got {path!r} of type "
                        f"{type(path).__name__}") from None
    if not isinstance(path, str):
        path = os.fsdecode(path)
    name = path if path.endswith(".npz") else path + ".npz"
    if os.path.isdir(path) or os.path.isdir(name) or os.path.basename(path) in ("", ".", ".."):
        example = os.path.join(path, "model.npz")
        raise IsADirectoryError(f"checkpoint path {path!r} is a folder; give a file name, e.g. {example!r}")
    return name


def refused(name, action, why):
    """The error for a checkpoint that may not be read or written: ``PermissionError`` naming the file."""
    return PermissionError(errno.EACCES, f"cannot {action} checkpoint {name}: {why}")


def trusted(info):
    """Whether a link with ``os.lstat`` result ``info`` may be followed: the current user's own, or root's."""
    return not hasattr(os, "geteuid") or info.st_uid in (os.geteuid(), 0)


def resolve(name, action):
    """``(target, info)``: the real path that ``name`` leads to, and its ``os.stat`` (None if it does not exist).

    Walks the path component by component, as the kernel does, following only the links that
    :func:`trusted` allows; ``action`` (``"read"``, ``"write"``) goes into the messages.
    A folder of the path that does not exist is ``FileNotFoundError``.
    """
    pending = (name if os.path.isabs(name) else os.path.join(os.getcwd(), name)).split(os.sep)
    resolved, links = os.sep, 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            if pending:
                why = f"cannot {action} checkpoint {name}: no folder {candidate}"
                raise FileNotFoundError(errno.ENOENT, why) from None
            return candidate, None
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if links > MAX_LINKS:
                raise refused(name, action, f"more than {MAX_LINKS} symbolic links")
            if not trusted(info):
                raise refused(name, action, f"{candidate} is a symbolic link owned by user {info.st_uid}, not by "
                              "you; links that other users can plant are not followed (remove it, or use another path)")
            destination = os.readlink(candidate)
            pending = destination.split(os.sep) + pending
            resolved = os.sep if os.path.isabs(destination) else resolved
            continue
        if pending and not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, f"cannot {action} checkpoint {name}: {candidate} is not a folder")
        resolved = candidate
    return resolved, os.stat(resolved)
