//! Just enough HTTP/1.1 for the scripted server: read a request (Content-Length or chunked body),
//! write a response head, a whole body, or a chunked body piece by piece.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Requests bigger than this are refused; a test server has no business receiving them.
const MAX_BODY: usize = 64 * 1024 * 1024;
const MAX_LINE: usize = 64 * 1024;

#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// Header names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

/// Reads one request; `None` when the client closed the connection between requests.
pub async fn read_request<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<HttpRequest>> {
    let Some(request_line) = read_line(reader).await? else { return Ok(None) };
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Err(invalid(format!("malformed request line {request_line:?}")));
    };
    let (method, path) = (method.to_string(), path.to_string());
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader).await?.ok_or_else(|| invalid("connection closed inside the head"))?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').ok_or_else(|| invalid(format!("malformed header {line:?}")))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut request = HttpRequest { method, path, headers, body: Vec::new() };
    if request.header("transfer-encoding").is_some_and(|value| value.eq_ignore_ascii_case("chunked")) {
        request.body = read_chunked_body(reader).await?;
    } else if let Some(length) = request.header("content-length") {
        let length: usize = length.parse().map_err(|_| invalid(format!("bad content-length {length:?}")))?;
        if length > MAX_BODY {
            return Err(invalid("request body too large"));
        }
        request.body = vec![0; length];
        reader.read_exact(&mut request.body).await?;
    }
    Ok(Some(request))
}

/// Writes a status line and headers; `headers` should say how the body is framed.
pub async fn write_head<W: AsyncWrite + Unpin>(
    writer: &mut W,
    status: u16,
    headers: &[(&str, String)],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes()).await
}

/// Writes a complete response with a Content-Length body.
pub async fn write_full<W: AsyncWrite + Unpin>(
    writer: &mut W,
    status: u16,
    extra_headers: &[(&str, String)],
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    let mut headers = vec![("Content-Type", content_type.to_string()), ("Content-Length", body.len().to_string())];
    headers.extend(extra_headers.iter().cloned());
    write_head(writer, status, &headers).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

/// Writes one piece of a chunked body.
pub async fn write_chunk<W: AsyncWrite + Unpin>(writer: &mut W, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(()); // an empty chunk would end the body
    }
    let mut frame = format!("{:x}\r\n", data.len()).into_bytes();
    frame.extend_from_slice(data);
    frame.extend_from_slice(b"\r\n");
    writer.write_all(&frame).await?;
    writer.flush().await
}

/// Ends a chunked body.
pub async fn write_last_chunk<W: AsyncWrite + Unpin>(writer: &mut W) -> io::Result<()> {
    writer.write_all(b"0\r\n\r\n").await?;
    writer.flush().await
}

async fn read_chunked_body<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader).await?.ok_or_else(|| invalid("connection closed inside a chunked body"))?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| invalid(format!("bad chunk size {line:?}")))?;
        if size == 0 {
            // Trailers, then the blank line.
            while read_line(reader).await?.is_some_and(|line| !line.is_empty()) {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(invalid("request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).await?;
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf).await?;
    }
}

/// Reads a line without its `\r\n`; `None` at end of stream before any byte.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let read = (&mut *reader).take(MAX_LINE as u64).read_until(b'\n', &mut line).await?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(invalid("line too long or cut"));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line).map(Some).map_err(|_| invalid("non-UTF-8 request head"))
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}
