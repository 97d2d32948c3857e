//! The floor under the overhead per turn: a client that only sends reins's own requests again,
//! one after another on one connection, and reads each answer to its end. It does none of a
//! harness's work, but it waits as often as reins does: once a turn for the server to answer.
//! On a loaded machine, most of a turn is each process waiting for a core after it is woken.
//! So the floor shows how much of the overhead no client can remove.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use scripted_llm::ScriptedServer;

use crate::{LOOP_TURNS, tool_loop_script};

/// First argument that turns the bench binary into the replaying client:
/// `reins-bench --replay ADDRESS FILE` (see [`run_client`]).
pub const REPLAY_FLAG: &str = "--replay";

/// The floor per turn for the loop whose requests were `bodies` (in order): the replaying client's
/// loop minus its run of the first request only, over the turns, as the overhead is reckoned.
pub async fn floor_per_turn(bodies: &[Vec<u8>]) -> Result<Duration, String> {
    if bodies.len() != LOOP_TURNS + 1 {
        return Err(format!("reins's loop sent {} requests, not {}", bodies.len(), LOOP_TURNS + 1));
    }
    let dir = tempfile::tempdir().map_err(|why| format!("no temporary directory: {why}"))?;
    let all = dir.path().join("all");
    let first = dir.path().join("first");
    save(&all, bodies).map_err(|why| format!("cannot write the requests: {why}"))?;
    save(&first, &bodies[..1]).map_err(|why| format!("cannot write the requests: {why}"))?;
    let one = median_replay(11, &first).await?;
    let whole = median_replay(5, &all).await?;
    Ok(whole.saturating_sub(one) / LOOP_TURNS as u32)
}

/// The median of `runs` timed replays of `file` (the bench's reins figures are medians too).
async fn median_replay(runs: usize, file: &Path) -> Result<Duration, String> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        samples.push(replay(file).await?);
    }
    samples.sort();
    Ok(samples[runs / 2])
}

/// `reins-bench --replay ADDRESS FILE`: sends each request of FILE to the scripted server at
/// ADDRESS and reads its answer; exits 0 when every answer came whole.
pub fn run_client(args: &[OsString]) -> i32 {
    let [address, file] = args else {
        eprintln!("bench: usage: reins-bench {REPLAY_FLAG} ADDRESS FILE");
        return 2;
    };
    match load(Path::new(file)).and_then(|bodies| send_all(&address.to_string_lossy(), &bodies)) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("bench: replay failed: {why}");
            1
        }
    }
}

/// One timed run of the client, from its start to its exit, against a fresh server.
async fn replay(file: &Path) -> Result<Duration, String> {
    let server = ScriptedServer::start(tool_loop_script()).await;
    let exe = std::env::current_exe().map_err(|why| format!("cannot find the bench binary: {why}"))?;
    let start = Instant::now();
    let status = tokio::process::Command::new(exe)
        .arg(REPLAY_FLAG)
        .arg(server.address().to_string())
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .await;
    let elapsed = start.elapsed();
    match status {
        Ok(status) if status.success() => Ok(elapsed),
        other => Err(format!("the replaying client failed: {other:?}")),
    }
}

/// Bodies as a file: each one's length in 8 little-endian bytes, then its bytes.
fn save(path: &Path, bodies: &[Vec<u8>]) -> io::Result<()> {
    let mut out = Vec::new();
    for body in bodies {
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(body);
    }
    std::fs::write(path, out)
}

fn load(path: &Path) -> io::Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path)?;
    let mut rest = bytes.as_slice();
    let mut bodies = Vec::new();
    while let Some((length, after)) = rest.split_first_chunk::<8>() {
        let length = usize::try_from(u64::from_le_bytes(*length)).unwrap_or(usize::MAX);
        let body = after.get(..length).ok_or_else(|| io::Error::other("a request is cut short"))?;
        bodies.push(body.to_vec());
        rest = &after[length..];
    }
    Ok(bodies)
}

/// Each body as a streaming chat request, its answer read to the chunked body's end.
fn send_all(address: &str, bodies: &[Vec<u8>]) -> io::Result<()> {
    let stream = TcpStream::connect(address)?;
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    for body in bodies {
        let mut request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer bench\r\n\
             Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        writer.write_all(&request)?;
        read_answer(&mut reader)?;
    }
    Ok(())
}

/// Reads a response with a chunked body: the head, then chunks up to the empty last one.
fn read_answer(reader: &mut BufReader<TcpStream>) -> io::Result<()> {
    let mut line = String::new();
    let mut status = None;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::Error::other("the server closed the connection"));
        }
        if status.is_none() {
            status = line.split_whitespace().nth(1).map(str::to_string);
        }
        if line == "\r\n" {
            break;
        }
    }
    if status.as_deref() != Some("200") {
        return Err(io::Error::other(format!("the server answered {status:?}")));
    }
    let mut chunk = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let size = usize::from_str_radix(line.trim(), 16).map_err(|_| io::Error::other("a bad chunk size"))?;
        chunk.resize(size + 2, 0);
        reader.read_exact(&mut chunk)?;
        if size == 0 {
            return Ok(());
        }
    }
}
