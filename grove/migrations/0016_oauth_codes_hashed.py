# Authorization codes stored as their SHA-256 (grove.identity.oauth.code_key), as the
# toolkit already stores access, refresh and registration tokens (COMPLIANT_BCP_RFC9700_
# TOKEN_STORAGE: an empty `token` and its `token_checksum`). The grant table is readable
# by the runtime database role; a code in it was one PKCE verifier away from tokens.
# Codes live 60 seconds: those stored before are converted in place, so a sign-in under
# way goes on. The second and third statements empty any token column that still holds
# a token (none should: Grove has stored them hashed from the start; the checksum the
# toolkit looks them up by was made from the token when it was saved).
#
# Expand only (tests/grove/runtime/test_migrations_expand.py): no schema change, only
# values. A web process of the previous release finds no code the new release issued and
# the other way round, for the minute of a rolling upgrade: a sign-in then is retried.
# Reversed: nothing (a digest cannot be turned back; the codes expire within a minute).

from django.db import migrations

HASH_CODES = """
UPDATE oauth2_provider_grant
   SET code = encode(sha256(convert_to(code, 'UTF8')), 'hex')
 WHERE code !~ '^[0-9a-f]{64}$'
"""
EMPTY_TOKENS = [
    "UPDATE oauth2_provider_accesstoken SET token = '' WHERE token <> ''",
    "UPDATE oauth2_provider_refreshtoken SET token = '' WHERE token <> ''",
]


class Migration(migrations.Migration):

    dependencies = [
        ("grove", "0015_sessions_keyed_by_mac"),
        ("oauth2_provider", "0015_refreshtoken_token_checksum"),
    ]

    operations = [migrations.RunSQL([HASH_CODES, *EMPTY_TOKENS], migrations.RunSQL.noop)]
