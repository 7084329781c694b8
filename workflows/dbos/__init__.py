"""The DBOS sample: one process that holds the long, compacted conversation as a DBOS workflow."""
