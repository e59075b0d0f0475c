//! The configuration the bench runs the functions in: the one `template.yaml` deploys, as a new
//! project gets it. The translated template (`target/sam/template.json`, `infra/scripts/translate.sh`)
//! is instantiated with its parameters' defaults and the parameters local Lambda mode gives
//! (`AuthIssuer`, `AuthAudience`, `AuthJwksUrl`, a custom domain so that front door A, the
//! per-method REST APIs, is the stack), through `relevo-template` exactly as local Lambda mode
//! does; each function's `Environment.Variables` (log level, `RELEVO_METRICS=emf`, the tenant
//! quota, response streaming, the signing-keys secret...) and `MemorySize` come from there, with
//! references resolved to the synthetic physical ids (`PhysicalIds::synthetic`).
//!
//! Invariants: the only variables added are the `AWS_*` ones local Lambda mode adds (the
//! endpoint is the bench's loopback stub, which answers DynamoDB, SQS and Secrets Manager); the
//! bench's own overrides are listed in [`Deployment::overrides`] and in the report.

use std::collections::BTreeMap;
use std::path::Path;

use relevo_template::{PhysicalIds, Template};

use crate::load::Error;

/// The stack name the bench instantiates (the metrics namespace is `Relevo/<stack>`).
pub const STACK: &str = "relevo-bench";

/// One function as the template deploys it.
#[derive(Clone, Debug)]
pub struct Deployment {
    pub binary: String,
    pub memory_mb: u64,
    /// Its `LoggingConfig`: the variables Lambda sets from it and which platform lines its log
    /// gets (local Lambda mode applies it as Lambda does).
    pub logging: relevo_template::Logging,
    /// The template's variables, resolved.
    pub template_env: BTreeMap<String, String>,
    /// What the bench sets differently, with why (empty: exactly as deployed).
    pub overrides: Vec<(String, String, &'static str)>,
}

impl Deployment {
    /// The process environment: the template's variables, the `AWS_*` variables local Lambda
    /// mode adds (pointing at `endpoint`), then the overrides.
    pub fn env(&self, endpoint: &str) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = self.template_env.clone();
        for (key, value) in [
            ("AWS_ENDPOINT_URL", endpoint),
            ("AWS_REGION", relevo_template::REGION),
            ("AWS_DEFAULT_REGION", relevo_template::REGION),
            ("AWS_ACCESS_KEY_ID", "bench"),
            ("AWS_SECRET_ACCESS_KEY", "bench"),
        ] {
            env.insert(key.into(), value.into());
        }
        for (key, value, _) in &self.overrides {
            env.insert(key.clone(), value.clone());
        }
        env.into_iter().collect()
    }

    /// Sets `key` to `value` for the bench's reason `why`.
    pub fn set(&mut self, key: &str, value: &str, why: &'static str) {
        self.overrides.retain(|(k, ..)| k != key);
        self.overrides.push((key.into(), value.into(), why));
    }

    /// The level `RUST_LOG` gives (the functions' default, `info`, when the template sets none).
    pub fn log_level(&self) -> String {
        self.env("")
            .into_iter()
            .find(|(k, _)| k == "RUST_LOG")
            .map_or_else(|| "info (default)".into(), |(_, v)| v)
    }
}

/// Every function of the template's front door A stack (`domain`; else front door B, the HTTP
/// API), for a token `issuer` (its JWKS at `ISSUER/.well-known/jwks.json`) and `audience`.
pub fn functions(
    template: &Path,
    issuer: &str,
    audience: &str,
    domain: bool,
) -> Result<Vec<Deployment>, Error> {
    let template = Template::load(template).map_err(|e| {
        format!("{e} (the bench reads the translated template.yaml: infra/scripts/translate.sh)")
    })?;
    let parameters = relevo_gateway::lambda_local::stack_parameters(issuer, audience, domain);
    let stack = template
        .instantiate(STACK, &parameters)
        .map_err(|e| e.to_string())?;
    let ids = PhysicalIds::synthetic(&stack);
    Ok(stack
        .functions(&ids)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|f| Deployment {
            binary: f.binary,
            memory_mb: f.memory_mb,
            logging: f.logging,
            template_env: f.environment,
            overrides: Vec::new(),
        })
        .collect())
}

