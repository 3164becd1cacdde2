"""On-disk caches that cannot be turned against the user who runs the advisor.

The caches hold compiled code (marshal, Jinja bytecode) and pickled specs, so loading one is
running it. They are used only from a directory that belongs to the current user and that no
one else may write (mode 0700, as Jinja's own default bytecode cache insists), and only files
in it that are regular, owned by that user, not group- or world-writable, not symlinks and not
larger than MAX_CACHE_BYTES. A cache that fails any check is ignored, never loaded; it only
costs time. Files are written through mkstemp (O_EXCL, 0600) and an atomic rename, so no
predictable temporary name can be raced. `sudo -E` with the invoking user's cache directory
therefore runs without a cache instead of running that user's files as root.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from sysctl_advisor import __version__
from sysctl_advisor.cache.pruning import mark_used, remove_entries

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
T = TypeVar("T")


def cache_root() -> Path | None:
    """$SYSCTL_ADVISOR_CACHE, else $XDG_CACHE_HOME/sysctl-advisor, else
    ~/.cache/sysctl-advisor; None when SYSCTL_ADVISOR_CACHE is off/0/no/false."""
    setting = os.environ.get("SYSCTL_ADVISOR_CACHE", "")
    if setting.lower() in _OFF:
        return None
    if setting:
        return Path(setting)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "sysctl-advisor"


def _owned_dir(path: Path, forbidden_mode: int) -> bool:
    info = os.lstat(path)
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.geteuid()
        and not info.st_mode & forbidden_mode
    )


def private_directory(path: Path) -> Path | None:
    """`path` as a directory only the current user can use: created 0700 if missing; None
    (no cache) when it is a symlink, belongs to another user or has any group or other
    permission bit."""
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        return path if _owned_dir(path, 0o077) else None
    except OSError:
        return None


def cache_directory() -> Path | None:
    """The private cache directory, None if unusable.

    The cache root ($SYSCTL_ADVISOR_CACHE or the XDG location) must belong to the current user
    and be writable by no one else; the files live in a `private` directory inside it with
    mode 0700 (so an older 0755 root still works, and a shared or foreign one is never used).
    """
    root = cache_root()
    if root is None:
        return None
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _owned_dir(root, 0o022):
            return None
    except OSError:
        return None
    return private_directory(root / "private")


def versioned_cache_file(name: str, suffix: str) -> Path | None:
    """`NAME-pyXY-VERSION.SUFFIX` in the private cache directory (one file per Python and
    advisor version); None when there is no usable cache directory."""
    base = cache_directory()
    if base is None:
        return None
    return base / f"{name}-py{sys.version_info[0]}{sys.version_info[1]}-{__version__}.{suffix}"


def read_marshalled_dict(path: Path | None) -> dict[Any, Any]:
    """The mapping a marshal cache file holds: empty when there is no file, when it fails
    read_cache's checks or when it does not unmarshal to a dict."""
    raw = read_cache(path) if path is not None else None
    if raw is None:
        return {}
    try:
        loaded = marshal.loads(raw)
    except (ValueError, EOFError, TypeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def unpickled(raw: bytes, kind: type[T]) -> T | None:
    """An entry of our own cache (read through read_cache's checks) unpickled, if it unpickles
    to a `kind`; None for a damaged or outdated entry or anything else."""
    import pickle

    try:
        value = pickle.loads(raw)
    except (pickle.UnpicklingError, *UNPICKLING_ERRORS):
        return None
    return value if isinstance(value, kind) else None


def read_cache(path: Path) -> bytes | None:
    """The file's bytes if it passes every check (see the module docstring), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
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


def write_cache(path: Path, data: bytes) -> bool:
    """Replace a cache file atomically through a fresh mkstemp name; False (and nothing else)
    if it cannot be written or is too large to be worth keeping."""
    if len(data) > MAX_CACHE_BYTES or private_directory(path.parent) is None:
        return False
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        return False
    remove_entries(path.parent)
    return True


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
    caches that hold them (sysctl_advisor/cache), the two facts readers and pydantic's version.
    Objects validated by other code are never taken from a cache keyed on it."""
    paths = [
        *sorted((_PACKAGE / "model").glob("*.py")),
        *sorted((_PACKAGE / "knowledge").glob("*.py")),
        *sorted((_PACKAGE / "cache").glob("*.py")),
        *[_PACKAGE / "sources" / name for name in ("facts_file.py", "ansible_facts.py")],
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
