"""``HookGate``: the ``pre_tool`` hook asked about every tool call, after the approval policy.

The policy decides first and its denial wins: a denied call is not shown to the hook. Then the
hook may deny (its reason is the model's tool result), ask (a person decides, even where the
policy would allow) or allow (the call runs without a question). A hook that fails or times
out is a warning and the policy's verdict stands, unless the hook is ``required``: then the call
is denied.
"""

from __future__ import annotations

from openheim.approval import (
    Allow,
    AnswerObserver,
    ApprovalGate,
    ApprovalRequest,
    Ask,
    Deny,
    LearningGate,
    Verdict,
)
from openheim.runtime.hooks import Hooks


class HookGate:
    """Wraps ``inner`` (the policy) with the session's ``pre_tool`` hook."""

    def __init__(self, inner: ApprovalGate, hooks: Hooks) -> None:
        self.inner = inner
        self.hooks = hooks

    async def check(self, request: ApprovalRequest) -> Verdict:
        verdict = await self.inner.check(request)
        entry = self.hooks.entry("pre_tool")
        if entry is None or isinstance(verdict, Deny):
            return verdict
        reply = await self.hooks.run(
            "pre_tool", tool=request.tool, arguments=dict(request.arguments)
        )
        if reply is None:
            return verdict
        if reply.problem is not None:
            if entry.required:
                return Deny(f"the required pre_tool hook failed ({reply.problem})")
            return verdict
        reason = reply.reason or "the pre_tool hook said so"
        if reply.decision == "deny":
            return Deny(f"blocked by the pre_tool hook: {reason}")
        if reply.decision == "allow":
            return Allow()
        if reply.decision == "ask" and not isinstance(verdict, Ask):
            return Ask(f"the pre_tool hook asks about {request.tool}", reasons=(reason,))
        return verdict

    def learn(self, request: ApprovalRequest, answer: Allow | Deny) -> None:
        if isinstance(self.inner, LearningGate):
            self.inner.learn(request, answer)

    def answered(self, request: ApprovalRequest, answer: Allow | Deny) -> None:
        if isinstance(self.inner, AnswerObserver):
            self.inner.answered(request, answer)
