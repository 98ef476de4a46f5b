//! The build.rs code generator. (Being written.)

/// The `build.rs` entry point, in the style of `prost-build`.
#[derive(Debug, Default, Clone)]
pub struct Builder {}

impl Builder {
    /// A builder with no inputs.
    pub fn new() -> Self {
        Self::default()
    }
}
