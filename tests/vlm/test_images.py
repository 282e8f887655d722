"""Image embeddings: folders, lists, datasets, corrupt files, GL-MCM local features, cache."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from negvocab.core.errors import InputError
from negvocab.data.images import list_images
from negvocab.vlm.images import ImageEmbeddings
from tests.vlm.conftest import make_tiny_vlm


def direct(vlm, paths):
    """model.encode_image on the model's own preprocessing, L2-normalised."""
    batch = torch.stack([vlm.preprocess(Image.open(p).convert("RGB")) for p in paths])
    with torch.no_grad():
        return F.normalize(vlm.model.encode_image(batch), dim=-1).numpy()


def test_folder_is_searched_recursively_and_corrupt_files_are_skipped(tiny, image_dir, caplog):
    with caplog.at_level(logging.WARNING):
        out = tiny.encode_images(image_dir, num_workers=0)
    assert isinstance(out, ImageEmbeddings)
    assert len(out) == 5 and out.embeddings.shape == (5, 32) and out.local is None
    assert str(image_dir / "sub" / "gray.png") in out.paths
    assert [p for p, _ in out.failed] == [str(image_dir / "broken.jpg")]
    assert "1 of 6 images could not be read" in caplog.text
    np.testing.assert_allclose(out.embeddings, direct(tiny, out.paths), atol=1e-5)
    assert out.embeddings.dtype == np.float32


def test_strict_raises_naming_the_file(tiny, image_dir):
    with pytest.raises(
        InputError, match=r"1 of 6 images could not be read \(first: .*broken\.jpg: .*drop strict=True"
    ) as e:
        tiny.encode_images(image_dir, strict=True, num_workers=0)
    assert "skipped" not in str(e.value)


def test_path_list_keeps_order_and_workers_give_the_same_result(tmp_path, image_dir):
    vlm = make_tiny_vlm(tmp_path, cache=False)
    paths = list_images(image_dir)[::-1]
    paths = [p for p in paths if not p.endswith("broken.jpg")]
    a = vlm.encode_images(paths, num_workers=0, batch_size=2)
    b = vlm.encode_images(paths, num_workers=2, batch_size=3)
    assert a.paths == paths == b.paths
    np.testing.assert_allclose(a.embeddings, b.embeddings, atol=1e-6)


def test_dataset_of_image_id_pairs(tiny, image_dir):
    files = [p for p in list_images(image_dir) if not p.endswith("broken.jpg")]

    class Pairs(torch.utils.data.Dataset):
        def __len__(self):
            return len(files) + 1

        def __getitem__(self, i):
            if i == len(files):
                return str(image_dir / "broken.jpg"), "bad-one"
            return Image.open(files[i]), f"id{i}"

    out = tiny.encode_images(Pairs(), num_workers=0)
    assert out.paths == [f"id{i}" for i in range(len(files))]
    assert len(out.failed) == 1
    np.testing.assert_allclose(out.embeddings, direct(tiny, files), atol=1e-5)

    class Tensors(torch.utils.data.Dataset):  # already preprocessed by the dataset itself
        def __len__(self):
            return len(files)

        def __getitem__(self, i):
            return tiny.preprocess(Image.open(files[i]).convert("RGB")), i

    pre = tiny.encode_images(Tensors(), num_workers=0)
    assert pre.paths == [str(i) for i in range(len(files))]
    np.testing.assert_allclose(pre.embeddings, out.embeddings, atol=1e-6)


def test_missing_inputs_are_clear_errors(tiny, tmp_path):
    with pytest.raises(InputError, match="no such image file or folder"):
        tiny.encode_images(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no image files"):
        tiny.encode_images(tmp_path / "empty")
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"junk")
    with pytest.raises(InputError, match="none of the 1 images"):
        tiny.encode_images([bad], num_workers=0)


