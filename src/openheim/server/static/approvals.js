// An approval question as the runtime asks it (runtime/approvals.py): the title a person
// reads, why the policy asks (dim, below the title), the risks that made the gate ask, the redacted arguments, the diff an edit would
// write, and one button per choice the runtime offers, with a box for the words a rejection
// tells the model (Enter in it rejects with them).

import { diffNode } from "./diff.js";

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function details(summary, body, open) {
  const node = el("details", "args");
  node.open = open;
  node.append(el("summary", "", summary), body);
  return node;
}

// The approval card for `frame` (an approval_request frame); `onAnswer(id, choice, reason)`
// sends the answer.
export function approvalNode(frame, onAnswer) {
  const node = el("div", "approval");
  node.dataset.approval = frame.approval_id;
  node.append(el("div", "title", frame.title || `Allow openheim to use ${frame.tool}?`));
  if (frame.why) node.append(el("div", "why", frame.why));
  if (frame.reasons.length) {
    const risks = el("ul", "reasons");
    for (const reason of frame.reasons) risks.append(el("li", "", reason));
    node.append(risks);
  }
  if (frame.detail) node.append(diffNode(frame.detail));
  const args = el("pre", "arguments", JSON.stringify(frame.arguments, null, 2));
  node.append(details("Arguments", args, !frame.detail));
  const reason = el("input", "reason");
  reason.type = "text";
  reason.maxLength = 500;
  reason.placeholder = "Why not? Sent to the model with a rejection (Enter rejects)";
  reason.setAttribute("aria-label", "Reason for the model when rejecting");
  const buttons = el("div", "buttons");
  for (const choice of frame.choices) {
    const rejects = choice.startsWith("reject");
    const button = el("button", rejects ? "secondary" : "", (frame.labels && frame.labels[choice]) || choice);
    button.type = "button";
    button.dataset.choice = choice;
    button.addEventListener("click", () => onAnswer(frame.approval_id, choice, rejects ? reason.value : ""));
    buttons.append(button);
  }
  reason.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || e.isComposing) return;
    e.preventDefault();
    onAnswer(frame.approval_id, "reject", reason.value);
  });
  node.append(reason, buttons);
  return node;
}

// The card once answered (here or in another tab): its buttons give way to the answer.
export function markResolved(node, choice) {
  const buttons = node.querySelector(".buttons");
  if (!buttons) return;
  buttons.textContent = `Answered: ${choice}`;
  node.querySelector("input.reason")?.remove();
  node.classList.add("answered");
}
