//! How the search index is configured: [`IndexConfig`] (where on disk, the planner's
//! thresholds) and the `serve` flags it is read from ([`SwipeIndexArgs`]).

use std::path::PathBuf;

/// How the index is kept: where on disk, and the planner's thresholds.
#[derive(Debug, Clone)]
pub struct IndexConfig {
    /// The node-local folder of the graph generations; `None`: in memory and exact only.
    pub dir: Option<PathBuf>,
    /// A filter leaving at most this many designs of the graph scores them exactly.
    pub exact_below: usize,
    /// A filter leaving more than `exact_below` but at most this many designs ranks them by
    /// their sign codes and scores the best [`IndexConfig::shortlist`] exactly; more walk
    /// the graph.
    pub shortlist_below: usize,
    /// Designs a shortlist scores exactly (at least twice the limit and `ef_search`).
    pub shortlist: usize,
    /// A kind without a graph builds one once it has this many vectors of one model.
    pub build_at: usize,
    /// A kind with a graph rebuilds it once this many vectors are held in memory beside it.
    pub rebuild_after: usize,
    /// Candidates the graph walk keeps (HNSW's ef at search time).
    pub ef_search: usize,
}

/// The planner's thresholds measured by `scripts/bench-swipe` (see the module doc).
pub const DEFAULT_EXACT_BELOW: usize = 20_000;
pub const DEFAULT_SHORTLIST_BELOW: usize = 300_000;
pub const DEFAULT_SHORTLIST: usize = 1_000;

impl Default for IndexConfig {
    fn default() -> Self {
        Self {
            dir: None,
            exact_below: DEFAULT_EXACT_BELOW,
            shortlist_below: DEFAULT_SHORTLIST_BELOW,
            shortlist: DEFAULT_SHORTLIST,
            build_at: 20_000,
            rebuild_after: 20_000,
            ef_search: 400,
        }
    }
}

/// `adforge serve`'s search-index flags.
#[derive(clap::Args, Clone, Debug)]
pub struct SwipeIndexArgs {
    /// Node-local folder of the swipe-file search graphs (memory-mapped, shared by the
    /// processes of this node). Default: DATA_DIR/swipe-index.
    #[arg(long, env = "ADFORGE_SWIPE_INDEX_DIR")]
    pub swipe_index_dir: Option<PathBuf>,
    /// Keep swipe-file search in memory and exact (no graph on disk), as before issue 25.
    #[arg(long, env = "ADFORGE_SWIPE_INDEX_EXACT_ONLY", default_value_t = false)]
    pub swipe_index_exact_only: bool,
    /// A search whose filters leave at most this many designs of the graph scores them all
    /// exactly instead of walking the graph.
    #[arg(long, env = "ADFORGE_SWIPE_INDEX_EXACT_BELOW", default_value_t = DEFAULT_EXACT_BELOW)]
    pub swipe_index_exact_below: usize,
    /// A search whose filters leave more than the exact threshold but at most this many
    /// designs ranks them by their sign codes and scores the best of them exactly; more
    /// walk the graph.
    #[arg(
        long,
        env = "ADFORGE_SWIPE_INDEX_SHORTLIST_BELOW",
        default_value_t = DEFAULT_SHORTLIST_BELOW
    )]
    pub swipe_index_shortlist_below: usize,
    /// Designs a shortlist scores exactly.
    #[arg(long, env = "ADFORGE_SWIPE_INDEX_SHORTLIST", default_value_t = DEFAULT_SHORTLIST)]
    pub swipe_index_shortlist: usize,
    /// Designs (vectors of one model) at which a kind gets its first graph.
    #[arg(long, env = "ADFORGE_SWIPE_INDEX_BUILD_AT", default_value_t = 20_000)]
    pub swipe_index_build_at: usize,
    /// New or changed vectors held in memory beside a graph at which it is rebuilt.
    #[arg(
        long,
        env = "ADFORGE_SWIPE_INDEX_REBUILD_AFTER",
        default_value_t = 20_000
    )]
    pub swipe_index_rebuild_after: usize,
    /// Candidates a graph walk keeps (HNSW's ef at search time).
    #[arg(long, env = "ADFORGE_SWIPE_INDEX_EF", default_value_t = 400)]
    pub swipe_index_ef: usize,
}

impl Default for SwipeIndexArgs {
    fn default() -> Self {
        let c = IndexConfig::default();
        Self {
            swipe_index_dir: None,
            swipe_index_exact_only: false,
            swipe_index_exact_below: c.exact_below,
            swipe_index_shortlist_below: c.shortlist_below,
            swipe_index_shortlist: c.shortlist,
            swipe_index_build_at: c.build_at,
            swipe_index_rebuild_after: c.rebuild_after,
            swipe_index_ef: c.ef_search,
        }
    }
}

impl SwipeIndexArgs {
    /// The configuration, the folder defaulting to `data_dir/swipe-index`.
    pub fn config(&self, data_dir: &std::path::Path) -> IndexConfig {
        IndexConfig {
            dir: (!self.swipe_index_exact_only).then(|| {
                self.swipe_index_dir
                    .clone()
                    .unwrap_or_else(|| data_dir.join("swipe-index"))
            }),
            exact_below: self.swipe_index_exact_below,
            shortlist_below: self.swipe_index_shortlist_below,
            shortlist: self.swipe_index_shortlist.max(1),
            build_at: self.swipe_index_build_at.max(1),
            rebuild_after: self.swipe_index_rebuild_after.max(1),
            ef_search: self.swipe_index_ef.max(16),
        }
    }
}
