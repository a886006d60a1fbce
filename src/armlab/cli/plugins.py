"""``armlab plugins``: list registered plugins, their parameters and where they come from.

Names that several plugins claim are listed apart (using one fails, naming both), and so
are the names ``ARMLAB_BLOCK_PLUGINS`` blocks.
"""

from __future__ import annotations

import json
import textwrap

import click

from armlab.cli.app import App
from armlab.plugins.registry import KINDS

#: Width of the listing's wrapped summary lines.
WIDTH = 100


@click.command("plugins")
@click.option("--kind", type=click.Choice(sorted(KINDS)), help="Only this kind of plugin.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def plugins_command(app: App, kind: str | None, as_json: bool) -> None:
    """List registered policies, sources, allocators and sinks."""
    registry = app.registry
    infos = [info.describe() for info in registry.infos(kind)]
    if as_json:
        click.echo(json.dumps(infos, indent=2))
        return
    current = None
    for info in infos:
        if info["kind"] != current:
            current = info["kind"]
            click.echo(f"\n{current}:" if infos[0] is not info else f"{current}:")
        first = f"  {info['name']:<16} "
        origin = f"[{info['origin']}]".replace(" ", "\0")  # wrapped as one word
        text = textwrap.fill(f"{info['summary']}  {origin}", WIDTH, initial_indent=first,
                             subsequent_indent=" " * len(first))
        click.echo(text.replace("\0", " "))
        for field, meta in info["params"].items():
            default = "required" if meta["required"] else f"default {meta['default']!r}"
            text = f" - {meta['description']}" if meta["description"] else ""
            click.echo(f"      {field} ({meta['type']}, {default}){text}")
    for name, claims in registry.clashes(kind).items():
        click.echo(f"\nunusable, claimed by {len(claims)} {claims[0].kind} plugins: {name} "
                   f"({' and '.join(claim.origin for claim in claims)})")
    for name, by in registry.blocked.items():
        click.echo(f"blocked by {by}: {name}")
