"""Authors' code copied for the tests (each file names its repository, path, commit and licence)."""
