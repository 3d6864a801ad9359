"""Schemathesis hooks for scripts/schemathesis.

Generated `Idempotency-Key` values repeat ("0", "A", ...) across requests with different
bodies, which the API rightly refuses (400 on `Idempotency-Key`: a key names one request).
Left alone, most generated writes would test only that refusal. A well-formed key is
therefore replaced by a fresh UUID on every call; a malformed one (empty, control
characters, too long) is sent as generated, so its rejection is still tested.
The replay rules themselves are covered by the API's integration tests.
"""

import re
import uuid

import schemathesis

# Imported here, once, in the main thread: with `--workers 2` both worker threads otherwise
# import these lazily at the same moment, and CPython 3.11 can then fail inside anyio's
# import-time `compile(..., PyCF_ONLY_AST)` ("AST constructor recursion depth mismatch"),
# which schemathesis reports as errors of the operations being tested.
import anyio  # noqa: F401,E402
import schemathesis.transport.asgi  # noqa: F401,E402

WELL_FORMED = re.compile(r"[!-~]{1,255}")


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key":
            value = headers[name]
            if isinstance(value, str) and WELL_FORMED.fullmatch(value):
                headers[name] = str(uuid.uuid4())
