// The conversation pane: stored messages, then live events as they stream in (Markdown text,
// thinking, tool calls with their results and diffs, approval prompts, notices).

import { approvalNode, markResolved } from "./approvals.js";
import { diffNode } from "./diff.js";
import { escapeHtml, renderMarkdown } from "./markdown.js";

function el(tag, cls, html) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (html !== undefined) node.innerHTML = html;
  return node;
}

export class Conversation {
  constructor(root, onAnswer) {
    this.root = root;
    this.onAnswer = onAnswer;
    this.clear();
  }

  clear() {
    this.root.innerHTML = "";
    this.current = null;
    this.tools = new Map();
  }

  scroll() {
    this.root.scrollTop = this.root.scrollHeight;
  }

  user(text) {
    this.root.append(el("div", "msg user", escapeHtml(text)));
    this.current = null;
    this.scroll();
  }

  assistant() {
    if (!this.current) {
      const node = el("div", "msg assistant");
      this.root.append(node);
      this.current = { node, text: "", textNode: null, thinking: null };
    }
    return this.current;
  }

  appendText(text) {
    const turn = this.assistant();
    if (!turn.textNode) {
      turn.textNode = el("div", "text");
      turn.node.append(turn.textNode);
      turn.text = "";
    }
    turn.text += text;
    turn.textNode.innerHTML = renderMarkdown(turn.text);
    this.scroll();
  }

  appendThinking(text) {
    const turn = this.assistant();
    if (!turn.thinking) {
      turn.thinking = el("details", "thinking", "<summary>Thinking</summary><div></div>");
      turn.node.append(turn.thinking);
    }
    turn.thinking.lastChild.textContent += text;
  }

  toolCall(id, name, args) {
    const turn = this.assistant();
    const node = el("div", "tool running");
    node.innerHTML = `<div class="head"><span class="name">${escapeHtml(name)}</span>` +
      `<span class="args">${escapeHtml(JSON.stringify(args).slice(0, 120))}</span>` +
      `<span class="state">running</span></div>`;
    turn.node.append(node);
    turn.textNode = null;
    this.tools.set(id, node);
    this.scroll();
  }

  toolResult(event) {
    const node = this.tools.get(event.id);
    if (!node) return;
    node.className = `tool ${event.status}`;
    node.querySelector(".state").textContent = event.status;
    if (event.diff && event.diff.unified) node.append(diffNode(event.diff.unified));
    else if (event.content) node.append(el("pre", "output", escapeHtml(event.content.slice(0, 4000))));
    this.scroll();
  }

  approval(frame) {
    const turn = this.assistant();
    turn.node.append(approvalNode(frame, this.onAnswer));
    turn.textNode = null;
    this.scroll();
  }

  resolved(approvalId, choice) {
    const node = this.root.querySelector(`[data-approval="${approvalId}"]`);
    if (node) markResolved(node, choice);
  }

  notice(text, cls = "notice") {
    this.root.append(el("div", cls, escapeHtml(text)));
    this.scroll();
  }

  history(messages) {
    for (const message of messages) {
      if (message.role === "user") {
        for (const b of message.content.filter((x) => x.kind === "tool_result")) {
          const status = b.is_error ? "failed" : "completed";
          this.toolResult({ id: b.tool_use_id, status, content: b.content });
        }
        const text = message.content.filter((b) => b.kind === "text").map((b) => b.text).join("\n");
        if (text) this.user(text);
        continue;
      }
      for (const b of message.content) {
        if (b.kind === "text") this.appendText(b.text);
        else if (b.kind === "thinking" && !b.redacted) this.appendThinking(b.thinking);
        else if (b.kind === "tool_use") this.toolCall(b.id, b.name, b.arguments);
      }
      this.current = null;
    }
  }
}
