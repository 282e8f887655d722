# ruff: noqa
"""TANL's authors' code, trimmed to what computes a score: the reference of tests/scoring/test_tanl.py.

Copied from YBZh/OpenOOD-VLM, openood/postprocessors/activated_neg_postprocessor.py (repository
HEAD 804f3310d3045c24fdd896da6c508c919fb47f0c; last change to the file 2a2b73cec8657afccb52c6e3e33a399577af5cb1),
MIT licence (text below). Kept line by line: compute_os_variance_tensor, find_best_threshold,
update_queue, activation_aware_score (its use_weight branch dropped: never reached), and of
ActivatedNegPostprocessor the arguments postprocess reads, the reset block and postprocess.

Changed, and only this:
- ``net`` is :class:`Net`, holding the tensors their network (openood/networks/clip_fixed_ood_prompt.py,
  FixedCLIP_NegOODPrompt) holds, and ``data`` is the batch's unit-norm image features (``net(data,
  return_feat=True)`` returns them as they are);
- the ``.float()`` casts are removed so that the comparison runs in float64 (on their float16/float32
  CLIP features they cast to float32);
- prints, pdb, commented-out code, the dead ``pred_in``/``cached_*_features``/``used_cluster_num`` paths
  (cluster_num = 0) and ``in_score == 'div_count'`` (it reads an undefined name) are removed;
- ``self.last_thres`` and ``self.last_selected`` record each batch's threshold and final negatives.

MIT License

Copyright (c) 2021 Jingkang Yang

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

from types import SimpleNamespace

import torch


def compute_os_variance_tensor(os_tensor, th):
    device = os_tensor.device
    mask = (os_tensor >= th).float()
    n_pixels = os_tensor.numel()
    n_pixels1 = torch.sum(mask)
    weight1 = n_pixels1 / n_pixels
    weight0 = 1 - weight1
    if weight1 == 0 or weight0 == 0:
        return torch.tensor(float("inf"), device=device)
    class1 = os_tensor[mask.bool()]
    class0 = os_tensor[~mask.bool()]
    var0 = torch.var(class0, unbiased=False) if class0.numel() > 0 else torch.tensor(0.0, device=device)
    var1 = torch.var(class1, unbiased=False) if class1.numel() > 0 else torch.tensor(0.0, device=device)
    return weight0 * var0 + weight1 * var1


def find_best_threshold(os_training_queue):
    threshold_range = torch.arange(0, 1, 0.01, device=os_training_queue.device)
    criterias = torch.stack([compute_os_variance_tensor(os_training_queue, th) for th in threshold_range])
    min_val = torch.min(criterias)
    mask = criterias == min_val
    candidate_indices = torch.where(mask)[0]
    if len(candidate_indices) == 0:
        return threshold_range[torch.argmin(criterias)].item()
    mid_index = len(candidate_indices) // 2
    best_threshold = threshold_range[candidate_indices[mid_index]]
    return best_threshold.item()


def update_queue(to_add, queue, max_len=1000, init=False):
    if init:
        queue = queue
    else:
        queue = torch.cat((queue, to_add), dim=0)
    if queue.size(0) > max_len:
        queue = queue[-max_len:, :]
    return queue


def activation_aware_score(output, id_num, ood_num, step, weight_by_activation_score=False):
    if step != 0:
        softmax_sums = []
        step = int(step)
        for i in range(id_num, id_num + ood_num, step):
            softmax_output = output[:, : i + step].softmax(dim=-1)
            sum_score = softmax_output[:, :id_num].sum(dim=-1)
            softmax_sums.append(sum_score)
        softmax_sums = torch.stack(softmax_sums, dim=-1)
        conf_in = softmax_sums.mean(dim=-1)
    else:
        full_sim = output.softmax(dim=-1)
        conf_in = full_sim[:, :id_num].sum(dim=-1)
    return conf_in


class Net:
    """The tensors of their FixedCLIP_NegOODPrompt: ``text_features`` (d, K + M): ID prompts and the
    NegLabel-selected negatives; ``text_features_all`` (d, K + N): ID prompts and the whole corpus
    (selected first); ``noise_image_features`` (15, d); ``logit_scale`` (CLIP's exp(logit_scale))."""

    def __init__(self, n_cls, text_features, text_features_all, noise_image_features, logit_scale=100.0):
        self.n_cls = n_cls
        self.text_features = text_features
        self.text_features_all = text_features_all
        self.noise_image_features = noise_image_features
        self.logit_scale = logit_scale

    def eval(self):
        return self

    def __call__(self, data, return_feat=True):
        return data, self.text_features.transpose(0, 1), self.logit_scale


class ActivatedNegPostprocessor:
    def __init__(self, args):
        self.args = SimpleNamespace(**args)
        self.beta = int(self.args.beta)
        self.in_score = self.args.in_score  # sum | max
        self.alpha = self.args.alpha
        self.gamma = self.args.gamma
        self.reset = True
        self.thres = self.args.thres
        self.gap = self.args.gap
        self.cossim = self.args.cossim
        self.queue_len = self.args.memleng
        self.score_queue_len = 20000
        self.mute_mutual_enhancement = False

    def reset_memory(self):
        self.reset = True

    @torch.no_grad()
    def postprocess(self, net, data):
        net.eval()
        class_num = net.n_cls
        if self.reset:  ## For each ID-OOD dataset pair.
            self.class_count = torch.ones(net.n_cls) * self.beta
            self.online_text_features = net.text_features.clone()  ## 512* [ID class + neg class]
            self.online_text_features_all = net.text_features_all.clone()

            self.score_from_pos = (
                net.logit_scale * net.text_features_all[:, :class_num].t() @ net.text_features_all
            )  ## id num * all num
            if self.cossim:
                self.score_from_pos = self.score_from_pos[torch.randperm(self.score_from_pos.size(0))]
            else:
                self.score_from_pos = torch.softmax(self.score_from_pos, dim=1)
                self.score_from_pos = self.score_from_pos[torch.randperm(self.score_from_pos.size(0))]
            self.score_from_pos = self.score_from_pos[:, class_num:]
            self.score_from_pos = update_queue(self.score_from_pos, self.score_from_pos, self.queue_len, init=True)

            self.score_from_neg = net.logit_scale * net.noise_image_features @ net.text_features_all
            if self.cossim:
                self.score_from_neg = self.score_from_neg
            else:
                self.score_from_neg = torch.softmax(self.score_from_neg, dim=1)
            self.score_from_neg = self.score_from_neg[torch.randperm(self.score_from_neg.size(0))]  ##

            self.score_from_neg = self.score_from_neg[:, class_num:]
            self.score_from_neg = update_queue(self.score_from_neg, self.score_from_neg, self.queue_len, init=True)
            combined_score = self.score_from_neg.mean(0) - self.score_from_pos.mean(0)
            selected_text_features = torch.cat(
                [
                    net.text_features[:, :class_num],
                    self.online_text_features_all[:, class_num:]
                    .t()[combined_score.sort(descending=True)[1][: self.beta]]
                    .t(),
                ],
                dim=-1,
            )
            if self.mute_mutual_enhancement:
                output = net.logit_scale * net.text_features_all[:, :class_num].t() @ self.online_text_features
            else:
                output = net.logit_scale * net.text_features_all[:, :class_num].t() @ selected_text_features
            conf_in_id = activation_aware_score(output, class_num, self.beta, step=self.gamma)

            if self.mute_mutual_enhancement:
                output = net.logit_scale * net.noise_image_features @ self.online_text_features
            else:
                output = net.logit_scale * net.noise_image_features @ selected_text_features
            conf_in_ood = activation_aware_score(output, class_num, self.beta, step=self.gamma)

            self.scoretensor = torch.cat((conf_in_id, conf_in_ood), dim=0)
            self.reset = False
        image_features, text_features, logit_scale = net(data, return_feat=True)

        output_all = logit_scale * image_features @ self.online_text_features_all  # batch * dim   @ dim * num

        if self.cossim:
            actscore = output_all
        else:
            actscore = torch.softmax(output_all, dim=1)  # batch * [id+ood class num]

        combined_score = self.score_from_neg.mean(0) - self.score_from_pos.mean(0)
        selected_text_features = torch.cat(
            [
                net.text_features[:, :class_num],
                self.online_text_features_all[:, class_num:]
                .t()[combined_score.sort(descending=True)[1][: self.beta]]
                .t(),
            ],
            dim=-1,
        )
        if self.mute_mutual_enhancement:
            output = logit_scale * image_features @ self.online_text_features
        else:
            output = logit_scale * image_features @ selected_text_features
        conf_in_domain = activation_aware_score(output, class_num, self.beta, step=self.gamma)

        self.scoretensor = torch.cat((self.scoretensor, conf_in_domain), dim=0)
        if self.scoretensor.size(0) > self.score_queue_len:
            self.scoretensor = self.scoretensor[-self.score_queue_len :]

        best_threshold = find_best_threshold(self.scoretensor)
        self.thres = best_threshold
        self.last_thres = best_threshold

        activate_indicator_id = conf_in_domain > (self.thres + self.gap * (1 - self.thres))
        activate_indicator_ood = conf_in_domain < (self.thres - self.gap * self.thres)

        if torch.any(activate_indicator_id):
            score_pos_in_batch = actscore[activate_indicator_id][:, class_num:]
            ins_adaptive_pos_score = self.alpha * self.score_from_pos.mean(0) + (
                1 - self.alpha
            ) * score_pos_in_batch.mean(0)
        else:
            ins_adaptive_pos_score = self.score_from_pos.mean(0)

        if torch.any(activate_indicator_ood):
            score_neg_in_batch = actscore[activate_indicator_ood][:, class_num:]
            ins_adaptive_neg_score = self.alpha * self.score_from_neg.mean(0) + (
                1 - self.alpha
            ) * score_neg_in_batch.mean(0)
        else:
            ins_adaptive_neg_score = self.score_from_neg.mean(0)

        combined_score = ins_adaptive_neg_score - ins_adaptive_pos_score

        self.last_selected = combined_score.sort(descending=True)[1][: self.beta]
        selected_text_features = torch.cat(
            [
                net.text_features[:, :class_num],
                self.online_text_features_all[:, class_num:]
                .t()[combined_score.sort(descending=True)[1][: self.beta]]
                .t(),
            ],
            dim=-1,
        )  ## 512*2000

        output = logit_scale * image_features @ selected_text_features  ## batch * [id+ood class num]

        conf_in = activation_aware_score(output, class_num, self.beta, step=self.gamma)
        if torch.any(activate_indicator_id):
            self.score_from_pos = update_queue(
                actscore[activate_indicator_id][:, class_num:], self.score_from_pos, self.queue_len, init=False
            )
        if torch.any(activate_indicator_ood):
            self.score_from_neg = update_queue(
                actscore[activate_indicator_ood][:, class_num:], self.score_from_neg, self.queue_len, init=False
            )

        if self.in_score == "sum":
            conf_in = conf_in  ## = 1-conf_out
        else:
            raise NotImplementedError

        return None, conf_in


def noise_images():
    """The noise images of FixedCLIP_NegOODPrompt.__init__ (openood/networks/clip_fixed_ood_prompt.py,
    same repository and licence), ``.cuda()`` removed; drawn from torch's global generator."""
    gaussian_noise_image = torch.randn((3, 3, 224, 224), dtype=torch.float)  ## Gaussian Noise
    gaussian_noise_image = (gaussian_noise_image - gaussian_noise_image.min()) / (
        gaussian_noise_image.max() - gaussian_noise_image.min()
    )
    uniform_noise_image = torch.rand((3, 3, 224, 224), dtype=torch.float)
    poisson_noise_image = torch.poisson(5.0 * torch.ones((3, 3, 224, 224)))
    poisson_noise_image = (poisson_noise_image - poisson_noise_image.min()) / (
        poisson_noise_image.max() - poisson_noise_image.min()
    )
    gamma_noise = torch.distributions.Gamma(2, 1).sample((3, 3, 224, 224))
    gamma_noise = (gamma_noise - gamma_noise.min()) / (gamma_noise.max() - gamma_noise.min())
    salt_and_pepper_noise = torch.rand((3, 3, 224, 224), dtype=torch.float)
    salt_and_pepper_noise[salt_and_pepper_noise >= 0.5] = 1.0
    salt_and_pepper_noise[salt_and_pepper_noise < 0.5] = 0
    all_noise = torch.cat(
        (gaussian_noise_image, uniform_noise_image, poisson_noise_image, gamma_noise, salt_and_pepper_noise), dim=0
    )  ## 15*3*224*224
    return all_noise
