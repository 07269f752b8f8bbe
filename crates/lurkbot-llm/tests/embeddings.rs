//! The embeddings client against the scripted server's `/v1/embeddings`.

use lurkbot_llm::fake::{FakeProvider, fake_embedding};
use lurkbot_llm::{EmbeddingsClient, ErrorKind};

#[tokio::test]
async fn a_batch_comes_back_in_order_with_the_key_sent() {
    let fake = FakeProvider::start(Vec::new()).await;
    let client = EmbeddingsClient::new(
        &format!("{}/v1/", fake.url),
        Some("sk-embed".into()),
        "text-embedding-3-small",
    )
    .unwrap();
    let texts: Vec<String> = ["deploy keys", "the cat sat", "deploy keys rotate"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    let vectors = client.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), 3);
    for (vector, text) in vectors.iter().zip(&texts) {
        assert_eq!(vector, &fake_embedding(text));
    }
    assert!(client.embed(&[]).await.unwrap().is_empty());
    let requests = fake.requests();
    assert_eq!(
        requests.len(),
        1,
        "one request for the batch, none for nothing"
    );
    assert_eq!(requests[0].path, "/v1/embeddings");
    assert_eq!(requests[0].key.as_deref(), Some("sk-embed"));
    assert_eq!(requests[0].body["model"], "text-embedding-3-small");
    assert_eq!(requests[0].body["input"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn an_unreachable_server_is_a_transient_error_naming_the_host() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let client = EmbeddingsClient::new(&format!("http://127.0.0.1:{port}/v1"), None, "m").unwrap();
    let error = client.embed(&["x".to_string()]).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Transient);
    assert!(
        error.message.contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );
}
