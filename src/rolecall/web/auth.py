"""Accounts and logins: scrypt password hashes, server-side sessions, CSRF tokens.

- Passwords: ``scrypt`` (stdlib ``hashlib``; n=2^14, r=8, p=1, 16-byte salt), stored as
  ``scrypt$n$r$p$salt$hash`` (base64); checked in constant time.
- Unknown user names cost the same as known ones: their password is checked against a
  dummy hash made once per process (``dummy_hash``), so the time of a refusal does not
  tell whether an account exists.
- Sessions: the ``rolecall_session`` cookie (HttpOnly, SameSite=Lax, Secure when the app
  is told so) holds a random token; the ``web_sessions`` table keeps its SHA-256 and an
  expiry, so logging out or deleting the row ends the login at once. A new login from a
  browser ends that browser's earlier session.
- Server secret: a random key that no page shows (``server_secret``), kept in
  ``ROLECALL_HOME/web-secret`` (0600) so it outlives restarts, or taken from
  ``ROLECALL_WEB_SECRET``; it signs the time an item's form was shown (``sign``).
- CSRF: every session has its own random token; every form that writes carries it in the
  ``csrf`` field, and a write without the right one is refused (403). The login form,
  before any session exists, uses a double-submit cookie.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from rolecall.errors import ConfigError
from rolecall.store import Role, User, WebSession

SECRET_ENV = "ROLECALL_WEB_SECRET"
SESSION_COOKIE = "rolecall_session"
LOGIN_COOKIE = "rolecall_login_csrf"
SESSION_HOURS = 12
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
MIN_PASSWORD = 8


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, dklen=32, **_SCRYPT)
    return "scrypt${n}${r}${p}${salt}${digest}".format(
        **_SCRYPT, salt=base64.b64encode(salt).decode(), digest=base64.b64encode(digest).decode()
    )


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode(),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


class UserTaken(ConfigError):
    """The user name belongs to an account already."""


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def add_user(db: Session, username: str, password: str, role: Role = Role.ANNOTATOR) -> User:
    """A new account; the caller commits. Refuses short passwords and taken names."""
    username = username.strip()
    if not username or len(username) > 64 or any(c.isspace() for c in username):
        raise ConfigError(f"bad user name {username!r}", fix="use 1-64 characters without spaces")
    if len(password) < MIN_PASSWORD:
        raise ConfigError(
            "the password is too short", fix=f"use at least {MIN_PASSWORD} characters"
        )
    taken = UserTaken(f"the user name {username!r} is taken", fix="pick another name")
    if db.scalar(select(User).where(User.username == username)) is not None:
        raise taken
    user = User(username=username, password_hash=hash_password(password), role=role)
    db.add(user)
    try:
        db.flush()
    except IntegrityError:  # the same name added at the same moment by another request
        db.rollback()
        raise taken from None
    return user


def same_user(db: Session, username: str, password: str, role: Role) -> bool:
    """Whether the account ``username`` exists with this password and role: the same
    form submitted again (a double click), not a new account with a taken name."""
    user = db.scalar(select(User).where(User.username == username.strip()))
    return user is not None and user.role == role and verify_password(password, user.password_hash)


@functools.cache
def dummy_hash() -> str:
    """A hash of a random password, made once (``create_app`` makes it at start-up): an
    unknown user's password is checked against it, as slowly as against a real one."""
    return hash_password(secrets.token_urlsafe(16))


def authenticate(db: Session, username: str, password: str) -> User | None:
    user = db.scalar(select(User).where(User.username == username.strip()))
    if user is None:
        verify_password(password, dummy_hash())  # one scrypt, as for a known user
        return None
    return user if verify_password(password, user.password_hash) else None


def open_session(db: Session, user: User) -> str:
    """A new login for ``user``; returns the cookie's token (only its hash is stored)."""
    token = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    db.execute(delete(WebSession).where(WebSession.expires < now))
    db.add(
        WebSession(
            token_hash=_token_hash(token),
            csrf_token=secrets.token_urlsafe(32),
            user_id=user.id,
            expires=now + timedelta(hours=SESSION_HOURS),
        )
    )
    db.flush()
    return token


def find_session(db: Session, token: str | None) -> WebSession | None:
    if not token or len(token) > 128:
        return None
    login = db.scalar(select(WebSession).where(WebSession.token_hash == _token_hash(token)))
    if login is None or login.expires <= datetime.now(UTC):
        return None
    return login


def close_session(db: Session, token: str | None) -> None:
    if token:
        db.execute(delete(WebSession).where(WebSession.token_hash == _token_hash(token)))


def csrf_matches(expected: str | None, given: str | None) -> bool:
    return bool(expected) and bool(given) and hmac.compare_digest(expected, given)


def server_secret(path: Path | None) -> bytes:
    """The app's signing key: ``$ROLECALL_WEB_SECRET`` if set, else the one stored at
    ``path`` (made on first use, readable by this account only), else a fresh random
    one (signatures then last as long as the process)."""
    if path is None and not os.environ.get(SECRET_ENV):
        return secrets.token_bytes(32)
    if not os.environ.get(SECRET_ENV) and not path.exists():
        # written to a private temporary file, then linked into place: of two workers
        # starting at once, one link wins and both read the same complete secret
        spare = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        with os.fdopen(os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(spare, path)
        except FileExistsError:
            pass
        finally:
            spare.unlink()
    secret = os.environ.get(SECRET_ENV) or path.read_text(encoding="ascii").strip()
    if len(secret) < 32:
        where = f"${SECRET_ENV}" if os.environ.get(SECRET_ENV) else str(path)
        raise ConfigError(
            f"the web app's secret in {where} is shorter than 32 characters",
            fix=f"set {SECRET_ENV} to 32+ random characters (or unset it and "
            f"delete {path}: a new one is made at start)",
        )
    return secret.encode()


def sign(secret: bytes, message: str) -> str:
    return hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()[:32]


def is_loopback(host: str) -> bool:
    """Whether ``rolecall serve --host`` listens on this machine only."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
