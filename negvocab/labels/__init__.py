"""The ID label space: ImageNet-1k classes, WordNet 3.0, the WordNet candidate pool, synonym filtering."""
