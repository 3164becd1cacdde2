"""On-disk caches that cannot be turned against the user who runs the advisor.

The caches hold compiled code (marshal, Jinja bytecode) and pickled models, so loading one is
running it. What they trust, and when there is no cache at all:

* The cache root ($SYSCTL_ADVISOR_CACHE, else $XDG_CACHE_HOME/sysctl-advisor, else
  ~/.cache/sysctl-advisor) must be an absolute path. Its links are resolved once and it is
  opened from `/` one component at a time with O_NOFOLLOW|O_DIRECTORY (model/directories.py):
  every directory on the way belongs to root or to the current user and is writable by no one
  else unless it has the sticky bit (OpenSSH's StrictModes, with /tmp allowed), and the
  `private` directory inside it is the user's alone (0700). A root that fails any check means
  no cache: root with the invoking user's HOME (`sudo -E`) therefore runs without one, and a
  swap of any directory on the way cannot redirect it.
* Every file is read and written through that directory's descriptor, never by path and never
  through a symlink: read only if it is a regular file the user owns that no one else can
  write, at most MAX_CACHE_BYTES; written to a new file with a random name (O_EXCL, 0600) and
  renamed into place. No library is handed a cache path.

A cache that fails a check is ignored, never loaded; it only costs time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
import os
import stat
import sys
import weakref
from pathlib import Path
from typing import TypeVar

from sysctl_advisor import __version__
from sysctl_advisor.cache.pruning import mark_used, remove_entries
from sysctl_advisor.model.directories import UntrustedDirectory, open_directory, replace_file

MAX_CACHE_BYTES = 32 * 1024 * 1024
# What unpickling a damaged or outdated entry of our own can raise (a class renamed since, a
# truncated file): each means "not cached", never an error.
UNPICKLING_ERRORS = (
    OSError,
    EOFError,
    AttributeError,
    ImportError,
    TypeError,
    ValueError,
    IndexError,
    KeyError,
)
_OFF = {"off", "0", "no", "false"}
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
T = TypeVar("T")


class NoCache(Exception):
    """Why there is no usable cache directory (said by `sysctl-advisor cache`)."""


def cache_root() -> Path:
    """$SYSCTL_ADVISOR_CACHE, else $XDG_CACHE_HOME/sysctl-advisor (a relative XDG_CACHE_HOME is
    ignored, as the XDG spec says), else ~/.cache/sysctl-advisor; NoCache when
    SYSCTL_ADVISOR_CACHE is off/0/no/false or there is no home directory to use."""
    setting = os.environ.get("SYSCTL_ADVISOR_CACHE", "")
    if setting.lower() in _OFF:
        raise NoCache("caches are off (SYSCTL_ADVISOR_CACHE=off)")
    if setting:
        return Path(setting)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "sysctl-advisor"
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # HOME unset and no passwd entry for this user
        raise NoCache("there is no home directory for the cache") from None
    return home / ".cache" / "sysctl-advisor"


class CacheDirectory:
    """The private cache directory, held open: every read and write goes through its
    descriptor (closed when the object goes)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path  # for messages only: never opened by name again
        self.fd = fd
        weakref.finalize(self, os.close, fd)

    def read(self, name: str) -> bytes | None:
        """The file's bytes if it passes every check (see the module docstring), else None."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                         dir_fd=self.fd)  # fmt: skip
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if (
                not stat.S_ISREG(info.st_mode)
                or info.st_uid != os.geteuid()
                or info.st_mode & 0o022
                or info.st_size > MAX_CACHE_BYTES
            ):
                return None
            chunks = []
            size = 0
            while chunk := os.read(fd, 1 << 20):
                size += len(chunk)
                if size > MAX_CACHE_BYTES:
                    return None
                chunks.append(chunk)
            mark_used(fd, info)
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes) -> bool:
        """Replace a cache file atomically through a new file of a random name; False (and
        nothing else) if it cannot be written or is too large to be worth keeping."""
        if len(data) > MAX_CACHE_BYTES:
            return False
        try:
            replace_file(self.fd, name, data)
        except OSError:
            return False
        remove_entries(self.fd)
        return True

    def read_entries(self, name: str) -> dict[str, bytes]:
        """The entries a cache file holds (a marshalled mapping of key to bytes, nothing in
        them unpickled or unmarshalled): empty when there is no file, when it fails read's
        checks or when it is not such a mapping."""
        raw = self.read(name)
        if raw is None:
            return {}
        try:
            loaded = marshal.loads(raw)
        except (ValueError, EOFError, TypeError):
            return {}
        if not isinstance(loaded, dict):
            return {}
        return {k: v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, bytes)}

    def write_entries(self, name: str, entries: dict[str, bytes]) -> bool:
        return self.write(name, marshal.dumps(entries))


def open_cache_directory() -> CacheDirectory:
    """The private cache directory, walked from `/` by descriptor (model/directories.py);
    NoCache says why there is none."""
    root = cache_root()
    if not root.is_absolute():
        raise NoCache(f"the cache root {root} is not an absolute path")
    try:
        fd, resolved = open_directory(root, create=True)
    except UntrustedDirectory as exc:
        raise NoCache(str(exc)) from None
    private = -1
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir("private", 0o700, dir_fd=fd)
        private = os.open("private", _DIRECTORY, dir_fd=fd)
        info = os.fstat(private)
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise NoCache(f"{resolved / 'private'} is not yours alone (it must be mode 0700)")
        opened, private = private, -1
        return CacheDirectory(resolved / "private", opened)
    except OSError as exc:
        raise NoCache(f"{resolved / 'private'}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
        if private >= 0:
            os.close(private)


def cache_directory() -> CacheDirectory | None:
    """The private cache directory, or None when there is no usable one."""
    try:
        return open_cache_directory()
    except NoCache:
        return None


def versioned_name(name: str, suffix: str) -> str:
    """`NAME-pyXY-VERSION.SUFFIX`: one cache file per Python and advisor version."""
    return f"{name}-py{sys.version_info[0]}{sys.version_info[1]}-{__version__}.{suffix}"


def unpickled(raw: bytes, kind: type[T]) -> T | None:
    """An entry of our own cache (read through read_cache's checks) unpickled, if it unpickles
    to a `kind`; None for a damaged or outdated entry or anything else."""
    import pickle

    try:
        value = pickle.loads(raw)
    except (pickle.UnpicklingError, *UNPICKLING_ERRORS):
        return None
    return value if isinstance(value, kind) else None


def source_fingerprint(*modules: str) -> str:
    """A short hash of the named modules' source files: code that generates or loads cached
    data changes it, so a cache from an older version is never loaded."""
    digest = hashlib.sha1()
    for name in modules:
        import importlib

        module = importlib.import_module(name)
        try:
            digest.update(Path(str(module.__file__)).read_bytes())
        except (OSError, TypeError):
            digest.update(name.encode())
    return digest.hexdigest()[:12]


def files_fingerprint(paths: list[Path]) -> str:
    """A short hash of the named source files, read without importing them (as
    source_fingerprint, for code whose modules a run does not otherwise import)."""
    digest = hashlib.sha1()
    for path in sorted(paths):
        digest.update(path.name.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()[:12]


_PACKAGE = Path(__file__).resolve().parent.parent


def _pydantic_version_file() -> Path | None:
    """pydantic/version.py, found on sys.path as the import system would find the package
    (without importing it: a warm run never does)."""
    for entry in sys.path:
        candidate = Path(entry or ".") / "pydantic" / "version.py"
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def validating_code() -> str:
    """A fingerprint of the code that validates knowledge and facts files: the models
    (sysctl_advisor/model), the spec models and their loaders (sysctl_advisor/knowledge), the
    caches that hold them (sysctl_advisor/cache), the two facts readers, the check
    configuration's reader and pydantic's version.
    Objects validated by other code are never taken from a cache keyed on it."""
    paths = [
        *sorted((_PACKAGE / "model").glob("*.py")),
        *sorted((_PACKAGE / "knowledge").glob("*.py")),
        *sorted((_PACKAGE / "cache").glob("*.py")),
        *[
            _PACKAGE / "sources" / name
            for name in ("facts_file.py", "ansible_facts.py", "check_config.py")
        ],
    ]
    version = _pydantic_version_file()
    return files_fingerprint([*paths, version] if version is not None else paths)


def content_key(*parts: str) -> str:
    """A SHA-256 over the parts, each length-prefixed (so no two splits of one text collide)."""
    digest = hashlib.sha256()
    for part in parts:
        encoded = part.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "big") + encoded)
    return digest.hexdigest()
