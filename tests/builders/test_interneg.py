"""InterNeg's selection against InterNeg's own code, re-implemented here in float64.

InterNeg's code: ``ZhikangXu0112/InterNeg`` at commit e0162029be63512339149a57e5ad85c56739489a:
``openood/networks/clip_fixed_ood_prompt.py`` (``FixedCLIP_InterNegOODPrompt.__init__``: the class
image prototypes; ``get_selected_ood_text_list``: the criterion, the ranking and the split) and
``openood/networks/clip_for_wordnet_prepare.py`` (``generate_cossim_idname_wordnet_dedup``,
``CLIP_scoring``: prompts, de-duplication, the cosines). The repository has NO licence file, so not a
line of it is copied: ``interneg_reference`` below is an independent float64 re-implementation that
follows their code line by line (the names in its comments are theirs), run on the same embeddings.

The embeddings are raw features whose norms vary by +-20% (as CLIP's do); both sides normalise them
as their code does. The stand-in model moves each text row by about 1e-7 from one call to the next,
as batching moves a real model's float32 rows, so a candidate equal to an ID class name is never
exactly its ID text: only InterNeg's exact-name deduplication before the criterion keeps it out.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

import negvocab
from negvocab.builders.interneg import build_interneg_vocabulary, class_prototypes, interneg_margins
from negvocab.core.errors import InputError
from negvocab.data.images import ImageSet
from negvocab.evaluation.encode import encode_labels
from negvocab.labels.candidates import Candidate, sample_pool
from negvocab.labels.imagenet import IdClasses
from negvocab.vlm.images import ImageEmbeddings
from negvocab.vlm.templates import resolve_templates

DIM = 16
CLASSES = ["goldfish", "tench", "barn", "canoe", "igloo", "teapot"]


def _vec(key: str) -> np.ndarray:
    """A raw feature: a random direction, a norm in [0.8, 1.2]."""
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(DIM)
    return v / np.linalg.norm(v) * rng.uniform(0.8, 1.2)


def _image_vec(path: str) -> np.ndarray:
    """An image of class c lies near its class name's prompt (InterNeg's base cosines are high); raw."""
    cls = path.split("/")[0]
    return 2.0 * _vec(f"The nice {cls}.") + _vec(path)


class StubVLM:
    """Text: a label's prompts' raw features, each normalised (one template a part of speech here),
    averaged and normalised, then moved by ~1e-7 (a different draw each call); images: :func:`_image_vec`
    normalised, as the image encoder returns them."""

    identity = {"name": "stub"}
    random_weights = True

    def __init__(self):
        self.calls = 0

    def encode_text(self, labels, templates="paper8", *, pos=None, batch_size=None, progress=None):
        tset = resolve_templates(templates)
        pos = [pos] * len(labels) if pos is None or isinstance(pos, str) else pos
        prompts = [[_vec(t.format(x)) for t in tset.for_pos(p)] for x, p in zip(labels, pos, strict=True)]
        out = np.stack([np.mean([v / np.linalg.norm(v) for v in rows], axis=0) for rows in prompts])
        self.calls += 1
        out += 1e-7 * np.random.default_rng(self.calls).standard_normal(out.shape)
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)

    def encode_images(self, source, *, batch_size=None, num_workers=None, progress=None):
        emb = np.stack([_image_vec(p) / np.linalg.norm(_image_vec(p)) for p in source.paths]).astype(np.float32)
        return ImageEmbeddings(paths=list(source.paths), embeddings=emb, ids=list(source.ids))


def interneg_reference(noun_list, adj_list, classnames, images, total_ood_num, features=None):
    """InterNeg's selection, float64: the selected labels (adjectives, then nouns).

    ``images``: (class index, feature) of the ID training images in loader order. A dict ``features``
    receives each selected label's text feature (``text``, in the selection's order)."""
    # FixedCLIP_InterNegOODPrompt: class_data sums the normalised image features, / class_count, normalise
    n_cls = len(classnames)
    class_data, class_count = [None] * n_cls, [0] * n_cls
    for class_idx, sample in images:
        sample = torch.tensor(sample, dtype=torch.float64)
        sample = sample / sample.norm(dim=-1, keepdim=True)
        class_data[class_idx] = sample if class_data[class_idx] is None else class_data[class_idx] + sample
        class_count[class_idx] += 1
    class_img = torch.stack([class_data[i] / class_count[i] for i in range(n_cls)])
    class_img = class_img / class_img.norm(dim=-1, keepdim=True)

    def Deduplication(listone, listtwo):
        return [item for item in listone if item not in listtwo]

    adj_list = Deduplication(adj_list, classnames)
    noun_list = Deduplication(noun_list, classnames)
    adj_list = Deduplication(adj_list, noun_list)

    def text_encoder(prompts):
        x = torch.tensor(np.stack([_vec(p) for p in prompts]))
        return x / x.norm(dim=-1, keepdim=True)

    text_features = text_encoder(["The nice " + name + "." for name in classnames])
    can_cos_id = torch.sum(torch.mul(text_features, class_img), dim=1)  # prepare_id
    can_cos_noun = text_encoder(["The nice " + name + "." for name in noun_list]) @ class_img.t()
    can_cos_adj = text_encoder(["This is a " + name + " photo." for name in adj_list]) @ class_img.t()

    can_cos_id = can_cos_id.unsqueeze(0)
    mask = torch.all(can_cos_adj < can_cos_id, dim=1)
    selected_value_cos_adj = can_cos_adj[mask]
    can_list_adj = [s for s, m in zip(adj_list, mask, strict=True) if m]
    mask = torch.all(can_cos_noun < can_cos_id, dim=1)
    selected_value_cos_noun = can_cos_noun[mask]
    can_list_noun = [s for s, m in zip(noun_list, mask, strict=True) if m]
    adj_num = int(total_ood_num * (len(can_list_adj) / (len(can_list_adj) + len(can_list_noun))))
    noun_num = total_ood_num - adj_num
    value_cos_adj = (can_cos_id - selected_value_cos_adj).mean(dim=1)
    value_cos_noun = (can_cos_id - selected_value_cos_noun).mean(dim=1)
    # InterNeg's value.sort(descending=True) is not stable; ties do not occur on these random embeddings
    _, indice_sim_adj = value_cos_adj.sort(descending=True, stable=True)
    _, indice_sim_noun = value_cos_noun.sort(descending=True, stable=True)
    selected_adj_text = [can_list_adj[i] for i in indice_sim_adj[:adj_num]]
    selected_noun_text = [can_list_noun[i] for i in indice_sim_noun[:noun_num]]
    if features is not None:
        adj_feats = text_encoder(["This is a " + name + " photo." for name in adj_list])
        feats = dict(zip(adj_list, adj_feats, strict=True))
        feats.update(zip(noun_list, text_encoder(["The nice " + name + "." for name in noun_list]), strict=True))
        features["text"] = np.stack([feats[x].numpy() for x in selected_adj_text + selected_noun_text])
    return selected_adj_text + selected_noun_text, len(can_list_adj), len(can_list_noun)


@pytest.fixture(scope="module")
def pool():
    cands = [c for c in sample_pool(400) if c.text not in CLASSES]
    # ID names as nouns and as an adjective, and an adjective equal to a noun: InterNeg drops them first
    names = [Candidate(x, "n", "noun.artifact", f"{x}.n.01") for x in CLASSES]
    noun = next(c.text for c in cands if c.pos == "n")
    return [*cands, *names, Candidate("barn", "a", "adj.all", "barn.a.01"), Candidate(noun, "a", "adj.all", "x.a.01")]


@pytest.fixture(scope="module")
def id_images():
    """5 images a class, listed class by class; shots=3 takes the first 3 of each."""
    paths = [f"{c}/img{k}.png" for c in CLASSES for k in range(5)]
    return ImageSet(name="id-train", paths=paths, ids=paths, labels=[p.split("/")[0] for p in paths])


@pytest.mark.parametrize("size", [40, 97])
def test_the_selection_is_internegs_label_for_label(pool, id_images, size):
    ids = IdClasses.from_names(CLASSES)
    nouns = [c.text for c in pool if c.pos not in ("a", "s")]
    adjs = [c.text for c in pool if c.pos in ("a", "s")]
    shots = [(CLASSES.index(p.split("/")[0]), _image_vec(p)) for p in id_images.paths if int(p[-5]) < 3]
    ref = {}
    want, n_adj, n_noun = interneg_reference(nouns, adjs, CLASSES, shots, size, features=ref)
    assert 20 < n_adj + n_noun < len(pool) and n_adj > 3  # the criterion keeps some of both, drops some
    stub = StubVLM()
    # InterNeg drops the exact ID names first; without the synonym filter that is all that is dropped
    got = build_interneg_vocabulary(
        stub, size, id_images=id_images, shots=3, candidates=pool, id_classes=ids, synonym_filter=False
    )
    assert got.labels == want
    assert got.settings["exact_id_names_dropped"] == len(CLASSES) and got.settings["departures_from_interneg"] == []
    np.testing.assert_allclose(encode_labels(StubVLM(), got, "interneg"), ref["text"], atol=1e-6)
    filtered = build_interneg_vocabulary(stub, size, id_images=id_images, shots=3, candidates=pool, id_classes=ids)
    assert [d.split(" (")[0] for d in filtered.settings["departures_from_interneg"]] == ["synonym filter on"]
    assert got.settings["kept"] == {"adjectives": n_adj, "nouns": n_noun}
    assert got.settings["id_images"]["uses_id_images"] is True and got.settings["id_images"]["images"] == 18
    from negvocab.evaluation.records import vocab_meta

    assert vocab_meta(got)["id_images"] == got.settings["id_images"]  # results files say it used ID images
    assert "id_images" not in vocab_meta(negvocab.Vocabulary.from_labels(["sofa"], source="file"))


def test_ranked_split_and_the_whole_ranking(pool, id_images):
    ids = IdClasses.from_names(CLASSES)
    full = build_interneg_vocabulary(StubVLM(), id_images=id_images, shots=3, candidates=pool, id_classes=ids)
    margins = [full.meta[x]["margin"] for x in full.labels]
    assert margins == sorted(margins, reverse=True) and "goldfish" not in full.labels
    # no ID name, also without the synonym filter: removed before the criterion, whatever the rounding
    exact = build_interneg_vocabulary(
        StubVLM(), id_images=id_images, shots=3, candidates=pool, id_classes=ids, synonym_filter=False
    )
    assert not set(CLASSES) & set(exact.labels) and len(exact) > len(full) - 5
    head = build_interneg_vocabulary(
        StubVLM(), 10, id_images=id_images, shots=3, candidates=pool, id_classes=ids, split="ranked"
    )
    assert head.labels == full.labels[:10]


def test_prototypes_and_margins_are_the_formulas():
    rng = np.random.default_rng(1)
    img = rng.standard_normal((7, 5))
    img /= np.linalg.norm(img, axis=1, keepdims=True)
    labels = [0, 1, 1, 2, 0, 2, 2]
    proto = class_prototypes(img, labels, 3)
    want = np.stack([img[[0, 4]].mean(0), img[[1, 2]].mean(0), img[[3, 5, 6]].mean(0)])
    np.testing.assert_allclose(proto, want / np.linalg.norm(want, axis=1, keepdims=True))
    text, cand = rng.standard_normal((3, 5)), rng.standard_normal((4, 5))
    margin, kept = interneg_margins(cand, text, proto)
    base = np.array([text[i] @ proto[i] for i in range(3)])
    sims = cand @ proto.T
    np.testing.assert_allclose(margin, [np.mean(base - s) for s in sims])
    assert kept.tolist() == [bool(np.all(s < base)) for s in sims]
    with pytest.raises(InputError, match="ID class 3 has no image"):
        class_prototypes(img, labels, 4)


def test_images_must_name_id_classes_and_the_builder_is_marked(id_images):
    ids = IdClasses.from_names(CLASSES[:2])
    with pytest.raises(InputError, match="id_images: label 'barn' is not an ID class"):
        build_interneg_vocabulary(StubVLM(), id_images=id_images, candidates=["sofa"], id_classes=ids)
    b = negvocab.get_builder("interneg")
    assert (b.source, sorted(b.needs)) == ("interneg", ["images", "vlm"])
    assert "uses labelled ID images" in b.summary


def test_through_the_registry_with_class_folders(tiny, tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    names = ["goldfish", "great white shark", "barn"]
    for c in names:  # folders spell names their own way: Great_White_Shark is the class great white shark
        folder = tmp_path / "id" / c.title().replace(" ", "_")
        folder.mkdir(parents=True)
        for k in range(3):
            Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(folder / f"{k}.png")
    (tmp_path / "classes.txt").write_text("\n".join(names) + "\n")
    opts = dict(
        id_images=tmp_path / "id", shots=2, n_candidates=300, id_classes=tmp_path / "classes.txt", templates="single"
    )
    v = negvocab.build_vocabulary("interneg", vlm=tiny, **opts)
    assert v.source == "interneg" and v.settings["id_images"]["images"] == 6 and v.settings["id_images"]["shots"] == 2
    assert 0 < len(v) < 300  # the criterion drops some candidates
    direct = build_interneg_vocabulary(
        tiny,
        id_images=tmp_path / "id",
        shots=2,
        candidates=sample_pool(300),
        id_classes=negvocab.read_id_classes(tmp_path / "classes.txt"),
        templates="single",
    )
    assert direct == v


@pytest.mark.parametrize("name", ["csp", "interneg"])
def test_the_authors_preset_names_real_options_with_allowed_values(name, tmp_path):
    from negvocab.builders.authors import AUTHORS

    preset = AUTHORS[name]
    b = negvocab.get_builder(name)
    assert set(preset.build) <= set(b.options.model_fields) and preset.build["synonym_filter"] is False
    required = {"id_images": tmp_path} if name == "interneg" else {}
    opts = b.options(**preset.build, **required)  # the options model accepts every value
    assert {k: getattr(opts, k) for k in preset.build} == dict(preset.build)
    assert preset.score["templates"] == preset.build["templates"]  # scored as it was built
    assert preset.score_flags.endswith(f"--templates {preset.build['templates']}")
