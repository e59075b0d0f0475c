use std::path::PathBuf;

/// Why a translated template could not be read or evaluated.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a translated template (JSON): {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("parameter {0} has no default and no value was given")]
    MissingParameter(String),
    #[error("parameter {name}: {value:?} is not one of its AllowedValues")]
    NotAllowed { name: String, value: String },
    #[error("unknown parameter {0} (not declared in the template)")]
    UnknownParameter(String),
    #[error("condition {0} is not declared")]
    UnknownCondition(String),
    #[error("{at}: {message}")]
    Intrinsic { at: String, message: String },
    #[error("{resource}: {message}")]
    Model { resource: String, message: String },
}

impl TemplateError {
    pub(crate) fn intrinsic(at: &str, message: impl Into<String>) -> Self {
        TemplateError::Intrinsic {
            at: at.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn model(resource: &str, message: impl Into<String>) -> Self {
        TemplateError::Model {
            resource: resource.to_string(),
            message: message.into(),
        }
    }
}
