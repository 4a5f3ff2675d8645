"""Write an app's `--output` safely: special files as they are, regular files replaced atomically, checked first."""

from __future__ import annotations

import errno
import os
import stat
import tempfile

_SPECIAL = ((stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISFIFO, "FIFO"))


class OutputError(Exception):
    """`--output` cannot be written; the message names the path and says what to do."""


def _target(path: str) -> str:
    """`path`, or the file a symlink at `path` points to (followed to the end): what gets written."""
    return os.path.realpath(path) if os.path.islink(path) else path


def _special_kind(mode: int) -> str | None:
    return next((name for test, name in _SPECIAL if test(mode)), None)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _check_directory(path: str, shown: str) -> None:
    """The directory that will hold a new or replaced `path` exists, is a directory, and takes new files."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        st = os.stat(directory)
    except OSError as e:
        fix = ("create the directory first" if e.errno == errno.ENOENT else
               "choose a path whose parents are directories" if e.errno == errno.ENOTDIR else "choose another path")
        raise OutputError(f"--output={shown}: cannot use directory {directory} ({e.strerror}); {fix}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"--output={shown}: {directory} is not a directory; choose a path inside a directory")
    vfs = os.statvfs(directory)
    if vfs.f_flag & os.ST_RDONLY:
        raise OutputError(f"--output={shown}: {directory} is on a read-only file system; choose another path")
    if vfs.f_blocks == 0 and vfs.f_files == 0:  # procfs, sysfs: nobody can create files there
        raise OutputError(f"--output={shown}: {directory} is a virtual file system (like /proc) where files "
                          "cannot be created; choose another path")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"--output={shown}: directory {directory} is not writable by you; choose another path")


def check_output_path(path: str) -> None:
    """Raise OutputError if `write_output(path, ...)` cannot succeed; call it before the run.

    Creates, opens and modifies nothing (so a FIFO's reader is not disturbed). A FIFO is only checked for
    permission here; whether it has a reader is known when writing.
    """
    if not path:
        raise OutputError("--output is empty; give a file name")
    target = _target(path)
    shown = path if target == path else f"{path} (a symlink to {target})"
    try:
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        _check_directory(target, shown)
        return
    except OSError as e:
        raise OutputError(f"--output={shown}: {e.strerror}; choose another path") from None
    if stat.S_ISLNK(st.st_mode):
        raise OutputError(f"--output={shown}: the symlink does not resolve (a loop?); fix or remove it")
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"--output={shown} is a directory; give a file name")
    kind = _special_kind(st.st_mode)
    if kind is not None:
        if not os.access(target, os.W_OK):
            raise OutputError(f"--output={shown}: the {kind} is not writable by you; choose another path")
        return
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"--output={shown} is a socket or another special file that cannot be written "
                          "with open(); choose a regular file")
    _check_directory(target, shown)


def write_output(path: str, text: str) -> None:
    """Write `text` (UTF-8) to `path`, never half-written and never turning a special file into a regular one.

    - character/block devices are written in place (`/dev/null` stays a device);
    - a FIFO is opened without blocking: with no reader it is an OutputError at once (start the reader
      first); with a reader, writes block while the reader is slow, as with a shell redirection;
    - a symlink is followed and its target replaced (the link stays);
    - a regular file or a new path is replaced atomically (temporary file in the same directory, fsync,
      os.replace), keeping an existing file's permission bits (and owner, where allowed); new files get
      0666 & ~umask.

    Raises OutputError (naming the path) on any failure; never leaves a temporary file behind.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise OutputError(f"--output={path}: the report is not valid UTF-8 ({e.reason} at {e.start}); this is a "
                          "bug, please report it") from None
    target = _target(path)
    try:
        st: os.stat_result | None = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None  # _replace reports a missing or non-directory parent
    except OSError as e:
        raise OutputError(f"--output={path}: {e.strerror}; choose another path") from None
    if st is not None and _special_kind(st.st_mode) is not None:
        _write_special(path, target, data, st.st_mode)
    elif st is None or stat.S_ISREG(st.st_mode):
        _replace(path, target, data, st)
    else:
        check_output_path(path)  # raises with the reason (a directory, a socket, a symlink loop)
        raise OutputError(f"--output={path}: cannot be written; choose a regular file")


def _write_special(path: str, target: str, data: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    fifo = stat.S_ISFIFO(mode)
    try:
        fd = os.open(target, flags | (os.O_NONBLOCK if fifo else 0))
    except OSError as e:
        if fifo and e.errno == errno.ENXIO:
            raise OutputError(f"--output={path} is a FIFO with no reader; start the reader first (e.g. "
                              f"`cat {path} &`) or write to a regular file") from None
        raise OutputError(f"--output={path}: cannot open for writing ({e.strerror}); choose another path") from None
    try:
        if fifo:
            os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise OutputError(f"--output={path}: write failed ({e.strerror}); choose another path") from None
    finally:
        os.close(fd)


def _replace(path: str, target: str, data: bytes, st: os.stat_result | None) -> None:
    _check_directory(target, path)
    directory = os.path.dirname(os.path.abspath(target))
    try:
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    except OSError as e:
        raise OutputError(f"--output={path}: cannot create a file in {directory} ({e.strerror}); "
                          "choose another path") from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            if st is not None and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                try:  # before fchmod: chown clears set-id bits
                    os.fchown(fd, st.st_uid, st.st_gid)
                except PermissionError:
                    pass  # only root may give a file away; the report is then ours
            # mkstemp makes the file private; a report is an ordinary file, or keeps the replaced one's mode.
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException as e:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError):
            raise OutputError(f"--output={path}: write failed ({e.strerror}); choose another path") from None
        raise
