"""The HTML report of a results folder (``negvocab report``): one self-contained file."""
