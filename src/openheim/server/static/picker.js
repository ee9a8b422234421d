// The "@" file picker of the prompt box: typing @ lists the work dir's files an @ mention may
// name (the server finds them: not ignored by git, no secret, confined to the work dir as the
// fs channel is), filtered as the word after @ grows. Arrow keys move, Enter or Tab choose,
// Escape closes; a click chooses too.

const WORD = /(?:^|\s)@([^\s@]*)$/;

export class FilePicker {
  // `input`: the textarea; `list`: the <ul> that shows the choices; `find(query)`: a promise of
  // the matching paths.
  constructor(input, list, find) {
    this.input = input;
    this.list = list;
    this.find = find;
    this.paths = [];
    this.active = 0;
    this.asked = 0;
    this.dismissed = null;
    input.addEventListener("input", () => this.update());
    input.addEventListener("click", () => this.update());
    input.addEventListener("blur", () => this.close());
    list.addEventListener("mousedown", (e) => e.preventDefault()); // keeps the focus
  }

  get open() {
    return !this.list.hidden;
  }

  // The "@word" before the caret: where it starts and the word; null when there is none.
  mention() {
    const before = this.input.value.slice(0, this.input.selectionStart);
    const found = WORD.exec(before);
    return found ? { start: before.length - found[1].length - 1, query: found[1] } : null;
  }

  async update() {
    const mention = this.mention();
    if (!mention || mention.start === this.dismissed) return this.close(mention === null);
    const asked = ++this.asked;
    let paths;
    try {
      paths = await this.find(mention.query);
    } catch {
      paths = [];
    }
    if (asked !== this.asked) return; // a later keystroke asked again
    this.show(paths);
  }

  show(paths) {
    this.paths = paths;
    this.active = 0;
    this.list.innerHTML = "";
    if (!paths.length) {
      const none = document.createElement("li");
      none.className = "none";
      none.textContent = "no file matches";
      this.list.append(none);
    }
    paths.forEach((path, index) => {
      const li = document.createElement("li");
      li.textContent = path;
      li.setAttribute("role", "option");
      li.addEventListener("click", () => this.choose(index));
      this.list.append(li);
    });
    this.list.hidden = false;
    this.mark();
  }

  mark() {
    [...this.list.children].forEach((li, index) => {
      const active = index === this.active && this.paths.length > 0;
      li.classList.toggle("active", active);
      li.setAttribute("aria-selected", String(active));
      if (active) li.scrollIntoView({ block: "nearest" });
    });
  }

  close(forget = false) {
    this.asked++;
    this.list.hidden = true;
    if (forget) this.dismissed = null;
  }

  // Put the chosen path in place of the "@word" being typed.
  choose(index) {
    const mention = this.mention();
    const path = this.paths[index];
    if (!mention || path === undefined) return this.close();
    const text = this.input.value;
    const caret = this.input.selectionStart;
    const inserted = `@${path} `;
    this.input.value = text.slice(0, mention.start) + inserted + text.slice(caret).replace(/^\S*\s?/, "");
    const at = mention.start + inserted.length;
    this.input.setSelectionRange(at, at);
    this.close(true);
  }

  // The prompt box's keydown while the picker is open: true when the picker took the key.
  key(e) {
    if (!this.open || e.isComposing) return false;
    const count = this.paths.length;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      if (count) this.active = (this.active + (e.key === "ArrowDown" ? 1 : count - 1)) % count;
      this.mark();
    } else if ((e.key === "Enter" || e.key === "Tab") && !e.shiftKey && count) {
      this.choose(this.active);
    } else if (e.key === "Escape") {
      this.dismissed = this.mention()?.start ?? null;
      this.close();
    } else {
      return false;
    }
    e.preventDefault();
    return true;
  }
}
