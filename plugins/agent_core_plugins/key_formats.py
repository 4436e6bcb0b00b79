"""The key formats :mod:`agent_core_plugins.redact` masks without configuration, and the search that finds them.

Where the formats come from. The prefixes, key characters and lengths are
those of gitleaks' rule set (``config/gitleaks.toml`` in gitleaks/gitleaks,
v8.30.0), restated here as prefix rules; each row of :data:`KEY_FORMATS`
names its gitleaks rule ids. We take the rules whose key starts with a fixed
prefix of its own, for the services an agent's user is likely to hold keys
of. Rules that need a keyword before the key (``"twitter": ...``), and
prefixes starting with a letter that ends many words (``hf_``, ``npm_``,
``dop_v1_``), are left out: the scan holds back a chunk's last characters
when they could start a prefix, and such a letter would hold back many
chunks. For the same reason a JWT is found at the ``J`` of ``eyJ`` and a
Stripe ``rk_`` key at its ``k_``: they show as ``ey[REDACTED]`` and
``r[REDACTED]``, and a chunk ending in ``e`` or ``r`` goes out at once. The
bearer rule follows RFC 6750's ``b64token``.

A key must also look random (a digit, or both upper and lower case), so prose
such as ``task-force-and-the-rest`` or ``bearer authentication`` stays
readable; except an AWS key id (upper case letters and digits, often no
digit) and a JWT, recognised by its shape (``eyJ<header>.ey<payload>.``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["KEY_FORMATS", "PREFIX_SEARCH", "RULES", "KeyFormat", "KeyRule", "find_prefix"]

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_DIGITS = "0123456789"
_ALNUM = _UPPER + _UPPER.lower() + _DIGITS
_HEX = _DIGITS + "abcdefABCDEF"
#: every character Python counts as whitespace (none lies above U+3000)
_SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
_JWT_REST = re.compile(r"[\w-]{16,}\.ey[\w-]{17,}\.", re.ASCII)


def _looks_random(run: str) -> bool:
    return any(c.isdigit() for c in run) or (run.lower() != run and run.upper() != run)


def _jwt_shaped(run: str) -> bool:
    """After the ``J`` of ``eyJ``: the rest of a header, a dot, a payload (``ey...``), the dot before the signature."""
    return _JWT_REST.match(run) is not None


class KeyFormat(NamedTuple):
    """One row of :data:`KEY_FORMATS`: the keys that start with one of ``prefixes``.

    A key is a prefix, then (with ``lead``) one or more of those characters,
    then a run of ``chars`` at least ``need`` long that passes ``check``.
    ``keep``: the prefix (and lead) stays visible before ``[REDACTED]``.
    """

    what: str
    source: str  # the gitleaks rule ids (or the RFC) this row restates
    prefixes: tuple[str, ...]
    chars: str
    need: int
    check: Callable[[str], bool] | None = _looks_random
    keep: bool = False
    lead: str = ""


_CASES = tuple(
    "".join(c.upper() if i >> k & 1 else c for k, c in enumerate("bearer")) for i in range(64)
)

#: The key formats masked without configuration (see the module docstring for their source).
KEY_FORMATS: tuple[KeyFormat, ...] = (
    KeyFormat("OpenAI and Anthropic API keys (sk-proj-, sk-svcacct-, sk-admin-, sk-ant-...)",
              "openai-api-key, anthropic-api-key, anthropic-admin-api-key (loosened to any sk- key)",
              ("sk-",), _ALNUM + "_-", 16),
    KeyFormat("AWS access key ids (long-term, STS temporary, bearer, context)", "aws-access-token",
              ("AKIA", "ASIA", "ABIA", "ACCA"), _UPPER + _DIGITS, 16, None),
    KeyFormat("Amazon Bedrock long-lived API keys", "aws-amazon-bedrock-api-key-long-lived",
              ("ABSK",), _ALNUM + "+/=", 109),
    KeyFormat("GitHub tokens (personal, OAuth, user-to-server, server-to-server, refresh)",
              "github-pat, github-oauth, github-app-token, github-refresh-token",
              ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _ALNUM, 30),
    KeyFormat("GitHub fine-grained personal access tokens", "github-fine-grained-pat",
              ("github_pat_",), _ALNUM + "_", 82),
    KeyFormat("GitLab tokens", "gitlab-pat, gitlab-deploy-token, gitlab-runner-authentication-token, "
              "gitlab-feed-token, gitlab-scim-token, gitlab-feature-flag-client-token, gitlab-cicd-job-token",
              ("glpat-", "gldt-", "glrt-", "glft-", "glsoat-", "glffct-", "glcbt-"), _ALNUM + "_-", 20),
    KeyFormat("GitLab incoming mail, agent, OAuth app and pipeline trigger tokens",
              "gitlab-incoming-mail-token, gitlab-kubernetes-agent-token, gitlab-oauth-app-secret, gitlab-ptt",
              ("glimt-", "glagent-", "gloas-", "glptt-"), _ALNUM + "_-", 25),
    KeyFormat("Slack tokens", "slack-bot-token, slack-user-token, slack-app-token, slack-legacy-*, "
              "slack-config-access-token, slack-config-refresh-token",
              ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxo-", "xoxs-", "xoxe-", "xoxe.xoxb-", "xoxe.xoxp-", "xapp-"),
              _ALNUM + "-", 10),
    # rk_ keys are found at their k: a chunk ending in "r" (most words) is not held back for them,
    # and the r stays visible (r[REDACTED]); "s" is held anyway, so sk_ keys are masked whole
    KeyFormat("Stripe secret and restricted keys", "stripe-access-token",
              ("sk_live_", "sk_test_", "sk_prod_", "k_live_", "k_test_", "k_prod_"), _ALNUM, 10),
    KeyFormat("Google API keys", "gcp-api-key", ("AIza",), _ALNUM + "_-", 35),
    # found at the J of eyJ, for the same reason as rk_ above: they show as ey[REDACTED]
    KeyFormat("JSON Web Tokens, bare", "jwt", ("J",), _ALNUM + "_-.=", 37, _jwt_shaped),
    KeyFormat("SendGrid API keys", "sendgrid-api-token", ("SG.",), _ALNUM + "_-.=", 66),
    KeyFormat("Brevo (Sendinblue) API keys", "sendinblue-api-token", ("xkeysib-",), _ALNUM + "-", 81),
    KeyFormat("Shopify tokens", "shopify-access-token, shopify-custom-access-token, "
              "shopify-private-app-access-token, shopify-shared-secret",
              ("shpat_", "shpca_", "shppa_", "shpss_"), _HEX, 32),
    KeyFormat("Sentry user tokens", "sentry-user-token", ("sntryu_",), _HEX, 64),
    KeyFormat("Square access tokens", "square-access-token", ("sq0atp-",), _ALNUM + "_-", 22),
    KeyFormat("Heroku API keys (v2)", "heroku-api-key-v2", ("HRKU-AA",), _ALNUM + "_-", 58),
    KeyFormat("Alibaba Cloud access key ids", "alibaba-access-key-id", ("LTAI",), _ALNUM, 20),
    KeyFormat("age secret keys", "age-secret-key", ("AGE-SECRET-KEY-1",), "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    KeyFormat("the token after Bearer (any case, any whitespace)", "RFC 6750 b64token",
              _CASES, _ALNUM + "-._~+/=", 8, keep=True, lead=_SPACES),
)


class KeyRule(NamedTuple):
    """How the key after one prefix is read (a row of :data:`KEY_FORMATS`, in sets for the scan)."""

    chars: frozenset[str]
    need: int
    check: Callable[[str], bool] | None
    keep: bool
    lead: frozenset[str]


#: prefix -> how the key after it is read
RULES: dict[str, KeyRule] = {
    p: KeyRule(frozenset(f.chars), f.need, f.check, f.keep, frozenset(f.lead))
    for f in KEY_FORMATS for p in f.prefixes
}


def _finder(words: list[str]) -> str:
    """A regex finding any of ``words``, or the start of one at the very end of the text.

    One alternation per first character, each of plain literals: the search
    skips a position whose character starts no word, and at the others the
    regex engine rejects an alternative on its first character without
    entering it, so a hundred prefixes cost about what a handful did. (A
    trie of nested groups is twice as slow in ``re``, a single flat
    alternation five times.) No word here is the start of another.
    """
    by_first: dict[str, list[str]] = {}
    for w in words:
        by_first.setdefault(w[0], []).append(w[1:])
    alts = []
    for first, rests in sorted(by_first.items()):
        starts = {r[:i] for r in rests for i in range(len(r))}
        inner = [re.escape(r) for r in sorted(rests, key=len, reverse=True)]
        inner += [re.escape(r) + r"\Z" for r in sorted(starts, key=len, reverse=True)]
        alts.append(re.escape(first) + "(?:" + "|".join(inner) + ")")
    return "|".join(alts)


#: a key prefix, or the start of one at the very end: only then is there work to do
PREFIX_SEARCH = re.compile(_finder(sorted(RULES)))
#: ``PREFIX_SEARCH.search``, bound once: the redactor calls it on every chunk, and a method looked up
#: on an imported object costs a bound-method object per call
find_prefix = PREFIX_SEARCH.search
