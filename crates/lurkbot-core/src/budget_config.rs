//! `[budgets]`, `[agents.<id>.budgets]` and `[models."<provider>/<model>"]`: the spending caps
//! checked before every model call and the prices usage records are costed with
//! (ARCHITECTURE.md §7c). Nothing is guessed: without a price a record has no cost, and a USD
//! cap counts only costed records.

use serde::{Deserialize, Serialize};

/// Caps on what model calls may use; each unset means no cap. Days and months are those of
/// `agent.timezone` (else the system's).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct BudgetsConfig {
    /// US dollars a day.
    pub daily_usd: Option<f64>,
    /// US dollars a month.
    pub monthly_usd: Option<f64>,
    /// Tokens (input + output) a day.
    pub daily_tokens: Option<u64>,
    /// Tokens (input + output) a month.
    pub monthly_tokens: Option<u64>,
}

impl BudgetsConfig {
    /// Whether any cap is set.
    pub fn any(&self) -> bool {
        self.daily_usd.is_some()
            || self.monthly_usd.is_some()
            || self.daily_tokens.is_some()
            || self.monthly_tokens.is_some()
    }
}

/// `[models."<provider>/<model>"]`: what a model costs, in US dollars per million tokens, and
/// whether it sees images.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ModelPrice {
    /// Input (prompt) tokens.
    pub input_per_mtok: Option<f64>,
    /// Output (generated) tokens.
    pub output_per_mtok: Option<f64>,
    /// Input tokens served from the provider's cache (default: the input price).
    pub cached_input_per_mtok: Option<f64>,
    /// Whether the model takes images (default true); `false` keeps images away from it.
    pub vision: Option<bool>,
}

impl ModelPrice {
    /// The cost of a call, when both the input and output prices are known.
    pub fn cost_usd(&self, input: u64, output: u64, cached_input: u64) -> Option<f64> {
        let (input_price, output_price) = (self.input_per_mtok?, self.output_per_mtok?);
        let cached_price = self.cached_input_per_mtok.unwrap_or(input_price);
        let fresh = input.saturating_sub(cached_input);
        Some(
            (fresh as f64 * input_price
                + cached_input as f64 * cached_price
                + output as f64 * output_price)
                / 1_000_000.0,
        )
    }
}

impl crate::Config {
    /// Caps and prices that cannot be: negative or not a number.
    pub(crate) fn budget_problems(&self) -> Vec<crate::ConfigProblem> {
        let mut problems = Vec::new();
        let mut money = |key: String, value: Option<f64>| {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                problems.push(crate::ConfigProblem {
                    message: format!("{key} is {v}; write a number of US dollars, 0 or more"),
                    key,
                });
            }
        };
        let mut scopes = vec![("budgets".to_string(), &self.budgets)];
        scopes.extend(
            self.agents
                .iter()
                .map(|(id, a)| (format!("agents.{id}.budgets"), &a.budgets)),
        );
        for (prefix, b) in scopes {
            money(format!("{prefix}.daily_usd"), b.daily_usd);
            money(format!("{prefix}.monthly_usd"), b.monthly_usd);
        }
        for (model, price) in &self.models {
            let prefix = format!("models.\"{model}\"");
            money(format!("{prefix}.input_per_mtok"), price.input_per_mtok);
            money(format!("{prefix}.output_per_mtok"), price.output_per_mtok);
            money(
                format!("{prefix}.cached_input_per_mtok"),
                price.cached_input_per_mtok,
            );
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_money_is_a_problem() {
        let text = "[budgets]\ndaily_usd = -1.0\n[models.\"openai/m\"]\ninput_per_mtok = -2.0\n";
        let (_, problems) = crate::Config::check(std::path::Path::new("config.toml"), text)
            .unwrap_or_else(|e| panic!("{e}"));
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            ["budgets.daily_usd", "models.\"openai/m\".input_per_mtok"]
        );
    }

    #[test]
    fn costs_need_both_prices_and_cached_tokens_default_to_the_input_price() {
        let price = ModelPrice {
            input_per_mtok: Some(2.0),
            output_per_mtok: Some(8.0),
            cached_input_per_mtok: Some(0.5),
            vision: None,
        };
        let cost = price
            .cost_usd(1_000_000, 500_000, 400_000)
            .unwrap_or_default();
        assert!(
            (cost - (0.6 * 2.0 + 0.4 * 0.5 + 0.5 * 8.0)).abs() < 1e-9,
            "{cost}"
        );
        let no_cache = ModelPrice {
            cached_input_per_mtok: None,
            ..price.clone()
        };
        let cost = no_cache.cost_usd(1_000_000, 0, 400_000).unwrap_or_default();
        assert!((cost - 2.0).abs() < 1e-9);
        let half = ModelPrice {
            output_per_mtok: None,
            ..price
        };
        assert_eq!(half.cost_usd(10, 10, 0), None);
    }
}
