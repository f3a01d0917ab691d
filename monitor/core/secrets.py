"""Credentials in URLs: find them, mask them on every surface, refuse URLs that hide them ambiguously.

A source or receiver URL can carry a secret in three forms SQLAlchemy, libpq and HTTP clients
accept: the userinfo (``postgresql://user:secret@host/db``), a query parameter
(``?password=secret``, ``?sslpassword=``, ``?token=`` ...) and a libpq keyword string
(``password=secret host=...``) quoted by a driver's error; a Spark Connect URL has its own
parameters (``sc://host:15002/;token=secret``). fairwatch masks them

- *structurally* wherever it renders a URL itself (:func:`mask_url`), and
- in any other text (driver errors, log records, the pages) by the same patterns plus the
  exact secret values configured (:func:`mask`), matched as whole tokens - never by substring,
  so a one-letter password cannot turn every ``p`` of a message into ``***``.

:class:`SecretFilter` applies :func:`mask` to every log record, so a secret that reaches a log
line by any path is masked there too. A URL whose password holds an unencoded ``@`` is
refused at config load (:func:`check_url`): parsers split it differently, and the rest of the
password would be shown as the "host".
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Iterable

__all__ = ["SECRET_KEYS", "SecretFilter", "check_url", "mask", "mask_url", "url_secrets"]

#: Query-parameter and keyword names whose values are secrets (case-insensitive).
SECRET_KEYS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pass",
        "sslpassword",
        "secret",
        "client_secret",
        "token",
        "access_token",
        "secret_key",  # pyarrow's s3:// URLs
        "session_token",
        "secret_access_key",
        "auth_token",
        "api_key",
        "apikey",
    }
)
MASK = "***"

_KEYS = "|".join(sorted(SECRET_KEYS, key=len, reverse=True))
# key=value in a query string or a libpq keyword string: the value runs to the next separator
_KEY_VALUE = re.compile(
    rf"(?i)(?P<key>(?<![A-Za-z0-9_])(?:{_KEYS})[\"']?\s*[=:]\s*)(?P<value>'[^']*'|\"[^\"]*\"|[^\s&;,'\")]+)"
)
# scheme://user:password@ - greedy to the last @ of the token, so a password with an unencoded @
# is masked whole
_USERINFO = re.compile(r"(?P<keep>[A-Za-z][A-Za-z0-9+.-]*://[^/:@\s]*:)[^\s/]*@(?=[^\s@/]*(?:[\s/?#]|$))")


def check_url(url: str) -> str:
    """``url`` unchanged, or ``ValueError`` when its password would be split ambiguously.

    >>> check_url("postgresql://u:p%40ss@db/x")
    'postgresql://u:p%40ss@db/x'
    >>> check_url("postgresql://u:p@ss@db/x")
    Traceback (most recent call last):
    ...
    ValueError: the URL's user or password holds an unencoded '@': percent-encode it as %40
    """
    _, sep, rest = url.partition("://")
    if not sep:
        return url
    authority = re.split(r"[/?]", rest, maxsplit=1)[0]
    # sqlite:////a@b.db has an empty authority: an @ in a file path is not userinfo
    if authority.count("@") > 1:
        raise ValueError("the URL's user or password holds an unencoded '@': percent-encode it as %40")
    return url


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The secret values a URL holds: its password (decoded and as written) and secret query values.

    >>> url_secrets("postgresql://u:p%40ss@db/x?sslmode=require&password=two")
    ('p@ss', 'p%40ss', 'two')
    >>> url_secrets("sc://spark:15002/;use_ssl=true;token=t0k")
    ('t0k',)
    """
    if not url or "://" not in url:
        return ()
    parts = urllib.parse.urlsplit(url)
    found: list[str] = []
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        raw = userinfo.partition(":")[2]
        found += [urllib.parse.unquote(raw), raw]
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=False):
        if key.lower() in SECRET_KEYS:
            found.append(value)
    if parts.scheme == "sc":  # Spark Connect: sc://host:15002/;token=...;user_id=...
        for item in parts.path.split(";")[1:]:
            key, _, value = item.partition("=")
            if key.strip().lower() in SECRET_KEYS:
                found.append(value)
    return tuple(dict.fromkeys(s for s in found if s))


def mask_url(url: str) -> str:
    """``url`` with its userinfo password and secret query values replaced by ``***``; the rest
    of the text as written (``sqlite:////abs/path`` keeps its slashes).

    >>> mask_url("postgresql+psycopg://fw:hunter2@db:5432/logs?sslmode=require&password=x")
    'postgresql+psycopg://fw:***@db:5432/logs?sslmode=require&password=***'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return mask(url)
    head, question, query = rest.partition("?")
    userinfo, at, host = head.rpartition("@")
    if at and ":" in userinfo and not userinfo.startswith("/"):
        head = f"{userinfo.partition(':')[0]}:{MASK}@{host}"
    if query:
        query = "&".join(
            f"{k}={MASK}" if eq and k.lower() in SECRET_KEYS else f"{k}{eq}{v}"
            for k, eq, v in (item.partition("=") for item in query.split("&"))
        )
    return f"{scheme}{sep}{head}{question}{query}"


def mask(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with URL passwords, ``password=...``-style values and the given secrets masked.

    The given secrets are matched as whole tokens (not inside a longer word):

    >>> mask("login failed: password=hunter2 user=fw; url postgresql://fw:x@db/logs")
    'login failed: password=*** user=fw; url postgresql://fw:***@db/logs'
    >>> mask("no 'p' in an apple pie", ["p"])
    "no '***' in an apple pie"
    """
    text = _USERINFO.sub(rf"\g<keep>{MASK}@", text)
    text = _KEY_VALUE.sub(rf"\g<key>{MASK}", text)
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret and secret != MASK:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", MASK, text)
    return text


class SecretFilter(logging.Filter):
    """Masks secrets in every record passing through a handler (message and arguments formatted first)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets: tuple[str, ...] = tuple(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Mask these too (the secrets of a config loaded after logging was set up)."""
        self.secrets = tuple(dict.fromkeys((*self.secrets, *secrets)))

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask(message, self.secrets)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask(record.exc_text, self.secrets)
        if masked != message or record.args:
            record.msg, record.args = masked, None
        return True