/// The function built from `binary` in front door A's stack, or front door B's for a binary
/// only that one deploys (`well-known`); the first where two functions share one.
pub fn function(
    template: &Path,
    binary: &str,
    issuer: &str,
    audience: &str,
) -> Result<Deployment, Error> {
    for domain in [true, false] {
        if let Some(found) = functions(template, issuer, audience, domain)?
            .into_iter()
            .find(|f| f.binary == binary)
        {
            return Ok(found);
        }
    }
    Err(format!("template.yaml deploys no function of binary {binary}").into())
}

/// The configuration line of the report: what the template gives `tools-call`.
pub fn describe(deployment: &Deployment) -> String {
    let get = |key: &str| {
        deployment
            .template_env
            .get(key)
            .filter(|v| !v.is_empty())
            .cloned()
    };
    format!(
        "log level `{}`, `RELEVO_METRICS={}`, tenant quota `{}`, per-tool quota `{}`, `RELEVO_AUTH={}`, \
         response streaming `{}`, {} MB",
        deployment.log_level(),
        get("RELEVO_METRICS").unwrap_or_else(|| "off".into()),
        get("RELEVO_RATE_PER_TENANT").unwrap_or_else(|| "none".into()),
        get("RELEVO_RATE_PER_TOOL").unwrap_or_else(|| "none".into()),
        get("RELEVO_AUTH").unwrap_or_else(|| "-".into()),
        get("RELEVO_RESPONSE_STREAMING").unwrap_or_else(|| "false".into()),
        deployment.memory_mb,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template in the shape of the translated one: Globals already merged, as SAM emits.
    fn template(dir: &Path) -> std::path::PathBuf {
        let json = serde_json::json!({
            "Parameters": {
                "AuthIssuer": { "Type": "String" },
                "AuthAudience": { "Type": "String" },
                "AuthJwksUrl": { "Type": "String", "Default": "" },
                "DomainName": { "Type": "String", "Default": "" },
                "CertificateArn": { "Type": "String", "Default": "" },
                "RatePerTenant": { "Type": "String", "Default": "1200/60" }
            },
            "Resources": {
                "Table": { "Type": "AWS::DynamoDB::Table", "Properties": {} },
                "ToolsCallFunction": {
                    "Type": "AWS::Lambda::Function",
                    "Metadata": { "BuildProperties": { "Binary": "tools-call" } },
                    "Properties": {
                        "MemorySize": 256,
                        "LoggingConfig": {
                            "LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "WARN"
                        },
                        "Environment": { "Variables": {
                            "RELEVO_AUTH": "required",
                            "RELEVO_AUTH_ISSUER": { "Ref": "AuthIssuer" },
                            "RELEVO_RATE_PER_TENANT": { "Ref": "RatePerTenant" },
                            "RELEVO_TABLE": { "Ref": "Table" },
                            "RELEVO_METRICS": "emf"
                        } }
                    }
                }
            }
        });
        let path = dir.join("template.json");
        std::fs::write(&path, json.to_string()).unwrap();
        path
    }

    #[test]
    fn a_function_gets_the_template_environment_and_memory_with_refs_resolved() {
        let dir =
            std::env::temp_dir().join(format!("relevo-bench-deployed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = template(&dir);
        let mut f = function(&path, "tools-call", "http://127.0.0.1:9", "aud").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(f.memory_mb, 256);
        // Its LoggingConfig: local Lambda mode writes no START/END/REPORT line at WARN, so the
        // bench's log bytes are the function's own lines.
        assert!(!f.logging.platform_lines());
        assert_eq!(f.logging.environment()[1].1, "INFO");
        let env: BTreeMap<String, String> = f.env("http://stub").into_iter().collect();
        assert_eq!(env["RELEVO_AUTH"], "required");
        assert_eq!(env["RELEVO_AUTH_ISSUER"], "http://127.0.0.1:9");
        assert_eq!(env["RELEVO_RATE_PER_TENANT"], "1200/60");
        assert_eq!(env["RELEVO_METRICS"], "emf");
        assert!(
            env["RELEVO_TABLE"].starts_with("relevo-bench-Table"),
            "{}",
            env["RELEVO_TABLE"]
        );
        assert_eq!(env["AWS_ENDPOINT_URL"], "http://stub");
        // No log level set by the bench: the functions' default, as deployed.
        assert!(!env.contains_key("RUST_LOG"));
        assert_eq!(f.log_level(), "info (default)");
        f.set("RELEVO_AUTH", "off", "the row without a token");
        let env: BTreeMap<String, String> = f.env("http://stub").into_iter().collect();
        assert_eq!(env["RELEVO_AUTH"], "off");
        assert_eq!(f.overrides.len(), 1);
    }
}
