"""``armlab compare`` and ``armlab report``: a finished run's paired differences, and all of it in one HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from armlab.cli.errors import UserError, user_errors
from armlab.plots import load_summary
from armlab.report import render_file

__all__ = ["compare_command", "report_command"]


@click.command("compare")
@click.argument("source", metavar="SUMMARY_OR_DIR", type=click.Path(exists=True))
def compare_command(source: str) -> None:
    """Print, for each pair of policies, the paired difference of their final metric.

    Policies of one run see the same rewards (common random numbers), so differences are
    measured replica by replica: the standard error is that of the paired differences, far
    smaller than the separate standard errors suggest ("unpaired" column).  A difference is
    marked * when its 95 % interval excludes 0.
    """
    with user_errors():
        summary = load_summary(source)
    runs = summary.get("runs") or [summary]
    if not any("comparisons" in run for run in runs):
        raise UserError(f"{source}: no comparisons in this summary (a run with one policy, or written by "
                        "an armlab before comparisons): run the experiment again with two or more policies")
    for run in runs:
        if "comparisons" in run:
            title = f"{summary['name']}" + (f", {summary['sweep']['parameter']} = {run['sweep_value']}"
                                             if "sweep_value" in run else "")
            _print_table(title, run["comparisons"])


def _print_table(title: str, comparisons: dict[str, Any]) -> None:
    click.echo(f"{title}: paired differences of the final {comparisons['metric']} "
               f"({comparisons['replicas']} replicas)")
    click.echo(f"  {'first - second':<34} {'difference':>11} {'stderr':>9} {'95% interval':>24} {'unpaired':>9}")
    for pair in comparisons["pairs"]:
        low, high = pair["ci95"]
        mark = " *" if pair["significant"] else ""
        click.echo(f"  {pair['first'] + ' - ' + pair['second']:<34} {pair['difference']:>11.4g} "
                   f"{pair['stderr']:>9.3g} {f'[{low:.4g}, {high:.4g}]':>24} {pair['unpaired_stderr']:>9.3g}{mark}")


@click.command("report")
@click.argument("source", metavar="SUMMARY_OR_DIR", type=click.Path(exists=True))
@click.option("--out", "target", type=click.Path(dir_okay=False),
              help="The HTML file to write. Default: report.html next to the summary.")
def report_command(source: str, target: str | None) -> None:
    """Write one self-contained HTML report of a finished run: figures inline, the results
    table, the paired comparisons, the config and the versions it ran with.  SOURCE may also
    be an offline evaluation (`armlab evaluate --out`): its estimates as a table and figure."""
    with user_errors():
        path = Path(target) if target else (Path(source) if Path(source).is_dir() else Path(source).parent) / "report.html"
        text = render_file(source)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"--out {path}: cannot write the report ({exc.strerror or exc})") from None
    click.echo(str(path))
