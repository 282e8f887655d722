"""Reaching the Hugging Face hub without stalling when it cannot be reached.

huggingface_hub retries a failed connection five times with backoff (about 25 s per file, and
open_clip asks for two files per checkpoint) before it falls back to its cache or fails. When a
quick TCP connect to the hub endpoint fails, the loads inside :func:`hub_access` run in
huggingface_hub's offline mode instead: cached files are served at once, missing ones fail at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 3.0
# Behind a proxy a direct connect says nothing about whether the hub can be reached.
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def reachable(endpoint: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether a TCP connection to ``endpoint``'s host and port opens within ``timeout`` seconds."""
    url = urlsplit(endpoint)
    if not url.hostname:
        return False
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def hub_access() -> Iterator[bool]:
    """Run the block online if the hub answers, else in offline mode; yields whether it is online.

    Offline mode already set by the user (``HF_HUB_OFFLINE=1``) is kept, and nothing is probed when
    a proxy is configured.
    """
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        yield False
        return
    if any(os.environ.get(v) for v in PROXY_VARIABLES) or reachable(constants.ENDPOINT):
        yield True
        return
    log.warning("%s cannot be reached: using only the local Hugging Face cache", constants.ENDPOINT)
    constants.HF_HUB_OFFLINE = True
    try:
        yield False
    finally:
        constants.HF_HUB_OFFLINE = False
