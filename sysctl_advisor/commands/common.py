"""What every command shares: loading knowledge and facts, writing results, talking to the
operator on stderr, and turning errors into exit codes. No typer: commands run from tests too."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.text_escape import one_line

if TYPE_CHECKING:  # imported lazily at run time, so `--help` and `--version` stay fast
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase
    from sysctl_advisor.model.current_config import CurrentConfig
    from sysctl_advisor.model.host_facts import HostFacts


class Quiet:
    """--quiet: results and errors only."""

    on = False


def error_line(message: str) -> None:
    """One line on stderr; a character of hostile text (ESC, BEL, a bidi override, a line
    break) is written as a visible escape, never to the terminal."""
    sys.stderr.write(f"sysctl-advisor: {one_line(message)}\n")
    sys.stderr.flush()


def say(message: str) -> None:
    """A line for the operator on stderr that is not an error: silent with --quiet."""
    if not Quiet.on:
        error_line(message)


def note(message: str) -> None:
    say(f"note: {message}")


def guarded(run: Callable[[], int]) -> int:
    """Bad input (or a path the system refuses) -> one line on stderr, exit 2. Anything else
    -> one line, exit 3."""
    try:
        return run()
    except InputError as exc:
        error_line(f"error: {exc}")
        return 2
    except OSError as exc:  # a path the system refuses (too long, a loop, no permission)
        where = f"{exc.filename}: " if exc.filename is not None else ""
        error_line(f"error: {where}{exc.strerror or exc}")
        return 2
    except Exception as exc:
        if os.environ.get("SYSCTL_ADVISOR_DEBUG"):
            raise
        error_line(
            f"internal error: {type(exc).__name__}: {exc} "
            "(set SYSCTL_ADVISOR_DEBUG=1 for a traceback)"
        )
        return 3


def discard_stdout() -> None:
    """After a failed write (a full disk, /dev/full, a closed pipe), point stdout at /dev/null
    so the interpreter's final flush cannot print a second, multi-line error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def emit(text: str, output: Path | None) -> None:
    """Write to --output atomically, or to stdout (no --output, or `-o -`)."""
    if output is not None and str(output) != "-":
        from sysctl_advisor.outputs.files import write_atomic

        write_atomic(output, text)
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        discard_stdout()
        raise InputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def choose(value: str, allowed: Iterable[str], field: str) -> str:
    """An option's value among those the command knows (the CLI's enums check it first;
    callers without typer get the same one-line error)."""
    known = list(allowed)
    if value not in known:
        raise InputError(f"{value!r} is not one of {', '.join(known)}", field=field)
    return value


def to_stdout(output: Path | None) -> bool:
    return output is None or str(output) == "-"


def parse_overrides(pairs: list[str] | None) -> dict[str, str]:
    """--set NAME=VALUE pairs."""
    result: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise InputError(f"expected NAME=VALUE, got {pair!r}", field="--set")
        result[name.strip()] = value.strip()
    return result


def load_knowledge(
    rules_dir: list[Path] | None = None, profiles_dir: list[Path] | None = None
) -> KnowledgeBase:
    from sysctl_advisor.knowledge.knowledge_base import KnowledgeBase

    return KnowledgeBase.lazy(rules_dir, profiles_dir)


def read_facts(
    path: Path | None,
    kb: KnowledgeBase,
    nginx_conf: Path | None = None,
    within: Path | None = None,
) -> HostFacts:
    """The facts file (or this host, read as `facts` reads it: listeners, the kernel log over
    the default window), with service configs such as nginx.conf parsed. With `within` (a
    configuration's directory), a facts file whose real path is outside it is refused."""
    from sysctl_advisor.sources.service_configs import with_service_configs

    if path is not None:
        from sysctl_advisor.cache.facts import cached_facts
        from sysctl_advisor.sources.facts_file import facts_from_text
        from sysctl_advisor.sources.tree_paths import inside

        allowed = partial(inside, within) if within is not None else None
        facts = cached_facts(path, facts_from_text, allowed)
        return with_service_configs(facts, path.parent, nginx_conf)
    from sysctl_advisor.sources.local_host import DEFAULT_WINDOW, collect

    host = collect(
        kb.catalog.read_keys(),
        message_matchers=kb.message_matchers(),
        since=DEFAULT_WINDOW,
        tuned=kb.catalog.tuned_places(),
        app_readers=kb.app_readers(),
        node_places=kb.kubernetes.node_places(),
    )
    return with_service_configs(host, None, nginx_conf)


def read_in_force(
    current: Path | None, facts_path: Path | None, host: HostFacts, keys: list[str]
) -> CurrentConfig:
    """--current PATH, else the facts file's `sysctl:` values, else the live /proc/sys."""
    from sysctl_advisor.model.current_config import from_values
    from sysctl_advisor.sources.sysctl_files import read_current

    if current is not None:
        return read_current(current, keys)
    if facts_path is not None:
        if not host.sysctl:
            raise InputError(
                "nothing to compare with: no `sysctl:` values here; pass --current PATH",
                path=facts_path,
            )
        return from_values(
            host.sysctl, "facts", str(facts_path), f"{facts_path}: sysctl", host.sysctl_files
        )
    return from_values(host.sysctl, "live", "/proc/sys", "{path}", host.sysctl_files)


def run_direct(call: Callable[[], int]) -> NoReturn:
    """A command called without typer (sysctl_advisor.fast_path), ending as run_cli ends one: Ctrl-C
    is one line and 130, a closed pipe 2, else the command's exit code."""
    try:
        code = call()
    except KeyboardInterrupt:
        discard_stdout()
        error_line("interrupted")
        raise SystemExit(130) from None
    except BrokenPipeError:
        discard_stdout()
        raise SystemExit(2) from None
    raise SystemExit(code)


def run_cli(app: Callable[..., Any], commands: Iterable[str]) -> None:
    """Run the typer app and turn every way it can end into an exit code: a usage error (no
    command at all included) is one line and exit 2, not click's usage text and a box; Ctrl-C
    and a closed pipe end as in run_direct."""

    def call() -> int:
        try:
            code = app(standalone_mode=False)
        except BrokenPipeError:
            raise
        except Exception as exc:
            describe = getattr(exc, "format_message", None)
            if type(exc).__name__ == "NoArgsIsHelpError":
                error_line(
                    f"error: no command given; commands: {', '.join(commands)} "
                    "(sysctl-advisor --help says more)"
                )
                raise SystemExit(2) from None
            if callable(describe) and hasattr(exc, "exit_code"):
                error_line(f"error: {' '.join(str(describe()).split())}")
                raise SystemExit(2) from None
            raise
        if code == 130:  # typer turns Ctrl-C into a silent Exit(130)
            discard_stdout()
            error_line("interrupted")
        return code if isinstance(code, int) else 0

    run_direct(call)


def shown_path(path: Path) -> str:
    """A path as a reviewer reads it: relative to the working directory when it is inside it
    (as pre-commit and CI runners show paths), else as given."""
    normal = os.path.normpath(path)
    if os.path.isabs(normal):
        relative = os.path.relpath(normal)
        if relative != ".." and not relative.startswith("../"):
            return relative
    return normal
