"""``armlab plugins``: list registered plugins, their parameters and where they come from."""

from __future__ import annotations

import json

import click

from armlab.cli.app import App
from armlab.plugins.registry import KINDS


@click.command("plugins")
@click.option("--kind", type=click.Choice(sorted(KINDS)), help="Only this kind of plugin.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def plugins_command(app: App, kind: str | None, as_json: bool) -> None:
    """List registered policies, sources, allocators and sinks."""
    infos = [info.describe() for info in app.registry.infos(kind)]
    if as_json:
        click.echo(json.dumps(infos, indent=2))
        return
    current = None
    for info in infos:
        if info["kind"] != current:
            current = info["kind"]
            click.echo(f"\n{current}:" if infos[0] is not info else f"{current}:")
        click.echo(f"  {info['name']:<16} {info['summary']}  [{info['origin']}]")
        for field, meta in info["params"].items():
            default = "required" if meta["required"] else f"default {meta['default']!r}"
            text = f" - {meta['description']}" if meta["description"] else ""
            click.echo(f"      {field} ({meta['type']}, {default}){text}")
