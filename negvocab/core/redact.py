"""Masking of secrets where they can leak: URLs, auth headers, command lines, exception text.

HTTP clients log request URLs, and servers echo them in errors; a base URL may carry a password
(``http://user:pass@host``), a key in its query (``?api-key=...``) or in its path (gateways that take
``.../key/<KEY>/v1``). These are masked by structure (:func:`redact_urls`), never by searching
free text for a string: a key ``x`` (any string is a valid key for a local server) must not turn
"box" into "bo***". Exact-match masking (:func:`mask_secrets`) is for exception and log text only,
and only of strings at least :data:`MIN_SECRET_LENGTH` long; model output and labels are never
rewritten. Files get :func:`negvocab.llm.endpoint.public_url` instead, which drops all three.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "MIN_SECRET_LENGTH",
    "basic_auth_forms",
    "mask_secrets",
    "mask_url_path",
    "redact_argv",
    "redact_urls",
    "url_secrets",
]

#: shorter strings are no secret in any useful sense (a local server's ``OPENAI_API_KEY=x``), and
#: masking them in free text would garble it
MIN_SECRET_LENGTH = 16

_USERINFO = re.compile(r"(\bhttps?://)[^/\s]*@", re.IGNORECASE)  # up to the last @ before the host
_QUERY = re.compile(r"(\bhttps?://[^\s?\"']+)\?[^\s\"']*", re.IGNORECASE)
# a path segment that names a key, and the segment after it: ".../key/<KEY>/v1", ".../api-key/<KEY>"
_PATH_KEY = re.compile(
    r"(/(?:keys?|api[-_]?keys?|apikey|tokens?|access[-_]?token|secret|auth)/)([^/\s?#\"']+)", re.IGNORECASE
)
_URL = re.compile(r"\bhttps?://[^\s\"'<>]+", re.IGNORECASE)


def mask_url_path(path: str) -> str:
    """``path`` with the segment after a key-named one (``/key/``, ``/api-key/``, ``/token/``) as ``***``.

    >>> mask_url_path("/gw/key/abc123/v1")
    '/gw/key/***/v1'
    """
    return _PATH_KEY.sub(r"\1***", path)


def redact_urls(text: str) -> str:
    """``text`` with the user info and the query string of every http(s) URL replaced by ``***``.

    >>> redact_urls("POST http://me:pw@host:8000/v1/chat?api-key=k failed")
    'POST http://***@host:8000/v1/chat?*** failed'
    """
    text = _QUERY.sub(r"\1?***", _USERINFO.sub(r"\1***@", text))
    return _URL.sub(lambda m: mask_url_path(m.group(0)), text)


_BASIC = re.compile(r"\b(Basic\s+)[A-Za-z0-9+/_-]{8,}=*")  # an Authorization header's value


def mask_secrets(text: str, secrets: list[str], *, encoded: Sequence[str] = ()) -> str:
    """``text`` with every occurrence of each secret at least :data:`MIN_SECRET_LENGTH` long masked (and of
    each ``encoded`` one, base64 credentials of :func:`basic_auth_forms`, at least 8 long: no word of
    free text), ``Basic <credentials>`` masked, then :func:`redact_urls`; for exception and log text
    only, never for model output or labels."""
    long = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH} | {s for s in encoded if len(s) >= 8}
    for secret in sorted(long, key=len, reverse=True):
        text = text.replace(secret, "***")
    return redact_urls(_BASIC.sub(r"\1***", text))


def basic_auth_forms(url: str | None) -> list[str]:
    """The base64 ``user:password`` of ``url``'s user info, as an HTTP client sends it (``Authorization:
    Basic ...``) and a server may echo it: standard and URL-safe, with and without padding.

    >>> basic_auth_forms("http://user:pass@h/v1")
    ['dXNlcjpwYXNz']
    """
    import base64
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(url or "")
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if not user and not password:
        return []
    out = []
    for pair in dict.fromkeys((f"{user or ''}:{password or ''}", f"{unquote(user or '')}:{unquote(password or '')}")):
        raw = pair.encode()
        for form in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
            out += [form, form.rstrip("=")]
    return list(dict.fromkeys(f for f in out if len(f) >= 8))


def url_secrets(url: str | None, min_length: int = MIN_SECRET_LENGTH) -> list[str]:
    """The user name, password, query values and path keys of ``url``, raw and decoded (at least
    ``min_length`` long, so that masking them in free text cannot garble it): servers also echo
    them outside a URL."""
    if not url:
        return []
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        parts = urlsplit(url)
        user, password = parts.username or "", parts.password or ""
    except ValueError:  # a malformed URL: mask it whole where it appears
        return [url] if len(url) >= min_length else []
    raw_values = [kv.split("=", 1)[1] for kv in parts.query.split("&") if "=" in kv]
    path_keys = [m.group(2) for m in _PATH_KEY.finditer(parts.path)]
    found = [
        password,
        unquote(password),
        user,
        unquote(user),
        *raw_values,
        *(v for _, v in parse_qsl(parts.query)),
        *path_keys,
        *map(unquote, path_keys),
    ]
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
