//! The Lua scripts behind [`super::RedisQueue`]'s multi-step transitions, and the parsing of
//! their replies.
//!
//! Each transition that touches more than one key (ack the entry, drop the dedup marker,
//! publish the event) runs as one script, so a crash or a Redis restart can never leave it
//! half done, and it costs one round trip. Scripts read the clock with `TIME`, so due times
//! of retries are Redis's clock, not each worker's.
//!
//! Rejected alternative: `MULTI`/`EXEC` pipelines. They are atomic too, but cannot branch on
//! an intermediate result ("only if the entry was still pending"), which every finishing
//! transition needs so that a worker that lost its claim does not publish twice.

use redis::{Script, Value};

use crate::Error;

/// `KEYS`: stream, dedup marker. `ARGV`: payload, marker ttl ms. Returns 1 when queued, 0
/// when a job with the same id is live.
pub(crate) const ENQUEUE: &str = r"
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then
  redis.call('XADD', KEYS[1], '*', 'job', ARGV[1])
  return 1
end
return 0
";

/// Lua: `drained(stream, group)` is true when the group has been handed every entry of the
/// stream (none is waiting undelivered): the stream is empty, or its newest entry's id is
/// not above the group's `last-delivered-id`.
const DRAINED: &str = r"
local function id_le(a, b)
  local am, as = string.match(a, '(%d+)-(%d+)')
  local bm, bs = string.match(b, '(%d+)-(%d+)')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as <= bs)
end
local function drained(stream, group)
  local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
  if #last == 0 then return true end
  local groups = redis.call('XINFO', 'GROUPS', stream)
  for _, g in ipairs(groups) do
    local name, delivered
    for i = 1, #g, 2 do
      if g[i] == 'name' then name = g[i + 1] end
      if g[i] == 'last-delivered-id' then delivered = g[i + 1] end
    end
    if name == group then return id_le(last[1][1], delivered) end
  end
  return false
end
";

/// `KEYS`: dedup marker, low list. `ARGV`: payload, marker ttl ms. Enqueues a background
/// job at the end of the low list; a claimer moves it into the stream once the stream has
/// nothing undelivered (a worker blocked on an empty stream notices it within one poll
/// interval). Returns 1 when queued, 0 when a job with the same id is live.
pub(crate) const ENQUEUE_LOW: &str = r"
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[2]) then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
";

/// `KEYS`: stream, low list. `ARGV`: group. Moves the oldest background job into the stream
/// when the group has been handed everything in it. Returns 1 when one moved.
pub(crate) fn promote_low() -> String {
    format!(
        "{DRAINED}
if redis.call('LLEN', KEYS[2]) == 0 or not drained(KEYS[1], ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], '*', 'job', redis.call('LPOP', KEYS[2]))
return 1
"
    )
}

/// `KEYS`: stream, delayed set. Moves due retries (score = due time in ms) to the stream.
pub(crate) const PROMOTE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100)
for _, member in ipairs(due) do
  redis.call('XADD', KEYS[1], '*', 'job', member)
  redis.call('ZREM', KEYS[2], member)
end
return #due
";

/// `KEYS`: stream. `ARGV`: group, consumer, min idle ms, count. Takes over up to `count`
/// entries idle for at least `min idle` with `XAUTOCLAIM` (following its cursor, since one
/// call scans only a bounded part of the pending list) and returns
/// `{{id, {field, value, ...}, deliveries}, ...}`.
pub(crate) const RECLAIM: &str = r"
local out = {}
local want = tonumber(ARGV[4])
local cursor = '0-0'
for _ = 1, 100 do
  local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], cursor, 'COUNT', want - #out)
  for _, e in ipairs(r[2]) do
    local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
    local deliveries = 1
    if p[1] then deliveries = p[1][4] end
    table.insert(out, {e[1], e[2], deliveries})
  end
  cursor = r[1]
  if #out >= want or cursor == '0-0' then break end
end
return out
";

/// `KEYS`: stream. `ARGV`: group, entry id, consumer. Resets the idle time of an entry the
/// consumer still owns (`XCLAIM ... JUSTID` does not count a delivery). Returns 1, or 0 when
/// the entry is gone or owned by another consumer.
pub(crate) const HEARTBEAT: &str = r"
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if not p[1] or p[1][2] ~= ARGV[3] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
return 1
";

/// `KEYS`: stream, dedup marker, events stream. `ARGV`: group, entry id, event payload or
/// ''. Acks and deletes the entry, drops the marker and publishes the event, but only if the
/// entry was still pending. Returns 1 when it was.
pub(crate) const FINISH: &str = r"
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
if ARGV[3] ~= '' then redis.call('XADD', KEYS[3], '*', 'event', ARGV[3]) end
return 1
";

/// `KEYS`: stream, delayed set. `ARGV`: group, entry id, next payload, backoff ms. Moves a
/// pending entry to the delayed set, due after the backoff. Returns 1 when it was pending.
pub(crate) const RETRY: &str = r"
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('XDEL', KEYS[1], ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[3])
return 1
";

