"""Built test data shared by several test modules: the secrets corpus (``build_corpus``,
``issue16_cases``, ``issue25_cases``, ``harden_cases``, ``spelling_cases``,
``issue25_file_names``) and Claude Code transcripts
(``Transcript``, ``conversation``).

Each builder is seeded, so every run sees the same values."""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from dataclasses import dataclass
from pathlib import Path

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



def issue16_cases(seed: int = 16) -> list[tuple[str, str, str]]:
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


def issue25_cases(seed: int = 25) -> list[tuple[str, str, str]]:
    """(kind, line, secret) for each secret issue 25 found surviving masking, fresh values."""
    rng = random.Random(seed)

    def r(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def pw() -> str:
        return r(string.ascii_letters, 6) + r(string.digits, 3) + r(ALNUM, 7)

    return [
        ("curl-user", f"curl -u deploy:{(p := pw())} https://ci.example.com/api/jobs", p),
        ("curl-user", f"curl -s --user 'admin:{(p := pw())}' -X POST https://api.internal/v1/reset", p),
        ("sshpass", f"sshpass -p '{(p := pw())}' ssh ops@10.0.0.5 uptime", p),
        ("sshpass", f"sshpass -p{(p := pw())} scp dump.sql backup:/srv", p),
        ("docker-login", f"docker login -u ci -p {(p := pw())} registry.example.com", p),
        ("docker-login", f"docker login registry.gitlab.com --username bot --password {(p := pw())}", p),
        ("mysql", f"mysql -h db -u root -p{(p := pw())} shop < schema.sql", p),
        ("mysql", f"mysqldump -uroot -p'{(p := pw())}' shop > shop.sql", p),
        ("pgpass", f"db.internal:5432:recall:alice:{(p := pw())}", p),
        ("pgpass", f"*:*:*:postgres:{(p := pw())}", p),
        ("url-slash", f"DATABASE_URL is postgres://app:{(p := pw()[:8] + '/' + pw()[:8])}@db.internal:5432/shop", p),
        ("url-at", f"the broker is amqp://svc:{(p := pw()[:8] + '@' + pw()[:8])}@mq.internal/vhost", p),
        ("url-both", f"clone https://bot:{(p := pw()[:6] + '/' + pw()[:6] + '@' + pw()[:6])}@git.example.com/x", p),
        ("hex-key", f"encryption key: {(p := r(LOWER_HEX, 64))}", p),
        ("hex-key", f"Master key = {(p := r(LOWER_HEX, 64))} (vault unseal)", p),
    ]


def harden_cases(seed: int = 25) -> list[tuple[str, str, str]]:
    """(kind, line, secret): the rest of issue 25's class 6, beyond its own examples: other
    tools that take a password as an option or in a fixed place, typed into a pipe, .netrc,
    HTTP headers, URL queries, env lists, compound names, hex keys by a bare name."""
    rng = random.Random(seed)

    def r(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def pw() -> str:
        return r(string.ascii_letters, 5) + r(string.digits, 2) + r(ALNUM, 5)

    return [
        ("redis-cli", f"redis-cli -h cache.internal -a {(p := pw())} FLUSHALL", p),
        ("ldapsearch", f"ldapsearch -x -D cn=admin,dc=corp -w '{(p := pw())}' -b dc=corp", p),
        ("sqlcmd", f"sqlcmd -S db01 -U sa -P {(p := pw())} -Q 'select 1'", p),
        ("mongosh", f"mongosh --host rs0/db1 -u root -p {(p := pw())} admin", p),
        ("keytool", f"keytool -importcert -keystore app.jks -storepass {(p := pw())} -file ca.pem", p),
        ("openssl", f"openssl enc -aes-256-cbc -k {(p := pw())} -in dump.sql -out dump.enc", p),
        ("openssl", f"openssl pkcs12 -export -in c.pem -passout pass:{(p := pw())} -out c.p12", p),
        ("smbclient", f"smbclient //files/share -U ops%{(p := pw())} -c ls", p),
        ("ssh-keygen", f"ssh-keygen -t ed25519 -N {(p := pw())} -f deploy_key", p),
        ("az-login", f"az login -u ci@corp.example -p {(p := pw())}", p),
        ("htpasswd", f"htpasswd -b -c /etc/nginx/.htpasswd admin {(p := pw())}", p),
        ("rabbitmqctl", f"rabbitmqctl add_user svc {(p := pw())}", p),
        ("vault-login", f"vault login {(p := pw())}", p),
        ("sudo-pipe", f"echo '{(p := pw())}' | sudo -S systemctl restart app", p),
        ("stdin-login", f"echo {(p := pw())} | docker login -u ci --password-stdin ghcr.io", p),
        ("here-string", f"sudo -S <<< {(p := pw())} apt-get update", p),
        ("user-at-ip", f"psexec.py corp/admin:{(p := pw())}@10.1.2.3", p),
        ("netrc", f"machine api.corp.example login bot password {(p := pw())}", p),
        ("auth-header", f"curl -H 'Authorization: Bearer {(p := pw())}' https://api.corp.example/v2", p),
        ("url-query", f"GET https://api.corp.example/v1/items?api_key={(p := pw())}&page=2", p),
        ("k8s-env", f"- name: DB_PASSWORD\n  value: {(p := pw())}", p),
        ("compound-name", f"secret_key_base: {(p := pw())}", p),
        ("long-flag", f"wget --http-password={(p := pw())} https://files.corp.example/a.tgz", p),
        ("pw-field", f"pw: {(p := pw())}", p),
        ("hex-secret", f"HMAC secret {(p := r(LOWER_HEX, 64))}", p),
        ("hex-field", f"key: {(p := r(LOWER_HEX, 64))}", p),
    ]


def spelling_cases(seed: int = 35) -> list[tuple[str, str, str]]:
    """(kind, line, secret): secrets in spellings the first rules missed (stop 35's attack):
    camelCase names, quoted values with spaces, labels in other languages, markup, the value on
    the next line, full-width and no-break punctuation, base64 of a PEM key, a Sentry DSN."""
    rng = random.Random(seed)

    def r(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    def pw() -> str:
        return r(string.ascii_letters, 5) + r(string.digits, 2) + r(ALNUM, 5)

    words = " ".join(rng.choice(["amber", "falcon", "quietly", "river", "staple", "horse", "lantern"])
                     for _ in range(4))
    pem_b64 = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\n" + r(B64, 48).encode()).decode()
    return [
        ("camel-password", f'const dbPassword = "{(p := pw())}";', p),
        ("camel-token", f"accessToken: '{(p := pw())}'", p),
        ("camel-token", f"refreshToken={(p := pw())}", p),
        ("camel-pass", f"adminPass: {(p := pw())}", p),
        ("quoted-spaces", f'PASSWORD="{(p := words)}"', p),
        ("quoted-spaces", f'{{"password": "{(p := words + " 77")}"}}', p),
        ("quoted-spaces", f"db_password: '{(p := words)}'", p),
        ("ja-label", f"パスワード: {(p := pw())}", p),
        ("ja-label", f"本番のパスワードは{(p := pw())}です", p),
        ("ja-label", f"管理画面のパスワード：{(p := pw())}", p),
        ("de-label", f"Passwort: {(p := pw())}", p),
        ("fr-label", f"mot de passe : {(p := pw())}", p),
        ("ru-label", f"пароль: {(p := pw())}", p),
        ("xml-element", f"<password>{(p := pw())}</password>", p),
        ("xml-add", f'<add key="ApiKey" value="{(p := pw())}" />', p),
        ("html-input", f'<input type="password" name="pw" value="{(p := pw())}">', p),
        ("next-line", f"Password:\n    {(p := pw())}", p),
        ("arrow", f"password -> {(p := pw())}", p),
        ("api-key-hex", f"api key {(p := r(LOWER_HEX, 64))}", p),
        ("full-width", f"password＝{(p := pw())}", p),
        ("no-break-space", f"password\u00a0=\u00a0{(p := pw())}", p),
        ("kubeconfig", f"    client-key-data: {(p := pem_b64)}", p),
        ("sentry-dsn", f"SENTRY_DSN=https://{(p := r(LOWER_HEX, 32))}@o4504.ingest.sentry.io/45", p),
        # the second attack: labels in markdown, tables, other separators, documents and OCR
        ("md-bold", f"**Password:** {(p := pw())}", p),
        ("md-bold", f"- **DB_PASSWORD**={(p := pw())}", p),
        ("md-code", f"- `password`: {(p := pw())}", p),
        ("md-table", f"| Password | {(p := pw())} |", p),
        ("md-table", f"| DB_PASSWORD | {(p := pw())} |", p),
        ("md-table", f"| API key | {(p := pw())} |", p),
        ("tab", f"Password\t{(p := pw())}", p),
        ("dash", f"Password - {(p := pw())}", p),
        ("arrow", f"password \u2192 {(p := pw())}", p),
        ("qualified", f"Password (prod): {(p := pw())}", p),
        ("qualified", f"Password for prod: {(p := pw())}", p),
        ("qualified", f"the password for prod is {(p := pw())}", p),
        ("qualified", f"password for the demo VM is {(p := pw())}", p),
        ("qualified", f"Password for the staging box: {(p := pw())}", p),
        ("passcode", f"Passcode: {(p := pw())}", p),
        ("later-line", f"Password\n\n\n{(p := pw())}", p),
        ("ocr", f"Password {(p := pw())}", p),
    ]


INVISIBLE_IN_WORDS = ("\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\ufe0f", "\u034f",
                      "\U000e0020", "\u180e", "\u2063")


def issue25_file_names(seed: int = 25) -> list[tuple[str, str]]:
    """(file stem, secret in it) for note files named after a key (issue 25)."""
    rng = random.Random(seed)
    ghp = "ghp_" + "".join(rng.choice(ALNUM) for _ in range(36))
    akia = "AKIA" + "".join(rng.choice(UPPER_DIGITS) for _ in range(16))
    slack = "xoxb-" + "".join(rng.choice(string.digits) for _ in range(12)) + "-" + "".join(
        rng.choice(ALNUM) for _ in range(24))
    return [(ghp, ghp), (f"creds-{akia}", akia), (f"slack {slack} bot", slack)]


# --- Claude Code transcripts ------------------------------------------------------

CWD = "/home/alice/work/shop"


class Transcript:
    """Builds one session's lines the way Claude Code writes them."""

    def __init__(self, session_id: str | None = None, entrypoint: str | None = "cli",
                 version: str = "2.1.3", start: str = "2026-10-01T09:00:00.000Z"):
        self.session_id = session_id or str(uuid.uuid4())
        self.entrypoint = entrypoint
        self.version = version
        self.lines: list[str] = []
        self.parent: str | None = None
        self.minute = 0
        self.start = start

    def _timestamp(self) -> str:
        self.minute += 1
        return self.start[:14] + f"{self.minute:02d}" + self.start[16:]

    def _message(self, kind: str, content, **extra) -> Transcript:
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            "message": {"role": kind, "content": content},
            "uuid": str(uuid.uuid4()),
            "timestamp": self._timestamp(),
        }
        if kind == "assistant":
            line["message"].update({"id": "msg_01", "model": "claude-sonnet-4-5", "type": "message"})
        if self.entrypoint is not None:
            line["entrypoint"] = self.entrypoint
        line.update(extra)
        self.parent = line["uuid"]
        self.lines.append(json.dumps(line, ensure_ascii=False))
        return self

    def user(self, content, **extra) -> Transcript:
        return self._message("user", content, **extra)

    def assistant(self, text: str, **extra) -> Transcript:
        return self._message("assistant", [{"type": "text", "text": text}], **extra)

    def tool_use_and_result(self, output: str) -> Transcript:
        tool_id = "toolu_" + uuid.uuid4().hex[:20]
        self._message("assistant", [{"type": "tool_use", "id": tool_id, "name": "Bash",
                                     "input": {"command": "ls"}}])
        return self.user([{"type": "tool_result", "tool_use_id": tool_id, "content": output}],
                         toolUseResult={"stdout": output, "stderr": ""})

    def title(self, kind: str, value: str) -> Transcript:
        field = {"custom-title": "customTitle", "ai-title": "aiTitle", "last-prompt": "lastPrompt"}[kind]
        line = {"type": kind, field: value, "sessionId": self.session_id}
        if kind == "last-prompt":
            line["leafUuid"] = self.parent
        self.lines.append(json.dumps(line, ensure_ascii=False))
        return self

    def summary(self, text: str) -> Transcript:
        self.lines.append(json.dumps({"type": "summary", "summary": text, "leafUuid": str(uuid.uuid4())}))
        return self

    def raw(self, text: str) -> Transcript:
        self.lines.append(text)
        return self

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.session_id}.jsonl"
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path


def conversation(**kwargs) -> Transcript:
    return (Transcript(**kwargs).user("Add a retry to the payment webhook handler")
            .assistant("I'll look at the handler.").tool_use_and_result("webhooks.py\n")
            .assistant("Done: retries with backoff."))


# Letters of other scripts that draw like Latin ones (Cyrillic, Greek, Latin small capitals'
# neighbours): an attacker's spelling of "pаssword" or "ѕk-ant-" that a reader cannot tell apart.
LOOK_ALIKES = {
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "i": "\u0456", "j": "\u0458", "o": "\u043e",
    "p": "\u0440", "s": "\u0455", "x": "\u0445", "y": "\u0443", "h": "\u04bb", "d": "\u0501",
    "A": "\u0391", "B": "\u0392", "E": "\u0395", "H": "\u0397", "I": "\u0399", "K": "\u039a",
    "M": "\u039c", "N": "\u039d", "O": "\u039f", "P": "\u03a1", "T": "\u03a4", "X": "\u03a7",
    "Y": "\u03a5", "Z": "\u0396", "C": "\u0421", "S": "\u0405",
}


def _label_value(rng: random.Random) -> str:
    """A password as people pick one: letters, two digits, then two more characters."""
    return "".join(rng.choice(string.ascii_letters) for _ in range(6)) + str(rng.randrange(10, 99)) + "Zq"


def column_cases(seed: int = 50) -> list[tuple[str, str, str]]:
    """(kind, text, secret): a secret in a table's column whose header names it (a CSV
    export, a spreadsheet pasted as markdown, a TSV), not in a row's own label."""
    rng = random.Random(seed)

    def pw() -> str:
        return _label_value(rng)

    out = []
    for kind, header in (("md-password", "| Service | User | Password |\n|---|---|---|"),
                         ("md-api-key", "| name | API key | owner |\n| :-- | :-- | --: |"),
                         ("md-bold", "| **Host** | **Login** | **Passwort** |\n|---|---|---|")):
        p, q = pw(), pw()
        cells = [f"| db | admin | {p} |", f"| cache | ops | {q} |"] if kind != "md-api-key" else \
            [f"| billing | {p} | ana |", f"| search | {q} | li |"]
        out.append((kind, header + "\n" + "\n".join(cells), p))
        out.append((kind + "-2", header + "\n" + "\n".join(cells), q))
    p, q = pw(), pw()
    out.append(("csv", f"host,user,password,port\ndb1,admin,{p},5432\ndb2,ro,\"{q}\",5433", p))
    out.append(("csv-quoted", f"host,user,password,port\ndb1,admin,{p},5432\ndb2,ro,\"{q}\",5433", q))
    p = pw()
    out.append(("tsv", f"account\tclient_secret\tnotes\nprod\t{p}\trotated", p))
    p = pw()
    out.append(("csv-semicolon", f"Benutzer;Kennwort\nmax;{p}", p))
    p = pw()
    out.append(("csv-ja", f"ユーザー,パスワード\nyamada,{p}", p))
    # a converter that drops an empty cell shifts the rest left, under the wrong header
    p = pw()
    out.append(("md-dropped-cell", f"| Service | Note | Password |\n|---|---|---|\n| db | {p} |", p))
    p = pw()
    out.append(("csv-dropped-cell", f"host,user,note,password\ndb1,admin,{p}", p))
    # an aligned plain-text table: a PDF's text layer, psql, `column -t`
    p, q = pw(), pw()
    aligned = f"Service        User      Password\npostgres       admin     {p}\nredis          default   {q}"
    out += [("aligned", aligned, p), ("aligned-2", aligned, q)]
    return out


def converted_cases(seed: int = 60) -> list[tuple[str, str, str]]:
    """(kind, line, secret): a secret in the shapes converters and OCR give documents (stop 36's
    attack): a qualified label in a table or beside its value, a label alone then its value, a
    YAML block, URL-encoded names, key,value rows, XML properties, PGPASS."""
    rng = random.Random(seed)

    def pw() -> str:
        return _label_value(rng)

    return [
        ("table-qualified", f"| Admin password | {(p := pw())} |", p),
        ("table-qualified", f"| Wifi Password | {(p := pw())} |", p),
        ("table-dotted", f"| spring.datasource.password | {(p := pw())} |", p),
        ("pipe-row", f"Prod DB password | {(p := pw())}", p),
        ("pipe-row", f"db.password | {(p := pw())}", p),
        ("ocr-label", f"Admin password\n{(p := pw())}", p),
        ("ocr-label", f"Root Password:\n\n{(p := pw())}", p),
        ("yaml-block", f"password: |\n  {(p := pw())}", p),
        ("yaml-block", f"db_password: >-\n    {(p := pw())}", p),
        ("url-encoded", f"a=1&password%3D{(p := pw())}", p),
        ("url-encoded", f"client%5Fsecret={(p := pw())}", p),
        ("url-encoded", f"DB_PASSWORD%3D{(p := pw())}", p),
        ("key-value-csv", f"db_password,{(p := pw())}", p),
        ("key-value-csv", f"password;{(p := pw())}", p),
        ("xml-property", f'<property name="password" value="{(p := pw())}"/>', p),
        ("xml-entry", f'<entry key="db.password">{(p := pw())}</entry>', p),
        ("env-pgpass", f"export PGPASS={(p := pw())}", p),
        # structured values (stop 37): an object under the secret's name, the value on the next
        # line of pretty-printed JSON, a triple-quoted string
        ("nested-object", f'{{"password": {{"value": "{(p := pw())}"}}}}', p),
        ("nested-object", f'"db_credentials": {{"user": "app", "secret": "{(p := pw())}"}}', p),
        ("nested-object", f'api_key = {{ plaintext = "{(p := pw())}" }}', p),
        ("next-line-json", f'{{\n  "api_key":\n    "{(p := pw())}"\n}}', p),
        ("next-line-json", f'"client_secret" :\n\t"{(p := pw())}",', p),
        ("triple-quoted", f'PASSWORD = """{(p := pw())}"""', p),
        ("triple-quoted", f"token = '''{(p := pw())}'''", p),
    ]


CONVERTED_KEEP = (
    "| Password | Policy |",
    "| Admin password | rotated monthly |",
    "Reset the password\nSee-the-docs",
    "## Rotating the API key\n\n```bash\nrecall index\n```",
    "password,required,string",
    "the token%20bucket limits requests",
    "BYPASS=true",
    '<property name="password" value="${db.password}"/>',
    "password: |\n  ${DB_PASSWORD}",
    '{"password": {"required": true, "minLength": 12}}',
    '{"secret": {"name": "db-creds", "key": "password"}}',
    '"api_key":\n  "${API_KEY}"',
    'password = """\nSee the vault.\n"""',
)
