"""Secret masking: a corpus of fake but format-valid secrets must be masked, and
ordinary technical prose must be left (almost) alone.

The fake secrets are assembled at run time from a seeded RNG, never written out
literally, so no file in the repository looks like a live credential to a push scanner.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from pathlib import Path

import pytest

from recall.masking import MASK, find_secrets, mask_secrets

PROSE = Path(__file__).parent / "fixtures" / "secrets" / "prose.txt"
MAX_FALSE_POSITIVE_RATE = 0.05

UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
LOWER_HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
PASSWORD_CHARS = ALNUM + "!*-_~"


@dataclass
class Case:
    kind: str
    line: str  # the secret inside a realistic sentence or config line
    random_part: str  # what must not survive masking, not even 8 characters of it
    token: str = ""  # set when the secret has a shape of its own (found with no keyword near)


def _b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def build_corpus(seed: int = 20261001) -> list[Case]:
    rng = random.Random(seed)

    def r(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def pw() -> str:  # a password with at least one letter and one digit
        return r(string.ascii_letters, 6) + r(string.digits, 2) + r(PASSWORD_CHARS, 8)

    cases: list[Case] = []

    def add(kind: str, template: str, random_part: str, secret: str | None = None) -> None:
        value = secret if secret is not None else random_part
        cases.append(Case(kind, template.format(s=value), random_part))

    def prefixed(kind: str, template: str, prefix: str, body: str) -> None:
        cases.append(Case(kind, template.format(s=prefix + body), body, prefix + body))

    prefixed("aws-access-key-id", "aws_access_key_id = {s}", "AK" + "IA", r(UPPER_DIGITS, 16))
    add("aws-secret-key", "aws_secret_access_key = {s}", r(B64, 40))
    add("aws-secret-key", 'AWS_SECRET_ACCESS_KEY="{s}" aws s3 ls', r(B64, 40))
    prefixed("anthropic", "I set the key to {s} and restarted the server.", "sk-" + "ant-api03-",
             r(URLSAFE, 93) + "AA")
    prefixed("openai", "The old key {s} was revoked yesterday.", "s" + "k-", r(ALNUM, 48))
    prefixed("openai", "OPENAI_API_KEY: {s}", "sk-" + "proj-", r(URLSAFE, 156))
    prefixed("github", "git clone https://{s}@github.com/acme/app.git", "gh" + "p_", r(ALNUM, 36))
    prefixed("github", "Fine-grained PAT for CI: {s}", "github" + "_pat_", r(ALNUM, 22) + "_" + r(ALNUM, 59))
    prefixed("github", "Authorization: token {s}", "gh" + "o_", r(ALNUM, 36))
    prefixed("github", "the app installation token {s} expires in 1h", "gh" + "s_", r(ALNUM, 36))
    prefixed("gitlab", "GITLAB_TOKEN={s} glab mr list", "gl" + "pat-", r(URLSAFE, 20))
    prefixed("slack", "SLACK_BOT_TOKEN is {s} for the release bot", "xo" + "xb-",
             r(string.digits, 12) + "-" + r(string.digits, 13) + "-" + r(ALNUM, 24))
    prefixed("slack", "user token {s}", "xo" + "xp-", r(string.digits, 11) + "-" + r(string.digits, 12) + "-"
             + r(string.digits, 13) + "-" + r(LOWER_HEX, 32))
    hook = "T" + r(UPPER_DIGITS, 8) + "/B" + r(UPPER_DIGITS, 10) + "/" + r(ALNUM, 24)
    add("slack-webhook", "curl -X POST https://hooks.slack.com/services/{s} -d @msg.json", hook)
    prefixed("google-api-key", "maps key {s} restricted to our referrer", "AI" + "za", r(URLSAFE, 35))
    prefixed("google-oauth", '"client_secret": "{s}",', "GOC" + "SPX-", r(URLSAFE, 28))
    prefixed("stripe", "stripe.api_key = '{s}'", "sk" + "_live_", r(ALNUM, 99))
    prefixed("stripe", "restricted key {s} for the billing job", "rk" + "_live_", r(ALNUM, 24))
    prefixed("stripe", "test mode: {s}", "sk" + "_test_", r(ALNUM, 24))
    header = _b64url({"alg": "HS256", "typ": "JWT"})
    payload = _b64url({"sub": r(string.digits, 10), "name": "Alice", "iat": 1790000000})
    sig = r(URLSAFE, 43)
    jwt = header + "." + payload + "." + sig
    cases.append(Case("jwt", f"Cookie: session={jwt}; Path=/", payload + "." + sig, jwt))
    pem_kinds = (("RSA ", ""), ("OPENSSH ", "b3BlbnNzaC1rZXktdjEAAAAA"), ("EC ", "MHcCAQEEI"), ("", "MIIEvQ"))
    for label, head in pem_kinds:
        lines = [head + r(B64, 64 - len(head))] + [r(B64, 64) for _ in range(5)] + [r(B64, 20)]
        body = "\n".join(lines)
        block = f"-----BEGIN {label}PRIVATE KEY-----\n{body}\n-----END {label}PRIVATE KEY-----"
        line = "Here is the key I pasted by mistake:\n" + block + "\nthanks"
        cases.append(Case("private-key", line, body[len(head) :], block))
    json_body = r(B64, 64) + "\\n" + r(B64, 64)
    add("private-key-json", '{{"type": "service_account", "private_key": "{s}", "client_email": "x@y.iam"}}',
        json_body, "-----BEGIN PRIVATE KEY-----\\n" + json_body + "\\n-----END PRIVATE KEY-----\\n")
    for kind, template in (
        ("postgres-url", "DATABASE_URL=postgres://app_user:{s}@db.internal:5432/app"),
        ("mysql-url", "mysql://root:{s}@127.0.0.1:3306/shop?charset=utf8mb4"),
        ("mongodb-url", "client = MongoClient('mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/test')"),
        ("redis-url", "CELERY_BROKER_URL=redis://:{s}@cache.example.com:6379/0"),
        ("password-assign", "psql 'host=db port=5432 password={s} sslmode=require'"),
        ("yaml-password", "database:\n  user: app\n  password: {s}\n  host: db"),
        ("yaml-passwd", "passwd: {s}"),
        ("cli-password", "mysql -u root --password={s} shop"),
        ("prose-password", "fyi the staging password is {s} until Friday"),
    ):
        add(kind, template, pw())
    add("json-api-key", '{{"api_key": "{s}", "region": "us-east-1"}}', r(LOWER_HEX, 32))
    add("export-token", "export TOKEN={s}", r(ALNUM, 40))
    add("django-secret", 'SECRET_KEY = "{s}"', r(ALNUM + "!@#%^&*-_=+", 50).replace('"', "x"))
    add("client-secret", '"client_secret": "{s}"', r(ALNUM, 40))
    add("bearer", "curl -H 'Authorization: Bearer {s}' https://api.example.com/v1/me", r(URLSAFE, 30) + "42")
    prefixed("npm", "//registry.npmjs.org/:_authToken={s}", "np" + "m_", r(ALNUM, 36))
    prefixed("huggingface", "huggingface-cli login --token {s}", "h" + "f_", r(ALNUM, 34))
    prefixed("sendgrid", "SENDGRID_API_KEY={s}", "S" + "G.", r(URLSAFE, 22) + "." + r(URLSAFE, 43))
    prefixed("twilio", "twilio api key sid {s} for the SMS service", "S" + "K", r(LOWER_HEX, 32))
    add("azure-storage", "DefaultEndpointsProtocol=https;AccountName=acmestore;AccountKey={s};"
        "EndpointSuffix=core.windows.net", r(B64, 86) + "==")
    prefixed("digitalocean", "doctl auth init -t {s}", "do" + "p_v1_", r(LOWER_HEX, 64))
    prefixed("discord", "bot.run('{s}')", "M" + r(URLSAFE, 23) + ".", r(URLSAFE, 6) + "." + r(URLSAFE, 27))
    prefixed("mailgun", "mailgun key {s} for the newsletter domain", "ke" + "y-", r(LOWER_HEX, 32))
    prefixed("heroku", "HEROKU_API_KEY={s}", "HR" + "KU-", r(URLSAFE, 60))
    prefixed("telegram", "curl https://api.telegram.org/bot{s}/getMe", r(string.digits, 10) + ":",
             r(URLSAFE, 35))
    return cases


CORPUS = build_corpus()


def test_corpus_is_big_enough():
    assert len(CORPUS) >= 30
    assert len({c.kind for c in CORPUS}) >= 30


@pytest.mark.parametrize("case", CORPUS, ids=[f"{i:02d}-{c.kind}" for i, c in enumerate(CORPUS)])
def test_secret_is_masked(case: Case):
    masked = mask_secrets(case.line)
    assert MASK in masked
    leaks = _leaks(masked, case.random_part)
    assert not leaks, f"{case.kind}: {masked!r} still shows {sorted(leaks)[:3]}"


def _leaks(masked: str, part: str) -> set[str]:
    return {part[i : i + 8] for i in range(len(part) - 7) if part[i : i + 8] in masked}


SHAPED = [c for c in CORPUS if c.token]


@pytest.mark.parametrize("case", SHAPED, ids=[f"{i:02d}-{c.kind}" for i, c in enumerate(SHAPED)])
def test_token_is_found_by_its_shape_alone(case: Case):
    """No keyword around it: the token's own format must be enough."""
    masked = mask_secrets(f"see {case.token} above")
    assert masked.startswith("see ") and masked.endswith(" above")
    assert not _leaks(masked, case.random_part), masked


