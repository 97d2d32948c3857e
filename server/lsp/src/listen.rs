//! `reins lsp --listen`: one client over a socket instead of stdio, for an editor on another
//! machine (through an SSH tunnel) or one that would rather connect than start a process.
//!
//! Whoever connects drives the agent and, being "the editor", approves its edits and commands,
//! so the listener admits only its user: on TCP the client must show the token
//! ([`super::token`], checked by [`super::handshake`]) and a non-loopback address needs
//! `--allow-remote`; a Unix socket is private by its folder and mode instead. Strangers are
//! refused one by one while the listener waits for the right client; once it is in, the listener
//! closes, and reins ends when that client does.

use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reins_jsonrpc::frame;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::task::JoinSet;

use super::handshake::{Attempts, HANDSHAKE_TIME, Refusal, handshake};
use super::token::{TOKEN_VARIABLE, Token};

/// Connections still introducing themselves at most; more are closed at once, so a flood cannot
/// use up the process's files.
const MAX_PENDING: usize = 64;
/// How long a refused client may go on sending before the connection is dropped (closing with
/// its bytes unread would reset the connection and lose the answer that says why).
const LINGER: Duration = Duration::from_secs(1);

/// Where `--listen` serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// `ADDR:PORT`.
    Tcp(SocketAddr),
    /// `unix:PATH`.
    Unix(PathBuf),
}

/// The client's two directions, whatever the socket.
pub type Connection = (Box<dyn AsyncRead + Unpin + Send>, Box<dyn AsyncWrite + Unpin + Send>);

/// A `--listen` value: `127.0.0.1:9257`, `[::1]:9257` or `unix:/run/user/1000/reins/lsp.sock`.
pub fn address(value: &str) -> Result<Address, String> {
    if let Some(path) = value.strip_prefix("unix:") {
        return match path.is_empty() {
            true => Err("unix: needs a path, e.g. unix:$XDG_RUNTIME_DIR/reins/lsp.sock".to_string()),
            false => Ok(Address::Unix(PathBuf::from(path))),
        };
    }
    value
        .parse()
        .map(Address::Tcp)
        .map_err(|_| format!("{value:?} is not an address like 127.0.0.1:9257 or unix:$XDG_RUNTIME_DIR/reins/lsp.sock"))
}

/// Refuses a TCP address other machines can reach unless the user allowed it: the token would
/// cross the network in the clear.
pub fn check_reach(address: &Address, allow_remote: bool) -> Result<(), String> {
    match address {
        Address::Tcp(tcp) if !tcp.ip().is_loopback() && !allow_remote => Err(format!(
            "refusing to listen on {tcp}: other machines could reach it, and the token would cross the network \
             unencrypted. Listen on 127.0.0.1 and connect through an SSH tunnel \
             (ssh -L {port}:127.0.0.1:{port} HOST), or pass --allow-remote if the network is yours",
            port = tcp.port()
        )),
        _ => Ok(()),
    }
}

/// Binds `address`, says where on stderr, waits for the right client and returns its
/// connection. `data_dir` is where a made token is written.
pub async fn accept(address: &Address, data_dir: &Path) -> Result<Connection, String> {
    match address {
        Address::Tcp(address) => {
            let listener =
                TcpListener::bind(address).await.map_err(|err| format!("cannot listen on {address}: {err}"))?;
            let bound = listener.local_addr().map_err(|err| err.to_string())?;
            if !bound.ip().is_loopback() {
                eprintln!("reins: warning: {bound} is reachable from other machines; the token is sent unencrypted");
            }
            let file = data_dir.join(format!("listen-{}.token", bound.port()));
            let token = Token::new(std::env::var(TOKEN_VARIABLE).ok(), &file)?;
            // Before "listening on": a script that waits for that line finds the file written.
            match &token.file {
                Some(file) => {
                    eprintln!("reins: the token is in {} (send it as initializationOptions.token)", file.display())
                }
                None => eprintln!("reins: the token is {TOKEN_VARIABLE}'s (send it as initializationOptions.token)"),
            }
            // On stderr, so a script that started the server with port 0 can find it.
            eprintln!("reins: listening on {bound}");
            let made = token.file.clone();
            let (stream, replay) = admit(listener, token).await;
            // The client is in, and nobody else can connect: the token has done its work.
            if let Some(file) = made {
                let _ = std::fs::remove_file(file);
            }
            let (read, write) = stream.into_split();
            Ok((Box::new(std::io::Cursor::new(replay).chain(read)), Box::new(write)))
        }
        Address::Unix(path) => {
            let listener = bind_private(path)?;
            eprintln!("reins: listening on unix:{}", path.display());
            let accepted = listener.accept().await;
            // One client: nobody else needs the socket's name.
            drop(listener);
            let _ = std::fs::remove_file(path);
            let (stream, _) = accepted.map_err(|err| format!("accept failed: {err}"))?;
            tracing::info!("serving a client on unix:{}", path.display());
            let (read, write) = stream.into_split();
            Ok((Box::new(read), Box::new(write)))
        }
    }
}

