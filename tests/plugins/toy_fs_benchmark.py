"""A full-spectrum benchmark defined outside negvocab, as data: ``toy-fs``, an ID list, one covariate-shifted ID
list (``csid``) joined to it, a near and a far OOD folder. Registered on import, so a grid file's
``plugins = ["tests.plugins.toy_fs_benchmark"]`` gives it to a child process too; :func:`register` again
after a test removed it (the module stays imported)."""

from __future__ import annotations

import negvocab

NAME = "toy-fs"
DOC = {
    "name": NAME,
    "title": "A toy full-spectrum benchmark given as data",
    "source": "tests",
    "id": {"layout": "list", "path": "lists/id.txt", "image_root": "images"},
    "csid": {"shifted": {"layout": "list", "path": "lists/shifted.txt", "image_root": "images"}},
    "ood": {
        "near-one": {"group": "near", "layout": "folder", "path": "near"},
        "far-one": {"group": "far", "layout": "folder", "path": "far"},
    },
}


def register() -> None:
    negvocab.register_benchmark(DOC, replace=True)


register()
