"""The demo (L6, beside the grids): the whole pipeline on a handful of images shipped with installed
packages, in :mod:`negvocab.demo.pipeline`."""

from negvocab.demo.pipeline import SPLIT_NOTE, DemoResult, check_demo_sizes, prepare_sample_images, run_demo

__all__ = ["DemoResult", "SPLIT_NOTE", "check_demo_sizes", "prepare_sample_images", "run_demo"]
