"""ANTS's multimodal LLM side (negvocab.builders.ants) against a local OpenAI-compatible server on
127.0.0.1 (tests/llm/fake_openai.py, real HTTP through the official SDK) that answers questions sent
with images: the caption of each image is chosen by the server from the image's pixels, as a vision
model's answer depends on the image, and the reasoning answers are numbered lists as a chat model writes
them. ANTS scored with this provider equals ANTS scored with the same answers handed over directly
(the scoring side is checked against the authors' code in tests/scoring/test_ants.py); a run killed
part-way resumes to the clean run's scores without asking anything twice, and a finished run replays
from its journal with no server at all."""

from __future__ import annotations

import base64
import hashlib
import io
import re

import numpy as np
import pytest
from PIL import Image

from negvocab.builders.ants import LLMNegatives, image_data_url, numbered_labels
from negvocab.core.errors import InputError, ResourceError
from negvocab.labels.imagenet import IdClasses
from negvocab.llm.settings import LLMSettings
from negvocab.scoring.stream import make_stream
from tests.llm.conftest import FAST
from tests.reference.ants import normalize_labels

K, M, D = 6, 120, 12
N = 600
CLASSES = ["goldfish", "tabby cat", "golden retriever", "oak", "sports car", "tennis ball"]
COLOURS = {"red": (220, 20, 20), "green": (20, 200, 40), "blue": (30, 40, 210), "grey": (128, 128, 128)}
#: what the vision model says of each image (one names an ID class: the synonym filter drops it)
CAPTIONS = {
    "red": "A red brick wall.",
    "green": "green  grass in a field",
    "blue": "Goldfish",
    "grey": "A foggy street",
}
SIMILAR = re.compile(r"share visual features with (.+?)\. Put each")
#: reasoning answers as a chat model writes them: a preamble, numbered lines, a repeat, an ID class
ANSWERS = {
    "goldfish": "Here are five:\n1. Koi\n2. Carp.\n3. koi\n4. Tabby cat\n5. Guppy\n6. Minnow",
    "tabby cat": "1) Lynx\n2) Bobcat\n3) Ocelot",
    "golden retriever": "1. Labrador retriever\n2. Dingo",
    "oak": "1. Maple\n2. Elm\n3. Beech",
    "sports car": "1- Race car\n2- Convertible",
    "tennis ball": "1: Lime\n2: Golf ball",
}


def _colour(url: str) -> str:
    """The colour name of an image sent as a data URL (decoded as a server decodes it)."""
    png = base64.b64decode(url.split(",", 1)[1])
    with Image.open(io.BytesIO(png)) as im:
        rgb = im.convert("RGB").getpixel((3, 3))
    return min(COLOURS, key=lambda c: sum((a - b) ** 2 for a, b in zip(COLOURS[c], rgb, strict=True)))


