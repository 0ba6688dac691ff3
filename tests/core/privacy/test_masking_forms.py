"""Masking of secrets written the way SQL, Windows, a phone's QR code, a 2FA app or a form writes
them (stop 44: an outside tester found each of these kept in the index as written, and those in a
note's name or description shown to the agent).

Values are assembled from a seeded RNG at run time, never written out literally.
"""

from __future__ import annotations

import random
import string

import pytest

from recall.privacy.masking import MASK, mask_secrets


def _value(seed: object, symbols: str = "") -> str:
    rng = random.Random(str(seed))
    letters = "".join(rng.choice("abcdefghkmnpqrstuvwxyz") for _ in range(5)).capitalize()
    return letters + str(rng.randint(2, 9)) + "".join(rng.choice("ABCDEFGHKMNPQRSTUVWXYZ" + symbols) for _ in range(4))


def _hex(seed: object, n: int = 64) -> str:
    rng = random.Random(str(seed))
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _base32(seed: object, n: int = 32) -> str:
    rng = random.Random(str(seed))
    return "".join(rng.choice(string.ascii_uppercase + "234567") for _ in range(n))


def _word(seed: object) -> str:  # a password that is one plain word
    rng = random.Random(str(seed))
    return "".join(rng.choice("abcdefghkmnpqrstuvwxyz") for _ in range(10))


SHAPES = [
    # SQL: MySQL, PostgreSQL, Oracle, SQL Server
    "CREATE USER 'app'@'%' IDENTIFIED BY '{v}';",
    "create user app identified by \"{v}\";",
    "ALTER USER 'app'@'localhost' IDENTIFIED WITH mysql_native_password BY '{v}';",
    "ALTER USER postgres WITH PASSWORD '{v}';",
    "CREATE ROLE reporter LOGIN PASSWORD '{v}';",
    "CREATE ROLE reporter WITH LOGIN ENCRYPTED PASSWORD '{v}' VALID UNTIL 'infinity';",
    "ALTER LOGIN sa WITH PASSWORD = '{v}';",
    # markdown's other emphasis around a label, and a link's text or an image's alt text (stop 56)
    "__Password__: {v}",
    "*Password*: {v}",
    "_Password_: {v}",
    "[the admin password is {v}](https://wiki.internal/admin)",
    "![password: {v}](diagram.png)",
    # a label and its value drawn apart: a blockquote's lines, inline HTML, Obsidian's inline
    # field, a YAML tag (an outside tester's sweep, stop 56)
    "> Password:\n> {v}",
    "<b>Password:</b> {v}",
    "password: <code>{v}</code>",
    "<kbd>password</kbd>: {v}",
    "password:<br>{v}",
    "password:: {v}",
    "password: !!str {v}",
    # PostgreSQL's PASSWORD after any role option, or first (an outside tester's, stop 56)
    "ALTER ROLE alice PASSWORD '{v}';",
    "CREATE ROLE dba LOGIN CREATEROLE PASSWORD '{v}'",
    "ALTER ROLE app VALID UNTIL 'infinity' PASSWORD '{v}';",
    "create user u password '{v}' superuser;",
    "Rotate it: ALTER ROLE alice PASSWORD \"{v}\";",
    "CREATE LOGIN app WITH PASSWORD = N'{v}', CHECK_POLICY = OFF;",
    "SET PASSWORD FOR 'bob'@'%' = '{v}';",
    "GRANT ALL ON db.* TO 'app'@'%' IDENTIFIED BY '{v}';",
    # ODBC / ADO connection strings with braces
    "Driver={{ODBC Driver 18}};Server=db;UID=sa;PWD={{{v};x}};",
    "Server=db;User Id=sa;Password={{{v}}};",
    # Windows
    "$pw = ConvertTo-SecureString \"{v}\" -AsPlainText -Force",
    "$pw = ConvertTo-SecureString -String '{v}' -AsPlainText -Force",
    "net user deploy {v} /add",
    # a WiFi QR code's text
    "guest wifi QR: WIFI:T:WPA;S:acme-guest;P:{v};;",
    "WIFI:S:office;T:WPA2;P:{v};H:false;;",
    # user/password pairs, an API key named without a separator
    "The login for grafana is admin/{v}",
    "grafana login admin / {v}",
    "use apikey {v}",
    "api key {v}",
    "pass word: {v}",
    # a label alone on its line, the value on the next (a form, a converted document)
    "Password:\n{w}",
    "Root password:\n\n{w}",
    "The root password for the build server:\n{v}",
    "Password for the VPN:\n{w}",
    # a table row with more than one value cell
    "| password | {v} | {v}b |",
    # Japanese and Korean: "pass", "watchword", the Korean short form with its particle
    "管理画面のパスは {v} です",
    "合言葉は {v}",
    "서버 비번은 {v} 입니다",
    "DBのパスは{v}",
    "合言葉は {w}",
    "서버 비번은 {w} 입니다",
    "パスワードは{w}です",
]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_password_written_this_way_is_masked(shape: str):
    v, w = _value(shape, "!@#"), _word(shape)
    masked = mask_secrets(shape.format(v=v, w=w))
    for secret in (v, w):
        if "{" + ("v" if secret == v else "w") + "}" in shape:
            assert secret not in masked and MASK in masked, masked


