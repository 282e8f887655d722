"""VLM loading: names, tags, local checkpoints, random weights, device, precision, identity."""

from __future__ import annotations

import hashlib
import json
import logging
import warnings

import numpy as np
import pytest
import torch

from negvocab.cli.options import load_vlm
from negvocab.core.errors import InputError, ResourceError
from negvocab.vlm.model import VLM, resolve_device, resolve_precision
from tests.vlm.conftest import tiny_clip


def test_unknown_model_name_lists_close_choices():
    with pytest.raises(InputError, match="ViT-B-32") as e:
        VLM("ViT-B-23", random_weights=True)
    assert "unknown open_clip model" in str(e.value)


def test_unknown_tag_lists_the_known_tags():
    with pytest.raises(InputError, match="laion2b_s34b_b79k") as e:
        VLM("ViT-B-32", pretrained="laion5000")
    assert "pretrained='/path/to/open_clip_pytorch_model.bin'" in str(e.value) and e.value.param == ("pretrained",)


def test_missing_checkpoint_file():
    with pytest.raises(InputError, match="no such file"):
        VLM("ViT-B-32", pretrained="/nonexistent/open_clip_pytorch_model.bin")


def test_offline_tag_says_what_was_tried_and_how_to_pass_a_file(monkeypatch):
    import open_clip

    def offline(*_a, **_k):
        raise OSError("network is unreachable")

    monkeypatch.setattr(open_clip, "download_pretrained", offline)
    with pytest.raises(ResourceError) as e:
        VLM("ViT-B-32", pretrained="laion2b_s34b_b79k")
    msg = str(e.value)
    assert "laion2b_s34b_b79k" in msg and "tried" in msg and "pretrained='/path/to/open_clip_pytorch_model.bin'" in msg


def test_offline_hub_model_is_a_resource_error():
    with pytest.raises(ResourceError, match="local-dir:/path/to/folder"):
        VLM("hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K")


def test_random_weights_are_never_silent(vit, caplog):
    assert vit.random_weights is True
    assert vit.identity["random_weights"] is True and vit.identity["seed"] == 0
    assert "RANDOM" in repr(vit)
    with caplog.at_level(logging.WARNING):
        VLM.from_model(tiny_clip(), vit.tokenizer, name="t", random_weights=True, cache=False)
    assert "RANDOM weights" in caplog.text


def test_random_weights_are_asked_for_and_the_old_call_warns_for_one_release(vit):
    """``random_weights=True`` builds them quietly; the implicit old call warns (and still builds them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the explicit form never warns
        explicit = VLM("ViT-B-32", random_weights=True, device="cpu", cache=False)
    with pytest.warns(DeprecationWarning, match=r"random_weights=True.*pretrained=TAG_OR_CHECKPOINT"):
        old = VLM("ViT-B-32", pretrained=None, device="cpu", cache=False)
    assert old.random_weights is True and explicit.random_weights is True
    assert old.identity == explicit.identity == vit.identity  # same seed, same weights, flagged the same
    with pytest.raises(InputError, match="random_weights=True: give one of them, not both"):
        VLM("ViT-B-32", pretrained="openai", random_weights=True)


def test_both_weights_are_refused_before_any_model_work(monkeypatch):
    import negvocab.vlm.model as model_mod

    def boom(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(model_mod, "load_model", boom)
    with pytest.raises(InputError, match="pretrained='x.bin'"):
        VLM("ViT-B-32", pretrained="x.bin", random_weights=True)


def test_identity_and_dim(vit, rn50):
    ident = vit.identity
    assert ident["name"] == "ViT-B-32" and ident["dim"] == 512 and ident["precision"] == "fp32"
    assert ident["weights"].startswith("sha256-state-dict:")
    assert ident["preprocessing"]["size"] == [224, 224] and ident["preprocessing"]["interpolation"] == "bicubic"
    assert ident["text_tower"].startswith("causal")
    assert rn50.identity["dim"] == 1024 and rn50.identity["weights"] != ident["weights"]
    assert vit.device.type == "cpu"


def test_local_checkpoint_takes_the_tag_preprocessing_and_quick_gelu(vit, tmp_path, caplog):
    """open_clip#1068: a checkpoint file alone silently gets the default preprocessing/GELU."""
    path = tmp_path / "open_clip_pytorch_model.bin"
    torch.save(vit.model.state_dict(), path)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    with caplog.at_level(logging.WARNING):
        plain = VLM("ViT-B-32", pretrained=tmp_path, device="cpu", cache_dir=tmp_path / "c")  # the folder holding it
    assert "without tag=" in caplog.text
    assert plain.random_weights is False and plain.identity["weights"] == f"sha256:{sha}"
    assert plain.identity["quick_gelu"] is False and plain.identity["preprocessing"]["from"] == "model config"
    # same weights as the random model: same text embeddings
    np.testing.assert_allclose(plain.encode_text(["kite"], "single"), vit.encode_text(["kite"], "single"), atol=1e-6)
    tagged = VLM("ViT-B-32", pretrained=path, tag="openai", device="cpu", cache_dir=tmp_path / "c")
    assert tagged.identity["quick_gelu"] is True  # the openai tag was trained with QuickGELU
    assert tagged.identity["preprocessing"]["from"] == "tag openai"
    assert tagged.identity["weights"] == plain.identity["weights"]
    assert tagged.store("text").folder != plain.store("text").folder  # other activation: other cache


