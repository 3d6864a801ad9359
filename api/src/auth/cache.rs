//! The cache of verified keys in front of the `api_keys` table (issue 26: the hot path of
//! every authenticated request).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use super::{Caller, DEFAULT_RATE_LIMIT, Grants, KEY_CACHE_TTL, hex, note_use};
use crate::error::ApiResult;
use crate::store::Db;

/// Shards of the key cache: requests of different keys seldom meet on one lock, and a
/// hit takes its shard's lock shared.
const KEY_CACHE_SHARDS: usize = 16;
/// Entries per shard before the shard is emptied (a flood of distinct valid keys cannot
/// grow the cache without bound).
const KEY_CACHE_SHARD_CAP: usize = 100_000 / KEY_CACHE_SHARDS;

/// Cache of verified keys by the SHA-256 of the key (issue 26: the hot path of every
/// request is a shared lock on one of [`KEY_CACHE_SHARDS`] maps and an `Arc` clone, with
/// no allocation). An entry is trusted for [`KEY_CACHE_TTL`] after it was read from the
/// database; [`KeyCache::forget_key`] drops a key's entries at once when this process
/// revokes it (the dashboard), while a revocation by another process (the admin CLI,
/// another API node) takes effect when the entry expires.
pub struct KeyCache {
    shards: Box<[RwLock<HashMap<[u8; 32], (Arc<Caller>, Instant)>>]>,
}

impl Default for KeyCache {
    fn default() -> Self {
        Self {
            shards: (0..KEY_CACHE_SHARDS)
                .map(|_| RwLock::new(HashMap::new()))
                .collect(),
        }
    }
}

impl KeyCache {
    fn shard(&self, digest: &[u8; 32]) -> &RwLock<HashMap<[u8; 32], (Arc<Caller>, Instant)>> {
        &self.shards[usize::from(digest[0]) % self.shards.len()]
    }

    pub(super) async fn lookup(
        &self,
        db: &Db,
        digest: &[u8; 32],
    ) -> ApiResult<Option<Arc<Caller>>> {
        if let Some((caller, at)) = self
            .shard(digest)
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(digest)
            && at.elapsed() < KEY_CACHE_TTL
        {
            return Ok(Some(caller.clone()));
        }
        let now = crate::timestamp::now();
        let row: Option<(String, String, String, Option<i64>, Option<String>)> = db
            .point_read(
                "SELECT id, org_id, scopes, rate_limit, last_used_at FROM api_keys WHERE secret_hash = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
                &[&hex(digest), &now],
            )
            .await?;
        if let Some((key_id, _, _, _, last_used)) = &row {
            note_use(db, key_id, last_used.as_deref());
        }
        let caller = row.map(|(key_id, org_id, scopes, rate_limit, _)| {
            Arc::new(Caller {
                key_id,
                org_id,
                grants: Grants::from_stored(&scopes),
                rate_limit: rate_limit
                    .map_or(DEFAULT_RATE_LIMIT, |n| n.clamp(1, u32::MAX as i64) as u32),
            })
        });
        let mut map = self
            .shard(digest)
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match &caller {
            Some(c) => {
                if map.len() >= KEY_CACHE_SHARD_CAP {
                    map.clear();
                }
                map.insert(*digest, (c.clone(), Instant::now()));
            }
            None => {
                map.remove(digest);
            }
        }
        Ok(caller)
    }

    /// Forgets key `key_id` at once (its next request reads the database): called after
    /// this process revokes it.
    pub fn forget_key(&self, key_id: &str) {
        for shard in &self.shards {
            shard
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|_, (caller, _)| caller.key_id != key_id);
        }
    }
}
