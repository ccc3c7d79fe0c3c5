"""PII redaction (seed 002 §8.10): find personal data in text, replace it with typed
placeholders before the text is stored long-term or sent to a provider.

Types: ``EMAIL``, ``PHONE`` (international ``+CC ...``, North-American, mainland-China
mobile ``1[3-9]x xxxx xxxx`` with or without ``+86``), ``CARD`` (13–19 digits that pass the
Luhn check), ``SSN`` (US, ``AAA-GG-SSSS`` with the never-issued areas excluded), ``CN_ID``
(18-digit PRC resident id: a real birth date and the ISO 7064 MOD 11-2 check digit),
``IP`` (v4 and v6, validated by :mod:`ipaddress`), ``SECRET`` (API keys with well-known
prefixes, private-key blocks, JWTs, values assigned to ``password=`` / ``api_key:`` /
``密码：``, and high-entropy tokens).

Each detector is a candidate regex plus a validator, so look-alikes are left alone: an
order or tracking number (the words before it say so), a date, a version string
(``v1.2.3.4``), a git or SHA-256 hash in prose (hex only, one case), a UUID.

:func:`redact` returns the new text and the findings; the same value gets the same
placeholder within one text (``[EMAIL_1]`` twice), so the text stays readable.
:class:`PIIPolicy` is what a tenant chose: ``redact`` or ``keep``, which types, and whether
the original may be kept beside the redacted text (``keep_raw``; off by default).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from enum import StrEnum
from typing import Any

from ..errors import ValidationError
from ..records import Content, MemoryRecord
from ..text import content_hash

__all__ = [
    "PIIFinding",
    "PIIPolicy",
    "PIIRedactor",
    "PIIType",
    "Redaction",
    "find_pii",
    "luhn_ok",
    "prc_id_ok",
    "redact",
    "redact_json",
]


class PIIType(StrEnum):
    EMAIL = "EMAIL"
    PHONE = "PHONE"
    CARD = "CARD"
    SSN = "SSN"
    CN_ID = "CN_ID"
    IP = "IP"
    SECRET = "SECRET"


@dataclass(frozen=True, slots=True)
class PIIFinding:
    type: PIIType
    start: int
    end: int
    value: str


@dataclass(frozen=True, slots=True)
class Redaction:
    text: str
    findings: tuple[PIIFinding, ...]
    placeholders: Mapping[str, str] = field(default_factory=dict)  # placeholder -> value

    @property
    def changed(self) -> bool:
        return bool(self.findings)


# --- validators ------------------------------------------------------------------------------
def luhn_ok(digits: str) -> bool:
    """The Luhn checksum of payment card numbers."""
    if not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def prc_id_ok(value: str) -> bool:
    """An 18-character PRC resident id: region, a real birth date, ISO 7064 check digit."""
    v = value.upper()
    if len(v) != 18 or not v[:17].isdigit() or not (v[17].isdigit() or v[17] == "X"):
        return False
    if v[0] not in "123456789":
        return False
    try:
        born = date(int(v[6:10]), int(v[10:12]), int(v[12:14]))
    except ValueError:
        return False
    if not 1900 <= born.year <= 2100:
        return False
    total = sum(int(c) * w for c, w in zip(v[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == v[17]


def _ssn_ok(value: str) -> bool:
    area, group, serial = value[:3], value[4:6], value[7:]
    if area in ("000", "666") or area.startswith("9"):
        return False
    return group != "00" and serial != "0000"


def _entropy(token: str) -> float:
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _high_entropy(token: str) -> bool:
    """A random-looking credential: long, mixed case and digits, no long words in it.

    Hashes printed in prose (hex, a single case) and UUIDs are not secrets."""
    core = token.strip("=")
    if len(core) < 24 or len(core) > 512:
        return False
    if re.fullmatch(r"[0-9a-f\-]+|[0-9A-F\-]+", core):
        return False
    lower = sum(c.islower() for c in core)
    upper = sum(c.isupper() for c in core)
    digits = sum(c.isdigit() for c in core)
    if lower < 2 or upper < 2 or digits < 2:
        return False
    if re.search(r"[A-Za-z]{12,}", core) and digits < 4:
        return False  # an identifier or a word run, not a random token
    return _entropy(core) >= 4.0


# --- context --------------------------------------------------------------------------------
# Words just before a number that say it is not a phone/card/id (order, tracking, invoice...).
_NOT_PERSONAL = re.compile(
    r"(order|invoice|tracking|shipment|ticket|booking|reference|ref|serial|sku|batch|build|"
    r"version|model|part|po|case|transaction|txn|isbn|订单|单号|编号|运单|快递|工单|流水|发票|"
    r"版本|批次|序列号|型号|交易)"
    r"\s*(no\.?|number|num|#|id|号|号码)?\s*[:：#=]?\s*$",
    re.IGNORECASE,
)


def _negated_by_context(text: str, start: int) -> bool:
    return bool(_NOT_PERSONAL.search(text[max(0, start - 24) : start]))


# --- detectors ------------------------------------------------------------------------------
# Look-arounds use ASCII classes: a Chinese character right before or after a number or
# an address ("邮箱是a@b.com", "IP是10.1.2.3") is a boundary, not part of it.
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9_.+'\-])[A-Za-z0-9][A-Za-z0-9._%+'\-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}"
    r"[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}"
    r"(?![A-Za-z0-9\-])"
)
_CN_MOBILE = re.compile(r"(?<![\d+])(?:(?:\+|00)?86[\s\-]?)?1[3-9]\d(?:[\s\-]?\d{4}){2}(?!\d)")
_INTL_PHONE = re.compile(
    r"(?<![A-Za-z0-9_+])(?:\+|00)[1-9]\d{0,2}(?:[\s.\-]?\(?\d{1,5}\)?){2,6}(?!\d)"
)
_NA_PHONE = re.compile(
    r"(?<![A-Za-z0-9_+])(?:\(\d{3}\)\s?|\d{3}[\s.\-])\d{3}[\s.\-]\d{4}(?![\d\-])"
)
_CARD = re.compile(r"(?<![\d\-])\d(?:[ \-]?\d){12,18}(?![\d\-])")
_SSN = re.compile(r"(?<![\d\-])\d{3}-\d{2}-\d{4}(?![\d\-])")
_CN_ID = re.compile(r"(?<![\dA-Za-z])\d{17}[\dXx](?![\dA-Za-z])")
_IPV4 = re.compile(r"(?<![A-Za-z0-9_.])(?:\d{1,3}\.){3}\d{1,3}(?![A-Za-z0-9_]|\.\d)")
_IPV6 = re.compile(
    r"(?<![A-Za-z0-9_:.])(?=[0-9A-Fa-f:]*:[0-9A-Fa-f:]*:)[0-9A-Fa-f:]{2,39}(?:%\w+)?"
    r"(?:(?<=:)\d{1,3}(?:\.\d{1,3}){3})?(?![A-Za-z0-9_:])"
)
_VERSION_BEFORE = re.compile(
    r"(?<![A-Za-z])(v|version|ver\.?|release|版本|版本号)\s*[:：]?\s*$", re.IGNORECASE
)

_SECRET_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"sk-(?:proj-|ant-(?:api\d\d-)?|live-)?[A-Za-z0-9_\-]{20,}"
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}"
    r"|glpat-[A-Za-z0-9_\-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{35}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|npm_[A-Za-z0-9]{36}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
    r")(?![A-Za-z0-9_\-])"
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z]+ )?PRIVATE KEY-----"
)
_ASSIGNED_SECRET = re.compile(
    r"(?:password|passwd|pwd|passphrase|secret|api[_\- ]?key|access[_\- ]?key|auth[_\- ]?token|"
    r"token|密码|口令|密钥|令牌)\s*(?:is|为|是)?\s*[:：=]\s*[\"']?(?P<v>[^\s\"'，。,;；]{6,})",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"(?<![A-Za-z0-9_/+\-])[A-Za-z0-9+/_\-]{24,}={0,2}(?![A-Za-z0-9_/+\-])")


def _digits(s: str) -> str:
    return re.sub(r"\D", "", s)


def _emails(text: str) -> Iterable[tuple[int, int]]:
    for m in _EMAIL.finditer(text):
        yield m.span()


def _phones(text: str) -> Iterable[tuple[int, int]]:
    for rx in (_CN_MOBILE, _INTL_PHONE, _NA_PHONE):
        for m in rx.finditer(text):
            n = len(_digits(m.group()))
            if not 7 <= n <= 15 or _negated_by_context(text, m.start()):
                continue
            if rx is _NA_PHONE and m.group()[0] in "01":
                continue  # NANP area codes start with 2-9
            yield m.span()


def _cards(text: str) -> Iterable[tuple[int, int]]:
    for m in _CARD.finditer(text):
        d = _digits(m.group())
        if not 13 <= len(d) <= 19 or len(set(d)) == 1 or not luhn_ok(d):
            continue
        # Card networks issue from 2-6 (Mastercard 2/5, Amex/JCB/Diners 3, Visa 4,
        # Discover/UnionPay 6); only Visa ever issued 13 digits. Timestamps and barcodes
        # that pass Luhn by chance (1 in 10) mostly fall outside.
        if d[0] not in "23456" or (len(d) == 13 and d[0] != "4"):
            continue
        if _negated_by_context(text, m.start()):
            continue
        # ungrouped 18 digits that form a valid resident id are an id, not a card
        if len(d) == 18 and prc_id_ok(m.group()):
            continue
        yield m.span()


def _ssns(text: str) -> Iterable[tuple[int, int]]:
    for m in _SSN.finditer(text):
        if _ssn_ok(m.group()) and not _negated_by_context(text, m.start()):
            yield m.span()


def _cn_ids(text: str) -> Iterable[tuple[int, int]]:
    for m in _CN_ID.finditer(text):
        if prc_id_ok(m.group()):
            yield m.span()


def _ips(text: str) -> Iterable[tuple[int, int]]:
    for m in _IPV4.finditer(text):
        if _VERSION_BEFORE.search(text[max(0, m.start() - 12) : m.start()]):
            continue
        try:
            ipaddress.IPv4Address(m.group())
        except ValueError:
            continue
        yield m.span()
    for m in _IPV6.finditer(text):
        value = m.group().split("%")[0]
        if value.count(":") < 2 or not re.search(r"[0-9A-Fa-f]", value):
            continue
        if "::" not in value and value.count(":") < 7:
            continue  # "12:30:45" is a time, not an address
        try:
            ipaddress.IPv6Address(value)
        except ValueError:
            continue
        yield m.span()


def _secrets(text: str) -> Iterable[tuple[int, int]]:
    for rx in (_SECRET_PREFIXED, _PRIVATE_KEY):
        for m in rx.finditer(text):
            yield m.span()
    for m in _ASSIGNED_SECRET.finditer(text):
        yield m.span("v")
    for m in _TOKEN.finditer(text):
        if _high_entropy(m.group()):
            yield m.span()


_DETECTORS: tuple[tuple[PIIType, Callable[[str], Iterable[tuple[int, int]]]], ...] = (
    # Order matters for overlaps: the first type to claim a span keeps it.
    (PIIType.SECRET, _secrets),
    (PIIType.EMAIL, _emails),
    (PIIType.CN_ID, _cn_ids),
    (PIIType.CARD, _cards),
    (PIIType.SSN, _ssns),
    (PIIType.IP, _ips),
    (PIIType.PHONE, _phones),
)

ALL_TYPES: frozenset[PIIType] = frozenset(PIIType)
# Cheap pre-checks: most texts hold none of these and skip the detector altogether
# (``min digits``, then a regex that any match must contain).
_SECRET_HINT = re.compile(
    r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{20}|密码|口令|密钥|令牌|passw|pwd|secret|key|token|PRIVATE",
    re.IGNORECASE,
)
_MAYBE: dict[PIIType, tuple[int, re.Pattern[str]]] = {
    PIIType.SECRET: (0, _SECRET_HINT),
    PIIType.EMAIL: (0, re.compile("@")),
    PIIType.CN_ID: (17, re.compile(r"\d{17}")),
    PIIType.CARD: (13, re.compile(r"\d{4}")),
    PIIType.SSN: (9, re.compile(r"\d-\d\d-\d")),
    PIIType.IP: (2, re.compile(r"\d\.\d|:")),
    PIIType.PHONE: (7, re.compile(r"\d\d")),
}
_DIGIT = re.compile(r"\d")
_TYPE_NAMES = "|".join(t.value for t in PIIType)
_PLACEHOLDER = re.compile(rf"\[(?:{_TYPE_NAMES})_\d+\]")
_NUMBERED = re.compile(rf"\[({_TYPE_NAMES})_(\d{{1,9}})\]")


def find_pii(text: str, types: Iterable[PIIType | str] = ALL_TYPES) -> list[PIIFinding]:
    """Every PII span in ``text`` of the given types, left to right, never overlapping."""
    wanted = {PIIType(t) for t in types}
    taken: list[tuple[int, int]] = []
    found: list[PIIFinding] = []
    n_digits = len(_DIGIT.findall(text))
    for kind, detect in _DETECTORS:
        min_digits, hint = _MAYBE[kind]
        if kind not in wanted or n_digits < min_digits or not hint.search(text):
            continue
        for start, end in sorted(set(detect(text))):
            if start >= end or any(start < e and s < end for s, e in taken):
                continue
            if _PLACEHOLDER.fullmatch(text, start, end):
                continue  # our own placeholder ("password: [SECRET_1]"): already redacted
            taken.append((start, end))
            found.append(PIIFinding(kind, start, end, text[start:end]))
    found.sort(key=lambda f: f.start)
    return found


def redact(text: str, types: Iterable[PIIType | str] = ALL_TYPES) -> Redaction:
    """``text`` with each finding replaced by ``[TYPE_n]`` (same value, same n)."""
    findings = find_pii(text, types)
    if not findings:
        return Redaction(text, ())
    names: dict[tuple[PIIType, str], str] = {}
    counters: Counter[PIIType] = Counter()
    for m in _NUMBERED.finditer(text):  # placeholders already there keep their numbers
        kind = PIIType(m.group(1))
        counters[kind] = max(counters[kind], int(m.group(2)))
    out: list[str] = []
    last = 0
    for f in findings:
        key = (f.type, f.value)
        if key not in names:
            counters[f.type] += 1
            names[key] = f"[{f.type.value}_{counters[f.type]}]"
        out.append(text[last : f.start])
        out.append(names[key])
        last = f.end
    out.append(text[last:])
    return Redaction("".join(out), tuple(findings), {v: k[1] for k, v in names.items()})


def redact_json(
    value: Any, types: Iterable[PIIType | str] = ALL_TYPES, *, keys: bool = False
) -> tuple[Any, list[PIIFinding]]:
    """Every string inside a JSON value redacted. Mapping keys are kept (field names of
    structured content) unless ``keys``: in metadata the caller writes the keys too."""
    if isinstance(value, str):
        result = redact(value, types)
        return result.text, list(result.findings)
    if isinstance(value, Mapping):
        found: list[PIIFinding] = []
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = k
            if keys and isinstance(k, str):
                named = redact(k, types)
                found.extend(named.findings)
                name = named.text
                while name in out:  # two keys redacted to one placeholder: keep both
                    name += "'"
            out[name], more = redact_json(v, types, keys=keys)
            found.extend(more)
        return (out, found) if found else (value, [])
    if isinstance(value, list | tuple):
        found = []
        items = []
        for v in value:
            new, more = redact_json(v, types, keys=keys)
            items.append(new)
            found.extend(more)
        return (items, found) if found else (value, [])
    return value, []


# Metadata the redactor itself writes: the counts, and the raw text a tenant may keep.
_OWN_KEYS = frozenset({"pii", "pii_raw"})


# --- per-tenant policy -------------------------------------------------------------------------
class PIIMode(StrEnum):
    REDACT = "redact"
    KEEP = "keep"


@dataclass(frozen=True, slots=True)
class PIIPolicy:
    """What one tenant chose. ``keep_raw`` stores the original text beside the redacted one
    (in the record's metadata, never indexed or embedded); only for tenants allowed to."""

    mode: PIIMode | str = PIIMode.REDACT
    types: frozenset[PIIType] = ALL_TYPES
    keep_raw: bool = False

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", PIIMode(self.mode))
        except ValueError:
            raise ValidationError(f"PII mode {self.mode!r} is not one of: redact, keep") from None
        try:
            object.__setattr__(self, "types", frozenset(PIIType(t) for t in self.types))
        except ValueError as exc:
            allowed = ", ".join(t.value for t in PIIType)
            raise ValidationError(f"unknown PII type ({exc}); use some of: {allowed}") from None
        if not isinstance(self.keep_raw, bool):
            raise ValidationError("keep_raw must be True or False")


@dataclass(frozen=True, slots=True)
class PIIRedactor:
    """Policies by tenant (``default`` for the others). ``Memory(..., pii=...)`` takes one
    of these, a single :class:`PIIPolicy` or ``"redact"`` / ``"keep"``."""

    default: PIIPolicy = field(default_factory=PIIPolicy)
    tenants: Mapping[str, PIIPolicy] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.default, PIIPolicy):
            raise ValidationError("PIIRedactor.default must be a PIIPolicy")
        for tenant, policy in self.tenants.items():
            if not isinstance(tenant, str) or not isinstance(policy, PIIPolicy):
                raise ValidationError("PIIRedactor.tenants maps tenant ids to PIIPolicy")

    @classmethod
    def of(cls, value: PIIRedactor | PIIPolicy | str | None) -> PIIRedactor | None:
        if value is None or isinstance(value, PIIRedactor):
            return value
        if isinstance(value, PIIPolicy):
            return cls(value)
        if isinstance(value, str):
            return cls(PIIPolicy(mode=value))
        raise ValidationError(
            "pii must be 'redact', 'keep', a PIIPolicy or a PIIRedactor, got "
            f"{type(value).__name__}"
        )

    def policy_for(self, tenant: str) -> PIIPolicy:
        return self.tenants.get(tenant, self.default)

    def apply(self, tenant: str, text: str) -> tuple[str, dict[str, object]]:
        """The text to store and the metadata to add (counts by type; the raw original
        only where the tenant allows it)."""
        policy = self.policy_for(tenant)
        if policy.mode is PIIMode.KEEP:
            return text, {}
        result = redact(text, policy.types)
        if not result.changed:
            return text, {}
        meta: dict[str, object] = {
            "pii": dict(Counter(f.type.value for f in result.findings)),
        }
        if policy.keep_raw:
            meta["pii_raw"] = text
        return result.text, meta

    def redact_query(self, tenant: str, text: str) -> str:
        """A query as the tenant's policy lets it be embedded, cached and matched: redacted
        (so it matches the placeholders stored records hold) unless the tenant keeps PII."""
        policy = self.policy_for(tenant)
        if policy.mode is PIIMode.KEEP:
            return text
        return redact(text, policy.types).text

    def redact_record(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` as it may be stored: its text, summary, every string of its
        structured content, its tags and its metadata (keys and values) redacted by its
        tenant's policy; ``metadata["pii"]`` adds the
        counts, ``pii_raw`` keeps the original text where the tenant allows it. Returns
        ``record`` itself when nothing changes (redacting twice changes nothing)."""
        policy = self.policy_for(record.tenant)
        if policy.mode is PIIMode.KEEP:
            return record
        content = record.content
        text = redact(content.raw, policy.types)
        summary = redact(content.summary, policy.types) if content.summary else None
        structured, in_structured = redact_json(content.structured, policy.types)
        tags, in_tags = redact_json(list(record.tags), policy.types)
        user_meta = {k: v for k, v in record.metadata.items() if k not in _OWN_KEYS}
        meta, in_meta = redact_json(user_meta, policy.types, keys=True)
        findings = [
            *text.findings,
            *(summary.findings if summary else ()),
            *in_structured,
            *in_tags,
            *in_meta,
        ]
        if not findings:
            if "pii_raw" in record.metadata and not policy.keep_raw:  # an import, say
                return replace(
                    record, metadata={k: v for k, v in record.metadata.items() if k != "pii_raw"}
                )
            return record
        counts: Counter[str] = Counter(f.type.value for f in findings)
        previous = record.metadata.get("pii")
        if isinstance(previous, Mapping):
            counts.update(
                {
                    str(k): int(v)
                    for k, v in previous.items()
                    if isinstance(v, int) and not isinstance(v, bool)
                }
            )
        own = {k: v for k, v in record.metadata.items() if k in _OWN_KEYS}
        metadata: dict[str, Any] = {**meta, **own, "pii": dict(counts)}
        if policy.keep_raw and text.changed:
            metadata["pii_raw"] = content.raw
        elif not policy.keep_raw:
            metadata.pop("pii_raw", None)
        new_content = Content(text.text, summary.text if summary else content.summary, structured)
        return replace(
            record,
            content=new_content,
            tags=tuple(dict.fromkeys(tags)),
            metadata=metadata,
            content_hash=content_hash(text.text),
        )

    def redact_value(self, tenant: str, value: Any) -> Any:
        """Any JSON value a user wrote (an audit reason, its details) as the tenant's policy
        lets it be stored: every string redacted, mapping keys included."""
        policy = self.policy_for(tenant)
        if policy.mode is PIIMode.KEEP:
            return value
        return redact_json(value, policy.types, keys=True)[0]