def test_own_rules_suffice_without_detect_secrets(monkeypatch):
    import recall.masking as secrets_module

    monkeypatch.setattr(secrets_module, "_rules", None)
    monkeypatch.setattr(secrets_module, "_detect_secrets_rules", lambda: [])
    for case in CORPUS:
        assert not _leaks(mask_secrets(case.line), case.random_part), case.kind


def test_pem_block_cut_short_and_many_headers():
    rng = random.Random(7)
    body = "".join(rng.choice(B64) for _ in range(64))
    text = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body[::-1]}\n(rest of the key was cut)"
    masked = mask_secrets(text)
    assert not _leaks(masked, body) and "(rest of the key was cut)" in masked
    # A pile of headers with no END must stay fast and mask only the headers.
    many = "-----BEGIN EC PRIVATE KEY-----\n" * 2000
    assert mask_secrets(many) == f"{MASK}\n" * 2000


def test_offsets_survive_text_whose_lowercase_changes_length():
    text = "İstanbul ofisi: password=Xk9pQ2mzLw and more"
    assert mask_secrets(text) == f"İstanbul ofisi: password={MASK} and more"


def test_placeholders_and_code_are_not_masked():
    for line in (
        "password=${DB_PASSWORD}",
        "api_key: <your-api-key>",
        'token = os.environ["TOKEN"]',
        "password: str | None = None",
        "secret = get_secret(name)",
        "postgres://user:${PGPASSWORD}@db/app",
        "Authorization: Bearer $TOKEN",
        "the password is required",
    ):
        assert mask_secrets(line) == line, line


