//! The resource shapes the template repeats: a function with its log group and errors alarm, a
//! metric alarm, an event. Each is written once here; the tables fill them.

/// Where every alarm sends ALARM and OK (nowhere when AlarmTopicArn is empty).
const ALARM_ACTIONS: &str =
    "      AlarmActions: !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]
      OKActions: !If [HasAlarmTopic, [!Ref AlarmTopicArn], !Ref AWS::NoValue]
";

/// `    Condition: NAME` or nothing.
fn condition(condition: Option<&str>) -> String {
    condition
        .map(|name| format!("    Condition: {name}\n"))
        .unwrap_or_default()
}

/// `# line` comments at `indent` spaces.
pub fn comment(indent: usize, lines: &[&str]) -> String {
    lines
        .iter()
        .map(|line| format!("{:indent$}# {line}\n", ""))
        .collect()
}

/// An environment variable of one function: name, value, comment lines above it.
pub type Variable<'a> = (&'a str, String, &'a [&'a str]);

/// One function, its log group (with the stack's retention) and its errors-or-throttles alarm.
pub struct Function<'a> {
    /// `{id}Function`, `{id}LogGroup`, `{id}ErrorsAlarm`.
    pub id: &'a str,
    pub condition: Option<&'a str>,
    pub binary: &'a str,
    pub description: &'a str,
    /// A value (`120`) or an intrinsic (`!Ref WorkerTimeout`); None: the Globals' timeout.
    pub timeout: Option<String>,
    pub memory: Option<u32>,
    pub environment: Vec<Variable<'a>>,
    /// Comment lines above Policies.
    pub policy_comment: &'a [&'a str],
    pub policies: Option<String>,
    /// The `Events:` entries, already written (see [`rest_event`], [`http_event`]).
    pub events: String,
    /// How the errors alarm names the function ("tools-call", "catch-all mcp").
    pub label: &'a str,
    /// Properties written after the events, already indented (front door C's URL and its
    /// reserved concurrency); empty for most functions.
    pub extra: String,
}

impl Function<'_> {
    pub fn render(&self) -> String {
        let mut out = format!(
            "\n  {}Function:\n    Type: AWS::Serverless::Function\n{}    Metadata: {{ BuildMethod: rust-cargolambda, BuildProperties: {{ Binary: {} }} }}\n    Properties:\n      CodeUri: .\n      Description: {}\n",
            self.id,
            condition(self.condition),
            self.binary,
            self.description
        );
        if let Some(timeout) = &self.timeout {
            out.push_str(&format!("      Timeout: {timeout}\n"));
        }
        if let Some(memory) = self.memory {
            out.push_str(&format!("      MemorySize: {memory}\n"));
        }
        out.push_str(&environment(&self.environment));
        out.push_str(&comment(6, self.policy_comment));
        if let Some(policies) = &self.policies {
            out.push_str(&format!("      Policies: {policies}\n"));
        }
        if !self.events.is_empty() {
            out.push_str("      Events:\n");
            out.push_str(&self.events);
        }
        out.push_str(&self.extra);
        out.push_str(&function_tail(self.id, self.condition, self.label));
        out
    }
}

