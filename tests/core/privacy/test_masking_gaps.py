"""An outside tester's gaps in masking, closed as classes (rules v19, v20): each list holds shapes of
one family, a ``{}`` where the secret goes, and the texts of that family that must stay.

Values are assembled from a seeded RNG at run time, never written out literally.
"""

from __future__ import annotations

import random
import time

import pytest

from recall.privacy.masking import MASK, mask_secrets


def _value(seed: object) -> str:
    """A throwaway secret: letters of both cases and digits, 10 characters, never a word."""
    rng = random.Random(str(seed))
    word = "".join(rng.choice("abcdefghkmnpqrstuvwxyz") for _ in range(4)).capitalize()
    return word + str(rng.randint(2, 9)) + "".join(rng.choice("ABCDEFGHKMNPQRSTUVWXYZ") for _ in range(2)) \
        + str(rng.randint(2, 9)) + "".join(rng.choice("abcdefghkmnpqrstuvwxyz") for _ in range(2))


def _masked(shape: str) -> None:
    secret = _value(shape)
    masked = mask_secrets(shape.format(secret))
    assert secret not in masked and MASK in masked, masked


def _kept(text: str) -> None:
    assert mask_secrets(text) == text, mask_secrets(text)


def _fast(text: str) -> None:
    t0 = time.perf_counter()
    mask_secrets(text)
    assert time.perf_counter() - t0 < 10.0  # generous: a quadratic rule takes minutes at this length


# --- L3: a pasted psql or MySQL table (its border rows are drawn with "+") -----------------------

TABLES = [
    " usename | passwd\n---------+-----------\n alice   | {}\n(1 row)",
    "+-------+------------+\n| User  | Password   |\n+-------+------------+\n| root  | {} |\n+-------+------------+",
    "+------+-------------+------+\n| host | api_key     | port |\n+------+-------------+------+\n"
    "| db   | {} | 5432 |\n| web  | Qz8kPmWx3t  | 443  |\n+------+-------------+------+",
]
TABLES_KEPT = [
    " usename | usesuper\n----------+----------\n alice    | t\n(1 row)",
    "+-------+----------+\n| User  | Password |\n+-------+----------+\n| root  | NULL     |\n+-------+----------+",
    "+-----------+-------+\n| token     | count |\n+-----------+-------+\n| the       |  5012 |\n+-----------+-------+",
]


@pytest.mark.parametrize("shape", TABLES)
def test_a_secret_in_a_pasted_psql_or_mysql_table_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("text", TABLES_KEPT)
def test_psql_and_mysql_tables_keep_what_is_not_a_secret(text: str):
    _kept(text)


def test_border_rows_take_time_in_proportion_to_the_text():
    _fast("| Password |\n" + "+-" * 100_000 + "\n")
    _fast("| Password |\n" + "---+" * 50_000 + "x\n")


# --- L1: a credential given by its place in code ---------------------------------------------------

POSITIONAL = [  # a quoted secret's name, a comma, its quoted value
    "define( 'DB_PASSWORD', '{}' );", "define('AUTH_KEY','{}!')", 'os.environ.setdefault("API_TOKEN","{}")',
    'config.set("password","{}")', "settings.put('client_secret', '{}')", '[("db.password", "{}")]',
    # a call named for a login, a connection or a credential: a quoted user, then the password
    'pymysql.connect("db", "root", "{}", "app")', 'smtp.login("me@example.com", "{}")',
    'auth=HTTPBasicAuth("svc", "{}")', 'auth=("admin", "{}")', "ftp.login('a','{}')",
    'new NetworkCredential("a","{}")', 'DriverManager.getConnection(url,"scott","{}")',
    'new PasswordAuthentication("u","{}".toCharArray())', 'client.authenticate(user="svc", "{}")',
    'smtp.login("me", "P@{}")',
]
POSITIONAL_KEPT = [
    "define( 'DB_PASSWORD', 'password_here' );", "define('AUTH_KEY', 'put your unique phrase here');",
    'config.set("password", "required")', 'os.getenv("API_TOKEN", "")', 'fields = ("password", "Password")',
    'choices = [("token", "Token"), ("secret_key", "Secret key")]', 'keys = ("primary_key", "created_at")',
    'pymysql.connect("db.internal", "root", os.environ["DB_PASS"], "app")', 'smtp.login(user, password)',
    'sock.connect(("example.com", 443))', 'client.connect("broker.example.com", 1883)',
    'auth=("admin", getpass.getpass())', 'mail.connect("smtp", "ops2@example.com")',
    'author("Jane Doe", "Chapter 1")', 'login("alice", "wrong-pw")',
]


