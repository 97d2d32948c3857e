//! An OAuth 2.1 authorization server and the MCP server it protects, on 127.0.0.1, for tests of
//! `reins mcp login` and of the tokens a run then sends.
//!
//! [`AuthServer`] publishes protected-resource metadata (RFC 9728) and authorization-server
//! metadata (RFC 8414), registers clients dynamically (RFC 7591), approves every authorization
//! request at once (redirecting with a code, PKCE S256 required), exchanges codes and refresh
//! tokens at its token endpoint, and answers MCP at `/mcp`: 401 with a `WWW-Authenticate`
//! challenge without a valid access token, a tool with one. Access tokens live as long as the
//! test says, so that refresh is exercised. [`browse`] plays the user's browser: it follows the
//! authorization URL's redirect to the client's loopback listener.

mod browser;
mod flow;
mod mcp;
mod server;

pub use browser::browse;
pub use flow::pkce_challenge;
pub use server::{AuthServer, Recorded};