def test_surrounding_text_is_kept():
    assert mask_secrets("password=hunter2xyz") == f"password={MASK}"
    assert mask_secrets("postgres://u:s3cretPw9@db/app") == f"postgres://u:{MASK}@db/app"
    assert mask_secrets('{"api_key": "abcd1234efgh5678"}') == f'{{"api_key": "{MASK}"}}'
    line = CORPUS[0].line  # aws_access_key_id = AKIA...
    assert mask_secrets(line) == f"aws_access_key_id = {MASK}"


def test_find_secrets_spans_sorted_and_disjoint():
    text = "\n".join(c.line for c in CORPUS)
    spans = find_secrets(text)
    assert spans and all(isinstance(k, str) and k for _, _, k in spans)
    assert all(s < e for s, e, _ in spans)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))


def test_masking_is_idempotent_and_leaves_clean_text_alone():
    text = "\n".join(c.line for c in CORPUS)
    once = mask_secrets(text)
    assert mask_secrets(once) == once
    assert mask_secrets("") == ""
    assert mask_secrets("nothing to see here") == "nothing to see here"


def false_positive_rate(lines: list[str]) -> tuple[float, list[str]]:
    """Share of ordinary lines that masking changes, and those lines."""
    changed = [line for line in lines if mask_secrets(line) != line]
    return len(changed) / len(lines), changed


