"""An upload as it waits in the database for its job: sealed (issue 36 item 2.6).

The request stores what was uploaded without reading it (`IngestUploadPart` rows), so it
still holds its `<private>` regions and credentials — which Grove otherwise never
stores, not even for the minutes a file waits. Each part is therefore sealed with
AES-256-GCM (the `cryptography` package) under a key of its own upload, derived from
SECRET_KEY (which the database never holds), with the part's place as associated data:
a read of the database, a backup or the runtime role's SQL yields ciphertext, and a part
moved to another upload or place does not open. The web process and the worker share
SECRET_KEY, as they must for everything else; a key changed between the upload and its
job makes the parts unreadable (`Unsealable`) and the upload fails with that reason.
"""

from __future__ import annotations

import uuid

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.utils.crypto import salted_hmac

KEY_SALT = "grove.ingest.upload"
PART_BYTES = 1024 * 1024  # how much of an upload one row holds


class Unsealable(ValueError):
    """A part that does not open with this process's key (SECRET_KEY changed, or the
    row was altered)."""


def _cipher(upload_id: uuid.UUID) -> AESGCM:
    return AESGCM(salted_hmac(KEY_SALT, str(upload_id), algorithm="sha256").digest())


def _nonce_and_context(upload_id: uuid.UUID, index: int) -> tuple[bytes, bytes]:
    # A key per upload and each index sealed once under it: the index is a unique nonce.
    return index.to_bytes(12, "big"), f"{upload_id}:{index}".encode()


def seal(upload_id: uuid.UUID, index: int, data: bytes) -> bytes:
    nonce, context = _nonce_and_context(upload_id, index)
    return _cipher(upload_id).encrypt(nonce, data, context)


def unseal(upload_id: uuid.UUID, index: int, sealed: bytes) -> bytes:
    nonce, context = _nonce_and_context(upload_id, index)
    try:
        return _cipher(upload_id).decrypt(nonce, sealed, context)
    except InvalidTag:
        raise Unsealable(f"part {index} of the upload does not open") from None
