"""The settings a pull request's review runs with: the base commit's, not the change's.

A change controls its own work tree: deleting `.sysctl-advisor.toml`, the baseline or the
facts file in force, adding a nearer configuration that shadows the repository's, or editing
the site's rules under `rules-dir` would turn a failing review into a passing one. So the
review reads every settings file from the base commit with `git cat-file` (links inside the
repository followed, never the work tree) into a private directory, and runs
`check --settings-from` on it: the configuration is searched for there, from each reviewed
path's place, and the baseline, facts and rules directory it or the inputs name are the base
commit's. The change's sysctl files are still read from the work tree. A settings file the
base commit does not have is left out, with a note (the change adds it); one that neither
commit has was made by an earlier step of the job and is read from the work tree.

What the review used is said in the summary, and a change that edits any of it gets a warning.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from sysctl_advisor.model.check_config import CONFIG_FILE, PYPROJECT
from sysctl_advisor.model.documents import FACTS_FILE, parse_document, read_text
from sysctl_advisor.model.errors import InputError

MAX_FILES = 20_000  # files copied from the base commit, all settings together
MAX_BYTES = 256 * 1024 * 1024
CHUNK = 1 << 20
# The settings the inputs may name, as the option `check` takes each by.
INPUTS = {"config": "--config", "baseline": "--baseline", "facts": "--facts"}
TREE_INPUTS = {"rules-dir": "--rules-dir"}
WORK_TREE = "(work tree)"  # after the name of a settings file in neither commit


class BaseCommitError(Exception):
    """The base commit's settings cannot be copied: one line, exit 2."""


def _git(workspace: Path, *args: str) -> bytes | None:
    git = shutil.which("git")
    if git is None:
        return None
    result = subprocess.run([git, "-C", str(workspace), *args], capture_output=True)
    return result.stdout if result.returncode == 0 else None


def _repository_name(name: str) -> str | None:
    """`name` as a path inside the repository (a/b), or None for one that is not: absolute,
    with `..`, or holding a newline (git's batch input is one name a line)."""
    if not name or "\n" in name or "\0" in name or name.startswith("/"):
        return None
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