def test_false_positive_rate_on_prose():
    lines = [line for line in PROSE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(lines) >= 60
    rate, changed = false_positive_rate(lines)
    print(f"\nsecret masking false-positive rate: {rate:.1%} ({len(changed)}/{len(lines)} lines)")
    for line in changed:
        print("  changed:", line[:120])
    assert rate <= MAX_FALSE_POSITIVE_RATE


# --- issue 16: secrets that survived masking, and the fallback for unknown shapes ----------------

def _issue16_cases(seed: int = 16) -> list[tuple[str, str, str]]:
    """(kind, line, random part) for each reproduction, with fresh random values."""
    rng = random.Random(seed)

    def r(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def pw() -> str:
        return r(string.ascii_letters, 8) + r(string.digits, 4) + r(ALNUM, 8)

    aws = r(B64, 40)
    azure = r(ALNUM, 3) + "8" + "Q~" + r(ALNUM + "_~.-", 34)
    return [
        ("aws-secret-in-prose", f"the secret key for the backup bucket is {aws}, rotate it monthly", aws),
        ("aws-secret-in-prose", f"key pair: id and then {aws}", aws),
        ("pgpassword", f"PGPASSWORD={(p := pw())} psql -h db -U app", p),
        ("mysql-pwd", f"MYSQL_PWD='{(p := pw())}' mysql -u root shop", p),
        ("env-password", f"export REDIS_MASTER_PASSWORD={(p := pw())}", p),
        ("env-token", f"CI_DEPLOY_TOKEN: {(p := pw())}", p),
        ("env-secret", f"SECRET={(p := pw())} ./run.sh", p),
        ("env-secret", f'  APP_SECRET_VALUE = "{(p := pw())}"', p),
        ("facebook", f"graph api call with {(p := 'EAA' + 'B' + r(ALNUM, 120))} worked", p[4:]),
        ("twilio-auth-token", f"Twilio auth token {(p := r(LOWER_HEX, 32))} (console)", p),
        ("twilio-auth-token", f"TWILIO_AUTH_TOKEN={(p := r(LOWER_HEX, 32))}", p),
        ("azure-client-secret", f"the app registration's client secret is now {azure}.", azure),
        ("azure-client-secret", f"AZURE_CLIENT_SECRET={azure}", azure),
        ("azure-client-secret", f"Azure AD secret: {(p := r(ALNUM + '~.-', 40))}", p),
        ("datadog", f"datadog api key {(p := r(LOWER_HEX, 32))} for the agent", p),
        ("datadog", f"Datadog application key: {(p := r(LOWER_HEX, 40))}", p),
        ("datadog", f"DD_API_KEY={(p := r(LOWER_HEX, 32))} datadog-agent run", p),
        ("unknown-random", f"use {(p := r(URLSAFE, 36))} to sign in to the vendor portal", p),
        ("unknown-random", f"key={(p := r(B64, 64))}", p),
    ]


ISSUE16 = _issue16_cases()


@pytest.mark.parametrize("kind,line,part", ISSUE16, ids=[f"{i:02d}-{c[0]}" for i, c in enumerate(ISSUE16)])
def test_issue16_secret_is_masked(kind: str, line: str, part: str):
    masked = mask_secrets(line)
    assert not _leaks(masked, part), f"{kind}: {masked!r}"


def test_env_style_names_keep_what_is_not_a_secret():
    for line in (
        "PWD=/home/alice/projects/app",
        "cd $PWD && make",
        "PGPASSWORD=$DB_PASSWORD psql -h db",
        "MYSQL_PWD=${MYSQL_PWD} mysql",
        "TOKEN_URL=https://oauth2.googleapis.com/token",
        "GITHUB_TOKEN: required",
        "API_KEY=changeme",
        "TOKEN_TTL=3600s SESSION_SECRET_ROTATION=30d PASSWORD_MIN_LENGTH=12",
        "SSH_PRIVATE_KEY_PATH=~/.ssh/id_ed25519 AUTH_TOKEN_HEADER=X-Auth-Token",
    ):
        assert mask_secrets(line) == line, line


def test_random_fallback_leaves_digests_ids_and_names_alone():
    for line in (
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "trace 0af7651916cd43dd8448eb211c80319c, request 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        "sha256:5c5b5d8f4e0c2fa7c4c1a0f2c1f4b5f7e9d0c1b2a3948576aabbccddeeff0011",
        "git checkout chore/LED-2210-bump-fastapi-to-0.115",
        "getUserAccountDetailsById2 and HTTPServerError404Handler",
        "/usr/local/lib/python3.11/site-packages/torch/nn/modules/linear.py",
        '"integrity": "sha512-WFN/ALbjMOGdMSDPiDLWlBk2SUAvVwZSuupcp0k+P9RGHEOAb'
        'NvzjSr+g7yV3Q8YRqN0zcJxt5A8Cq6uAoS+Ig=="',
        "eu-west-1 ap-northeast-1 us-gov-east-1 20261129T214456Z",
    ):
        assert mask_secrets(line) == line, line


def _fp_corpora() -> list[tuple[str, list[str]]]:
    from conftest import SHARED

    root = Path(__file__).resolve().parent.parent
    shared = SHARED / "benchmarks"
    docs = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    out = [
        ("project docs", [ln for p in docs for ln in p.read_text(encoding="utf-8").splitlines()]),
        ("sample notes", [ln for p in sorted((root / "datasets" / "sample" / "notes").rglob("*.md"))
                          for ln in p.read_text(encoding="utf-8").splitlines()]),
    ]
    rules = shared / "rules-120" / "notes"
    if rules.is_dir():
        out.append(("rules-120 notes", [ln for p in sorted(rules.rglob("*.md"))
                                        for ln in p.read_text(encoding="utf-8").splitlines()]))
    kino = shared / "kinopeee" / "notes_sections_ja_en.jsonl"
    if kino.is_file():
        out.append(("kinopeee notes", [ln for row in kino.read_text(encoding="utf-8").splitlines()
                                       for ln in json.loads(row)["body"].splitlines()]))
    return [(name, [ln for ln in lines if ln.strip()]) for name, lines in out]


def test_false_positive_rate_on_docs_and_real_notes():
    """Lines of the project's prose and of real notes that masking changes (all rules plus
    the random-token fallback). Printed per corpus; the rules-120 and kinopeee sets are read
    from ../shared/benchmarks (or $RECALL_SHARED/benchmarks) when present."""
    total = changed_total = 0
    for name, lines in _fp_corpora():
        rate, changed = false_positive_rate(lines)
        total += len(lines)
        changed_total += len(changed)
        print(f"\n{name}: {len(changed)}/{len(lines)} lines changed ({rate:.2%})")
        for line in changed:
            print("  changed:", mask_secrets(line)[:120])
        assert rate <= 0.01, name
    print(f"all: {changed_total}/{total} lines changed ({changed_total / total:.2%})")


def test_random_fallback_catches_random_keys_of_unknown_shape():
    rng = random.Random(1616)
    caught = 0
    for _ in range(500):
        token = "".join(rng.choice(B64) for _ in range(40))
        caught += MASK in mask_secrets(f"use {token} for it")
    print(f"\n40-char random base64 caught by the fallback: {caught}/500")
    assert caught >= 490
