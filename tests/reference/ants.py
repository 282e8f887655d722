"""ANTS's authors' code, transcribed: the reference of tests/scoring/test_ants.py.

Source: https://github.com/ZhuWenjie98/ANTS (HEAD cb26642), by Wenjie Zhu, Yabin Zhang, Xin Jin, Wenjun
Zeng and Lei Zhang (CVPR 2026), the same code as OpenOOD-VLM's ``openood/postprocessors/ants_postprocessor.py``.
Licence: MIT, as follows.

    MIT License

    Copyright (c) 2021 Jingkang Yang

    Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
    associated documentation files (the "Software"), to deal in the Software without restriction,
    including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense,
    and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so,
    subject to the following conditions:

    The above copyright notice and this permission notice shall be included in all copies or substantial
    portions of the Software.

    THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT
    LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN
    NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY,
    WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE
    SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

Copied from ``openood/postprocessors/ants/{scoring,ens,labels,vsnl,state}.py`` and the postprocess loop
of ``ants_postprocessor.py``. Changed, and only this: the network is arrays (``net(data,
return_feat=True)`` is the normalised image and text features and the logit scale 100, as their CLIP
net gives them); ``encode_text_features`` calls an ``encoder(text) -> raw feature`` (the CLIP call),
normalising as theirs does; the MLLM backend is an object with their ``describe_images`` and
``suggest_similar_classes`` (fed recorded answers); image paths are the images' stream positions
(``Image.open`` gone); prints, the label files, APS hooks and argument validation are gone.
"""
# ruff: noqa
# fmt: off

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch


# -- labels.py
def normalize_labels(labels):
    normalized = []
    seen = set()
    for label in labels:
        if label is None:
            continue
        cleaned = ' '.join(str(label).strip().rstrip('.').split())
        if not cleaned:
            continue
        key = cleaned.casefold()
        if key not in seen:
            normalized.append(cleaned)
            seen.add(key)
    return normalized


# -- scoring.py
def positive_probability_score(logits, num_id_classes):
    return logits.softmax(dim=-1)[:, :num_id_classes].sum(dim=-1)


def find_activation_threshold(scores):
    values = scores.detach().float().flatten()
    best_threshold = float(values.median())
    best_variance = float('inf')
    for threshold in torch.arange(0.0, 1.0, 0.01, device=values.device):
        high = values >= threshold
        if not high.any() or high.all():
            continue
        low_values = values[~high]
        high_values = values[high]
        weighted_variance = (
            low_values.numel() * low_values.var(unbiased=False)
            + high_values.numel() * high_values.var(unbiased=False)
        ) / values.numel()
        variance = float(weighted_variance)
        if variance < best_variance:
            best_variance = variance
            best_threshold = float(threshold)
    return best_threshold


def cumulative_negative_score(logits, num_id_classes, step):
    negative_count = logits.size(1) - num_id_classes
    shifted_logits = logits.float() - logits.float().amax(dim=1, keepdim=True)
    exponentials = shifted_logits.exp()
    id_sum = exponentials[:, :num_id_classes].sum(dim=1, keepdim=True)
    negative_cumsum = exponentials[:, num_id_classes:].cumsum(dim=1)
    endpoints = torch.arange(step - 1, negative_count, step, device=logits.device)
    if endpoints.numel() == 0 or int(endpoints[-1]) != negative_count - 1:
        endpoints = torch.cat((
            endpoints,
            torch.tensor([negative_count - 1], device=logits.device, dtype=endpoints.dtype),
        ))
    denominators = id_sum + negative_cumsum[:, endpoints]
    return (id_sum / denominators).mean(dim=1)


def activation_selected_score(logits, num_id_classes, reference_confidence, threshold, gap, max_negatives, step):
    high_cutoff = threshold + gap * (1.0 - threshold)
    low_cutoff = threshold - gap * threshold
    high_mask = reference_confidence > high_cutoff
    low_mask = reference_confidence < low_cutoff
    high_count = int(high_mask.sum())
    low_count = int(low_mask.sum())
    if high_count == 0 or low_count == 0:
        return None, 0, low_count, high_count
    probabilities = logits.float().softmax(dim=1)
    negative_probabilities = probabilities[:, num_id_classes:]
    relevance = (
        negative_probabilities[low_mask].mean(dim=0)
        - negative_probabilities[high_mask].mean(dim=0)
    )
    selected_count = min(max_negatives, relevance.numel())
    selected_indices = relevance.topk(selected_count).indices
    selected_logits = torch.cat((
        logits[:, :num_id_classes],
        logits[:, num_id_classes:][:, selected_indices],
    ), dim=1)
    score = cumulative_negative_score(selected_logits, num_id_classes, step)
    return score, selected_count, low_count, high_count


