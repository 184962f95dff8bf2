"""schemathesis hooks for the OpenAPI test (loaded through SCHEMATHESIS_HOOKS).

NewAlert has rules JSON Schema cannot say, written in its description
instead: button titles are unique within the alert, at most one button has
style "cancel", metadata is at most 4096 bytes as compact JSON, and its
fields (SPEC §13) have unique names, need buttons and name only the alert's
buttons (by default every button but the cancel one, which must then exist).
A generated body that breaks one of them is dropped: alertd is right to
refuse it (400 invalid-alert), and every other body is still generated and
checked.

Queries over MAX_QUERY_BYTES are not sent (below: libmicrohttpd 0.9.75 cannot
answer a request that fills its connection pool).
"""

import json
from urllib.parse import urlencode

import schemathesis

# Query strings longer than this are not generated. Coverage-phase negative cases
# repeat parameters with large JSON-like values (a 5.6 KB query was seen); with the
# other headers such a request can fill libmicrohttpd 0.9.75's 8 KiB connection pool
# to where no answer fits, and it closes the connection unanswered — the known
# limitation README's "Known limitations" describes and
# Tests/AlertdEndToEndTests/LargeRequestTests.swift (largeHeaderBlockStillGetsAnAnswer)
# measures. alertd's own queries are a few dozen bytes.
MAX_QUERY_BYTES = 2048


def breaks_unschematic_rule(body):
    if not isinstance(body, dict):
        return False
    buttons = body.get("buttons")
    if isinstance(buttons, list):
        titles = [b.get("title") for b in buttons if isinstance(b, dict) and isinstance(b.get("title"), str)]
        if len(titles) != len(set(titles)):
            return True
        if sum(1 for b in buttons if isinstance(b, dict) and b.get("style") == "cancel") > 1:
            return True
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        try:
            size = len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass"))
        except (TypeError, ValueError):
            return False
        if size > 4096:
            return True
    fields = body.get("fields")
    if isinstance(fields, list) and fields:
        buttons = buttons if isinstance(buttons, list) else []
        titles = [b.get("title") for b in buttons if isinstance(b, dict)]
        uncancelled = [b for b in buttons if isinstance(b, dict) and b.get("style") != "cancel"]
        names = [f.get("name") for f in fields if isinstance(f, dict)]
        if not titles or len(names) != len(set(names)):
            return True
        for field in fields:
            if not isinstance(field, dict):
                continue
            named = field.get("buttons")
            if named is None and not uncancelled:
                return True
            if isinstance(named, list) and any(title not in titles for title in named):
                return True
    return False


@schemathesis.hook
def filter_body(context, body):
    operation = context.operation
    if operation is None or operation.definition.raw.get("operationId") != "post_alert":
        return True
    return not breaks_unschematic_rule(body)


@schemathesis.hook
def filter_query(context, query):
    if not query:
        return True
    try:
        return len(urlencode(query, doseq=True)) <= MAX_QUERY_BYTES
    except (TypeError, ValueError):
        return True
