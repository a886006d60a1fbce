"""The journal of a live experiment: an append-only SQLite file of its events.

``schema`` (the record type and the tables), ``store`` (:class:`Journal`: create, open, read,
append), ``integrity`` (the chain, the write-ahead log, the tail marker), ``migration``
(older formats), ``repair`` (salvaging a damaged journal) and ``group_commit`` (batched
durable writes from an event loop).  Nothing here imports the live driver.
"""