/// Takes connections until one shows the token, each read on its own; returns it with the bytes
/// to read before the rest of it. Strangers are refused, failures to accept are waited out:
/// nothing a client does ends the listener.
async fn admit(listener: TcpListener, token: Token) -> (TcpStream, Vec<u8>) {
    let attempts = Arc::new(Attempts::new(Instant::now()));
    let token = Arc::new(token);
    let mut pending = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) if pending.len() < MAX_PENDING => {
                    pending.spawn(introduce(stream, peer, token.clone(), attempts.clone()));
                }
                Ok((_, peer)) => tracing::warn!("refused {peer}: {MAX_PENDING} connections are already introducing themselves"),
                Err(err) => {
                    // Out of files, most likely: those pending free theirs within the time limit.
                    tracing::warn!("accepting a connection failed: {err}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            // Only an empty set disables this branch (for this round): a pattern that did not
            // match a refused client's end would leave the next one's unseen until a connection.
            Some(joined) = pending.join_next() => {
                if let Ok(Some(admitted)) = joined {
                    return admitted;
                }
            }
        }
    }
}

/// One connection's handshake, within [`HANDSHAKE_TIME`]: the stream and its replay when the
/// client showed the token, else `None` once it has been told why and closed.
async fn introduce(
    mut stream: TcpStream,
    peer: SocketAddr,
    token: Arc<Token>,
    attempts: Arc<Attempts>,
) -> Option<(TcpStream, Vec<u8>)> {
    let refusal = match tokio::time::timeout(HANDSHAKE_TIME, handshake(&mut stream, &token, &attempts)).await {
        Ok(Ok(admitted)) => {
            tracing::info!("serving {peer}");
            return Some((stream, admitted.replay));
        }
        Ok(Err(refusal)) => refusal,
        Err(_) => Refusal { reason: format!("no initialize within {} s", HANDSHAKE_TIME.as_secs()), answer: None },
    };
    tracing::warn!("refused {peer}: {}", refusal.reason);
    if let Some(answer) = refusal.answer {
        let _ = stream.write_all(&frame(answer.to_string().as_bytes())).await;
    }
    let _ = stream.shutdown().await;
    let _ = tokio::time::timeout(LINGER, tokio::io::copy(&mut stream, &mut tokio::io::sink())).await;
    None
}

/// A Unix socket at `path` that only the user can reach: in a folder of mode 0700 (made so when
/// missing; an existing one open to others is refused, not changed), the socket itself 0600. A
/// socket left by a server that is gone is replaced; a live one is not.
fn bind_private(path: &Path) -> Result<UnixListener, String> {
    let folder = path.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !folder.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)
            .map_err(|err| format!("cannot make {}: {err}", folder.display()))?;
    }
    let mode = std::fs::metadata(folder).map_err(|err| format!("{}: {err}", folder.display()))?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} is open to other users (mode {:o}): put the socket in a folder only you can enter (mode 0700), \
             e.g. unix:$XDG_RUNTIME_DIR/reins/lsp.sock",
            folder.display(),
            mode & 0o777
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(format!("{} is in use by a running server", path.display()));
            }
            std::fs::remove_file(path).map_err(|err| format!("cannot replace {}: {err}", path.display()))?;
        }
        Ok(_) => return Err(format!("{} exists and is not a socket: choose another path", path.display())),
        Err(_) => {}
    }
    let listener = UnixListener::bind(path).map_err(|err| format!("cannot listen on {}: {err}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|err| format!("cannot make {} private: {err}", path.display()))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_tcp_or_a_unix_path() {
        assert_eq!(address("127.0.0.1:9257"), Ok(Address::Tcp("127.0.0.1:9257".parse().unwrap())));
        assert_eq!(address("[::1]:0"), Ok(Address::Tcp("[::1]:0".parse().unwrap())));
        assert_eq!(address("unix:/run/r/lsp.sock"), Ok(Address::Unix("/run/r/lsp.sock".into())));
        assert!(address("unix:").unwrap_err().contains("needs a path"));
        assert!(address("localhost").unwrap_err().contains("not an address"));
    }

    #[test]
    fn only_loopback_is_served_without_allow_remote() {
        let tcp = |text: &str| address(text).unwrap();
        assert_eq!(check_reach(&tcp("127.0.0.1:9257"), false), Ok(()));
        assert_eq!(check_reach(&tcp("[::1]:9257"), false), Ok(()));
        assert_eq!(check_reach(&tcp("unix:/x/s"), false), Ok(()));
        for open in ["0.0.0.0:9257", "[::]:9257", "192.168.1.5:9257"] {
            let refused = check_reach(&tcp(open), false).unwrap_err();
            assert!(refused.contains("ssh -L 9257:127.0.0.1:9257 HOST"), "{refused}");
            assert!(refused.contains("--allow-remote"), "{refused}");
            assert_eq!(check_reach(&tcp(open), true), Ok(()));
        }
    }

    #[tokio::test]
    async fn a_socket_is_made_private_and_a_folder_open_to_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/reins/lsp.sock");
        let listener = bind_private(&path).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert!(bind_private(&path).unwrap_err().contains("in use"));
        drop(listener);
        // The socket file of a server that is gone is replaced.
        assert!(bind_private(&path).is_ok());

        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        let refused = bind_private(&open.join("lsp.sock")).unwrap_err();
        assert!(refused.contains("is open to other users (mode 755)"), "{refused}");
        std::fs::write(dir.path().join("run/reins/file"), "").unwrap();
        assert!(bind_private(&dir.path().join("run/reins/file")).unwrap_err().contains("is not a socket"));
    }
}
