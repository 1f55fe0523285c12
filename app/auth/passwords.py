"""Passwords: hashing and the policy for new passwords (docs/security.md).

- pwdlib Argon2 (not passlib, which breaks with bcrypt >= 4.1). Unknown users are verified
  against a dummy hash so both paths cost the same (no user enumeration by timing).
- Password policy for new and changed passwords (:func:`password_problem`), after NIST SP
  800-63B: at least 12 characters, no composition rules, and a blocklist check: not the
  username, and not a password that zxcvbn (the maintained Python port of Dropbox's estimator,
  whose lists include 30,000 common passwords from breach corpora) expects to fall within
  10^8 guesses (common passwords, dictionary words, repeats, sequences, keyboard patterns).
"""

from __future__ import annotations

import secrets
import unicodedata
from functools import lru_cache

from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher

from labeling.identifiers import text_problem

#: Argon2id with the OWASP Password Storage Cheat Sheet's baseline (m = 19 MiB, t = 2, p = 1):
#: ~0.1 s per hash here, against ~0.5-1 s for pwdlib's heavier default on this 2-core machine,
#: where logins would otherwise queue behind each other. Old hashes with other parameters still
#: verify and are re-hashed on the next successful login.
_password_hash = PasswordHash((Argon2Hasher(time_cost=2, memory_cost=19456, parallelism=1),))


def hash_password(password: str) -> str:
    """Argon2id hash of ``password``."""
    return _password_hash.hash(password)


def verify_password(password: str, password_hash: str | None) -> bool:
    """True when ``password`` matches. ``None`` (unknown user) verifies a dummy hash and
    returns False, so unknown and known users take the same time."""
    if password_hash is None:
        _password_hash.verify(password, _dummy_hash())
        return False
    try:
        return _password_hash.verify(password, password_hash)
    except Exception:  # a malformed stored hash is a failed login, never a 500
        return False


def needs_rehash(password_hash: str) -> bool:
    """Whether ``password_hash`` was made with other parameters than today's (a successful
    login then stores a new hash)."""
    return bool(_password_hash.current_hasher.check_needs_rehash(password_hash))


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return _password_hash.hash(secrets.token_urlsafe(16))


#: Shortest new password, in characters after NFKC normalisation (NIST SP 800-63B asks for at
#: least 8 and recommends more; 12 leaves room for memorable passphrases).
MIN_PASSWORD_CHARS = 12
MAX_PASSWORD_CHARS = 1024
#: A new password must need at least this many guesses by zxcvbn's estimate (its score 3,
#: "safely unguessable: moderate protection from offline slow-hash scenario").
MIN_PASSWORD_GUESSES = 10**8
#: zxcvbn's own input limit; a longer password is judged by its first characters.
_ZXCVBN_MAX_CHARS = 72
#: Words that are context-specific to this service (NIST: "the name of the service").
SERVICE_WORDS = ("heapjudge", "judge", "relevance", "assessor")


@lru_cache(maxsize=1)
def common_passwords() -> frozenset[str]:
    """zxcvbn's list of common passwords (30,000, most frequent first in the package).

    zxcvbn is imported here and in :func:`password_problem`, when a password is set, not
    with the module: its lists hold about 12 MB of resident memory that a server that only
    logs people in does not need (docs/performance.md#imports)."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    return frozenset(FREQUENCY_LISTS["passwords"])


def password_problem(password: str, *, username: str = "") -> str | None:
    """Why ``password`` may not be set as a new password, or None (the policy of
    ``docs/security.md#password-policy``, after NIST SP 800-63B section 3.1.1.2):

    1. clean text (no NUL, no lone surrogate), 12 to 1024 characters after NFKC normalisation;
    2. not the username (ignoring case and surrounding spaces);
    3. not a common password (zxcvbn's list, ignoring case), and not guessable within
       :data:`MIN_PASSWORD_GUESSES` by zxcvbn's estimator, which knows the username and the
       service's name as well (repeats, sequences, keyboard walks, dictionary words and l33t
       variants of these)."""
    problem = text_problem(password)
    if problem is not None:
        return f"the password {problem}"
    normalised = unicodedata.normalize("NFKC", password)
    if len(normalised) < MIN_PASSWORD_CHARS:
        return f"the password is too short: use at least {MIN_PASSWORD_CHARS} characters"
    if len(normalised) > MAX_PASSWORD_CHARS:
        return f"the password is too long: at most {MAX_PASSWORD_CHARS} characters"
    folded = normalised.strip().casefold()
    if username and folded == username.strip().casefold():
        return "the password must not be the username"
    if folded in common_passwords():
        return "the password is one of the most common passwords; choose another"
    from zxcvbn import zxcvbn  # on use (common_passwords)

    estimate = zxcvbn(
        normalised[:_ZXCVBN_MAX_CHARS],
        user_inputs=[w for w in (username, *SERVICE_WORDS) if w],
        max_length=_ZXCVBN_MAX_CHARS,
    )
    if estimate["guesses"] < MIN_PASSWORD_GUESSES:
        warning = estimate["feedback"].get("warning") or "it follows a common pattern"
        return (
            "the password is too easy to guess (" + warning.rstrip(".") + "); a few unrelated "
            "words make a strong, memorable password"
        )
    return None
