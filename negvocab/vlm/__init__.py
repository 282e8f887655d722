"""Vision-language models: open_clip wrapper, text templates and encoding, images, embedding cache."""
