"""``armlab export LOG --out FILE``: a live experiment's decision log as Parquet or CSV."""

from __future__ import annotations

import click

from armlab.cli.app import App
from armlab.cli.errors import user_errors


@click.command("export")
@click.argument("log", metavar="LOG")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="the file to write: FILE.parquet or FILE.csv")
@click.option("--experiment", default=None, help="the experiment, when LOG is a storage URL")
@click.pass_obj
def export_command(app: App, log: str, out: str, experiment: str | None) -> None:
    """Write LOG (a journal file, or a storage URL with --experiment) as one row per trial:
    arm, unit, times, status, reward, metrics, propensity, policy, checkpoint
    (docs/decision-log.md)."""
    from armlab.decisionlog.export import write_log

    with user_errors():
        rows = write_log(log, out, experiment=experiment, registry=app.registry)
    click.echo(f"{out}: {rows} trials")
