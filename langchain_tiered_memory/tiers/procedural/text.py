"""Text hygiene for procedural memory: secret redaction and error normalisation.

:func:`redact_parameters` redacts parameters whose *name* looks like a credential
(``api_key``, ``access_token``, ``X-Api-Key``, ``clientSecret``, ...) at any depth, and
credential-looking values (``Bearer ...``, ``sk-...``), as :func:`redact_text` does in
free text. :func:`normalize_error` replaces numbers, ids, hex, quoted strings, paths,
URLs and IPs with placeholders (``<n>``, ``<str>``, ...), keeping HTTP status codes.

Examples:
    >>> redact_parameters({"q": "shoes", "headers": {"X-Api-Key": "abc"}, "password": "p"})
    {'q': 'shoes', 'headers': {'X-Api-Key': '[REDACTED]'}, 'password': '[REDACTED]'}
    >>> normalize_error("Timeout after 3012 ms reading '/var/data/file.csv' (id 9f1c2b7a4d)")
    "Timeout after <n> ms reading '<str>' (id <hex>)"
    >>> normalize_error("410 Gone: use orders_v2")
    '410 Gone: use orders_v2'
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "REDACTED",
    "is_secret_name",
    "normalize_error",
    "redact_parameters",
    "redact_text",
]

REDACTED = "[REDACTED]"

_SECRET_NAME = re.compile(
    r"(apikey|accesskey|privatekey|secretkey|secret|password|passwd|passphrase|credential"
    r"|authorization|bearer|cookie|token(?!s)|sessiontoken|signature)"
)
_EXACT_SECRET_NAMES = frozenset({"auth", "pwd", "pass", "key", "sig", "jwt"})

_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
_KEY_VALUE = re.compile(
    r"(?i)\b([\w-]*(?:api[_-]?key|token|password|passwd|secret|authorization)[\w-]*)"
    r"(\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
)
_PREFIXED_KEY = re.compile(r"\b(?:sk|pk|rk|ghp|gho|xox[abpr])[-_][A-Za-z0-9_-]{12,}\b")

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"]+", re.IGNORECASE)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_HEX = re.compile(r"\b(?:0x[0-9a-f]+|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,})\b", re.I)
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_PATH = re.compile(r"(?<![\w<])(?:[A-Za-z]:\\|~?/)[^\s'\":,;)]+")
_HTTP_STATUS = re.compile(r"^[1-5]\d\d$")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])|(?<![\w.])\d+(?=[a-z]{1,3}\b)")
_SPACES = re.compile(r"\s+")
_MAX_SIGNATURE = 200


def is_secret_name(name: str) -> bool:
    """Whether a parameter name looks like a credential (case and separators ignored).

    Examples:
        >>> [is_secret_name(n) for n in ("access_token", "X-API-KEY", "max_tokens", "query")]
        [True, True, False, False]
    """
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    return compact in _EXACT_SECRET_NAMES or bool(_SECRET_NAME.search(compact))


def redact_text(text: str) -> str:
    """Redact credential-looking values in free text (``token=...``, ``Bearer ...``, ``sk-...``)."""
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _KEY_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _PREFIXED_KEY.sub(REDACTED, text)


def redact_parameters(value: Any) -> Any:
    """A copy of ``value`` with credential-named entries and credential-looking strings redacted."""
    if isinstance(value, dict):
        return {
            k: REDACTED if isinstance(k, str) and is_secret_name(k) else redact_parameters(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact_parameters(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def normalize_error(message: str) -> str:
    """A signature of ``message`` that groups recurring errors (see the module docstring)."""
    text = redact_text(message.strip())
    text = _URL.sub("<url>", text)
    text = _QUOTED.sub(lambda m: f"{m.group()[0]}<str>{m.group()[-1]}", text)
    text = _UUID.sub("<id>", text)
    text = _IP.sub("<ip>", text)
    text = _HEX.sub("<hex>", text)
    text = _PATH.sub("<path>", text)
    text = _NUMBER.sub(lambda m: m.group() if _HTTP_STATUS.match(m.group()) else "<n>", text)
    text = _SPACES.sub(" ", text).strip()
    return text[:_MAX_SIGNATURE]
