"""Mask secrets (API keys, tokens, passwords, private keys) before text is indexed.

Long because: one table of rules read top to bottom; split, a rule and those it overlaps
(whose spans are merged) would lie in different files.

Notes and transcripts sometimes hold a pasted key; the index and the context injected
into prompts must never carry it. Two sources of regexes, run over the whole text:

* the plugins of ``detect-secrets`` (kept dependency) whose regexes match a token by
  its own shape: we reuse their ``denylist`` patterns, not ``analyze_line``, because a
  per-line, per-plugin call is far slower on a 1 MB note and gives no positions;
* our own table for what those plugins miss or match only in part (Anthropic, new
  OpenAI, GitHub fine-grained, Google, PEM blocks, URLs with passwords, assignments...).

Spans from both are merged (union), so a partial match from one source is widened by
the other. The entropy plugins are not used: they flag git hashes, UUIDs and digests.
detect-secrets is optional at run time; without it our table alone is used.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import importlib
import math
import re
import sys
import types
from collections import Counter
from collections.abc import Iterator

from recall.privacy.columns import column_spans, stacked_spans
from recall.privacy.safetext import LATIN_LOOK_ALIKES, MASK

__all__ = ["MASK", "find_secrets", "mask_key", "mask_path", "mask_secrets", "mask_together"]
# Bumped whenever the rules find more: every note indexed under an older version is read
# and masked again at the next `recall index` (it is part of each note's fingerprint), and
# the store is then scrubbed of the text masked before (recall.store.sqlite.Store.scrub).
RULES_VERSION = 22  # 22: a secret named in prose or in a question and its answer (stop 60)


def rules_mark(version: int = RULES_VERSION) -> str:
    """What a note's fingerprint holds of the rules it was masked with (``recall.indexing.indexer
    .fingerprint`` writes it, ``recall.store.sqlite.Store.notes_masked_before`` looks for it):
    one spelling, in one place. Written ``:m16:h``, it was looked for as ``%:m16``, so every
    note counted as masked before and every index scrubbed the store (stop 47, an outside tester)."""
    return f":m{version}:"

# Speed (a 1 MB note must take well under a second): CPython's re finds a pattern that
# starts with a literal by a fast substring search, but not one that starts with a
# look-behind or is case-insensitive. So the "not inside a word" check ("task-..." is
# not an "sk-" key) is done in Python on each match (option "b"), and case-insensitive
# rules are written in lower case and run on an ASCII-lowercased copy (option "l").
_T = r"[A-Za-z0-9_\-]"  # body of URL-safe tokens
# A name in the plural or numbered (``passwords:``, ``password2=``), spelt short (``passw``, ``pass_word``,
# ``pword``, ``p/w``), or a Wi-Fi network's (``psk``, ``WPA2 key``, ``network key``) is one too.
_KW_NAME = (  # names whose assigned value is a secret, their words joined by "_", ".", "-" or a space
    r"(?:pass(?:word|wd|phrase|code|_word|w)?|pword|p/w|pw|pwd|secret|token|api[ _.\-]?key|apikey|access[ _.\-]?key"
    r"|secret[ _.\-]?access[ _.\-]?key|private[ _.\-]?key|client[ _.\-]?secret|credentials?|creds"
    r"|(?:encryption|licen[cs]e|product|master|signing|session)[ _.\-]?(?:key|token|secret)"
    r"|psk|wpa2?[ _.\-]?(?:key|passphrase)|network[ _.\-]key"
    r"|auth|authorization)(?:[ _.\-]?(?:key|token))?(?:s|[0-9]{1,2})?(?![a-z0-9_])[\"'\]]{0,2}"
)
_KW = _KW_NAME + r"[ \t]*(?::=|=>|->|==?|:)[ \t]*"
# dbPassword =, accessToken:, adminPass: the same names in camelCase (option "c": the name
# starts right after a lower-case letter or a digit). "maxTokens" is a count, not a token.
_CAMEL = (
    r"(?:Password|Passwd|Passphrase|Pass|Secret|Token|ApiKey|AccessKey|PrivateKey|ClientSecret|Credentials?)"
    r"(?![a-z])[\"']?[ \t]*(?::=|=>|->|==?|:)[ \t]*"
)
# The word for "password" in the languages notes are written in, then ":" / "=" / a dash / an arrow, a
# particle (Japanese "は"), or the word for "is" ("ist", "lautet", "est", "è", "jest", "là"...). Lowered
# as ASCII only, so a capital outside ASCII is written out. The value must hold an ASCII letter or digit
# (option "a"), so "パスワードは必須です" stays.
_WORDS = (r"(?:パスワード|暗証番号|合言葉|密码|密碼|口令|비밀번호|비번|암호|password|passwort|kennwort|mot de passe"
          r"|contraseña|contrasena|contrasenya|senha|palavra-passe|wachtwoord|lösenord|losenord|adgangskode"
          r"|passord|salasana|hasło|haslo|heslo|jelszó|jelszo|parolă|parola|şifre|Şifre|sifre|mật khẩu|mat khau"
          r"|пароль|Пароль|ПАРОЛЬ|парола|Парола|лозинка|Лозинка|гасло|Гасло|κωδικός|Κωδικός|ΚΩΔΙΚΟΣ|סיסמה"
          r"|كلمة المرور|كلمة السر|पासवर्ड|รหัสผ่าน|kata sandi|kata laluan"
          # ... and for a token, an API or access key, a secret, a private key (an outside tester's, stop 55)
          r"|アクセストークン|認証トークン|トークン|apiキー|api キー|認証キー|秘密鍵|秘密キー"
          r"|シークレットキー|シークレット|アクセスキー|暗号化キー|暗号鍵|访问令牌|令牌|访问密钥|密钥|秘钥"
          r"|私钥|密鑰|金鑰|權杖|액세스 토큰|토큰|비밀 키|비밀키|액세스 키|api 키|개인 키|시크릿"
          # ... an access code, an API or secret key in German, French, Portuguese, Italian, and Spanish "clave"
          # (a password, but also "key" as in "punto clave", "palabras clave": only first on its line or after
          # an article or a possessive, "la clave", "mi clave"; rules v20)
          r"|zugangscode|zugangskennwort|zugangsschl(?:ü|ue)ssel|zugriffsschl(?:ü|ue)ssel|zugriffstoken"
          r"|api[ \-]schl(?:ü|ue)ssel|geheimer schl(?:ü|ue)ssel|cl[eéÉ] (?:d['’])?api|cl[eéÉ] d['’]acc[eèÈ]s"
          r"|cl[eéÉ] secr[eèÈ]te|cl[eéÉ] priv[eéÉ]e|jeton d['’]acc[eèÈ]s|jeton api|code d['’]acc[eèÈ]s"
          r"|chave (?:de acesso|(?:da )?api|secreta|privada)|chiave (?:di accesso|api|segreta|privata)"
          # (looked behind after the word: a look-behind first made every position of a text try the whole list)
          r"|clave(?:(?<=\bla clave)|(?<=\bmi clave)|(?<=\btu clave)|(?<=\bsu clave)|(?<=\buna clave)"
          r"|(?<=\bnueva clave)|(?<=\besta clave)|(?<![^\W\d_][ \t]clave)(?<![^\W\d_]clave))"
          r"(?: de acceso| (?:de la )?api| secreta| privada)?)")
# A qualifier between the word and its verb or colon, as English has ("the wifi password is X"): a
# preposition and up to four words, none ending a sentence ("la contraseña del wifi es X", "le mot de passe
# du wifi est X", "das Passwort für den Router ist X", "mot de passe d'administration : X"; rules v20).
_OF = (r"(?:(?:[ \t]+(?:for|of|to|del|de|du|des|do|da|dos|das|für|fur|fuer|vom|von|zum|zur|der|per|pour|para|van"
       r"|voor|di|della|dello|för|til|af)[ \t]+|[ \t]+d['’]|[ \t]+dell['’])"
       r"(?:[^\s.!?:=：。、,，]{1,30}[ \t]+){0,3}?[^\s.!?:=：。、,，\"']{1,30})?")
# Kana, kanji and hangul: a value is no run of them, and one ends where they begin.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_LABELS = (
    _WORDS + _OF + r"[ \t]*(?:(?:[:=：]|->|=>|\u2192|[-\u2013\u2014](?=[ \t])|は|が|を|是|为|為|은|는"
    r"|(?<=[ \t])(?:ist|lautet|est|es|è|é|is|er|är|on|jest|je|là|adalah)(?=[ \t]))[ \t]*[\"'「『]?|[「『])"
    r"([^\s\"'」』、。,，" + _CJK + r"]{4,200})"  # a value ends where kana, kanji or hangul begin (the
)  # prose after it: "パスワードはSettingsから変更できます" masked the rest of the line)
# ... and the word then the value after a space alone ("contraseña Xy7kq", "パスワード Xy7kq"): only a
# value that does not read as a word (option "r": a digit, a symbol or a capital inside it).
_LABELS_SPACED = _WORDS + r"[ \t]+([^\s\"'」』、。,，:=：" + _CJK + r"]{5,200})"

# Words that name a login's user and password together (rules v20): "Zugangsdaten: admin / X", "creds admin:X".
_CREDS = (r"(?:credentials?|creds|zugangsdaten|anmeldedaten|login-?daten|identifiants|credenciales|credenciais"
          r"|credenziali|ログイン情報|認証情報|凭据|凭证|登录信息|로그인 정보)")
# ... and with them, before a pair alone or a list, a login or an access ("## Login", "## Zugang").
_CREDS_OR_LOGIN = r"(?:" + _CREDS + r"|logins?|zugang|zugänge)"

# A label as documents and forms write it: up to three words or name parts, then the secret's
# name ("Admin password", "Prod DB password", "spring.datasource.password", "db_password").
_QUALIFIED = (r"(?:[a-z][a-z0-9_.\-]{0,30}[ \t._\-]){0,3}(?:password|passwd|passphrase|passcode|pw|secret|token"
              r"|api[ _\-]?key|apikey|access[ _\-]?key|private[ _\-]?key|client[ _\-]?secret|credentials?|creds)")

# What a label may say after the secret's name: "Password for the build server", "token of the bot".
_FOR = r"(?:[ \t]+(?:for|of|on|to)[ \t]+[^\n:]{1,40}?)?"

# Words after a password's name that say something about it, not what it is (lowered text):
# "the password is wrong", "Password: required", "password is hashed", "password: see below".
_NOT_A_PASSWORD = (
    r"(?:none|null|nil|empty|blank|required|optional|unset|unknown|same|wrong|correct|incorrect|secret|set|here"
    r"|there|fine|okay|weak|strong|secure|valid|invalid|default|mine|yours|missing|long|short|simple|new|old"
    r"|good|true|false|hidden|redacted|changeme|password|text|string|prompt|below|above|stdin|env|vault|tbd"
    r"|todo|different|too|also|not|the|that|this|what|still|only|just|needed|given|your|their|our|his|her"
    r"|daily|weekly|monthly|yearly|quarterly|annually|bcrypt|scrypt|yescrypt|sso|ldap|saml|oauth|kerberos"
    r"|[a-z'\-]*(?:ed|ing|ble|ive|ous|ful|less|ness|tion)"
    r")(?![a-z'\-])"
)

# NAME=, NAME: or export NAME= where NAME is an upper-case environment name holding a
# secret word (not "PWD" alone: the shell's working directory; "_KEY" names a key whose value is not a plain
# word: "PRIMARY_KEY=id" stays).
# The secret word ends its part of the name (TOKENIZER=, _KEYBOARD=, were masked), and PASS begins
# one or ends the name (COMPASS_PROJECT=, BYPASS_LIST= were: an outside tester's, stop 56); PGPASSWORD=
# and PGPASS= keep their glued prefix.
_ENV = (
    r"(?<![A-Z0-9_])(?:[A-Z][A-Z0-9_]{0,100})?(?:(?:PASSWORD|PASSWD|PASSPHRASE|_PWD|TOKEN|SECRET|CREDENTIALS?"
    r"|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH_?KEY|APP_?KEY|MASTER_?KEY|SIGNING_?KEY|_KEY|COOKIE|_CREDS)S?(?![A-Z])"
    r"|PWD_|_PASS|(?<![A-Z])PASS|PASS(?![A-Z0-9_]))"
    r"[A-Z0-9_]{0,100}"  # bounded, as no variable's name is longer: a 20,000-letter one took 7 s
    r"(?![a-z0-9_])[\"']?[ \t]*+(?::=|->|=|:)[ \t]*+"
)

# A secret named in prose or in a question and its answer (stop 60, an outside privacy tester's: "what is
# the password? it is X" went from an agent CLI's questions into questions.jsonl, recall.db and BM25). The
# words that name one, English and the Japanese, Chinese and Korean ones _WORDS knows (not all of _WORDS: tried
# at every position of a text, its 100 words cost four times as much); after them a qualifier ("for the
# staging db") or "again", then the sentence ends.
_PROSE_NAME = (r"(?:passw(?:or)?d|passphrase|passcode|pwd|pw|secret|token|api[ _\-]?key|apikey|access[ _\-]?key"
               r"|credentials|creds|login|パスワード|暗証番号|合言葉|密码|密碼|口令|비밀번호|비번|암호|トークン|apiキー"
               r"|api キー|シークレット|秘密鍵|令牌|密钥|토큰)")
_PROSE_OF = (r"(?:[ \t]+(?:for|of|on|to)[ \t]+(?:[^\s?!:]{1,30}[ \t]+){0,3}?[^\s?!:]{0,29}[^\s?!:.])?"
             r"(?:[ \t]+(?:again|now|here|please|today))?")
# ... what opens the answer: "it is", "it's", "that was", "its", "A:"; and the value, ending where kana,
# kanji or hangul begin (as in _LABELS).
_ANSWER_IT = r"(?:(?:it|that|this)(?:'s|’s|[ \t]+is|[ \t]+was|[ \t]+will[ \t]+be)(?:[ \t]+(?:now|still|just))?|its)"
_ANSWER = r"(?:" + _ANSWER_IT + r"|(?:a|ans|answer)[ \t]*[:.)])"
_PROSE_VALUE = r"[ \t]*[\"'`「]?([^\s\"'`,;、。，」』" + _CJK + r"]{4,200})"
# A question on one line and its answer on the next ("Q: staging db password" then "A: X").
_QA_ASKED = r"(?m)^[ \t>*\-]*(?:q|question|frage)[ \t]*\d{0,3}[ \t]*[:.)][^\n]{0,200}?(?<![a-z0-9_\-])"
_QA_ANSWERED = (r"[^\n]{0,200}\r?\n(?:[ \t]*\r?\n)?[ \t>*\-]*(?:a|ans|answer|antwort)[ \t]*\d{0,3}[ \t]*[:.)][ \t]*"
                r"(?:" + _ANSWER_IT + r"[ \t]+)?")
# A PIN's name and its digits (which only a PIN's name makes a secret: counts, ports and ids are digits too).
_PIN_NAME = r"(?:pin(?:[ _\-]?(?:code|number))?|passcode|暗証番号)(?![a-z])"
_PIN_DIGITS = r"[\"'「]?(\d{4,12})(?!\d|[.,]\d)"

# (kind, pattern, group holding the secret (0 = whole match), options):
#   b = must not start inside a word, c = must start right after a lower-case letter or a digit
#   (a camelCase name's second word), l = lower-case pattern run on lowered text,
#   a = the value must hold an ASCII letter or digit,
#   q = the value must not be a placeholder or code ("${DB_PASS}", "os.environ"),
#   u = the value must not be a port and a path (a URL's "host:8080/x@y" is no password),
#   v = q, and unquoted it must not be a plain word or number either ("required", "57").
#   r = the value must not read as a word: a digit, a symbol, or a capital after its first letter.
#   p = the value must be neither a placeholder nor a type name ("xxxxxxxx", "SecretStr", "varchar").
_OWN: list[tuple[str, str, int, str]] = [
    ("anthropic", r"sk-ant-" + _T + r"{20,}", 0, "b"),
    ("openai", r"sk-(?:proj|svcacct|admin|None)-" + _T + r"{20,}", 0, "b"),
    # Legacy OpenAI keys have no '-' in the body: a long unbroken run, never prose.
    ("openai", r"sk-[A-Za-z0-9]{32,}", 0, "b"),
    ("github", r"gh[pousr]_[A-Za-z0-9]{30,}", 0, "b"),
    ("github", r"github_pat_[A-Za-z0-9_]{22,}", 0, "b"),
    ("gitlab", r"gl(?:pat|dt|ft|soat|rt|cbt|ptt|agent|oas|imt|ffct)-" + _T + r"{20,}", 0, "b"),
    ("google-api-key", r"AIza" + _T + r"{35}", 0, "b"),
    ("google-oauth", r"GOCSPX-" + _T + r"{20,}", 0, "b"),
    ("google-oauth", r"ya29\." + _T + r"{20,}", 0, "b"),
    # detect-secrets' Slack regex stops at the first capital letter of the last part.
    ("slack", r"xox[abposrce]-[A-Za-z0-9\-]{10,}", 0, "b"),
    ("slack", r"xapp-[A-Za-z0-9\-]{10,}", 0, "b"),
    ("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/]{8,})", 1, ""),
    ("discord-webhook", r"discord(?:app)?\.com/api/webhooks/\d+/(" + _T + r"{20,})", 1, ""),
    ("stripe", r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}", 0, "b"),
    ("stripe", r"whsec_[A-Za-z0-9]{20,}", 0, "b"),
    ("jwt", r"eyJ" + _T + r"{5,}\.eyJ" + _T + r"{5,}\.[A-Za-z0-9_\-+/=]*", 0, "b"),
    ("aws-access-key-id", r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])", 0, "b"),
    ("aws-secret-key", r"aws.{0,24}?(?:secret|key)[\w\-]{0,24}[\"']?(?:[ \t]*[=:][ \t]*|[ \t]+(?:is[ \t]+)?)[\"']?"
     r"([a-z0-9/+]{40})(?![a-z0-9/+])", 1, "l"),
    # ... and on a line after the words that name it ("AWS secret key on its own line:", then the key).
    ("aws-secret-key", r"aws[^\n]{0,40}?(?:secret|key)[^\n]{0,60}?(?:\r?\n[ \t]*){1,3}[\"'`]?"
     r"((?=[a-z0-9/+]*[0-9/+])[a-z0-9/+]{40})(?![a-z0-9/+=])", 1, "l"),
    ("npm", r"npm_[A-Za-z0-9]{36}", 0, "b"),
    ("npm", r"_authToken[ \t]*=[ \t]*[\"']?([^\s\"']{8,})", 1, ""),
    ("azure-storage", r"(?:accountkey|sharedaccesskey)=([a-z0-9+/]{30,}={0,2})", 1, "l"),
    ("azure-sas", r"[?&]sig=([A-Za-z0-9%+/]{30,}={0,2})", 1, ""),
    ("sendgrid", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}", 0, "b"),
    ("twilio", r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", 0, "b"),
    ("huggingface", r"hf_[A-Za-z0-9]{30,}", 0, "b"),
    ("discord", r"[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6,7}\.[A-Za-z0-9_\-]{27,40}", 0, "b"),
    ("mailgun", r"key-[0-9a-zA-Z]{32}(?![A-Za-z0-9])", 0, "b"),
    ("heroku", r"HRKU-" + _T + r"{20,}", 0, "b"),
    ("digitalocean", r"do[opr]_v1_[a-f0-9]{64}", 0, "b"),
    ("pypi", r"pypi-AgE" + _T + r"{50,}", 0, "b"),
    ("shopify", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", 0, "b"),
    ("atlassian", r"ATATT3[A-Za-z0-9_\-=]{50,}", 0, "b"),
    ("linear", r"lin_api_[A-Za-z0-9]{32,}", 0, "b"),
    ("notion", r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})", 0, "b"),
    ("databricks", r"dapi[a-f0-9]{32}", 0, "b"),
    ("vault", r"hv[sbr]\." + _T + r"{20,}", 0, "b"),
    ("doppler", r"dp\.(?:st|pt|ct|sa|scim|audit)\." + _T + r"{20,}", 0, "b"),
    ("llm-api-key", r"(?:gsk_|r8_|xai-|pplx-)[A-Za-z0-9]{30,}", 0, "b"),
    ("telegram", r"(?<![0-9])\d{8,10}:[A-Za-z0-9_\-]{35}(?![A-Za-z0-9_\-])", 0, ""),
    ("age", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", 0, ""),
    ("private-key", r"Private-Lines:[ \t]*\d+[ \t]*\r?\n((?:[A-Za-z0-9+/=]{4,}\r?\n)*"
     r"[A-Za-z0-9+/=]{4,}(?=\r?\n|$))", 1, ""),  # PuTTY .ppk
    # scheme://user:PASSWORD@host (postgres, mysql, mongodb+srv, redis, amqp, https...).
    ("url-password", r"://[^\s:/?#@'\"]*:([^\s@/'\"]+)@", 1, "q"),
    # ... and a password holding an unencoded "/" or "@": up to the last "@" before a host.
    ("url-password", r"://[^\s:/?#@'\"]*:([^\s'\"]+)@[^\s@/'\"]+(?=[/?#:\s'\"]|$)", 1, "qu"),
    # Passwords on command lines: curl -u user:PASS, sshpass -p PASS, docker login -p PASS,
    # mysql -pPASS (glued: "-p NAME" is mysql's prompt, then a database name).
    ("cli-password", r"\bcurl\b[^\n]{0,400}?\s(?:-u[ \t]*|--user[ \t=]+)[\"']?[^\s:\"']*:([^\s\"']+)", 1, "q"),
    ("cli-password", r"\bsshpass\b[^\n]{0,200}?\s-p[ \t]*[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\b(?:docker|podman|nerdctl|buildah|helm registry|oras)\s+login\b[^\n]{0,300}?"
     r"\s(?:-p[ \t]*|--password[= \t]+)[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mariadb|mariadb-dump)\b[^\n]{0,300}?"
     r"\s-p[\"']?([^\s\"'-][^\s\"']*)", 1, "q"),
    # The rest of the class: tools whose option (or a fixed place) takes the password itself.
    ("cli-password", r"\bredis-cli\b[^\n]{0,300}?\s-a[ \t]+[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\bldap(?:search|modify|add|delete|passwd|whoami|compare|modrdn|exop)\b[^\n]{0,300}?"
     r"\s-w[ \t]*[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\b(?:sqlcmd|bcp|osql|isql)\b[^\n]{0,300}?\s-P[ \t]*[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\b(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)\b[^\n]{0,300}?"
     r"\s-p[ \t]+[\"']?([^\s\"'-][^\s\"']*)", 1, "q"),
    ("cli-password", r"\bkeytool\b[^\n]{0,300}?\s-(?:src|dest|new)?(?:store|key)pass[ \t]+[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\bopenssl\b[^\n]{0,300}?\s-k[ \t]+[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\s-pass(?:in|out|word)?[ \t]+[\"']?pass:([^\s\"']+)", 1, "q"),
    ("cli-password", r"\b(?:smbclient|rpcclient|smbmap|smbget|net)\b[^\n]{0,300}?\s(?:-U[ \t]*|--user(?:name)?[= \t]+)"
     r"[\"']?[^\s%\"']+%([^\s\"']+)", 1, "q"),
    # Archives: zip/unzip -P X, 7z/rar -pX (glued; "-p" alone asks); a share: net use \\host\share X /user:u.
    ("cli-password", r"\b(?:zip|unzip|zipcloak|funzip)\b[^\n]{0,300}?\s-P[ \t]+[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\b(?:7z|7za|7zr|7zz|rar|unrar)\b[^\n]{0,300}?\s-p[\"']?([^\s\"'-][^\s\"']*)", 1, "q"),
    ("cli-password", r"\bnet\s+use\b[^\n]{0,200}?\\\\[^\s\\]+\\\S*\s+[\"']?([^\s/\"'*][^\s\"']*)", 1, "q"),
    ("cli-password", r"\bnet\s+use\b[^\n]{0,300}?\s/u(?:ser)?:\S+\s+[\"']?([^\s/\"'*][^\s\"']*)", 1, "q"),
    ("cli-password", r"\bssh-keygen\b[^\n]{0,300}?\s-[NP][ \t]+[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\baz\s+login\b[^\n]{0,300}?\s(?:-p|--password)[ \t=]+[\"']?([^\s\"']+)", 1, "q"),
    # Oracle's user/password@service (sqlplus, rman, expdp...; a thin JDBC URL), lftp's -u user,password,
    # IPMI's and MQTT's -P, RDP's and PsExec's -p or /p:, wpa_passphrase's second word, Dockerfile's
    # "ENV NAME value" (an outside tester's, stop 57).
    ("cli-password", r"(?:\b(?:sqlplus|sqlcl|rman|expdp|impdp|sqlldr|dgmgrl)\b[^\n]{0,200}?\s[\"']?"
     r"|\b(?:exp|imp)[ \t]+(?:userid=)?[\"']?|jdbc:oracle:[a-z0-9]{1,8}:)"
     r"[A-Za-z0-9_$#.]{1,64}/([^\s@/\"']{1,200})@(?=[A-Za-z0-9_(])", 1, "q"),
    ("cli-password", r"\blftp\b[^\n]{0,300}?\s(?:-u|--user)[ \t]+[\"']?[^\s,\"']{1,64},([^\s\"']+)", 1, "q"),
    ("cli-password", r"\b(?:ipmitool|ipmiutil|mosquitto_(?:pub|sub|rr))\b[^\n]{0,300}?\s-P[ \t]*[\"']?([^\s\"']+)",
     1, "q"),
    ("cli-password", r"\b(?:rdesktop|psexec(?:64)?|paexec|winexe|evil-winrm|crackmapexec|netexec|nxc)\b[^\n]{0,300}?"
     r"\s-p[ \t]+[\"']?([^\s\"'-][^\s\"']*)", 1, "q"),
    ("cli-password", r"\b(?:x|wl|sdl-)?freerdp[23]?\b[^\n]{0,300}?\s/p(?:assword)?:[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\bwpa_passphrase[ \t]+(?:\"[^\"\n]{1,64}\"|'[^'\n]{1,64}'|[^\s\"']{1,64})[ \t]+[\"']?"
     r"([^\s\"']{8,63})", 1, "q"),
    ("assignment", r"(?m)^[ \t]*ENV[ \t]+[A-Za-z0-9_]{0,60}(?:PASSWORD|PASSWD|PASS|PWD|TOKEN|SECRET|API_?KEY"
     r"|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|_KEY)(?![a-z])[A-Za-z0-9_]{0,60}[ \t]+[\"']?([^\s\"'=]{4,200})", 1, "v"),
    ("cli-password", r"\bhtpasswd(?:\s+-[a-zA-Z]+)*\s+-[a-zA-Z]*b[a-zA-Z]*(?:\s+-[a-zA-Z]+)*\s+\S+\s+\S+\s+"
     r"[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\brabbitmqctl\s+(?:add_user|change_password)\s+\S+\s+[\"']?([^\s\"']+)", 1, "q"),
    ("cli-password", r"\bvault\s+login\s+(?:-\S+\s+)*[\"']?([^\s\"'-][^\s\"']*)", 1, "v"),
    # Typed into a pipe: echo PASS | sudo -S / docker login --password-stdin / chpasswd; sudo -S <<< PASS.
    ("cli-password", r"\b(?:echo|printf)[ \t]+(?:-[en]+[ \t]+)?[\"']?([^\s\"'|]+)[\"']?[ \t]*\|[ \t]*"
     r"(?:sudo\b[^\n|]*\s-S\b|[^\n|]*--password-stdin|chpasswd|passwd\b)", 1, "q"),
    ("cli-password", r"\bsudo\b[^\n]{0,100}?\s-S\b[^\n]{0,200}?<<<[ \t]*[\"']?([^\s\"']+)", 1, "q"),
    # user:PASS@host with no scheme (impacket, sqlmap, hydra targets): a host with a dot.
    ("cli-password", r"(?<![\w.:@-])(?!mailto:|tel:|sip:|xmpp:|urn:)[A-Za-z0-9_.\-]{1,64}:([^\s:@/'\"]{4,})@"
     r"(?:\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)(?![\w.])", 1, "v"),
    # A ~/.netrc entry: machine HOST login USER password PASS (one line or several).
    ("netrc", r"\blogin[ \t]+\S+\s+password[ \t]+[\"']?([^\s\"']+)", 1, "q"),
    # SQL: CREATE USER ... IDENTIFIED [WITH plugin] BY 'x', ALTER USER ... WITH PASSWORD 'x', ALTER ROLE
    # ... PASSWORD 'x', ALTER LOGIN ... WITH PASSWORD = N'x', SET PASSWORD FOR ... = 'x'.
    ("sql-password", r"\bidentified(?:[ \t]+with[ \t]+[a-z0-9_]+)?[ \t]+by(?:[ \t]+password)?[ \t]+n?([\"'])"
     r"([^\"'\n]{1,200})\1", 2, "lq"),
    # PostgreSQL takes PASSWORD after any role option or first: the keyword, then a quoted value.
    ("sql-password", r"\bpassword(?:[ \t]+|[ \t]*=[ \t]*)n?([\"'])([^\"'\n]{1,200})\1", 2, "lq"),
    ("sql-password", r"\bset[ \t]+password(?:[ \t]+for[ \t]+\S+)?[ \t]*=[ \t]*([\"'])([^\"'\n]{1,200})\1", 2, "lq"),
    # ODBC and ADO.NET connection strings quote a value with braces: PWD={x;y}.
    ("assignment", r"(?:pwd|password)[ \t]*=[ \t]*\{([^}\n]{1,200})\}", 1, "l"),
    # Windows: ConvertTo-SecureString "x" -AsPlainText, net user NAME x /add.
    ("cli-password", r"convertto-securestring[ \t]+(?:-string[ \t]+)?([\"'])([^\"'\n]{1,200})\1", 2, "lq"),
    ("cli-password", r"\bnet[ \t]+user[ \t]+[^\s/]+[ \t]+([^\s/*\"'][^\s\"']*)(?=[ \t]+/|[ \t]*$)", 1, "lq"),
    # The text of a WiFi QR code: WIFI:T:WPA;S:name;P:password;;
    ("wifi", r"\bwifi:(?:[a-z]:(?:\\.|[^;\\\n])*;)*?p:((?:\\.|[^;\\\n])+);", 1, "l"),
    # A 2FA seed (base32, capitals and 2-7: the random-token rule needs mixed case), named as one.
    ("totp-seed", r"(?:2fa|totp|otp|mfa|two[ \-]factor|二段階|二要素)[^\n]{0,30}?"
     r"(?:seed|secret|key|シークレット|シード|鍵)[^\n]{0,40}?(?<![a-z2-7])(?=[a-z2-7]*[2-7])([a-z2-7]{16,64})"
     r"(?![a-z0-9])", 1, "l"),
    # Recovery and backup codes, the list after the words.
    ("recovery-codes", r"(?:recovery|backup)[ \t]+codes?[ \t]*:?[ \t]*((?=[0-9a-z]*\d)[0-9a-z]{4,10}-[0-9a-z]{4,10}"
     r"(?:[ \t,;]+(?=[0-9a-z]*\d)[0-9a-z]{4,10}-[0-9a-z]{4,10}){0,15})", 1, "l"),
    # A user and password in a login named as one: "the login for grafana is admin/x".
    ("assignment", r"\blogin(?:[ \t]+(?:for|of|on|to)[ \t]+[^\s]{1,30})?(?:[ \t]+is|[ \t]*:)?[ \t]+[a-z0-9_.\-@]{1,64}"
     r"[ \t]*/[ \t]*([^\s/\"'`,;]{4,200})", 1, "lvr"),
    # An API key named without a separator ("use apikey x"), and "pass word: x".
    ("assignment", r"\b(?:api[ _\-]?key|apikey|network[ _\-]key|wpa2?[ _\-]?key|psk)[ \t]+([^\s\"'`,;:=]{8,200})",
     1, "lvr"),
    ("assignment", r"\bpass[ \t]+word[ \t]*[:=][ \t]*([^\s\"'`,;]{4,200})", 1, "lv"),
    # ... a plain ASCII word after the Japanese, Chinese or Korean word for password and its particle
    # ("合言葉は hunter", "비번은 hunter 입니다"): in those languages an ASCII word there is the value.
    ("assignment", r"(?:パスワード|暗証番号|合言葉|密码|密碼|口令|비밀번호|비번|암호)[ \t]*"
     r"(?:は|が|を|是|为|為|은|는|[:=：])[ \t]*[\"'「『]?(?!" + _NOT_A_PASSWORD
     + r")([a-z][a-z'\-]{3,40})(?![a-z0-9_\-])"
     # ... not one a particle makes a place or a thing ("パスワードはSettingsから変更", "GitHubの設定で")
     r"(?![ \t]*(?:の|から|で(?!す|した)|に|へ|と|や|より|まで|的|里|中|上|에서|의|에|으로|로))", 1, "lp"),
    # Japanese "パス" (a password, or a path): a value that is no path ("パスは /usr/local" stays).
    ("assignment", r"(?<![ァ-ヶー])パス(?![ァ-ヶー])[ \t]*(?:は|:|：|=)[ \t]*[\"'「『]?"
     r"([^\s/\\~.\"'」』、。,，][^\s/\\\"'」』、。,，]{3,199})(?=[\s」』、。,，]|です|$)", 1, "la"),
    # HTTP headers whose value is the credential, with or without a scheme word; the scheme alone is none
    # ("Authorization: Bearer", "Authorization: Basic, not digest": the optional scheme gave itself back
    # as the value, and took time in the square of a run of spaces).
    ("bearer", r"authorization:[ \t]*+[\"']?(?:(?:bearer|basic|token|digest|apikey|negotiate|ntlm)[ \t]++[\"']?)?+"
     r"(?!(?:bearer|basic|token|digest|apikey|negotiate|ntlm)(?![a-z0-9_\-]))([^\s\"']{6,})", 1, "lqr"),
    # Credentials in a URL's query: ?api_key=..., &access_token=..., &password=...
    # (and any name that ends in one of the secret words: libpq's sslpassword, refresh_token, db_secret)
    ("url-query", r"[?&;](?:api[_\-]?key|apikey|[a-z0-9_\-]*(?:token|secret|password|passwd|passphrase)|pwd|pass"
     r"|key|sig|signature|auth)=([^&\s#\"'`]{4,200})", 1, "lv"),
    # Kubernetes / compose env lists: name: DB_PASS, then value: on the next line.
    ("assignment", r"name:[ \t]*[\"']?[A-Za-z0-9_]*(?:PASS|PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY)"
     r"[A-Za-z0-9_]*[\"']?[ \t]*\r?\n[ \t]*value:[ \t]*[\"']?([^\s\"']+)", 1, "v"),
    # secret_key_base:, password_hash=, token_value: (a secret word, then more of a name).
    ("assignment", r"(?:secret|password|passphrase|token|credential)s?(?:_[a-z0-9]+){1,3}[\"']?[ \t]*"
     r"(?::=|=>|==?|:)[ \t]*[\"']?([^\s\"'`,;]{8,200})", 1, "blv"),
    # A ~/.pgpass line: host:port:database:user:PASSWORD (docs/team-store.md).
    ("pgpass", r"(?m)^[ \t]*[^\s:#][^\s:]*:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:(\S+)[ \t]*$", 1, "q"),
    # Hex keys named as keys ("encryption key: 9f86d0..."): hex alone is a digest, so not masked
    # by the random-token rule; its name says otherwise here.
    ("hex-key", r"(?:encryption|decryption|master|signing|hmac|aes|cipher|wrapping|data|secret|private)[ _\-]?key"
     r"(?:[^\n]{0,20}?[:=][ \t]*|[ \t]+)[\"'`]?(?:0x)?([0-9a-f]{32,128})(?![0-9a-z])", 1, "l"),
    # ... and by "secret", "salt", "token" ("HMAC secret 0f0f..."), or a field named just "key"
    # ("key: 9f86..." at the start of a line; a "cache key: <sha256>" in prose is a digest).
    # Further than right after its name and ":" or "=", a hex of exactly 40 is a commit's SHA-1 ("the token
    # leak fixed in a94a8fe5...", an outside tester's), not a key.
    ("hex-key", r"(?<![a-z0-9_])(?:secret|salt|token|passphrase|api[ _\-]?key)s?(?:[\"']?[ \t]*[:=][ \t]*[\"'`]?(?:0x)?"
     r"|[^\n]{0,20}?[:=\s][ \t]*[\"'`]?(?:0x)?(?![0-9a-f]{40}(?![0-9a-z])))([0-9a-f]{32,128})(?![0-9a-z])", 1, "l"),
    ("hex-key", r"(?m)^[ \t]*(?:- )?[\"']?key[\"']?[ \t]*[:=][ \t]*[\"'`]?(?:0x)?([0-9a-f]{32,128})(?![0-9a-z])",
     1, "l"),
    # Authorization headers; the value must hold a digit ("Basic authentication/..." is prose).
    ("bearer", r"(?:bearer|basic)[ \t]+((?=[a-z_\-.~+/]*[0-9])[a-z0-9_\-.~+/]{16,}=*)", 1, "bl"),
    # password=..., API_KEY: ..., "token": "..." (quoted, then unquoted: disjoint).
    ("assignment", _KW + r"([\"'`])([^\s\"'`]{4,200})\1", 2, "blq"),
    ("assignment", _KW + r"([^\s\"'`,;]{5,200})", 1, "blv"),
    # CLI flags (--password X, --token=X) and prose ("the password is Xy7!kq9zz").
    ("assignment", r"--(?:[a-z]+-)*(?:password|passwd|pass|pw|pwd|passphrase|token|api-key|secret|secret-key"
     r"|client-secret|storepass|keypass)[= ]([^\s\"'`]{5,200})", 1, "lv"),
    ("assignment", r"(?<![\w-])-(?:password|passwd|storepass|keypass|srcstorepass|deststorepass)[= ]"
     r"([^\s\"'`]{5,200})", 1, "lv"),
    ("assignment", r"(?:password|passwd|passphrase|passcode|token|api key|secret)"
     r"(?:[ \t]+(?:for|of|on|to)[ \t]+(?:[^\s]{1,30}[ \t]+){0,3}?[^\s]{1,30})?"
     r"[ \t]+(?:is|was)(?:[ \t]*:)?[ \t]+[\"'`]?([^\s\"'`]{6,200})", 1, "blv"),
    # ... and as a change is told: "set the password to X", "the password was changed to X".
    ("assignment", r"(?:set|changed?|reset|rotated?|updated?)[ \t]+(?:(?:the|my|our|its|his|her|their)[ \t]+)?"
     r"(?:[a-z0-9_\-]{1,20}[ \t]+){0,2}?(?:password|passwd|passphrase|passcode|secret|token)[ \t]+to[ \t]+"
     r"[\"'`]?([^\s\"'`]{6,200})", 1, "blv"),
    ("assignment", r"(?:password|passwd|passphrase|passcode|secret|token)[ \t]+(?:(?:was|is|has[ \t]+been)[ \t]+)?"
     r"(?:set|changed|reset|rotated|updated)[ \t]+to[ \t]+[\"'`]?([^\s\"'`]{6,200})", 1, "blv"),
    # Environment-style names (PGPASSWORD=, MYSQL_PWD=, TWILIO_AUTH_TOKEN:, DD_API_KEY=...): an
    # upper-case name holding a secret word anywhere in it, which _KW misses after a letter.
    ("assignment", _ENV + r"([\"'`])([^\s\"'`]{4,200})\1", 2, "bq"),
    ("assignment", _ENV + r"([^\s\"'`,;]{5,200})", 1, "bv"),
    ("assignment", _CAMEL + r"([\"'`])([^\s\"'`]{4,200})\1", 2, "cq"),
    ("assignment", _CAMEL + r"([^\s\"'`,;]{5,200})", 1, "cv"),
    # A quoted password with spaces in it ("correct horse battery staple").
    ("assignment", r"(?:pass(?:word|wd|phrase)?|secret)(?![a-z0-9_])[\"']?[ \t]*(?::=|=>|->|==?|:)[ \t]*"
     r"([\"'])([^\"'\n]{4,200})\1", 2, "blq"),
    ("assignment", _LABELS, 1, "lva"),
    ("assignment", _LABELS_SPACED, 1, "lvar"),
    # A cookie header's pairs (the session's value among them): the rest of the line.
    ("cookie", r"(?:set-)?cookie[ \t]*:[ \t]*((?=[^\n=]{1,64}=[^\s;]{4})[^\n]{6,400})", 1, "bl"),
    # A user and a password together: "credentials: admin / X", "login: deploy:X", "Zugangsdaten: admin / X",
    # and after a word for credentials a space alone: "creds admin:X" (not a host and a port: "creds db:5432/x").
    ("assignment", r"(?:" + _CREDS + r"|login|zugang)[ \t]*[:=：][ \t]*[^\s/:]{1,64}[ \t]*[/:][ \t]*"
     r"([^\s\"'`,;]{4,200})", 1, "blvu"),
    ("assignment", _CREDS + r"[ \t]+[a-z0-9_.@\-]{1,64}[/:]([^\s\"'`,;]{4,200})", 1, "blvu"),
    # A PIN is digits alone (which the rules above leave: counts, ports, ids): named as one.
    # (a full stop or a comma after it ends the sentence: "PIN: 4821." is masked, "1234.56" is a number)
    ("assignment", r"(?:pin(?:[ _\-]?(?:code|number))?|暗証番号|passcode)[ \t]*(?:[:=：]|は|is)[ \t]*[\"'「]?"
     r"(\d{4,12})(?!\d|[.,]\d)", 1, "bl"),
    ("assignment", r"pin[ _\-]?(?:code|number)[ \t]+(\d{4,12})(?!\d|[.,]\d)", 1, "bl"),
    # A secret named in prose or in a question and its answer (stop 60, an outside privacy tester's; the
    # value judged as everywhere: no plain word or number, "v", and unlike a word, "r"):
    # ... the name ends its sentence or question, the next one gives it: "what is the password? it is X",
    # "what's the db password? it's X", "I reset the db password. It is now X", "staging password? A: X";
    ("assignment", _PROSE_NAME + _PROSE_OF + r"[ \t]*[?.!;,:]{1,3}[ \t]*" + _ANSWER + r"[ \t]*:?" + _PROSE_VALUE,
     1, "blvr"),
    # ... a question that asks what it is, the answer after its "?" alone: "what was the staging token? X",
    # "パスワードは？ X";
    ("assignment", r"(?:(?:what|which|whats|what's|what’s|tell[ \t]+me|remind[ \t]+me|do[ \t]+you[ \t]+(?:know"
     r"|have|remember))(?![a-z])[^\n?.!]{0,60}?(?<![a-z0-9_\-])" + _PROSE_NAME + _PROSE_OF
     + r"|(?:パスワード|暗証番号|合言葉|密码|密碼|口令|비밀번호|비번|암호|トークン|apiキー)(?:は|って|是|는|은)?"
     r"(?:何|なに|什么|뭐)?(?:ですか|でしたっけ|吗|예요|에요)?)[ \t]*\?{1,3}" + _PROSE_VALUE, 1, "lvr"),
    # ... on the answer line of a Q/A pair ("Q: staging db password" then "A: X"; "Question:", "Answer:");
    ("assignment", _QA_ASKED + _PROSE_NAME + _QA_ANSWERED + _PROSE_VALUE, 1, "lvr"),
    ("assignment", _QA_ASKED + _PIN_NAME + _QA_ANSWERED + _PIN_DIGITS, 1, "l"),
    # ... a few words later in its sentence: a word that says what of it ("The secret answer is X", "the pass
    # phrase is X") or who uses it ("the password we use is X", "the password you need is X"),
    ("assignment", r"(?:password|passwd|passphrase|passcode|pass|secret|token|api[ _\-]?key|pin)(?:[ \t]+(?:answer"
     r"|phrase|word|code|itself|(?:that|which)[ \t]+(?:we|you|i|they)[ \t]+[a-z]{2,12}|(?:we|you|i|they)[ \t]+"
     r"(?:use|used|need|needed|set|chose|picked|typed|entered|got|want|gave[ \t]+(?:me|us|you))|to[ \t]+use)){1,2}"
     r"[ \t]+(?:is|was)(?:[ \t]*:)?" + _PROSE_VALUE, 1, "blvr"),
    # ... after "use the token X", "with the root password X", "enter the secret X",
    ("assignment", r"(?:use|using|with|enter|type|try)[ \t]+(?:the[ \t]+)?(?:[a-z0-9_\-]{1,20}[ \t]+)?"
     r"(?:password|passphrase|passcode|secret|token|api[ _\-]?key)[ \t]+" + _PROSE_VALUE, 1, "blvr"),
    # ... a login's user, then its password: "login with admin and X", "log in as root with X", "sign in with
    # deploy / X" ("log in with Google and GitHub" stays: a plain word),
    ("assignment", r"(?:log[ \-]?in|sign[ \-]?in|log[ \-]?on)[ \t]+(?:with|as|using)[ \t]+(?:user[ \t]+)?[^\s/]{1,64}"
     r"(?:[ \t]*/[ \t]*|[ \t]+(?:and|with|using)[ \t]+(?:(?:the[ \t]+)?(?:password|passphrase|pass|pw|pwd)[ \t]+)?)"
     + _PROSE_VALUE, 1, "blvr"),
    # ... and a credentials pair with spaces around "/" or a comma ("credentials admin / X", "creds: admin , X"),
    ("assignment", _CREDS + r"(?:[ \t]+(?:are|is|were|was))?[ \t]*[:=：]?[ \t]*[a-z0-9_.@\-]{1,64}"
     r"(?:[ \t]+/[ \t]*|[ \t]*/[ \t]+|[ \t]*,[ \t]*|[ \t]+and[ \t]+)" + _PROSE_VALUE, 1, "blvu"),
    # ... typed at the prompt a password's name or option asks with: "psql -U admin -W then type X", "mysql -u
    # root -p and enter X", "when prompted for the passphrase, enter X" (not a bare "prompt": "type python3"),
    ("assignment", r"(?:-[wp]|password|passphrase|passcode|pin)(?![a-z0-9_])[^\n]{0,60}?(?<![a-z0-9_\-])"
     r"(?:type[ds]?|enter(?:ed|s)?|paste[ds]?|input)(?![a-z])(?:[ \t]+(?:in|it))?" + _PROSE_VALUE, 1, "blvr"),
    # ... after a comment's or a pair's "pass": "ssh deploy@host # pass X", "user admin pass X", "(pass X)",
    ("assignment", r"(?:[#(,;|][ \t]*|//[ \t]*|(?<![\w-])--[ \t]+"
     r"|(?<![a-z0-9_])(?:user(?:name)?|login)[ \t]*[:=]?[ \t]*[^\s,;:=]{1,64}[ \t]*[,;/]?[ \t]+)"
     r"(?:pass(?:word|wd)?|pw|pwd)(?:[ \t]+is)?[ \t]+" + _PROSE_VALUE, 1, "lvr"),
    # ... a PIN's digits a few words after its name: "use the pin 4821 to unlock", "the pin for the safe is
    # 4821", "what's the pin? it's 4821" ("the pin is on the back of the card" stays: no digits).
    ("assignment", _PIN_NAME + r"(?:[ \t]+(?:for|of|on|to)[ \t]+(?:[^\s?.!:]{1,30}[ \t]+){0,3}?[^\s?.!:]{1,30})?"
     r"(?:[ \t]+(?:is|was)|[ \t]*\?{1,3}(?:[ \t]*" + _ANSWER + r")?)?[ \t]+" + _PIN_DIGITS, 1, "bl"),
    # A URL's signature, which signs it as its credential does (a presigned S3 or GCS URL: the credential was
    # masked, the signature kept): X-Amz-Signature=, X-Goog-Signature=, any ...signature= or sig= (stop 60).
    ("url-query", r"[?&;](?:[a-z0-9_\-]*signature|sig)=([^&\s#\"'`]{8,400})", 1, "lv"),
    # An environment name that says it holds a secret, a space, then its value ("HEROKU_API_KEY <uuid>",
    # "GITHUB_TOKEN X", as `env` and a dashboard's table print them; stop 60).
    ("assignment", r"(?<![A-Za-z0-9_\-])[A-Z][A-Z0-9_]{0,100}?(?:PASSWORD|PASSWD|PASSPHRASE|_PWD|_PASS|TOKEN|SECRET"
     r"|(?:API|ACCESS|PRIVATE|AUTH|APP|MASTER|SIGNING|SECRET|ENCRYPTION|LICENSE)_?KEY|CREDENTIALS?)S?"
     r"(?![A-Za-z0-9_])[ \t]+[\"'`]?([^\s\"'`,;]{5,200})", 1, "vr"),
    # A password that is one plain word, ending its line or sentence: "password: sunshine",
    # "Password for the prod box: letmein", "admin password is letmein". Not the words that
    # say something about a password ("is wrong", ": required", "is hashed").
    ("assignment", r"(?:password|passwd|passphrase|passcode|pw|pwd|pass)(?:[ \t]+(?:for|of|on|to)[ \t]+[^\n:]{1,40}?)?"
     r"(?:[ \t]*[:=]|[ \t]+is[ \t]*:?)[ \t]*[\"']?(?!" + _NOT_A_PASSWORD + r")([a-z][a-z'\-]{3,40})[\"']?"
     r"(?=[ \t]*[.!]?[ \t]*(?:\r?\n|$))", 1, "blp"),
    # "pw", "pwd", "pass" as a password's name, its value not a word: "root pw is toor1234XYZ",
    # "pwd toor1234XYZ", "ssh pass is d3pl0yM3Now".
    ("assignment", r"(?<![\w-])(?:(?:pw|pwd)(?:[ \t]+is)?(?:[ \t]*[:=][ \t]*|[ \t]+)"
     r"|pass(?:[ \t]+is[ \t]+|[ \t]*[:=][ \t]*))([A-Za-z0-9][^\s\"'`,;]{5,200})", 1, "qr"),
    # The value alone on the line after its name ("Password:" then the password).
    ("assignment", r"(?:password|passwd|passphrase|secret|token|api[ _\-]?key)[ \t]*:[ \t]*\r?\n[ \t]*"
     r"([^\s]{6,200})(?=[ \t]*(?:\r?\n|$))", 1, "blv"),
    # ... and alone on its line, the value on a later one (a converted document, a form).
    # (an Obsidian callout's title, "> [!note] Password", or a MkDocs admonition's, '!!! warning "creds"')
    ("assignment", r"(?m)^[ \t>#\-]*(?:\[![a-z\-]{1,30}\][+\-]?[ \t]*"
     r"|(?:!!!|\?\?\?\+?)[ \t]+[a-z\-]{1,30}[ \t]+[\"']?)?"
     + _QUALIFIED + _FOR + r"[\"']?[ \t]*+(?::[ \t]*+)?"
     r"(?:\r?\n[ \t]*+){1,3}(?::[ \t]++)?([^\s]{6,200})(?=[ \t]*(?:\r?\n|$))", 1, "lv"),
    # ... and so in the other languages' words (rules v20: "Passwort:", "パスワード", "mot de passe :" then the
    # value on the next line), the value then in ASCII: a line of Japanese or Chinese prose has no space in it.
    ("assignment", r"(?m)^[ \t>#\-*]*(?:\[![a-z\-]{1,30}\][+\-]?[ \t]*"
     r"|(?:!!!|\?\?\?\+?)[ \t]+[a-z\-]{1,30}[ \t]+[\"']?)?(?:[a-z][a-z0-9_.\-]{0,30}(?:[ \t._\-]|の|的)){0,3}"
     + _WORDS + _OF + r"[\"']?[ \t]*+(?:[:：][ \t]*+)?"
     r"(?:\r?\n[ \t]*+){1,3}(?::[ \t]++)?([!-~]{6,200})(?=[ \t]*(?:\r?\n|$))", 1, "lv"),
    # ... a label alone on its line that names a password or credentials, the user and the password below it
    # ("Router admin password" then "admin / X", as a note's name and its description read together; rules v20).
    ("assignment", r"(?m)^[ \t>#\-*]*(?:" + _QUALIFIED + _FOR + r"|(?:[a-z][a-z0-9_.\-]{0,30}(?:[ \t._\-]|の|的)){0,3}"
     r"(?:" + _WORDS + r"|" + _CREDS_OR_LOGIN + r")" + _OF + r")[\"']?[ \t]*+(?:[:：][ \t]*+)?(?:\r?\n[ \t]*+){1,3}"
     r"[^\s/:]{1,64}[ \t]*[/:][ \t]*([^\s]{4,200})(?=[ \t]*(?:\r?\n|$))", 1, "lvu"),
    # ... and a heading (or a label and ":") that names credentials or a login, then a list of two: the user and
    # the password ("## Credentials", "- admin", "- X"; rules v20).
    ("assignment", r"(?m)^[ \t>]*(#{1,6}[ \t]+)?(?:[a-z][a-z0-9_.\-]{0,30}[ \t._\-]){0,3}" + _CREDS_OR_LOGIN + _FOR
     + r"[ \t]*+(?(1)(?:[:：][ \t]*+)?|[:：][ \t]*+)(?:\r?\n[ \t]*+){1,3}(?:[-*+]|\d{1,2}[.)])[ \t]++[^\s]{1,64}"
     r"[ \t]*+\r?\n[ \t]*+(?:[-*+]|\d{1,2}[.)])[ \t]++([^\s]{4,200})(?=[ \t]*(?:\r?\n|$))", 2, "lv"),
    # ... a password that is one plain word, alone on the line after its label ("Password:" then
    # "sunshine"), as on the label's own line below.
    ("assignment", r"(?m)^[ \t>#\-*]*(?:[a-z][a-z0-9_.\-]{0,30}[ \t]){0,3}"
     r"(?:password|passwd|passphrase|passcode|pw|pwd)" + _FOR + r"[ \t]*:[ \t]*(?:\r?\n[ \t]*){1,3}(?!"
     + _NOT_A_PASSWORD + r")([a-z][a-z'\-]{3,40})"
     r"(?=[ \t]*[.!]?[ \t]*(?:\r?\n|$))", 1, "blp"),
    # A YAML block value: "password: |" (or ">-") then the value indented on the next line.
    ("assignment", r"(?:password|passwd|passphrase|secret|token|api[_\-]?key)[\w.\-]{0,30}[\"']?[ \t]*:[ \t]*"
     r"[|>][-+0-9]{0,2}[ \t]*\r?\n[ \t]+([^\s]{4,200})", 1, "blq"),
    # A table row: | Password | X |, | Admin password | X |, | DB_PASSWORD | X |, and a converted
    # sheet's "Prod DB password | X"; a key,value row: "db_password,X".
    ("assignment", r"(?m)(?:^|\|)[ \t]*(?:" + _QUALIFIED + r"|[a-z0-9_]*_(?:password|passwd|token|secret|key))"
     r"[ \t]*\|[ \t]*([^\s|]{4,200})[ \t]*(?=\||\r?$)", 1, "lv"),
    # ... and the cells after a first value that holds a digit or a symbol (one per server, per stage).
    ("assignment", r"(?m)(?:^|\|)[ \t]*(?:" + _QUALIFIED + r"|[a-z0-9_]*_(?:password|passwd|token|secret|key))"
     r"[ \t]*\|[ \t]*(?=[^\s|]*[0-9!@#$%^&*+=?])[^\s|]{4,200}[ \t]*\|[ \t]*"
     r"([^\s|]{4,200}(?:[ \t]*\|[ \t]*[^\s|]{4,200})*)[ \t]*(?=\||\r?$)", 1, "l"),
    ("assignment", r"(?m)^[ \t]*[\"']?" + _QUALIFIED + r"[\"']?[ \t]*[,;][ \t]*[\"']?([^\s,;\"']{4,200})[\"']?"
     r"[ \t]*(?=[,;]|\r?$)", 1, "lv"),
    # Password (prod): X, Password for prod: X, Password<TAB>X, Password - X, password → X,
    # and a label then the value after a space (OCR of a form).
    # (and a token's, a secret's, a key's: "Token → X", "API key (prod): X", "Client secret – X")
    ("assignment", r"(?:password|passwd|passphrase|passcode|token|secret|api[ _\-]?key|apikey|access[ _\-]?key"
     r"|secret[ _\-]?key|private[ _\-]?key)s?"
     r"(?:[ \t]*\([^)\n]{1,30}\)|[ \t]+(?:for|of|on|to)[ \t]+(?:[^\s:]{1,30}[ \t]+){0,3}?[^\s:]{1,30})?"
     r"(?:[ \t]*+(?::|\u2192)|[ \t]++[-\u2013\u2014](?=[ \t])|(?=[ \t]*\t))[ \t]*+([^\s\"'`,;]{5,200})", 1, "blv"),
    ("assignment", r"(?:password|passwd|passcode|passphrase)[ \t]+([^\s\"'`,;:=]{8,200})", 1, "blv"),
    # Markup: <password>X</password>, <add key="ApiKey" value="X"/>, <input type="password" value="X">.
    ("assignment", r"<(?:password|passwd|secret|token|api[_\-]?key|apikey|client[_\-]?secret|access[_\-]?key)>"
     r"([^<\s]{4,200})</", 1, "lq"),
    ("assignment", r"(?:key|name)=[\"'][^\"'<>]{0,40}?(?:password|passwd|secret|token|api[_\-]?key|apikey"
     r"|connectionstring)[^\"'<>]{0,40}[\"'][ \t]+value=[\"']([^\"']{4,200})[\"']", 1, "lq"),
    ("assignment", r"(?:key|name)=[\"'][^\"'<>]{0,40}?(?:password|passwd|secret|token|api[_\-]?key|apikey)"
     r"[^\"'<>]{0,40}[\"'][^>]{0,100}>([^<\s]{4,200})</", 1, "lq"),
    ("assignment", r"type=[\"']password[\"'][^>]{0,200}?value=[\"']([^\"']{4,200})[\"']", 1, "lq"),
    ("assignment", r"value=[\"']([^\"']{4,200})[\"'][^>]{0,200}?type=[\"']password[\"']", 1, "lq"),
    # Structured values: a secret's name whose value is an object ({"password": {"value": X}}),
    # a pretty-printer's value on the next line ("api_key":\n  "X"), a triple-quoted string.
    ("assignment", r"(?:password|passwd|passphrase|secret|token|api[_\-]?key|apikey|credentials?|private[_\-]?key)"
     r"[\"']?[ \t]*[:=][ \t]*\{[^{}]{0,200}?[\"']?(?:value|secret|plain(?:text)?|data|text|password|key)[\"']?"
     r"[ \t]*[:=][ \t]*[\"']([^\s\"']{4,200})[\"']", 1, "blq"),
    ("assignment", _KW_NAME + r"[ \t]*(?::=|=>|==?|:)[ \t]*\r?\n[ \t]*([\"'`])([^\s\"'`]{4,200})\1", 2, "blq"),
    ("assignment", _KW + r"(\"\"\"|\'\'\')[ \t]*([^\s\"']{4,200})[ \t]*\1", 2, "blq"),
    # A secret's quoted name, a comma, its quoted value: PHP's define('DB_PASSWORD', 'x'), a setter's
    # set("password", "x"), os.environ.setdefault("API_TOKEN", "x"), a pair in a list (an outside tester's).
    ("assignment", r"([\"'])[a-z0-9_.\-]{0,40}?(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey"
     r"|auth[_\-]?key|access[_\-]?key|private[_\-]?key|credentials?|_key)[a-z0-9_.\-]{0,20}\1[ \t]*,[ \t]*"
     r"([\"'])([^\s\"']{5,200})\2", 3, "lv"),
    # A private key in base64 (kubeconfig's client-key-data; "LS0tLS1CRUdJTi" is "-----BEGIN").
    ("private-key", r"(?:client-key-data|private-key-data|key-data)[ \t]*:[ \t]*([A-Za-z0-9+/=]{20,})", 1, ""),
    ("private-key", r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{8,}", 0, "b"),
    # A key as a URL's user name (Sentry's DSN: https://<32 hex>@o1.ingest.sentry.io/2).
    ("url-key", r"://([0-9a-f]{32,64})(?::[0-9a-f]{32,64})?@", 1, "l"),
    ("facebook", r"EAA[A-Za-z0-9]{30,}", 0, "b"),
    # Azure AD client secrets: 3 chars, a digit, "Q~", then 31-34 more.
    ("azure-client-secret", r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", 0, "b"),
    # Hex keys that look like digests, known by a vendor's name near them.
    ("twilio", r"twilio[^\n]{0,60}?(?<![0-9a-f])([0-9a-f]{32})(?![0-9a-z])", 1, "l"),
    ("datadog", r"(?:datadog|dd[_\- ]?(?:api|app))[^\n]{0,60}?(?<![0-9a-f])([0-9a-f]{40}|[0-9a-f]{32})"
     r"(?![0-9a-z])", 1, "l"),
    ("azure-client-secret", r"azure[^\n]{0,40}?secret[^\n]{0,20}?[ \t:=\"'`]"
     r"([A-Za-z0-9_~.\-]{30,44})(?![A-Za-z0-9_~.\-])", 1, ""),
]

# PEM private keys: the whole block from BEGIN to END, however the newlines are written
# (real, or "\n" inside JSON). Found in Python, not by one lazy ".*?END" regex: that one
# rescans up to the block limit for every BEGIN without an END (seconds on a bad note).
_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")
# A block cut short (no END line) is masked to the end of its base64 body.
_PEM_BODY = re.compile(r"(?:(?:\\n|\s)+[A-Za-z0-9+/=][A-Za-z0-9+/=:,\-]{7,})*")
_PEM_MAX = 40_000  # a 4096-bit RSA key is ~3.3 KB; PGP key blocks are larger


def _pem_spans(text: str) -> list[tuple[int, int, str]]:
    if "PRIVATE KEY" not in text:
        return []
    ends = [(m.start(), m.end()) for m in _PEM_END.finditer(text)]
    spans: list[tuple[int, int, str]] = []
    covered = 0
    for m in _PEM_BEGIN.finditer(text):
        if m.start() < covered:
            continue  # inside the block just masked
        i = bisect.bisect_left(ends, (m.end(), 0))
        if i < len(ends) and ends[i][0] - m.end() <= _PEM_MAX:
            covered = ends[i][1]
        else:
            body = _PEM_BODY.match(text, m.end())  # matches the empty string at worst
            covered = body.end() if body else m.end()
        spans.append((m.start(), covered, "private-key"))
    return spans


# Values that are clearly not secrets: placeholders, code, types, booleans, paths.
_PLACEHOLDER = re.compile(
    r"^(?:\$|%\(|\{|<|/|~/|\./|\*+$|x+$|\.{3}|your[_\-]|changeme$|example|dummy|redacted|none$|null$"
    r"|nil$|true$|false$|undefined$|required$|optional$|string$|str$|bytes$|int$|secret$"
    r"|password$|token$|env$|getpass|os\.|process\.env|self\.|settings\.)",
    re.I,
)
_PORT_PATH = re.compile(r"^\d{1,5}(?:/|$)")
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
# "required", "my_var", "ApiKey", "REQUIRED": a word or a name (letters only), not a secret.
_PLAIN_WORD = re.compile(r"^[A-Za-z_\-]{1,20}$")
# "3600s", "30d", "1.5GB", "90%": a quantity (TOKEN_TTL=3600s), not a secret.
_QUANTITY = re.compile(r"^\d+(?:\.\d+)?(?:ms|s|secs?|m|mins?|h|hrs?|d|days?|w|y|[kmgt]i?b?|chars|%)?$", re.I)


# A scheme or algorithm a setting names (``password: Argon2id``, ``token: RS256``,
# ``password_encryption = scram-sha-256``): how secrets are made, not one (an outside tester's
# sweep for over-masking, stop 56).
_SCHEME = re.compile(
    r"(?:argon2(?:id|i|d)?|bcrypt|scrypt|yescrypt|pbkdf2(?:[-_]?(?:hmac[-_]?)?sha-?(?:1|256|512))?"
    r"|(?:sha-?(?:1|224|256|384|512)|md5)(?:[-_]crypt)?|scram-sha-(?:1|256)|[hrep]s(?:256|384|512)|ed(?:25519|448)"
    r"|x25519|rsa(?:-?(?:2048|3072|4096))?|aes-?(?:128|192|256)(?:-(?:gcm|cbc|ctr))?|oauth2|saml2|ldapv3|kerberos5)",
    re.I)


# A type a schema gives a password's field (``password: SecretStr``, ``password: varchar``, GraphQL's
# ``password: String!``, ``PasswordField``): what the value is, not the value (an outside tester's, stop 57).
_TYPE_NAME = re.compile(
    r"\[?(?:(?i:str|string|bytes|text|varchar|nvarchar|char|binary|varbinary|blob|clob|int|integer|bool|boolean"
    r"|id|uuid|json|jsonb|float|hash)|[A-Z][A-Za-z0-9]{0,30}(?:Str|String|Bytes|Field|Type|Input|Hash))\]?[!?]?")


# A secret manager's reference (``prod/db/credentials``, ``projects/p/secrets/db-pass/versions/latest``,
# ``kv/data/app``): lower-case names between "/", which name a secret and are none.
_REFERENCE = re.compile(r"[a-z0-9][a-z0-9_.\-]{0,62}(?:/[a-z0-9][a-z0-9_.\-]{0,62}){1,12}")


def _no_type(value: str) -> bool:
    """Neither a placeholder (``xxxxxxxx``, ``<your-key>``) nor a type name (``SecretStr``)."""
    return not (_PLACEHOLDER.match(value) or _TYPE_NAME.fullmatch(value))


def _plausible_value(value: str, quoted: bool) -> bool:
    v = value.rstrip(".,;:)]}?")  # "?" the question's: "what is the password policy?" (stop 60)
    if len(v) < 4 or MASK in v or not _no_type(v) or "://" in v or _SCHEME.fullmatch(v) or _REFERENCE.fullmatch(v):
        return False  # "://": a reference (vault://, https://...), not the secret itself
    if any(c in v for c in "()[]{}") or _DOTTED_NAME.match(v):
        return False  # a call, a subscript, a type, an attribute: code, not a value
    if not quoted and (_PLAIN_WORD.match(v) or _QUANTITY.match(v) or len(v) < 5 or not any(c.isalpha() for c in v)
                       or "=" in v.rstrip("=")):
        return False  # unquoted: words, counts ("12/12"), nested "helper=osxkeychain"
    return True


# detect-secrets plugins whose regexes we reuse (whole match = the token). Left out on
# purpose: keyword (too loose in code: flags `password = get_password()`), basic-auth,
# npm, azure and private-key (ours mask a better span), artifactory (its match eats the
# char before the token), telegram (ours also accepts ".../bot<token>"), public IP (not
# a secret), the entropy ones (flag hashes), and the case-insensitive keyword regexes
# (aws secret, slack, cloudant, ibm, softlayer): slow under re.IGNORECASE and covered by
# our own rules above.
_DS_PLUGINS = (
    "aws.AWSKeyDetector", "discord.DiscordBotTokenDetector", "github_token.GitHubTokenDetector",
    "gitlab_token.GitLabTokenDetector", "jwt.JwtTokenDetector", "mailchimp.MailchimpDetector",
    "openai.OpenAIDetector", "pypi_token.PypiTokenDetector", "sendgrid.SendGridDetector",
    "square_oauth.SquareOAuthDetector", "stripe.StripeDetector", "twilio.TwilioKeyDetector",
)

_Rule = tuple[str, "re.Pattern[str]", int, str]
_rules: list[_Rule] | None = None
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@contextlib.contextmanager
def _requests_on_first_use() -> Iterator[None]:
    """detect-secrets' plugins import ``requests`` (urllib3, ssl, http.client: ~85 ms, most of the
    rules' first use, which the daemon's first answer after a start waited for) for a verification
    recall never runs. While they are imported, ``requests`` is a stand-in module that imports the
    real one on its first attribute (PEP 562), so a plugin that does use it gets it whole."""
    if "requests" in sys.modules:
        yield
        return
    stand_in = types.ModuleType("requests")

    def real(name: str) -> object:
        if sys.modules.get("requests") is stand_in:
            del sys.modules["requests"]
        return getattr(importlib.import_module("requests"), name)

    stand_in.__getattr__ = real  # type: ignore[method-assign]
    sys.modules["requests"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("requests") is stand_in:
            del sys.modules["requests"]


def _detect_secrets_rules() -> list[_Rule]:
    try:
        with _requests_on_first_use():
            import detect_secrets.plugins  # noqa: F401  (fails fast when not installed)
            for name in _DS_PLUGINS:
                with contextlib.suppress(Exception):  # the loop below skips it
                    importlib.import_module(f"detect_secrets.plugins.{name.split('.')[0]}")
    except Exception:  # not installed: our own table still applies
        return []
    rules = []
    for name in _DS_PLUGINS:
        module, cls_name = name.split(".")
        try:
            cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls_name)
            kind = cls.secret_type.lower().replace(" ", "-")
            rules += [(kind, rx, 0, "b") for rx in cls.denylist if not rx.flags & re.IGNORECASE]
        except Exception:  # a plugin renamed or changed in another version: skip it alone
            continue
    return rules


def _all_rules() -> list[_Rule]:
    global _rules
    if _rules is None:
        own = [(kind, re.compile(p), g, opts) for kind, p, g, opts in _OWN]
        _rules = own + _detect_secrets_rules()
    return _rules


def _ascii_lower(text: str) -> str:
    # str.lower() is fast but may change the length (e.g. "İ"); offsets must line up.
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_LOWER)


# The fallback for tokens no rule knows: a run of base64/URL-safe characters that looks
# drawn at random. Measured on prose and real notes (tests/core/privacy/test_masking.py, README):
# identifiers, paths, versions, UUIDs and hex digests (git hashes, trace ids) stay.
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-~]{20,}={0,2}")
# A part between separators that reads as a word, a number or an acronym.
_WORDY = re.compile(r"[A-Z]?[a-z]*|[A-Z]+s?|[0-9]+")
_SEPARATORS = re.compile(r"[-_/~]+")
_HEXISH = re.compile(r"[0-9a-fA-F\-]+")
# The words of a path's folders (``_CAMEL_PARTS`` less the symbols): 3.2+ letters on average in
# /srv/MyApp/build-3 or /Users/bob/GitHub/recall-1, ~1.8 in a random key that holds a "/".
RANDOM_MIN_PATH_PART = 3.0
RANDOM_MIN_CHARS = 20
RANDOM_MIN_BITS = 3.6  # Shannon entropy per character, at 20 characters (raised for longer)
RANDOM_MIN_SWITCHES = 0.36  # share of neighbours in different classes (lower/upper/digit/other)
# Mean length of its "words" (Capitalised runs, acronyms, numbers, single symbols): ~1.8
# in random strings (3.3 at the 99th percentile of 20-char ones), 3.7+ in CamelCase names.
RANDOM_MAX_PART = 3.4
_CAMEL_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+|.")


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _class(c: str) -> int:
    return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3


def looks_random(token: str) -> bool:
    """Whether ``token`` (20+ token characters) looks like a random key: letters of both
    cases and digits, thoroughly mixed, with close to maximal entropy; never a hex string."""
    t = token.strip("=-_/+~")
    n = len(t)
    if n < RANDOM_MIN_CHARS or _HEXISH.fullmatch(t):
        return False
    if not (any(c.islower() for c in t) and any(c.isupper() for c in t) and any(c.isdigit() for c in t)):
        return False
    if t.startswith(("sha1-", "sha256-", "sha384-", "sha512-")):
        return False  # a digest (subresource integrity, lockfiles), not a key
    if all(_WORDY.fullmatch(part) for part in _SEPARATORS.split(t)):
        return False  # words, numbers and acronyms joined: a path, a branch, a slug, a name
    if "/" in t and _mean_word(t) >= RANDOM_MIN_PATH_PART:
        return False  # a path whose folders are CamelCase names (/Users/bob/GitHub/recall-1, MyApp/build-3)
    if token.startswith("/") and t.count("/") >= 2 and all(_switches(piece) <= 2 for part in t.split("/")
                                                           for piece in _SEPARATORS.split(part)):
        # an absolute path of short names (/tmp/attackB/r09/home, /tmp/faultA/fh-latin1: a name's words
        # counted apart; an outside tester's folder was masked in the line that named it to repair, stop
        # 55): a key's parts switch case often
        return False
    switches = sum(_class(a) != _class(b) for a, b in zip(t, t[1:])) / (n - 1)
    if switches < RANDOM_MIN_SWITCHES or n / len(_CAMEL_PARTS.findall(t)) > RANDOM_MAX_PART:
        return False  # CamelCase names, words with a number
    # The entropy 99% of random strings of n characters (62-64 symbols) reach, less a margin:
    # 3.6 bits a character at 20 characters, 4.34 at 40, 4.85 at 64 (tests/core/privacy/test_masking.py).
    return _entropy(t) >= min(RANDOM_MIN_BITS + 0.744 * math.log2(n / RANDOM_MIN_CHARS), 5.0)


def _switches(part: str) -> int:
    """How often the kind of character (lower, upper, digit, other) changes along ``part``."""
    return sum(_class(a) != _class(b) for a, b in zip(part, part[1:]))


def _mean_word(t: str) -> float:
    words = [w for w in _CAMEL_PARTS.findall(t) if w.isalnum()]  # letters and digits hold >= 1 of them
    return sum(map(len, words)) / len(words)


def _random_spans(text: str) -> list[tuple[int, int, str]]:
    spans = []
    for m in _CANDIDATE.finditer(text):
        if looks_random(m.group()):
            spans.append((m.start(), m.end(), "random-token"))
    return spans


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret value in ``text``: sorted, non-overlapping.

    The rules read a plain view of ``text``: characters that draw as nothing (soft hyphen,
    zero-width, word joiner, BOM, variation selectors, Unicode tags) and markdown's ``**``, ``~~``
    and backticks removed, other white space read as a space, compatibility forms (full-width
    ``：``, ``＝``), URL-encoded punctuation (``%3D``) and HTML character references (``&#58;``,
    ``&quot;``) as their plain character; then again
    with letters of other scripts that draw like Latin ones read as those
    (``safetext.LATIN_LOOK_ALIKES``: "pаssword" with a Cyrillic "а"). A table's column whose
    header names a secret is read by ``columns.column_spans``.
    An agent is shown text with those characters gone (``safetext.agent_text``), so a secret
    they split must be found whole; each span found is mapped back onto ``text``."""
    view = _plain_view(text)
    plain = text if view is None else view[0]
    spans = _find(plain)
    if _MIXED_SCRIPT.search(plain) or (_LOOK_WORD.search(plain) and _LATIN.search(plain)):
        # "pаssword" with a Cyrillic "а" reads as "password"; "ΑΡΙ key" in Greek capitals as "API key"
        spans = _merge(spans + _find(plain.translate(LATIN_LOOK_ALIKES)))
    if view is None:
        return spans
    back = view[1]
    return _merge([(*back(start, end), kind) for start, end, kind in spans])


