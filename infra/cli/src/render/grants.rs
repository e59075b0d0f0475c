//! The IAM grants, as two small tables: the managed policies (one per kind of call a function
//! makes) and, per role, which of them a function of that role holds, in order. A function never
//! gets a SAM policy template (DynamoDBCrudPolicy would also grant Scan, Batch* and DeleteItem):
//! least privilege by composition, checked at run time by local Lambda mode's IAM proxy.

use crate::config::Parts;

/// One managed policy: what it allows, on what.
pub struct Policy {
    pub name: &'static str,
    pub description: &'static str,
    pub actions: &'static [&'static str],
    pub resource: &'static str,
    /// Exists only with this part of the stack.
    pub needs: Need,
}

/// The part of the stack a policy (or a grant) exists with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Always,
    Jobs,
}

impl Need {
    pub fn met(self, parts: &Parts) -> bool {
        match self {
            Need::Always => true,
            Need::Jobs => parts.jobs,
        }
    }
}

pub const RECORDS_READ: &str = "RecordsReadPolicy";
pub const RECORDS_BATCH_READ: &str = "RecordsBatchReadPolicy";
pub const RECORDS_WRITE: &str = "RecordsWritePolicy";
pub const RECORDS_DELETE: &str = "RecordsDeletePolicy";
pub const ACTIVE_JOBS_QUERY: &str = "ActiveJobsQueryPolicy";
pub const WORK_QUEUE_SEND: &str = "WorkQueueSendPolicy";
pub const WORK_QUEUE_CONSUME: &str = "WorkQueueConsumePolicy";
pub const STATE_KEYS_READ: &str = "StateKeysReadPolicy";

/// Every policy, in the order the template declares them.
pub const POLICIES: &[Policy] = &[
    Policy {
        name: RECORDS_READ,
        description: "Read one record (GetItem).",
        actions: &["dynamodb:GetItem"],
        resource: "!GetAtt Table.Arn",
        needs: Need::Always,
    },
    Policy {
        name: RECORDS_BATCH_READ,
        description: "Read the records a listen poll watches, in one call (BatchGetItem).",
        actions: &["dynamodb:BatchGetItem"],
        resource: "!GetAtt Table.Arn",
        needs: Need::Always,
    },
    Policy {
        name: RECORDS_WRITE,
        description: "Conditional writes, alone or in TransactWriteItems (which needs the per-item actions).",
        actions: &[
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:ConditionCheckItem",
        ],
        resource: "!GetAtt Table.Arn",
        needs: Need::Always,
    },
    Policy {
        name: RECORDS_DELETE,
        description: "Conditional deletes in TransactWriteItems (a 2025-11-25 session's DELETE removes its record).",
        actions: &["dynamodb:DeleteItem"],
        resource: "!GetAtt Table.Arn",
        needs: Need::Always,
    },
    Policy {
        name: ACTIVE_JOBS_QUERY,
        description: "Query the `active` index (jobs in flight).",
        actions: &["dynamodb:Query"],
        resource: "!Sub \"${Table.Arn}/index/active\"",
        needs: Need::Jobs,
    },
    Policy {
        name: WORK_QUEUE_SEND,
        description: "Enqueue durable work.",
        actions: &["sqs:SendMessage"],
        resource: "!GetAtt WorkQueue.Arn",
        needs: Need::Jobs,
    },
    Policy {
        name: WORK_QUEUE_CONSUME,
        description: "What the worker's event source mapping needs to poll the work queue (Lambda's poller, with the worker's role).",
        actions: &[
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
        ],
        resource: "!GetAtt WorkQueue.Arn",
        needs: Need::Jobs,
    },
    Policy {
        name: STATE_KEYS_READ,
        description: "Read the signing keys of requestState and cursors.",
        actions: &["secretsmanager:GetSecretValue"],
        resource: "!Ref StateKeysSecret",
        needs: Need::Always,
    },
];

