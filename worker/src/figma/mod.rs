//! Design-tool sync: a Figma frame becomes an editable ad or a design template
//! ([`crate::Job::SyncFigma`]), and a later sync brings its changes in.
//!
//! - [`url`]: the frame a link names (checked by the API before anything is queued).
//! - [`client`]: Figma's REST API through the one address policy, with its rate limit
//!   respected.
//! - [`import`]: the frame's JSON (as Figma's OpenAPI description defines it) into our tree,
//!   with a report of what the tree cannot draw as Figma does.
//! - [`slots`]: `fill_slots`: the frame's slot nodes filled with an ad's inputs.
//! - [`sync`]: the job: read the frame, stop early when it is unchanged, import it, store
//!   its image fills, SVG exports and Figma's own render as our files, render it.
//!
//! Where it runs: on a worker, like every job, so the API never waits on Figma or on a
//! render. The organisation's token reaches the worker sealed inside the job
//! ([`crate::secrets`]), and is opened there just before the calls.
//!
//! Rejected alternative: calling Figma from the API node in the request. A frame with many
//! images takes seconds to read and store, the rate limit can ask for waits, and the render
//! is a worker's job anyway; the request answers 202 at once instead.

mod assets;
pub mod client;
pub mod import;
pub mod slots;
pub mod sync;
pub mod url;

/// The ad's `error.code` when Figma refuses the token (403): it is invalid or expired, or
/// cannot open the file.
pub const FIGMA_TOKEN_INVALID: &str = "FIGMA_TOKEN_INVALID";
/// The ad's `error.code` when Figma has no such file or node (404, or a node missing from
/// the answer).
pub const FIGMA_NOT_FOUND: &str = "FIGMA_NOT_FOUND";
/// The ad's `error.code` when Figma's rate limit still refuses after the waits it asked
/// for (or asks for a wait longer than [`client::MAX_WAIT_SECS`]).
pub const FIGMA_RATE_LIMITED: &str = "FIGMA_RATE_LIMITED";

/// The largest imported tree accepted, in bytes of JSON: the bound PATCH puts on an edited
/// tree, so an imported ad stays editable.
pub const MAX_TREE_BYTES: usize = 512 * 1024;

/// The default `--figma-api-url`.
pub const DEFAULT_API_URL: &str = "https://api.figma.com";
