"""Image embeddings: files, folders or datasets through a DataLoader, with GL-MCM patch features.

Sources accepted by :func:`encode_images`:

- an :class:`~negvocab.data.images.ImageSet` (its paths, in order; rows keep the set's ids);
- a list of image paths (kept in that order);
- a folder, searched recursively for image files (sorted paths);
- a dataset object: anything with ``__len__`` and ``__getitem__`` whose items are
  ``(image, id)`` pairs, ``image`` a PIL image, a path or an already preprocessed [3, H, W]
  tensor, ``id`` any value (its ``str`` becomes the
  row's name; a torchvision ``ImageFolder``-like dataset with ``.samples`` gives file paths). Items
  may also be a bare image (named by index), or a Hugging Face ``datasets`` row: a dict whose
  ``image`` is a PIL image or an undecoded ``{"bytes": ..., "path": ...}`` (named by its ``id``,
  ``image_id`` or ``file_name`` field, else by index). Dataset rows are not cached.

Unreadable or corrupt images are skipped and reported in :attr:`ImageEmbeddings.failed` (with a
logged warning and count), or raise :class:`~negvocab.core.errors.InputError` with ``strict=True``.
Embeddings of files are cached per model by (absolute path, size, mtime); a file edited in place
with its size and mtime kept is not noticed (clear the cache).
"""

from __future__ import annotations

import io
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard, Union, cast

import numpy as np

from negvocab.core.errors import InputError, ResourceError
from negvocab.core.progress import track
from negvocab.data.images import IMAGE_EXTENSIONS, ImageSet, list_images
from negvocab.vlm.cache import Checkpoints

if TYPE_CHECKING:
    import torch

    from negvocab.vlm.cache import EmbeddingStore
    from negvocab.vlm.model import VLM

#: what images are read from: a folder, an image file, a list of paths, an ImageSet, or a map-style
#: dataset (``len`` and ``__getitem__``, e.g. torchvision's ImageFolder; its rows are not cached)
ImageSource: TypeAlias = Union[
    str, os.PathLike[str], Sequence[str | os.PathLike[str]], ImageSet, "torch.utils.data.Dataset[Any]"
]

__all__ = [
    "CACHE_READ_ROWS",
    "IMAGE_PIECE_BYTES",
    "IMAGE_STORE_EVERY",
    "ImageEmbeddings",
    "ImageSource",
    "LOCAL_RAM_BYTES",
    "encode_batch",
    "encode_images",
    "file_key",
    "loader_workers_here",
    "local_features_supported",
]

log = logging.getLogger(__name__)

#: finished image rows reach the cache by time (every SAVE_EVERY_S seconds of work, as text rows do)
#: and in pieces of at most this many images, and of at most IMAGE_PIECE_BYTES of GL-MCM patch features
IMAGE_STORE_EVERY = 2048
IMAGE_PIECE_BYTES = 256 << 20
#: GL-MCM patch features bigger than this live in a memory-mapped temporary file, not in RAM
#: (50,000 ViT-B/16 images hold 20 GB of them)
LOCAL_RAM_BYTES = 1 << 30
#: images read from the cache at a time (bounds the patch features held while filling the rows)
CACHE_READ_ROWS = 512


