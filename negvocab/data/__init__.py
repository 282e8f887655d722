"""Image sets: ImageNet-1k validation, Fi-ImageNet-1k lists, image folders, class folders (NINCO), list files."""

from negvocab.data.fi_imagenet import FiImageNet, fi_imagenet, read_id_list
from negvocab.data.imagenet import imagenet_val, read_ground_truth
from negvocab.data.images import ImageSet, class_folders, image_folder, image_list
from negvocab.data.layouts import open_image_set

__all__ = [
    "FiImageNet",
    "ImageSet",
    "class_folders",
    "fi_imagenet",
    "image_folder",
    "image_list",
    "imagenet_val",
    "open_image_set",
    "read_ground_truth",
    "read_id_list",
]
