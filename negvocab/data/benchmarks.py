"""Named OOD benchmarks: the ImageNet-1k OOD sets users evaluate on, read from a data root in the
layout each project publishes, each set named and put in its group (near- or far-OOD).

- ``openood-near``, ``openood-far``, ``openood``: OpenOOD v1.5's ImageNet-1k splits (near: SSB-hard,
  NINCO; far: iNaturalist, Textures, OpenImage-O) from its ``benchmark_imglist/imagenet/test_*.txt``
  lists (``path label`` lines) under a root that also holds ``images_largescale/`` (and
  ``images_classic/`` for Textures), as OpenOOD's download script leaves them.
- ``mos``: the four far-OOD sets of MOS (Huang & Li, CVPR 2021), as MCM and NegLabel read them:
  ``iNaturalist/``, ``SUN/``, ``Places/`` (each an ``images/`` folder) and ``dtd/images/<class>/``.
- ``imagenet-o``: ImageNet-O (Hendrycks et al., CVPR 2021), ``imagenet-o/<wnid>/*.jpg``.
- ``fi-imagenet-1k``: OOD images inside the ImageNet-1k validation set (:mod:`negvocab.data.fi_imagenet`);
  it carves the ID set too, so it is given as ``--id VAL --fi-ood LIST``, not as ``--ood``.

``--ood NAME=ROOT`` with a benchmark's name opens all its sets (:func:`open_benchmark`); the results
then carry ``near-ood`` and ``far-ood`` mean rows beside ``mean`` (:func:`ood_group`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from negvocab.data.images import ImageSet, class_folders, image_folder, image_list
from negvocab.errors import InputError

__all__ = [
    "BENCHMARKS",
    "GROUPS",
    "Benchmark",
    "BenchmarkSet",
    "benchmark_table",
    "get_benchmark",
    "ood_group",
    "open_benchmark",
]

#: the OOD groups a set can belong to, and the name of their mean row in results
GROUPS: dict[str, str] = {"near": "near-ood", "far": "far-ood"}


@dataclass(frozen=True)
class BenchmarkSet:
    """One OOD set of a benchmark: its table name, group and where under the data root it lives.

    ``layout``: ``list`` (``where`` is an image list, ``image_dir`` the folder its paths start
    from), ``folder`` (every image below ``where``) or ``classes`` (class folders in ``where``).
    """

    name: str
    group: str
    layout: str
    where: str
    image_dir: str = ""
    source: str = ""

    def expects(self) -> str:
        """Where the set's files are expected, relative to the data root, in words."""
        if self.layout == "list":
            return f"{self.where} (paths from {self.image_dir}/)"
        return f"{self.where}/" + ("<class>/*" if self.layout == "classes" else "**/*")

    def open(self, root: Path) -> ImageSet:
        """The set's images under ``root`` (:class:`InputError` naming the missing file or folder)."""
        where = root / self.where
        if self.layout == "list":
            if not where.is_file():
                raise InputError(
                    f"{self.name}: no image list {where} (expected under the data root {root}: {self.expects()})"
                )
            images = image_list(where, root=root / self.image_dir, name=self.name)
        else:
            if not where.is_dir():
                raise InputError(
                    f"{self.name}: no folder {where} (expected under the data root {root}: {self.expects()})"
                )
            images = (class_folders if self.layout == "classes" else image_folder)(where, name=self.name)
        return ImageSet(
            images.name,
            images.paths,
            images.ids,
            images.labels,
            {**images.info, "benchmark_set": self.name, "ood_group": self.group},
        )


@dataclass(frozen=True)
class Benchmark:
    """A named benchmark: its OOD sets, the ID set it is meant with, and where it comes from."""

    name: str
    title: str
    sets: tuple[BenchmarkSet, ...]
    id_set: str
    source: str


_LISTS = "benchmark_imglist/imagenet"
_SSB = BenchmarkSet(
    "ssb-hard",
    "near",
    "list",
    f"{_LISTS}/test_ssb_hard.txt",
    "images_largescale",
    "Vaze et al., ICLR 2022 (OpenOOD v1.5)",
)
_NINCO = BenchmarkSet(
    "ninco",
    "near",
    "list",
    f"{_LISTS}/test_ninco.txt",
    "images_largescale",
    "Bitterwolf et al., ICML 2023 (OpenOOD v1.5)",
)
_INAT = BenchmarkSet(
    "inaturalist",
    "far",
    "list",
    f"{_LISTS}/test_inaturalist.txt",
    "images_largescale",
    "Huang & Li, CVPR 2021 (OpenOOD v1.5)",
)
_TEXTURES = BenchmarkSet(
    "textures",
    "far",
    "list",
    f"{_LISTS}/test_textures.txt",
    "images_classic",
    "Cimpoi et al., CVPR 2014 (OpenOOD v1.5)",
)
_OPENIMAGE_O = BenchmarkSet(
    "openimage-o",
    "far",
    "list",
    f"{_LISTS}/test_openimage_o.txt",
    "images_largescale",
    "Wang et al., CVPR 2022 (OpenOOD v1.5)",
)
_OPENOOD_ID = (
    f"--id ROOT/{_LISTS}/test_imagenet.txt --image-root ROOT/images_largescale (OpenOOD's ImageNet-1k test split)"
)
_MOS_ID = "--id IMAGENET_VAL (the 50,000 ImageNet-1k validation images)"
_MOS = "Huang & Li, MOS: Towards scaling out-of-distribution detection for large semantic space, CVPR 2021"

BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark("openood-near", "OpenOOD v1.5 ImageNet-1k near-OOD", (_SSB, _NINCO), _OPENOOD_ID, "Zhang et al., OpenOOD v1.5, 2023"),
        Benchmark("openood-far", "OpenOOD v1.5 ImageNet-1k far-OOD", (_INAT, _TEXTURES, _OPENIMAGE_O), _OPENOOD_ID, "Zhang et al., OpenOOD v1.5, 2023"),
        Benchmark("openood", "OpenOOD v1.5 ImageNet-1k, near and far", (_SSB, _NINCO, _INAT, _TEXTURES, _OPENIMAGE_O), _OPENOOD_ID,
                  "Zhang et al., OpenOOD v1.5, 2023"),
        Benchmark("mos", "The MOS four (iNaturalist, SUN, Places, Textures)", (
            BenchmarkSet("inaturalist", "far", "folder", "iNaturalist", source=_MOS),
            BenchmarkSet("sun", "far", "folder", "SUN", source=_MOS),
            BenchmarkSet("places", "far", "folder", "Places", source=_MOS),
            BenchmarkSet("textures", "far", "classes", "dtd/images", source="Cimpoi et al., CVPR 2014 (as MOS)"),
        ), _MOS_ID, _MOS),
        Benchmark("imagenet-o", "ImageNet-O", (BenchmarkSet("imagenet-o", "far", "classes", "imagenet-o", source="Hendrycks et al., CVPR 2021"),),
                  _MOS_ID, "Hendrycks et al., Natural adversarial examples, CVPR 2021"),
    )
}  # fmt: skip

#: Fi-ImageNet-1k is listed beside them, but is given by --fi-ood (it carves the ID set)
FI_IMAGENET = {
    "name": "fi-imagenet-1k",
    "title": "Fi-ImageNet-1k (OOD images inside the ImageNet-1k validation set)",
    "group": "near",
    "expects": "--id IMAGENET_VAL --fi-ood fi_ood.txt [--fi-ambiguous fi_ambiguous.txt]: the lists name ILSVRC2012_val_* ids",
    "source": "Rozumnyi et al., arXiv:2609.01027",
}


def get_benchmark(name: str) -> Benchmark:
    """The benchmark ``name`` (case-insensitive) or :class:`InputError` listing the known ones."""
    key = name.strip().lower()
    if key == FI_IMAGENET["name"]:
        raise InputError(f"{name}: Fi-ImageNet-1k is given as {FI_IMAGENET['expects']}")
    if key not in BENCHMARKS:
        raise InputError(f"unknown benchmark {name!r}; choose one of {', '.join(BENCHMARKS)}")
    return BENCHMARKS[key]


def open_benchmark(name: str, root: str | os.PathLike[str]) -> dict[str, ImageSet]:
    """Every OOD set of benchmark ``name`` under the data ``root``, by set name (in the benchmark's order)."""
    bench = get_benchmark(name)
    base = Path(root).expanduser()
    if not base.is_dir():
        raise InputError(f"{bench.name}={root}: no such data root (a folder holding {bench.sets[0].expects()}, ...)")
    return {s.name: s.open(base) for s in bench.sets}


def ood_group(set_name: str) -> str | None:
    """``near`` or ``far`` for a set named as in a benchmark (``ninco``, ``textures``, ...; the
    Fi-ImageNet-1k set is near), else None: the group means of the results rows read this."""
    key = set_name.strip().lower()
    if key == FI_IMAGENET["name"]:
        return str(FI_IMAGENET["group"])
    for bench in BENCHMARKS.values():
        for s in bench.sets:
            if s.name == key:
                return s.group
    return None


def benchmark_table() -> list[Mapping[str, str]]:
    """One row per benchmark set (and Fi-ImageNet-1k): benchmark, set, group, where, ID set, source."""
    rows: list[Mapping[str, str]] = []
    for b in BENCHMARKS.values():
        for s in b.sets:
            rows.append(
                {
                    "benchmark": b.name,
                    "set": s.name,
                    "group": s.group,
                    "expects": s.expects(),
                    "id": b.id_set,
                    "source": s.source or b.source,
                }
            )
    fi = FI_IMAGENET
    rows.append(
        {
            "benchmark": fi["name"],
            "set": fi["name"],
            "group": fi["group"],
            "expects": fi["expects"],
            "id": "the rest of IMAGENET_VAL",
            "source": fi["source"],
        }
    )
    return rows
