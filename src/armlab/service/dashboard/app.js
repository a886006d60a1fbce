/*
 * armlab dashboard: a live view of one served experiment (plain JavaScript, no build step;
 * shared.js comes first: the API's location, the token, helpers).
 *
 * The bearer token is asked for once and kept in this tab's sessionStorage, never in a URL;
 * every data request sends it in the Authorization header.  EventSource cannot send headers,
 * so the event stream is read with fetch() and parsed here (server-sent events: "field: value"
 * lines, a blank line ends a message, lines starting with ":" are comments).
 *
 * /status feeds the cards and the arms tables; it is fetched again after events, at most
 * every STATUS_INTERVAL_MS.  Each time the stream (re)connects, /history gives the chart, the
 * latest events and the overdue count from the experiment's start; the events that arrive
 * while it loads are held, and those with an id above the history's stream_id (the ones it
 * does not hold) are applied after it, so none counts twice.  The chart of cumulative reward
 * per arm then grows with every trial_observed event.
 */
const STATUS_INTERVAL_MS = 250;
const STATUS_RETRY_MS = 2000;
const RECONNECT_FIRST_MS = 500;
const RECONNECT_MAX_MS = 15000;
const MAX_EVENTS_SHOWN = 200;
const MAX_CHART_POINTS = 2000; // beyond this, every other point is dropped (the ends are kept)
const MAX_HISTORY_POINTS = 500; // points per bandit asked of /history
const ARM_COLORS = ["#2563eb", "#ea580c", "#059669", "#9333ea", "#dc2626", "#0891b2", "#ca8a04", "#db2777",
  "#4b5563", "#65a30d"];
const SVG_NS = "http://www.w3.org/2000/svg";

const view = {
  token: storedToken(), // null until one is given (or none is needed)
  status: null, // the last /status answer
  stream: null, // AbortController of the event stream being read
  panels: [], // per bandit: the DOM nodes to update
  charts: [], // per bandit: {points: [{x, cum}]} (x: rewards observed in that bandit, from 0)
  held: null, // events received while /history loads (null when none is loading)
  historyLoad: 0, // number of the latest /history load (an older one's answer is dropped)
  streamId: Infinity, // events with an id up to this one are in the history shown (none before it)
  firstSeen: new Map(), // pending trial id -> {at: ms, exact: false when it predates the page}
  overdue: 0, // trials failed with "timed out" since the experiment's start
  openedAt: Date.now(),
  shape: "", // the bandits' labels and arm names the panels were built for
  queuedEvents: [], // events not yet in the list (it is updated once per animation frame)
  dirtyCharts: new Set(), // bandits whose chart changed since the last frame
  frame: 0,
};
const refresh = {timer: 0, running: false, again: false, notBefore: 0};

// ---- helpers -----------------------------------------------------------------------------

function svg(tag, attributes = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, {once: true});
  });
}

function formatNumber(value, digits = 3) {
  return Number.isInteger(value) ? String(value) : value.toFixed(digits);
}

/** A p-value readable at any size: three decimals, or two significant digits below 0.001. */
function formatPValue(p) {
  return p >= 0.001 || p === 0 ? formatNumber(p) : p.toExponential(1);
}

/** A retirement's reason: a guardrail's evidence (journaled as JSON) in words, else the text. */
function retirementReason(reason) {
  if (!reason.startsWith('{"guardrail"')) return reason;
  const g = JSON.parse(reason).guardrail;
  const bound = "max" in g ? `max ${g.max}` : `min ${g.min}`;
  return `${g.metric} guardrail: mean in ${formatNumber(g.interval[0])} – ${formatNumber(g.interval[1])} `
    + `after ${g.n} reports, beyond ${bound} (δ = ${g.delta})`;
}