_LOOK = re.escape("".join(map(chr, LATIN_LOOK_ALIKES)))
# A look-alike beside a Latin letter or digit: a word of mixed scripts (Russian or Greek text
# alone is read once).
_MIXED_SCRIPT = re.compile(f"[A-Za-z0-9_][{_LOOK}]|[{_LOOK}][A-Za-z0-9_]")
# A word of look-alikes only, in text that also has Latin letters: read as Latin too.
_LOOK_WORD = re.compile(f"(?<!\\w)[{_LOOK}]{{2,}}(?!\\w)")
_LATIN = re.compile("[A-Za-z]")


def _unlike_a_word(value: str) -> bool:
    """"Xy7kq", "abc-def!", "hunterZ": not a word of prose ("segura", "oublié", "Richtlinie")."""
    return any(c.isdigit() or (not c.isalnum() and c not in "-'") or (i and c.isupper()) for i, c in enumerate(value))


def _plausible_cell(value: str) -> bool:
    return _plausible_value(value, quoted=False)


# A call named for a login, a connection or a credential (smtp.login("me", "x"), pymysql.connect("db",
# "root", "x"), HTTPBasicAuth("svc", "x"), new NetworkCredential("a", "x"), auth=("admin", "x")): its
# password is a quoted argument right after another quoted one (the user), and no word or name.
_CREDENTIAL_CALL = re.compile(r"(?:login|signin|auth(?!or)|credential|connect)[a-z0-9_]{0,30}[ \t]*(?:=[ \t]*)?\(")
_CALL_ARG = re.compile(r"[ \t]*(?:[a-z_][a-z0-9_]{0,30}[ \t]*=[ \t]*)?(?:([\"'])([^\"'\n]{0,200})\1"
                       r"(?:\.[a-z_][a-z0-9_]{0,30}\(\))?|[^,()\"'\n]{0,200})[ \t]*")
