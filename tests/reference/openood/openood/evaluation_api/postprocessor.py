"""Copied from OpenOOD (https://github.com/Jingkang50/OpenOOD, MIT License,
Copyright (c) 2021 Jingkang Yang; the licence text is ../../LICENSE),
``openood/evaluation_api/postprocessor.py`` at commit 3c35632ee91b54b09d1f085d04f94744cece7d0b.

Trimmed to ``get_postprocessor`` and a ``postprocessors`` dict holding ``msp`` (OpenOOD's other
postprocessors are not copied); unchanged otherwise but for this docstring and the formatting.
"""

import os

from openood.postprocessors import BasePostprocessor
from openood.utils.config import Config, merge_configs

postprocessors = {
    "msp": BasePostprocessor,
    # trimmed: OpenOOD's other postprocessors (their modules are not copied)
}

link_prefix = "https://raw.githubusercontent.com/Jingkang50/OpenOOD/main/configs/postprocessors/"


def get_postprocessor(config_root: str, postprocessor_name: str, id_data_name: str):
    postprocessor_config_path = os.path.join(config_root, "postprocessors", f"{postprocessor_name}.yml")
    if not os.path.exists(postprocessor_config_path):
        os.makedirs(os.path.dirname(postprocessor_config_path), exist_ok=True)
        import urllib.request  # trimmed: imported where a config is downloaded

        urllib.request.urlretrieve(
            link_prefix + f"{postprocessor_name}.yml",
            postprocessor_config_path,
        )

    config = Config(postprocessor_config_path)
    config = merge_configs(config, Config(**{"dataset": {"name": id_data_name}}))
    postprocessor = postprocessors[postprocessor_name](config)
    postprocessor.APS_mode = config.postprocessor.APS_mode
    postprocessor.hyperparam_search_done = False
    return postprocessor