function formatAge(seconds) {
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.floor(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

function armName(bandit, arm) {
  const names = view.status?.bandits[bandit]?.arm_names;
  const name = names?.[arm] ?? `arm ${arm}`;
  return view.status && view.status.bandits.length > 1 ? `${view.status.bandits[bandit].label}/${name}` : name;
}

// ---- signing in --------------------------------------------------------------------------

function fetchStatus(signal) {
  return getJson("status", view.token, signal);
}

/** Why signing in failed, in words. */
function refusal(error) {
  if (error instanceof Unauthorized) return "The service rejected this token.";
  if (error instanceof Forbidden) return "This token belongs to another experiment.";
  return `Cannot reach the service: ${error.message}`;
}

async function start() {
  $("login-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", () => signOut(""));
  setInterval(showOldestPending, 1000);
  try {
    showDashboard(await fetchStatus()); // a token from earlier in this tab, or a service without one
  } catch (error) {
    if ((error instanceof Unauthorized || error instanceof Forbidden) && view.token) {
      storeToken(null);
      view.token = null;
      showLogin(error instanceof Forbidden ? "The stored token belongs to another experiment; enter this one's."
        : "The stored token was rejected; enter the current one.");
    } else {
      showLogin(error instanceof Unauthorized ? "" : refusal(error));
    }
  }
}

async function signIn(event) {
  event.preventDefault();
  const input = $("token");
  const button = $("login-form").querySelector("button");
  const token = input.value.trim();
  if (!token) return;
  view.token = token;
  button.disabled = true;
  $("login-error").textContent = "";
  try {
    const status = await fetchStatus();
    storeToken(token);
    input.value = "";
    showDashboard(status);
  } catch (error) {
    view.token = null;
    $("login-error").textContent = refusal(error);
    input.focus();
  } finally {
    button.disabled = false;
  }
}

function signOut(message) {
  view.stream?.abort();
  view.stream = null;
  clearTimeout(refresh.timer);
  refresh.timer = 0;
  refresh.again = false;
  storeToken(null);
  view.token = null;
  showLogin(message);
}

function showLogin(message) {
  $("dashboard").hidden = true;
  $("sign-out").hidden = true;
  $("connection").hidden = true;
  $("state").hidden = true;
  $("meta").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message;
  $("token").focus();
}

function showDashboard(status) {
  $("login").hidden = true;
  $("dashboard").hidden = false;
  $("sign-out").hidden = !view.token;
  render(status);
  followEvents();
}

// ---- the event stream --------------------------------------------------------------------

/** Read /events until signed out, reconnecting with exponential backoff after errors. */
async function followEvents() {
  view.stream?.abort();
  const controller = new AbortController();
  view.stream = controller;
  const signal = controller.signal;
  let delay = RECONNECT_FIRST_MS;
  while (!signal.aborted) {
    try {
      setConnection("connecting", "connecting");
      const response = await fetch(apiUrl("events"), {
        headers: {...authHeaders(view.token), Accept: "text/event-stream"}, cache: "no-store", signal,
      });
      if (response.status === 401 || response.status === 403) throw new Unauthorized("the service rejected the token");
      if (!response.ok || !response.body) throw new Error(`/events answered ${response.status}`);
      for await (const message of serverSentEvents(response.body)) {
        delay = RECONNECT_FIRST_MS;
        onMessage(message);
      }
      throw new Error("the event stream ended");
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof Unauthorized) {
        signOut("The service no longer accepts this token.");
        return;
      }
      setConnection("down", `reconnecting in ${Math.ceil(delay / 1000)} s`, error.message);
      await sleep(delay * (0.8 + 0.4 * Math.random()), signal);
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    }
  }
}

/**
 * The messages of a text/event-stream body: {comment} for a comment line, {event, data, id}
 * for a message (its data lines joined by newlines).  Lines end with CRLF, LF or CR.
 */
async function* serverSentEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let message = {event: "", data: [], id: null};
  try {
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      let text = buffer + value;
      const heldCR = text.endsWith("\r"); // may be the first half of a CRLF split across chunks
      if (heldCR) text = text.slice(0, -1);
      const lines = text.split(/\r\n|\r|\n/);
      buffer = lines.pop() + (heldCR ? "\r" : "");
      for (const line of lines) {
        if (line === "") {
          if (message.data.length) yield {event: message.event || "message", data: message.data.join("\n"), id: message.id};
          message = {event: "", data: [], id: null};
        } else if (line.startsWith(":")) {
          yield {comment: line.slice(1).trim()};
        } else {
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let fieldValue = colon < 0 ? "" : line.slice(colon + 1);
          if (fieldValue.startsWith(" ")) fieldValue = fieldValue.slice(1);
          if (field === "data") message.data.push(fieldValue);
          else if (field === "event") message.event = fieldValue;
          else if (field === "id") message.id = fieldValue;
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function onMessage(message) {
  if (message.comment !== undefined) {
    if (message.comment === "connected") {
      setConnection("live", "live");
      startHistory(); // events from now on are delivered; earlier ones are in the history
    } else if (message.comment.includes("events dropped")) {
      startHistory(); // this reader fell behind: the chart and the counts missed events
    }
    return;
  }
  const event = JSON.parse(message.data);
  if (view.held) view.held.push(event);
  else applyEvent(event);
}

/** One event of the stream, unless the history shown holds it already. */
function applyEvent(event) {
  if (event.id <= view.streamId) return;
  trackPending(event);
  if (event.event === "trial_observed") observe(event);
  queueEvent(event, new Date().toLocaleTimeString([], {hour12: false}));
  scheduleStatus();
}

function queueEvent(event, time) {
  view.queuedEvents.push({event, time});
  if (view.queuedEvents.length > MAX_EVENTS_SHOWN) view.queuedEvents.shift();
  scheduleFrame();
}

// ---- the history: everything since the experiment's start --------------------------------

/** Hold the stream's events from now on, and load the history they join (a newer load replaces an older one). */
function startHistory() {
  view.historyLoad += 1;
  view.held = [];
  loadHistory(view.historyLoad, view.stream.signal);
}

/** Fetch /history, show it, then apply the events held meanwhile that it does not hold. */
async function loadHistory(load, signal) {
  let history = null;
  while (!history) {
    try {
      history = await getJson(`history?points=${MAX_HISTORY_POINTS}`, view.token, signal);
    } catch (error) {
      if (signal.aborted || load !== view.historyLoad) return;
      if (error instanceof Unauthorized || error instanceof Forbidden) {
        signOut("The service no longer accepts this token.");
        return;
      }
      setConnection("down", "history unavailable, retrying", error.message);
      await sleep(STATUS_RETRY_MS, signal);
    }
    if (signal.aborted || load !== view.historyLoad) return;
  }
  const held = view.held;
  view.held = null;
  showHistory(history);
  for (const event of held) applyEvent(event);
  setConnection("live", "live");
  scheduleStatus();
}

/** Replace the chart, the latest events and the overdue count with the history's. */
function showHistory(history) {
  view.streamId = history.stream_id;
  view.overdue = history.outcomes.overdue;
  $("overdue").textContent = view.overdue;
  view.charts = history.bandits.map((bandit) => ({
    points: bandit.series.map((point) => ({x: point.observed, cum: point.sums})),
  }));
  view.charts.forEach((_, b) => view.dirtyCharts.add(b));
  view.queuedEvents = [];
  $("events").replaceChildren();
  for (const event of history.events) queueEvent(event, "earlier"); // counted in the history already
  $("no-events").hidden = history.events.length > 0;
  scheduleFrame();
}

function setConnection(kind, text, detail = "") {
  const node = $("connection");
  node.hidden = false;
  node.className = `connection ${kind}`;
  node.textContent = text;
  node.title = detail;
}

// ---- /status, throttled ------------------------------------------------------------------

function scheduleStatus() {
  if (refresh.timer) return; // the refresh already planned will see this
  if (refresh.running) {
    refresh.again = true;
    return;
  }
  refresh.timer = setTimeout(refreshStatus, Math.max(0, refresh.notBefore - performance.now()));
}

async function refreshStatus() {
  refresh.timer = 0;
  if (!view.stream) return; // signed out
  refresh.running = true;
  refresh.notBefore = performance.now() + STATUS_INTERVAL_MS;
  try {
    render(await fetchStatus(view.stream?.signal));
  } catch (error) {
    if (error instanceof Unauthorized || error instanceof Forbidden) {
      signOut("The service no longer accepts this token.");
    } else if (view.stream && !view.stream.signal.aborted) {
      refresh.notBefore = performance.now() + STATUS_RETRY_MS;
      refresh.again = true;
    }
  } finally {
    refresh.running = false;
    if (refresh.again && view.stream && !view.stream.signal.aborted) {
      refresh.again = false;
      scheduleStatus();
    }
  }
}

// ---- rendering the status ----------------------------------------------------------------

function render(status) {
  view.status = status;
  document.title = `${status.name} · armlab`;
  $("experiment-name").textContent = status.name;
  const state = $("state");
  state.hidden = false;
  $("meta").hidden = false;
  state.className = `state state-${status.state}`;
  state.textContent = STATE_NAMES[status.state] ?? status.state;
  $("policy").textContent = status.policy;
  $("source").textContent = status.source;
  $("dispatched").textContent = status.dispatched;
  $("budget").textContent = status.budget;
  $("budget-bar").value = status.budget ? status.dispatched / status.budget : 0;
  $("pending").textContent = status.pending;
  $("in-flight-limit").textContent = status.in_flight_limit;
  $("completed").textContent = `${status.completed} completed`;
  $("outcomes").textContent = `${status.failed} failed · ${status.abandoned} abandoned · ${status.late} late`;
  $("overdue").textContent = view.overdue;
  $("stop").hidden = !status.stop;
  if (status.stop) $("stop").textContent = stopText(status.stop, status);
  const attrition = status.checks?.attrition;
  $("attrition").hidden = !attrition?.flagged;
  if (attrition?.flagged) {
    $("attrition").textContent = `Attrition check: the share of trials that come back differs across arms `
      + `(anytime-valid p = ${formatPValue(attrition.p_value)}, threshold ${attrition.threshold}); reported per arm `
      + `${attrition.reported.join(" / ")} of ${attrition.dispatched.join(" / ")} dispatched. Estimates may be biased.`;
  }
  syncPending(status);
  showOldestPending();

  const single = status.bandits.length === 1;
  const shape = status.bandits.map((b) => `${b.label}:${b.arm_names.join("\u0000")}`).join("\u0001");
  if (shape !== view.shape) {
    view.shape = shape;
    view.panels = status.bandits.map((bandit, b) => buildPanel(bandit, b, single));
    $("bandits").replaceChildren(...view.panels.map((panel) => panel.root));
    view.charts.forEach((_, b) => view.dirtyCharts.add(b)); // new panels: draw the charts known
    scheduleFrame();
  }
  status.bandits.forEach((bandit, b) => updatePanel(view.panels[b], bandit));
}

/** Why and when the experiment stopped, with the confidence its stopping rule promises. */
function stopText(stop, status) {
  const single = status.bandits.length === 1;
  const sure = stop.delta === null
    ? "" : ` (right with probability ≥ ${Number(((1 - stop.delta) * 100).toPrecision(6))}%, δ = ${stop.delta})`;
  if (stop.reason === "anytime") {
    return `Stopped after ${stop.trials} trials: the anytime-valid intervals show `
      + `${armName(stop.bandit, stop.best_arm)} is best${sure}.`;
  }
  if (stop.reason === "confident") {
    return single
      ? `Stopped after ${stop.trials} trials: confident the answer is `
        + `${recommendationText(stop.recommendation, status.bandits[0].arm_names)}${sure}.`
      : `Stopped after ${stop.trials} trials: the stopping rule of ${status.bandits[stop.bandit].label} was confident${sure}.`;
  }
  return `Stopped after ${stop.trials} trials: the allocator ended the run`
    + (single ? `; the answer is ${recommendationText(stop.recommendation, status.bandits[0].arm_names)}.` : ".");
}

function buildPanel(bandit, b, single) {
  const title = single ? "Arms" : bandit.label;
  const titleId = `bandit-${b}-title`;
  const recommendation = el("strong", {"data-testid": "recommendation"});
  const rows = bandit.arm_names.map((name, arm) => {
    const interval = el("span", {"data-testid": "arm-interval"});
    const anytime = el("td", {class: "interval", "data-testid": "arm-anytime-interval"});
    const bar = svg("svg", {class: "interval-bar", viewBox: "0 0 100 12", "aria-hidden": "true",
      preserveAspectRatio: "none"});
    const row = el("tr", {"data-arm": name},
      el("th", {scope: "row"},
        el("span", {class: "swatch", "aria-hidden": "true"}),
        el("span", {"data-testid": "arm-name"}, name),
        el("span", {class: "badge badge-best", hidden: ""}, "recommended"),
        el("span", {class: "badge badge-retired", hidden: ""}, "retired")),
      el("td", {class: "num", "data-testid": "arm-pulls"}),
      el("td", {class: "num", "data-testid": "arm-mean"}),
      el("td", {class: "interval"}, interval, bar),
      anytime,
      el("td", {class: "num", "data-testid": "arm-pending"}));
    row.querySelector(".swatch").style.background = ARM_COLORS[arm % ARM_COLORS.length];
    return {row, interval, bar, anytime};
  });
  const table = el("table", {class: "arms", "data-testid": "arms-table"},
    el("caption", {class: "visually-hidden"},
      `${title}: pulls, mean reward with its fixed-sample and anytime-valid intervals, and trials pending per arm`),
    el("thead", {}, el("tr", {},
      el("th", {scope: "col"}, "Arm"), el("th", {scope: "col", class: "num"}, "Pulls"),
      el("th", {scope: "col", class: "num"}, "Mean"),
      el("th", {scope: "col", "data-testid": "fixed-sample-header"}, "95% interval",
        el("span", {class: "th-note"}, "fixed-sample: valid only at one pre-planned look")),
      el("th", {scope: "col", "data-testid": "anytime-header"}, "Anytime-valid interval",
        el("span", {class: "th-note"}, "valid at every look, all arms at once")),
      el("th", {scope: "col", class: "num"}, "Pending"))),
    el("tbody", {}, ...rows.map((r) => r.row)));
  const guardrails = el("ul", {class: "guardrails", "data-testid": "guardrail-retirements", hidden: ""});
  const chart = svg("svg", {class: "chart", viewBox: "0 0 560 250", role: "img", "data-testid": "chart"});
  const legend = el("ul", {class: "legend", "aria-hidden": "true"}, ...bandit.arm_names.map((name, arm) => {
    const swatch = el("span", {class: "swatch"});
    swatch.style.background = ARM_COLORS[arm % ARM_COLORS.length];
    return el("li", {}, swatch, name);
  }));
  const root = el("section", {class: "panel", "data-testid": "bandit-panel", "data-bandit": b,
    "aria-labelledby": titleId},
    el("header", {class: "panel-head"},
      el("h2", {id: titleId}, title),
      el("p", {class: "recommendation"}, "Recommendation ", recommendation)),
    el("div", {class: "panel-body"},
      el("div", {class: "table-wrap"}, table, guardrails),
      el("figure", {class: "chart-box"},
        el("figcaption", {}, "Cumulative reward per arm, by rewards observed"), chart, legend)));
  return {root, recommendation, rows, chart, title, guardrails};
}

/** Each guardrail retirement with its evidence: the metric's anytime interval, n and the bound. */
function showGuardrails(panel, bandit) {
  const retirements = bandit.guardrail_retirements ?? [];
  panel.guardrails.hidden = retirements.length === 0;
  panel.guardrails.replaceChildren(...retirements.map((r) => el("li", {},
    `${bandit.arm_names[r.arm]} retired by the ${r.metric} guardrail: its mean lies in `
    + `${formatNumber(r.interval[0])} – ${formatNumber(r.interval[1])} after ${r.n} reports, beyond `
    + `${"max" in r ? `max ${r.max}` : `min ${r.min}`} (δ = ${r.delta})`)));
}

function updatePanel(panel, bandit) {
  showGuardrails(panel, bandit);
  const best = new Set(recommended(bandit.recommendation));
  const retired = new Set(bandit.retired);
  panel.recommendation.textContent = recommendationText(bandit.recommendation, bandit.arm_names);
  let low = Infinity;
  let high = -Infinity;
  bandit.arm_names.forEach((_, arm) => {
    for (const v of bandit.intervals[arm] ?? (bandit.counts[arm] ? [bandit.means[arm]] : [])) {
      low = Math.min(low, v);
      high = Math.max(high, v);
    }
  });
  if (high - low < 1e-9) { low -= 0.5; high += 0.5; }
  const scale = (v) => ((v - low) / (high - low)) * 96 + 2;
  panel.rows.forEach(({row, interval, bar}, arm) => {
    const n = bandit.counts[arm];
    const mean = bandit.means[arm];
    const ci = bandit.intervals[arm];
    row.classList.toggle("recommended", best.has(arm));
    row.classList.toggle("retired", retired.has(arm));
    row.querySelector(".badge-best").hidden = !best.has(arm);
    row.querySelector(".badge-retired").hidden = !retired.has(arm);
    row.querySelector('[data-testid="arm-pulls"]').textContent = n;
    row.querySelector('[data-testid="arm-mean"]').textContent = n ? mean.toFixed(3) : "—";
    row.querySelector('[data-testid="arm-pending"]').textContent = bandit.pending[arm];
    interval.textContent = ci ? `${ci[0].toFixed(3)} – ${ci[1].toFixed(3)}` : "—";
    const anytime = bandit.anytime_intervals?.[arm];
    panel.rows[arm].anytime.textContent = anytime ? `${anytime[0].toFixed(3)} – ${anytime[1].toFixed(3)}` : "—";
    const color = ARM_COLORS[arm % ARM_COLORS.length];
    bar.replaceChildren(svg("line", {x1: 0, x2: 100, y1: 6, y2: 6, class: "track"}));
    if (ci) {
      bar.append(svg("rect", {x: scale(ci[0]), y: 3, width: Math.max(0.5, scale(ci[1]) - scale(ci[0])),
        height: 6, rx: 2, fill: color, "fill-opacity": 0.3}));
    }
    if (n) bar.append(svg("rect", {x: scale(mean) - 0.75, y: 1, width: 1.5, height: 10, fill: color}));
  });
}

// ---- pending and overdue trials ----------------------------------------------------------

function trackPending(event) {
  switch (event.event) {
    case "trial_dispatched":
      view.firstSeen.set(event.trial, {at: Date.now(), exact: true});
      break;
    case "trial_failed":
      if (String(event.reason).startsWith("timed out")) view.overdue += 1;
      view.firstSeen.delete(event.trial);
      break;
    case "trial_observed":
    case "trial_abandoned":
      view.firstSeen.delete(event.trial);
      break;
  }
}

/** Align the pending trials known here with /status (some may predate the page, some events may be lost). */
function syncPending(status) {
  const pending = new Set(status.pending_trials);
  for (const trial of pending) {
    if (!view.firstSeen.has(trial)) view.firstSeen.set(trial, {at: view.openedAt, exact: false});
  }
  for (const trial of view.firstSeen.keys()) {
    if (trial < status.dispatched && !pending.has(trial)) view.firstSeen.delete(trial);
  }
}

function showOldestPending() {
  let oldest = null;
  for (const seen of view.firstSeen.values()) if (!oldest || seen.at < oldest.at) oldest = seen;
  $("oldest").textContent = oldest
    ? `oldest ${oldest.exact ? "" : "≥ "}${formatAge((Date.now() - oldest.at) / 1000)}` : "none pending";
}

// ---- the chart ---------------------------------------------------------------------------

function observe(event) {
  const chart = view.charts[event.bandit];
  if (!chart) return;
  const last = chart.points.at(-1);
  const cum = last.cum.slice();
  cum[event.arm] += event.reward;
  chart.points.push({x: last.x + 1, cum});
  if (chart.points.length > MAX_CHART_POINTS) {
    chart.points = chart.points.filter((p, i, all) => i % 2 === 0 || i === all.length - 1);
  }
  view.dirtyCharts.add(event.bandit);
  scheduleFrame();
}

/** Round tick values covering [low, high], about `count` of them. */
function ticks(low, high, count, integer = false) {
  const raw = (high - low) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  if (integer) step = Math.max(1, Math.round(step));
  const out = [Math.floor(low / step) * step];
  while (out.at(-1) < high - step * 1e-9) out.push(Number((out.at(-1) + step).toPrecision(12)));
  return out;
}

function drawChart(b) {
  const chart = view.charts[b];
  const panel = view.panels[b];
  if (!chart || !panel) return;
  const W = 560, H = 250, left = 52, right = 14, top = 12, bottom = 34;
  const points = chart.points;
  const last = points.at(-1);
  let yLow = 0, yHigh = 0;
  for (const p of points) for (const v of p.cum) { yLow = Math.min(yLow, v); yHigh = Math.max(yHigh, v); }
  if (yHigh - yLow < 1e-9) yHigh = yLow + 1;
  const xTicks = ticks(0, Math.max(last.x, 1), 6, true);
  const yTicks = ticks(yLow, yHigh, 5);
  const xMax = xTicks.at(-1), yMin = yTicks[0], yMax = yTicks.at(-1);
  const x = (v) => left + (v / xMax) * (W - left - right);
  const y = (v) => H - bottom - ((v - yMin) / (yMax - yMin)) * (H - top - bottom);
  const nodes = [];
  for (const t of yTicks) {
    nodes.push(svg("line", {class: "grid", x1: left, x2: W - right, y1: y(t), y2: y(t)}));
    const label = svg("text", {class: "tick", x: left - 8, y: y(t) + 4, "text-anchor": "end"});
    label.textContent = String(t);
    nodes.push(label);
  }
  for (const t of xTicks) {
    const label = svg("text", {class: "tick", x: x(t), y: H - bottom + 18, "text-anchor": "middle"});
    label.textContent = t;
    nodes.push(label);
  }
  nodes.push(svg("line", {class: "axis", x1: left, x2: W - right, y1: y(yMin), y2: y(yMin)}));
  const arms = panel.rows.length;
  for (let arm = 0; arm < arms; arm++) {
    const color = ARM_COLORS[arm % ARM_COLORS.length];
    const d = points.map((p, i) => `${i ? "L" : "M"}${x(p.x).toFixed(1)},${y(p.cum[arm]).toFixed(1)}`).join("");
    nodes.push(svg("path", {class: "line", stroke: color, d, "data-testid": "chart-line"}));
    nodes.push(svg("circle", {cx: x(last.x), cy: y(last.cum[arm]), r: 3, fill: color}));
  }
  panel.chart.replaceChildren(...nodes);
  panel.chart.dataset.observed = last.x;
  panel.chart.dataset.from = points[0].x;
  panel.chart.dataset.points = points.length;
  const names = view.status.bandits[b].arm_names;
  panel.chart.setAttribute("aria-label", `${panel.title}: cumulative reward after ${last.x} rewards observed: `
    + names.map((name, arm) => `${name} ${formatNumber(last.cum[arm], 2)}`).join(", "));
}

// ---- latest events -----------------------------------------------------------------------

function describe(event) {
  const arm = () => armName(event.bandit, event.arm);
  const bandit = () => (view.status?.bandits.length > 1 ? `${view.status.bandits[event.bandit].label}: ` : "");
  const answer = (b, rec) => recommendationText(rec, view.status?.bandits[b]?.arm_names ?? []);
  switch (event.event) {
    case "trial_dispatched": return `trial ${event.trial} → ${arm()} (pull ${event.pull + 1})`;
    case "trial_observed": return `trial ${event.trial} · ${arm()} · reward ${formatNumber(event.reward)}`;
    case "trial_failed":
    case "trial_abandoned": return `trial ${event.trial} · ${arm()} · ${event.reason}`;
    case "report_late": return `trial ${event.trial} · ${arm()} · late reward ${formatNumber(event.reward)}, not counted`;
    case "arm_eliminated": return `${arm()} eliminated after ${event.trials} trials`;
    case "arm_retired": return `${arm()} retired after ${event.trials} trials · ${retirementReason(event.reason)}`;
    case "recommendation_changed": return `${bandit()}recommendation ${answer(event.bandit, event.recommendation)}`;
    case "bandit_confident": return `${bandit()}confident in ${answer(event.bandit, event.recommendation)} after ${event.trials} trials`;
    case "checkpoint": return `checkpoint at ${event.trials} trials`;
    case "experiment_stopped": return `stopped (${event.reason}) after ${event.trials} trials`;
    default: // a kind this page does not know yet: its fields
      return JSON.stringify(Object.fromEntries(Object.entries(event).filter(([key]) => key !== "id" && key !== "event")));
  }
}

function flushEvents() {
  if (!view.queuedEvents.length) return;
  const list = $("events");
  const items = view.queuedEvents.map(({event, time}) => el("li", {class: `event kind-${event.event}`, "data-kind": event.event},
    el("time", {}, time), el("span", {class: "kind"}, event.event.replaceAll("_", " ")),
    el("span", {class: "what"}, describe(event))));
  view.queuedEvents = [];
  list.prepend(...items.reverse());
  while (list.children.length > MAX_EVENTS_SHOWN) list.lastElementChild.remove();
  $("no-events").hidden = true;
}

function scheduleFrame() {
  if (view.frame) return;
  view.frame = requestAnimationFrame(() => {
    view.frame = 0;
    flushEvents();
    for (const b of view.dirtyCharts) drawChart(b);
    view.dirtyCharts.clear();
  });
}

start();