@pytest.mark.parametrize("shape", POSITIONAL)
def test_a_credential_given_by_its_place_in_code_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("text", POSITIONAL_KEPT)
def test_code_that_names_a_credential_keeps_what_is_not_one(text: str):
    _kept(text)


def test_positional_rules_take_time_in_proportion_to_the_text():
    _fast("'password" * 25_000)
    _fast("'db_password', " * 15_000)
    _fast("login(" + '"a", ' * 50_000)
    _fast("connect(" * 30_000)


# --- L4: a label in the plural, numbered, spelt another way, qualified, or a Wi-Fi key's ----------

LABELS = [
    "The passwords are {} and Ng1yWr8Bdu.", "The passwords are Mf9xVq7Act and {}.", "passwords: {}, Oo6pwB4x",
    "passwords: Nn5pwA5, {}", "Secrets: {}", "Tokens: Hq3tokPw3, {}", "api keys: {}", "the tokens were Hq3tokPw3, {}.",
    "password1: {}", "password2={}", "pwd2 = {}", "passw: {}", "pass_word: {}", "pword: {}", "p/w: {}",
    "Token → {}", "API key (prod): {}", "Token - {}", "The token (do not share): {}", "Client secret \u2013 {}",
    'psk="{}"', "PSK: {}", "WPA2 key: {}", "WPA key: {}", "network key {}", "wpa_psk={}",
]
LABELS_KEPT = [
    "The passwords are hashed and salted.", "Tokens: 4096, 8192", "passwords: see the vault, or ask ops",
    "tokens = tokenize(text)", "max tokens: 4096", "Token - a unit of text", "Token → word piece",
    "API key (prod): see 1Password", "network key exchange", "WPA2 key: required", "psk: none",
    "password1: required", "secrets: 3", "p/w: see below", "The token (do not share): see the vault",
    "The passwords are different for each host.", "Secrets: managed by Vault", "tokens: [1, 2, 3]",
]


@pytest.mark.parametrize("shape", LABELS)
def test_a_secret_under_a_label_of_another_form_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("text", LABELS_KEPT)
def test_labels_of_other_forms_keep_what_is_not_a_secret(text: str):
    _kept(text)


def test_label_rules_take_time_in_proportion_to_the_text():
    _fast("passwords: " + "Ab3de, " * 30_000)
    _fast("tokens are " + "Ab3de and " * 20_000)
    _fast("token (" * 30_000)
    _fast("Token " + "-" * 100_000)


# --- F1: a type or a placeholder after a password's name is no password ---------------------------

TYPES_KEPT = [
    "password: SecretStr", "password: PasswordStr", "password: varchar", "password: xxxxxxxx", "  password: String!",
    "  token: String", "password: Optional[SecretStr] = None", "    password: PasswordField", "password: [String!]!",
    "password: text", "api_key: SecretStr", "Password: XXXXXXXX", "password: ********", "password: nvarchar(128)",
    "password: bytes", "password: ID!",
]


@pytest.mark.parametrize("text", TYPES_KEPT)
def test_a_type_or_a_placeholder_after_a_passwords_name_stays(text: str):
    _kept(text)


@pytest.mark.parametrize("shape", ["password: {}", "password: Strong{}!", "password: sunshine{}"])
def test_a_password_beside_the_types_is_still_masked(shape: str):
    _masked(shape)
    _kept("password: " + "x" * 40)
    for word in ("sunshine", "letmein", "dragonfly"):
        assert mask_secrets(f"password: {word}") == f"password: {MASK}"


# --- F2: an Authorization header's scheme alone is no credential -----------------------------------

HEADERS = ["Authorization: Bearer {}", "Authorization: Basic {}==", "authorization: token {}", "Authorization: {}",
           "Authorization: 'Bearer {}'", "Authorization:Bearer {}"]
