"""``armlab run CONFIG``: run an experiment, print a short table, write ``summary.json``.

On a terminal a progress bar per policy (trials done, elapsed time, ETA) is drawn on stderr;
otherwise stderr carries JSON-lines logs only: a simulated run's estimated time first (a short
probe, :mod:`armlab.cli.time_estimate`), then its progress every 5 s
(:mod:`armlab.cli.progress_log`).  ``--plot`` draws the figures at the end;
``--workers``/``--shard-size``/``--executor``/``--scheduler`` spread a simulated run's tasks
over worker processes or a Dask cluster (:mod:`armlab.orchestrator.montecarlo.scale.shards`; same numbers,
progress as tasks advance); ``--journal`` makes a live run durable and resumable.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from armlab.cli.answers import describe_recommendation
from armlab.cli.app import App
from armlab.cli.progress_log import ProgressLog
from armlab.cli.time_estimate import estimate_seconds, format_duration
from armlab.cli.earlier_results import check_earlier_results
from armlab.cli.errors import UserError, user_errors
from armlab.cli.outputs import open_for_append, writable_dir
from armlab.config import ExperimentConfig
from armlab.errors import ArmlabError
from armlab.live_rules import has_live_source, refuse_ignored_live_fields
from armlab.log import configure_logging, get_logger
from armlab.memory_estimate import check_memory
from armlab.orchestrator.montecarlo.scale.saved_tasks import RunInterrupted
from armlab.orchestrator.montecarlo.scale.shards import ShardRunner
from armlab.orchestrator.runner import run_experiment
from armlab.plan import ExperimentPlan, build_plans, load_experiment
from armlab.plots import remove_figures, save_figures


@click.command("run")
@click.argument("config_path", metavar="CONFIG.toml", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write summary.json (and other results) here.")
@click.option("--seed", type=click.IntRange(min=0), help="Override the config's seed.")
@click.option("--replicas", type=click.IntRange(min=1), help="Override the number of replicas.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), help="Write JSON-lines events to this file.")
@click.option("--plot", is_flag=True, help="Also draw the figures (PNG) into the --out directory.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes that run the policies and sweep values side by side, this one included "
                   "(same numbers).")
@click.option("--shard-size", type=click.IntRange(min=1),
              help="Also split every run's replicas into blocks of this many (default: only when there "
                   "are fewer policies x sweep values than workers).")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="Where the work runs: local processes, or Dask (the 'dask' extra).")
@click.option("--scheduler", help="With --executor dask: the address of a running Dask scheduler "
                                  "(default: a local cluster of --workers - 1 processes, beside this one).")
@click.option("--journal", "journal_path", type=click.Path(dir_okay=False),
              help="Live experiments: journal every trial to this SQLite file (resumed if it exists).")
@click.option("--overwrite", is_flag=True,
              help="Replace the results of another run (another config, seed or scale) in the --out directory.")
@click.pass_obj
def run_command(
    app: App,
    config_path: str,
    out_dir: str | None,
    seed: int | None,
    replicas: int | None,
    log_path: str | None,
    plot: bool,
    workers: int,
    shard_size: int | None,
    executor: str,
    scheduler: str | None,
    journal_path: str | None,
    overwrite: bool,
) -> None:
    """Run the experiment in CONFIG.toml.

    A simulated run with --out DIR saves each finished task there: stopped by Ctrl-C (exit
    status 130), it writes a partial summary, and the same command continues it, with the
    same numbers.  A live experiment run with --journal FILE survives a crash: run the same
    command (or armlab resume FILE) again and it replays the journal and continues.  An --out
    DIR holding the results of another config, seed or scale (or of a live run without a
    journal) is refused unless --overwrite; the same command again runs (same numbers).
    """
    if plot and out_dir is None:
        raise click.UsageError("--plot needs --out DIR: the figures are written next to summary.json")
    with user_errors():
        scale = ShardRunner(workers, executor, scheduler, shard_size)
    with scale.warm():  # worker processes start while the config is read, checked and probed
        with user_errors():  # everything that can be wrong is refused before the work starts
            loaded = load_experiment(config_path, app.registry)  # before the overrides: it says what the file set
            live = has_live_source(loaded, app.registry)
            refuse_ignored_live_fields(loaded, live, replicas=replicas)
            config = loaded.with_overrides(seed=seed, replicas=replicas)
            plans = [plan for _, plan in build_plans(config, app.registry)]
            check_memory(plans, workers=workers, block=shard_size, remote=scheduler is not None)
        if out_dir is not None:
            writable_dir(out_dir, "--out")
            check_earlier_results(out_dir, config, live=live, journaled=journal_path is not None, overwrite=overwrite)
        log_file: TextIO | None = open_for_append(log_path, "--log") if log_path else None
        try:
            with _interrupted(live, journal_path), _progress(config) as progress:
                if log_file is not None:
                    configure_logging(stream=log_file, json=True)
                elif progress is not None:  # sys.stderr now goes through the progress display
                    configure_logging(level="warning", json=False)
                else:
                    configure_logging(json=True)
                if progress is None:  # off a terminal: the estimate and progress go to the log
                    progress = ProgressLog(policy_totals(config))
                    with user_errors():
                        _log_the_estimate(plans, workers)
                with user_errors():
                    summary = run_experiment(
                        config, out_dir=out_dir, registry=app.registry, progress=progress, scale=scale,
                        journal=journal_path,
                    )
        finally:
            if log_file is not None:
                log_file.close()
    click.echo(format_table(summary, arm_names(config)))
    stale: list[Path] = []
    if out_dir is not None:
        click.echo(f"results: {Path(out_dir) / 'summary.json'}")
        stale = remove_figures(out_dir)  # they were drawn from the summary just replaced
    if plot:
        assert out_dir is not None
        try:
            paths = save_figures(summary, out_dir)
        except ArmlabError as exc:  # the run itself succeeded; say why there is no figure
            click.echo(f"no figures: {exc}", err=True)
        else:
            click.echo("figures: " + ", ".join(str(p) for p in paths))
            stale = [path for path in stale if path not in paths]
    if stale:
        click.echo("removed the figures of an earlier run: " + ", ".join(str(p) for p in stale), err=True)
    _require_observations(summary)


log = get_logger("armlab.cli")

#: The exit status of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


@contextmanager
def _interrupted(live: bool, journal: str | None) -> Iterator[None]:
    """Ctrl-C: say what was saved and how to go on, and exit with :data:`INTERRUPTED`
    instead of click's bare ``Aborted!``: a simulated run's saved tasks, a live run's journal
    (``journal``), or that a live run without one kept nothing."""
    try:
        yield
    except RunInterrupted as exc:
        missing = exc.summary["missing"]
        click.echo(
            f"interrupted: the finished tasks are saved in {exc.folder} and the partial summary "
            f"({len(missing)} policy runs unfinished) in {exc.folder.parent / 'summary.json'}; "
            "run the same command again to continue where it stopped (same numbers)",
            err=True,
        )
        raise click.exceptions.Exit(INTERRUPTED) from None
    except KeyboardInterrupt:
        if journal is not None:
            advice = (f"the journal {journal} holds the run (every trial reported so far); continue it with "
                      f"armlab resume {journal}, or run the same command again")
        elif live:
            advice = "a live run keeps its trials only with --journal FILE (armlab resume FILE then continues it)"
        else:
            advice = "a simulated run keeps its finished tasks only with --out DIR (the same command then continues from them)"
        click.echo(f"interrupted: {advice}", err=True)
        raise click.exceptions.Exit(INTERRUPTED) from None


def _require_observations(summary: dict[str, Any]) -> None:
    """Fail a live run in which no trial returned a result: its recommendation is no answer,
    only the arm a policy starts with (usually every trial failed the same way)."""
    for label, result in summary["policies"].items():
        if "completed" in result and result["completed"] == 0:
            raise UserError(
                f"live run {label!r}: none of its {result['trials']} trials returned a result "
                f"({result['failed']} failed, {result['abandoned']} abandoned), so its recommendation "
                "means nothing; the log (--log FILE) gives each failure's reason (a command, module or "
                "URL that cannot be reached from here fails every trial)"
            )


def arm_names(config: ExperimentConfig) -> list[list[str] | None]:
    """Per bandit, the names its source gives its arms (``arms = ["A", "B"]``), or ``None``."""
    names: list[list[str] | None] = []
    for bandit in config.bandit_list():
        arms = bandit.source.params.get("arms")
        names.append([str(a) for a in arms] if isinstance(arms, list) else None)
    return names


def policy_totals(config: ExperimentConfig) -> dict[str, int]:
    """Each policy's trials over the experiment: replicas x budget, summed over the sweep's runs."""
    totals = dict.fromkeys((p.display_label for p in config.policies), 0)
    for _, variant in config.variants():
        for label in totals:
            totals[label] += variant.replicas * variant.problem.budget
    return totals


@contextmanager
def _progress(config: ExperimentConfig) -> Iterator[ProgressDisplay | None]:
    """A live progress display on a terminal's stderr; ``None`` when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    with ProgressDisplay.for_config(config, Console(stderr=True)) as display:
        yield display


