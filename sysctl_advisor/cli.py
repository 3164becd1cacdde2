"""The typer CLI, built from the table in cli_options: one typer command per `Command`, whose
parameters are that command's options, calling its function in `sysctl_advisor.commands` with
every option by keyword. Help, completion and usage errors are typer's.

The manual page is the same help for `man`, from the same table: `man_page()`, written by
`python -m tests.regenerate` (with every other generated file)."""

from __future__ import annotations

import inspect
from enum import Enum
from typing import Annotated, Any

import typer
from typer.core import TyperArgument

from sysctl_advisor import __version__
from sysctl_advisor.cli_options import COMMANDS, QUIET, REQUIRED, SUMMARY, VERSION, Command, Option
from sysctl_advisor.commands.common import Quiet, run_cli


def _argument_type(argument: TyperArgument, ctx: Any) -> str | None:
    """Help names an argument by its metavar (PATH, KEY, RULE_ID); typer would add the Python
    type after it (`<list[Path]>`, `<str>`), which tells an operator nothing."""
    return None if argument.metavar else argument.display_type(ctx)


TyperArgument.display_type_rich = _argument_type  # type: ignore[method-assign, assignment]


def _parameter(name: str, option: Option) -> inspect.Parameter:
    """The typer parameter for one option of the table."""
    kind: Any = option.type
    default: Any = option.default
    if option.choices:  # an Enum, so that help and completion list the choices
        choice: Any = Enum(name, {c: c for c in option.choices}, type=str)  # type: ignore[misc]
        kind = choice
        default = choice(default) if isinstance(default, str) else default
    if option.many:
        kind = list[kind]
    if option.default is None:
        kind = kind | None
    declared: dict[str, Any] = {"help": option.help, "metavar": option.metavar}
    if option.complete is not None:
        declared["autocompletion"] = option.complete
    if option.argument:
        info: Any = typer.Argument(**declared)
    else:
        info = typer.Option(*option.names, min=option.min, max=option.max, **declared)
    if option.default is REQUIRED:
        default = inspect.Parameter.empty
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, info]
    )


def _plain(value: Any) -> Any:
    """What the command function takes: choices as their names, repeated options as lists
    (None when absent)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return list(value) or None
    return value


_QUIET = "quiet"  # each command's own -q: the root's, also taken after the command's name


def _typer_command(command: Command) -> Any:
    def run(**options: Any) -> None:
        if options.pop(_QUIET):
            Quiet.on = True
        raise typer.Exit(command.run({name: _plain(value) for name, value in options.items()}))

    assert _QUIET not in command.options, command.name
    parameters = [_parameter(name, option) for name, option in command.options.items()]
    parameters.append(_parameter(_QUIET, QUIET))
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    run.__doc__ = command.help
    run.__name__ = command.name
    return run


HELP_NAMES = ("--help", "-h")

app = typer.Typer(
    name="sysctl-advisor",
    help=SUMMARY,
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": list(HELP_NAMES)},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
for _command in COMMANDS:
    app.command(_command.name)(_typer_command(_command))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sysctl-advisor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option(*VERSION.names, help=VERSION.help, callback=_version, is_eager=True)
    ] = False,
    quiet: Annotated[bool, typer.Option(*QUIET.names, help=QUIET.help)] = False,
) -> None:
    """sysctl-advisor."""
    Quiet.on = quiet


def main() -> None:
    run_cli(app, [command.name for command in COMMANDS])


def man_page(commands: tuple[Command, ...] = COMMANDS, summary: str = SUMMARY) -> str:
    """The manual page from the same table: every command and option, and the root's
    (outputs/man_page.py writes the roff)."""
    from sysctl_advisor.commands.man_page import man_page as render

    root = (VERSION, QUIET, Option(HELP_NAMES, "Show the help and exit.", type=bool))
    return render(commands, root, summary, REQUIRED)