HEADERS_KEPT = ["Authorization: Bearer", "Authorization: Basic, not digest", "Authorization: Bearer <token>",
                "Authorization: Negotiate", "the Authorization: Bearer header", "Authorization: Bearer\nnext line",
                "Authorization: Token, Bearer or Basic"]


@pytest.mark.parametrize("shape", HEADERS)
def test_an_authorization_headers_credential_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("text", HEADERS_KEPT)
def test_an_authorization_headers_scheme_alone_stays(text: str):
    _kept(text)


def test_the_header_rule_takes_time_in_proportion_to_the_text():
    _fast("authorization: bearer " * 10_000)
    _fast("Authorization:" + " " * 100_000 + "x")


# --- F4: a commit's SHA-1 near the word "token" or "secret" is no key ------------------------------

def _hex(seed: object, n: int) -> str:
    rng = random.Random(str(seed))
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


HEX_MASKED = ["token: {40}", "secret = {40}", "TOKEN={40}", '"token": "{40}"', "the token fixed in {32}",
              "token {64}", "api key for billing {48}"]
HEX_KEPT = ["The token leak fixed in {40} was backported", "secret scanning: reverted {40}",
            "tokens refresh since {40}.", "the secret rotation landed in commit {40}"]


@pytest.mark.parametrize("shape", HEX_MASKED)
def test_a_hex_key_named_as_one_is_masked(shape: str):
    n = int(shape.split("{")[1].split("}")[0])
    key = _hex(shape, n)
    masked = mask_secrets(shape.replace(f"{{{n}}}", key))
    assert key not in masked and MASK in masked, masked


@pytest.mark.parametrize("shape", HEX_KEPT)
def test_a_commits_sha1_near_a_secrets_word_stays(shape: str):
    _kept(shape.replace("{40}", _hex(shape, 40)))


# --- L2: markup between a label and its value: callouts, admonitions, HTML blocks ----------------

STRUCTURE = [
    "> [!note] Password\n> {}", "> [!warning]- Admin password\n> {}\n", '!!! warning "creds"\n    {}',
    '??? note "Password"\n    {}', "<dl><dt>Password</dt><dd>{}</dd></dl>", "<tr><td>password</td><td>{}</td></tr>",
    "<details><summary>Password</summary>{}</details>", "<table>\n  <tr>\n    <th>API key</th>\n    <td>{}</td>\n"
    "  </tr>\n</table>", "<ul><li>Password</li><li>{}</li></ul>", "<div>Token</div><div>{}</div>",
    "<p>Password:</p><p>{}</p>",
]
STRUCTURE_KEPT = [
    "> [!note] Password\n> Choose a strong one.", '!!! warning "Password policy"\n    Rotate every 90 days.',
    "<dl><dt>Password</dt><dd>required</dd></dl>", "<tr><td>token</td><td>count</td></tr>",
    "<details><summary>Password reset</summary>Ask IT.</details>", "<p>Password</p><p>Please choose well</p>",
    "<tr><td>password</td><td>see the vault</td></tr>", "> [!tip] Token\n> see below",
]


@pytest.mark.parametrize("shape", STRUCTURE)
def test_a_secret_behind_a_callout_an_admonition_or_html_blocks_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("text", STRUCTURE_KEPT)
def test_callouts_admonitions_and_html_blocks_keep_what_is_not_a_secret(text: str):
    _kept(text)


def test_markup_rules_take_time_in_proportion_to_the_text():
    _fast("<td>" * 50_000)
    _fast("> [!note] " * 20_000)
    _fast("!!! note " * 20_000)
    _fast("<div " + "a" * 100_000)


# --- L6: command lines whose option or place takes the password ---------------------------------

