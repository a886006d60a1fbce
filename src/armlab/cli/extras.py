"""Registers armlab's optional built-in commands (plots, scaffolding) through the plugin hook.

``armlab plot SUMMARY_OR_DIR`` draws the figures a summary supports (see
:mod:`armlab.plots`); ``armlab new-plugin NAME`` writes a third-party plugin package from
the template shipped in :mod:`armlab.templates`.
"""

from __future__ import annotations

from pathlib import Path

import click

from armlab.cli.app import App
from armlab.cli.errors import user_errors
from armlab.cli.outputs import writable_dir, writable_file
from armlab.plots import FIGURE_KINDS, figure_file, load_summary, save_figures
from armlab.plugins import hookimpl
from armlab.templates.scaffold import check_unclaimed, plugin_names, render_plugin


@click.command("plot")
@click.argument("source", metavar="SUMMARY_OR_DIR", type=click.Path(exists=True))
@click.option(
    "--out",
    "target",
    type=click.Path(),
    help="A .png, .svg or .pdf file, which holds every figure (one above the other), or a "
    "directory (a name without one of these suffixes), which gets one <kind>.png per figure. "
    "Default: <kind>.png next to the summary.",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice([k.name for k in FIGURE_KINDS]),
    help="Only this figure (repeatable). Default: every figure the summary has data for.",
)
@click.option("--logx", is_flag=True, help="Logarithmic x axis.")
@click.option("--logy", is_flag=True, help="Logarithmic y axis.")
def plot_command(source: str, target: str | None, kinds: tuple[str, ...], logx: bool, logy: bool) -> None:
    """Draw the figures of a summary.json (or of the results directory holding it)."""
    path = Path(source)
    destination = Path(target) if target else path if path.is_dir() else path.parent
    with user_errors():
        summary = load_summary(path)
        if figure_file(destination):
            writable_file(destination, "--out")
        else:
            writable_dir(destination, "--out")
        paths = save_figures(summary, destination, kinds or None, logx=logx, logy=logy)
    for written in paths:
        click.echo(str(written))


@click.command("new-plugin")
@click.argument("name")
@click.option(
    "--dir", "dest", type=click.Path(file_okay=False), help="Where to create the package. Default: ./armlab-NAME."
)
@click.pass_obj
def new_plugin_command(app: App, name: str, dest: str | None) -> None:
    """Create a plugin package for policy NAME: pyproject with the armlab entry point, a
    vectorized policy to edit, its tests and an example experiment.  NAME must not be taken
    by an installed plugin: once installed, the package would make that name unusable."""
    with user_errors():
        dest_dir = Path(dest or plugin_names(name)["dist"])
        check_unclaimed(name, app.registry)
        writable_dir(dest_dir, "--dir")
        files = render_plugin(name, dest_dir)
    click.echo(f"created {dest_dir}/")
    for file in files:
        click.echo(f"  {file}")
    click.echo(f"next: cd {dest_dir} && pip install -e '.[test]' && pytest && armlab plugins --kind policy")


@hookimpl
def armlab_register_commands(cli: click.Group) -> None:
    cli.add_command(plot_command)
    cli.add_command(new_plugin_command)
