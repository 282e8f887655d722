"""OODD's authors' code, re-implemented line by line: the reference of tests/scoring/test_oodd.py.

Source: https://github.com/zxk1212/OODD (HEAD edbb1a32e5fe81e443942156f0a9cafb0297d95b), by Yifeng Yang,
Lin Zhu, Zewen Sun, Hengyu Liu, Qinying Gu and Nanyang Ye (CVPR 2025). The repository carries no
licence at its root, so nothing is copied: each line below restates theirs, in their order, with their
names, from

- ``MCM/eval_ood_detection.py``: ``ScoreData``, ``kth_largest_per_column``, ``batched_matrix_multiply``
  and the OODD loop of ``main`` ("new add--OODD"), which scores the MCM features;
- ``NegLabel/tools/ood_test.py``: the same three and the same loop on NegLabel's score;
- ``MCM/utils/detection_util.py`` ``get_ood_scores_clip`` (the MCM score, ``args.score == 'MCM'``) and
  ``NegLabel/mmcls/models/ood/clip_ood.py`` ``ScalableClassifier.grouping`` (NegLabel's grouped score,
  from NegLabel, Apache-2.0) with ``NegLabel/mmcls/models/classifiers/multi_modal.py``'s normalisation
  and its logit scale 100.

Changed, and only this: features come as arrays (raw, of any norm: the normalisations are theirs); the
stream's permutation and batch size are arguments (theirs: ``np.random.seed(110)`` and 64); the
tokenizer/encoder calls, caches, prints and tqdm are gone; ``ScalableClassifier``'s ``randperm`` runs on
the CPU (theirs: ``cuda:{local_rank}``).
"""
# ruff: noqa
# fmt: off

from queue import PriorityQueue

import numpy as np
import torch
import torch.nn.functional as F


class ScoreData:
    def __init__(self, score, data):
        self.score = score
        self.data = data

    def __lt__(self, other):
        return float(self.score) > float(other.score)


def kth_largest_per_column(matrix, k):
    kth_values, _ = torch.kthvalue(matrix, matrix.size(0) - k + 1, dim=0)
    return kth_values.cpu().numpy()


def batched_matrix_multiply(ftrain, second_matrix, K, batch_size=9000):
    device = torch.device('cpu')
    ftrain_tensor = torch.tensor(ftrain, device=device)
    second_matrix_tensor = torch.tensor(second_matrix, device=device)
    p, _ = second_matrix_tensor.shape
    num_batches = p // batch_size + (p % batch_size > 0)
    res = []
    for i in range(num_batches):
        start = i * batch_size
        end = min(start + batch_size, p)
        second_batch_tensor = second_matrix_tensor[start:end,:]
        batch_result = ftrain_tensor @ second_batch_tensor.T
        score = kth_largest_per_column(batch_result, K)
        res.append(score)
    return np.concatenate(res, axis=0)


def mcm_scores_and_features(images, texts, T=1):
    """get_ood_scores_clip, args.score == 'MCM': returns (-max softmax, normalised features)."""
    image_features = torch.tensor(images)
    image_features /= image_features.norm(dim=-1, keepdim=True) + 1e-10
    text_features = torch.tensor(texts)
    text_features /= text_features.norm(dim=-1, keepdim=True)
    output = image_features @ text_features.T
    smax = F.softmax(output / T, dim=1).numpy()
    return -np.max(smax, axis=1), image_features.numpy()


def grouping(pos, neg, num, ngroup=10, random_permute=False, t=1):
    """ScalableClassifier.grouping (NegLabel/mmcls/models/ood/clip_ood.py); self.t is ``t``."""
    group = ngroup
    drop = neg.shape[1] % ngroup
    if drop > 0:
        neg = neg[:, :-drop]
    if random_permute:
        SEED=0
        torch.manual_seed(SEED)
        torch.cuda.manual_seed(SEED)
        idx = torch.randperm(neg.shape[1], device="cpu")
        neg = neg.T
        negs = neg[idx].T.reshape(pos.shape[0], group, -1).contiguous()
    else:
        negs = neg.reshape(pos.shape[0], group, -1).contiguous()
    scores = []
    for i in range(group):
        full_sim = torch.cat([pos, negs[:, i, :]], dim=-1) / t
        full_sim = full_sim.softmax(dim=-1)
        pos_score = full_sim[:, :pos.shape[1]].sum(dim=-1)
        scores.append(pos_score.unsqueeze(-1))
    scores = torch.cat(scores, dim=-1)
    if num is not None:
        scores = scores[:,0:num-1]
    score = scores.mean(dim=-1)
    return score


def neglabel_scores_and_features(images, pos_texts, neg_texts, ngroup):
    """MultiModalClassifier + ScalableClassifier.forward (t=1, grouped, random_permute=True)."""
    image_features = torch.tensor(images)
    image_features /= image_features.norm(dim=-1, keepdim=True) + 1e-10
    text_features_pos = torch.tensor(pos_texts)
    text_features_pos /= text_features_pos.norm(dim=-1, keepdim=True)
    text_features_neg = torch.tensor(neg_texts)
    text_features_neg /= text_features_neg.norm(dim=-1, keepdim=True)
    pos_sim = (100.0 * image_features @ text_features_pos.T)
    neg_sim = (100.0 * image_features @ text_features_neg.T)
    assert ngroup > 1  # their ngroup == 1 branch is not restated here
    score = grouping(pos_sim, neg_sim, num=None, ngroup=ngroup, random_permute=True)
    return score.numpy(), image_features.numpy()


def oodd_loop(id_feat, out_feat, id_score, out_score, idx, batch_size=64, queue_size=2048, K=5, negate=False):
    """The "Continue Learning" loop: scores in stream order. ``negate``: their MCM variant, whose cached
    score is -MCM (``batch_score = - all_output``); their NegLabel variant takes the score as it is."""
    queue = PriorityQueue()
    all_data = np.concatenate([id_feat, out_feat], axis=0)
    all_output = np.concatenate([id_score, out_score], axis=0)
    all_data = all_data[idx]
    all_output = all_output[idx]
    num_batches = all_data.shape[0] // batch_size + (all_data.shape[0] % batch_size > 0)
    scores_list = []
    for i in range(num_batches):
        start = i * batch_size
        end = min(start + batch_size, all_data.shape[0])
        batch_data = all_data[start:end]
        batch_score = - all_output[start:end] if negate else all_output[start:end]
        for j in range(batch_score.shape[0]):
            queue.put(ScoreData(batch_score[j], batch_data[j]))
            if queue.qsize() > queue_size:
                queue.get()
        data_list = []
        for item in list(queue.queue):
            data_list.append(item.data)
        new_food = np.array(data_list)
        ood_batch_score = batched_matrix_multiply(new_food, batch_data, K)
        batch_score = batch_score - ood_batch_score
        scores_list.append(batch_score)
    return np.concatenate(scores_list, axis=0)