COMMANDS = [
    "sqlplus scott/{}@orcl", "rman target sys/{}@prod", "expdp system/{}@db schemas=hr",
    "jdbc:oracle:thin:scott/{}@db:1521/orcl", "lftp -u admin,{} sftp://host", "lftp -e 'ls' -u admin,{} host",
    "ipmitool -I lanplus -H 10.0.0.5 -U ADMIN -P {} chassis status", "xfreerdp /u:admin /p:{} /v:host",
    "xfreerdp3 /v:host /u:admin /p:{}", "rdesktop -u a -p {} host", "psexec \\\\h -u a -p {} cmd",
    "mosquitto_pub -h b -u a -P {} -t t -m hi", "mosquitto_sub -u svc -P '{}' -t '#'", "wpa_passphrase MySSID {}",
    'wpa_passphrase "Home Net" {}', "ENV DB_PASS {}", "ENV API_TOKEN {}", "  ENV SECRET_KEY '{}'",
]
COMMANDS_KEPT = [
    "sqlplus / as sysdba", "sqlplus scott@orcl", "rman target /",
    "ipmitool -I lanplus -H h -U ADMIN -P $IPMI_PW power on",
    "xfreerdp /u:admin /v:host", "rdesktop -u a host", "lftp -u admin host", "wpa_passphrase MySSID",
    "ENV DB_PASS_FILE /run/secrets/db", "ENV TOKEN_TTL 3600s", "ENV SECRET_NAME prod", "psexec \\\\h -u a cmd",
    "mosquitto_pub -h b -t t -m hi", "scp -P 2222 file host:", "exp is short for exponent/logarithm@home",
]


@pytest.mark.parametrize("shape", COMMANDS)
def test_a_password_on_these_command_lines_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("text", COMMANDS_KEPT)
def test_these_command_lines_without_a_password_stay(text: str):
    _kept(text)


def test_command_line_rules_take_time_in_proportion_to_the_text():
    _fast("ENV " + "A" * 100_000 + " x")
    _fast("ENV " + "PASS_" * 20_000)  # one name full of secret words: 20,000 letters took 7 s
    _fast("sqlplus " + "a/" * 50_000)
    _fast("ipmitool " + "-P " * 30_000)
    _fast("lftp -u " + "a," * 50_000)


# --- L8: a file or folder named for a secret and its value ----------------------------------------

NAMES = ["notes/pw_{}.md", "notes/token_{}.md", "notes/pass_{}.md", "notes/apikey-{}.txt", "notes/wifi-{}.md",
         "creds {}/x.md", "a/API_KEY_{}.json", "a/secret-{}"]
NAMES_KEPT = ["notes/token_bucket.md", "notes/password_reset.md", "notes/pass_through.md", "notes/wifi-setup.md",
              "notes/secret_santa2024.md", "notes/token_v2.md", "creds/x.md", "notes/pass_2fa.md",
              "notes/key-ideas-2024.md", "notes/apikey-rotation.txt"]


@pytest.mark.parametrize("shape", NAMES)
def test_a_secret_joined_to_its_name_in_a_file_name_is_masked(shape: str):
    from recall.privacy.masking import mask_path

    secret = _value(shape)
    shown = mask_path(shape.format(secret))
    assert secret not in shown and MASK in shown, shown


@pytest.mark.parametrize("shape", [n for n in NAMES if " " not in n.split("/")[0]])
def test_a_secret_joined_to_its_name_is_masked_in_text_too(shape: str):
    """A file's name shown as text (a note named by its file, a baseline's ranking, an exported
    corpus) was masked in paths only (an outside tester's, stop 58)."""
    secret = _value(shape)
    text = f"see {shape.rsplit('/', 1)[-1].format(secret)} for the deploy"
    assert secret not in mask_secrets(text) and MASK in mask_secrets(text)


@pytest.mark.parametrize("path", NAMES_KEPT)
def test_words_that_only_begin_with_a_secrets_name_stay_in_text(path: str):
    _kept(f"see {path.rsplit('/', 1)[-1]} for the deploy")


@pytest.mark.parametrize("path", NAMES_KEPT)
def test_file_names_that_only_begin_with_a_secrets_name_stay(path: str):
    from recall.privacy.masking import mask_path

    assert mask_path(path) == path


# --- F3: an ARN or a secret manager's reference names a secret, it is none ------------------------

REFERENCES_KEPT = [
    "arn:aws:secretsmanager:eu-west-1:111122223333:secret:payments/stripe-webhook-x9Y8z7",
    "SECRET_NAME=prod/db/credentials", "secret: projects/my-proj/secrets/db-pass/versions/latest",
    "SecretId: arn:aws:secretsmanager:us-east-1:111122223333:secret:prod/api-key-AbC123",
    "token_path: kv/data/app/config", "secret = payments/stripe-webhook",
]


@pytest.mark.parametrize("text", REFERENCES_KEPT)
def test_a_secrets_name_or_reference_stays(text: str):
    _kept(text)


