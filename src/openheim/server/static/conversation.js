// The conversation pane: stored messages, then live events as they stream in (Markdown text,
// thinking, tool calls with their results and diffs, approval prompts, notices).
//
// Streamed text is only buffered when it arrives; the page is written once an animation frame
// (the open Markdown block re-rendered, the view scrolled). The view follows the end while the
// reader is at the bottom, and stays put once they scroll up, until they return to the bottom.

import { approvalNode, markResolved } from "./approvals.js";
import { diffNode } from "./diff.js";
import { escapeHtml, MarkdownStream } from "./markdown.js";

const BOTTOM_PX = 4; // this close to the end counts as "at the bottom"
const RENDER_SHARE = 3; // a slow open block renders at most once per this many times its cost

function el(tag, cls, html) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (html !== undefined) node.innerHTML = html;
  return node;
}

function copyButton(label, what) {
  const button = el("button", "copy");
  button.type = "button";
  button.title = label;
  button.setAttribute("aria-label", label);
  button.dataset.copy = what;
  return button;
}

/** Each fenced code block in `fragment` gets a box with a copy button beside it. */
function addCodeCopy(fragment) {
  for (const pre of fragment.querySelectorAll("pre")) {
    const box = el("div", "code");
    pre.replaceWith(box);
    box.append(copyButton("Copy code", "code"), pre);
  }
}

/** Put `text` on the clipboard: the Clipboard API, or a selected textarea where the page is not
 * a secure context (plain HTTP to another host). */
async function writeClipboard(text) {
  if (navigator.clipboard) return navigator.clipboard.writeText(text);
  const area = el("textarea");
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  if (!ok) throw new Error("copy refused");
}

export class Conversation {
  constructor(root, onAnswer) {
    this.root = root;
    this.onAnswer = onAnswer;
    this.sources = new WeakMap(); // a message's copy button -> () => its text
    this.dirty = new Set(); // the streams with text not yet on the page
    this.frame = 0;
    root.addEventListener("scroll", () => this.onScroll(), { passive: true });
    root.addEventListener("click", (event) => {
      const button = event.target.closest("button.copy");
      if (button) this.copy(button);
    });
    this.clear();
  }

  clear() {
    this.root.innerHTML = "";
    this.current = null;
    this.tools = new Map();
    this.dirty.clear();
    this.follow = true;
    this.autoTop = 0;
  }

  /** The reader scrolled: up from where the view was put stops following, the bottom resumes. */
  onScroll() {
    const { scrollTop, scrollHeight, clientHeight } = this.root;
    if (scrollHeight - scrollTop - clientHeight <= BOTTOM_PX) this.follow = true;
    else if (scrollTop < this.autoTop - 1) this.follow = false;
  }

  /** Ask for one page update in the next animation frame. */
  scroll() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.paint());
  }

  /** The frame's work: render the streams that got text, then follow the end. */
  paint() {
    this.frame = 0;
    const now = performance.now();
    for (const stream of this.dirty) {
      if (now < stream.readyAt) continue;
      this.dirty.delete(stream);
      stream.render();
      const done = performance.now();
      stream.readyAt = done + (done - now) * RENDER_SHARE;
    }
    if (this.dirty.size) this.scroll();
    if (this.follow) {
      this.root.scrollTop = this.root.scrollHeight;
      this.autoTop = this.root.scrollTop;
    }
  }

  /** Every pending stream rendered now, its last block closed (a stored conversation). */
  flush() {
    for (const stream of this.dirty) stream.render(true);
    this.dirty.clear();
    this.scroll();
  }

  async copy(button) {
    const text = button.dataset.copy === "code"
      ? button.parentElement.querySelector("pre").textContent.replace(/\n$/, "")
      : this.sources.get(button)();
    try {
      await writeClipboard(text);
      button.dataset.state = "copied";
    } catch {
      button.dataset.state = "failed";
    }
    setTimeout(() => delete button.dataset.state, 1500);
  }

  message(cls, source) {
    const node = el("div", `msg ${cls}`);
    const button = copyButton("Copy message", "message");
    this.sources.set(button, source);
    node.append(button);
    this.root.append(node);
    return node;
  }

  user(text) {
    this.message("user", () => text).append(text);
    this.current = null;
    this.follow = true;
    this.scroll();
  }

  assistant() {
    if (!this.current) {
      const turn = { node: null, streams: [], textNode: null, thinking: null };
      turn.node = this.message("assistant", () => turn.streams.map((s) => s.text).join("\n\n"));
      this.current = turn;
    }
    return this.current;
  }

  appendText(text) {
    const turn = this.assistant();
    if (!turn.textNode) {
      turn.textNode = el("div", "text");
      turn.node.append(turn.textNode);
      turn.streams.push(new MarkdownStream(turn.textNode, addCodeCopy));
    }
    const stream = turn.streams[turn.streams.length - 1];
    stream.append(text);
    this.dirty.add(stream);
    this.scroll();
  }

  appendThinking(text) {
    const turn = this.assistant();
    if (!turn.thinking) {
      turn.thinking = el("details", "thinking", "<summary>Thinking</summary><div></div>");
      turn.node.append(turn.thinking);
    }
    turn.thinking.lastChild.append(text);
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
    this.flush();
  }
}
