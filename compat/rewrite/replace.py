"""Replace a file atomically without breaking it: owner, group, mode and hard links kept, no temporary file left."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
import stat
import time

try:
    import fcntl
except ImportError:  # not POSIX: temporaries are not locked, so a leftover is never judged stale
    fcntl = None  # type: ignore[assignment]

# A writer locks its temporary file as soon as it has created it and holds the lock until the file is renamed
# over the original. A leftover of the tool's own name pattern that nobody locks is stale; this much age also
# covers the instant between creation and lock.
STALE_AFTER_S = 10.0


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What a file looked like when read: replaced only if it still looks the same."""

    mtime_ns: int
    size: int
    digest: str

    @classmethod
    def of(cls, st: os.stat_result, data: bytes) -> Snapshot:
        return cls(st.st_mtime_ns, len(data), hashlib.sha256(data).hexdigest())


def temporary_pattern(name: str) -> re.Pattern[str]:
    """The names of the temporary files written next to `name` (a base name): `.NAME.XXXXXXXX.tmp`.

    Written with 8 hex digits; earlier versions used tempfile.mkstemp, whose 8 characters are [a-z0-9_]:
    their leftovers are recognised too.
    """
    return re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp")


def refusal(path: str, st: os.stat_result) -> str | None:
    """Why `path` must not be replaced by a new file, or None.

    A hard-linked file would leave its other names with the old text; a read-only file (no write bit, or not
    writable by the user running the rewrite) is protected on purpose. Neither is written.
    """
    if st.st_nlink > 1:
        return (f"has {st.st_nlink} hard links, and writing a new file would leave the other names with the old "
                "text: not written (apply the diff by hand, or break the links, e.g. `cp FILE "
                "FILE.new && mv FILE.new FILE`, and run again)")
    if not st.st_mode & 0o222:
        return (f"is read-only (mode {stat.S_IMODE(st.st_mode):04o}): not written (make it writable, e.g. "
                "`chmod u+w`, to rewrite it in place)")
    if not os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        return (f"is not writable by you (mode {stat.S_IMODE(st.st_mode):04o}, owner "
                f"{_owner(st.st_uid, st.st_gid)}): not written (rewrite it as a user who may write it)")
    return None


def _owner(uid: int, gid: int) -> str:
    try:
        import grp
        import pwd

        return f"{pwd.getpwuid(uid).pw_name}:{grp.getgrgid(gid).gr_name}"
    except (ImportError, KeyError):
        return f"uid {uid}, gid {gid}"


def remove_stale_temporaries(directory: str, name: str, owners: set[int]) -> list[str]:
    """Remove the temporary files an interrupted run (SIGKILL, power loss) left for `name` in `directory`.

    Only files named by `temporary_pattern(name)`, regular, single-linked, owned by one of `owners`, older than
    STALE_AFTER_S and locked by no writer are removed; anything else is left alone. Returns the removed paths.
    """
    pattern = temporary_pattern(name)
    removed: list[str] = []
    try:
        entries = [e.path for e in os.scandir(directory) if pattern.fullmatch(e.name)]
    except OSError:
        return removed
    for path in entries:
        if _remove_if_stale(path, owners):
            removed.append(path)
    return removed


def _remove_if_stale(path: str, owners: set[int]) -> bool:
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid not in owners
                or time.time() - st.st_mtime < STALE_AFTER_S):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live writer holds it, or this file system cannot tell
            return False
        named = os.lstat(path)
        if (named.st_dev, named.st_ino) != (st.st_dev, st.st_ino):
            return False
        os.unlink(path)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _create_temporary(directory: str, name: str) -> tuple[int, str]:
    """A new private file next to `name`, named by `temporary_pattern`, locked while it lives."""
    while True:
        path = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass  # a file system without locks: the file is still ours, only never judged stale
        return fd, path


def replace(path: str, data: bytes, snapshot: Snapshot) -> str | None:
    """Write `data` over `path` (a symlink's target) through a temporary file and os.replace.

    The new file gets the old one's owner, group and mode; it is written only if the file still matches
    `snapshot` and `refusal` has nothing against it. On any exception (a signal handler's included) the
    temporary file is removed before the exception goes on. Returns None on success, else why not.
    """
    target = os.path.realpath(path)  # a symlink to a regular file: rewrite the file, keep the link
    directory, name = os.path.split(target)
    try:
        st = os.stat(target)
    except OSError as e:
        return f"cannot write: {e.strerror or e}"
    refused = refusal(target, st)
    if refused:
        return refused
    remove_stale_temporaries(directory, name, {os.geteuid(), st.st_uid})
    try:
        fd, temporary = _create_temporary(directory, name)
    except OSError as e:
        return f"cannot write next to the file: {e.strerror or e}"
    try:
        try:
            reason = _fill(fd, data, st)
            if reason is None and not _unchanged_since(target, snapshot):
                reason = "file changed since it was read; not overwritten (run again)"
            if reason is None:
                os.replace(temporary, target)  # while still locked: a concurrent run never judges it stale
                return None
        finally:
            os.close(fd)
        os.unlink(temporary)
        return reason
    except BaseException as e:
        _unlink_quietly(temporary)
        if isinstance(e, OSError):
            return f"cannot write: {e.strerror or e}"
        raise


def _fill(fd: int, data: bytes, st: os.stat_result) -> str | None:
    """Write and fsync `data`, then give the file `st`'s owner, group and mode; None, or why it cannot be."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)
    made = os.fstat(fd)
    if (made.st_uid, made.st_gid) != (st.st_uid, st.st_gid):
        try:  # before fchmod: chown clears set-id bits
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            return (f"belongs to {_owner(st.st_uid, st.st_gid)}, and a new file written by you would belong to "
                    f"{_owner(made.st_uid, made.st_gid)}: not written (rewrite it as its owner)")
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    return None


def _unchanged_since(path: str, snapshot: Snapshot) -> bool:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or (st.st_mtime_ns, st.st_size) != (snapshot.mtime_ns, snapshot.size):
            return False
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest() == snapshot.digest
    except OSError:
        return False


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # already renamed over the original, or gone
