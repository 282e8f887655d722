"""Where the LLM server is: base URL and key from arguments or the environment, checked, and the
public form of the URL that may be written to files (no user info, no query string)."""

from __future__ import annotations

import os

from negvocab.core.errors import InputError, ResourceError
from negvocab.core.redact import mask_url_path

__all__ = ["check_base_url", "is_official", "public_url", "resolve_endpoint", "split_query"]


def resolve_endpoint(
    base_url: str | None, api_key: str | None, key_name: str = "OPENAI_API_KEY"
) -> tuple[str | None, str]:
    """Base URL and key from the arguments or ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``.

    Whitespace around the key (a Windows ``.env`` line end) is dropped; a key with spaces or control
    characters inside cannot go into an HTTP header and fails here, naming ``key_name``.
    """
    base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").strip() or None
    api_key = (api_key or os.environ.get("OPENAI_API_KEY") or "").strip() or None
    if api_key and any(c.isspace() or not c.isprintable() or not c.isascii() for c in api_key):
        raise InputError(
            f"the API key in {key_name} contains spaces, control or non-ASCII characters (quotes pasted with it?); "
            "set it to the key alone"
        )
    check_base_url(base_url)
    if not api_key:
        where = f" for {base_url}" if base_url else ""
        raise ResourceError(f"no API key{where}: set {key_name} (any non-empty string for a local server without keys)")
    return base_url, api_key


def check_base_url(base_url: str | None) -> None:
    """A one-line InputError unless ``base_url`` (or ``OPENAI_BASE_URL``) is unset or an http(s) URL."""
    from urllib.parse import urlsplit

    base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").strip()
    if not base_url:
        return
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 (raises for a port out of range)
    except ValueError as e:
        raise InputError(
            f"base URL is malformed ({e}); give e.g. http://localhost:8000/v1 (base_url or OPENAI_BASE_URL)",
            param="base_url",
        ) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"base URL {public_url(base_url)!r} is not an http(s) URL; give e.g. http://localhost:8000/v1 "
            "(base_url or OPENAI_BASE_URL)",
            param="base_url",
        )


def public_url(base_url: str | None) -> str:
    """The endpoint as it may be written to files: no user info, no query string, no key in the path
    (``.../key/<KEY>/v1`` -> ``.../key/***/v1``)."""
    if not base_url:
        return "https://api.openai.com/v1"
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, mask_url_path(parts.path), "", ""))


def split_query(base_url: str | None) -> tuple[str | None, dict[str, str]]:
    """The base URL without its query string, and the query as a dict: the SDK appends paths to
    the base URL as a string, so ``.../v1?key=K`` would become ``.../v1?key=K/chat/completions``."""
    if not base_url or "?" not in base_url:
        return base_url, {}
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), dict(
        parse_qsl(parts.query, keep_blank_values=True)
    )


def is_official(base_url: str) -> bool:
    """Whether ``base_url`` is OpenAI's own endpoint (its prices apply, its reasoning models refuse ``max_tokens``)."""
    from urllib.parse import urlsplit

    return (urlsplit(base_url).hostname or "").lower() == "api.openai.com"