@dataclass
class ImageEmbeddings:
    """Embeddings of the images that could be read, aligned with ``paths``.

    Made by :meth:`negvocab.vlm.model.VLM.encode_images` (or by hand, from embeddings of your own);
    every field is described under Attributes.

    Parameters
    ----------
    paths : list of str
        One name per row.
    embeddings : ndarray, float32 [n, d]
        One L2-normalised embedding per row (a 2-D array).
    local : ndarray, float32 [n, p, d], optional
        Patch features, one block per row.
    failed : list of (str, str), default []
        ``(path, reason)`` of the images that were skipped.
    ids : list of str, default []
        One id per row; empty: each path's file stem.
    model : dict, optional
        The identity of the model that made them.

    Raises
    ------
    InputError
        ``embeddings`` not 2-D, or ``paths``, ``ids``, ``embeddings`` and ``local`` of different lengths.

    Attributes
    ----------
    paths : list of str
        One name per row: the file path (or the dataset item's id).
    ids : list of str
        One id per row: the ImageSet's id, else the file stem (or the dataset item's id).
    model : dict or None
        The identity of the model that made them (:attr:`VLM.identity`), when known.
    embeddings : ndarray, float32 [n, d]
        L2-normalised global image embeddings.
    local : ndarray, float32 [n, p, d] or None
        L2-normalised GL-MCM patch features (p patch tokens), when asked for. Beyond
        ``LOCAL_RAM_BYTES`` (1 GiB) a read-write ``np.memmap`` on an unlinked temporary file in the
        embedding cache folder (``.scratch``; else the system's temporary folder), freed with the array.
    failed : list of (str, str)
        ``(path, reason)`` of every image that could not be read (skipped).
    """

    paths: list[str]
    embeddings: np.ndarray
    local: np.ndarray | None = None
    failed: list[tuple[str, str]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    model: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.ids:
            self.ids = [Path(p).stem for p in self.paths]
        if np.ndim(self.embeddings) != 2:
            raise InputError(f"ImageEmbeddings: embeddings must be [n, d], got shape {np.shape(self.embeddings)}")
        n = len(self.paths)
        if len(self.ids) != n or len(self.embeddings) != n or (self.local is not None and len(self.local) != n):
            raise InputError(
                f"ImageEmbeddings: {n} paths, {len(self.ids)} ids, {len(self.embeddings)} embeddings"
                + (f", {len(self.local)} local features" if self.local is not None else "")
                + " must be aligned"
            )

    def __len__(self) -> int:
        return len(self.paths)


def _open_rgb(image: Any) -> Any:
    from PIL import Image

    if isinstance(image, Image.Image):
        return image.convert("RGB")
    if isinstance(image, Mapping):  # a Hugging Face Image feature left undecoded: {"bytes": ..., "path": ...}
        if image.get("bytes") is not None:
            image = io.BytesIO(image["bytes"])
        elif image.get("path"):
            image = image["path"]
        else:
            raise ValueError("an image dict needs 'bytes' or a 'path'")
    with Image.open(image) as im:
        im.load()
        return im.convert("RGB")


class _Items:
    """Map-style dataset: item i -> (i, tensor or None, error message)."""

    def __init__(self, items: Sequence[Any], transform: Any, dataset: bool) -> None:
        self.items = items
        self.transform = transform
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[int, Any, str, str]:
        """(index, tensor or None, error, id) of item ``i``."""
        name = ""
        try:
            item = self.items[i]
            if self.dataset and isinstance(item, tuple):
                name = str(item[1]) if len(item) > 1 else ""
                item = item[0]
            elif self.dataset and isinstance(item, Mapping) and "image" in item:  # a Hugging Face datasets row
                name = next((str(item[k]) for k in ("id", "image_id", "file_name") if item.get(k) is not None), "")
                item = item["image"]
            if hasattr(item, "dim") and hasattr(item, "shape"):  # a tensor the dataset already preprocessed
                return i, item, "", name
            return i, self.transform(_open_rgb(item)), "", name
        except Exception as e:  # any decoder error: reported, never fatal
            return i, None, f"{type(e).__name__}: {e}", name


def _collate(batch: list[tuple[int, Any, str, str]]) -> tuple[list[int], Any, list[tuple[int, str]], list[str]]:
    import torch

    ok = [(i, t, name) for i, t, _, name in batch if t is not None]
    bad = [(i, err) for i, t, err, _ in batch if t is None]
    tensors = torch.stack([t for _, t, _ in ok]) if ok else None
    return [i for i, _, _ in ok], tensors, bad, [name for _, _, name in ok]


def _is_image_set(source: Any) -> TypeGuard[ImageSet]:
    return isinstance(source, ImageSet)


def _resolve_source(source: Any) -> tuple[list[str], Sequence[Any], bool]:
    """(names, items, is_dataset) for an ImageSet, a path list, a folder or a dataset."""
    if _is_image_set(source):
        return list(source.paths), list(source.paths), False
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            files = list_images(path)
            if not files:
                raise InputError(f"{path}: no image files ({', '.join(sorted(IMAGE_EXTENSIONS))}) in this folder")
            return files, files, False
        if path.is_file():
            return [str(path)], [str(path)], False
        raise InputError(f"{path}: no such image file or folder")
    if isinstance(source, Sequence) and all(isinstance(s, (str, os.PathLike)) for s in source):
        files = [str(s) for s in source]
        return files, files, False
    if hasattr(source, "__len__") and hasattr(source, "__getitem__"):
        samples = getattr(source, "samples", None)
        names: list[str] = []
        for i in range(len(source)):
            if samples is not None and i < len(samples):
                names.append(str(samples[i][0]))
            else:
                names.append(str(i))
        return names, source, True
    raise InputError(f"cannot read images from a {type(source).__name__}: give paths, a folder or a dataset")


def local_features_supported(model: Any) -> str | None:
    """None if GL-MCM local features can be taken from ``model.visual``, else the reason."""
    import torch.nn as nn
    from open_clip.transformer import ResidualAttentionBlock, VisionTransformer

    visual = getattr(model, "visual", None)
    if not isinstance(visual, VisionTransformer):
        return f"the image tower is a {type(visual).__name__}, not an open_clip VisionTransformer"
    if getattr(visual, "attn_pool", None) is not None:
        return "the ViT pools with attention (attn_pool), which GL-MCM does not define"
    block = visual.transformer.resblocks[-1]
    if not isinstance(block, ResidualAttentionBlock) or not isinstance(block.attn, nn.MultiheadAttention):
        return f"the last ViT block is a {type(block).__name__} without a standard attention layer"
    if visual.proj is None:
        return "the ViT has no output projection"
    return None


def _value_path(visual: Any, x: torch.Tensor) -> torch.Tensor:
    """GL-MCM local features from ``x``, the input of the last ViT block [b, 1+p, w] (batch first).

    The last block is run with each token attending only to itself (attention output = out_proj of
    the value projection), keeping its residuals and MLP; then ``ln_post`` and ``proj`` are applied
    to the patch tokens (the class token is dropped): the value path of Miyai et al.'s GL-MCM code.
    """
    import torch.nn.functional as F

    block = visual.transformer.resblocks[-1]
    attn = block.attn
    width = x.shape[-1]
    y = block.ln_1(x)
    v = F.linear(
        y, attn.in_proj_weight[2 * width :], None if attn.in_proj_bias is None else attn.in_proj_bias[2 * width :]
    )
    v = F.linear(v, attn.out_proj.weight, attn.out_proj.bias)
    v = x + block.ls_1(v)
    v = v + block.ls_2(block.mlp(block.ln_2(v)))
    v = visual.ln_post(v[:, 1:])
    return v @ visual.proj


def encode_batch(vlm: VLM, images: torch.Tensor, local: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Global (and local) L2-normalised float32 features of a preprocessed batch, on the CPU."""
    images = images.to(vlm.device)
    if not local:
        with vlm.autocast():
            g = vlm.model.encode_image(images)
        return vlm.unit_rows(g, "images"), None
    visual = vlm.model.visual
    captured: dict[str, torch.Tensor] = {}
    batch_first = getattr(visual.transformer, "batch_first", True)

    def hook(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        captured["x"] = args[0] if args else kwargs["q_x"]

    handle = visual.transformer.resblocks[-1].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with vlm.autocast():
            g = vlm.model.encode_image(images)
            x = captured["x"] if batch_first else captured["x"].transpose(0, 1)
            z = _value_path(visual, x)
    finally:
        handle.remove()
    return vlm.unit_rows(g, "images"), vlm.unit_rows(z.flatten(0, 1), "patch features").view(z.shape)


def file_key(path: str) -> str:
    """The image cache's key of a file: its resolved path, size and modification time (so an image
    replaced in place is embedded again); ``OSError`` when it cannot be read."""
    p = Path(path).resolve()
    st = p.stat()
    return f"{p}|{st.st_size}|{st.st_mtime_ns}"


def _patch_array(shape: tuple[int, ...], scratch: Path) -> np.ndarray:
    """A float32 array of ``shape``: in RAM up to LOCAL_RAM_BYTES, else memory-mapped on a
    temporary file in ``scratch`` (or, if that cannot hold it, the system's temporary folder),
    deleted when the array is."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * 4
    if nbytes <= LOCAL_RAM_BYTES:
        return np.zeros(shape, dtype=np.float32)
    errors = []
    for folder in dict.fromkeys([scratch, Path(tempfile.gettempdir())]):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(prefix="patches-", dir=folder) as fh:
                if hasattr(os, "posix_fallocate"):  # claim the disk now: a full disk later would crash the run
                    os.posix_fallocate(fh.fileno(), 0, nbytes)
                else:
                    fh.truncate(nbytes)
                arr = np.memmap(fh, dtype=np.float32, mode="r+", shape=shape)
        except OSError as e:
            errors.append(f"{folder}: {e.strerror or e}")
            continue
        log.info(
            "GL-MCM patch features of %d images (%.1f GiB) are kept in a temporary file in %s",
            shape[0],
            nbytes / 2**30,
            folder,
        )
        return arr
    raise ResourceError(
        f"GL-MCM patch features of {shape[0]} images need {nbytes / 2**30:.1f} GiB of disk ({'; '.join(errors)}); "
        "free space there or point the embedding cache (cache_dir, $NEGVOCAB_CACHE_DIR) at a bigger disk"
    )


class _Rows:
    """The output rows [n, d] (and [n, p, d]), allocated on the first batch; ``done`` marks filled rows."""

    def __init__(self, n: int, scratch: Path) -> None:
        self.n = n
        self.scratch = scratch
        self.done = np.zeros(n, dtype=bool)
        self.glob: np.ndarray | None = None
        self.local: np.ndarray | None = None

    def set(self, idx: Sequence[int] | np.ndarray, g: np.ndarray, z: np.ndarray | None) -> None:
        if self.glob is None:
            self.glob = np.zeros((self.n, *g.shape[1:]), dtype=np.float32)
        self.glob[idx] = g
        if z is not None:
            if self.local is None:
                self.local = _patch_array((self.n, *z.shape[1:]), self.scratch)
            self.local[idx] = z
        self.done[idx] = True


def _front(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``a[keep]`` for ascending ``keep``, moved to the front of ``a`` in place (no second copy of
    a large array); ``a`` itself when every row is kept."""
    if len(keep) == len(a):
        return a
    step = max(1, (64 << 20) // max(1, a[0].nbytes))
    for s in range(0, len(keep), step):  # row keep[j] >= j: a chunk never overwrites rows still to move
        part = keep[s : s + step]
        a[s : s + len(part)] = a[part]
    return a[: len(keep)]


class _ImageRows:
    """The image stores as one store for :class:`~negvocab.vlm.cache.Checkpoints` (the text cache's
    mechanism: rows kept by time, at least every ``SAVE_EVERY_S`` seconds of work, by size, and on
    any exit, Ctrl-C included): it is handed row indices (not copies of the rows, which may be large
    patch features) and writes the global rows, and the local ones when asked, under their keys."""

    def __init__(self, stores: list[EmbeddingStore], rows: _Rows) -> None:
        self.stores, self.rows = stores, rows

    def put(self, keys: Sequence[str], idx: np.ndarray) -> None:
        if self.rows.glob is None:
            return
        self.stores[0].put(keys, self.rows.glob[idx])
        if len(self.stores) > 1 and self.rows.local is not None:
            self.stores[1].put(keys, self.rows.local[idx])


def _piece_rows(rows: _Rows) -> int:
    """Images a cache piece holds at most: IMAGE_STORE_EVERY, and IMAGE_PIECE_BYTES of patch features."""
    row_bytes = rows.local[0].nbytes if rows.local is not None else 0
    return min(IMAGE_STORE_EVERY, max(1, IMAGE_PIECE_BYTES // row_bytes)) if row_bytes else IMAGE_STORE_EVERY


def _from_cache(stores: list[EmbeddingStore], keys: list[str], rows: _Rows, readable: list[int]) -> None:
    """Fill ``rows`` with the images whose global (and, when asked, local) rows are all cached,
    CACHE_READ_ROWS images at a time."""
    for s in range(0, len(readable), CACHE_READ_ROWS):
        part = readable[s : s + CACHE_READ_ROWS]
        hits = [store.get([keys[i] for i in part]) for store in stores]
        ok = np.logical_and.reduce([found for found, _ in hits])
        if ok.any():
            idx = np.asarray(part)[ok]
            glob, local = hits[0][1], hits[1][1] if len(hits) > 1 else None
            if glob is not None:  # always: every store found the images in ok
                rows.set(idx, glob[ok], None if local is None else local[ok])


def loader_workers_here(workers: int) -> int:
    """``workers``, or 0 in a process that has loaded gRPC (a Ray driver or Ray Client: Ray talks gRPC).

    Such a process must not fork: a forked loader worker can die of a segmentation fault in gRPC's fork
    handlers ("Other threads are currently calling into gRPC, skipping fork() handlers"). A fork server
    or spawn would re-run an unguarded script's top level, so the images load in the process itself."""
    if workers > 0 and "grpc" in sys.modules:
        log.debug("gRPC is loaded (Ray): images load in this process, not in %d forked workers", workers)
        return 0
    return workers


def encode_images(
    vlm: VLM,
    source: ImageSource,
    *,
    local_features: bool = False,
    strict: bool = False,
    batch_size: int | None = None,
    num_workers: int | None = None,
    progress: bool | None = None,
) -> ImageEmbeddings:
    """Embed the images of ``source`` (paths, a folder or a dataset; see the module docstring).

    Finished rows reach the cache as they come (by time, at least every ``SAVE_EVERY_S`` seconds
    of work, and on any exit; see ``IMAGE_STORE_EVERY``), so an interrupted run resumes where it stopped.
    """
    if local_features:
        why = local_features_supported(vlm.model)
        if why:
            raise InputError(f"{vlm.name}: GL-MCM local features need a ViT image tower ({why})")
    names, items, is_dataset = _resolve_source(source)
    n = len(items)
    if n == 0:
        raise InputError("no images to encode")
    failed: dict[int, str] = {}
    rows = _Rows(n, vlm.cache_root / ".scratch")
    keys: list[str] = []
    stores: list[EmbeddingStore] = []
    if vlm.cache_enabled and not is_dataset:
        for i, path in enumerate(names):
            try:
                keys.append(file_key(path))
            except OSError as e:
                keys.append("")
                failed[i] = f"{type(e).__name__}: {e.strerror or e}"
        stores = [vlm.store("image")] + ([vlm.store("image-local")] if local_features else [])
        _from_cache(stores, keys, rows, [i for i in range(n) if i not in failed])
        if rows.done.any():
            log.info("%s: %d of %d image embeddings from the cache", vlm.name, int(rows.done.sum()), n)
    todo = [i for i in range(n) if not rows.done[i] and i not in failed]
    ids: dict[int, str] = {}
    if todo:
        saved = Checkpoints(_ImageRows(stores, rows), max_rows=IMAGE_STORE_EVERY) if stores else None

        def on_batch(idx: list[int], g: np.ndarray, z: np.ndarray | None) -> None:
            rows.set(idx, g, z)
            if saved is not None:
                saved.max_rows = _piece_rows(rows)  # known once the first rows are in
                saved.add([keys[i] for i in idx], np.asarray(idx))

        try:
            bad, ids = _encode(
                vlm, items, todo, local_features, is_dataset, batch_size, num_workers, progress, on_batch
            )
        finally:
            if saved is not None:
                saved.flush()  # keep what was finished, also when interrupted
        failed.update(bad)
    if failed:
        for i, why in sorted(failed.items()):
            log.debug("unreadable image %s: %s", names[i], why)
        first = f"first: {names[min(failed)]}: {failed[min(failed)]}"
        if strict:
            raise InputError(
                f"{len(failed)} of {n} images could not be read ({first}); "
                "fix or remove them, or drop strict=True to skip them"
            )
        log.warning("%d of %d images could not be read and were skipped (%s)", len(failed), n, first)
    keep = [i for i in range(n) if i not in failed]
    if not keep or rows.glob is None:
        raise InputError(f"none of the {n} images could be read (first: {names[0]}: {failed.get(0, '?')})")
    row_names = [ids.get(i, names[i]) for i in keep] if is_dataset else [names[i] for i in keep]
    if _is_image_set(source):
        row_ids = [source.ids[i] for i in keep]
    else:
        row_ids = row_names if is_dataset else [Path(names[i]).stem for i in keep]
    return ImageEmbeddings(
        paths=row_names,
        embeddings=_front(rows.glob, np.asarray(keep)),
        local=None if rows.local is None else _front(rows.local, np.asarray(keep)),
        # an image set's unreadable folders and broken links first: reported with its unreadable images
        failed=[
            *(tuple(x) for x in (source.info.get("skipped", []) if _is_image_set(source) else [])),
            *((names[i], why) for i, why in sorted(failed.items())),
        ],
        ids=row_ids,
        model=vlm.identity,
    )


def _encode(
    vlm: VLM,
    items: Sequence[Any],
    todo: list[int],
    local: bool,
    is_dataset: bool,
    batch_size: int | None,
    num_workers: int | None,
    progress: bool | None,
    on_batch: Callable[[list[int], np.ndarray, np.ndarray | None], None],
) -> tuple[dict[int, str], dict[int, str]]:
    """Run the model over items ``todo``, handing each batch to ``on_batch``: (failures, dataset ids)."""
    from torch.utils.data import DataLoader, Subset

    bs = batch_size or (256 if vlm.device.type == "cuda" else 32)
    workers = min(8, os.cpu_count() or 1) if num_workers is None else num_workers
    if len(todo) <= bs:
        workers = min(workers, 1) if num_workers is None else workers
    ds = _Items(items, vlm.preprocess, is_dataset)
    loader: DataLoader[Any] = DataLoader(
        Subset(cast(Any, ds), todo),  # a map-style dataset without torch's base class (torch imported lazily)
        batch_size=bs,
        num_workers=loader_workers_here(workers),
        collate_fn=_collate,
        pin_memory=vlm.device.type == "cuda",
    )

    # a bar on a terminal once the run lasts (progress=False: none), a log line every 30 s
    it: Any = track(loader, len(loader), f"encoding {len(todo)} images", "batch", bar=progress is not False)
    n_done = 0
    bad: dict[int, str] = {}
    t0 = time.perf_counter()
    ids: dict[int, str] = {}
    for idx, tensors, errors, item_ids in it:
        bad.update(errors)
        if is_dataset and getattr(items, "samples", None) is None:
            ids.update((i, name) for i, name in zip(idx, item_ids, strict=True) if name)
        if tensors is None:
            continue
        g, z = encode_batch(vlm, tensors, local)
        on_batch(idx, g.numpy(), None if z is None else z.numpy())
        n_done += len(idx)
    dt = time.perf_counter() - t0
    log.info("encoded %d images in %.1f s (%.1f images/s) on %s", n_done, dt, n_done / max(dt, 1e-9), vlm.device)
    return bad, ids
