"""Adapters connecting armlab to real trial pipelines (live reward sources)."""

from armlab.adapters.base import LiveSource, Trial

__all__ = ["LiveSource", "Trial"]
