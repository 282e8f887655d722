"""NegRefine's own code, trimmed to the functions that compute, for the tests to run beside negvocab's.

Source: https://github.com/ah-ansari/NegRefine, commit 72e4b82d8d48ae298ceabbb3322ac13799cd0c88,
``src/neg_filter.py`` (``_clean_words``, ``_find_top_matching_pairs``, ``_llm_filter``) and
``src/clip_ood.py`` (``CLIPood._grouping``, ``_neg_label_score``, ``_multi_matching_score``,
``detection_score``). MIT licence (below). Trimmed: the CLIP model, the tokenizer and the Hugging
Face LLM are parameters (``embed``: texts -> unit-norm float32 features; ``query_llm``: prompt ->
response text; ``embed_labels``: labels -> template-ensembled features), ``self`` holds only what
the scoring reads, the log file is a list of lines, ``.to(self.device)`` and ``.item()`` are kept
where they compute. Everything else is their code as written.

MIT License

Copyright (c) 2025 ah-ansari

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

# ruff: noqa
from __future__ import annotations

import torch


# -- src/neg_filter.py ----------------------------------------------------------------------------
def _clean_words(word_list):
    cleaned = []

    # Keep only letters, underscores, hyphens, and spaces. Also, discard words with fewer than 3 characters.
    for word in word_list:
        w = "".join(c for c in word if c.isalpha() or c in {"_", "-", " "})
        if len(w) > 2:
            cleaned.append(w)

    cleaned = list(set(cleaned))

    return cleaned


def _find_top_matching_pairs(neg_labels, pos_labels, embed):
    pos_features = embed(pos_labels)
    neg_features = embed(neg_labels)

    # For each negative label, select its top-n most similar positive labels
    n = min(10, len(pos_labels))

    with torch.no_grad():
        similarity = neg_features @ pos_features.T

    pairs = []
    for i in range(len(neg_labels)):
        top_pos_labels = [pos_labels[j] for j in torch.topk(similarity[i], n).indices]
        pairs.append((neg_labels[i], top_pos_labels))

    return pairs


def _llm_filter(label_pairs, query_llm, log):
    filtered_neg_labels = []

    n_proper = 0
    n_same = 0
    n_subcatgeory = 0

    f = log

    for i in range(len(label_pairs)):
        neg_label = label_pairs[i][0]
        pos_labels = label_pairs[i][1]

        should_include = True

        # proper noun query
        prompt = f"Is '{neg_label}' a proper noun, like the name of a city, country, mountain, river, or any unique place or entity?"
        response = query_llm(prompt)
        if response.lower().startswith("yes"):
            n_proper += 1
            should_include = False
            f.append(f"{neg_label} | proper noun \n")

        if should_include is True:
            for l in pos_labels:
                # check if they are the same words
                if neg_label == l:
                    n_same += 1
                    should_include = False
                    f.append(f"{neg_label} | {l} | the same \n")
                    break

                # subcategory query
                prompt = f"Is '{neg_label}' a subcatgeory of '{l}'?"
                response = query_llm(prompt)
                if response.lower().startswith("yes"):
                    n_subcatgeory += 1
                    should_include = False
                    f.append(f"{neg_label} | {l} | subcategory \n")
                    break

                f.append(f"{neg_label} | {l} | \n")

        if should_include == True:
            filtered_neg_labels.append(neg_label)

    return filtered_neg_labels


# -- src/clip_ood.py ------------------------------------------------------------------------------
class CLIPood:
    """``CLIPood`` with its features given: ``pos_features``/``neg_features`` (unit-norm, float32), the
    label lists, and ``embed_labels(texts)`` in place of ``_embed_text_labels(texts, templates)``."""

    def __init__(self, pos_features, neg_features, pos_labels, neg_labels, embed_labels, device="cpu"):
        self.device = device
        self.pos_features = pos_features
        self.neg_features = neg_features
        self.pos_labels = pos_labels
        self.neg_labels = neg_labels
        self.embed_labels = embed_labels
        # Number of top positive/negative labels to use when generating multi-matching texts
        self.k_pos = min(5, len(pos_labels))
        self.k_neg = 5

        # NegLabel paramters
        self.ngroup = 100
        self.group_fuse_num = None

    def _grouping(self, pos, neg, num, ngroup=10, random_permute=False):
        group = ngroup
        drop = neg.shape[1] % ngroup
        if drop > 0:
            neg = neg[:, :-drop]
        if random_permute:
            SEED = 0
            torch.manual_seed(SEED)
            torch.cuda.manual_seed(SEED)
            idx = torch.randperm(neg.shape[1], device=self.device)
            neg = neg.T
            negs = neg[idx].T.reshape(pos.shape[0], group, -1).contiguous()
        else:
            negs = neg.reshape(pos.shape[0], group, -1).contiguous()
        scores = []
        for i in range(group):
            full_sim = torch.cat([pos, negs[:, i, :]], dim=-1)
            full_sim = full_sim.softmax(dim=-1)
            pos_score = full_sim[:, : pos.shape[1]].sum(dim=-1)
            scores.append(pos_score.unsqueeze(-1))
        scores = torch.cat(scores, dim=-1)
        if num is not None:
            scores = scores[:, 0 : num - 1]
        score = scores.mean(dim=-1)

        return score

    def _neg_label_score(self, pos_sim, neg_sim):
        full_sim = torch.cat([pos_sim, neg_sim], dim=-1)

        if self.ngroup > 1:
            score = self._grouping(pos_sim, neg_sim, num=self.group_fuse_num, ngroup=self.ngroup, random_permute=True)
        else:
            full_sim = full_sim.softmax(dim=-1)
            pos_score = full_sim[:, : pos_sim.shape[1]].sum(dim=1)
            score = pos_score

        return score

    def _multi_matching_score(self, pos_sim, neg_sim, image_features):
        vals, ind = torch.topk(pos_sim, self.k_pos)
        top_pos_labels = [self.pos_labels[ind[0, i]] for i in range(self.k_pos)]

        vals, ind = torch.topk(neg_sim, self.k_neg)
        top_neg_labels = [self.neg_labels[ind[0, i]] for i in range(self.k_neg)]

        multi_matching_texts = []
        neg_sims = []
        for p in top_pos_labels:
            for i, n in enumerate(top_neg_labels):
                w = p + " and " + n
                neg_sims.append(vals[0, i])
                multi_matching_texts.append(w)

        multi_matching_features = self.embed_labels(multi_matching_texts)
        neg_sims = torch.tensor(neg_sims).to(self.device)

        sim = 100.0 * image_features @ multi_matching_features.T
        ss = torch.exp(sim) / (torch.exp(sim) + torch.exp(neg_sims))
        score = torch.max(ss)

        return score

    # Final detection score (image_features given: one image, [1, d], unit-norm)
    def detection_score(self, image_features):
        with torch.no_grad():
            pos_sim = 100.0 * image_features @ self.pos_features.T
            neg_sim = 100.0 * image_features @ self.neg_features.T

            neg_label_score = self._neg_label_score(pos_sim, neg_sim)
            multi_matching_score = self._multi_matching_score(pos_sim, neg_sim, image_features)

        return neg_label_score.item() + 2 * multi_matching_score.item()
