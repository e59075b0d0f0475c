//! The method table: one row per MCP method that front door A routes to its own function. Each
//! row gives the REST API, the function (its binary, grants, whether it streams), its log group,
//! its alarms and the routing rule that sends the method there.

use super::grants::Role;

/// How a method's function answers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One buffered response, under the integration's 29 s.
    Buffered,
    /// Streamed (Lambda response streaming) for up to the `tools-call` timeout.
    Call,
    /// A listen stream: streamed for up to the `streaming` timeout, closed at `listen-max`.
    Listen,
}

pub struct Method {
    /// The JSON-RPC method.
    pub name: &'static str,
    /// The resource-name stem: `{id}Api`, `{id}Function`, `{id}Rule`, ...
    pub id: &'static str,
    /// The function binary (also the API's and the alarms' name).
    pub binary: &'static str,
    /// The Mcp-Method glob of its routing rule. A glob cannot contain "/".
    pub glob: &'static str,
    /// A second Mcp-Method glob the method must also match, for a method no single glob can
    /// tell apart in any order (`skills/get` from `prompts/get` and `skills/list`): the rule
    /// then has two Mcp-Method conditions instead of the MCP-Protocol-Version one (a rule has
    /// at most two header conditions). Only for a method that exists from 2026-07-28 on, so no
    /// older client names it.
    pub and_glob: Option<&'static str>,
    /// The rule's priority: every method's first matching rule must be its own.
    pub priority: u32,
    pub role: Role,
    pub shape: Shape,
}

const fn method(
    name: &'static str,
    id: &'static str,
    binary: &'static str,
    glob: &'static str,
    priority: u32,
    role: Role,
    shape: Shape,
) -> Method {
    Method {
        name,
        id,
        binary,
        glob,
        and_glob: None,
        priority,
        role,
        shape,
    }
}

/// The methods, in the order the template declares their functions.
pub const METHODS: &[Method] = &[
    method(
        "server/discover",
        "Discover",
        "discover",
        "*discover",
        110,
        Role::Streams,
        Shape::Buffered,
    ),
    method(
        "tools/list",
        "ToolsList",
        "tools-list",
        "tools*",
        200,
        Role::Streams,
        Shape::Buffered,
    ),
    method(
        "tools/call",
        "ToolsCall",
        "tools-call",
        "*call",
        120,
        Role::Writer,
        Shape::Call,
    ),
    method(
        "resources/list",
        "ResourcesList",
        "resources-list",
        "resources*",
        210,
        Role::Streams,
        Shape::Buffered,
    ),
    method(
        "resources/templates/list",
        "ResourcesTemplatesList",
        "resources-templates-list",
        "*templates*",
        100,
        Role::Streams,
        Shape::Buffered,
    ),
    method(
        "resources/read",
        "ResourcesRead",
        "resources-read",
        "*read",
        130,
        Role::Reader,
        Shape::Buffered,
    ),
    method(
        "prompts/list",
        "PromptsList",
        "prompts-list",
        "prompts*",
        220,
        Role::Streams,
        Shape::Buffered,
    ),
    method(
        "prompts/get",
        "PromptsGet",
        "prompts-get",
        "*get",
        190,
        Role::Reader,
        Shape::Buffered,
    ),
    method(
        "completion/complete",
        "Completion",
        "completion",
        "*complete",
        140,
        Role::Streams,
        Shape::Buffered,
    ),
    method(
        "subscriptions/listen",
        "SubscriptionsListen",
        "subscriptions-listen",
        "*listen",
        150,
        Role::Listen,
        Shape::Listen,
    ),
    // Without durable jobs the task methods still reach their own functions (which answer that
    // there is no such task): the routing rules stay the same for every project.
    method(
        "tasks/get",
        "TasksGet",
        "tasks-get",
        "tasks*",
        180,
        Role::Reader,
        Shape::Buffered,
    ),
    method(
        "tasks/update",
        "TasksUpdate",
        "tasks-update",
        "*update",
        160,
        Role::Writer,
        Shape::Buffered,
    ),
    method(
        "tasks/cancel",
        "TasksCancel",
        "tasks-cancel",
        "*cancel",
        170,
        Role::Writer,
        Shape::Buffered,
    ),
    // The Skills extension. resources/directory/read before *read and resources*; skills/get by
    // skills* and *get together before *get (prompts/get); skills/list by skills* after it.
    method(
        "resources/directory/read",
        "ResourcesDirectoryRead",
        "resources-directory-read",
        "*directory*",
        105,
        Role::Reader,
        Shape::Buffered,
    ),
    Method {
        and_glob: Some("*get"),
        ..method(
            "skills/get",
            "SkillsGet",
            "skills-get",
            "skills*",
            185,
            Role::Reader,
            Shape::Buffered,
        )
    },
    method(
        "skills/list",
        "SkillsList",
        "skills-list",
        "skills*",
        230,
        Role::Streams,
        Shape::Buffered,
    ),
];
