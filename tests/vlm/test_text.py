"""Text encoding: exact against open_clip's zero-shot classifier, cut only for causal towers."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from open_clip.zero_shot_classifier import build_zero_shot_classifier

from negvocab.core.errors import InputError
from negvocab.vlm.templates import PAPER8, resolve_templates
from negvocab.vlm.text import encode_prompts, text_tower
from tests.vlm.conftest import LABELS, make_tiny_vlm


def reference(vlm, labels, templates):
    """open_clip's own template ensemble, full context, float32 [n, d]."""
    w = build_zero_shot_classifier(vlm.model, vlm.tokenizer, labels, list(templates), device="cpu")
    return w.T.float().numpy()


def record_lengths(vlm):
    """Sequence lengths seen by the text transformer (a forward pre-hook)."""
    seen: list[int] = []
    transformer = vlm.model.text.transformer if hasattr(vlm.model, "text") else vlm.model.transformer
    handle = transformer.register_forward_pre_hook(lambda _m, args, kw=None: seen.append(args[0].shape[1]))
    return seen, handle


def test_vit_b32_matches_open_clip_paper8(vit):
    labels = [LABELS[0], LABELS[2], LABELS[5], LABELS[7]]  # 1 to 25 tokens
    ours = vit.encode_text(labels, "paper8")
    ref = reference(vit, labels, PAPER8)
    assert ours.dtype == np.float32 and ours.shape == (len(labels), 512)
    assert np.abs(ours - ref).max() <= 1e-5
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)


def test_rn50_matches_open_clip(rn50):
    templates = ["a photo of a {}.", "{}", "art of the {}."]
    ours = rn50.encode_text(LABELS[4:8], templates)
    ref = reference(rn50, LABELS[4:8], templates)
    assert ours.shape == (4, 1024)
    assert np.abs(ours - ref).max() <= 1e-5


@pytest.mark.parametrize(
    ("name", "tower"),
    [
        ("EVA02-B-16", "causal (context cut per batch)"),
        ("coca_ViT-B-32", "uncut"),
        ("convnext_base", "causal (context cut per batch)"),
    ],
)
def test_other_architecture_families_match_open_clip(name, tower):
    """EVA-CLIP (timm vision tower), CoCa (its own text tower) and ConvNeXt: exact either way."""
    from negvocab.vlm.model import VLM

    vlm = VLM(name, random_weights=True, device="cpu", cache=False)
    assert vlm.identity["text_tower"] == tower
    labels = [LABELS[0], LABELS[5], LABELS[7]]
    assert np.abs(vlm.encode_text(labels, "paper8") - reference(vlm, labels, PAPER8)).max() <= 1e-5


def test_causal_tower_is_cut_to_the_longest_prompt_of_each_batch(vit):
    assert text_tower(vit.model) is not None
    seen, handle = record_lengths(vit)
    try:
        encode_prompts(vit, ["a", "a photo of a dog.", "b"], batch_size=2)
    finally:
        handle.remove()
    # sorted by length: ["a", "b"] (3 tokens: SOT a EOT), then SOT a photo of a dog . EOT; never the full 77
    assert seen == [3, 8]


def test_cut_equals_uncut_on_batches_of_mixed_length(vit):
    prompts = [t.format(label) for label in LABELS[5:9] for t in PAPER8[:2]]
    cut = encode_prompts(vit, prompts, batch_size=3)
    full = encode_prompts(vit, prompts, batch_size=3, cut=False)
    assert torch.equal(cut.isnan(), full.isnan())
    assert (cut - full).abs().max().item() <= 1e-5


