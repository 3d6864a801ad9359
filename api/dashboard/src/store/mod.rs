//! Every SQL statement of the dashboard, one module per area: [`members`] (profiles,
//! memberships, sign-in links, sessions), [`catalog`] (the names the ad form offers),
//! [`editor`] (the images the visual editor offers), [`cutouts`] and [`figma`] (those pages'
//! one query each) and [`wallet`] (the operator's top-up section). Pages call these and the
//! `/v1` domain functions; they hold no SQL themselves (the layering test checks it).

pub mod catalog;
pub mod cutouts;
pub mod editor;
pub mod figma;
pub mod members;
pub mod wallet;
