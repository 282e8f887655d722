"""Keeping secrets out of what a client logs, raises and journals: the key and URL secrets masked in text,
and model output that echoes a secret dropped whole (:class:`SecretKeeper`, a base of the LLM client)."""

from __future__ import annotations

from negvocab.core.redact import MIN_SECRET_LENGTH, mask_secrets

__all__ = ["SecretKeeper"]


class SecretKeeper:
    """Masks ``_secrets`` (the API key and the base URL's secrets) in text, and drops items holding them."""

    _secrets: list[str]
    _encoded: list[str]  # the base64 user:password of the base URL, which a server may echo (401 bodies)

    def scrub(self, text: str) -> str:
        """Error or log ``text`` with URL credentials masked by structure, and the key and URL secrets
        masked where they occur when long enough to be secrets (:func:`negvocab.core.redact.mask_secrets`),
        as is the base64 ``user:password`` a server echoes."""
        return mask_secrets(text, self._secrets, encoded=getattr(self, "_encoded", ()))

    def scrub_items(self, raw: list[str] | None) -> list[str] | None:
        """An answer's raw items for the journal, as the model wrote them (model output is data and is
        never rewritten: masking a short key such as ``x`` there turned "hot box" into "hot bo***"),
        less any item that holds the key or a URL secret (:meth:`without_secrets`)."""
        return self.without_secrets([str(x) for x in raw]) if raw else None

    def without_secrets(self, items: list[str]) -> list[str]:
        """``items`` less those that hold a secret of :data:`~negvocab.core.redact.MIN_SECRET_LENGTH` or more
        characters (in any case: labels are lower-cased), so that a model echoing the key cannot put it
        in a journal or a vocabulary; the other items are kept as they are."""
        secrets = [x.lower() for x in self._secrets if x and len(x) >= MIN_SECRET_LENGTH]
        return [it for it in items if not any(x in it.lower() for x in secrets)] if secrets else items
