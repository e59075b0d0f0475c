//! The MCP methods this server implements, and the ones the 2026-07-28 revision removed.

/// A method a function can own. Each has its own Lambda in production.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `server/discover`: the server's info, capabilities and versions.
    Discover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourcesTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `completion/complete`.
    Complete,
    /// `subscriptions/listen`: the long-lived stream of list-changed and resource-updated
    /// notifications.
    SubscriptionsListen,
    /// `tasks/get`.
    TasksGet,
    /// `tasks/update`.
    TasksUpdate,
    /// `tasks/cancel`.
    TasksCancel,
    /// `skills/list` (the Skills extension).
    SkillsList,
    /// `skills/get` (the Skills extension).
    SkillsGet,
    /// `resources/directory/read` (the Skills extension's `directoryRead`).
    ResourcesDirectoryRead,
}

impl Method {
    /// Every method this server implements.
    pub const ALL: [Method; 16] = [
        Method::Discover,
        Method::ToolsList,
        Method::ToolsCall,
        Method::ResourcesList,
        Method::ResourcesTemplatesList,
        Method::ResourcesRead,
        Method::PromptsList,
        Method::PromptsGet,
        Method::Complete,
        Method::SubscriptionsListen,
        Method::TasksGet,
        Method::TasksUpdate,
        Method::TasksCancel,
        Method::SkillsList,
        Method::SkillsGet,
        Method::ResourcesDirectoryRead,
    ];

    /// The method a JSON-RPC `method` name names, or `None` for one this server does not
    /// implement.
    pub fn from_wire(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// The JSON-RPC method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Discover => "server/discover",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::ResourcesList => "resources/list",
            Method::ResourcesTemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::Complete => "completion/complete",
            Method::SubscriptionsListen => "subscriptions/listen",
            Method::TasksGet => "tasks/get",
            Method::TasksUpdate => "tasks/update",
            Method::TasksCancel => "tasks/cancel",
            Method::SkillsList => "skills/list",
            Method::SkillsGet => "skills/get",
            Method::ResourcesDirectoryRead => "resources/directory/read",
        }
    }

    /// The function (and binary) that serves this method in production.
    pub fn function_name(self) -> &'static str {
        match self {
            Method::Discover => "discover",
            Method::ToolsList => "tools-list",
            Method::ToolsCall => "tools-call",
            Method::ResourcesList => "resources-list",
            Method::ResourcesTemplatesList => "resources-templates-list",
            Method::ResourcesRead => "resources-read",
            Method::PromptsList => "prompts-list",
            Method::PromptsGet => "prompts-get",
            Method::Complete => "completion",
            Method::SubscriptionsListen => "subscriptions-listen",
            Method::TasksGet => "tasks-get",
            Method::TasksUpdate => "tasks-update",
            Method::TasksCancel => "tasks-cancel",
            Method::SkillsList => "skills-list",
            Method::SkillsGet => "skills-get",
            Method::ResourcesDirectoryRead => "resources-directory-read",
        }
    }

    /// A method of an extension defined against 2026-07-28 and later only (the Skills
    /// extension's): no client of an older revision names it.
    pub fn since_2026(self) -> bool {
        matches!(
            self,
            Method::SkillsList | Method::SkillsGet | Method::ResourcesDirectoryRead
        )
    }

    /// Only these may answer `input_required` (MRTR).
    pub fn allows_input_required(self) -> bool {
        matches!(
            self,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
        )
    }

    /// The body field that `Mcp-Name` must mirror, for the methods that carry one.
    pub fn name_param(self) -> Option<&'static str> {
        match self {
            Method::ToolsCall | Method::PromptsGet => Some("name"),
            Method::ResourcesRead => Some("uri"),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Some("taskId"),
            _ => None,
        }
    }
}

/// Which methods a deployed function accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The all-methods `mcp` function (catch-all, and the single-function topology).
    All,
    /// A per-method function; a body naming any other method is refused.
    Only(Method),
}

impl Route {
    /// Whether a function with this route serves `method`.
    pub fn accepts(self, method: Method) -> bool {
        match self {
            Route::All => true,
            Route::Only(own) => own == method,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_round_trips_and_has_a_distinct_function() {
        let mut functions = std::collections::HashSet::new();
        for method in Method::ALL {
            assert_eq!(Method::from_wire(method.as_str()), Some(method));
            assert!(functions.insert(method.function_name()));
        }
        assert_eq!(Method::from_wire("ping"), None);
        assert_eq!(Method::from_wire("TOOLS/LIST"), None);
    }
}