def test_non_causal_tower_is_never_cut():
    vlm = make_tiny_vlm(causal=False, cache=False)
    assert text_tower(vlm.model) is None
    assert vlm.identity["text_tower"] == "uncut"
    seen, handle = record_lengths(vlm)
    try:
        ours = vlm.encode_text(LABELS, ["a photo of a {}.", "{}"])
    finally:
        handle.remove()
    assert seen and set(seen) == {77}  # the full context every time
    ref = reference(vlm, LABELS, ["a photo of a {}.", "{}"])
    assert np.abs(ours - ref).max() <= 1e-5
    # cutting would have changed the result: a bidirectional 'last'-pooling tower reads the padding
    tokens = vlm.tokenizer(["a photo of a goldfish."])
    full = vlm.model.encode_text(tokens)
    short = vlm.model.encode_text(tokens[:, :10])
    assert (full - short).abs().max().item() > 1e-4


def test_causal_custom_text_tower_is_cut_and_exact():
    import open_clip

    custom = open_clip.CustomTextCLIP(
        embed_dim=32,
        vision_cfg=dict(image_size=32, patch_size=8, width=64, layers=1, head_width=32),
        text_cfg=dict(context_length=77, vocab_size=49408, width=64, heads=2, layers=2),
    ).eval()
    from negvocab.vlm.model import VLM

    vlm = VLM.from_model(
        custom, open_clip.get_tokenizer("ViT-B-32"), name="custom", random_weights=True, device="cpu", cache=False
    )
    assert text_tower(vlm.model) is not None
    ours = vlm.encode_text(LABELS, ["{}", "a photo of a {}."])
    assert np.abs(ours - reference(vlm, LABELS, ["{}", "a photo of a {}."])).max() <= 1e-5


def test_duplicates_and_order_are_kept(vit):
    labels = ["kite", "snow", "kite", "red"]
    out = vit.encode_text(labels, "single")
    assert np.array_equal(out[0], out[2])
    single = vit.encode_text(["red"], "single")
    np.testing.assert_allclose(out[3], single[0], atol=1e-6)


def test_neglabel_templates_depend_on_part_of_speech(vit):
    adj = vit.encode_text(["red", "kite"], "neglabel", pos=["a", "n"])
    np.testing.assert_allclose(adj[0], vit.encode_text(["red"], ["This is a {} photo"])[0], atol=1e-6)
    np.testing.assert_allclose(adj[1], vit.encode_text(["kite"], ["the nice {}"])[0], atol=1e-6)
    # WordNet adjective satellites ('s') are adjectives
    sat = vit.encode_text(["red"], "neglabel", pos="s")
    np.testing.assert_allclose(sat, adj[:1], atol=1e-6)


def test_a_template_folder_is_named_as_such(tmp_path):
    with pytest.raises(InputError, match="is a folder; give a file with one template"):
        resolve_templates(str(tmp_path))


def test_template_presets_and_errors(tmp_path):
    assert resolve_templates("paper8").default == PAPER8
    assert len(resolve_templates("openai80").default) == 80
    assert resolve_templates("openai80").default[0] == "a bad photo of a {}."
    assert resolve_templates("single").default == ("a photo of a {}.",)
    f = tmp_path / "t.txt"
    f.write_text("# mine\na {} photo\n\nart of {}\n")
    assert resolve_templates(str(f)).default == ("a {} photo", "art of {}")
    with pytest.raises(InputError, match="paper8"):
        resolve_templates("paper9")
    with pytest.raises(InputError, match="one"):
        resolve_templates(["{} and {}"])
    with pytest.raises(InputError, match="no templates"):
        resolve_templates([])
    f.write_bytes(b"\xef\xbb\xbfa {} photo\n")  # a byte-order mark is not part of the template
    assert resolve_templates(str(f)).default == ("a {} photo",)
    f.write_bytes(b"a {} photo\n\xff\n")
    with pytest.raises(InputError, match=r"t\.txt: not a UTF-8 text file \(template file\)"):
        resolve_templates(str(f))
    with pytest.raises(InputError, match="cannot read template file"):
        resolve_templates(tmp_path)  # a folder


def test_bad_labels_are_rejected(vit):
    with pytest.raises(InputError, match="label 1"):
        vit.encode_text(["ok", "  "])
    with pytest.raises(InputError, match="pos has"):
        vit.encode_text(["a", "b"], "neglabel", pos=["n"])


