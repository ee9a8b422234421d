// Unified diffs as the server makes them (difflib, three lines of context): each hunk under
// its "@@" line, added lines green, removed ones red, context plain. The file header lines
// ("---", "+++") are left out: the tool call or the approval above names the file.

const KINDS = { "+": "add", "-": "del", " ": "ctx", "@": "hunk", "\\": "meta" };

// A <pre class="diff"> of the unified diff `text`, one <span> per line; built with
// textContent only, so nothing in the diff is read as HTML.
export function diffNode(text) {
  const pre = document.createElement("pre");
  pre.className = "diff";
  const lines = text.replace(/\n$/, "").split("\n");
  for (const line of lines) {
    if (line.startsWith("--- ") || line.startsWith("+++ ")) continue;
    const span = document.createElement("span");
    span.className = KINDS[line[0]] || "ctx";
    span.textContent = line;
    pre.append(span, "\n");
  }
  return pre;
}