@pytest.mark.parametrize("shape", ["secret: prod/{}", "SECRET=ab/{}", "token: {}/x"])
def test_a_secret_with_a_slash_is_still_masked(shape: str):
    _masked(shape)


def test_reference_rules_take_time_in_proportion_to_the_text():
    _fast("secret=" + "a/" * 100_000)
    _fast("password=Xk9pQ2mzLw;" * 10_000)


# --- L5: a label in another language alone on its line, qualified, or in words not listed (rules v20) -

OTHER_LANGUAGES = [
    # alone on its line, the value on the next (as English "Password" then X)
    "パスワード\n{}", "Passwort:\n{}", "mot de passe :\n{}", "contraseña:\n{}", "密码：\n{}", "비밀번호\n{}",
    "## WLAN-Passwort\n\n{}", "WiFiのパスワード\n{}", "senha:\n  {}", "Kennwort\n{}", "- Passwort für den NAS:\n{}",
    # a qualifier between the word and its verb or colon (as English "the wifi password is X")
    "la contraseña del wifi es {}", "le mot de passe du wifi est {}", "senha do wifi: {}",
    "das Passwort für den Router ist {}", "WiFiのパスワードは{}", "la contraseña de la red es {}",
    "mot de passe d'administration : {}", "Passwort vom NAS: {}", "la password del router è {}",
    # words for a password, a key or an access code not listed before
    "Clave: {}", "clave de acceso: {}", "clé API : {}", "Zugangscode: {}", "Kennwort: {}", "la clave del wifi es {}",
    "Clave API: {}", "API-Schlüssel: {}", "chave de acesso: {}", "Mi clave: {}", "CLÉ API : {}",
]
OTHER_LANGUAGES_KEPT = [
    "パスワード\nパスワードを変更するには設定画面を開きます。", "## パスワード\n設定画面からSettingsを開く",
    "Passwort:\nvergessen", "mot de passe :\noublié", "la contraseña del usuario es obligatoria",
    "le mot de passe de l'utilisateur est requis", "das Passwort für den Router ist unsicher",
    "Cambié la contraseña del wifi. Mi usuario es Ana-2024", "Palabras clave: COVID-19, salud pública",
    "Palabra clave: GPT-4", "El punto clave es Python3", "## Ideas clave\nKubernetes-1.29", "clé USB : SanDisk32",
    "Conceptos clave: HTTP/2 y TLS-1.3", "暗号: AES-256", "la clave es la paciencia", "Zugangscode: siehe Tresor",
]


@pytest.mark.parametrize("shape", OTHER_LANGUAGES)
def test_a_secret_under_another_languages_label_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("text", OTHER_LANGUAGES_KEPT)
def test_other_languages_labels_keep_what_is_not_a_secret(text: str):
    _kept(text)


def test_other_languages_label_rules_take_time_in_proportion_to_the_text():
    _fast("contraseña del " + "a " * 50_000)
    _fast("Passwort für " * 20_000)
    _fast("パスワード\n" * 30_000)
    _fast("la clave " * 20_000)
    _fast("mot de passe d'" * 10_000)
    _fast("contraseña de " + "a" * 100_000)
    _fast("## Passwort\n" + " " * 100_000 + "x")


# --- L7: a user and a password with no password word, where a credentials context says so (rules v20) ---

PAIRS = [
    "creds admin:{}", "creds: admin / {}", "login: admin / {}", "Zugangsdaten: admin / {}", "Zugang: admin / {}",
    "identifiants : admin / {}", "credenciales: admin/{}", "Anmeldedaten admin:{}", "ログイン情報: admin / {}",
    # a label alone on its line that names a password or credentials, the pair below it
    "Router admin password\nadmin / {}", "Zugangsdaten\nadmin:{}", "WLAN-Passwort:\nadmin / {}",
    # a heading that names credentials, a list of the user and the password under it
    "## Credentials\n- admin\n- {}", "## Login\n\n- admin\n- {}", "## Zugang\n* admin\n* {}",
    "### Router credentials\n- root\n- {}", "Credentials:\n- admin\n- {}", "## Zugangsdaten\n\n1. admin\n2. {}",
]
PAIRS_KEPT = [
    "permissions: read/write", "creds read/write for the bucket", "login server:8080", "credentials host:5432/db",
    "## Credentials\n- AWS\n- GCP", "## Login\n- Go to /login\n- Click Submit", "chown www-data:www-data x",
    "ratio 16:9", "## Login\n- OAuth2\n- SAML2", "Password\nread/write", "## Credentials\n- see the vault\n- ask ops",
    "the login user:group is set by the installer", "## Login\n- admin\n- required",
]