_CALL_ARGS_MAX = 8
_EMAIL = re.compile(r"[a-z0-9_.+\-]{1,64}@[a-z0-9\-]{1,63}(?:\.[a-z0-9\-]{1,63}){1,8}")  # a user, not a password


def _call_spans(text: str, low: str) -> list[tuple[int, int, str]]:
    spans = []
    for m in _CREDENTIAL_CALL.finditer(low):
        pos, after_quoted = m.end(), False
        for _ in range(_CALL_ARGS_MAX):
            arg = _CALL_ARG.match(low, pos)
            if arg is None:  # never: the pattern matches the empty string
                break
            quoted = arg.group(1) is not None
            if quoted and after_quoted and not _EMAIL.fullmatch(arg.group(2)) \
                    and _plausible_value(text[arg.start(2):arg.end(2)], quoted=False):
                spans.append((arg.start(2), arg.end(2), "assignment"))
            after_quoted, pos = quoted, arg.end()
            if low[pos:pos + 1] != ",":
                break
            pos += 1
    return spans


# A label in the plural and the list of values after it: "The passwords are X and Y.", "tokens: X, Y".
_PLURAL_LABEL = re.compile(r"(?:passwords|passwds|passphrases|passcodes|secrets|tokens|api[ _\-]?keys|apikeys"
                           r"|access[ _\-]?keys|secret[ _\-]?keys|private[ _\-]?keys)"
                           r"(?:[ \t]+(?:are|were)(?:[ \t]*:)?|[ \t]*[:=])[ \t]*")