/// `Environment:` in flow style, or in block style when a variable carries a comment.
fn environment(variables: &[Variable<'_>]) -> String {
    if variables.is_empty() {
        return String::new();
    }
    if variables.iter().all(|(_, _, lines)| lines.is_empty()) {
        let pairs: Vec<String> = variables
            .iter()
            .map(|(name, value, _)| format!("{name}: \"{value}\""))
            .collect();
        return format!(
            "      Environment:\n        Variables: {{ {} }}\n",
            pairs.join(", ")
        );
    }
    let mut out = "      Environment:\n        Variables:\n".to_string();
    for (name, value, lines) in variables {
        out.push_str(&comment(10, lines));
        out.push_str(&format!("          {name}: \"{value}\"\n"));
    }
    out
}

/// A function's log group and its errors-or-throttles alarm (Lambda's own metrics).
fn function_tail(id: &str, when: Option<&str>, label: &str) -> String {
    let when = condition(when);
    let metric = |short: &str, name: &str| {
        format!(
            "        - {{ Id: {short}, ReturnData: false, MetricStat: {{ Stat: Sum, Period: 60, Metric: {{ Namespace: AWS/Lambda, MetricName: {name}, Dimensions: [{{ Name: FunctionName, Value: !Ref {id}Function }}] }} }} }}\n"
        )
    };
    format!(
        "\n  {id}LogGroup:\n    Type: AWS::Logs::LogGroup\n{when}    Properties:\n      LogGroupName: !Sub \"/aws/lambda/${{{id}Function}}\"\n      RetentionInDays: !Ref LogRetentionDays\n\n  {id}ErrorsAlarm:\n    Type: AWS::CloudWatch::Alarm\n{when}    Properties:\n      AlarmDescription: {label} function errors or throttles\n      ComparisonOperator: GreaterThanThreshold\n      Threshold: 0\n      EvaluationPeriods: 1\n      TreatMissingData: notBreaching\n{ALARM_ACTIONS}      Metrics:\n{}{}        - {{ Id: errorsAndThrottles, Label: errors + throttles, Expression: \"FILL(e, 0) + FILL(t, 0)\", ReturnData: true }}\n",
        metric("e", "Errors"),
        metric("t", "Throttles"),
    )
}

/// How an alarm aggregates its metric.
pub enum Statistic {
    /// `Statistic: Sum` / `Maximum`.
    Plain(&'static str),
    /// `ExtendedStatistic: p99`.
    Extended(&'static str),
}

/// One alarm on one metric, over `GreaterThanThreshold`, missing data not breaching.
pub struct MetricAlarm<'a> {
    pub id: &'a str,
    pub condition: Option<&'a str>,
    /// Comment lines above the alarm.
    pub comment: &'a [&'a str],
    pub description: &'a str,
    pub namespace: &'a str,
    pub metric: &'a str,
    /// `[{ Name: ..., Value: ... }]`, already written.
    pub dimensions: Option<String>,
    pub statistic: Statistic,
    pub unit: Option<&'a str>,
    pub period: u32,
    pub evaluation_periods: u32,
    pub threshold: u32,
}

impl MetricAlarm<'_> {
    pub fn render(&self) -> String {
        let mut out = format!(
            "\n{}  {}:\n    Type: AWS::CloudWatch::Alarm\n{}    Properties:\n      AlarmDescription: {}\n      Namespace: {}\n      MetricName: {}\n",
            comment(2, self.comment),
            self.id,
            condition(self.condition),
            self.description,
            self.namespace,
            self.metric
        );
        if let Some(dimensions) = &self.dimensions {
            out.push_str(&format!("      Dimensions: {dimensions}\n"));
        }
        out.push_str(&match self.statistic {
            Statistic::Plain(name) => format!("      Statistic: {name}\n"),
            Statistic::Extended(name) => format!("      ExtendedStatistic: {name}\n"),
        });
        if let Some(unit) = self.unit {
            out.push_str(&format!("      Unit: {unit}\n"));
        }
        out.push_str(&format!(
            "      Period: {}\n      EvaluationPeriods: {}\n      Threshold: {}\n      ComparisonOperator: GreaterThanThreshold\n      TreatMissingData: notBreaching\n{ALARM_ACTIONS}",
            self.period, self.evaluation_periods, self.threshold
        ));
        out
    }
}

/// A REST API event named `Api` (front door A). `path` is written as given (quote it when it
/// has braces); `stream_millis` makes it a response-streaming integration with that timeout.
pub fn rest_event(
    comment_lines: &[&str],
    api: &str,
    path: &str,
    stream_millis: Option<u32>,
) -> String {
    let head = format!(
        "{}        Api:\n          Type: Api\n",
        comment(8, comment_lines)
    );
    match stream_millis {
        None => format!(
            "{head}          Properties: {{ RestApiId: !Ref {api}, Path: {path}, Method: ANY }}\n"
        ),
        Some(millis) => format!(
            "{head}          Properties:\n            RestApiId: !Ref {api}\n            # Lambda response streaming (InvokeWithResponseStream): SSE frames leave as produced.\n            ResponseTransferMode: RESPONSE_STREAM\n            TimeoutInMillis: {millis}\n            Path: {path}\n            Method: ANY\n"
        ),
    }
}

/// An HTTP API event (front door B) on `McpApi`.
pub fn http_event(name: &str, comment_lines: &[&str], method: &str, path: &str) -> String {
    format!(
        "        {name}:\n{}          Type: HttpApi\n          Properties: {{ ApiId: !Ref McpApi, Method: {method}, Path: {path} }}\n",
        comment(10, comment_lines)
    )
}