@pytest.mark.parametrize(
    ("name", "pretrained", "message"),
    [
        ("ViT-B-32", None, "random weights take quick_gelu= and preprocess= instead"),
        ("local-dir:{folder}", None, "carries its own preprocessing"),
        ("ViT-B-32", "laion2b_s34b_b79k", "a tag's weights come with its own settings"),
    ],
)
def test_a_tag_that_would_be_ignored_is_refused(tmp_path, name, pretrained, message):
    import open_clip

    cfg = {"model_cfg": open_clip.get_model_config("RN50"), "preprocess_cfg": {}}
    (tmp_path / "open_clip_config.json").write_text(json.dumps(cfg))
    with pytest.raises(InputError, match=message):
        VLM(
            name.format(folder=tmp_path),
            pretrained=pretrained,
            tag="openai",
            cache=False,
            random_weights=not pretrained,
        )


def test_a_local_dir_without_its_config_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match=r"local-dir:.*: no open_clip_config.json in"):
        VLM(f"local-dir:{tmp_path}", cache=False)


def test_a_torchscript_archive_is_named_as_such(tmp_path):
    # OpenAI's original ViT-B-32.pt is TorchScript; open_clip loads only state dicts as weights
    path = tmp_path / "ViT-B-32.pt"
    torch.jit.trace(torch.nn.Linear(2, 2), torch.zeros(1, 2)).save(str(path))
    with pytest.raises(InputError, match="a TorchScript archive, which open_clip does not load as weights"):
        VLM("ViT-B-32", pretrained=path, tag="openai", cache=False)


def test_checkpoint_of_another_architecture_is_a_clear_error(tmp_path):
    path = tmp_path / "small.bin"
    torch.save(tiny_clip().state_dict(), path)
    with pytest.raises(InputError, match="cannot load as ViT-B-32 weights"):
        VLM("ViT-B-32", pretrained=path, cache=False)


def test_device_and_precision():
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    cpu = torch.device("cpu")
    assert resolve_precision(None, cpu) == "fp32"
    assert resolve_precision(None, torch.device("cuda")) == "fp16"
    assert resolve_precision("amp_bf16", cpu) == "bf16"
    for spelled, meant in [
        ("bfloat16", "bf16"),
        ("torch.bfloat16", "bf16"),
        ("torch.float32", "fp32"),
        ("half", "fp16"),
    ]:
        if meant != "fp16":
            assert resolve_precision(spelled, cpu) == meant, spelled
    with pytest.raises(InputError, match="CUDA"):
        resolve_precision("fp16", cpu)
    with pytest.raises(InputError, match="fp32, fp16, bf16"):
        resolve_precision("int4", cpu)
    with pytest.raises(InputError, match="unknown device"):
        resolve_device("tpu:0")
    if not torch.cuda.is_available():
        with pytest.raises(ResourceError, match="CUDA is not available"):
            resolve_device("cuda")
    else:
        with pytest.raises(ResourceError, match="CUDA device"):
            resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_bf16_on_cpu_is_float32_output_and_close(vit):
    model = VLM.from_model(
        vit.model, vit.tokenizer, name="ViT-B-32", random_weights=True, precision="bf16", cache=False
    )
    out = model.encode_text(["kite", "snow"], "single")
    assert out.dtype == np.float32
    ref = vit.encode_text(["kite", "snow"], "single")
    assert (out * ref).sum(axis=1).min() > 0.99