_LIST_ITEM = re.compile(r"[\"'`]?([^\s\"'`,;]{4,200})[\"'`]?")
_LIST_SEP = re.compile(r"[ \t]*(?:,[ \t]*(?:and[ \t]+)?|and[ \t]+)")
_LIST_MAX = 16


def _list_spans(text: str, low: str) -> list[tuple[int, int, str]]:
    spans = []
    for m in _PLURAL_LABEL.finditer(low):
        if m.start() > 0 and text[m.start() - 1] in _ALNUM:
            continue
        pos = m.end()
        for _ in range(_LIST_MAX):
            item = _LIST_ITEM.match(low, pos)
            if item is None:
                break
            start, end = item.span(1)
            end -= len(low[start:end]) - len(low[start:end].rstrip(".!"))
            if _plausible_value(text[start:end], quoted=False):
                spans.append((start, end, "assignment"))
            sep = _LIST_SEP.match(low, item.end())
            if sep is None:
                break
            pos = sep.end()
    return spans


def _in_arn(text: str, start: int) -> bool:
    """Whether ``start`` lies inside an ARN (``arn:aws:secretsmanager:...:secret:prod/x``): a name."""
    lo = max(0, start - 2048)  # an ARN is at most 2048 characters: no scan back over a long text per match
    word = max(text.rfind(" ", lo, start), text.rfind("\n", lo, start), text.rfind("\t", lo, start), lo - 1) + 1
    return text.startswith("arn:", word, start)


