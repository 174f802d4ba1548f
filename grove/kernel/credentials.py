"""Credentials in text: find them and replace each with a marker naming its kind.

What counts as a credential:

* private keys — a PEM or OpenSSH block from its BEGIN line to its END line (to the end
  of the text when the END line is missing: nothing of a truncated key is kept), and
  PuTTY key files;
* cloud and API tokens of common providers, JWTs and passwords in URLs — the detectors
  of Yelp's **detect-secrets** (maintained, regex per provider: AWS, Azure, GitHub,
  GitLab, Slack, Stripe, OpenAI, SendGrid, Twilio, npm, PyPI, Discord, Telegram, …),
  plus a few it lacks (Google API keys, Anthropic and newer OpenAI keys, Hugging Face
  tokens, Grove's own API keys);
* an AWS secret access key in prose — 40 characters of base64's alphabet, both cases
  and a digit, `/` or `+`, standing alone — when an access key id is within
  AWS_SECRET_NEAR_KEY_ID characters or the word "secret" within
  AWS_SECRET_AFTER_KEYWORD characters before it ("key AKIA… with secret wJalr…");
  detect-secrets sees it only quoted after an `aws…key` name, the keyword rule only as
  an assignment;
* `password=` lines — detect-secrets' keyword rule (password, secret, api_key, token…
  followed by `=`, `:=`, or `:` with a quoted value), where an unquoted value is its
  first word; after a bare colon only a one-word value with a digit or symbol counts
  ("password: hunter2", not "password: see the vault");
* the owner's own patterns (`OwnerPattern`), compiled with RE2, whose matching time is
  linear in the text whatever the pattern — an owner's regular expression cannot stall
  a save.

Its entropy detectors are left out: in prose they flag hashes, ids and base64 images,
and a marker in place of a commit hash would be damage, not hygiene.

`find` returns the spans (merged where they overlap); `redact` replaces each with
`[redacted: kind]`. Neither ever logs or returns the credential itself: callers see
kinds and counts only.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

MARKER = "[redacted: {kind}]"
PATTERNS_MAX = 50
PATTERN_NAME_MAX_CHARS = 40
PATTERN_MAX_CHARS = 500

# A token runs on over these characters from where a detector matched (a JWT's
# signature, the rest of a token a provider's regex only begins); `=` only to the
# right, so `password=hunter2` keeps its `password=`. At most TOKEN_REACH characters
# each way: widening stays linear however long a run of such characters is.
_TOKEN_CHARS_LEFT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                              "_-+/.~")
_TOKEN_CHARS_RIGHT = _TOKEN_CHARS_LEFT | {"="}
TOKEN_REACH = 512
# The keyword rule reads a window around each keyword, never a whole line: its
# regular expressions backtrack, so their cost must not grow with the line.
KEYWORD_BEFORE, KEYWORD_AFTER = 20, 160

_PUTTY = re.compile(r"PuTTY-User-Key-File-\d.*?(?:^Private-MAC:[^\n]*$|\Z)",
                    re.DOTALL | re.MULTILINE)
_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----.*?"
    r"(?:-----END \1PRIVATE KEY\2-----|\Z)", re.DOTALL)

# Detectors detect-secrets lacks, with the kind each reports.
_EXTRA = (
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("anthropic-api-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai-api-key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}")),
    ("hugging-face-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("grove-api-key", re.compile(r"\bgrv_[A-Za-z0-9_\-]{40,}")),
    # detect-secrets' Artifactory rule also takes `AP` + hex words (invoice numbers,
    # product names); only its `AKC` API keys are kept.
    ("artifactory-credentials", re.compile(r"\bAKC[a-zA-Z0-9]{10,}\b")),
    # A password in a URL with characters detect-secrets' rule stops at (`!`, `$`, …).
    ("basic-auth-credentials", re.compile(r"://[^\s:/@]+:([^\s/@]+)@")),
)

# The AWS secret access key in prose: a run of exactly this many characters of its
# alphabet (RE2: linear), shaped like one (`_aws_secret_shaped`), near its context.
AWS_SECRET_CHARS = 40
AWS_SECRET_AFTER_KEYWORD = 48  # characters between "secret" and the key
AWS_SECRET_NEAR_KEY_ID = 120  # characters between an access key id and the key
_AWS_RUN = r"[A-Za-z0-9/+]+"
_AWS_KEY_ID = r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}"  # detect-secrets' rule
_SECRET_WORD = re.compile(r"secret", re.IGNORECASE)
# A run that goes on as another kind of token (base64 padding, base64url, an
# identifier) is a piece of something longer, not a key.
_GOES_ON = frozenset("=-_")

# detect-secrets detectors not used: entropy (see above) and public IP addresses,
# which are not credentials.
_LEFT_OUT = {"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector",
             "KeywordDetector", "PrivateKeyDetector", "ArtifactoryDetector"}


@dataclass(frozen=True, slots=True)
class OwnerPattern:
    name: str
    pattern: str


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str


class BadPattern(ValueError):
    """An owner's pattern that RE2 cannot compile, or that matches the empty text."""