/// `KEYS`: stream. `ARGV`: group, entry id, payload. Puts a pending entry back as a new,
/// undelivered entry. Returns 1 when it was pending.
pub(crate) const RELEASE: &str = r"
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('XADD', KEYS[1], '*', 'job', ARGV[3])
return 1
";

/// `KEYS`: job stream, events stream. `ARGV`: workers group, api group, consumer. Deletes
/// the consumer from each group where it holds no pending entries (deleting it elsewhere
/// would drop its pending entries, and with them the jobs).
pub(crate) const RETIRE: &str = r"
local groups = {{KEYS[1], ARGV[1]}, {KEYS[2], ARGV[2]}}
for _, g in ipairs(groups) do
  local p = redis.call('XPENDING', g[1], g[2], '-', '+', 1, ARGV[3])
  if #p == 0 then redis.call('XGROUP', 'DELCONSUMER', g[1], g[2], ARGV[3]) end
end
return 1
";

/// The scripts, hashed once per queue.
pub(crate) struct Scripts {
    pub enqueue: Script,
    pub enqueue_low: Script,
    pub promote: Script,
    pub promote_low: Script,
    pub reclaim: Script,
    pub heartbeat: Script,
    pub finish: Script,
    pub retry: Script,
    pub release: Script,
    pub retire: Script,
}

impl Scripts {
    pub fn new() -> Self {
        Scripts {
            enqueue: Script::new(ENQUEUE),
            enqueue_low: Script::new(ENQUEUE_LOW),
            promote: Script::new(PROMOTE),
            promote_low: Script::new(&promote_low()),
            reclaim: Script::new(RECLAIM),
            heartbeat: Script::new(HEARTBEAT),
            finish: Script::new(FINISH),
            retry: Script::new(RETRY),
            release: Script::new(RELEASE),
            retire: Script::new(RETIRE),
        }
    }
}

/// A stream entry as the queue reads it: id, the one payload field, deliveries so far.
#[derive(Debug)]
pub(crate) struct RawEntry {
    pub id: String,
    pub payload: Option<String>,
    pub deliveries: u32,
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Okay => Some("OK".to_owned()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The value of `field` in a flat `{field, value, ...}` array.
pub(crate) fn field(fields: &[Value], name: &str) -> Option<String> {
    fields
        .chunks(2)
        .find(|pair| pair.first().and_then(text).as_deref() == Some(name))
        .and_then(|pair| pair.get(1))
        .and_then(text)
}

/// Parses [`RECLAIM`]'s reply; `field_name` is the payload field (`job` or `event`).
pub(crate) fn parse_reclaimed(reply: Value, field_name: &str) -> Result<Vec<RawEntry>, Error> {
    let bad = |detail: &str| Error::UnexpectedReply {
        command: "reclaim script",
        detail: detail.to_owned(),
    };
    let items = match reply {
        Value::Array(items) => items,
        Value::Nil => return Ok(Vec::new()),
        other => return Err(bad(&format!("{other:?}"))),
    };
    items
        .into_iter()
        .map(|item| {
            let Value::Array(parts) = item else {
                return Err(bad("entry is not an array"));
            };
            let id = parts
                .first()
                .and_then(text)
                .ok_or_else(|| bad("entry without id"))?;
            let payload = match parts.get(1) {
                Some(Value::Array(fields)) => field(fields, field_name),
                _ => None,
            };
            let deliveries = match parts.get(2) {
                Some(Value::Int(n)) => u32::try_from(*n).unwrap_or(u32::MAX),
                _ => 1,
            };
            Ok(RawEntry {
                id,
                payload,
                deliveries,
            })
        })
        .collect()
}

/// Parses an `XREADGROUP` reply for one stream (nil when the wait ended empty).
pub(crate) fn parse_read(reply: Value, field_name: &str) -> Result<Vec<RawEntry>, Error> {
    let bad = |detail: String| Error::UnexpectedReply {
        command: "XREADGROUP",
        detail,
    };
    let streams = match reply {
        Value::Nil => return Ok(Vec::new()),
        Value::Array(streams) => streams,
        // RESP3 answers a map of stream name → entries.
        Value::Map(pairs) => pairs
            .into_iter()
            .map(|(k, v)| Value::Array(vec![k, v]))
            .collect(),
        other => return Err(bad(format!("{other:?}"))),
    };
    let mut out = Vec::new();
    for stream in streams {
        let Value::Array(mut parts) = stream else {
            return Err(bad("stream is not an array".into()));
        };
        let entries = match parts.pop() {
            Some(Value::Array(entries)) => entries,
            Some(Value::Nil) | None => continue,
            Some(other) => return Err(bad(format!("entries: {other:?}"))),
        };
        for entry in entries {
            let Value::Array(parts) = entry else {
                return Err(bad("entry is not an array".into()));
            };
            let id = parts
                .first()
                .and_then(text)
                .ok_or_else(|| bad("entry without id".into()))?;
            let payload = match parts.get(1) {
                Some(Value::Array(fields)) => field(fields, field_name),
                _ => None,
            };
            out.push(RawEntry {
                id,
                payload,
                deliveries: 1,
            });
        }
    }
    Ok(out)
}
