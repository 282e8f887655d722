"""LLM access: OpenAI-compatible client, prompts, request journal, Batch API.

- :mod:`negvocab.llm.prompts`: the templates in ``prompts/`` (shipped in the wheel), content-hashed;
- :mod:`negvocab.llm.client`: :class:`~negvocab.llm.client.LLMClient` (openai SDK, tenacity retries,
  Retry-After, concurrency limit, a total deadline per request, fail-fast on unusable answers);
- :mod:`negvocab.llm.formats`: response formats (structured output
  :class:`~negvocab.llm.formats.LabelList`, JSON mode, free text) and how an answer is read;
- :mod:`negvocab.llm.endpoint`: base URL and key, and the public form of the URL;
- :mod:`negvocab.llm.settings`: :class:`~negvocab.llm.settings.LLMSettings`, how a build reaches the
  server and runs its requests (endpoint, key, concurrency, Batch API, format, timeouts, prices);
- :mod:`negvocab.llm.journal`: the crash-safe run folder (manifest + fsynced JSONL journal);
- :mod:`negvocab.llm.run` / :mod:`negvocab.llm.batch`: sending what the journal lacks, synchronously
  (requests whose attempts ran out deferred and asked again; the run stops only when the server as a
  whole looks broken) or through the Batch API;
- :mod:`negvocab.llm.guards`: what stops or slows a run (set-up budget, fail-fast, health window, a
  server's error classified, a rate limit's pause), a base of the client;
- :mod:`negvocab.llm.throttle`: how many requests are in flight (halved on overload, grown on success);
- :mod:`negvocab.llm.server_errors`: what each server's error means, and its one-line diagnosis;
- :mod:`negvocab.llm.secrets`: the key and URL secrets kept out of logs, errors and journals;
- :mod:`negvocab.llm.cost`: token and dollar estimates (dry run) and prices;
- :mod:`negvocab.llm.loop`: running a run's coroutine from synchronous code (also in Jupyter).

The vocabulary builders on top are in :mod:`negvocab.builders.llm`.
"""
