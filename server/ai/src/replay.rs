//! A recorded response body played through a provider's stream assembler, as if it had just come
//! over HTTP: how the fuzzers reach the assemblers, and a way to replay a captured stream.

use crate::message::{AssistantMessage, ProviderError, ProviderErrorKind};
use crate::model::Model;
use crate::provider::StreamEvent;
use crate::sse::SseParser;
use crate::transport::{Assemble, Step};
use crate::{anthropic, openai};

/// The wire format of a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI-compatible Chat Completions chunks.
    ChatCompletions,
    /// Anthropic Messages events.
    Messages,
}

/// The message `body` makes when it is the whole response: a body that ends before the answer
/// is whole ends in an error, as it does over HTTP; so does one the provider would retry.
pub fn replay(wire: Wire, body: &[u8], model: &Model) -> AssistantMessage {
    let sink = |_: StreamEvent| {};
    match wire {
        Wire::ChatCompletions => play(openai::Assembler::new(&sink), body, model),
        Wire::Messages => play(anthropic::Assembler::new(&sink), body, model),
    }
}

fn play(mut assembler: impl Assemble, body: &[u8], model: &Model) -> AssistantMessage {
    let mut parser = SseParser::default();
    let mut events = parser.feed(body);
    events.extend(parser.finish());
    let mut error = None;
    for event in &events {
        match assembler.on_event(event) {
            Step::Continue | Step::KeepAlive => {}
            Step::Done => break,
            Step::Failed(failure) | Step::Retry(failure) => {
                error = Some(failure);
                break;
            }
        }
    }
    if error.is_none() && !assembler.is_complete() {
        let message = "the body ended before the answer was complete";
        error = Some(ProviderError::new(ProviderErrorKind::Stream, message));
    }
    assembler.into_message(model, error)
}
