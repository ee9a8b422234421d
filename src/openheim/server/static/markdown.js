// Markdown for the conversation: markdown-it (raw HTML off) renders, highlight.js colours fenced
// code, and DOMPurify keeps only an allow-list of tags, attributes and link schemes, so nothing
// the model writes runs in the page. A streamed answer renders in time linear in its length:
// the blocks before the last one are final once a later block has begun, so they are rendered
// once and kept; only the last (open) block is parsed again as text arrives.

import markdownit from "./vendor/markdown-it.min.js";
import DOMPurify from "./vendor/purify.es.js";
import hljs from "./vendor/highlight.min.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const LANGUAGE = /^[A-Za-z0-9_+#.-]{1,32}$/;

function highlight(code, lang) {
  if (!LANGUAGE.test(lang) || !hljs.getLanguage(lang)) return "";
  try {
    return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  } catch {
    return "";
  }
}

const md = markdownit({ html: false, linkify: true, highlight });
// An image shows as a link to it: the page fetches nothing the model names.
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const src = tokens[idx].attrGet("src") || "";
  const alt = self.renderInlineAsText(tokens[idx].children, options, env) || src;
  return `<a href="${md.utils.escapeHtml(src)}">${md.utils.escapeHtml(alt)}</a>`;
};

const PURIFY = {
  ALLOWED_TAGS: [
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "li", "ol", "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th", "thead", "tr",
    "ul",
  ],
  ALLOWED_ATTR: ["href", "title", "class", "start"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};
// Only the classes the renderer gives: highlight.js's token classes and the fence's language.
const CLASS = /^(?:hljs(?:-[\w-]+)?|language-[\w+#.-]+|[\w-]+_)$/;

DOMPurify.addHook("uponSanitizeAttribute", (node, data) => {
  if (data.attrName === "class") {
    data.attrValue = data.attrValue.split(/\s+/).filter((c) => CLASS.test(c)).join(" ");
  }
});
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

/** Sanitised DOM nodes for markdown-it's HTML. */
function purify(html) {
  return DOMPurify.sanitize(html, PURIFY);
}

/** The character offset where line `line` (0-based) of `text` starts. */
function lineOffset(text, line) {
  let at = 0;
  for (let n = 0; n < line && at >= 0; n += 1) at = text.indexOf("\n", at) + 1 || -1;
  return at < 0 ? text.length : at;
}

/** The index of the first token of the last top-level block, or 0 when there is one block. */
function lastBlockStart(tokens) {
  for (let i = tokens.length - 1; i > 0; i -= 1) {
    if (tokens[i].level === 0 && tokens[i].nesting !== -1 && tokens[i].map) return i;
  }
  return 0;
}

const CHUNK_BLOCKS = 32; // finished blocks per chunk element

/**
 * One streamed text segment in `container`: `append()` adds text, `render()` (once a frame)
 * moves the finished blocks into place for good and re-renders the open one. Finished blocks
 * go into chunk elements of `CHUNK_BLOCKS` each (the page lays out and paints a chunk as one
 * piece, and skips the chunks out of view: style.css), so the page's layout work per frame
 * does not grow with the answer either.
 */
export class MarkdownStream {
  constructor(container, decorate) {
    this.container = container;
    this.decorate = decorate; // (fragment) => void: the caller's additions, before insertion
    this.kept = []; // the text rendered for good, in pieces
    this.rest = ""; // the text of the open block and what came after it
    this.open = []; // the nodes showing `rest`
    this.env = {}; // markdown-it's state across parses: the link definitions seen so far
    this.chunk = null; // the chunk element finished blocks go into
    this.dirty = false;
  }

  get text() {
    return this.kept.join("") + this.rest;
  }

  append(text) {
    this.rest += text;
    this.dirty = true;
  }

  /** Render what arrived since the last call; `final` also closes the last block. */
  render(final = false) {
    this.dirty = false;
    const env = this.env;
    const tokens = md.parse(this.rest, env);
    const cut = final ? tokens.length : lastBlockStart(tokens);
    for (const node of this.open) node.remove();
    if (cut > 0) {
      this.keep(this.fragment(tokens.slice(0, cut), env));
      const at = final ? this.rest.length : lineOffset(this.rest, tokens[cut].map[0]);
      this.kept.push(this.rest.slice(0, at));
      this.rest = this.rest.slice(at);
    }
    const open = final ? null : this.fragment(tokens.slice(cut), env);
    this.open = open ? [...open.childNodes] : [];
    if (open) this.container.append(open);
  }

  /** The finished blocks in `fragment` into the chunk elements. */
  keep(fragment) {
    for (const node of [...fragment.childNodes]) {
      if (!this.chunk || this.chunk.childElementCount >= CHUNK_BLOCKS) {
        this.chunk = document.createElement("div");
        this.chunk.className = "chunk";
        this.container.append(this.chunk);
      }
      this.chunk.append(node);
    }
  }

  fragment(tokens, env) {
    const nodes = purify(md.renderer.render(tokens, md.options, env));
    this.decorate?.(nodes);
    return nodes;
  }
}