def _log_the_estimate(plans: list[ExperimentPlan], workers: int) -> None:
    """Off a terminal, log how long the simulated run should take (a probe, as ``armlab
    validate`` prints it), shared among ``workers`` processes when there is work for each."""
    seconds = estimate_seconds(plans)
    if seconds is not None:
        share = min(workers, sum(len(plan.policies) for plan in plans))
        log.info("time_estimated", seconds=round(seconds / share, 2), estimate=format_duration(seconds / share),
                 processes=share, experiment=plans[0].config.name)


class ProgressDisplay:
    """``progress(label, done, total)`` callback that draws one rich bar per policy.

    Bars appear with the first report (live runs send none, so they get no bars).  ``done``
    counts the policy's trials over all runs of a ``[sweep]``, however they are spread over
    workers; the bars are completed on a clean exit.
    """

    def __init__(self, totals: Mapping[str, int], console: Console) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        self._totals = dict(totals)
        self._tasks: dict[str, TaskID] = {}

    @classmethod
    def for_config(cls, config: ExperimentConfig, console: Console) -> ProgressDisplay:
        """Bars sized from the config (:func:`policy_totals`)."""
        return cls(policy_totals(config), console)

    def __call__(self, label: str, done: int, total: int) -> None:
        if not self._tasks:
            self._tasks = {name: self.progress.add_task(name, total=n) for name, n in self._totals.items()}
        if label in self._tasks:
            self.progress.update(self._tasks[label], completed=done)

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: Any) -> None:
        if exc_type is None:
            for task in self._tasks.values():
                self.progress.update(task, completed=self.progress.tasks[task].total)
        self.progress.stop()


