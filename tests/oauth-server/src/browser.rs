//! The user's browser, played by a test: fetch the authorization URL and follow its redirects
//! (to the client's loopback listener), as a person who approves would.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How many redirects are followed before giving up.
const MAX_REDIRECTS: usize = 5;

/// Fetches `url` with GET, following redirects; the last page's body, or why it failed. Only
/// plain `http://` is spoken (everything it visits is on 127.0.0.1).
pub async fn browse(url: &str) -> Result<String, String> {
    let mut url = url::Url::parse(url).map_err(|err| format!("{url}: {err}"))?;
    for _ in 0..=MAX_REDIRECTS {
        let (status, location, body) = get(&url).await?;
        match (status, location) {
            (300..=399, Some(location)) => url = url.join(&location).map_err(|err| format!("{location}: {err}"))?,
            (200..=299, _) => return Ok(body),
            (status, _) => return Err(format!("{url} answered HTTP {status}: {body}")),
        }
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}

/// One GET: the status, the `Location` header and the body.
async fn get(url: &url::Url) -> Result<(u16, Option<String>, String), String> {
    if url.scheme() != "http" {
        return Err(format!("{url}: only http:// is supported"));
    }
    let host = url.host_str().ok_or_else(|| format!("{url} has no host"))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let mut stream = TcpStream::connect((host, port)).await.map_err(|err| format!("{url}: {err}"))?;
    let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
    let request = format!("GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.map_err(|err| format!("{url}: {err}"))?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.map_err(|err| format!("{url}: {err}"))?;
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("{url} did not answer HTTP"))?;
    let location = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim().eq_ignore_ascii_case("location").then(|| value.trim().to_string())
    });
    Ok((status, location, body.to_string()))
}
