// Arbiter dashboard. Everything drawn from data goes through textContent or
// element attributes and is never parsed as markup: a player or port name cannot inject HTML.
"use strict";
(function () {
  // The token arrives once in the address (?token=…); keep it for this tab and
  // remove it from the address bar and history so it is not shared by accident.
  const params = new URLSearchParams(location.search);
  if (params.has("token")) {
    sessionStorage.setItem("arbiterToken", params.get("token"));
    params.delete("token");
    const q = params.toString();
    history.replaceState(null, "", location.pathname + (q ? "?" + q : ""));
  }
  const token = sessionStorage.getItem("arbiterToken") || "";
  const auth = { Authorization: "Bearer " + token };

  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  };

  const PIECES = { K: "♔", Q: "♕", R: "♖", B: "♗", N: "♘", P: "♙",
                   k: "♚", q: "♛", r: "♜", b: "♝", n: "♞", p: "♟" };

  function diagram(fen) {
    const d = el("div", "diagram");
    const rows = (fen || "8/8/8/8/8/8/8/8").split(" ")[0].split("/");
    for (let r = 0; r < 8; r++) {
      let f = 0;
      for (const ch of rows[r] || "8") {
        if (ch >= "1" && ch <= "8") {
          for (let i = 0; i < Number(ch); i++, f++) d.appendChild(el("span", (r + f) % 2 ? "d" : "l", ""));
        } else {
          d.appendChild(el("span", (r + f) % 2 ? "d" : "l", PIECES[ch] || "?"));
          f++;
        }
      }
    }
    return d;
  }

  function hms(ms) {
    const s = Math.floor(ms / 1000);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    return h + ":" + String(m).padStart(2, "0") + ":" + String(sec).padStart(2, "0");
  }

  // WebAudio beep: no sound file needed; browsers allow audio only after a click.
  let audio = null;
  $("sound").addEventListener("click", () => {
    audio = audio || new (window.AudioContext || window.webkitAudioContext)();
    audio.resume();
    $("sound").textContent = "Alert sound on";
    beep();
  });
  function beep() {
    if (!audio) return;
    const o = audio.createOscillator(), g = audio.createGain();
    o.frequency.value = 880;
    g.gain.setValueAtTime(0.2, audio.currentTime);
    g.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.5);
    o.connect(g).connect(audio.destination);
    o.start();
    o.stop(audio.currentTime + 0.5);
  }

  const seen = new Set();
  let first = true;

  function noticeText(n) {
    if (n.type === "alert") return { sev: n.severity, article: n.article, text: n.message };
    if (n.type === "board_offline") return { sev: "error", article: "", text: "Board offline (" + n.port + "): " + n.reason };
    return { sev: "info", article: "", text: n.type };
  }

  async function ack(board, seq, button) {
    button.disabled = true;
    try {
      const r = await fetch("/arbiter/api/ack", {
        method: "POST",
        headers: Object.assign({ "Content-Type": "application/json" }, auth),
        body: JSON.stringify({ board: board, seq: seq }),
      });
      if (!r.ok) {
        const body = await r.json().catch(() => ({}));
        alertBox(body.error || ("acknowledge failed: HTTP " + r.status));
      }
    } finally {
      refresh();
    }
  }
  function alertBox(msg) { $("status").textContent = msg; $("status").className = "status bad"; }

  function render(state) {
    $("round").textContent = "(round " + state.round + (state.delay_secs ? ", public delay " + state.delay_secs + " s" : "") + ")";
    const alerts = $("alerts");
    alerts.replaceChildren();
    const boards = $("boards");
    boards.replaceChildren();
    let fresh = false, count = 0;
    for (const b of state.boards) {
      const card = el("div", "card" + (b.online ? "" : " offline") + (b.open.length ? " alerting" : ""));
      const h = el("h3", null, "Board " + b.board);
      h.appendChild(el("span", "badge" + (b.online ? "" : " off"), b.online ? "online" : "offline"));
      card.appendChild(h);
      card.appendChild(el("div", "players", (b.white || "?") + " – " + (b.black || "?")));
      card.appendChild(diagram(b.fen));
      const info = el("div", "info");
      if (b.clock) {
        const c = el("div", "clock");
        const w = el("span", b.clock.running === "white" ? "run" : "", "White " + hms(b.clock.white_ms));
        const k = el("span", b.clock.running === "black" ? "run" : "", "Black " + hms(b.clock.black_ms));
        c.append(w, " · ", k);
        info.appendChild(c);
      }
      info.appendChild(el("div", null, b.last_move ? "Last move: " + b.last_move.san + " (ply " + b.last_move.ply + ")" : "No move yet"));
      if (b.result && b.result !== "*") info.appendChild(el("div", null, "Result: " + b.result));
      if (b.port) info.appendChild(el("div", "muted", b.port));
      card.appendChild(info);
      boards.appendChild(card);

      for (const n of b.open) {
        count++;
        if (!seen.has(b.board + ":" + n.seq)) { seen.add(b.board + ":" + n.seq); fresh = true; }
        const t = noticeText(n.notice);
        const li = el("li", t.sev);
        li.appendChild(el("strong", null, "Board " + b.board + " "));
        if (t.article) li.appendChild(el("span", "article", "Art. " + t.article + " "));
        li.appendChild(el("span", null, t.text + " "));
        if (n.notice.type === "alert") {
          const btn = el("button", null, "Acknowledge");
          btn.type = "button";
          btn.addEventListener("click", () => ack(b.board, n.seq, btn));
          li.appendChild(btn);
        }
        alerts.appendChild(li);
      }
    }
    $("alert-count").textContent = count ? "(" + count + ")" : "";
    $("no-alerts").hidden = count > 0;
    const actions = $("actions");
    actions.replaceChildren();
    for (const a of state.actions) {
      actions.appendChild(el("li", a.available ? "" : "muted", a.name + (a.available ? "" : " (not yet available)") + ": " + a.help));
    }
    if (fresh && !first) beep();
    first = false;
  }

  async function refresh() {
    try {
      const r = await fetch("/arbiter/api/state", { headers: auth, cache: "no-store" });
      if (r.status === 401) { alertBox("Token missing or wrong: open /arbiter/?token=<token>"); return; }
      if (!r.ok) { alertBox("Server error " + r.status); return; }
      render(await r.json());
      $("status").textContent = "live · " + new Date().toLocaleTimeString();
      $("status").className = "status";
    } catch (e) {
      alertBox("Daemon unreachable, retrying…");
    }
  }
  refresh();
  setInterval(refresh, 1000);
})();
