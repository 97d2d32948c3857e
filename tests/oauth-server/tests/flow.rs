//! The server over real HTTP: the challenge, discovery, registration, an authorization that
//! redirects to a loopback listener, the code exchanged, the tool called with the token.

use std::collections::HashMap;
use std::time::Duration;

use oauth_server::{AuthServer, browse, pkce_challenge};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request; the status, the `WWW-Authenticate` header and the body.
async fn send(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, Option<String>, String) {
    let url = url::Url::parse(url).unwrap();
    let mut stream = TcpStream::connect((url.host_str().unwrap(), url.port().unwrap())).await.unwrap();
    let mut request =
        format!("{method} {} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", url.path(), body.len());
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let challenge = head.lines().find_map(|line| line.strip_prefix("WWW-Authenticate: ")).map(str::to_string);
    (status, challenge, body.to_string())
}

async fn get_json(url: &str) -> Value {
    serde_json::from_str(&browse(url).await.unwrap()).unwrap()
}

#[tokio::test]
async fn a_client_logs_in_and_calls_the_tool_until_its_token_expires() {
    let server = AuthServer::start(Duration::from_secs(1)).await;
    let mcp = server.mcp_url();
    let base = mcp.trim_end_matches("/mcp").to_string();
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let json_type = ("Content-Type", "application/json");

    let (status, challenge, _) = send(&mcp, "POST", &[json_type], list).await;
    assert_eq!(status, 401);
    let metadata_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(challenge.unwrap(), format!("Bearer resource_metadata=\"{metadata_url}\""));
    let resource = get_json(&metadata_url).await;
    assert_eq!(resource["resource"], mcp.as_str());
    let metadata = get_json(&format!("{base}/.well-known/oauth-authorization-server")).await;
    assert_eq!(metadata["issuer"], base.as_str());

    // The client's loopback listener, which the authorization redirects to.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let redirect_uri = format!("http://{}/callback", listener.local_addr().unwrap());
    let registration = json!({ "client_name": "test", "redirect_uris": [redirect_uri] }).to_string();
    let (status, _, client) =
        send(metadata["registration_endpoint"].as_str().unwrap(), "POST", &[json_type], &registration).await;
    assert_eq!(status, 201);
    let client_id = serde_json::from_str::<Value>(&client).unwrap()["client_id"].as_str().unwrap().to_string();

    let verifier = "the-verifier-0123456789-0123456789-0123456789";
    let mut authorize = url::Url::parse(metadata["authorization_endpoint"].as_str().unwrap()).unwrap();
    authorize
        .query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("code_challenge", &pkce_challenge(verifier))
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", "st");
    let callback = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut stream = BufReader::new(stream);
        let mut line = String::new();
        stream.read_line(&mut line).await.unwrap();
        stream
            .get_mut()
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            .await
            .unwrap();
        line
    });
    assert_eq!(browse(authorize.as_str()).await.unwrap(), "ok");
    let line = callback.await.unwrap();
    let target = line.split_whitespace().nth(1).unwrap();
    let query: HashMap<String, String> =
        url::Url::parse(&format!("http://x{target}")).unwrap().query_pairs().into_owned().collect();
    assert_eq!(query["state"], "st");

    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "authorization_code")
        .append_pair("code", &query["code"])
        .append_pair("client_id", &client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("code_verifier", verifier)
        .finish();
    let form_type = ("Content-Type", "application/x-www-form-urlencoded");
    let (status, _, tokens) = send(&format!("{base}/token"), "POST", &[form_type], &form).await;
    assert_eq!(status, 200, "{tokens}");
    let tokens: Value = serde_json::from_str(&tokens).unwrap();
    assert_eq!(tokens["expires_in"], 1);
    let bearer = format!("Bearer {}", tokens["access_token"].as_str().unwrap());

    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{}}}"#;
    let (status, _, answer) = send(&mcp, "POST", &[json_type, ("Authorization", &bearer)], call).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&answer).unwrap()["result"]["content"][0]["text"],
        "hello, authorized client"
    );

    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, challenge, _) = send(&mcp, "POST", &[json_type, ("Authorization", &bearer)], call).await;
    assert_eq!(status, 401);
    assert!(challenge.unwrap().ends_with(", error=\"invalid_token\""));
    let grants: Vec<_> = server.requests().into_iter().filter_map(|request| request.grant_type).collect();
    assert_eq!(grants, ["authorization_code"]);
}
