//! A function's `LoggingConfig`, and what Lambda does with it, as AWS documents it:
//! - log format: <https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html>
//!   (`Text`, the default, or `JSON`; a custom runtime learns it from `AWS_LAMBDA_LOG_FORMAT`);
//! - log levels: <https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html>
//!   (JSON format only. Application logs: TRACE, DEBUG, INFO, WARN, ERROR, FATAL, default INFO;
//!   Lambda keeps a line at the level or less detailed, reads a JSON line's `level` and takes a
//!   line without a valid one as INFO, and tells a custom runtime the level in
//!   `AWS_LAMBDA_LOG_LEVEL`. System logs, the platform's own lines: DEBUG, INFO, WARN, default
//!   INFO; the per-invocation START, END and REPORT lines are INFO, so WARN leaves them out.)
//!
//! Two readers: the deploy check (rule `lambda-logging`) and local Lambda mode, which gives the
//! function the variables Lambda sets, writes the platform's lines only where Lambda would, and
//! drops the application lines Lambda's filter drops.

use serde_json::Value;

use crate::physical::text;

/// `LoggingConfig.LogFormat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Lambda's default: lines as written, no level filtering.
    #[default]
    Text,
    /// Structured: log levels apply.
    Json,
}

/// Application log levels, least detailed last (Lambda keeps a line at the configured level or
/// after it).
pub const APPLICATION_LEVELS: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];
/// System log levels, least detailed last.
pub const SYSTEM_LEVELS: [&str; 3] = ["DEBUG", "INFO", "WARN"];
/// Both filters' default (Lambda applies it to a JSON-format function that sets none).
pub const DEFAULT_LEVEL: &str = "INFO";

/// A function's `LoggingConfig` (every field as the template gives it; absent: Lambda's default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Logging {
    pub format: LogFormat,
    /// `LogFormat` when it is neither `Text` nor `JSON` (the deploy check refuses it).
    pub unknown_format: Option<String>,
    /// `ApplicationLogLevel`, as written.
    pub application_level: Option<String>,
    /// `SystemLogLevel`, as written.
    pub system_level: Option<String>,
}

fn rank(levels: &[&str], level: &str) -> Option<usize> {
    levels.iter().position(|l| l.eq_ignore_ascii_case(level))
}

impl Logging {
    /// The `LoggingConfig` property of an `AWS::Lambda::Function` (resolved; `Null` when absent).
    pub fn from_property(config: &Value) -> Logging {
        let format = text(&config["LogFormat"]);
        Logging {
            format: match format.as_deref() {
                Some("JSON") => LogFormat::Json,
                _ => LogFormat::Text,
            },
            unknown_format: format.filter(|f| f != "JSON" && f != "Text"),
            application_level: text(&config["ApplicationLogLevel"]),
            system_level: text(&config["SystemLogLevel"]),
        }
    }

    /// The variables Lambda sets in the function's environment for this configuration: with
    /// the JSON format, `AWS_LAMBDA_LOG_FORMAT=JSON` and `AWS_LAMBDA_LOG_LEVEL` (the application
    /// log level, INFO by default); with the text format, none.
    pub fn environment(&self) -> Vec<(String, String)> {
        match self.format {
            LogFormat::Text => Vec::new(),
            LogFormat::Json => vec![
                ("AWS_LAMBDA_LOG_FORMAT".into(), "JSON".into()),
                (
                    "AWS_LAMBDA_LOG_LEVEL".into(),
                    self.application_level
                        .as_deref()
                        .unwrap_or(DEFAULT_LEVEL)
                        .to_ascii_uppercase(),
                ),
            ],
        }
    }

    /// Whether Lambda writes the platform's per-invocation lines (START, END, REPORT): at its
    /// system log level INFO or DEBUG, which is every function with the text format and every
    /// JSON-format function but one at WARN.
    pub fn platform_lines(&self) -> bool {
        let level = match self.format {
            LogFormat::Text => DEFAULT_LEVEL,
            LogFormat::Json => self.system_level.as_deref().unwrap_or(DEFAULT_LEVEL),
        };
        rank(&SYSTEM_LEVELS, level) != rank(&SYSTEM_LEVELS, "WARN")
    }

