"""MovieLens replay (seed 004 section 5.2): ratings loader, ALS completion, replay source."""