def test_cli_options_need_weights_or_the_random_flag():
    with pytest.raises(InputError, match="--random-weights"):
        load_vlm("ViT-B-32", None)
    with pytest.raises(InputError, match="not both"):
        load_vlm("ViT-B-32", "openai", random_weights=True)


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-5), ("fp16", 5e-3), ("bf16", 2e-2)])
def test_cuda_text_matches_open_clip(precision, tol):
    from open_clip.zero_shot_classifier import build_zero_shot_classifier

    from negvocab.vlm.templates import PAPER8
    from tests.vlm.conftest import LABELS

    for name in ("ViT-B-32", "RN50"):
        vlm = VLM(name, random_weights=True, device="cuda", precision=precision, cache=False)
        ours = vlm.encode_text(LABELS, "paper8")
        with torch.no_grad():
            ref = (
                build_zero_shot_classifier(vlm.model, vlm.tokenizer, LABELS, list(PAPER8), device="cuda")
                .T.float()
                .cpu()
                .numpy()
            )
        assert np.abs(ours - ref).max() <= tol, (name, precision)
        assert (ours * ref).sum(axis=1).min() > 0.999


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-4), ("fp16", 5e-3), ("bf16", 2e-2)])
def test_cuda_images_and_local_features(image_dir, precision, tol):
    """GPU embeddings equal the CPU's: fp32 (IEEE convolutions, not TF32) and the default fp16."""
    import copy

    from negvocab.data.images import list_images

    vlm = VLM("ViT-B-32", random_weights=True, device="cuda", precision=precision, cache=False)
    files = [p for p in list_images(image_dir) if not p.endswith("broken.jpg")]
    out = vlm.encode_images(files, local_features=True, num_workers=2)
    cpu = VLM.from_model(
        copy.deepcopy(vlm.model).float().cpu(),
        vlm.tokenizer,
        name="ViT-B-32",
        random_weights=True,
        device="cpu",
        cache=False,
    )
    ref = cpu.encode_images(files, local_features=True, num_workers=0)
    assert out.embeddings.dtype == np.float32 and out.local.dtype == np.float32
    np.testing.assert_allclose(out.embeddings, ref.embeddings, atol=tol)
    np.testing.assert_allclose(out.local, ref.local, atol=tol)


def test_local_dir_without_weights_is_not_silently_random(tmp_path):
    import open_clip

    folder = tmp_path / "model"
    folder.mkdir()
    cfg = {"model_cfg": open_clip.get_model_config("RN50"), "preprocess_cfg": {}}
    (folder / "open_clip_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ResourceError, match="no weights file next to open_clip_config.json"):
        VLM("ViT-B-32", pretrained=folder, cache=False)


def test_half_weights_are_run_in_float32(tmp_path):
    # a model handed over in fp16 is converted: precision fp32 then means fp32 (it failed with a
    # dtype mismatch), and equals the same weights converted by hand
    from PIL import Image

    half = tiny_clip().half()
    ref = tiny_clip().half().float()
    vlm = VLM.from_model(half, open_clip_tokenizer(), name="t", random_weights=True, device="cpu", cache=False)
    assert {p.dtype for p in vlm.model.parameters()} == {torch.float32}
    path = tmp_path / "x.png"
    Image.fromarray(np.full((32, 32, 3), 90, np.uint8)).save(path)
    got = vlm.encode_images([path], num_workers=0).embeddings
    with torch.no_grad():
        want = torch.nn.functional.normalize(ref.encode_image(vlm.preprocess(Image.open(path)).unsqueeze(0)), dim=-1)
    np.testing.assert_allclose(got, want.numpy(), atol=1e-6)
    with torch.no_grad():
        tokens = open_clip_tokenizer()(["a photo of a kite."])
        want_text = torch.nn.functional.normalize(ref.encode_text(tokens), dim=-1).numpy()
    np.testing.assert_allclose(vlm.encode_text(["kite"], "single"), want_text, atol=1e-6)


def open_clip_tokenizer():
    import open_clip

    return open_clip.get_tokenizer("ViT-B-32")


@pytest.mark.parametrize("what", ["text", "images"])
def test_nan_embeddings_are_an_error_and_never_cached(tmp_path, what):
    # fp16 overflow in a big model (or damaged weights) gives inf/NaN: one clear error, and the
    # cache does not keep the broken rows (scoring would refuse them, and a re-run served them again)
    from PIL import Image

    from tests.vlm.conftest import make_tiny_vlm

    vlm = make_tiny_vlm(tmp_path)
    with torch.no_grad():
        if what == "text":
            vlm.model.text_projection[0, 0] = float("inf")
        else:
            vlm.model.visual.proj[0, 0] = float("inf")
    path = tmp_path / "x.png"
    Image.fromarray(np.full((32, 32, 3), 90, np.uint8)).save(path)
    with pytest.raises(ResourceError, match=r"gave NaN/inf embeddings for 2 of 2 .*; check the weights"):
        if what == "text":
            vlm.encode_text(["kite", "owl"], "single")
        else:
            vlm.encode_images([path, path], num_workers=0)
    kind = "text" if what == "text" else "image"
    assert not list((tmp_path / "emb" / kind).glob("*/*.npy"))