def _find(text: str) -> list[tuple[int, int, str]]:
    low = _ascii_lower(text)
    spans = _pem_spans(text) + _random_spans(text) + column_spans(text, low, _plausible_cell) \
        + (stacked_spans(text, low, _plausible_cell) if "\n" in text else []) + _call_spans(text, low) \
        + _list_spans(text, low) + _joined_spans(text)
    for kind, rx, group, opts in _all_rules():
        for m in rx.finditer(low if "l" in opts else text):
            if "b" in opts and m.start() > 0 and text[m.start() - 1] in _ALNUM:
                continue
            if "c" in opts and (m.start() == 0 or not (text[m.start() - 1].islower() or text[m.start() - 1].isdigit())):
                continue
            start, end = m.span(group)
            value = text[start:end]
            if end <= start or value == MASK:
                continue
            if ("q" in opts or "v" in opts) and not _plausible_value(value, quoted="q" in opts):
                continue
            if ("q" in opts or "v" in opts) and _in_arn(text, start):
                continue  # arn:aws:secretsmanager:...:secret:NAME names the secret
            if "u" in opts and _PORT_PATH.match(value):
                continue  # host:8080/path@x: a port and a path, not a password
            if "a" in opts and not any(c in _ALNUM for c in value):
                continue
            if "r" in opts and not _unlike_a_word(value):
                continue
            if "p" in opts and not _no_type(value):
                continue
            spans.append((start, end, kind))
    return _merge(spans)