def format_table(summary: dict[str, Any], names: list[list[str] | None] | None = None) -> str:
    """A short plain-text table of each policy's result, with the metric its objective is
    judged by: error or regret at the budget, plus the stopping time of fixed-confidence
    rules and the bandits completed in multi-bandit runs; every value of a sweep; a live
    run's trials and recommendation (by arm name, when ``names``, per bandit, has them)."""
    objective = summary["objective"]
    metric = "regret" if objective == "regret" else "error"
    lines = [
        f"{summary['name']}: {objective}, budget {summary['budget']}, "
        f"{summary['replicas']} replicas, seed {summary['seed']}"
    ]
    policies = summary["policies"]
    if "sweep" in summary:
        return "\n".join(lines + _sweep_rows(summary, metric))
    live = {label: r for label, r in policies.items() if "error_rate" not in r and "regret_mean" not in r}
    if live:
        lines.append(f"{'policy':<20} {'trials':>7} {'completed':>10} {'failed':>7}  recommendation")
        for label, result in live.items():
            answer = describe_recommendation(result["recommendation"], names or [], "bandits" in result)
            lines.append(f"{label:<20} {result['trials']:>7} {result['completed']:>10} {result['failed']:>7}  {answer}")
        return "\n".join(lines)
    extra = _extra_columns(policies)
    lines.append(f"{'policy':<20} {metric + ' at budget':>22}" + "".join(f" {title:>22}" for title, _ in extra)
                 + f" {'seconds':>9} {'run-steps/s':>12}")
    for label, result in policies.items():
        values = result["regret_mean"] if metric == "regret" else result["error_rate"]
        errs = result["regret_stderr"] if metric == "regret" else result["error_stderr"]
        cells = [_with_error(values[-1], errs[-1])] + [column(result) for _, column in extra]
        speed = f"{result['run_steps_per_second']:.3g}" if result["run_steps_per_second"] else "-"
        lines.append(f"{label:<20} " + " ".join(f"{cell:>22}" for cell in cells)
                     + f" {result['wall_seconds']:>9.2f} {speed:>12}")
    return "\n".join(lines)


def _with_error(value: float | None, err: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g} ± {err:.4g}" if err is not None else f"{value:.4g}"


def _extra_columns(policies: dict[str, Any]) -> list[tuple[str, Any]]:
    """The columns some policies' objectives are judged by, when any policy has them."""
    columns = []
    if any("stopping_time_mean" in r for r in policies.values()):
        columns.append(("stopping time", lambda r: _with_error(r.get("stopping_time_mean"), r.get("stopping_time_stderr"))))
        columns.append(("error at stop", lambda r: _with_error(r.get("error_rate_at_stop"), None)))
    if any("bandits_completed_mean" in r for r in policies.values()):
        columns.append(("bandits completed", lambda r: _with_error(
            (r.get("bandits_completed_mean") or [None])[-1], (r.get("bandits_completed_stderr") or [None])[-1])))
    return columns


def _sweep_rows(summary: dict[str, Any], metric: str) -> list[str]:
    """One row per policy with its final metric at every value of the sweep."""
    parameter, values = summary["sweep"]["parameter"], summary["sweep"]["values"]
    lines = [f"{metric} at the budget of each run, by {parameter}:",
             f"{'policy':<20} " + " ".join(f"{str(v):>20}" for v in values)]
    for label, result in summary["policies"].items():
        means = result["regret_mean"] if metric == "regret" else result["error_rate"]
        errs = result["regret_stderr"] if metric == "regret" else result["error_stderr"]
        lines.append(f"{label:<20} " + " ".join(f"{_with_error(m, e):>20}" for m, e in zip(means, errs, strict=True)))
    return lines
