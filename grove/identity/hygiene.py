"""Secret hygiene on the way in (SPEC §5): every text a save brings is screened for
credentials (`grove.kernel.credentials`) before anything stores, embeds, checks or logs
it, and the account's rule for where the text comes from decides what happens:

* `redact` — each credential is replaced by `[redacted: kind]`; the save goes on and its
  result names the kinds (`redacted`), which is the warning an explicit save gets;
* `refuse` — nothing is saved: `secret_detected` (400), naming the kinds.

Defaults: redact on ingest and on explicit saves, refuse automatic captures (agents
saving on their own). The owner changes them, and adds patterns, on the Settings page.
Errors and results carry kinds and counts, never the text found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from grove.kernel import credentials
from grove.kernel.actor import Actor
from grove.kernel.errors import Invalid
from grove.models import Account, SecretAction


class Origin(StrEnum):
    INGEST = "ingest"          # `grove ingest`, the website's folder upload
    AUTOMATIC = "automatic"    # an agent saving on its own (capture "automatic")
    EXPLICIT = "explicit"      # everything else: the owner, an agent asked to save


@dataclass(frozen=True, slots=True)
class SecretRules:
    actions: dict[Origin, str]
    patterns: tuple[credentials.OwnerPattern, ...]

    def fingerprint(self) -> str:
        """What an ingest's file hash covers: a change of rules re-screens the files."""
        return repr((sorted(self.actions.items()), self.patterns))


@dataclass(frozen=True, slots=True)
class Screened:
    text: str
    redacted: dict[str, int] = field(default_factory=dict)


def secret_rules(account_id: Any) -> SecretRules:
    row = Account.objects.filter(id=account_id).values(
        "secrets_on_ingest", "secrets_on_automatic", "secrets_on_explicit",
        "secret_patterns").get()
    return SecretRules(
        actions={Origin.INGEST: row["secrets_on_ingest"],
                 Origin.AUTOMATIC: row["secrets_on_automatic"],
                 Origin.EXPLICIT: row["secrets_on_explicit"]},
        patterns=tuple(credentials.OwnerPattern(**item) for item in row["secret_patterns"]))


def screen(actor: Actor, text: str, *, origin: Origin,
           rules: SecretRules | None = None) -> Screened:
    """`text` as the account's rules let it be saved; `secret_detected` when they
    refuse it. `rules`: already read (an ingest reads them once)."""
    rules = rules or secret_rules(actor.account_id)
    spans = credentials.find(text, rules.patterns)
    if not spans:
        return Screened(text)
    found = credentials.kinds(spans)
    if rules.actions[origin] == SecretAction.REFUSE:
        raise Invalid(
            f"The text holds {_described(found)}; this account refuses "
            f"{'automatic captures' if origin == Origin.AUTOMATIC else origin.value + ' saves'}"
            " that hold credentials. Remove them (or keep them in a password manager) "
            "and save again.", code="secret_detected", kinds=found)
    return Screened(credentials.redact(text, spans), found)


def redaction_notice(found: dict[str, int]) -> str:
    """What a person is told after a save that was redacted."""
    return (f"Saved with {_described(found)} replaced by a marker — keep credentials in a "
            "password manager, not in notes.")


def _described(found: dict[str, int]) -> str:
    shown = ", ".join(f"{kind} ×{count}" if count > 1 else kind
                      for kind, count in found.items())
    return f"a credential ({shown})"


def clean_secret_action(value: Any, *, what: str) -> str:
    if value not in SecretAction.values:
        raise Invalid(f"{what} must be one of: {', '.join(SecretAction.values)}.",
                      code="invalid_secret_action")
    return str(value)


def clean_secret_patterns(value: Any) -> list[dict[str, str]]:
    """The owner's patterns as stored: each a name (letters, digits, spaces, - and _)
    and an RE2 pattern that compiles and does not match empty text."""
    if not isinstance(value, list) or len(value) > credentials.PATTERNS_MAX:
        raise Invalid(f"Give at most {credentials.PATTERNS_MAX} patterns.",
                      code="invalid_secret_pattern")
    cleaned: list[dict[str, str]] = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else None
        pattern = item.get("pattern") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name.strip() \
                or len(name.strip()) > credentials.PATTERN_NAME_MAX_CHARS \
                or not all(c.isalnum() or c in " -_" for c in name.strip()):
            raise Invalid(f"Name each pattern with 1–{credentials.PATTERN_NAME_MAX_CHARS} "
                          "letters, digits, spaces, - or _.", code="invalid_secret_pattern")
        if not isinstance(pattern, str) or not pattern \
                or len(pattern) > credentials.PATTERN_MAX_CHARS:
            raise Invalid(f"Pattern “{name.strip()}” must be 1–"
                          f"{credentials.PATTERN_MAX_CHARS} characters.",
                          code="invalid_secret_pattern")
        try:
            credentials.compile_pattern(pattern)
        except credentials.BadPattern as exc:
            raise Invalid(f"Pattern “{name.strip()}” is not usable: {exc}.",
                          code="invalid_secret_pattern") from None
        cleaned.append({"name": name.strip(), "pattern": pattern})
    return cleaned