@functools.lru_cache(maxsize=8192)
def _plain_char(c: str) -> str | None:
    """What the plain view reads for ``c``: None when ``c`` itself (every ASCII character)."""
    import unicodedata

    from recall.privacy.safetext import HIDDEN, visible

    if c == "`":
        return ""  # markdown's code marks: `password`: X
    if c.isascii():
        return None
    if c.isspace():
        return " "
    if not visible(c) or HIDDEN.match(c):
        return ""
    plain = unicodedata.normalize("NFKC", c)
    return None if plain == c else plain


# A URL-encoded ASCII character that is not a letter or a digit (%3D "=", %5F "_", %3A ":"):
# read as that character.
_PERCENT = re.compile(r"%(?:2[1-9A-Fa-f]|3[A-Fa-f]|40|5[B-Fb-f]|60|7[B-Eb-e])")


# An HTML character reference (``&#58;``, ``&#x3A;``, ``&colon;``, ``&quot;``, ``&amp;``): read as
# the character it names, as a browser and an agent read it.
_ENTITY = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9A-Fa-f]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)")


def _entity_char(ref: str) -> str | None:
    """The one character ``ref`` names (itself read plainly), or None (not one character)."""
    import html

    char = html.unescape(ref)
    if len(char) != 1:  # an unknown name stays as it is (a reference is never one character)
        return None
    plain = _plain_char(char)
    return char if plain is None else plain


