/*
 * armlab dashboard: what the experiment page (app.js) and the list page (experiments.js) share.
 *
 * Where the API is: the page's own folder (an experiment's page at /experiments/NAME/ of
 * `armlab server`, the list page at /), except for the pages in a folder named "dashboard"
 * outside /experiments/ (`armlab serve` serves its page at /dashboard/, its routes at /),
 * whose API is one folder up.  Every URL is relative, so a service behind a path prefix works.
 *
 * The bearer token is kept in this tab's sessionStorage (never in a URL) and sent in the
 * Authorization header; text from the service is only ever set as text (no innerHTML).
 */
"use strict";

const TOKEN_KEY = "armlab.token";
const STATE_NAMES = {
  running: "running", in_flight_full: "in-flight slots full", budget_spent: "budget spent",
  stopped: "stopped", finished: "finished",
};

class Unauthorized extends Error {}

/** A valid token that may not read this (a client token of another experiment, or on an admin route). */
class Forbidden extends Error {}

const $ = (id) => document.getElementById(id);

/** The folder the service's routes are relative to (see the header). */
function apiBase() {
  const folder = new URL(".", document.baseURI);
  const parts = folder.pathname.split("/").filter(Boolean);
  const servePage = parts.at(-1) === "dashboard" && parts.at(-2) !== "experiments";
  return servePage ? new URL("..", folder) : folder;
}

/** The absolute URL of the service's route `path` (relative, e.g. "status", "experiments/x"). */
function apiUrl(path) {
  return new URL(path, apiBase());
}

function storedToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

function storeToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function authHeaders(token) {
  return token ? {Authorization: `Bearer ${token}`} : {};
}

/** GET the JSON of route `path` with `token`; Unauthorized on 401, Forbidden on 403, Error otherwise. */
async function getJson(path, token, signal) {
  const response = await fetch(apiUrl(path), {headers: authHeaders(token), cache: "no-store", signal});
  if (response.status === 401) throw new Unauthorized("the service rejected the token");
  if (response.status === 403) throw new Forbidden("this token may not read this");
  if (!response.ok) {
    let detail = "";
    try { detail = (await response.json()).detail; } catch { /* not JSON */ }
    const error = new Error(`/${path} answered ${response.status}${typeof detail === "string" && detail ? `: ${detail}` : ""}`);
    error.status = response.status;
    throw error;
  }
  return response.json();
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** The recommended arms of one bandit as indices ([] when there is none yet). */
function recommended(recommendation) {
  if (recommendation === null || recommendation === undefined) return [];
  return Array.isArray(recommendation) ? recommendation : [recommendation];
}

function recommendationText(recommendation, names) {
  const arms = recommended(recommendation);
  return arms.length ? arms.map((arm) => names[arm] ?? `arm ${arm}`).join(", ") : "none yet";
}