def gl_mcm_reference(visual, images):
    """GL-MCM's value path written as in its code: full in_proj, split q/k/v after out_proj."""
    n_blocks = len(visual.transformer.resblocks)
    with torch.no_grad():
        inter = visual.forward_intermediates(images, indices=[n_blocks - 2], output_extra_tokens=True)
        # the input of the last block: the output of the one before it, class token included
        x = torch.cat(
            [inter["image_intermediates_prefix"][0], inter["image_intermediates"][0].flatten(2).transpose(1, 2)], 1
        )
        blk = visual.transformer.resblocks[-1]
        y = F.linear(blk.ln_1(x), blk.attn.in_proj_weight, blk.attn.in_proj_bias)
        n, length, c3 = y.shape
        y = y.view(n, length, 3, c3 // 3).permute(2, 0, 1, 3).reshape(3 * n, length, c3 // 3)
        y = F.linear(y, blk.attn.out_proj.weight, blk.attn.out_proj.bias)
        _q, _k, v = y.tensor_split(3, dim=0)
        v = v + x
        v = v + blk.mlp(blk.ln_2(v))
        v = visual.ln_post(v)[:, 1:] @ visual.proj
    return F.normalize(v, dim=-1).numpy()


def test_local_features_follow_gl_mcm(vit, image_dir):
    files = [p for p in list_images(image_dir) if not p.endswith("broken.jpg")][:2]
    out = vit.encode_images(files, local_features=True, num_workers=0)
    assert out.local.shape == (2, 49, 512)  # 7x7 patches of ViT-B-32 at 224 px
    batch = torch.stack([vit.preprocess(Image.open(p).convert("RGB")) for p in files])
    np.testing.assert_allclose(out.local, gl_mcm_reference(vit.model.visual, batch), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(out.local, axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out.embeddings, direct(vit, files), atol=1e-5)


def test_local_features_need_a_vit(rn50, image_dir):
    with pytest.raises(InputError, match="ViT"):
        rn50.encode_images(image_dir, local_features=True)


def test_image_cache_hits_and_file_changes(tiny, image_dir, monkeypatch):
    import negvocab.vlm.images as images_mod

    first = tiny.encode_images(image_dir, local_features=True, num_workers=0)
    calls = []
    real = images_mod.encode_batch
    monkeypatch.setattr(images_mod, "encode_batch", lambda *a, **k: calls.append(len(a[1])) or real(*a, **k))
    again = tiny.encode_images(image_dir, local_features=True, num_workers=0)
    assert calls == []  # only the corrupt file was retried, and it failed to decode
    assert again.paths == first.paths
    np.testing.assert_array_equal(again.embeddings, first.embeddings)
    np.testing.assert_array_equal(again.local, first.local)
    # rewriting one image changes its size/mtime: only it is recomputed
    target = image_dir / "img0.jpg"
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(target)
    third = tiny.encode_images(image_dir, num_workers=0)
    assert calls == [1]
    i = third.paths.index(str(target))
    np.testing.assert_allclose(third.embeddings[i], direct(tiny, [target])[0], atol=1e-5)


def test_an_image_set_keeps_its_ids(tiny, image_dir):
    from negvocab.data.images import ImageSet

    files = list_images(image_dir)  # broken.jpg first
    image_set = ImageSet("mine", files, [f"id{i}" for i in range(len(files))])
    out = tiny.encode_images(image_set, num_workers=0)
    assert out.paths == files[1:] and out.ids == [f"id{i}" for i in range(1, len(files))]
    assert out.model == tiny.identity  # who made them, checked when they are scored with a VLM
    np.testing.assert_allclose(out.embeddings, tiny.encode_images(files[1:], num_workers=0).embeddings, atol=1e-6)
    assert tiny.encode_images(files[1:3], num_workers=0).ids == [Path(f).stem for f in files[1:3]]


def test_front_moves_kept_rows_in_place():
    from negvocab.vlm.images import _front

    rng = np.random.default_rng(1)
    for n in (1, 7, 300):
        a = rng.standard_normal((n, 3, 2)).astype(np.float32)
        keep = np.sort(rng.choice(n, size=max(1, n - n // 3), replace=False))
        expected = a[keep].copy()
        out = _front(a, keep)
        np.testing.assert_array_equal(out, expected)
        assert out.base is a or out is a or len(keep) == n  # a view of a: no second copy
    whole = np.arange(6.0).reshape(3, 2)
    assert _front(whole, np.arange(3)) is whole


def test_large_patch_features_live_in_a_temporary_file(tmp_path, image_dir, monkeypatch):
    # with the RAM limit at 0 bytes, the patch features of any run are memory-mapped: same values,
    # corrupt files still dropped, the temporary file gone with the array, the cache still served
    import gc

    import negvocab.vlm.images as images_mod

    in_ram = make_tiny_vlm(cache=False).encode_images(image_dir, local_features=True, num_workers=0)
    assert not isinstance(in_ram.local, np.memmap)
    monkeypatch.setattr(images_mod, "LOCAL_RAM_BYTES", 0)
    monkeypatch.setattr(images_mod, "IMAGE_PIECE_BYTES", 2 * in_ram.local[0].nbytes)  # pieces of 2 images
    vlm = make_tiny_vlm(tmp_path)
    out = vlm.encode_images(image_dir, local_features=True, num_workers=0, batch_size=1)
    assert isinstance(out.local, np.memmap) and out.local.shape == in_ram.local.shape
    assert out.paths == in_ram.paths and len(out.failed) == 1
    np.testing.assert_allclose(out.local, in_ram.local, atol=1e-6)
    np.testing.assert_allclose(out.embeddings, in_ram.embeddings, atol=1e-6)
    scratch = tmp_path / "emb" / ".scratch"
    assert scratch.is_dir() and not list(scratch.iterdir())  # unlinked at once: nothing left behind
    local_shards = list((tmp_path / "emb" / "image-local").glob("*/*.npy"))
    assert len(local_shards) == 3  # 5 images in pieces of at most 2
    again = vlm.encode_images(image_dir, local_features=True, num_workers=0)
    np.testing.assert_array_equal(again.local, out.local)
    del out, again
    gc.collect()


def test_no_disk_for_patch_features_is_one_clear_error(tiny, image_dir, monkeypatch):
    import errno
    import os

    import negvocab.vlm.images as images_mod
    from negvocab.core.errors import ResourceError

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(images_mod, "LOCAL_RAM_BYTES", 0)
    monkeypatch.setattr(images_mod.os, "posix_fallocate", full)
    with pytest.raises(
        ResourceError,
        match=(
            r"patch features of 6 images need .* GiB of disk \(.*\.scratch: No "
            r"space left on device; .*: No space left on device\); free space"
        ),
    ):
        tiny.encode_images(image_dir, local_features=True, num_workers=0)


def test_patch_features_fall_back_to_the_system_temporary_folder(tmp_path, image_dir, monkeypatch):
    # a VLM whose cache folder cannot be written (cache=False for that reason) still gets its
    # memory-mapped patch features
    import negvocab.vlm.images as images_mod

    monkeypatch.setattr(images_mod, "LOCAL_RAM_BYTES", 0)
    (tmp_path / "a_file").write_text("not a folder")
    from negvocab.vlm.model import VLM

    vlm = VLM.from_model(make_tiny_vlm().model, make_tiny_vlm().tokenizer, name="t", random_weights=True, device="cpu",
                         cache_dir=tmp_path / "a_file" / "emb", cache=False)  # fmt: skip
    out = vlm.encode_images(image_dir, local_features=True, num_workers=0)
    assert isinstance(out.local, np.memmap) and len(out.local) == 5


def test_loader_workers_never_fork_a_process_with_grpc(monkeypatch):
    """Ray's gRPC threads make a forked loader worker segfault: such a process loads images itself;
    otherwise the workers asked for stay."""
    import sys

    from negvocab.vlm.images import loader_workers_here

    monkeypatch.delitem(sys.modules, "grpc", raising=False)
    assert loader_workers_here(2) == 2 and loader_workers_here(0) == 0
    monkeypatch.setitem(sys.modules, "grpc", object())
    assert loader_workers_here(2) == 0
