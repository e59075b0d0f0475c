//! A prompt and its arguments.

use serde_json::{Value, json};

use super::{Handler, insert_some, owned};

#[derive(Clone, Debug)]
pub struct PromptArgument {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
    /// Completion candidates offered by `completion/complete`.
    pub completions: Vec<String>,
}

impl PromptArgument {
    pub fn required(name: &str, description: &str) -> Self {
        PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required: true,
            completions: Vec::new(),
        }
    }

    pub fn optional(name: &str, description: &str) -> Self {
        PromptArgument {
            required: false,
            ..PromptArgument::required(name, description)
        }
    }

    pub fn completions(mut self, values: &[&str]) -> Self {
        self.completions = values.iter().map(|v| v.to_string()).collect();
        self
    }
}

#[derive(Clone)]
pub struct Prompt {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<PromptArgument>,
    /// OAuth scopes a caller must hold to get, list or complete it.
    pub scopes: Vec<String>,
    pub handler: Handler,
}

impl Prompt {
    pub fn new(
        name: &str,
        description: &str,
        arguments: Vec<PromptArgument>,
        handler: Handler,
    ) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            arguments,
            scopes: Vec::new(),
            handler,
        }
    }

    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.scopes = owned(scopes);
        self
    }

    /// Offers `values` as the completions of the argument `argument` (`completion/complete`
    /// answers those that start with what the user typed). A name the prompt has no argument
    /// of changes nothing.
    pub fn complete(mut self, argument: &str, values: &[&str]) -> Self {
        for known in self.arguments.iter_mut().filter(|a| a.name == argument) {
            known.completions = owned(values);
        }
        self
    }

    pub fn to_wire(&self) -> Value {
        let mut prompt = json!({ "name": self.name });
        insert_some(&mut prompt, "title", &self.title);
        insert_some(&mut prompt, "description", &self.description);
        if !self.arguments.is_empty() {
            let arguments: Vec<Value> = self
                .arguments
                .iter()
                .map(|a| {
                    let mut argument = json!({ "name": a.name, "required": a.required });
                    insert_some(&mut argument, "description", &a.description);
                    argument
                })
                .collect();
            prompt["arguments"] = json!(arguments);
        }
        prompt
    }
}
