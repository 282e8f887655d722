"""Image sets: ImageNet-1k validation, Fi-ImageNet-1k lists, image folders."""
