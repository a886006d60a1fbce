"""What :func:`~armlab.orchestrator.runner.run_experiment` returns: the summary, plus a table.

The summary stays a plain ``dict`` (the content of ``summary.json``), so every caller that
indexes it keeps working; :meth:`ExperimentResult.to_pandas` adds the tidy table that
``results.csv`` holds, built by the same code as the CSV sink.
"""

from __future__ import annotations

from typing import Any

from armlab.plugins.sinks.csv_table import table_columns, tidy_rows

__all__ = ["ExperimentResult"]


class ExperimentResult(dict[str, Any]):
    """The summary of an experiment (a ``dict``: the content of ``summary.json``)."""

    def to_pandas(self) -> Any:
        """The tidy table of ``results.csv`` as a ``pandas.DataFrame``: one row per policy and
        checkpoint (and sweep value), with the same columns.  pandas is optional: it is only
        imported here."""
        try:
            import pandas
        except ImportError:
            raise ImportError(
                "ExperimentResult.to_pandas() needs pandas, which armlab does not install: pip install pandas "
                "(the same table is written as results.csv with out_dir=...)"
            ) from None
        rows = tidy_rows(self)
        return pandas.DataFrame(rows, columns=table_columns(rows))
