//! Describing a picture in words for a turn whose model cannot see (`[tools.media]
//! image_model`), for the `image` tool.

use lurkbot_llm::{ImagePart, Message};

use super::ToolCtx;
use crate::compaction::IMAGE_TOKENS;

/// A description of `image` in words by `[tools.media] image_model`, for a turn whose model
/// cannot see: one call under the same budgets as every model call (reserved, then recorded).
///
/// # Errors
/// Why no description came: the setting is missing or wrong, a cap, the provider's failure.
pub(crate) async fn describe(
    ctx: &ToolCtx<'_>,
    image: &ImagePart,
    prompt: Option<&str>,
) -> Result<(String, String), String> {
    let model = ctx
        .config
        .tools
        .media
        .image_model
        .as_deref()
        .ok_or("no [tools.media] image_model is set")?;
    let parsed = model
        .parse::<lurkbot_llm::ModelRef>()
        .map_err(|e| format!("[tools.media] image_model '{model}': {e}"))?;
    let mut failover = lurkbot_llm::Failover::new(
        vec![parsed],
        &crate::setup::variables(ctx.home),
        Some(
            ctx.home
                .join(lurkbot_core::layout::AUTH)
                .join("profiles.json"),
        ),
    )
    .map_err(|e| format!("[tools.media] image_model '{model}': {e}"))?;
    let zone = crate::usage::zone(ctx.config);
    let meter = crate::usage::Meter {
        config: ctx.config,
        zone: &zone,
        home: ctx.home,
        agent: ctx.session.agent_id(),
        session: ctx.session.as_str(),
        run_budget: None,
    };
    let ask = prompt
        .unwrap_or("Describe this image: what it shows, every text in it, and anything notable.");
    let estimate = IMAGE_TOKENS + 100;
    let _held = meter
        .reserve(model, estimate, 0)
        .map_err(|e| e.to_string())?;
    let request = lurkbot_llm::ChatRequest {
        model: String::new(),
        system: "You describe images for an assistant that cannot see them. Be factual and complete; transcribe any text exactly.".into(),
        messages: vec![Message::user(ask).with_images(vec![image.clone()])],
        tools: Vec::new(),
        max_tokens: 1024,
        reasoning: None,
    };
    let answered = failover
        .chat(&request, &mut |_| {})
        .await
        .map_err(|e| format!("{model} could not describe it: {e}"))?;
    let text = answered.response.text.clone();
    meter.record(&answered.model.to_string(), answered.response.usage, || {
        (estimate, crate::compaction::estimate_tokens(&text))
    });
    Ok((answered.model.to_string(), text))
}
