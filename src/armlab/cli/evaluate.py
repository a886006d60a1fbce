"""``armlab evaluate LOG --policy NAME``: estimate offline what a policy would have earned on
a live experiment's logged trials (docs/decision-log.md)."""

from __future__ import annotations

import json

import click

from armlab.cli.app import App
from armlab.cli.errors import user_errors


@click.command("evaluate")
@click.argument("log", metavar="LOG")
@click.option("--policy", "policies", multiple=True, required=True,
              help="a registered policy plugin to evaluate (repeat to evaluate several over one log)")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="a parameter of the policy (repeatable; applies to every --policy)")
@click.option("--experiment", default=None, help="the experiment, when LOG is a storage URL")
@click.option("--bandit", default=0, show_default=True, help="the bandit whose trials are evaluated")
@click.option("--workers", default=1, show_default=True, help="processes running the policies (one task each)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object per policy and estimator")
@click.option("--out", "out", default=None, type=click.Path(),
              help="also write the evaluation as data: FILE.json, or a directory (DIR/evaluation.json); "
                   "`armlab report` renders it")
@click.pass_obj
def evaluate_command(app: App, log: str, policies: tuple[str, ...], params: tuple[str, ...],
                     experiment: str | None, bandit: int, workers: int, as_json: bool, out: str | None) -> None:
    """Estimate each policy's mean reward per trial on LOG (a journal file, or a storage URL
    with --experiment): replay, IPS, self-normalized IPS, direct and doubly robust, each with
    its standard error, 95 % interval (clipped to the declared reward range) and effective
    sample size, or why it does not apply."""
    from armlab.decisionlog.evaluate import evaluate_log, parse_params
    from armlab.decisionlog.results import write_evaluation

    with user_errors():
        evaluation = evaluate_log(log, list(policies), parse_params(params), experiment=experiment, bandit=bandit,
                                  workers=workers, registry=app.registry)
        if out is not None:
            click.echo(f"wrote {write_evaluation(evaluation.document(), out)}", err=True)
    if as_json:
        for row in evaluation.rows():
            click.echo(json.dumps(row))
        return
    click.echo(f"{log}: {evaluation.trials} completed trials"
               + (" (some propensities estimated from draws)" if evaluation.estimated_propensities else ""))
    click.echo(f"{'policy':<24} {'estimator':<14} {'estimate':>9} {'stderr':>8} {'95% interval':>19} {'ESS':>9}")
    for row in evaluation.rows():
        head = f"{row['policy']:<24} {row['estimator']:<14}"
        if row["estimate"] is None:
            click.echo(f"{head} does not apply: {row['reason']}")
            continue
        low, high = row["interval"]
        click.echo(f"{head} {row['estimate']:>9.4f} {row['stderr']:>8.4f} {f'{low:.4f} - {high:.4f}':>19} "
                   f"{row['effective_sample_size']:>9.0f}")