def grouped_negative_score(logits, num_id_classes, group_size, random_permute=False, seed=0):
    positive_logits = logits[:, :num_id_classes]
    negative_logits = logits[:, num_id_classes:]
    negative_count = negative_logits.size(1)
    group_count = max(1, negative_count // group_size)
    remainder = negative_count % group_count
    if remainder:
        negative_logits = negative_logits[:, :-remainder]
    if random_permute:
        generator = torch.Generator(device='cpu')
        generator.manual_seed(seed)
        indices = torch.randperm(negative_logits.size(1), generator=generator).to(negative_logits.device)
        negative_logits = negative_logits[:, indices]
    grouped_logits = negative_logits.reshape(positive_logits.size(0), group_count, -1)
    positive_logits = positive_logits.unsqueeze(1).expand(-1, group_count, -1)
    full_logits = torch.cat((positive_logits, grouped_logits), dim=-1)
    probabilities = full_logits.softmax(dim=-1)
    return probabilities[:, :, :num_id_classes].sum(dim=-1).mean(dim=-1)


def score_with_negative_features(image_features, id_text_features, negative_features, logit_scale, group_size,
                                 random_permute):
    if negative_features is None or negative_features.numel() == 0:
        return None
    text_features = torch.cat((id_text_features, negative_features), dim=0)
    logits = logit_scale * image_features @ text_features.t()
    if negative_features.size(0) <= group_size:
        return positive_probability_score(logits, id_text_features.size(0))
    return grouped_negative_score(logits, id_text_features.size(0), group_size, random_permute)


# -- ens.py
def update_adaptive_threshold(confidences, percentile):
    values = np.asarray([float(value.detach().cpu()) for value in confidences], dtype=np.float32)
    bins = np.arange(0.0, 1.1, 0.1)
    counts, _ = np.histogram(values, bins)
    upper_interval = float(bins[np.argmax(np.abs(np.diff(counts))) + 1])
    low_confidences = values[values < upper_interval]
    if low_confidences.size == 0:
        low_confidences = values
    threshold = float(np.percentile(low_confidences, percentile * 100.0))
    return threshold, upper_interval


def append_feature_queue(queue, new_features, max_size):
    if new_features is None or new_features.numel() == 0:
        return queue
    combined = new_features if queue is None else torch.cat((new_features, queue), dim=0)
    return combined[-max_size:]


# -- vsnl.py
def most_frequent_predictions(predictions, limit=40):
    return [index for index, _ in Counter(predictions).most_common(limit)]


def update_similar_label_cache(cache, active_predictions, generated_predictions, generated_labels):
    for prediction, labels in zip(generated_predictions, generated_labels):
        cache[prediction] = normalize_labels(labels)
    active = set(active_predictions)
    for prediction in list(cache):
        if prediction not in active:
            del cache[prediction]
    return normalize_labels(label for labels in cache.values() for label in labels)


# -- text_features.py (the CLIP call is ``encoder(text)``: a raw feature)
def encode_text_features(encoder, labels, prompt_template=None):
    label_list = list(labels)
    if not label_list:
        return None
    features = []
    for label in label_list:
        text = prompt_template.format(label) if prompt_template else label
        embeddings = torch.as_tensor(encoder(text)).double().reshape(1, -1)
        embeddings = embeddings / embeddings.norm(dim=-1, keepdim=True)
        feature = embeddings.mean(dim=0)
        features.append(feature / feature.norm())
    return torch.stack(features, dim=1)


# -- state.py
@dataclass
class ANTSRuntimeState:
    batch_index: int = 0
    ensemble_index: int = 0
    adaptive_threshold: float = 0.8
    upper_interval: Optional[float] = None
    all_confidences: List[torch.Tensor] = field(default_factory=list)
    activation_confidences: List[torch.Tensor] = field(default_factory=list)
    far_confidences: List[torch.Tensor] = field(default_factory=list)
    near_confidences: List[torch.Tensor] = field(default_factory=list)
    candidate_paths: List[str] = field(default_factory=list)
    candidate_predictions: List[int] = field(default_factory=list)
    predictions: List[int] = field(default_factory=list)
    far_negative_features: Optional[torch.Tensor] = None
    near_negative_features: Optional[torch.Tensor] = None
    near_negative_labels: List[str] = field(default_factory=list)
    similar_label_cache: Dict[int, List[str]] = field(default_factory=dict)


# -- ants_postprocessor.py
class ANTSPostprocessor:
    FAR_QUEUE_MAX_SIZE = 10_000
    MIN_ENSEMBLE_CANDIDATES = 200
    SIMILAR_CLASS_LIMIT = 40
    NEAR_BALANCE_REPEATS = 10

    def __init__(self, backend, encoder, class_names, *, eta=0.5, group_num=100, random_permute=True,
                 in_score='far_only', neglabel_init_flag=False, activation_aware_ens=False,
                 activation_negative_count=1000, activation_step=2, activation_gap=0.5,
                 activation_score_queue_size=20_000, ens_stop_step=20, near_label_start_batch=10,
                 near_label_interval=40):
        self.eta, self.in_score, self.random_permute = eta, in_score, random_permute
        self.neglabel_init_flag, self.activation_aware_ens = neglabel_init_flag, activation_aware_ens
        self.activation_negative_count, self.activation_step = activation_negative_count, activation_step
        self.activation_gap, self.activation_score_queue_size = activation_gap, activation_score_queue_size
        self.ens_stop_step = ens_stop_step
        self.similar_label_start_batch, self.similar_label_interval = near_label_start_batch, near_label_interval
        self.group_num = group_num
        self.group_len = max(1, self.FAR_QUEUE_MAX_SIZE // group_num)
        self.mllm_backend, self.encoder, self.imagenet_classes = backend, encoder, class_names
        self.state = ANTSRuntimeState()

    def setup(self, text_features, n_cls):
        """``text_features``: (K + M, d) raw, normalised as their net's ``text_features``."""
        self.class_num = n_cls
        text_features = torch.as_tensor(text_features).double()
        self.text_features = text_features / text_features.norm(dim=-1, keepdim=True)
        text_features = self.text_features
        initial = text_features[self.class_num:].detach() if self.neglabel_init_flag else None
        self.state = ANTSRuntimeState()
        self.state.far_negative_features = initial

    def grouping_score(self, output):
        return grouped_negative_score(output, self.class_num, self.group_len, self.random_permute)

    @torch.no_grad()
    def postprocess(self, image_features, path):
        self.state.batch_index += 1
        text_features, logit_scale = self.text_features, 100.0
        id_text_features = text_features[:self.class_num]
        logits = logit_scale * image_features @ text_features.t()
        id_probabilities = logits[:, :self.class_num].softmax(dim=1)
        predictions = id_probabilities.argmax(dim=1)
        base_confidence = self.grouping_score(logits)

        self.state.predictions.extend(predictions.detach().cpu().tolist())
        self.state.all_confidences.extend(base_confidence.detach().cpu().unbind())
        self._collect_ensemble_candidates(path, predictions, base_confidence)
        self._maybe_update_far_labels()
        self._maybe_update_near_labels()

        far_confidence = score_with_negative_features(
            image_features, id_text_features, self.state.far_negative_features, logit_scale, self.group_len,
            self.random_permute)
        if self.activation_aware_ens and far_confidence is not None:
            far_confidence = self._activation_aware_far_score(
                image_features, id_text_features, logit_scale, far_confidence)
        far_balanced = score_with_negative_features(
            image_features, id_text_features, self.state.far_negative_features, logit_scale, self.class_num,
            self.random_permute)
        near_features = self.state.near_negative_features
        near_confidence = score_with_negative_features(
            image_features, id_text_features, near_features, logit_scale, self.group_len, self.random_permute)
        repeated_near_features = (
            near_features.repeat(self.NEAR_BALANCE_REPEATS, 1) if near_features is not None else None)
        near_balanced = score_with_negative_features(
            image_features, id_text_features, repeated_near_features, logit_scale, self.class_num,
            self.random_permute)
        confidence = self._fuse_confidences(
            base_confidence, far_confidence, far_balanced, near_confidence, near_balanced)
        return predictions, confidence

    def _activation_aware_far_score(self, image_features, id_text_features, logit_scale, reference_confidence):
        state = self.state
        state.activation_confidences.extend(reference_confidence.detach().cpu().unbind())
        if len(state.activation_confidences) > self.activation_score_queue_size:
            del state.activation_confidences[:-self.activation_score_queue_size]
        threshold = find_activation_threshold(torch.stack(state.activation_confidences))
        negative_features = state.far_negative_features
        text_features = torch.cat((id_text_features, negative_features), dim=0)
        logits = logit_scale * image_features @ text_features.t()
        score, selected_count, low_count, high_count = activation_selected_score(
            logits, self.class_num, reference_confidence, threshold, self.activation_gap,
            self.activation_negative_count, self.activation_step)
        if score is None:
            return reference_confidence
        return score

    def _collect_ensemble_candidates(self, paths, predictions, confidences):
        if self.state.ensemble_index >= self.ens_stop_step:
            return
        if paths is None:
            return
        for sample_path, prediction, confidence in zip(paths, predictions, confidences):
            if float(confidence) < self.state.adaptive_threshold:
                self.state.candidate_paths.append(str(sample_path))
                self.state.candidate_predictions.append(int(prediction))

    def _maybe_update_far_labels(self):
        state = self.state
        if state.ensemble_index >= self.ens_stop_step:
            return
        if len(state.candidate_paths) <= self.MIN_ENSEMBLE_CANDIDATES:
            return
        threshold, upper_interval = update_adaptive_threshold(state.all_confidences, self.eta)
        state.adaptive_threshold = threshold
        state.upper_interval = upper_interval
        labels = self._describe_candidate_images()
        state.candidate_paths.clear()
        state.candidate_predictions.clear()
        text_features = encode_text_features(self.encoder, labels)
        queued_features = text_features.t() if text_features is not None else None
        state.far_negative_features = append_feature_queue(
            state.far_negative_features, queued_features, self.FAR_QUEUE_MAX_SIZE)
        state.ensemble_index += 1

    def _describe_candidate_images(self):
        images = list(self.state.candidate_paths)  # their Image.open(path): the path is the position here
        id_classes = [self.imagenet_classes[prediction] for prediction in self.state.candidate_predictions]
        labels = self.mllm_backend.describe_images(images, id_classes)
        return normalize_labels(labels)

    def _maybe_update_near_labels(self):
        batch_index = self.state.batch_index
        is_update_batch = (
            batch_index >= self.similar_label_start_batch
            and (batch_index - self.similar_label_start_batch) % self.similar_label_interval == 0
        )
        if not is_update_batch:
            return
        frequent_predictions = most_frequent_predictions(self.state.predictions, self.SIMILAR_CLASS_LIMIT)
        new_predictions = [p for p in frequent_predictions if p not in self.state.similar_label_cache]
        class_names = [self.imagenet_classes[prediction] for prediction in new_predictions]
        generated_labels = self.mllm_backend.suggest_similar_classes(class_names)
        self.state.near_negative_labels = update_similar_label_cache(
            self.state.similar_label_cache, frequent_predictions, new_predictions, generated_labels)
        features = encode_text_features(self.encoder, self.state.near_negative_labels, 'The nice {}.')
        self.state.near_negative_features = features.t() if features is not None else None

    def _fuse_confidences(self, base, far, far_balanced, near, near_balanced):
        far = base if far is None else far
        far_balanced = base if far_balanced is None else far_balanced
        near = base if near is None else near
        near_balanced = base if near_balanced is None else near_balanced
        if self.in_score == 'far_only':
            return far
        if self.in_score == 'near_only':
            return near
        self.state.far_confidences.extend(far_balanced.detach().cpu().unbind())
        self.state.near_confidences.extend(near_balanced.detach().cpu().unbind())
        far_mean = torch.stack(self.state.far_confidences).mean()
        near_mean = torch.stack(self.state.near_confidences).mean()
        far_uncertainty = 1.0 - far_mean
        near_uncertainty = 1.0 - near_mean
        denominator = far_uncertainty + near_uncertainty
        if float(denominator.abs()) < torch.finfo(denominator.dtype).eps:
            weight = 0.5
        else:
            weight = float(far_uncertainty / denominator)
        return weight * far + (1.0 - weight) * near


def run(post, image_features, perm, batch):
    """Their inference loop over one stream: raw image features (n, d) normalised as their net does,
    fed in ``perm`` order in batches of ``batch``, each with its positions as paths; scores in row order."""
    x = torch.as_tensor(image_features).double()
    x = x / x.norm(dim=-1, keepdim=True)
    out = np.empty(len(perm))
    for start in range(0, len(perm), batch):
        rows = perm[start:start + batch]
        _, conf = post.postprocess(x[rows], [str(p) for p in range(start, start + len(rows))])
        out[rows] = conf.double().numpy()
    return out
