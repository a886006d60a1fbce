"""Built-in result sinks."""

from __future__ import annotations

from armlab.plugins import hookimpl
from armlab.plugins.sinks.csv_table import CsvTable
from armlab.plugins.sinks.json_summary import JsonSummary


@hookimpl
def armlab_register_sinks():
    return [JsonSummary, CsvTable]
