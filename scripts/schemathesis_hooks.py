"""Schemathesis hooks for scripts/schemathesis.

Generated `Idempotency-Key` values repeat ("0", "A", ...) across requests with different
bodies, which the API rightly refuses (400 on `Idempotency-Key`: a key names one request).
Left alone, most generated writes would test only that refusal. A well-formed key is
therefore replaced by a fresh UUID on every call; a malformed one (empty, control
characters, too long) is sent as generated, so its rejection is still tested.
The replay rules themselves are covered by the API's integration tests.
"""

import ast
import builtins
import re
import threading
import uuid

import schemathesis

# CPython 3.11 keeps the AST constructor's recursion counter in state shared by every
# thread (python/cpython#106905; fixed in 3.13), so two threads building ASTs at once can
# fail with "SystemError: AST constructor recursion depth mismatch". With `--workers 2`
# that happened to anyio's import-time `compile(..., PyCF_ONLY_AST)` and to Hypothesis
# parsing source files to describe lambdas; schemathesis then reported a "Runtime Error"
# for whichever operation was being tested. Every AST-building `compile` (and with it
# `ast.parse`, which calls the builtin) is therefore serialised by one lock; compiling to
# bytecode is left as it is. The imports below are taken once, here, as before.
_compile = builtins.compile
_ast_lock = threading.RLock()


def _serialised_compile(source, filename, mode, flags=0, *args, **kwargs):
    if flags & ast.PyCF_ONLY_AST:
        with _ast_lock:
            return _compile(source, filename, mode, flags, *args, **kwargs)
    return _compile(source, filename, mode, flags, *args, **kwargs)


builtins.compile = _serialised_compile

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
