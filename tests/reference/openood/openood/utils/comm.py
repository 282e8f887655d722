"""Copied from OpenOOD (https://github.com/Jingkang50/OpenOOD, MIT License,
Copyright (c) 2021 Jingkang Yang; the licence text is ../../LICENSE),
``openood/utils/comm.py`` at commit 3c35632ee91b54b09d1f085d04f94744cece7d0b
(itself from Facebook's detectron2), trimmed to ``get_rank`` and ``is_main_process``, which
``BasePostprocessor.inference`` calls.
"""

import torch.distributed as dist


def get_rank() -> int:
    if not dist.is_available():
        return 0
    if not dist.is_initialized():
        return 0
    return dist.get_rank()


def is_main_process() -> bool:
    return get_rank() == 0
