"""An unreachable hub: cached weights load in offline mode, missing ones fail at once and say why."""

from __future__ import annotations

import socket

import pytest
import torch
from huggingface_hub import constants

from negvocab.cli.flags import cli_message
from negvocab.core.errors import ResourceError
from negvocab.vlm import hub
from negvocab.vlm.model import VLM

COMMIT = "0123456789abcdef0123456789abcdef01234567"
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


@pytest.fixture
def dead_hub(monkeypatch, tmp_path):
    """huggingface_hub online, pointed at a closed local port, with an empty cache under tmp_path."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    for var in PROXY_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "hf"


def test_reachable_sees_a_listening_port_and_a_closed_one(dead_hub):
    assert not hub.reachable(constants.ENDPOINT)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        assert hub.reachable(f"http://127.0.0.1:{server.getsockname()[1]}")


def test_offline_mode_lasts_only_for_the_block(dead_hub):
    with hub.hub_access() as online:
        assert online is False and constants.HF_HUB_OFFLINE is True
    assert constants.HF_HUB_OFFLINE is False


def test_offline_mode_is_shared_by_overlapping_blocks(dead_hub):
    """Two overlapping blocks (threads loading models at once): the first one out keeps it on."""
    first, second = hub.hub_access(), hub.hub_access()
    assert first.__enter__() is False and second.__enter__() is False
    first.__exit__(None, None, None)
    assert constants.HF_HUB_OFFLINE is True  # the second block is still loading
    second.__exit__(None, None, None)
    assert constants.HF_HUB_OFFLINE is False


def test_a_proxy_means_no_probe(dead_hub, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    with hub.hub_access() as online:
        assert online is True and constants.HF_HUB_OFFLINE is False


def test_missing_weights_fail_naming_the_cache(dead_hub):
    with pytest.raises(ResourceError) as e:
        VLM("ViT-B-32", pretrained="openai", cache=False)
    msg = str(e.value)
    assert "'openai'" in msg and "not in the local Hugging Face cache" in msg
    assert msg.endswith("pass pretrained='/path/to/open_clip_pytorch_model.bin' with tag='openai'")  # parameters
    shown = cli_message(e.value)  # what the CLI prints: the flags
    assert shown.endswith("pass --pretrained /path/to/open_clip_pytorch_model.bin with --tag openai")
    assert constants.HF_HUB_OFFLINE is False


def test_cached_tag_weights_load_with_the_tag_settings(dead_hub, vit):
    """A checkpoint in the HF cache is served without the network, with the tag's QuickGELU."""
    import open_clip

    repo = open_clip.get_pretrained_cfg("ViT-B-32", "openai")["hf_hub"].rstrip("/")
    repo, filename = repo.rsplit("/", 1) if repo.count("/") > 1 else (repo, "open_clip_pytorch_model.bin")
    folder = dead_hub / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(COMMIT)
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    weights = {k: v.clone() for k, v in vit.model.state_dict().items()}
    torch.save(weights, folder / "snapshots" / COMMIT / filename)

    loaded = VLM("ViT-B-32", pretrained="openai", device="cpu", cache=False)
    assert loaded.random_weights is False and loaded.identity["tag"] == "openai"
    assert loaded.identity["quick_gelu"] is True  # the openai tag's activation, unlike the random build
    for key, value in loaded.model.state_dict().items():
        torch.testing.assert_close(value, weights[key], rtol=0, atol=0)


def test_hub_tokenizer_says_what_it_needs():
    """SigLIP's tokenizer comes from the hub through transformers: either missing is named."""
    import importlib.util

    with pytest.raises(ResourceError) as e:
        VLM("ViT-B-16-SigLIP", random_weights=True, cache=False)
    if importlib.util.find_spec("transformers") is None:
        assert "needs the transformers package: pip install 'negvocab[hf]'" in str(e.value)
    else:
        assert "HF cache" in str(e.value)