def test_prompts_cut_by_the_context_are_reported(tiny, caplog):
    long = " ".join(["wide"] * 90) + " kettle"  # more than 77 tokens
    with caplog.at_level(logging.WARNING):
        tiny.encode_text(["violin", long], "single")
    assert "1 prompts fill the 77-token context and were truncated" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        tiny.encode_text(["moss", "kite"], "single")
    assert "truncated" not in caplog.text


def test_chunks_never_follow_the_clock(tiny, monkeypatch):
    """Prompts are sorted and batched within a chunk, and a row's float32 bits depend on its batch, so
    the chunks are CHUNK_PROMPTS prompts whatever the clock and torch's determinism setting (issue 34:
    a resumed build differed from a clean one in 8 near-tied pairs)."""
    import time

    from negvocab.vlm import text as T

    monkeypatch.setattr(T, "CHUNK_PROMPTS", 8)
    labels = [f"{w} {i}" for i, w in enumerate(["cat", "hot air balloon", "x", "amphiprostylar column"] * 10)]

    def chunks(seconds_per_call, deterministic):
        now, sizes = [0.0], []

        def clock():
            now[0] += seconds_per_call
            return now[0]

        monkeypatch.setattr(time, "perf_counter", clock)
        monkeypatch.setattr(time, "monotonic", clock)
        before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(deterministic)
        try:
            emb = T.encode_labels(
                tiny, labels, ["a photo of a {}."], batch_size=4, on_chunk=lambda c, e: sizes.append(len(c))
            )
        finally:
            torch.use_deterministic_algorithms(before)
            monkeypatch.undo()
            monkeypatch.setattr(T, "CHUNK_PROMPTS", 8)
        return sizes, emb

    runs = [chunks(s, d) for s in (0.001, 30.0) for d in (False, True)]
    assert all(sizes == [8] * 5 for sizes, _ in runs)
    assert len({emb.tobytes() for _, emb in runs}) == 1
    with pytest.warns(DeprecationWarning, match="chunk_s=, clock="):
        T.encode_labels(tiny, labels[:2], ["{}"], chunk_s=1.0)


def test_raw_mean_averages_the_raw_prompt_features_as_csps_code(tiny):
    """``reduce="raw_mean"`` (CSP's code: the mean of the raw features, then ``/= norm``) against the
    model's own ``encode_text``; ``unit_mean`` averages the normalised ones; the cache keeps them apart."""
    labels, templates = ["goldfish", "hot-air balloon", "red"], ["a photo of a {}.", "{}", "the nice {}"]
    tokens = tiny.tokenizer([t.format(x) for x in labels for t in templates])
    with torch.no_grad():
        raw = tiny.model.encode_text(tokens).double().reshape(len(labels), len(templates), -1)
    norms = raw.norm(dim=-1)
    assert float(norms.max() / norms.min()) > 1.05  # random weights: the raw norms differ, as CLIP's do
    want_raw = torch.nn.functional.normalize(raw.mean(dim=1), dim=-1).numpy()
    want_unit = torch.nn.functional.normalize(torch.nn.functional.normalize(raw, dim=-1).mean(dim=1), dim=-1).numpy()
    assert np.abs(want_raw - want_unit).max() > 1e-4
    for _ in range(2):  # computed, then read from the cache
        np.testing.assert_allclose(tiny.encode_text(labels, templates, reduce="raw_mean"), want_raw, atol=1e-6)
        np.testing.assert_allclose(tiny.encode_text(labels, templates), want_unit, atol=1e-6)
    tset = resolve_templates(templates).with_reduce("raw_mean")
    np.testing.assert_allclose(tiny.encode_text(labels, tset), want_raw, atol=1e-6)  # the set carries it
    assert resolve_templates("csp").reduce == "raw_mean" and resolve_templates("paper8").reduce == "unit_mean"
    assert resolve_templates("csp").describe()["reduce"] == "raw_mean"
    with pytest.raises(InputError, match="^reduce = 'raw': must be one of unit_mean, raw_mean$"):
        tiny.encode_text(labels, templates, reduce="raw")