# markdown's backslash escape of a punctuation character (``DB\_PASSWORD``, ``api\_key``), which
# converters write for every ``_`` of a document's cell: read as that character, as a renderer
# shows it (an outside tester's spreadsheet of secrets went unmasked, stop 45).
_MD_ESCAPE = re.compile(r"\\[!-/:-@\[\]-`{-~]")  # not a backslash's own: \\host\share stays


# A space inside a word spelt out letter by letter (``P a s s w o r d :X``), as a PDF's text layer
# gives a kerned or letter-spaced label: read as the word (an outside tester's PDF, stop 45).
_SPACED_GAP = re.compile(r"(?<=(?<!\S)[^\W\d_]) (?=[^\W\d_](?:[ \t\n:=]|\Z))")

# A line continued on the next (a shell's or Python's backslash, an opening parenthesis that ends its
# line: ``KEY=\`` then the value, ``PASSWORD = (`` then ``"value"``): read as one line, a space
# between the name and the value (an outside tester's, stop 55).
_CONTINUED = re.compile(r"\\\r?\n[ \t]*|\([ \t]*\r?\n[ \t]*")
# Markdown's other emphasis around a word (``__Password__: X``, ``*Password*: X``, ``_Password_: X``),
# read as the word: only ``**`` was (an outside tester's, stop 56). A mark opens before a word or
# closes after one, so ``DB_PASSWORD`` and ``*args`` keep theirs; looked for only where a text has
# an emphasized word (``_EMPHASIZED``). And a link's text or an image's alt text read apart from
# its target (``[the password is X](https://...)``: the value ran into the URL, and was kept).
_EMPHASIS_MARK = re.compile(r"(?<![\w*])[*_]{1,2}(?=[^\W_])|(?<=[^\W_])[*_]{1,2}(?![\w*])")
_EMPHASIZED = re.compile(r"(?<![\w*])([*_]{1,2})[^\W_][^\n*_]{0,60}?(?<=[^\W_])\1(?![\w*])")
_LINK_TARGET = re.compile(r"\]\(")
# What draws a label and its value apart, read as the text shown (an outside tester's sweep, stop
# 56): a blockquote's markers at a line's start (``> Password:`` then ``> X``), inline HTML tags in
# a note (``<b>Password:</b> X``, ``password: <code>X</code>``; ``<br>`` a line break), Obsidian's
# inline field (``password:: X``) and YAML's ``!!str`` before a value. A one-``!`` tag names where
# the value is (``!secret wifi_password``, ``!env_var KEY``): no secret, and no longer masked.
_QUOTE_MARKS = re.compile(r"(?m:^[ \t]*(?:>[ \t]?)+(?:\[![A-Za-z\-]{1,30}\][+\-]?[ \t]*)?)")  # and a callout's [!note]
_INLINE_TAG = re.compile(r"(?i:</?(?:b|strong|em|i|u|s|code|kbd|samp|var|mark|span|small|sub|sup|abbr|cite|q|font)"
                         r"\b[^<>\n]{0,200}>|<br[ \t]*/?>)")
