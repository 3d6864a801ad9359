"""What the Python parts of scripts/bench-jobs share: one JSON request to the API under test,
and its timestamps read as datetimes. scripts/bench-jobs runs from the repository's root and
puts scripts/lib on sys.path."""

import datetime
import json
import urllib.request


def client(base, key, timeout=60):
    """`req(method, path, data=None) -> (status, document)` against `base` with `key`."""

    def req(method, path, data=None):
        r = urllib.request.Request(base + path, data=data, method=method,
                                   headers={"X-API-Key": key, "Content-Type": "application/json"})
        with urllib.request.urlopen(r, timeout=timeout) as res:
            return res.status, json.load(res)

    return req


def instant(stamp):
    """An API timestamp (`2026-12-02T05:38:46.916Z`) as an aware datetime."""
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
