"""``tool_policy``: which tools run, which are refused, and which need a person's yes.

Config ``tool_policy`` maps a tool (function) name, or ``"*"`` for every other
tool, to ``"allow"``, ``"deny"`` or ``"ask"``; a tool the policy does not
mention and no ``"*"`` runs (``allow``). ``ask`` becomes the engine's
``ask_user`` verdict: the application's approval callback
(``AgentCore(approval=...)``) gets ``approval_timeout_s`` seconds to answer,
after which ``approval_default`` decides, and that is ``deny`` unless
configured otherwise. Without a callback ``approval_default`` decides at once,
so a server with nobody to ask never runs a tool nobody approved.

Every decision is recorded, with its reason, on the tool message it decided:
a ``tool_post`` action (which sees the result, so it knows how an ``ask``
ended) returns ``tool_message_metadata`` and the engine merges it, so the
call's ``tool`` message carries ``metadata["tool_policy"]`` =
``{"rule", "decision": "allowed" | "denied", "reason"}`` in the session and in
its ``tool_result`` event. A denied call's tool message also says why in its
text, which is what the model reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_core.errors import ConfigError
from agent_core.plugin_kit import Feature

__all__ = ["RULES", "ToolPolicyFeature", "rule_for"]

RULES = ("allow", "deny", "ask")


def check_policy(policy: Any, default: Any, timeout: Any) -> None:
    """:class:`ConfigError` naming the key when the policy cannot be applied as written."""
    if not isinstance(policy, Mapping):
        raise ConfigError(f"tool_policy must map tool names to one of {', '.join(RULES)}", key="tool_policy")
    for name, rule in policy.items():
        if rule not in RULES:
            raise ConfigError(f"tool_policy[{name!r}] is {rule!r}; expected one of {', '.join(RULES)}",
                              key="tool_policy")
    if default not in ("allow", "deny"):
        raise ConfigError(f"approval_default must be 'allow' or 'deny', got {default!r}", key="approval_default")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"approval_timeout_s must be a positive number of seconds, got {timeout!r}",
                          key="approval_timeout_s")


def rule_for(policy: Mapping[str, Any], tool_name: Any) -> str:
    """The rule for ``tool_name``: its own, else ``"*"``'s, else ``allow``."""
    rule = policy.get(str(tool_name)) if tool_name is not None else None
    return str(rule or policy.get("*") or "allow")


class ToolPolicyFeature(Feature):
    name = "tool_policy"
    version = "1.0.0"
    priority = 20
    config_schema = {
        "tool_policy": {"type": "object", "default": {},
                        "description": "{tool name or '*': 'allow' | 'deny' | 'ask'}"},
        "approval_timeout_s": {"type": "number", "default": 300,
                               "description": "Seconds the approval callback has to answer an 'ask'."},
        "approval_default": {"type": "string", "default": "deny", "enum": ["allow", "deny"],
                             "description": "What an unanswered 'ask' decides (no callback, or timeout)."},
    }
    ui_elements = (
        {"type": "json", "key": "tool_policy", "label": "Tool policy",
         "description": "Per tool (or '*'): allow, deny or ask."},
        {"type": "number", "key": "approval_timeout_s", "label": "Approval timeout (s)"},
        {"type": "select", "key": "approval_default", "label": "If nobody answers", "options": ["deny", "allow"]},
    )
    actions = (
        {"id": "tool_policy_check", "label": "Apply the tool policy", "trigger": "tool_pre"},
        {"id": "tool_policy_record", "label": "Record the tool policy decision", "trigger": "tool_post"},
    )

    def is_enabled(self, config: Any, tags: Any, models: Any, context: Any) -> bool:
        return bool(config.get("tool_policy"))

    def init(self, config: Any, state: Any) -> Any:
        check_policy(config.get("tool_policy") or {}, config.get("approval_default", "deny"),
                     config.get("approval_timeout_s", 300))
        return state

    def execute_action(self, action_id: str, session: Any, native_messages: Any, params: Any, context: Any,
                       state: Any) -> dict[str, Any]:
        context = context or {}
        config = context.get("config") or state.get("config") or {}
        policy = config.get("tool_policy") or {}
        call = context.get("tool_call") or {}
        rule = rule_for(policy, call.get("name"))
        if action_id == "tool_policy_check":
            if rule == "deny":
                return {"action": "deny", "reason": f"tool_policy says deny for {call.get('name')!r}"}
            if rule == "ask":
                return {
                    "action": "ask_user",
                    "approval_prompt": f"Allow the tool {call.get('name')!r} to run?",
                    "approval_default": config.get("approval_default") or "deny",
                    "approval_timeout": config.get("approval_timeout_s") or 300,
                }
            return {"action": "continue"}
        if action_id == "tool_policy_record" and call.get("id") is not None:
            result = context.get("tool_result") or {}
            error = str(result.get("error") or "") if isinstance(result, Mapping) else ""
            refused = error.startswith(("tool call denied by tool_policy", "tool call not approved (tool_policy"))
            if rule == "allow":
                reason = "allowed by tool_policy" if policy else "no policy for this tool"
            elif refused:
                reason = error
            else:
                reason = "approved by the approval callback" if rule == "ask" else "allowed"
            entry = {"rule": rule, "decision": "denied" if refused else "allowed", "reason": reason}
            return {"tool_message_metadata": {"tool_policy": entry}}
        return {"native_messages": list(native_messages)}