# A hex key named as a key without a colon, and a 2FA seed (base32 in capitals) named as one.
KEYS = [(shape, _hex) for shape in ("The deployer's private key 0x{} signs releases.",
                                     "wallet private key {}", "private key {}", "the signing key 0x{}")]
KEYS += [(shape, _base32) for shape in ("The 2FA seed for the admin account is {} (scan it in the app).",
                                         "TOTP secret: {}", "otp seed {}", "2FAのシークレットは{}",
                                         "MFA secret key {}")]


@pytest.mark.parametrize(("shape", "make"), KEYS, ids=[k[0] for k in KEYS])
def test_a_key_named_as_one_is_masked_without_a_separator(shape: str, make):
    key = make(shape)
    masked = mask_secrets(shape.format(key))
    assert key not in masked and MASK in masked, masked


def test_recovery_codes_are_masked():
    rng = random.Random("codes")
    codes = [f"{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}" for _ in range(4)]
    for line in (f"GitHub recovery codes: {codes[0]} {codes[1]}", f"backup codes: {codes[2]}, {codes[3]}",
                 f"Recovery code {codes[0]}"):
        masked = mask_secrets(line)
        assert not any(c in masked for c in codes if c in line), masked


def test_these_forms_keep_what_is_not_a_secret():
    for line in ("ALTER USER postgres WITH PASSWORD NULL;", "IDENTIFIED BY clause is optional",
                 "CREATE ROLE reporter LOGIN PASSWORD :'pw';", "ALTER ROLE app PASSWORD %s",
                 "WITH PASSWORD = @pw", "use the pass word field", "api key rotation every month",
                 "the apikey header", "net user deploy /delete", "The login for grafana is SSO",
                 "admin/settings page", "see docs/recovery codes", "recovery codes are in the vault",
                 "the 2FA seed is in 1Password", "private key 0x", "TOTP secret: see the vault",
                 "DBのパスは環境変数で渡す", "合言葉は秘密", "비번은 금고에",
                 "Password:\nsee the vault", "Password:\n\n- at least 12 characters",
                 "| password | required | string |", "ConvertTo-SecureString $env:PW -AsPlainText -Force",
                 "WIFI:S:office;T:nopass;;", 'os.environ["PASSWORD"] + os.environ["USER"]',
                 "password\t'' and user ''", "DB_PASSWORD=see_the_vault", "def f(*args, **kw): pass",
                 "__init__: the constructor", "see [the password policy](https://wiki/a_b_c)",
                 # a secret's word inside a longer name's part (an outside tester's, stop 56)
                 "TOKENIZER=meta-llama/Llama-3.1-8B", "COMPASS_PROJECT=web-v2",
                 "BYPASS_LIST=*.internal.example.com", "KEYBOARD_LAYOUT=us-intl-altgr",
                 "password: !secret wifi_password", "api_key: !env_var OPENAI_API_KEY", "std::vector<int> v;",
                 "> quoted text\n> more of it", "<b>bold</b> text and <br> a break",
                 # how secrets are made, not one (an outside tester's sweep for over-masking, stop 56)
                 "password: Argon2id", "token: RS256", "password_encryption = scram-sha-256",
                 "JWT_SECRET_ALGORITHM=HS512", "SSH_KEY_TYPE=ed25519", "password: bcrypt"):
        assert mask_secrets(line) == line, (line, mask_secrets(line))
