"""LLM access: OpenAI-compatible client, prompts, request journal, Batch API.

- :mod:`negvocab.llm.prompts`: the templates in ``prompts/`` (shipped in the wheel), content-hashed;
- :mod:`negvocab.llm.client`: :class:`~negvocab.llm.client.LLMClient` (openai SDK, structured output
  :class:`~negvocab.llm.client.LabelList`, tenacity retries, Retry-After, concurrency limit);
- :mod:`negvocab.llm.journal`: the crash-safe run folder (manifest + fsynced JSONL journal);
- :mod:`negvocab.llm.run` / :mod:`negvocab.llm.batch`: sending what the journal lacks, synchronously
  or through the Batch API;
- :mod:`negvocab.llm.cost`: token and dollar estimates (dry run) and prices.

The vocabulary builders on top are in :mod:`negvocab.build.llm`.
"""
