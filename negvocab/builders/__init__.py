"""Vocabulary builders: WordNet farthest-first, LLM (GPT siblings, EOE), oracle."""