    /// Whether Lambda keeps an application line whose `level` is this (a JSON line's `level`
    /// member; `None` for a line without one, or not JSON): with the text format every line;
    /// with JSON, a line at the application log level or less detailed, a line without a valid
    /// level counting as INFO.
    pub fn keeps(&self, level: Option<&str>) -> bool {
        if self.format == LogFormat::Text {
            return true;
        }
        let configured = self.application_level.as_deref().unwrap_or(DEFAULT_LEVEL);
        let Some(configured) = rank(&APPLICATION_LEVELS, configured) else {
            return true;
        };
        let line = level
            .and_then(|l| rank(&APPLICATION_LEVELS, l))
            .or_else(|| rank(&APPLICATION_LEVELS, DEFAULT_LEVEL))
            .unwrap_or(0);
        line >= configured
    }

    /// Why CloudFormation would refuse this configuration (the levels need the JSON format, each
    /// from its own list), or `None`.
    pub fn refused(&self) -> Option<String> {
        if let Some(format) = &self.unknown_format {
            return Some(format!("LogFormat {format:?} is neither Text nor JSON"));
        }
        for (name, level, levels) in [
            (
                "ApplicationLogLevel",
                &self.application_level,
                &APPLICATION_LEVELS[..],
            ),
            ("SystemLogLevel", &self.system_level, &SYSTEM_LEVELS[..]),
        ] {
            let Some(level) = level else { continue };
            if self.format != LogFormat::Json {
                return Some(format!(
                    "{name} {level} without LogFormat JSON: Lambda filters log levels only in the JSON format"
                ));
            }
            if !levels.contains(&level.as_str()) {
                return Some(format!("{name} {level} is not one of {levels:?}"));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(value: Value) -> Logging {
        Logging::from_property(&value)
    }

    /// What the template gives every function.
    fn template() -> Logging {
        config(
            json!({ "LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "WARN" }),
        )
    }

    #[test]
    fn at_system_level_warn_lambda_writes_no_start_end_or_report_line() {
        assert!(!template().platform_lines());
        // Lambda's defaults write them: no configuration, the text format, JSON at INFO or DEBUG.
        assert!(Logging::default().platform_lines());
        assert!(config(json!({ "LogFormat": "Text" })).platform_lines());
        assert!(config(json!({ "LogFormat": "JSON" })).platform_lines());
        for level in ["INFO", "DEBUG"] {
            let logging = config(json!({ "LogFormat": "JSON", "SystemLogLevel": level }));
            assert!(logging.platform_lines(), "{level}");
        }
    }

    #[test]
    fn the_json_format_sets_the_variables_a_custom_runtime_reads() {
        let variables = |logging: Logging| logging.environment();
        assert_eq!(
            variables(template()),
            [
                ("AWS_LAMBDA_LOG_FORMAT".to_string(), "JSON".to_string()),
                ("AWS_LAMBDA_LOG_LEVEL".to_string(), "INFO".to_string())
            ]
        );
        let debug = config(json!({ "LogFormat": "JSON", "ApplicationLogLevel": "DEBUG" }));
        assert_eq!(variables(debug)[1].1, "DEBUG");
        assert_eq!(
            variables(config(json!({ "LogFormat": "JSON" })))[1].1,
            "INFO"
        );
        assert!(variables(Logging::default()).is_empty());
    }

    #[test]
    fn lambda_keeps_application_lines_at_the_configured_level_or_less_detailed() {
        let logging = template();
        assert!(logging.keeps(Some("INFO")) && logging.keeps(Some("error")));
        assert!(!logging.keeps(Some("DEBUG")) && !logging.keeps(Some("trace")));
        // A line without a valid level is INFO (an EMF line that said nothing would pass).
        assert!(logging.keeps(None) && logging.keeps(Some("loud")));
        let warn = config(json!({ "LogFormat": "JSON", "ApplicationLogLevel": "WARN" }));
        assert!(
            !warn.keeps(Some("INFO")) && !warn.keeps(None),
            "EMF lines would go"
        );
        assert!(warn.keeps(Some("WARN")));
        assert!(
            Logging::default().keeps(Some("TRACE")),
            "text: no filtering"
        );
    }

    #[test]
    fn levels_without_the_json_format_are_refused() {
        assert_eq!(template().refused(), None);
        assert_eq!(Logging::default().refused(), None);
        for bad in [
            json!({ "SystemLogLevel": "WARN" }),
            json!({ "LogFormat": "Text", "ApplicationLogLevel": "INFO" }),
            json!({ "LogFormat": "JSON", "SystemLogLevel": "ERROR" }),
            json!({ "LogFormat": "JSON", "ApplicationLogLevel": "VERBOSE" }),
            json!({ "LogFormat": "Json" }),
        ] {
            assert!(config(bad.clone()).refused().is_some(), "{bad}");
        }
    }
}
