//! The one way reins builds an HTTP client (the providers' and the MCP servers'): reqwest over
//! rustls with ring, certificates checked against the system's store.
//!
//! reqwest is built without a crypto provider of its own (its default, aws-lc, is a large C
//! build); without one installed, building a client would panic. So every client starts here,
//! which installs ring as the process's provider first.

/// A client builder whose TLS is ready to use.
pub fn http_client() -> reqwest::ClientBuilder {
    // Fails only when a provider is installed already, which is what is wanted.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_with_tls_builds() {
        assert!(super::http_client().https_only(true).build().is_ok());
    }
}
