"""OpenOOD's postprocessor interface, copied for the tests (OpenOOD is not on PyPI).

Copied from OpenOOD (https://github.com/Jingkang50/OpenOOD, MIT License, Copyright (c) 2021 Jingkang Yang),
``openood/postprocessors/base_postprocessor.py`` at commit dccb5895e4387d59da4598ed97d9ce3605fd9832 and
``openood/postprocessors/ebo_postprocessor.py`` at commit e91ea0a0417e06d7a54a4a13b0a087586167b7dd
(an example of how a postprocessor reads its arguments and sweep), unchanged but for this docstring and
the formatting of imports. ``inference`` calls ``.cuda()`` as OpenOOD does.
"""

from typing import Any

import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class BasePostprocessor:
    def __init__(self, config):
        self.config = config

    def setup(self, net: nn.Module, id_loader_dict, ood_loader_dict):
        pass

    @torch.no_grad()
    def postprocess(self, net: nn.Module, data: Any):
        output = net(data)
        score = torch.softmax(output, dim=1)
        conf, pred = torch.max(score, dim=1)
        return pred, conf

    def inference(self, net: nn.Module, data_loader: DataLoader):
        pred_list, conf_list, label_list = [], [], []
        for batch in data_loader:
            data = batch["data"].cuda()
            label = batch["label"].cuda()
            pred, conf = self.postprocess(net, data)

            pred_list.append(pred.cpu())
            conf_list.append(conf.cpu())
            label_list.append(label.cpu())

        # convert values into numpy array
        pred_list = torch.cat(pred_list).numpy().astype(int)
        conf_list = torch.cat(conf_list).numpy()
        label_list = torch.cat(label_list).numpy().astype(int)

        return pred_list, conf_list, label_list


class EBOPostprocessor(BasePostprocessor):
    def __init__(self, config):
        super().__init__(config)
        self.args = self.config.postprocessor.postprocessor_args
        self.temperature = self.args.temperature
        self.args_dict = self.config.postprocessor.postprocessor_sweep

    @torch.no_grad()
    def postprocess(self, net: nn.Module, data: Any):
        output = net(data)
        score = torch.softmax(output, dim=1)
        _, pred = torch.max(score, dim=1)
        conf = self.temperature * torch.logsumexp(output / self.temperature, dim=1)
        return pred, conf

    def set_hyperparam(self, hyperparam: list):
        self.temperature = hyperparam[0]

    def get_hyperparam(self):
        return self.temperature