@pytest.mark.parametrize("shape", PAIRS)
def test_a_user_and_password_pair_in_a_credentials_context_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("text", PAIRS_KEPT)
def test_pairs_and_lists_without_a_password_stay(text: str):
    _kept(text)


def test_a_notes_name_naming_a_password_masks_the_pair_in_its_description():
    from recall.privacy.masking import mask_together

    secret = _value("together")
    name, description = mask_together("Router admin password", f"admin / {secret}")
    assert name == "Router admin password" and description == f"admin / {MASK}"


def test_pair_rules_take_time_in_proportion_to_the_text():
    _fast("creds " + "a" * 100_000)
    _fast("creds a" + " " * 100_000 + ":x")
    _fast("## Credentials\n" + "- admin\n" * 30_000)
    _fast("## Login\n" + "\n" * 100_000 + "- a\n- b")
    _fast("Zugangsdaten\n" * 30_000)
    _fast("password\n" + "a" * 100_000 + " / x")


# --- Japanese, Chinese and Korean prose after the word for password (stop 57) -------------------

CJK_KEPT = ["パスワードはSettingsから変更できます", "パスワードはGitHubの設定で変更する",
            "APIキーはAWSのコンソールで発行する", "密码在Settings里修改", "パスワードは設定画面から変更できます"]
CJK_MASKED = [("パスワードはXk29sLq0zAです", "です"), ("合言葉は hunter です", "です"),
              ("合言葉はhunterでした", "でした"), ("비밀번호는 Xk29sLq0zA입니다", "입니다"),
              ("密码是Xk29sLq0zA。", "。")]


@pytest.mark.parametrize("text", CJK_KEPT)
def test_an_ascii_name_in_cjk_prose_after_the_word_for_password_stays(text: str):
    """"パスワードはSettingsから変更できます" (the password is changed from Settings) lost the rest of its
    line to [REDACTED]: a value ran on into the kana after it, and a particle's place or thing
    ("Settingsから", "GitHubの") was read as the password (the masking round's finding, stop 57)."""
    _kept(text)


@pytest.mark.parametrize(("text", "after"), CJK_MASKED)
def test_a_value_ends_where_kana_kanji_or_hangul_begin(text: str, after: str):
    masked = mask_secrets(text)
    assert "[REDACTED]" in masked and masked.endswith("[REDACTED]" + after) or masked.endswith(
        "[REDACTED] " + after), masked


# --- A secret named in prose or in a question and its answer (an outside privacy tester's, stop 60) ------
# A word that names a secret, the value a few words later in the same sentence, in the next sentence of the
# same line, or on the answer line of a Q/A pair; a URL's signature; an environment name and a space.