# ... and an HTML block (a paragraph, a list item, a table's cell, a definition, a summary) starts a line, as
# a browser draws it: ``<dt>Password</dt><dd>X</dd>``, ``<td>password</td><td>X</td>`` read as a label
# alone on its line and the value below it (an outside tester's, stop 57).
_BLOCK_TAG = re.compile(r"(?i:</?(?:p|div|li|ul|ol|dl|dt|dd|tr|td|th|table|thead|tbody|tfoot|caption|summary"
                        r"|details|h[1-6]|section|article|header|footer|pre|blockquote|figure|figcaption)"
                        r"\b[^<>\n]{0,200}>)")
_FIELD = re.compile(r"(?<=\w)::(?=[ \t])")
_YAML_TAG = re.compile(r"(?<=:[ \t])!!(?:str|binary)[ \t]+|(?<=:[ \t])![A-Za-z_]+[ \t]+[^\s]+")


_SHOWN = ((_QUOTE_MARKS, ">"), (_INLINE_TAG, "<"), (_BLOCK_TAG, "<"), (_FIELD, "::"), (_YAML_TAG, "!"))


def _plain_mark(found: str) -> str:
    """What one mark of ``_plain_view`` reads as (an entity's character is found apart)."""
    if found in ("**", "~~") or not found.strip("*_") or found.lstrip(" \t").startswith(">") or found[0] == "!":
        return ""
    if found[0] == "<":
        return " " if found[1:3].lower() == "br" else "\n" if _BLOCK_TAG.fullmatch(found) else ""
    if found == "::":
        return ":"
    if "\n" in found or found == "](":
        return " "
    if found[0] == "%":
        return chr(int(found[1:], 16))
    if found[0] == "\\" and len(found) == 2:
        return found[1]
    return _plain_char(found) or ""


def _plain_view(text: str):
    """(plain text, a function from a position in it to one in ``text``), or None when the
    plain view is ``text`` itself (checked once per distinct character: cheap on long text)."""
    odd = sorted(c for c in set(text) if _plain_char(c) is not None)
    # markdown's bold and strike-through: **Password:** X, ~~password~~: X (a lone * is a wildcard)
    marked = "**" in text or "~~" in text
    encoded = "%" in text and _PERCENT.search(text) is not None  # password%3DX, client%5Fsecret=X
    entities = "&" in text and _ENTITY.search(text) is not None  # password&#58; X, &quot;X&quot;
    escaped = "\\" in text and _MD_ESCAPE.search(text) is not None  # DB\_PASSWORD=X
    spaced = _SPACED_GAP.search(text) is not None  # P a s s w o r d: X
    continued = "\n" in text and _CONTINUED.search(text) is not None  # KEY=\ then X on the next line
    emphasis = ("*" in text or "_" in text) and _EMPHASIZED.search(text) is not None  # __Password__: X
    linked = "](" in text  # [the password is X](https://...)
    shown = [rx.pattern for rx, sign in _SHOWN
             if sign in text and rx.search(text) is not None]  # > Password: / <b>Password:</b> / password::
    if not (odd or marked or encoded or entities or escaped or spaced or continued or emphasis or linked or shown):
        return None
    parts: list[str] = []
    starts: list[int] = []  # where each piece begins in the plain text...
    origins: list[int] = []  # ... and in ``text``
    whole: list[int] = []  # a piece that stands for a mark of ``text`` (``&#58;``): its length there; else 0

    def piece(part: str, origin: int, one: int = 0) -> None:
        starts.append(starts[-1] + len(parts[-1]) if parts else 0)
        parts.append(part)
        origins.append(origin)
        whole.append(one)

    pos = 0
    marks = ([r"\*\*|~~"] if marked else []) + ([_PERCENT.pattern] if encoded else []) \
        + ([_ENTITY.pattern] if entities else []) + ([_MD_ESCAPE.pattern] if escaped else []) \
        + ([_SPACED_GAP.pattern] if spaced else []) + ([_CONTINUED.pattern] if continued else []) \
        + ([_EMPHASIS_MARK.pattern] if emphasis else []) + ([_LINK_TARGET.pattern] if linked else []) + shown \
        + (["[" + "".join(re.escape(c) for c in odd) + "]"] if odd else [])
    for m in re.finditer("|".join(marks), text):
        if m.start() > pos:
            piece(text[pos:m.start()], pos)
        found = m.group()
        if found[0] == "&" and len(found) > 1:
            char = _entity_char(found)
            if char is None:  # no character of its own (an unknown name): as it is
                piece(found, m.start())
            elif char:
                piece(char, m.start(), len(found))
            pos = m.end()
            continue
        plain = _plain_mark(found)
        if plain:
            piece(plain, m.start(), len(found))
        pos = m.end()
    piece(text[pos:], pos)

    def back(start: int, end: int) -> tuple[int, int]:
        """The span of ``text`` the plain text's ``[start, end)`` reads (a mark it ends on: whole)."""
        k = bisect.bisect_right(starts, start) - 1
        j = bisect.bisect_right(starts, end - 1) - 1
        return (origins[k] if whole[k] else origins[k] + start - starts[k],
                origins[j] + whole[j] if whole[j] else origins[j] + end - starts[j])

    return "".join(parts), back


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    # Union of overlapping or touching spans. The merged span is named after its most
    # specific part: a token shape ("github") beats the generic "assignment", then length.
    merged: list[tuple[int, int, str]] = []
    best = (False, 0)
    for start, end, kind in sorted(spans):
        rank = (kind != "assignment", end - start)
        if merged and start <= merged[-1][1]:
            s, e, k = merged[-1]
            if rank > best:
                k, best = kind, rank
            merged[-1] = (s, max(e, end), k)
        else:
            merged.append((start, end, kind))
            best = rank
    return merged


def mask_secrets(text: str) -> str:
    """``text`` with every secret value replaced by MASK; everything around it kept."""
    spans = find_secrets(text)
    if not spans:
        return text
    out, pos = [], 0
    for start, end, _kind in spans:
        out.append(text[pos:start])
        out.append(MASK)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def mask_together(*parts: str) -> tuple[str, ...]:
    """``parts`` (a note's name, then its description) masked as the one text they read as, one
    line each: a label in one ("Staging database password") names the value in the next."""
    spans = find_secrets("\n".join(parts))
    if not spans:
        return parts
    out, start = [], 0
    for part in parts:
        end = start + len(part)
        mine = [(max(s, start) - start, min(e, end) - start) for s, e, _k in spans if s < end and e > start]
        pieces, pos = [], 0
        for s, e in mine:
            pieces += [part[pos:s], MASK]
            pos = e
        out.append("".join(pieces) + part[pos:])
        start = end + 1
    return tuple(out)


def mask_key(key: str) -> str:
    """A project's key (Claude Code's: its path with "/" and "_" made "-") masked: a token is found
    whole, or as one of its parts (in a long key a token reads as one word among many; its ``_``
    made ``-`` loses its vendor shape)."""
    return "-".join(mask_secrets(part) for part in mask_secrets(key).split("-"))


def mask_path(path: str) -> str:
    """A file's path with every secret in it masked, one part at a time (a key in a folder or
    file name, ``ghp_….md`` -> ``[REDACTED].md``), so the folders around it stay readable."""
    return "/".join(_mask_part(part) if part else part for part in path.split("/"))


_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")


# A name that is a secret's name joined to its value by "_", "-" or a space (``pw_X.md``, ``apikey-X.txt``,
# a folder ``creds X``), the value letters and digits mixed as no word is (``token_bucket.md``,
# ``password_reset.md``, ``secret_santa2024.md`` stay): an outside tester's, stop 57.
_SECRET_NAME = r"(?i:pw|pwd|pass|passwd|password|passphrase|token|secret|api[_\-]?key|key|wifi|psk|creds|credentials?)"
_NAMED_VALUE = re.compile(_SECRET_NAME + r"[ _\-]([A-Za-z0-9]{6,200})")
_NAMED_MIN_SWITCHES = 3  # "Bd4kId2Npg" changes kind 8 times, "santa2024" once
# The same joined by "_" or "-" in text: a file's name as a note's name, a headline, a baseline's
# ranking or an exported corpus shows it (``token-Lp4kR8sW2n`` was masked in the path only: an
# outside tester's, stop 58).
_JOINED_VALUE = re.compile(r"(?<![A-Za-z0-9])" + _SECRET_NAME + r"[_\-]([A-Za-z0-9]{6,200})(?![A-Za-z0-9])")


def _named(value: str) -> bool:
    """Whether the value joined to a secret's name reads as one: digits in it, letters and digits
    mixed as no word is."""
    return any(c.isdigit() for c in value) and _switches(value) >= _NAMED_MIN_SWITCHES


def _joined_spans(text: str) -> list[tuple[int, int, str]]:
    return [(*m.span(1), "joined") for m in _JOINED_VALUE.finditer(text)
            if _named(m[1]) and not _in_arn(text, m.start(1))]  # an ARN's name for a secret is none


@functools.lru_cache(maxsize=4096)
def _mask_part(part: str) -> str:  # folders repeat across a folder's files: masked once
    """One part of a path: its name masked apart from its extension, which would make the value
    before it read as a dotted code name (``DB_PASSWORD=X.md``)."""
    ext = _EXTENSION.search(part)
    stem, tail = (part, "") if ext is None or ext.start() == 0 else (part[:ext.start()], part[ext.start():])
    named = _NAMED_VALUE.fullmatch(stem)
    if named and _named(named[1]):
        return stem[:named.start(1)] + MASK + tail
    return mask_secrets(stem) + tail