def _answer(urls: list[str], text: str) -> str | None:
    found = SIMILAR.search(text)
    if found:
        return ANSWERS[found.group(1)]
    return CAPTIONS[_colour(urls[0])]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Image files of four colours (noisy, of odd sizes, as photos come), the stream's positions on
    them, and raw-free unit features: ID images near the prompts, OOD images near some negatives."""
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(3)
    files = {}
    for name, rgb in COLOURS.items():
        pixels = np.clip(np.array(rgb) + rng.normal(0, 6, size=(40, 52, 3)), 0, 255).astype(np.uint8)
        files[name] = folder / f"{name}.jpg"
        Image.fromarray(pixels).save(files[name], quality=92)
    stream_files = [files[list(COLOURS)[int(c)]] for c in rng.integers(0, 4, N)]
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    ids, negs = unit(rng.normal(size=(K, D))), unit(rng.normal(size=(M, D)))
    x_id = unit(ids[rng.integers(0, K, N // 2)] + 0.5 * rng.normal(size=(N // 2, D)) / np.sqrt(D))
    x_ood = unit(negs[rng.integers(0, 20, N // 2)] + 0.5 * rng.normal(size=(N // 2, D)) / np.sqrt(D))
    x = np.concatenate([x_id, x_ood])[rng.permutation(N)]
    return {"files": stream_files, "ids": ids, "negs": negs, "x": x}


def encoder(labels, template):
    """A fixed text encoder (unit rows per exact text), standing in for the CLIP text tower."""
    out = []
    for lab in labels:
        text = template.format(lab) if template else lab
        v = np.random.default_rng(sum(map(ord, text)) * 7919 + len(text)).normal(size=D)
        out.append(v / np.linalg.norm(v))
    return np.stack(out)


PARAMS = {"ants_score": "ada", "ants_groups": 200, "ants_near_start": 2, "ants_near_every": 3}


def _score(world, provider, batch=40):
    method = make_stream("ants", **PARAMS)
    method.setup(world["ids"], world["negs"], ants_provider=provider)
    return np.concatenate([method.score_batch(world["x"][i : i + batch]) for i in range(0, N, batch)]), method


def _llm(world, run_dir, **kw):
    kw.setdefault("settings", LLMSettings(client_options=FAST))
    return LLMNegatives(
        model="qwen2-vl-test",
        images=world["files"],
        encode=encoder,
        id_classes=IdClasses.from_names(CLASSES),
        run_dir=run_dir,
        **kw,
    )


class Direct:
    """The same answers handed over without a server, cleaned as ANTS's code cleans them; the ID
    classes' own names dropped as the provider's filter drops them."""

    def __init__(self, world) -> None:
        self.files = world["files"]

    def describe(self, positions, predicted):
        out = []
        for p in positions:
            text = " ".join(CAPTIONS[self.files[p].stem].split())
            out.append("" if text.lower() in CLASSES else text)
        return out

    def similar(self, classes):
        got = []
        for c in classes:
            labels = normalize_labels(re.findall(r"^\s*\d+[\.\):\-]\s*(.+?)\s*$", ANSWERS[CLASSES[c]], re.M))[:5]
            got.append([lab.lower() for lab in labels if lab.lower() not in CLASSES])
        return got

    def encode(self, labels, template):
        return encoder(labels, template)


@pytest.fixture
def served(endpoint):
    endpoint.state.image_answer = _answer
    return endpoint


def test_llm_provider_equals_the_answers_given_directly(world, served, tmp_path):
    llm = _llm(world, tmp_path / "run")
    got, method = _score(world, llm)
    want, _ = _score(world, Direct(world))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert method.summary()["far_updates"] >= 1 and method.summary()["near_negatives"] > 0
    # every image went as a data URL of a 56 x 56 PNG; the reasoning question with a black 28 x 28 one
    sizes = set()
    for url in served.state.images_seen:
        assert url.startswith("data:image/png;base64,")
        with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as im:
            sizes.add(im.size)
    assert sizes == {(56, 56), (28, 28)}
    # each distinct question once: four images, the six classes
    assert sum(served.state.chat_counts.values()) == 4 + K and max(served.state.chat_counts.values()) == 1
    # every negative recorded with the image (or the class) it came from
    caps = [r for r in llm.records if r["kind"] == "caption"]
    assert {r["image"] for r in caps} <= {str(f) for f in world["files"]}
    assert all(world["files"][r["position"]].name == r["image"].rsplit("/", 1)[-1] for r in caps)
    blue = [r for r in caps if r["image"].endswith("blue.jpg")]
    assert blue and all(r["answer"] == "Goldfish" and r["kept"] == [] for r in blue)  # names an ID class
    fish = next(r for r in llm.records if r["kind"] == "similar" and r["class_name"] == "goldfish")
    assert fish["kept"] == ["koi", "carp", "guppy", "minnow"]  # the repeat and the ID class dropped, five read
    assert llm.usage.get("prompt_tokens", 0) > 0


def test_killed_run_resumes_to_the_clean_run_and_replays_without_the_server(world, served, tmp_path):
    clean, _ = _score(world, _llm(world, tmp_path / "clean"))
    served.state.chat_counts.clear()
    # the server fails the grey image's caption until the client gives up: the stream stops part-way
    grey = next(f for f in world["files"] if f.stem == "grey")
    key = "caption-" + hashlib.sha256(image_data_url(grey, 56).encode()).hexdigest()[:20]
    served.state.add_faults(f"{key}/r0", *["500same"] * 3)
    with pytest.raises(ResourceError, match="re-run"):
        _score(world, _llm(world, tmp_path / "resumed", settings=LLMSettings(client_options={**FAST, "deferrals": 0})))
    first = {cid for cid, n in served.state.chat_counts.items() if not cid.startswith(key)}
    assert len(first) == 3 + K  # the other captions and the reasoning answers, journaled before the stop
    served.state.faults.clear()
    served.state.chat_counts.clear()
    resumed, _ = _score(world, _llm(world, tmp_path / "resumed"))
    np.testing.assert_allclose(resumed, clean, rtol=0, atol=0)
    assert not first & set(served.state.chat_counts)  # nothing answered before was asked again
    # the finished run replays from its journal: no server at that address
    dead = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key="sk-none", client_options=FAST)
    replayed, _ = _score(world, _llm(world, tmp_path / "resumed", settings=dead))
    np.testing.assert_allclose(replayed, clean, rtol=0, atol=0)


def test_numbered_labels_as_theirs():
    text = "Sure!\n1. Koi\n2) carp.\n3: KOI\n  4- guppy  \n5. minnow\n6. tetra\nNotes: none"
    assert numbered_labels(text) == ["Koi", "carp", "guppy", "minnow", "tetra"]


def test_an_unreadable_image_is_one_line(tmp_path):
    bad = tmp_path / "bad.jpg"
    bad.write_text("not an image")
    with pytest.raises(InputError, match="bad.jpg: cannot read the image"):
        image_data_url(bad, 56)


def test_the_dry_run_counts_each_image_once_and_its_tokens(world, tmp_path):
    """Nothing is sent: the distinct images among the positions, each priced with its image's tokens."""
    from negvocab.llm.cost import CHARS_PER_TOKEN, IMAGE_TOKENS, MESSAGE_OVERHEAD

    llm = _llm(world, tmp_path / "dry")
    positions = list(range(40))
    est = llm.estimate(positions)
    distinct = len({world["files"][p] for p in positions})
    assert est.requests == distinct and est.already_done == 0
    text = llm.caption_prompt.render()
    per = sum(MESSAGE_OVERHEAD + -(-len(m["content"]) // CHARS_PER_TOKEN) for m in text) + IMAGE_TOKENS
    assert est.prompt_tokens == distinct * per
