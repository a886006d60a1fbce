"""``armlab run CONFIG``: run an experiment, print a short table, write ``summary.json``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

import click

from armlab.cli.app import App
from armlab.cli.errors import user_errors
from armlab.log import configure_logging
from armlab.orchestrator.runner import run_experiment


@click.command("run")
@click.argument("config_path", metavar="CONFIG.toml", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write summary.json (and other results) here.")
@click.option("--seed", type=click.IntRange(min=0), help="Override the config's seed.")
@click.option("--replicas", type=click.IntRange(min=1), help="Override the number of replicas.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), help="Write JSON-lines events to this file.")
@click.pass_obj
def run_command(
    app: App, config_path: str, out_dir: str | None, seed: int | None, replicas: int | None, log_path: str | None
) -> None:
    """Run the experiment in CONFIG.toml."""
    log_file: TextIO | None = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115
    try:
        if log_file is not None:
            configure_logging(stream=log_file, json=True)
        elif sys.stderr.isatty():
            configure_logging(level="warning")
        else:
            configure_logging(json=True)
        with user_errors():
            summary = run_experiment(
                config_path, seed=seed, replicas=replicas, out_dir=out_dir, registry=app.registry
            )
    finally:
        if log_file is not None:
            log_file.close()
    click.echo(format_table(summary))
    if out_dir is not None:
        click.echo(f"results: {Path(out_dir) / 'summary.json'}")


def format_table(summary: dict[str, Any]) -> str:
    """A short plain-text table of each policy's final metric."""
    objective = summary["objective"]
    lines = [
        f"{summary['name']}: {objective}, budget {summary['budget']}, "
        f"{summary['replicas']} replicas, seed {summary['seed']}"
    ]
    metric = "regret" if objective == "regret" else "error"
    lines.append(f"{'policy':<20} {metric + ' at budget':>22} {'seconds':>9} {'run-steps/s':>12}")
    for label, result in summary["policies"].items():
        if "error_rate" in result or "regret_mean" in result:
            values = result["regret_mean"] if metric == "regret" else result["error_rate"]
            errs = result["regret_stderr"] if metric == "regret" else result["error_stderr"]
            err = f" ± {errs[-1]:.4g}" if errs[-1] is not None else ""
            value = f"{values[-1]:.4g}{err}"
            speed = f"{result['run_steps_per_second']:.3g}" if result["run_steps_per_second"] else "-"
            lines.append(f"{label:<20} {value:>22} {result['wall_seconds']:>9.2f} {speed:>12}")
        else:  # live run
            lines.append(
                f"{label:<20} trials {result['trials']}, failed {result['failed']}, "
                f"recommendation {result['recommendation']}"
            )
    return "\n".join(lines)
