"""Masking of URL credentials in text that may reach a log or an error message.

HTTP clients log request URLs, and servers echo them in errors; a base URL may carry a password
(``http://user:pass@host``) or a key in its query (``?api-key=...``). Files get
:func:`negvocab.llm.client.public_url` instead, which drops both.
"""

from __future__ import annotations

import re

__all__ = ["redact_argv", "redact_urls", "url_secrets"]

_USERINFO = re.compile(r"(\bhttps?://)[^/\s]*@", re.IGNORECASE)  # up to the last @ before the host
_QUERY = re.compile(r"(\bhttps?://[^\s?\"']+)\?[^\s\"']*", re.IGNORECASE)


def redact_urls(text: str) -> str:
    """``text`` with the user info and the query string of every http(s) URL replaced by ``***``.

    >>> redact_urls("POST http://me:pw@host:8000/v1/chat?api-key=k failed")
    'POST http://***@host:8000/v1/chat?*** failed'
    """
    return _QUERY.sub(r"\1?***", _USERINFO.sub(r"\1***@", text))


def url_secrets(url: str | None, min_length: int = 8) -> list[str]:
    """The user name, password and query values of ``url``, raw and decoded (at least ``min_length``
    long, so that masking them in free text cannot garble it): servers also echo them outside a URL."""
    if not url:
        return []
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        parts = urlsplit(url)
        user, password = parts.username or "", parts.password or ""
    except ValueError:  # a malformed URL: mask it whole where it appears
        return [url] if len(url) >= min_length else []
    raw_values = [kv.split("=", 1)[1] for kv in parts.query.split("&") if "=" in kv]
    found = [password, unquote(password), user, unquote(user), *raw_values, *(v for _, v in parse_qsl(parts.query))]
    return sorted({x for x in found if len(x) >= min_length}, key=len, reverse=True)


_SECRET_OPTION = re.compile(r"^--?[\w-]*(key|token|secret|password|passwd|auth|credential)[\w-]*$", re.IGNORECASE)
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}|Bearer\s+\S+)", re.IGNORECASE)


def redact_argv(argv: list[str]) -> list[str]:
    """A command line fit for a results file: values of options named like a secret (``--api-key X``,
    ``--token=X``), key-shaped words (``sk-...``, ``hf_...``) and URL credentials become ``***``.

    >>> redact_argv(["negvocab", "build", "gpt", "--api-key", "abc123", "--base-url", "http://u:p@h/v1"])
    ['negvocab', 'build', 'gpt', '--api-key', '***', '--base-url', 'http://***@h/v1']
    """
    out: list[str] = []
    mask_next = False
    for arg in argv:
        arg = str(arg)
        if mask_next:
            out.append("***")
            mask_next = False
            continue
        name, eq, _ = arg.partition("=")
        if _SECRET_OPTION.match(name):
            if eq:
                out.append(f"{name}=***")
            else:
                out.append(arg)
                mask_next = True
            continue
        out.append(_SECRET_VALUE.sub("***", redact_urls(arg)))
    return out
