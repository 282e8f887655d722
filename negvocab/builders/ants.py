"""ANTS's negatives from a multimodal LLM: its caption and reasoning prompts sent with images to any
OpenAI-compatible chat endpoint, through negvocab's LLM layer (docs/methods.md#ants).

:class:`LLMNegatives` is the :class:`negvocab.scoring.ants.ANTSProvider` of a real run. Its two
questions are ANTS's own (``ZhuWenjie98/ANTS`` ``mllm/qwen.py``, MIT, verbatim in
``prompts/ants_caption.txt`` and ``prompts/ants_similar.txt``):

- a caption of each cached stream image ("Describe this image in fewer than eight words. Answer:"),
  the image resized to 56 x 56 (bilinear) as their Qwen2-VL backend resizes it;
- labels like an ID class ("Suggest five different class names that share visual features with
  {class_name}. ..."), sent with a black 28 x 28 image as theirs is; the numbered lines of the answer
  are read with their regex, the first five kept.

Each image goes as an ``image_url`` content part holding a base64 PNG data URL (the form OpenAI,
llama.cpp's server, vLLM and Ollama take). Requests go through :class:`negvocab.builders.llm.LLMRun`:
a journal in the run folder (an image's question is keyed by the hash of what is sent, so a killed
run resumes and a finished one replays without the server), retries, one-line errors, the key never
stored. Answers are cleaned as GPT siblings' are: the labels of the reasoning answers by negvocab's label
normaliser, then the synonym filter against the ID classes; a caption is a sentence, so only the filter
(a caption that names an ID class is dropped). Every answer is kept in :attr:`LLMNegatives.records`
with the stream position and file of the image it came from: the negatives are made from the test
images (transductive).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import os
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.builders.llm import LLMRun
from negvocab.builders.llm_identity import check_model, run_folder
from negvocab.core.errors import InputError
from negvocab.labels.clean import clean_labels
from negvocab.labels.imagenet import IdClasses, imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from negvocab.llm.formats import VERBATIM
from negvocab.llm.prompts import PromptTemplate, load_prompt
from negvocab.llm.run import Request, make_request
from negvocab.llm.settings import LLMSettings
from negvocab.scoring.ants import ants_labels

if TYPE_CHECKING:
    from negvocab.llm.cost import CostEstimate
    from negvocab.vlm.model import VLM

__all__ = ["CAPTION_SIZE", "LLMNegatives", "image_data_url", "numbered_labels", "vlm_encoder"]

#: the side a stream image is resized to before it is captioned (their Qwen2-VL backend: 56 x 56)
CAPTION_SIZE = 56
#: the side of the black image sent with the reasoning question (their placeholder)
PLACEHOLDER_SIZE = 28
#: labels kept of one reasoning answer (their parse_numbered_labels limit)
SIMILAR_LIMIT = 5
_NUMBERED = re.compile(r"^\s*\d+[\.\):\-]\s*(.+?)\s*$")

Encoder = Callable[[Sequence[str], "str | None"], np.ndarray]


def numbered_labels(text: str, limit: int = SIMILAR_LIMIT) -> list[str]:
    """The numbered lines of an answer (``1. name``, ``2) name``, ...), first of each up to case kept,
    at most ``limit`` (their parse_numbered_labels).

    >>> numbered_labels("Sure:\\n1. Lynx\\n2) bobcat.\\n3: LYNX\\nthat is all")
    ['Lynx', 'bobcat']
    """
    found = [m.group(1) for line in text.splitlines() if (m := _NUMBERED.match(line))]
    return ants_labels(found)[:limit]


def image_data_url(path: str | os.PathLike[str] | None, size: int) -> str:
    """The image at ``path`` (None: a black one) as RGB, resized to ``size`` x ``size`` (bilinear), as a
    base64 PNG data URL; an unreadable file is one line naming it."""
    from PIL import Image, UnidentifiedImageError  # deferred: a heavy import

    try:
        if path is None:
            image = Image.new("RGB", (size, size))
        else:
            with Image.open(path) as im:
                image = im.convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
    except (OSError, UnidentifiedImageError) as e:
        raise InputError(f"{path}: cannot read the image for ANTS's caption question ({e})") from None
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def vlm_encoder(vlm: VLM) -> Encoder:
    """Text embeddings of ANTS's negatives from a negvocab model: each label alone (a caption) or
    through its one template (``"The nice {}."``), unit-norm (their encode_text_features)."""

    def encode(labels: Sequence[str], template: str | None) -> np.ndarray:
        return np.asarray(vlm.encode_text(list(labels), [template or "{}"]), dtype=np.float64)

    return encode


class LLMNegatives:
    """ANTS's provider over a chat endpoint that takes images (see the module docstring).

    Parameters
    ----------
    model : str
        The chat model the server serves.
    images : sequence of path
        The stream's image files in stream order: position ``p`` of the stream is ``images[p]``.
    encode : callable
        ``encode(labels, template)`` -> unit text embeddings (``vlm_encoder(vlm)``).
    id_classes : IdClasses, optional
        The ID label space (default ImageNet-1k): the class names asked about and filtered against.
    run_dir : str or PathLike, optional
        The run folder (its journal); default the cache's folder of this task, model and identity.
    settings : LLMSettings, optional
        The LLM layer's settings (server, key, concurrency, ...); the response format is always verbatim.
    temperature : float, optional
        The sampling temperature (None: the server's).
    synonym_filter : SynonymFilter, optional
        The filter of answers that name an ID class (default one over ``id_classes``).
    """

    def __init__(
        self,
        *,
        model: str,
        images: Sequence[str | os.PathLike[str]],
        encode: Encoder,
        id_classes: IdClasses | None = None,
        run_dir: str | os.PathLike[str] | None = None,
        settings: LLMSettings | None = None,
        temperature: float | None = None,
        synonym_filter: SynonymFilter | None = None,
    ) -> None:
        self.model, self.images, self._encode = check_model(model), [str(p) for p in images], encode
        self.id_classes = id_classes if id_classes is not None else imagenet1k()
        self.filter = synonym_filter if synonym_filter is not None else SynonymFilter(self.id_classes)
        self.caption_prompt, self.similar_prompt = load_prompt("ants_caption"), load_prompt("ants_similar")
        self.identity: dict[str, Any] = {
            "task": "ants",
            "model": self.model,
            "prompt": {"ants_caption": self.caption_prompt.sha256, "ants_similar": self.similar_prompt.sha256},
            "temperature": temperature,
            "response_format": VERBATIM,
            "image_size": CAPTION_SIZE,
        }
        self.run_dir = run_folder(run_dir, "ants", self.model, self.identity)
        self.settings = _verbatim(settings)
        #: every answer with what it came from: kind (caption/similar), position, image, class, answer, kept
        self.records: list[dict[str, Any]] = []
        self.usage: dict[str, int] = {}
        self._urls: dict[str, str] = {}  # each file's data URL, made once
        self.cost_usd: float | None = None

    # -- the ANTSProvider protocol -----------------------------------------------------------------
    def describe(self, positions: Sequence[int], predicted: Sequence[int]) -> list[str]:
        """A caption of each stream image (an empty one where the answer names an ID class or failed)."""
        files = [self._file(p) for p in positions]
        reqs = [self._caption_request(f) for f in files]
        answers = self._ask(self.caption_prompt, reqs)
        out = []
        for p, c, f, req in zip(positions, predicted, files, reqs, strict=True):
            text = " ".join(answers.get(req.custom_id, "").split())
            kept = text if text and not self.filter.is_id(text) else ""
            self.records.append(
                {"kind": "caption", "position": int(p), "image": f, "predicted": self._name(c), "answer": text}
                | {"kept": [kept] if kept else []}
            )
            out.append(kept)
        return out

    def similar(self, classes: Sequence[int]) -> list[list[str]]:
        """Labels like each ID class: the answer's numbered lines, cleaned, the ID classes' names dropped."""
        names = [self._name(c) for c in classes]
        blank = image_data_url(None, PLACEHOLDER_SIZE)
        reqs = [
            make_request(self.similar_prompt, f"similar-{n}", 0, 1, {"class_name": n}, 1, images=(blank,))
            for n in names
        ]
        answers = self._ask(self.similar_prompt, reqs)
        out = []
        for c, n, req in zip(classes, names, reqs, strict=True):
            text = answers.get(req.custom_id, "")
            kept, _ = self.filter.split(clean_labels(numbered_labels(text)))
            self.records.append({"kind": "similar", "class": int(c), "class_name": n, "answer": text, "kept": kept})
            out.append(kept)
        return out

    def encode(self, labels: Sequence[str], template: str | None) -> np.ndarray:
        """The labels' unit text embeddings, through the encoder given."""
        return self._encode(labels, template)

    # -- the run -------------------------------------------------------------------------------------
    def estimate(self, positions: Sequence[int]) -> CostEstimate:
        """The dry run of captioning the images at ``positions`` (what the journal lacks): nothing is sent."""
        reqs = [self._caption_request(self._file(p)) for p in positions]
        return self._run(self.caption_prompt, _unique(reqs)).estimate(self.settings)

    def _caption_request(self, file: str) -> Request:
        url = self._urls.get(file) or self._urls.setdefault(file, image_data_url(file, CAPTION_SIZE))
        key = "caption-" + hashlib.sha256(url.encode("ascii")).hexdigest()[:20]  # the same image, the same question
        return make_request(self.caption_prompt, key, 0, 1, {}, 1, images=(url,))

    def _run(self, template: PromptTemplate, reqs: list[Request]) -> LLMRun:
        return LLMRun(
            "ants", self.model, template, reqs, self.identity, self.run_dir, [], 1, reads_text=True,
            id_classes=self.id_classes,
        )  # fmt: skip

    def _ask(self, template: PromptTemplate, reqs: list[Request]) -> dict[str, str]:
        """The answers' texts by custom id ("" for a failed one): sent where the journal lacks them."""
        if not reqs:
            return {}
        outcome = self._run(template, _unique(reqs)).execute(self.settings)
        self.usage, self.cost_usd = dict(outcome.usage_total), outcome.cost_total_usd
        out = {}
        for cid, rec in outcome.results.items():
            texts = rec.get("labels") or []
            out[cid] = str(texts[0]) if rec.get("status") == "ok" and texts else ""
        return out

    def _file(self, position: int) -> str:
        if not 0 <= int(position) < len(self.images):
            raise InputError(f"ANTS asked for stream position {position}; the stream has {len(self.images)} images")
        return self.images[int(position)]

    def _name(self, c: int) -> str:
        return str(self.id_classes.names[int(c)])


def _unique(reqs: list[Request]) -> list[Request]:
    """One request per question (the same image twice is asked once)."""
    return list({r.custom_id: r for r in reqs}.values())


def _verbatim(settings: LLMSettings | None) -> LLMSettings:
    return dataclasses.replace(settings or LLMSettings(), response_format=VERBATIM)
