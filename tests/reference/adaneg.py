"""AdaNeg's released code, trimmed to what computes a score: the ``postprocess`` of
``TTAPromptPostprocessor_noadagap`` ("the adopted one in NIPS submission").

Source: https://github.com/YBZh/OpenOOD-VLM, ``openood/postprocessors/ttaprompt_postprocessor.py``,
commit 804f3310d3045c24fdd896da6c508c919fb47f0c. Licence: MIT (the repository's LICENSE, below).

Trimmed: the config plumbing, ``setup`` (a no-op: ``setup_flag`` is False), the commented-out code and
the ``pdb`` hook are gone; ``net(data, return_feat=True)`` became the arguments ``image_features``,
``text_features`` (ID classes then negatives, unit rows) and ``logit_scale``; ``.cuda()`` calls are
gone. Every computing line is theirs, unchanged, in their order (so the memory is written before
the batch is scored, and ``torch.manual_seed(SEED)`` is called per batch as they call it; the
caller saves and restores torch's global RNG state around it).

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
# ruff: noqa
# fmt: off

import torch


class TTAPromptPostprocessor_noadagap:
    def __init__(self, class_num, memleng=10, lambdaval=0.1, thres=0.5, samada=False, gap=0.5, group_num=5,
                 random_permute=True, beta=5.5, in_score="combine"):
        self.class_num = class_num  # net.n_cls
        self.beta = int(beta)
        self.in_score = in_score  # sum | max
        self.reset = True  ## reset after each dataset.
        self.memory_size = memleng
        self.lambda_val = lambdaval
        self.thres = thres
        self.samada = samada
        self.gap = gap
        self.group_num = group_num
        self.random_permute = random_permute

    def reset_memory(self):
        self.reset = True

    @torch.no_grad()
    def postprocess(self, image_features, text_features, logit_scale):
        class_num = self.class_num
        if self.reset:
            ## reset feat memory to vanilla text features, for each ID/OOD pair.
            self.feat_memory = text_features.unsqueeze(1) ## C*1*D
            extented_empty_memory = torch.zeros_like(self.feat_memory).repeat(1, self.memory_size, 1)
            self.feat_memory = torch.cat((self.feat_memory, extented_empty_memory), dim=1)
            self.indice_memory = torch.ones(text_features.size(0))
            self.entropy_memory = torch.zeros(self.feat_memory.size(0), self.feat_memory.size(1)).to(text_features.device) ## C*(1+memory_size)
            self.reset=False
        output_vanilla = logit_scale * image_features @ text_features.t()  # batch * class, to decide assign image to which category and the corresponding confidence.
        prob_vanilla = torch.softmax(output_vanilla, dim=1)
        pos_logit = output_vanilla[:, :class_num] ## B*C
        neg_logit = output_vanilla[:, class_num:] ## B*total_neg_num
        drop = neg_logit.size(1) % self.group_num
        if drop > 0:
            neg_logit = neg_logit[:, :-drop]

        if self.random_permute:
            SEED=0
            torch.manual_seed(SEED)
            torch.cuda.manual_seed(SEED)
            idx = torch.randperm(neg_logit.shape[1]).to(output_vanilla.device)
            neg_logit = neg_logit.T ## total_neg_num*B
            neg_logit = neg_logit[idx].T.reshape(pos_logit.shape[0], self.group_num, -1).contiguous()
        else:
            neg_logit = neg_logit.reshape(pos_logit.shape[0], self.group_num, -1).contiguous()
        scores = []
        for i in range(self.group_num):
            full_sim = torch.cat([pos_logit, neg_logit[:, i, :]], dim=-1)
            full_sim = full_sim.softmax(dim=-1)
            pos_score = full_sim[:, :pos_logit.shape[1]].sum(dim=-1)
            scores.append(pos_score.unsqueeze(-1))
        scores = torch.cat(scores, dim=-1)
        conf_in_vanilla = scores.mean(dim=-1) ### the mean ID score of multiple groups.

        activate_indicator = conf_in_vanilla > (self.thres + self.gap * (1-self.thres)) ## only store high confident samples into feature memory.

        _, pred_all = torch.max(output_vanilla[:, :class_num], dim=1)
        prob_id = torch.softmax(output_vanilla[:, :class_num], dim=1)
        for i in range(activate_indicator.size(0)):
            if activate_indicator[i].item():
                predicted_cate = pred_all[i].item()
                predicted_prob = prob_id[i]
                current_instance_entropy = -(predicted_prob * (torch.log(predicted_prob + 1e-8))).sum()
                if self.indice_memory[predicted_cate] == self.memory_size:
                    if (current_instance_entropy < self.entropy_memory[predicted_cate]).sum() == 0:
                        pass  ## the entropy of current test image is very large.
                    else:
                        # replace the one with the maximum entropy!! to update. find the one with the maximum entropy.
                        _, indice = torch.sort(self.entropy_memory[predicted_cate])
                        to_replace_indice = indice[-1]  ## with max entropy, ascending.
                        self.feat_memory[predicted_cate][to_replace_indice] = image_features[i]
                        self.entropy_memory[predicted_cate][to_replace_indice] = current_instance_entropy
                else:
                    self.feat_memory[predicted_cate][self.indice_memory[predicted_cate].long()] = image_features[i]
                    self.entropy_memory[predicted_cate][self.indice_memory[predicted_cate].long()] = current_instance_entropy
                    self.indice_memory[predicted_cate] += 1
            else:
                pass

        activate_indicator = conf_in_vanilla < (self.thres - self.gap * self.thres) ## only store high confident samples into feature memory.
        _, pred_all = torch.max(output_vanilla[:, class_num:], dim=1)
        prob_ood = torch.softmax(output_vanilla[:, class_num:], dim=1)
        for i in range(activate_indicator.size(0)):
            if activate_indicator[i].item():
                predicted_cate = pred_all[i].item() + class_num
                predicted_prob = prob_ood[i]
                current_instance_entropy = -(predicted_prob * (torch.log(predicted_prob + 1e-8))).sum()
                if self.indice_memory[predicted_cate] == self.memory_size:
                    if (current_instance_entropy < self.entropy_memory[predicted_cate]).sum() == 0:
                        pass  ## the entropy of current test image is very large.
                    else:
                        # replace the one with the maximum entropy!! to update. find the one with the maximum entropy.
                        _, indice = torch.sort(self.entropy_memory[predicted_cate])
                        to_replace_indice = indice[-1]  ## with max entropy, ascending.
                        self.feat_memory[predicted_cate][to_replace_indice] = image_features[i]
                        self.entropy_memory[predicted_cate][to_replace_indice] = current_instance_entropy
                else:
                    self.feat_memory[predicted_cate][self.indice_memory[predicted_cate].long()] = image_features[i]
                    self.entropy_memory[predicted_cate][self.indice_memory[predicted_cate].long()] = current_instance_entropy
                    self.indice_memory[predicted_cate] += 1
            else:
                pass

        ###predicting final ood confident and ID prediction with self.feat_memory
        sim = self.feat_memory @ image_features.t()  ## 11k*30*256
        sim = torch.exp(-self.beta * (-sim + 1))  ##
        if self.samada:
            sa_text_features_list = []
            split_num = int(self.feat_memory.size(0) / 1000.0)
            for i in range(split_num):
                temp = sim[1000*i:1000*(i+1)].unsqueeze(0).transpose(0,-1) * self.feat_memory[1000*i:1000*(i+1)].unsqueeze(0) ## 256*11k*30*1 * 1*11K*30*512 -->256, 11k, 30, 512
                sa_text_features_split = temp.sum(2) ## 256*1k*512
                sa_text_features_split /= sa_text_features_split.norm(dim=-1, keepdim=True)  ## renorm.
                sa_text_features_list.append(sa_text_features_split)
            if self.feat_memory.size(0) % 1000.0 > 0:
                ### processing the remaining one.
                temp = sim[1000*split_num:].unsqueeze(0).transpose(0,-1) * self.feat_memory[1000*split_num:].unsqueeze(0) ## 256*11k*30*1 * 1*11K*30*512 -->256, 11k, 30, 512
                sa_text_features_split = temp.sum(2) ## 256*1k*512
                sa_text_features_split /= sa_text_features_split.norm(dim=-1, keepdim=True)  ## renorm.
                sa_text_features_list.append(sa_text_features_split)
            sa_text_features = torch.cat(sa_text_features_list, dim=1)
        else:
            sa_text_features = self.feat_memory.mean(1)
            sa_text_features /= sa_text_features.norm(dim=-1, keepdim=True)  ## renorm.

        output = logit_scale * (image_features.unsqueeze(1) * sa_text_features).sum(-1) ## 256*11k
        prob_tta = torch.softmax(output, dim=1)
        prob_all = prob_vanilla + prob_tta * self.lambda_val
        _, pred_in = torch.max(prob_all[:, :class_num], dim=1)

        pos_logit = output[:, :class_num] ## B*C
        neg_logit = output[:, class_num:] ## B*total_neg_num
        drop = neg_logit.size(1) % self.group_num
        if drop > 0:
            neg_logit = neg_logit[:, :-drop]

        if self.random_permute:
            SEED=0
            torch.manual_seed(SEED)
            torch.cuda.manual_seed(SEED)
            idx = torch.randperm(neg_logit.shape[1]).to(output.device)
            neg_logit = neg_logit.T ## total_neg_num*B
            neg_logit = neg_logit[idx].T.reshape(pos_logit.shape[0], self.group_num, -1).contiguous()
        else:
            neg_logit = neg_logit.reshape(pos_logit.shape[0], self.group_num, -1).contiguous()
        scores = []
        for i in range(self.group_num):
            full_sim = torch.cat([pos_logit, neg_logit[:, i, :]], dim=-1)
            full_sim = full_sim.softmax(dim=-1)
            pos_score = full_sim[:, :pos_logit.shape[1]].sum(dim=-1)
            scores.append(pos_score.unsqueeze(-1))
        scores = torch.cat(scores, dim=-1)
        conf_in = scores.mean(dim=-1)

        if self.in_score == 'adaonly':
            conf = conf_in  ## = 1-conf_out
        elif self.in_score == 'vanillaonly':
            conf = conf_in_vanilla
        elif self.in_score == 'combine':
            conf = conf_in + conf_in_vanilla * self.lambda_val
        elif self.in_score == 'multiply':
            conf = conf_in * conf_in_vanilla
        else:
            raise NotImplementedError

        return pred_in, conf