/// One grant: a policy, held always or only while a tenant quota is set (the quota counts every
/// method in the table, so read-only functions then write too).
#[derive(Clone, Copy)]
pub enum Grant {
    Always(&'static str),
    WithTenantQuota(&'static str),
}

/// What a function does with state, which decides its policies.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// Every method (front door B's `mcp`, front door A's catch-all).
    AllMethods,
    /// Lists and streams: reads the records its streams watch, writes only the count of open streams.
    Streams,
    /// subscriptions/listen: a stream that reads its watched records in one batch per poll.
    Listen,
    /// Reads; writes only the tenant quota's count.
    Reader,
    /// Writes and enqueues work (tools/call, tasks/update, tasks/cancel).
    Writer,
    /// The app's pages: read and write records (the shop's approval pages decide an operation in
    /// a conditional transaction); no queue.
    Pages,
    Worker,
    Reconciler,
    /// Reads no secret, table or queue.
    Nothing,
}

impl Role {
    /// The grants of this role, in order.
    pub fn grants(self) -> &'static [Grant] {
        use Grant::{Always, WithTenantQuota};
        match self {
            Role::AllMethods => &[
                Always(RECORDS_READ),
                Always(RECORDS_WRITE),
                Always(WORK_QUEUE_SEND),
                Always(STATE_KEYS_READ),
                Always(RECORDS_DELETE),
                Always(RECORDS_BATCH_READ),
            ],
            Role::Streams => &[
                Always(STATE_KEYS_READ),
                Always(RECORDS_READ),
                Always(RECORDS_WRITE),
            ],
            Role::Listen => &[
                Always(STATE_KEYS_READ),
                Always(RECORDS_READ),
                Always(RECORDS_WRITE),
                Always(RECORDS_BATCH_READ),
            ],
            Role::Reader => &[
                Always(RECORDS_READ),
                Always(STATE_KEYS_READ),
                WithTenantQuota(RECORDS_WRITE),
            ],
            Role::Writer => &[
                Always(RECORDS_READ),
                Always(RECORDS_WRITE),
                Always(WORK_QUEUE_SEND),
                Always(STATE_KEYS_READ),
            ],
            Role::Pages => &[
                Always(RECORDS_READ),
                Always(RECORDS_WRITE),
                Always(STATE_KEYS_READ),
            ],
            Role::Worker => &[
                Always(RECORDS_READ),
                Always(RECORDS_WRITE),
                Always(WORK_QUEUE_SEND),
                Always(WORK_QUEUE_CONSUME),
                Always(STATE_KEYS_READ),
            ],
            Role::Reconciler => &[
                Always(RECORDS_READ),
                Always(RECORDS_WRITE),
                Always(ACTIVE_JOBS_QUERY),
                Always(WORK_QUEUE_SEND),
                Always(STATE_KEYS_READ),
            ],
            Role::Nothing => &[],
        }
    }

    /// The comment above this role's Policies line, if it needs one.
    pub fn comment(self) -> &'static [&'static str] {
        match self {
            Role::Streams | Role::Listen => &[
                "Reads the records its streams watch (a change made by another function is seen in the",
                "table) and the signing keys; writes only the count of a principal's open streams (the",
                "limit holds across environments); touches no queue.",
            ],
            Role::Pages => &[
                "Reads and writes records (a page may decide an operation with a conditional",
                "TransactWriteItems); touches no queue.",
            ],
            Role::Nothing => &["No policies: it reads no secret, table or queue."],
            _ => &[],
        }
    }

    /// The `Policies: [...]` value for a stack with `parts` (None when nothing is granted).
    pub fn policies(self, parts: &Parts) -> Option<String> {
        let items: Vec<String> = self
            .grants()
            .iter()
            .filter(|grant| policy(grant.name()).is_some_and(|policy| policy.needs.met(parts)))
            .map(|grant| match grant {
                Grant::Always(name) => format!("!Ref {name}"),
                Grant::WithTenantQuota(name) => {
                    format!("!If [HasTenantQuota, !Ref {name}, !Ref AWS::NoValue]")
                }
            })
            .collect();
        (!items.is_empty()).then(|| format!("[{}]", items.join(", ")))
    }
}

impl Grant {
    fn name(self) -> &'static str {
        match self {
            Grant::Always(name) | Grant::WithTenantQuota(name) => name,
        }
    }
}

fn policy(name: &str) -> Option<&'static Policy> {
    POLICIES.iter().find(|policy| policy.name == name)
}

/// The policy resources of a stack with `parts`.
pub fn render_policies(parts: &Parts) -> String {
    let mut out = String::new();
    for policy in POLICIES.iter().filter(|policy| policy.needs.met(parts)) {
        let actions = policy.actions.join(", ");
        let statement = if policy.actions.len() == 1 {
            format!(
                "        Statement: [{{ Effect: Allow, Action: [{actions}], Resource: {} }}]\n",
                policy.resource
            )
        } else {
            format!(
                "        Statement:\n          - Effect: Allow\n            Action: [{actions}]\n            Resource: {}\n",
                policy.resource
            )
        };
        out.push_str(&format!(
            "\n  {}:\n    Type: AWS::IAM::ManagedPolicy\n    Properties:\n      Description: {}\n      PolicyDocument:\n        Version: \"2012-10-17\"\n{statement}",
            policy.name, policy.description
        ));
    }
    out
}
