"""LLM access: OpenAI-compatible client, prompts, request journal, Batch API."""
