/*
 * armlab dashboard: the list of experiments of `armlab server` (plain JavaScript, after shared.js).
 *
 * The admin token lists every experiment (GET /experiments).  A client token belongs to one
 * experiment: GET /experiments answers 403 to it, so the page asks for that experiment's name
 * (or takes it from ?experiment=NAME) and shows its summary (GET /experiments/NAME).  Each
 * row links to the experiment's own page, /experiments/NAME/, which reuses the token.
 */
"use strict";

const page = {
  token: storedToken(),
  named: new URLSearchParams(location.search).get("experiment"), // ?experiment=NAME, or null
};

async function startList() {
  $("login-form").addEventListener("submit", signInToList);
  $("name-form").addEventListener("submit", showNamed);
  $("sign-out").addEventListener("click", () => {
    storeToken(null);
    page.token = null;
    showOnly("login", "");
  });
  if (!page.token) {
    showOnly("login", "");
    return;
  }
  const message = await showExperiments();
  if (message) showOnly("login", message);
}

async function signInToList(event) {
  event.preventDefault();
  const input = $("token");
  const token = input.value.trim();
  if (!token) return;
  const button = $("login-form").querySelector("button");
  button.disabled = true;
  page.token = token;
  const message = await showExperiments();
  button.disabled = false;
  if (message) {
    page.token = null;
    $("login-error").textContent = message;
    input.focus();
    return;
  }
  storeToken(token);
  input.value = "";
}

/**
 * Show what the token may read: every experiment (admin), or the client token's own (named by
 * ?experiment= or asked for).  Returns why the token cannot sign in, or "" when it can.
 */
async function showExperiments() {
  try {
    const answer = await getJson("experiments", page.token);
    showList(answer.experiments, "Experiments");
    return "";
  } catch (error) {
    if (error instanceof Unauthorized) return "The server rejected this token.";
    if (!(error instanceof Forbidden)) return `Cannot reach the server: ${error.message}`;
  }
  // a client token: one experiment's
  if (page.named) {
    const problem = await showOne(page.named);
    if (!problem) return "";
    showOnly("ask-name", "");
    $("name-error").textContent = problem;
    return "";
  }
  showOnly("ask-name", "");
  $("experiment-name").focus();
  return "";
}

async function showNamed(event) {
  event.preventDefault();
  const name = $("experiment-name").value.trim();
  if (!name) return;
  $("name-error").textContent = "";
  const problem = await showOne(name);
  if (problem) $("name-error").textContent = problem;
}

/** Show experiment `name`'s summary; returns why it cannot be shown, or "". */
async function showOne(name) {
  try {
    showList([await getJson(`experiments/${encodeURIComponent(name)}`, page.token)], "Your experiment");
    return "";
  } catch (error) {
    if (error instanceof Unauthorized) {
      storeToken(null);
      page.token = null;
      showOnly("login", "The server rejected this token.");
      return "";
    }
    if (error instanceof Forbidden) return `This token does not belong to the experiment “${name}”.`;
    if (error.status === 404) return `There is no experiment named “${name}”.`;
    return `Cannot reach the server: ${error.message}`;
  }
}

function showOnly(section, message) {
  for (const id of ["login", "ask-name", "list"]) $(id).hidden = id !== section;
  $("sign-out").hidden = section === "login";
  if (section === "login") {
    $("login-error").textContent = message;
    $("token").focus();
  }
}

function showList(experiments, title) {
  storeToken(page.token);
  $("list-title").textContent = title;
  $("rows").replaceChildren(...experiments.map(experimentRow));
  $("no-experiments").hidden = experiments.length > 0;
  showOnly("list", "");
}

function experimentRow(summary) {
  const link = el("a", {href: apiUrl(`experiments/${encodeURIComponent(summary.name)}/`).href,
    "data-testid": "experiment-link"}, summary.name);
  const used = el("progress", {max: 1, value: summary.budget ? summary.trials / summary.budget : 0,
    "aria-hidden": "true"});
  return el("tr", {"data-experiment": summary.name},
    el("th", {scope: "row"}, link),
    el("td", {"data-testid": "experiment-state"},
      el("span", {class: `state state-${summary.state}`}, STATE_NAMES[summary.state] ?? summary.state)),
    el("td", {"data-testid": "experiment-budget"}, `${summary.trials} / ${summary.budget}`, used),
    el("td", {"data-testid": "experiment-recommendation"}, answerText(summary.recommendation)),
    el("td", {"data-testid": "experiment-activity"}, activityText(summary.last_activity)));
}

/** A summary's recommendation (arm indices, as /status gives them; one entry per bandit when several). */
function answerText(recommendation) {
  if (recommendation === null || recommendation === undefined) return "none yet";
  if (Array.isArray(recommendation) && recommendation.some(Array.isArray)) return JSON.stringify(recommendation);
  return recommendationText(recommendation, []);
}

function activityText(iso) {
  if (!iso) return "—";
  const when = new Date(iso);
  return Number.isNaN(when.getTime()) ? iso : when.toLocaleString();
}

startList();