PROSE_NAMED = [
    # a question and its answer on one line (an agent CLI's written questions kept this in questions.jsonl)
    "what is the password? it is {}", "what's the db password? it's {}", "What is the wifi password? It is {}!",
    "what was the staging token? {}", "Which passphrase? It's {}", "I reset the db password. It is now {}",
    "Do you know the password? it's Ps-{}", "what is the pw? it is {}",
    "what is the secret? it was {}", "Q: staging db password? A: {}", "パスワードは？ {}",
    # ... and on the answer line of a Q/A pair
    "Q: staging db password\nA: {}", "Q: What is the root password?\nA: {}", "Question: vpn passphrase\nAnswer: {}",
    "Q: admin login\nA: it is {}", "Q. token for the bot\nA. {}", "- Q: パスワード\n- A: {}",
    # a few words later in the same sentence
    "login with admin and {}", "log in as root with {}", "sign in with deploy / {}", "The secret answer is {}",
    "the password we use is {}", "the password you need is {}", "the pass phrase is {}", "use the token {} for CI",
    "credentials admin / {}", "credentials are admin / {}", "creds: admin , {}",
    # a prompt that asks for it, and a comment or a pair that names it
    "psql -U admin -W then type {}", "mysql -u root -p and enter {}", "at the password prompt type {}",
    "when prompted for the passphrase, enter {}", "ssh deploy@host # pass {}",
    "user admin pass {}", "connect as admin (pass {})",
    # an environment name that says KEY, TOKEN or SECRET, a space, its value
    "HEROKU_API_KEY {}", "GITHUB_TOKEN   {}", "export STRIPE_SECRET_KEY {}", "JWT_SECRET {}",
]
PROSE_KEPT = [
    "the password is stored in Vault", "rotate the token every 90 days", "the pin is on the back of the card",
    "set the secret in GitHub settings", "what is the password policy?", "the login page is slow",
    "what is the password policy? it is documented in the wiki", "what's the token limit? it's 4096 per request",
    "where is the password? It is in the vault", "Did you rotate the API key? It is due on 2024-05-01",
    "We use a password manager. It's 1Password.", "the password manager we use is 1Password",
    "what is a token? It's a unit of text", "Q: how do I reset my password?\nA: Use the reset link.",
    "Q: where is the staging db password?\nA: In Vault, under kv/staging", "Q: token lifetime\nA: 3600s",
    "log in with Google and GitHub", "login as admin and check the logs", "sign in with email and password",
    "credentials for the bucket: read / write", "psql -U admin -W then type your password",
    "when prompted for the password, enter the one from Vault", "# pass the flag through", "user admin pass through",
    "GITHUB_TOKEN is required", "set GITHUB_TOKEN in the repo settings", "AWS_SECRET_ACCESS_KEY and AWS_ACCESS_KEY_ID",
    "API_KEY_HEADER X-Api-Key", "HEROKU_API_KEY ${{ secrets.HEROKU_API_KEY }}", "the secret answer is no",
    "pin the version to 1.2.3", "the pin is 4 digits long", "spin 4000 rpm", "the pin code is on the card",
    "https://example.com/search?q=signature&page=2", "what is the password? It is the same as before.",
]
PIN_NAMED = ["use the pin {} to unlock", "PIN {}", "the pin for the safe is {}", "what's the pin? it's {}",
             "Q: garage pin\nA: {}"]


@pytest.mark.parametrize("shape", PROSE_NAMED)
def test_a_secret_named_in_prose_or_in_a_question_and_its_answer_is_masked(shape: str):
    _masked(shape)


@pytest.mark.parametrize("shape", PIN_NAMED)
def test_a_pin_named_in_prose_is_masked(shape: str):
    pin = str(random.Random(shape).randint(1000, 999_999))
    masked = mask_secrets(shape.format(pin))
    assert pin not in masked and MASK in masked, masked


@pytest.mark.parametrize("name", ["X-Amz-Signature", "X-Goog-Signature", "X-Goog-signature"])
def test_a_urls_signature_is_masked(name: str):
    sig = _hex(name, 64)
    url = (f"https://b.s3.amazonaws.com/k.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=900&{name}={sig}"
           "&x-id=GetObject")
    masked = mask_secrets(url)
    assert sig not in masked and f"{name}={MASK}&x-id=GetObject" in masked, masked


def test_an_environment_name_and_a_space_before_a_uuid_is_masked():
    import uuid

    key = str(uuid.UUID(int=random.Random("heroku").getrandbits(128), version=4))
    assert mask_secrets(f"HEROKU_API_KEY {key}") == f"HEROKU_API_KEY {MASK}"


@pytest.mark.parametrize("text", PROSE_KEPT)
def test_prose_that_only_names_a_secret_stays(text: str):
    _kept(text)


def test_prose_rules_take_time_in_proportion_to_the_text():
    _fast("what is the password? " * 5_000)
    _fast("password " * 12_000)
    _fast("a" * 200_000)
    _fast("A" * 200_000)
    _fast("Q: password\n" * 8_000)
    _fast("Q: password" + " " * 100_000 + "\nA: x")
    _fast("login with a and " * 6_000)
    _fast("-W then " * 12_000)
    _fast("HEROKU_API_KEY " * 6_000)
    _fast("pin " * 25_000)
    _fast("?sig=" * 20_000)
    _fast("# pass " * 14_000)
    _fast("credentials a / " * 6_000)
    _fast("what is the password for " + "a " * 50_000 + "? it is x")
