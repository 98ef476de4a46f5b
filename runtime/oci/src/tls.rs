//! The TLS crypto provider of the registry client.
//!
//! The client's HTTP stack is built without a default rustls provider (so that no second
//! crypto library is compiled); the process-wide default is `ring`, installed here once before
//! any client is built. Any other HTTP client built with rustls in the same process then finds
//! it too.

/// Install `ring` as the process's default rustls crypto provider, unless one is installed.
pub fn install_default_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // An error means another provider was installed first, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