def _slug(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


@cache
def _providers() -> tuple[tuple[str, re.Pattern[str], Any], ...]:
    """(kind, regex, plugin) for each of detect-secrets' provider regexes."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    found = []
    plugin_class: Any
    for secret_type, plugin_class in get_mapping_from_secret_type_to_class().items():
        if plugin_class.__name__ in _LEFT_OUT or not issubclass(plugin_class,
                                                                 RegexBasedDetector):
            continue
        plugin = plugin_class()
        for regex in plugin.denylist:
            found.append((_slug(secret_type), _linear(regex), plugin))
    return tuple(found)


def _linear(regex: re.Pattern[str]) -> Any:
    """The same expression on RE2 (matching time linear in the text: detect-secrets'
    npm and JWT rules are quadratic on hostile lines under Python's engine), or the
    Python one where RE2 cannot take it (look-behind; measured linear on hostile
    input: at most 7 ms for 20,000 characters)."""
    import re2

    if regex.flags & re.VERBOSE:
        return regex
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not regex.flags & re.IGNORECASE
    options.dot_nl = bool(regex.flags & re.DOTALL)
    try:
        return re2.compile(regex.pattern, options)
    except re2.error:
        return regex


@cache
def _keyword_rules() -> tuple[re.Pattern[str], tuple[tuple[re.Pattern[str], int, bool], ...]]:
    """detect-secrets' keyword rule: (cheap prefilter, (regex, value group, colon?))."""
    from detect_secrets.plugins import keyword as kw

    prefilter = re.compile(kw.DENYLIST_REGEX, re.IGNORECASE)
    rules = (
        (kw.FOLLOWED_BY_EQUAL_SIGNS_REGEX, 5, False),
        (kw.FOLLOWED_BY_COLON_EQUAL_SIGNS_REGEX, 4, False),
        (kw.FOLLOWED_BY_COLON_QUOTES_REQUIRED_REGEX, 5, False),
        # FOLLOWED_BY_QUOTES_AND_SEMICOLON (`private_key "x";`, C-like code) is left
        # out: 23 ms on one hostile 340-character window, for a form notes rarely use.
        (kw.FOLLOWED_BY_ARROW_FUNCTION_SIGN_QUOTES_REQUIRED_REGEX, 4, False),
        (kw.FOLLOWED_BY_COLON_REGEX, 4, True),
    )
    return prefilter, rules


_INDIRECT = re.compile(r"[\w.-]+[\[(]")


def _placeholder(value: str) -> bool:
    """A value that only stands for a secret: `<password>`, `${TOKEN}`, `$SECRET`,
    `****`, `abcdef` (detect-secrets' own heuristics), `os.environ["X"]`,
    `get_secret()`, or too short to be one."""
    from detect_secrets.filters import heuristic

    return (len(value) < 4 or heuristic.is_templated_secret(value)
            or heuristic.is_prefixed_with_dollar_sign(value)
            or heuristic.is_not_alphanumeric_string(value)
            or heuristic.is_sequential_string(value)
            or _INDIRECT.match(value) is not None or value.startswith("[redacted:"))


def _keyword_windows(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) windows around the keywords (password, secret, api_key, token…):
    one per keyword, skipping keywords inside the previous window's reach."""
    prefilter, _ = _keyword_rules()
    reach = -1
    for hit in prefilter.finditer(text):
        if hit.start() < reach:
            continue
        start = max(0, hit.start() - KEYWORD_BEFORE)
        line_start = text.rfind("\n", start, hit.start()) + 1
        line_end = text.find("\n", hit.start())
        end = min(hit.start() + KEYWORD_AFTER, len(text) if line_end < 0 else line_end)
        yield max(start, line_start), end
        reach = max(hit.end(), end - KEYWORD_AFTER // 4)


def _keywords(text: str) -> Iterable[Span]:
    _, rules = _keyword_rules()
    for low, high in _keyword_windows(text):
        window = text[low:high]
        for regex, group, colon in rules:
            at = 0
            while (match := regex.search(window, at)) is not None:
                start, end = match.span(group)
                at = max(end, match.start() + 1)
                quoted = start > 0 and window[start - 1] in "'\"`"
                value = window[start:end]
                if not quoted:
                    words = value.split()
                    value = words[0] if words else ""
                    end = start + len(value)
                    at = max(end, match.start() + 1)  # the next assignment on the line
                    if colon and (len(words) > 1 or value.isalpha()):
                        continue
                if value and not _placeholder(value):
                    yield Span(low + start, low + end, "password")


def _token(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a detector's match to the whole token it sits in (at most TOKEN_REACH
    characters each way)."""
    floor, ceiling = max(0, start - TOKEN_REACH), min(len(text), end + TOKEN_REACH)
    while start > floor and text[start - 1] in _TOKEN_CHARS_LEFT:
        start -= 1
    while end < ceiling and text[end] in _TOKEN_CHARS_RIGHT:
        end += 1
    while end > start + 1 and text[end - 1] == ".":
        end -= 1
    return start, end


def _tokens(text: str) -> Iterable[Span]:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    for kind, regex, plugin in _providers():
        for match in regex.finditer(text):
            group = 1 if regex.groups and match.start(1) > match.start() else 0
            start, end = _token(text, *match.span(group))
            if isinstance(plugin, JwtTokenDetector) and not plugin.is_formally_valid(
                    text[start:end]):
                continue
            yield Span(start, end, kind)
    for kind, regex in _extra():
        for match in regex.finditer(text):
            start, end = match.span(1) if regex.groups else _token(text, *match.span())
            yield Span(start, end, kind)


@cache
def _extra() -> tuple[tuple[str, Any], ...]:
    return tuple((kind, _linear(regex)) for kind, regex in _EXTRA)


@cache
def _aws_rules() -> tuple[Any, Any]:
    return (_linear(re.compile(_AWS_RUN)), _linear(re.compile(_AWS_KEY_ID)))


def _aws_secret_shaped(value: str) -> bool:
    """Random base64 has both cases and nearly always a digit, `/` or `+`; a hex hash,
    a word or a CamelCase name has not, and a path has more than a few slashes."""
    return (any(c.isupper() for c in value) and any(c.islower() for c in value)
            and any(c.isdigit() or c in "/+" for c in value) and value.count("/") <= 4)


def _aws_secrets(text: str) -> Iterable[Span]:
    """AWS secret access keys written in prose (see the module's docstring). Linear:
    one RE2 pass for the runs, one for the key ids, a bounded window per run."""
    runs_rule, key_id_rule = _aws_rules()
    runs = [(start, end) for start, end in (m.span() for m in runs_rule.finditer(text))
            if end - start == AWS_SECRET_CHARS
            and (start == 0 or text[start - 1] not in _GOES_ON)
            and (end == len(text) or text[end] not in _GOES_ON)
            and _aws_secret_shaped(text[start:end])]
    if not runs:
        return
    key_ids = [m.span() for m in key_id_rule.finditer(text)]
    starts = [start for start, _ in key_ids]
    for start, end in runs:
        before = text[max(0, start - AWS_SECRET_AFTER_KEYWORD - len("secret")):start]
        at = bisect.bisect_left(starts, start)  # the first key id after the run
        near = (at < len(key_ids) and key_ids[at][0] - end <= AWS_SECRET_NEAR_KEY_ID) or (
            at > 0 and start - key_ids[at - 1][1] <= AWS_SECRET_NEAR_KEY_ID)
        if near or _SECRET_WORD.search(before):
            yield Span(start, end, "aws-secret-access-key")


def _owner(text: str, patterns: Sequence[OwnerPattern]) -> Iterable[Span]:
    for item in patterns:
        for match in compile_pattern(item.pattern).finditer(text):
            if match.end() > match.start():
                yield Span(match.start(), match.end(), f"custom-{_slug(item.name)}")


def find(text: str, patterns: Sequence[OwnerPattern] = ()) -> list[Span]:
    """Every credential in `text`, in order; overlapping finds are merged into one span
    (kind of the earliest)."""
    spans = [Span(*match.span(), "private-key") for match in _PEM.finditer(text)]
    spans.extend(Span(*match.span(), "private-key") for match in _PUTTY.finditer(text))
    spans.extend(_tokens(text))
    spans.extend(_aws_secrets(text))
    spans.extend(_keywords(text))
    spans.extend(_owner(text, patterns))
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Span(last.start, max(last.end, span.end), last.kind)
        else:
            merged.append(span)
    return merged


def redact(text: str, spans: Sequence[Span]) -> str:
    """`text` with each span replaced by its marker."""
    parts, at = [], 0
    for span in spans:
        parts.append(text[at:span.start])
        parts.append(MARKER.format(kind=span.kind))
        at = span.end
    parts.append(text[at:])
    return "".join(parts)


def kinds(spans: Iterable[Span]) -> dict[str, int]:
    """How many of each kind: what callers are told (never the values)."""
    return dict(sorted(Counter(span.kind for span in spans).items()))


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Any:
    """An owner's pattern compiled with RE2; `BadPattern` when it cannot be, or when it
    matches the empty text (it would match everywhere)."""
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        raise BadPattern(str(exc)) from None
    if compiled.fullmatch("") is not None:
        raise BadPattern("it matches empty text")
    return compiled
