"""The secret scanner (SPEC 9): every kind of secret, found in time linear in the text.

Only the standard library is imported, so any layer can scan or `redact` a string. The
kinds and their expressions are in `patterns`, one finder per kind in `finders`, URLs in
`urls`, public values in `public`, and the scan and `redact` in `scanner`.

One match per place: the leftmost start wins, then the kind listed first in `KINDS`; the scan
goes on after the end of that match. A single regular expression of all kinds gave exactly
this, but backtracked: over whitespace after a keyword, over the scheme of a URL, and from
every start inside a long word (quadratic: 812 s for a 199 kB body). Here each kind has its
own finder, which returns the first start at or after a position and looks only where the
kind's literal anchor occurs (`-----BEGIN `, `://`, `sk-`, `AKIA`, `gh?_`, `xox?-`, a keyword,
an extra pattern, a run of 32 word characters). Each finder reads every character a bounded
number of times:

- repetitions that cannot give anything back are possessive (whitespace after a keyword, the
  words of a PEM header, the parts of a URL's credentials);
- the part of a secret that only decides where it ends (the rest of a token) is read only when
  that match is taken, so a start that another kind's match covers costs no more than its
  anchor;
- a URL is found from the start of the run of scheme characters before `://`, once per run;
- a high-entropy word is decided once per run of `[A-Za-z0-9_-]`: every start in a run (a word
  boundary, which Python places at the run's ends or next to a `-`) ends at the same place,
  the last boundary of the run, so "has a lower case letter, an upper case letter and a digit"
  holds for every start up to a limit, and only the three word lengths of the exceptions
  (36 for a UUID, 40 and 64 for hex) need a look at the word itself.

Outside URLs and public values, the findings are those of the single expression (a
hypothesis test compares the two), except in two odd cases where that loop broke the rule above, both now found:
- an `extra_patterns` match that starts where a word starts that looked high-entropy but was
  not one (no upper case letter, a 40-hex string...): the old loop moved on to the next
  character and never tried the extra pattern there;
- a named secret whose value holds the non-ASCII letters that case-insensitive matching takes
  for ASCII ones (`ſ`, `K`, `ı`, `İ`) with no 16 ASCII characters in a row: the old cheap
  pre-check did not let the text be scanned at all.

URLs (issue 11). Public links hold long ids that look like secrets (a Google Docs id, a
YouTube playlist, a capitalised Microsoft support slug, a `/password/reset` page), so inside
a URL only the places where credentials live are looked at.

- A URL starts at a scheme, `[A-Za-z][A-Za-z0-9+.-]*://`, where the URL-with-credentials kind
  starts it (a letter after a non-word character, or after `+`, `.` or `-` in the run of
  scheme characters), or at `www.` followed by a letter or digit at the start of a word (the
  text's start, whitespace or one of ``( [ < > " ' ` * _ ~ |`` before it: GitHub's autolinks).
  Any host counts, `www.` or not. It ends before the first whitespace or one of
  ``< > " ' ` ) ] |``, less trailing `. , : ; ! ? *` (punctuation of the sentence), so a
  bare URL, `[text](url)`, `<url>` and a quoted URL end where the link does. Text with
  neither (`docs.google.com/d/…` pasted bare) is not a URL: a dotted name such as
  `shop_pg.orders.total_revenue` cannot be told from a host. The URLs of a text are found
  once, left to right, each search starting where the previous URL ended; a URL inside
  another one (`?next=https://…`) is part of it.
- Named secrets and high-entropy words that start inside a URL do not count. Every other kind
  still does: URLs with credentials (`scheme://user:password@`, nested URLs included; the
  user may now be empty, as in `redis://:password@host`), the known token prefixes (`ghp_…`,
  `AKIA…`, `sk-…`, `xox?-…` are credentials wherever they are, `https://ghp_…@github.com/`
  included) and the configured patterns. A hypothesis test compares the scanner with a naive
  reference of these rules.
- "credential in a URL parameter": a query or fragment parameter, `name=value` after `?`,
  `&`, `;` or `#` in the part of the URL from its first `?` or `#` on (so `?sig=`,
  `&amp;sig=`, OAuth's `#access_token=` and a router's `#/reset?token=`), whose name is a
  credential name and whose value is not trivial. The value ends at `&`, `#`, `;` or the
  URL's end. The match is the value: redaction keeps the name, and a finding points at the
  credential itself.
- A credential name, percent-decoded and cut into words (at every character that is not a
  letter or digit, at camelCase, digits dropped), ends in `token`, `key`, `secret`,
  `password`, `passwd`, `pwd`, `pass`, `passphrase`, `sig`, `signature`, `auth` or `jwt`, or
  in a word that glues a known prefix to one of them (`apikey`, `accesstoken`,
  `clientsecret`, `xapikey`; see `_GLUED_PREFIXES`), unless the word before says that it
  names no credential (`pageToken`, `partitionKey`, `publicKey`: `_NOT_CREDENTIAL`). So
  `access_token`, `X-Amz-Signature`, `X-Amz-Security-Token`, `client_secret`, `apiKey`,
  `subscription-key` and `user[password]` are credentials. `X-Amz-Credential` and
  `X-Goog-Credential` are not: they name the signing key (an id, or a service account's
  address); the signature beside them is the secret.
- A trivial value is shorter than 16 characters, or has no lower-case letter and no digit
  (`YOUR_API_KEY_HERE`, `${TOKEN}`), or holds `{` or `}` (`{token}`), or repeats one
  character (`xxxxxxxxxxxxxxxx`): a placeholder, not a secret.
- A URL's path is not scanned: its segments are ids by design (documents, commits, slugs),
  and pages link to such URLs far more often than they paste a secret into one. The
  exception is a webhook URL whose path is the credential ("credential in a webhook URL",
  the path after the prefix, when not trivial): Slack `hooks.slack.com/services/` (and
  `/workflows/`, `/triggers/`), Discord `discord.com/api/webhooks/` (`discordapp.com`,
  `ptb.`, `canary.`, `/api/v10/`), Telegram `api.telegram.org/bot` (and `/file/bot`),
  Microsoft Teams `outlook.office.com/webhook/` and `*.webhook.office.com/webhookb2/`, hosts
  in lower case as the services write them. Other secret-bearing paths (a Zapier catch hook,
  an Azure Functions `?code=` key) are not known to the rule.

The URLs are found only as far as a finder asks (none when no parameter or webhook can be
there and no named secret or long word starts in a URL), and each is read a bounded number of
times: its end with one search, its query with one pass over the separators (a parameter's
name twice, to see whether it holds a credential word; a value's end and what decides whether
it is trivial once per stretch between `&`, `#` and `;`, however many `?`-parameters share
it). A named-secret or high-entropy start inside a URL sends its finder on from the URL's end.

Public values (issue 22). SPEC 9's high-entropy words take some public values for secrets:
long words with a lower-case letter, an upper-case letter and a digit that pages hold by the
hundred (Hugo's templates, Dendron's Google Docs notes, icon sets) and that no secret looks
like. A high-entropy word does not count where it is one of them; every other kind still does
(an `AKIA…` key inside an `integrity=` value, a named secret after a `documentId`).

- Subresource Integrity (and CSP) hashes: `sha256-`, `sha384-` or `sha512-` and the standard
  base64 of exactly that digest, 44, 64 or 88 characters as base64 writes them (the padding,
  and zero bits before it), with no base64 or word character on either side. A token after
  `sha256-` of another length, or unpadded, is a high-entropy word as before.
- SVG path data: a word of digits, `-` and the path commands `MLHVCSQTAZ` (either case) only,
  such as `14H7v-2h7v2zm3-4H7v-2h10v2z`. It is a fourth class of the per-run decision: the
  last character of the run that is not one of them ends the starts that count, as the last
  lower-case letter does. A random token of 32 letters and digits has that shape with a
  chance below 1e-10.
- Public ids, by their key: the id (one run of `[A-Za-z0-9_-]`) after `documentId`,
  `revisionId`, `spreadsheetId`, `presentationId`, `videoId`, `playlistId`, `channelId`,
  `youtubeId` or `youtube` (ASCII case ignored, `_` or `-` allowed before `id`, not inside a
  longer word), an optional quote, `:` or `=`, and an optional quote, as YAML, JSON, TOML
  and attributes write them; the video of Hugo's `{{< youtube ID >}}` and
  `{{< youtube id="ID" >}}`; and the first word of the value of a frontmatter key of one of
  those names (`scan(text, key)`; for a list, each item's).

Like URLs, the public values are found once, left to right, as far as the high-entropy finder
asks (`public`): each kind is searched from where the last value ended, a hash and a shortcode
from their literal, a key in the text's lower case (the same length as the text) from its
first word, every repetition possessive or bounded. A high-entropy start inside one sends its
finder on from the value's end.
"""
