"""The ``negvocab`` Typer application, its ``build`` sub-group and the one place errors are shown.

Command modules (``negvocab.cli.<topic>``) register on :data:`app` / :data:`build_app`; they only
parse options, call the public API and print. A :class:`~negvocab.errors.NegvocabError` raised
anywhere below becomes one ``error: ...`` line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import logging
from typing import Any

import typer
from typer._click.exceptions import UsageError  # typer >= 0.26 vendors click; pinned in pyproject
from typer.core import TyperGroup

from negvocab.errors import NegvocabError

EXIT_USER_ERROR = 2


class _Group(TyperGroup):
    """Turns user-facing errors into one line on stderr and a non-zero exit."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NegvocabError as e:
            typer.echo(f"error: {e}", err=True)
            ctx.exit(EXIT_USER_ERROR)
        except UsageError as e:  # a sub-command's bad flag or missing argument: one line too
            where = e.ctx.command_path if e.ctx is not None else ctx.command_path
            typer.echo(f"error: {e.format_message()} (see '{where} --help')", err=True)
            ctx.exit(EXIT_USER_ERROR)
        except KeyboardInterrupt:
            typer.echo("interrupted; re-run the same command to resume", err=True)
            ctx.exit(130)


app = typer.Typer(
    cls=_Group,
    name="negvocab",
    help="Negative-label vocabularies for zero-shot OOD detection.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
build_app = typer.Typer(
    cls=_Group,
    help="Build a vocabulary (wordnet, gpt, eoe, oracle).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(build_app, name="build")


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress and timings (INFO)."),
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    if version:
        from negvocab import __version__

        typer.echo(__version__)
        raise typer.Exit()
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
