// The /ws connection: requests with an id and their replies, pushed frames by channel, and
// reconnecting with a growing delay when the socket drops (the page then re-attaches).

export class Socket {
  constructor(onFrame, onState) {
    this.onFrame = onFrame;
    this.onState = onState;
    this.pending = new Map();
    this.nextId = 1;
    this.delay = 500;
    this.ws = null;
    this.opened = null;
  }

  connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/ws`, ["openheim.v1"]);
    this.ws = ws;
    this.opened = new Promise((resolve) => ws.addEventListener("open", resolve, { once: true }));
    ws.addEventListener("message", (e) => this.take(JSON.parse(e.data)));
    ws.addEventListener("open", () => {
      this.delay = 500;
      this.onState("connected");
    });
    ws.addEventListener("close", () => {
      for (const { reject } of this.pending.values()) reject(new Error("disconnected"));
      this.pending.clear();
      this.onState("disconnected");
      setTimeout(() => this.connect(), this.delay);
      this.delay = Math.min(this.delay * 2, 10000);
    });
  }

  take(frame) {
    const data = frame.data;
    if (data && data.id !== undefined && this.pending.has(data.id)) {
      const { resolve, reject } = this.pending.get(data.id);
      this.pending.delete(data.id);
      if (data.type === "error") reject(new Error(`${data.message} (${data.hint})`));
      else resolve(data);
      return;
    }
    this.onFrame(frame.channel, data);
  }

  async request(channel, data) {
    await this.opened;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ channel, data: { ...data, id } }));
    });
  }
}
