//! A process out of file descriptors is told so, not sent to look for a model server that is
//! fine. Its own test binary: it lowers the process's limit of open files while it runs.

use std::time::Duration;

use reins_ai::{ApiKey, ClientOptions, Message, Model, OpenAiCompatible, Provider, ProviderErrorKind, Request};
use tokio_util::sync::CancellationToken;

fn request(base_url: &str) -> Request {
    Request {
        model: Model {
            id: "scripted-model".into(),
            provider: "scripted".into(),
            base_url: base_url.into(),
            context_window: 100_000,
            max_output: 4096,
            prices: Default::default(),
            reasoning: false,
            compat: Default::default(),
        },
        system_prompt: "You are a test.".into(),
        messages: vec![Message::user("hello")].into(),
        tools: Vec::new().into(),
        max_tokens: None,
        thinking: None,
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_process_out_of_file_descriptors_says_so() {
    // A server that is there and would answer: the failure is ours.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let options = ClientOptions {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        max_retries: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
        final_refusal_urls: Vec::new(),
    };
    let provider = OpenAiCompatible::new(ApiKey::new("sk-test"), options);
    let request = request(&base_url);

    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain calls on a valid `rlimit`; the test is alone in its process.
    unsafe { assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0) };
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as libc::rlim_t;
    let lowered = libc::rlimit { rlim_cur: open + 16, rlim_max: limit.rlim_max };
    unsafe { assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lowered), 0) };
    // Every descriptor left taken, up to the limit.
    let mut filler = Vec::new();
    while let Ok(file) = std::fs::File::open("/dev/null") {
        filler.push(file);
    }
    let message = provider.stream(&request, &|_| {}, &CancellationToken::new()).await;
    drop(filler);
    unsafe { assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0) };

    let error = message.error.expect("the call failed");
    assert_eq!(error.kind, ProviderErrorKind::OpenFiles, "{}", error.message);
    assert!(error.message.starts_with("too many open files"), "{}", error.message);
    assert!(!error.message.contains("Start the model server"), "{}", error.message);
}
