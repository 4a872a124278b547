"""``canary``: scan (embedded default), submit/status (broker), worker, beat, sweep, flower, eval,
metrics, serve and review. One module per group of commands; this one wires them into the app."""

from __future__ import annotations

import sys

import typer

from worker.cli import gate, ops
from worker.cli.ops import flower_argv
from worker.cli.review import review_app
from worker.cli.review_extras import audit_command, export_command
from worker.cli.stuck import stuck_command
from worker.cli.suppress import suppress_command, suppressions_command, unsuppress_command
from worker.web.review.commands import add_user_command, token_command
from worker.web.review.commands import serve_command as review_serve_command
from worker.web.serve import serve_command

app = typer.Typer(
    name="canary",
    help="Canary Gate: classify untrusted artifacts before an AI agent reads them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _setup() -> None:
    """Canary Gate: classify untrusted artifacts before an AI agent reads them."""
    import logging

    from worker import startup
    from worker.logs import configure_logging

    configure_logging(logging.WARNING)
    startup.resume()  # the command's modules are imported (worker.startup)


PASSES_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}  # the rest goes to Celery
app.command()(gate.scan)
app.command()(gate.submit)
app.command()(gate.status)
app.command(context_settings=PASSES_ARGS)(ops.worker)
app.command(context_settings=PASSES_ARGS)(ops.beat)
app.command(context_settings=PASSES_ARGS)(ops.flower)
app.command()(ops.sweep)
review_app.command("serve")(review_serve_command)
review_app.command("add-user")(add_user_command)
review_app.command("token")(token_command)
app.add_typer(review_app, name="review")
app.command("eval")(ops.eval_command)
app.command("metrics")(ops.metrics)
app.command("serve")(serve_command)
app.command("stuck")(stuck_command)
review_app.command("audit")(audit_command)
review_app.command("export")(export_command)
review_app.command("suppress")(suppress_command)
review_app.command("suppressions")(suppressions_command)
review_app.command("unsuppress")(unsuppress_command)


def main() -> None:
    """The ``canary`` entry point: configuration and infrastructure errors exit 2 and 3 with one
    line (see ``worker.exits``); anything else is a bug and keeps its traceback."""
    from worker import startup
    from worker.exits import describe, exit_code_for

    startup.pause()  # until the command starts (worker.startup); python -m worker paused earlier
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        code = exit_code_for(exc)
        if code is None:
            raise
        typer.echo(f"canary: {describe(exc)}", err=True)
        sys.exit(code)


__all__ = ["app", "flower_argv", "main"]
