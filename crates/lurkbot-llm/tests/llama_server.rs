//! Optional: a real model (llama.cpp's llama-server with SmolLM2-135M) answering a plain
//! streamed reply through both wire formats. Not in the default run (`#[ignore]`):
//! `scripts/llama-test.sh` builds and starts the server, then runs this with `--ignored`;
//! or start one yourself and set `LURKBOT_TEST_LLAMA_URL=http://127.0.0.1:8081`.

use lurkbot_llm::{ChatRequest, Failover, Message, StreamEvent};

#[tokio::test]
#[ignore = "needs a running llama-server: run scripts/llama-test.sh"]
async fn a_real_model_streams_through_both_wire_formats() {
    let url = std::env::var("LURKBOT_TEST_LLAMA_URL").expect(
        "set LURKBOT_TEST_LLAMA_URL to the llama-server base URL (scripts/llama-test.sh does)",
    );
    for model in ["openai/smollm2", "anthropic/smollm2"] {
        let base = url.trim_end_matches('/').to_string();
        let lookup = move |name: &str| match name {
            "OPENAI_BASE_URL" => Some(format!("{base}/v1")),
            "ANTHROPIC_BASE_URL" => Some(base.clone()),
            _ => None,
        };
        let mut failover = Failover::new(vec![model.parse().unwrap()], &lookup, None).unwrap();
        let request = ChatRequest {
            model: String::new(),
            system: "You are a helpful assistant. Answer in one short sentence.".into(),
            messages: vec![Message::user("What colour is the sky on a clear day?")],
            tools: Vec::new(),
            max_tokens: 48,
            reasoning: None,
        };
        let mut pieces = Vec::new();
        let answered = failover
            .chat(&request, &mut |event| {
                if let StreamEvent::Text(text) = event {
                    pieces.push(text);
                }
            })
            .await
            .unwrap_or_else(|e| panic!("{model}: {e}"));
        let reply = answered.response;
        assert!(!reply.text.trim().is_empty(), "{model}: empty reply");
        assert!(
            pieces.len() >= 2,
            "{model}: the reply did not stream ({pieces:?})"
        );
        assert_eq!(pieces.concat(), reply.text, "{model}");
        assert!(reply.usage.output_tokens > 0, "{model}: {:?}", reply.usage);
        assert!(!reply.stop_reason.is_empty(), "{model}");
        eprintln!("{model}: {:?}", reply.text);
    }
}
