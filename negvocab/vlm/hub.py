"""Reaching the Hugging Face hub without stalling when it cannot be reached.

huggingface_hub retries a failed connection five times with backoff (about 25 s per file, and
open_clip asks for two files per checkpoint) before it falls back to its cache or fails. When a
quick TCP connect to the hub endpoint fails, the loads inside :func:`hub_access` run in
huggingface_hub's offline mode instead: cached files are served at once, missing ones fail at once.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlsplit

__all__ = ["PROBE_TIMEOUT_S", "hub_access", "reachable"]

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 3.0

_lock = threading.Lock()
_offline_blocks = 0  # blocks now running in the offline mode this module switched on


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

    Offline mode set by the user (``HF_HUB_OFFLINE=1``) is kept. Nothing is probed behind a proxy
    (environment or system settings), where a direct connect says nothing. Blocks in several
    threads share the offline mode; the last one out switches it off.
    """
    global _offline_blocks
    from huggingface_hub import constants

    with _lock:
        joined = _offline_blocks > 0
        if joined:
            _offline_blocks += 1
        elif constants.HF_HUB_OFFLINE:
            user_offline = True
        else:
            user_offline = False
    if not joined:
        if user_offline:
            yield False
            return
        if urllib.request.getproxies() or reachable(constants.ENDPOINT):
            yield True
            return
        log.warning("%s cannot be reached: using only the local Hugging Face cache", constants.ENDPOINT)
        with _lock:
            _offline_blocks += 1
            constants.HF_HUB_OFFLINE = True
    try:
        yield False
    finally:
        with _lock:
            _offline_blocks -= 1
            if _offline_blocks == 0:
                constants.HF_HUB_OFFLINE = False
