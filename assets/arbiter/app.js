// Arbiter dashboard. Everything drawn from data goes through textContent or
// element attributes and is never parsed as markup: a player or port name, an
// alert message or an arbiter's input cannot inject HTML.
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

  // Short titles of the Articles alerts cite (FIDE Laws of Chess), so an
  // arbiter sees what the number is about without the handbook.
  const ARTICLES = {
    "2.1": "Board placement",
    "3.7.5": "Promotion",
    "3.8.2": "Castling",
    "4.3": "Touch-move",
    "4.4.2": "Rook touched before the king (castling)",
    "4.7": "Piece released: move made",
    "5.1.1": "Checkmate",
    "5.1.2": "Resignation / game ended off the board",
    "5.2.1": "Stalemate",
    "5.2.2": "Dead position",
    "6.2": "Completing a move: pressing the clock",
    "6.9": "Flag fall",
    "6.11": "Clock stopped by the arbiter",
    "7.1": "Pieces back to an earlier position",
    "7.2.1": "Wrong initial position",
    "7.2.2": "Board placed wrongly (turned 90°)",
    "7.3": "Colours reversed",
    "7.4": "Displaced pieces",
    "7.5.1": "Illegal move completed",
    "7.5.2": "Pawn on the last rank not replaced",
    "7.5.3": "Clock pressed without a move",
    "7.5.4": "Two hands for one move",
    "7.5.5": "Penalty for an illegal move",
    "7.6": "Displaced piece found",
    "8.4": "Record under five minutes",
    "9.6": "Automatic draw",
    "9.6.1": "Fivefold repetition",
    "9.6.2": "75-move rule",
    "A.4.2": "Illegal move (rapid, unsupervised)",
  };
  const articleTitle = (a) => ARTICLES[a] || ARTICLES[String(a).split(".").slice(0, 2).join(".")] || "";

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

  // WebAudio beep: no sound file, nothing downloaded, works offline. Browsers
  // let a page make sound only after a click, so the first click anywhere
  // (or the button) unlocks it.
  let audio = null;
  function unlock() {
    try {
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      audio.resume();
    } catch (e) { audio = null; }
  }
  $("sound").addEventListener("click", () => {
    unlock();
    $("sound").textContent = "Alert sound on";
    beep();
  });
  document.addEventListener("click", unlock, { once: true });
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

  // Who acts, for the timeline ("who did what when"); kept for this tab.
  $("by").value = sessionStorage.getItem("arbiterName") || "";
  $("by").addEventListener("change", () => sessionStorage.setItem("arbiterName", $("by").value));

  function say(msg, bad) {
    const m = $("message");
    m.textContent = msg;
    m.className = "message" + (bad ? " bad" : "");
    m.hidden = false;
  }
  function alertBox(msg) { $("status").textContent = msg; $("status").className = "status bad"; }

  // Every operator action: POST JSON, show the server's answer as text.
  async function post(path, body, button) {
    if (button) button.disabled = true;
    const by = $("by").value.trim();
    if (by) body.by = by;
    try {
      const r = await fetch(path, {
        method: "POST",
        headers: Object.assign({ "Content-Type": "application/json" }, auth),
        body: JSON.stringify(body),
      });
      const answer = await r.json().catch(() => ({}));
      if (r.ok) say("Board " + body.board + ": " + (answer.done || answer.state || "done"), false);
      else say("Board " + body.board + ": " + (answer.error || ("HTTP " + r.status)), true);
      return r.ok;
    } catch (e) {
      say("The daemon is unreachable: " + e, true);
      return false;
    } finally {
      if (button) button.disabled = false;
      refresh();
    }
  }

  const seen = new Set();
  let first = true;

  function noticeText(n) {
    if (n.type === "alert") return { sev: n.severity, article: n.article, text: n.message };
    if (n.type === "board_offline") return { sev: "error", article: "", text: "Board offline (" + n.port + "): " + n.reason };
    if (n.type === "board_online") return { sev: "info", article: "", text: "Board online (" + n.port + ")" };
    if (n.type === "alert_resolved") return { sev: "info", article: "", text: "Alert " + n.id + " (" + n.kind + ") resolved: " + n.reason };
    if (n.type === "operator") return { sev: "info", article: "", text: "Arbiter: " + n.action + ": " + n.detail };
    return { sev: "info", article: "", text: n.type };
  }

  // ----- board cards: built once, their live part redrawn every second, so a
  // form being filled in is never wiped by a refresh.
  const cards = new Map();

  function field(form, label, input) {
    const l = el("label", null, label + " ");
    l.appendChild(input);
    form.appendChild(l);
    return input;
  }
  function input(type, cls, placeholder) {
    const i = el("input", cls);
    i.type = type;
    if (placeholder) i.placeholder = placeholder;
    return i;
  }
  function button(text, onClick) {
    const b = el("button", null, text);
    b.type = "button";
    b.addEventListener("click", () => onClick(b));
    return b;
  }
  function playerFields(form, side) {
    const name = field(form, side, input("text", null, "Surname, Given"));
    name.maxLength = 100;
    const title = field(form, "title", input("text", "num", "GM"));
    const elo = field(form, "Elo", input("number", "num", ""));
    const fide = field(form, "FIDE id", input("number", "num", ""));
    return () => {
      const p = { name: name.value };
      if (title.value.trim()) p.title = title.value.trim();
      if (elo.value) p.rating = Number(elo.value);
      if (fide.value) p.fide_id = Number(fide.value);
      return p;
    };
  }

  function controls(n) {
    const d = el("details", "controls");
    d.appendChild(el("summary", null, "Operator actions"));

    const rf = el("form");
    const sel = el("select");
    for (const r of ["1-0", "0-1", "1/2-1/2"]) { const o = el("option", null, r); o.value = r; sel.appendChild(o); }
    field(rf, "Result", sel);
    const reason = field(rf, "reason", input("text", null, "resignation"));
    rf.appendChild(button("Set result", (b) => post("/arbiter/api/result", { board: n, result: sel.value, reason: reason.value }, b)));
    d.appendChild(rf);

    const tf = el("form");
    tf.appendChild(el("span", null, "Last retraction: "));
    tf.appendChild(button("Accept", (b) => post("/arbiter/api/retraction", { board: n, decision: "accept" }, b)));
    tf.appendChild(button("Reject (moves stand)", (b) => post("/arbiter/api/retraction", { board: n, decision: "reject" }, b)));
    d.appendChild(tf);

    const pf = el("form");
    const round = field(pf, "Round", input("number", "num", "current"));
    const white = playerFields(pf, "White");
    const black = playerFields(pf, "Black");
    pf.appendChild(button("Assign pairing", (b) => {
      const body = { board: n, white: white(), black: black() };
      if (round.value) body.round = Number(round.value);
      post("/arbiter/api/pairing", body, b);
    }));
    d.appendChild(pf);

    const sf = el("form");
    sf.appendChild(button("Swap colours (Art. 7.3)", (b) => post("/arbiter/api/swap", { board: n }, b)));
    d.appendChild(sf);

    const ff = el("form");
    const fen = field(ff, "Start FEN", input("text", "fen", "8/8/8/8/8/8/8/K6k w - - 0 1"));
    ff.appendChild(button("Set start position", (b) => post("/arbiter/api/start-fen", { board: n, fen: fen.value }, b)));
    d.appendChild(ff);

    // Times on the clock: a 7.5.5 penalty, a wrong setting (6.10.2). The
    // daemon answers once the clock has acked them, or says why not.
    const cf = el("form");
    const cw = field(cf, "Clock: White", input("text", "num", "1:25:00"));
    const cb = field(cf, "Black", input("text", "num", "0:58:30"));
    const run = input("checkbox", null, "");
    run.checked = true;
    field(cf, "running", run);
    cf.appendChild(button("Set clock", (b) => post("/arbiter/api/clock", { board: n, white: cw.value, black: cb.value, run: run.checked }, b)));
    d.appendChild(cf);

    const af = el("form");
    af.appendChild(button("Mark inactive", (b) => post("/arbiter/api/active", { board: n, active: false }, b)));
    af.appendChild(button("Mark active", (b) => post("/arbiter/api/active", { board: n, active: true }, b)));
    d.appendChild(af);
    return d;
  }

  function card(n) {
    let c = cards.get(n);
    if (c) return c;
    const root = el("div", "card");
    const live = el("div");
    const tools = el("div", "info");
    tools.appendChild(button("Record and timeline", () => openRecord(n)));
    root.append(live, tools, controls(n));
    $("boards").appendChild(root);
    c = { root, live };
    cards.set(n, c);
    return c;
  }

  function drawBoard(b) {
    const c = card(b.board);
    c.root.className = "card" + (b.online ? "" : " offline") + (b.open.length ? " alerting" : "") + (b.active ? "" : " inactive");
    const live = el("div");
    const h = el("h3", null, "Board " + b.board);
    const badges = el("span");
    if (!b.active) badges.appendChild(el("span", "badge grey", "inactive"));
    badges.appendChild(el("span", "badge" + (b.online ? "" : " off"), b.online ? "online" : "offline"));
    h.appendChild(badges);
    live.appendChild(h);
    live.appendChild(el("div", "players", (b.white || "?") + " – " + (b.black || "?") + (b.swapped ? " (colours swapped)" : "")));
    live.appendChild(diagram(b.fen));
    const info = el("div", "info");
    if (b.clock) {
      const cl = el("div", "clock");
      const w = el("span", b.clock.running === "white" ? "run" : "", "White " + hms(b.clock.white_ms));
      const k = el("span", b.clock.running === "black" ? "run" : "", "Black " + hms(b.clock.black_ms));
      cl.append(w, " · ", k);
      info.appendChild(cl);
    }
    info.appendChild(el("div", null, b.last_move ? "Last move: " + b.last_move.san + " (ply " + b.last_move.ply + ")" : "No move yet"));
    if (b.result && b.result !== "*") info.appendChild(el("div", null, "Result: " + b.result));
    if (b.port) info.appendChild(el("div", "muted", b.port));
    live.appendChild(info);
    c.live.replaceWith(live);
    c.live = live;
  }

  function drawAlert(b, n) {
    const t = noticeText(n.notice);
    const li = el("li", t.sev + " " + (n.state || "raised"));
    li.appendChild(el("span", "state", n.state || "raised"));
    li.appendChild(el("strong", null, "Board " + b.board + " "));
    if (t.article) {
      li.appendChild(el("span", "article", "Art. " + t.article + " "));
      const title = articleTitle(t.article);
      if (title) li.appendChild(el("span", "article-title", "(" + title + ") "));
    }
    if (n.notice.squares && n.notice.squares.length) li.appendChild(el("span", "squares", "[" + n.notice.squares.join(" ") + "] "));
    li.appendChild(el("span", "text", t.text + " "));
    if (n.state !== "acknowledged") {
      li.appendChild(button("Acknowledge", (btn) => post("/arbiter/api/ack", { board: b.board, seq: n.seq }, btn)));
    }
    li.appendChild(button("Resolve", (btn) => post("/arbiter/api/resolve", { board: b.board, seq: n.seq }, btn)));
    if (n.notice.penalty) li.appendChild(el("span", "penalty", "Penalty to consider: " + n.notice.penalty));
    return li;
  }

  function render(state) {
    $("round").textContent = "(round " + state.round + (state.delay_secs ? ", public delay " + state.delay_secs + " s" : "") + ")";
    const alerts = $("alerts");
    alerts.replaceChildren();
    let fresh = false, count = 0;
    for (const b of state.boards) {
      drawBoard(b);
      for (const n of b.open) {
        count++;
        const key = b.board + ":" + n.seq;
        if (!seen.has(key)) {
          seen.add(key);
          const sev = n.notice.type === "alert" ? n.notice.severity : "error";
          if (sev === "warning" || sev === "error") fresh = true;
        }
        alerts.appendChild(drawAlert(b, n));
      }
    }
    $("alert-count").textContent = count ? "(" + count + ")" : "";
    $("no-alerts").hidden = count > 0;
    const actions = $("actions");
    actions.replaceChildren();
    for (const a of state.actions) actions.appendChild(el("li", null, a.name + " (" + a.path + "): " + a.help));
    if (fresh && !first) beep();
    first = false;
  }

  // ----- a board's full record and raw timeline
  let recordBoard = null;
  function openRecord(n) {
    recordBoard = n;
    $("record").hidden = false;
    $("record-board").textContent = String(n);
    loadRecord();
  }
  $("record-close").addEventListener("click", () => { recordBoard = null; $("record").hidden = true; });
  async function loadRecord() {
    if (recordBoard === null) return;
    const r = await fetch("/arbiter/api/board/" + recordBoard, { headers: auth, cache: "no-store" }).catch(() => null);
    if (!r || !r.ok) return;
    const rec = await r.json();
    $("record-pgn").textContent = rec.games.map((g) => g.pgn).join("\n") || "No game yet.";
    const list = $("record-timeline");
    list.replaceChildren();
    const items = rec.timeline.map((e) => ({ seq: e.seq, text: "#" + e.seq + " " + noticeText(e.notice).text, article: e.notice.article }));
    const game = rec.games[rec.games.length - 1];
    for (const e of items) {
      const li = el("li", null, (e.article ? "Art. " + e.article + " " : "") + e.text);
      list.appendChild(li);
    }
    if (game) {
      for (const m of game.moves) {
        const clock = m.clock_ms === null || m.clock_ms === undefined ? "" : " [" + hms(m.clock_ms) + "]";
        list.appendChild(el("li", "muted", "ply " + m.ply + ": " + m.san + " (" + m.uci + ")" + clock));
      }
    }
  }

  async function refresh() {
    try {
      const r = await fetch("/arbiter/api/state", { headers: auth, cache: "no-store" });
      if (r.status === 401) { alertBox("Token missing or wrong: open /arbiter/?token=<token>"); return; }
      if (!r.ok) { alertBox("Server error " + r.status); return; }
      render(await r.json());
      $("status").textContent = "live · " + new Date().toLocaleTimeString();
      $("status").className = "status";
      loadRecord();
    } catch (e) {
      alertBox("Daemon unreachable, retrying…");
    }
  }
  // The Lichess push client: what Lichess answered for each game pushed.
  async function refreshLichess() {
    const r = await fetch("/arbiter/api/lichess", { headers: auth, cache: "no-store" }).catch(() => null);
    if (!r || !r.ok) return;
    const s = await r.json();
    $("lichess-section").hidden = !s.enabled;
    if (!s.enabled) return;
    const when = s.last_push_ms ? new Date(s.last_push_ms).toLocaleTimeString() : "not yet";
    $("lichess-summary").textContent = "round " + s.round_id + " · last push " + when +
      " · " + s.pushes + " pushed, " + s.failures + " failed" +
      (s.retry_in_secs ? " · retrying in " + s.retry_in_secs + " s" : "");
    $("lichess-error").hidden = !s.last_error;
    $("lichess-error").textContent = s.last_error || "";
    const list = $("lichess-games");
    list.replaceChildren();
    for (const g of s.games) {
      const who = (g.round || "?") + " " + (g.white || "?") + " – " + (g.black || "?");
      const what = g.error ? "refused: " + g.error : g.moves + " moves taken";
      list.appendChild(el("li", g.error ? "alert" : "muted", who + ": " + what));
    }
  }
  refresh();
  setInterval(refresh, 1000);
  refreshLichess();
  setInterval(refreshLichess, 5000);
})();
