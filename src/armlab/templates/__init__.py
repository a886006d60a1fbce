"""Templates shipped with armlab (package data) and the code that renders them."""