class _Copy:
    """The private directory the base commit's settings files are copied into."""

    def __init__(self, workspace: Path, commit: str, parent: Path) -> None:
        self.workspace, self.commit = workspace, commit
        self.root = Path(tempfile.mkdtemp(prefix="base-", dir=parent))
        self.state: dict[str, str] = {}  # name -> file, tree, missing
        self.files = self.bytes = 0

    def directory(self, name: str) -> Path:
        """The copy's directory `name` ("" the top), made with every one above it 0700 (not
        as the umask would leave them: check trusts a configuration only in a directory no
        other user may write to)."""
        path = self.root
        for part in PurePosixPath(name).parts if name else ():
            path = path / part
            if not path.is_dir():
                path.mkdir(mode=0o700)
        return path

    def has(self, name: str) -> bool:
        return self.state.get(name) in ("file", "tree")

    def fetch(self, names: Iterable[str], strict: bool = True) -> None:
        """Copy each named file of the base commit, links inside the repository followed;
        one the base does not have stays absent. A link out of the repository is an error
        when `strict` (a settings file), else left out (a file beside the facts)."""
        wanted = []
        for name in dict.fromkeys(names):
            if name in self.state:
                continue
            if _repository_name(name) != name:  # git's batch input is one name a line
                self.state[name] = "missing"
                continue
            wanted.append(name)
        if not wanted:
            return
        git = shutil.which("git")
        if git is None:
            raise BaseCommitError("git is needed to read the base commit's settings")
        process = subprocess.Popen(
            [git, "-C", str(self.workspace), "cat-file", "--batch", "--follow-symlinks"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdin is not None and process.stdout is not None
        requests = b"".join(
            f"{self.commit}:{n}\n".encode("utf-8", "surrogateescape") for n in wanted
        )
        writer = threading.Thread(target=_write_all, args=(process.stdin, requests), daemon=True)
        writer.start()
        try:
            for name in wanted:
                self._answer(name, process.stdout, strict)
        except (ValueError, IndexError):
            process.kill()
            raise BaseCommitError("git cat-file answered with something else than files") from None
        except BaseException:
            process.kill()
            raise
        finally:
            process.stdout.close()
            writer.join()
            process.wait()

    def _answer(self, name: str, out: IO[bytes], strict: bool) -> None:
        header = out.readline()
        words = header.split()
        if not header or header.rstrip(b"\n").endswith((b" missing", b" ambiguous")):
            self.state[name] = "missing"
            return
        if words[0] in (b"symlink", b"dangling", b"loop", b"notdir"):
            _skip(out, int(words[1]) + 1)
            if words[0] == b"symlink" and strict:
                raise BaseCommitError(
                    f"{name} links out of the repository in the base commit {self.commit[:12]}"
                )
            self.state[name] = "missing"
            return
        kind, size = words[1], int(words[2])
        if kind != b"blob":
            _skip(out, size + 1)
            self.state[name] = "tree" if kind == b"tree" else "missing"
            if kind == b"tree":
                self.directory(name)
            return
        self.files += 1
        self.bytes += size
        if self.files > MAX_FILES or self.bytes > MAX_BYTES:
            raise BaseCommitError(
                f"the base commit's settings files are more than {MAX_FILES} files or "
                f"{MAX_BYTES // (1024 * 1024)} MiB (the directory of a facts file that names "
                "services' configurations is copied too: keep such facts in one of their own)"
            )
        parent, _, base = name.rpartition("/")
        target = self.directory(parent) / base
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:  # copied already, under another name of the same file
            _skip(out, size + 1)
            self.state[name] = "file"
            return
        with os.fdopen(fd, "wb") as copy:
            left = size
            while left:
                chunk = out.read(min(left, CHUNK))
                if not chunk:
                    raise BaseCommitError("git cat-file stopped early")
                copy.write(chunk)
                left -= len(chunk)
        out.read(1)  # the line feed after the content
        self.state[name] = "file"

    def fetch_tree(self, name: str) -> bool:
        """Copy every file of the directory `name` ("" the top) of the base commit; False
        when the base commit has no such directory."""
        spec = f"{self.commit}:{name}" if name else f"{self.commit}^{{tree}}"
        tree = self._tree_id(spec)
        if tree is None:
            self.state.setdefault(name, "missing")
            return False
        out = _git(self.workspace, "ls-tree", "-r", "-z", "--full-tree", tree)
        if out is None:
            return False
        names = []
        for entry in out.split(b"\0"):
            meta, _, path = entry.partition(b"\t")
            if not path or meta.startswith(b"160000"):  # a submodule: no file here
                continue
            relative = _repository_name(path.decode("utf-8", "surrogateescape"))
            if relative is not None:
                names.append(f"{name}/{relative}" if name else relative)
        if len(names) + self.files > MAX_FILES:
            raise BaseCommitError(
                f"{name or 'the top'} holds more than {MAX_FILES} files in the base commit "
                f"{self.commit[:12]}: too many to copy for the review's settings"
            )
        self.directory(name)
        self.state[name] = "tree"
        self.fetch(names, strict=False)
        return True

    def _tree_id(self, spec: str) -> str | None:
        git = shutil.which("git")
        if git is None:
            return None
        result = subprocess.run(
            [git, "-C", str(self.workspace), "cat-file", "--batch-check", "--follow-symlinks"],
            input=spec.encode("utf-8", "surrogateescape") + b"\n",
            capture_output=True,
        )
        words = result.stdout.split()
        if result.returncode != 0 or len(words) < 3 or words[1] != b"tree":
            return None
        return words[0].decode()


def _write_all(stream: IO[bytes], data: bytes) -> None:
    try:
        stream.write(data)
        stream.close()
    except OSError:  # git stopped reading (it failed): the reader sees the end
        pass


def _skip(out: IO[bytes], size: int) -> None:
    while size > 0:
        chunk = out.read(min(size, CHUNK))
        if not chunk:
            return
        size -= len(chunk)


# --- what the review runs with ------------------------------------------------------------------


@dataclass
class Used:
    """The settings a review ran with, for check's command line and the summary."""

    options: list[str]  # check's options for the settings
    facts: str  # the facts file as `diff` reads it ("" for none given as an input)
    copy: Path | None  # the base commit's copy, None when the work tree's were used
    commit: str | None
    names: dict[str, str | None] = field(default_factory=dict)  # setting -> repository name
    notes: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # settings files the change edits

    def shown(self, text: str) -> str:
        """A message of check's with the copy's paths as the base commit's (abc123:name)."""
        if self.copy is None or self.commit is None:
            return text
        return text.replace(f"{self.copy}{os.sep}", f"{self.commit[:12]}:")

    def name(self, path: Any) -> str | None:
        """A path check printed (--show-config) as the repository's name for it; a file of
        the work tree (in neither commit) is marked so."""
        if not isinstance(path, str) or not path:
            return None
        if self.copy is not None:
            if os.path.isabs(path):
                relative = os.path.relpath(path, self.copy)
                if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
                    return relative.replace(os.sep, "/")
            return f"{os.path.normpath(path)} {WORK_TREE}"
        return os.path.normpath(path)


def search_places(chosen: list[str], workspace: Path) -> list[str]:
    """The directories the configuration is searched for in, for the reviewed paths: each
    one's own (a directory) or its parent, and every directory above it up to the top ("")."""
    places: list[str] = []
    for target in chosen:
        path = PurePosixPath(target)
        start = path if (workspace / target).is_dir() else path.parent
        while True:
            shown = "" if str(start) == "." else str(start)
            if shown not in places:
                places.append(shown)
            if not shown:
                break
            start = start.parent
    return places


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def from_base(
    workspace: Path,
    commit: str,
    work: Path,
    chosen: list[str],
    inputs: dict[str, str],
    show: Callable[[list[str]], dict[str, Any] | None],
) -> Used:
    """Copy the base commit's settings for a review of `chosen` and say what the review runs
    with: `inputs` are the path inputs by setting (config, baseline, facts, rules-dir: names
    in the repository), `show` runs `check --show-config -f json` with the options given."""
    inputs = {key: _input_name(key, value) for key, value in inputs.items() if value}
    copy = _Copy(workspace, commit, work)
    used = Used(["--settings-from", str(copy.root)], "", copy.root, commit)
    places = search_places(chosen, workspace)
    copy.fetch(_join(p, name) for p in places for name in (CONFIG_FILE, PYPROJECT))
    copy.fetch(v for k, v in inputs.items() if v and k in INPUTS)
    rules_dir = None  # as the summary names it
    for key, option in (*INPUTS.items(), *TREE_INPUTS.items()):
        value = inputs.get(key, "")
        if not value:
            continue
        if key in TREE_INPUTS:
            copy.fetch_tree(value)
        if copy.has(value):
            used.options += [option, str(copy.root / value)]
            rules_dir = value if key == "rules-dir" else rules_dir
            if key == "facts":
                used.facts = str(copy.root / value)
        elif _in_commit(workspace, "HEAD", value):
            used.notes.append(
                f"the base commit {commit[:12]} has no {key} {value}: the change adds it, "
                "and the review ran without it"
            )
            if key == "config":
                used.options.append("--isolated")
        else:  # in neither commit: made by an earlier step of the job
            used.options += [option, value]
            rules_dir = f"{value} {WORK_TREE}" if key == "rules-dir" else rules_dir
            if key == "facts":
                used.facts = value
    document = show(used.options)
    config = _value(document, "configuration")
    baseline, facts = (_setting(document, key) for key in ("baseline", "facts"))
    # what the base configuration names, and the files beside the facts (the services'
    # configurations a facts file names are read inside its directory)
    for path in (baseline, facts):
        name = used.name(path)
        if name is not None and not name.endswith(WORK_TREE):
            copy.fetch([name])
    name = used.name(facts)
    if name is not None and not name.endswith(WORK_TREE) and _names_configs(copy.root / name):
        copy.fetch_tree(os.path.dirname(name))
    used.names = {
        "configuration": used.name(config),
        "baseline": used.name(baseline),
        "facts": used.name(facts),
        "rules-dir": rules_dir,
    }
    used.changed = _changed_settings(workspace, commit, places, inputs, used)
    return used


def _names_configs(facts: Path) -> bool:
    """Whether a facts file names services' configurations (read inside its directory, which
    is then copied too); one that cannot be read is left to check to refuse."""
    try:
        data = parse_document(read_text(facts), facts, FACTS_FILE)
    except (InputError, OSError):
        return False
    services = data.get("services") if isinstance(data, dict) else None
    return isinstance(services, dict) and any(
        isinstance(s, dict) and ("config" in s or "config_root" in s) for s in services.values()
    )


def _input_name(key: str, value: str) -> str:
    name = _repository_name(value)
    if name is None:
        raise BaseCommitError(f"{key}: {value!r} is not a file of the repository")
    return name


def _value(document: dict[str, Any] | None, key: str) -> Any:
    return document.get(key) if isinstance(document, dict) else None


def _setting(document: dict[str, Any] | None, key: str) -> Any:
    settings = _value(document, "settings")
    entry = settings.get(key) if isinstance(settings, dict) else None
    return entry.get("value") if isinstance(entry, dict) else None


def _in_commit(workspace: Path, revision: str, name: str) -> bool:
    return _git(workspace, "cat-file", "-e", f"{revision}:{name}") is not None


def _mentions_us(workspace: Path, revision: str, name: str) -> bool:
    """Whether a pyproject.toml at `revision` says anything to the advisor (a table of ours)."""
    text = _git(workspace, "cat-file", "blob", f"{revision}:{name}")
    return text is not None and b"sysctl-advisor" in text


def _changed_settings(
    workspace: Path, commit: str, places: list[str], inputs: dict[str, str], used: Used
) -> list[str]:
    """The settings files the change edits, deletes, moves or shadows: those the base
    commit's settings are made of, the inputs, the rules directory's files, and a
    configuration the change adds or changes where the search looks."""
    out = _git(
        workspace, "diff", "--no-ext-diff", "--name-only", "-z", "--no-renames", commit, "HEAD"
    )
    if out is None:
        return []
    changed = [n.decode("utf-8", "surrogateescape") for n in out.split(b"\0") if n]
    watched = {_join(p, CONFIG_FILE) for p in places}
    watched |= {v for k, v in inputs.items() if v and k in INPUTS}
    watched |= {v for k, v in used.names.items() if v and k != "rules-dir"}
    trees = [v for k, v in inputs.items() if v and k in TREE_INPUTS]
    pyprojects = {_join(p, PYPROJECT) for p in places}
    edited = []
    for name in changed:
        if (
            name in watched
            or any(name.startswith(f"{tree.rstrip('/')}/") for tree in trees)
            or (
                name in pyprojects
                and (_mentions_us(workspace, commit, name) or _mentions_us(workspace, "HEAD", name))
            )
        ):
            edited.append(name)
    return edited
