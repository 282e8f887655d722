"""AdaNeg (Zhang and Zhang, NeurIPS 2024): negative proxies adapted to the test stream through a memory bank.

Equal to the authors' released code, ``YBZh/OpenOOD-VLM``
``openood/postprocessors/ttaprompt_postprocessor.py`` class ``TTAPromptPostprocessor_noadagap`` ("the
adopted one in NIPS submission", run by ``scripts/ood/adaneg/imagenet.sh``), on the same stream of
features (``tests/scoring/test_adaneg.py`` runs their code beside this one). Per batch ``x`` (n, d),
with ``s = 1 / tau`` (their CLIP logit scale, 100), K ID classes and M negatives (C = K + M classes):

1. **Vanilla NegLabel** ``S_v(x)``: NegLabel's grouped score on ``s * x @ [id; neg].T`` with
   ``adaneg_groups`` groups (NegLabel's released grouping: the last ``M mod G`` negatives dropped,
   the rest permuted by ``torch.randperm`` seeded with ``seed`` on the CPU, as their code draws it).
2. **Memory update, before scoring** (their order): each class ``c`` has ``adaneg_memory + 1``
   slots, slot 0 its text embedding; an image with ``S_v > t + gap (1 - t)`` (``t`` =
   ``adaneg_threshold``) goes to its arg-max ID class, one with ``S_v < t - gap t`` to its arg-max
   negative (over all M, the dropped ones too), in batch order, ID gate first. Its confidence is the
   entropy ``H = -sum p log(p + 1e-8)`` of the softmax over the K ID (or M negative) logits. A free
   slot takes it; a full class replaces its highest-entropy slot when ``H`` is below it. Their code
   calls a class full when its next slot is ``adaneg_memory``: it holds ``adaneg_memory - 1`` images
   and its last slot stays a zero row; a replacement compares ``H`` with every slot's entropy, the
   text slot's and the unused slot's (0) included, so near-one-hot images (``H`` about ``-1e-8``) may
   overwrite either. negvocab keeps all of that.
3. **Proxies**: task-adaptive (``adaneg_proxies="task"``, their ``samada False``): each class's
   slots averaged and renormalised; sample-adaptive (``"sample"``): the slots weighted per image by
   ``exp(-beta (1 - m . x))`` (``beta`` = ``adaneg_beta``), summed and renormalised.
4. **Adaptive score** ``S_a(x)``: the same grouped NegLabel score on ``s * x . proxy_c``.
5. **The mix** (``adaneg_score``): ``combine`` ``S_a + lambda S_v`` (their default, ``lambda`` =
   ``adaneg_lambda``), ``adaptive`` ``S_a``, ``vanilla`` ``S_v``, ``multiply`` ``S_a S_v``.

The sample-adaptive proxy's norm is computed from a per-class Gram matrix of the slots
(``|sum_s w_s m_s|^2 = w G w``) instead of materialising their (n, C, slots, d) tensor: the same
number, without the 1.4 G-float intermediate. The task-adaptive proxies and the sample-adaptive Gram
matrices are kept and recomputed only for the classes a batch wrote into, and the negative classes
are held group by group (a group's logits a contiguous slice, no gather per batch; ``by_class``
gives the state in the classes' own order; an exact tie of two negatives' logits, which only equal
embeddings give, may then send an image to the other one of the pair). Computation runs in the
dtype and on the device of the embeddings given (float64 inputs reproduce their code to 1e-10;
float32 to float32 rounding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.types import Embeddings, ParamValue
from negvocab.scoring.grouping import neglabel_groups
from negvocab.scoring.stream import StreamMethod

if TYPE_CHECKING:
    import torch

__all__ = ["AdaNeg"]


class AdaNeg(StreamMethod):
    """AdaNeg's memory bank over the test stream (module docstring: the steps and their formulas).

    State (rows in group order: :meth:`by_class`): ``memory`` (C, slots + 1, d) on the embeddings'
    device; ``entropy`` (C, slots + 1; float32, as their torch default dtype keeps it) and ``filled``
    (C,), the next free slot, in numpy on the CPU, where the per-image update loop runs.

    Parameters
    ----------
    **params
        The method's parameters, as :func:`negvocab.make_stream` gives them (the registry's defaults
        filled in): ``tau``, ``seed`` and the ``adaneg_*`` ones (``negvocab.get_method("adaneg")``).
    """

    def __init__(self, **params: ParamValue) -> None:
        super().__init__(**params)
        self.needs_negatives = True

    def _forget_setup(self) -> None:
        """A new set-up: the first reset builds the state, later ones restore the classes written."""
        self._clean: torch.Tensor | None = None

    def init_state(self) -> None:
        """The memory of text embeddings alone. Built once per set-up; a reset restores only the classes
        a stream wrote into (their slots, entropies and proxies), the rest being as built."""
        if self._clean is not None:
            self._restore()
            return
        self._build()
        self._clean = (self.proxy if self.params["adaneg_proxies"] == "task" else self.gram).clone()

    def _restore(self) -> None:
        import torch

        dirty = np.flatnonzero(self.filled > 1)  # every write (a replacement too) is into a class past its text slot
        if len(dirty):
            rows = torch.as_tensor(dirty, device=self.memory.device)
            self.memory[rows] = 0
            self.memory[rows, 0] = self.text[rows]  # a replacement may have overwritten the text slot
            self.entropy[dirty], self.filled[dirty] = 0, 1
            assert self._clean is not None
            (self.proxy if self.params["adaneg_proxies"] == "task" else self.gram)[rows] = self._clean[rows]
        self.n_written, self.n_replaced = {"id": 0, "ood": 0}, {"id": 0, "ood": 0}

    def _build(self) -> None:
        import torch

        p = self.params
        if self.neg_emb is None:
            raise InputError(f"{self.name} needs negative label embeddings (neg_emb)")
        id_emb, neg_emb = torch.as_tensor(self.id_emb), torch.as_tensor(self.neg_emb)
        m = neg_emb.shape[0]
        groups = np.stack(neglabel_groups(m, int(p["adaneg_groups"]), "neglabel", int(p["seed"]), device="cpu"))
        # the negative classes are held group by group (then the ones no group keeps), so that a group's
        # logits are a contiguous slice: the class order is internal (no result names a class)
        order = np.concatenate([groups.ravel(), np.setdiff1d(np.arange(m), groups.ravel())])
        self.group_shape = groups.shape  # (G, M'/G)
        self.classes = np.concatenate([np.arange(id_emb.shape[0]), id_emb.shape[0] + order])  # held row -> class
        neg = neg_emb.to(id_emb.device, id_emb.dtype)[torch.as_tensor(order, device=id_emb.device)]
        text = torch.cat([id_emb, neg])
        self.k, c, slots = id_emb.shape[0], text.shape[0], int(p["adaneg_memory"]) + 1
        self.text = text
        self.memory = torch.zeros((c, slots, text.shape[1]), dtype=text.dtype, device=text.device)
        self.memory[:, 0] = text
        self.entropy = np.zeros((c, slots), dtype=np.float32)  # float32 as theirs (torch's default dtype)
        self.filled = np.ones(c, dtype=np.int64)
        self.proxy = self.gram = torch.empty(0)
        self._refresh(torch.arange(c, device=text.device))
        self.n_written = {"id": 0, "ood": 0}
        self.n_replaced = {"id": 0, "ood": 0}

    def step(self, image_emb: Embeddings) -> torch.Tensor:
        import torch

        x = torch.as_tensor(image_emb).to(self.memory.device, self.memory.dtype)
        scale = 1.0 / float(self.params["tau"])
        logits = scale * x @ self.text.T
        vanilla = self._grouped(logits)
        self._update(x, logits, vanilla)  # their code writes the batch into the memory, then scores it
        adaptive = self._grouped(scale * self._proxy_cosines(x))
        rule, lam = self.params["adaneg_score"], float(self.params["adaneg_lambda"])
        if rule == "combine":
            return adaptive + lam * vanilla
        if rule == "adaptive":
            return adaptive
        if rule == "vanilla":
            return vanilla
        return adaptive * vanilla

    # -- the parts ------------------------------------------------------------------------------
    def _grouped(self, logits: torch.Tensor) -> torch.Tensor:
        """NegLabel's grouped score: the mean over groups of the ID share of softmax([ID, group])."""
        import torch

        pos = torch.logsumexp(logits[:, : self.k], dim=1)  # (n,)
        g, size = self.group_shape
        neg = logits[:, self.k : self.k + g * size].view(-1, g, size)  # (n, G, M'/G), group by group
        total = torch.logaddexp(pos[:, None], torch.logsumexp(neg, dim=2))  # (n, G)
        return torch.exp(pos[:, None] - total).mean(dim=1)

    def _update(self, x: torch.Tensor, logits: torch.Tensor, vanilla: torch.Tensor) -> None:
        """Write the gated images of the batch into the memory, in their order (ID gate, then OOD)."""
        import torch

        t, gap = float(self.params["adaneg_threshold"]), float(self.params["adaneg_gap"])
        conf = vanilla.detach().cpu().numpy()
        written: set[int] = set()
        for side, gate, part, offset in (
            ("id", conf > t + gap * (1 - t), logits[:, : self.k], 0),
            ("ood", conf < t - gap * t, logits[:, self.k :], self.k),
        ):
            rows = np.flatnonzero(gate)
            if not len(rows):
                continue
            sel = part[torch.as_tensor(rows, device=part.device)]
            prob = torch.softmax(sel, dim=1)
            ent = (-(prob * torch.log(prob + 1e-8)).sum(dim=1)).detach().cpu().double().numpy()
            cls = (sel.argmax(dim=1).cpu().numpy() + offset).astype(np.int64)
            writes: dict[tuple[int, int], int] = {}  # (class, slot) -> batch row; a later write wins
            for r, c, h in zip(rows.tolist(), cls.tolist(), ent.tolist(), strict=True):
                slot = self._slot(c, h, side)
                if slot is not None:
                    writes[(c, slot)] = r
            if writes:
                (cs, ss), rs = zip(*writes, strict=True), list(writes.values())
                self.memory[torch.as_tensor(cs), torch.as_tensor(ss)] = x[torch.as_tensor(rs, device=x.device)]
                written.update(cs)
        if written:
            self._refresh(torch.as_tensor(sorted(written), device=self.memory.device))

    def _refresh(self, classes: torch.Tensor) -> None:
        """Recompute what the proxies need of the memory rows of ``classes`` (the ones just written):
        the task-adaptive proxy (slots averaged, unit norm) or the sample-adaptive Gram matrix of the slots."""
        import torch

        mem = self.memory[classes]
        if self.params["adaneg_proxies"] == "task":
            if not len(self.proxy):
                self.proxy = torch.empty_like(self.memory[:, 0])
            proxy = mem.mean(dim=1)
            self.proxy[classes] = proxy / proxy.norm(dim=-1, keepdim=True)
        else:
            if not len(self.gram):
                c, slots = self.memory.shape[:2]
                self.gram = self.memory.new_empty((c, slots, slots))
            self.gram[classes] = torch.einsum("csd,ctd->cst", mem, mem)

    def _slot(self, c: int, h: float, side: str) -> int | None:
        """The slot of class ``c`` an image of entropy ``h`` takes (None: kept out), entropies updated."""
        slots, h32 = self.entropy.shape[1] - 1, np.float32(h)  # their entropies are kept and compared in float32
        if self.filled[c] == slots:  # "full" in their code: the last slot is never filled
            row = self.entropy[c]
            if not (h32 < row).any():
                return None
            # their torch.sort(row)[1][-1]: the highest entropy over ALL slots (the text slot and the unused
            # last one hold 0), a tie going to the last slot (torch's CPU sort is stable)
            slot = len(row) - 1 - int(np.argmax(row[::-1]))
            self.n_replaced[side] += 1
        else:
            slot = int(self.filled[c])
            self.filled[c] += 1
            self.n_written[side] += 1
        self.entropy[c, slot] = h32
        return slot

    def _proxy_cosines(self, x: torch.Tensor) -> torch.Tensor:
        """``x . proxy_c`` for every class (n, C): the task- or sample-adaptive proxies, unit norm."""
        import torch

        if self.params["adaneg_proxies"] == "task":
            return x @ self.proxy.T
        cos = torch.einsum("csd,nd->ncs", self.memory, x)  # (n, C, slots)
        w = torch.exp(-float(self.params["adaneg_beta"]) * (1 - cos))
        norm2 = torch.einsum("ncs,cst,nct->nc", w, self.gram, w)  # gram: (C, slots, slots), kept per class
        return (w * cos).sum(dim=2) / norm2.sqrt()

    def by_class(self, rows: Embeddings) -> Embeddings:
        """``rows`` of the state (``memory``, ``entropy``, ``filled``: one per class, held in group
        order) in the classes' own order: ID classes, then the negatives as given."""
        import torch

        if isinstance(rows, torch.Tensor):
            held = torch.empty_like(rows)
            held[torch.as_tensor(self.classes, device=rows.device)] = rows
            return held
        out = np.empty_like(rows)
        out[self.classes] = rows
        return out

    def summary(self) -> dict[str, Any]:
        held = self.filled - 1
        return {
            "memory_id_images": int(held[: self.k].sum()),
            "memory_ood_images": int(held[self.k :].sum()),
            "written": dict(self.n_written),
            "replaced": dict(self.n_replaced),
        }
