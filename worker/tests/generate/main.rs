//! Generation pipeline tests.
