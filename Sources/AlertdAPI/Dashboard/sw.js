// The alertd dashboard's service worker, served at /sw.js so that its scope is the whole
// origin. Plain JavaScript, no build step, no library (docs/push.md).
//
// - Installable app: keeps a copy of the dashboard's own files (the page, its script, style,
//   manifest and icons) and answers them from the network first, from the copy only when
//   alertd cannot be reached, so the installed app opens and says it is reconnecting. Nothing
//   else goes through it: the API (/v1/…) is never answered from a cache.
// - Web Push (SPEC §11): an `alert.displayed` push shows the alert as a notification, its
//   non-destructive buttons as actions; a tap on an action answers through the push's
//   `answer_url`; a tap on the notification opens the dashboard on the alert's client.
//   `alert.decided` takes the question away.
//
// Every push shows a notification. Browsers require it of a subscription made with
// `userVisibleOnly` (all of them are): Safari ends a site's subscriptions after its third push
// that showed nothing, Firefox after a quota of them, and Chromium shows a notification of its
// own ("This site has been updated in the background") once a small allowance is spent. So
// `alert.decided` does not close the question and show nothing: it replaces the question, in
// place and quietly, with what became of it; a dashboard on screen then closes such notes at
// once, and the next alert's push closes them too.
"use strict";

const SHELL_CACHE = "alertd-shell-1";
/** The dashboard's own files: what the installed app needs to open while alertd is down. */
const SHELL = [
  "/",
  "/ui/dashboard.css",
  "/ui/dashboard.js",
  "/ui/icon.svg",
  "/ui/manifest.webmanifest",
  "/ui/icon-192.png",
  "/ui/icon-512.png",
  "/ui/icon-maskable-512.png",
  "/ui/apple-touch-icon.png",
];
const CLIENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** SPEC §2: a priority of 50 or more is urgent; its notification stays until acted on. */
const URGENT = 50;
/** How long an answer may take before the notification says it was not sent (ms). */
const ANSWER_TIMEOUT = 15000;

// MARK: - The installable app

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(SHELL_CACHE)
      .then((cache) => cache.addAll(SHELL.map((path) => new Request(path, { cache: "no-cache" }))))
      // The copy is for opening while alertd is down: its failure (alertd restarting) must not
      // keep notifications from working. The next load through fetch() fills it.
      .catch(() => undefined)
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((name) => name.startsWith("alertd-") && name !== SHELL_CACHE).map((name) => caches.delete(name))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  // Not the dashboard's own files (the API above all): the browser fetches it as if there were no worker.
  if (url.origin !== self.location.origin || !SHELL.includes(url.pathname)) return;
  event.respondWith(shellFile(request, url.pathname, event));
});

/** The network's answer (an upgrade shows at once), kept as the copy; the copy only when the network fails. */
async function shellFile(request, path, event) {
  try {
    const response = await fetch(request);
    if (response.status === 200 && response.type === "basic") {
      const copy = response.clone();
      event.waitUntil(caches.open(SHELL_CACHE).then((cache) => cache.put(path, copy)).catch(() => undefined));
    }
    return response;
  } catch (error) {
    const cache = await caches.open(SHELL_CACHE);
    const copy = await cache.match(path);
    if (copy) return copy;
    throw error;
  }
}

// MARK: - Pushes

self.addEventListener("push", (event) => {
  event.waitUntil(received(event.data));
});

/** What a push shows. Never rejects: a push must end with a notification shown. */
async function received(data) {
  let message = null;
  try {
    message = data ? data.json() : null;
  } catch (error) {
    message = null;
  }
  try {
    if (message && message.type === "alert.displayed" && isAlert(message.alert)) return await showQuestion(message);
    if (message && message.type === "alert.decided" && isAlert(message.alert)) return await showDecided(message.alert);
  } catch (error) {
    // Fall through: something is still shown.
  }
  return self.registration.showNotification("alertd", {
    body: "Something changed: open the dashboard to see it.",
    tag: "alertd",
    silent: true,
    icon: "/ui/icon-192.png",
    data: { settled: true },
  });
}

function isAlert(alert) {
  return alert !== null && typeof alert === "object" && typeof alert.id === "string" && typeof alert.client === "string";
}

const text = (value) => (typeof value === "string" ? value : "");

/** The most actions this browser shows on a notification (Safari: none, a tap opens the dashboard). */
function maxActions() {
  return (typeof Notification !== "undefined" && Number(Notification.maxActions)) || 0;
}

/**
 * `answer_url` resolved against this worker's origin: only a link to this alertd is used (an
 * answer is never sent elsewhere), and only until `answer_expires_at`. Else null.
 */
function answerLink(message) {
  if (typeof message.answer_url !== "string") return null;
  let url;
  try {
    url = new URL(message.answer_url, self.location.origin);
  } catch (error) {
    return null;
  }
  if (url.origin !== self.location.origin || !url.pathname.startsWith("/v1/answers/")) return null;
  const expires = Date.parse(text(message.answer_expires_at));
  if (!Number.isNaN(expires) && expires <= Date.now()) return null;
  return url.href;
}

/**
 * The buttons offered as notification actions: never a destructive one (a tap on a lock screen
 * is no confirmation; the dashboard asks first), the cancel button last, as many as fit.
 */
function actionButtons(buttons) {
  const safe = buttons.filter((button) => button.style !== "destructive");
  return [...safe.filter((b) => b.style !== "cancel"), ...safe.filter((b) => b.style === "cancel")].slice(0, maxActions());
}

function buttonsOf(alert) {
  if (!Array.isArray(alert.buttons)) return [];
  return alert.buttons.map((button, index) => ({ title: text(button && button.title), style: text(button && button.style) || "default", index }));
}

async function showQuestion(message) {
  const alert = message.alert;
  await closeSettled();
  const url = answerLink(message);
  const buttons = buttonsOf(alert);
  const offered = url ? actionButtons(buttons) : [];
  const lines = [];
  // Escalated (SPEC §12): nobody answered on its own client; `client` is where it is asked now.
  if (text(alert.escalated_from)) lines.push(`Escalated from ${alert.escalated_from}: nobody answered there.`);
  if (text(alert.message)) lines.push(alert.message);
  const quorum = Number(alert.quorum) || 1;
  if (quorum > 1) lines.push(`${Array.isArray(alert.votes) ? alert.votes.length : 0} of ${quorum} approvals`);
  if (buttons.length > offered.length) lines.push("Tap to see every choice on the dashboard.");
  const title = text(alert.title) || "alertd";
  const data = {
    alertId: alert.id,
    client: alert.client,
    title,
    body: lines.join("\n"),
    buttons,
    answerURL: url,
    priority: Number(alert.priority) || 0,
    reminder: message.reminder === true,
    shownAt: Date.now(),
  };
  return showAsked(data, "");
}

/** The question, with its actions (again, after an answer that could not be sent: `note` says so). */
function showAsked(data, note) {
  const offered = data.answerURL ? actionButtons(data.buttons) : [];
  return self.registration.showNotification((data.reminder ? "Reminder: " : "") + data.title, {
    body: note ? `${note}\n${data.body}` : data.body,
    // One notification per alert: a newer push about it (a reminder) replaces it.
    tag: data.alertId,
    renotify: !note,
    silent: false,
    requireInteraction: data.priority >= URGENT,
    icon: "/ui/icon-192.png",
    timestamp: data.shownAt,
    actions: offered.map((button) => ({ action: "button:" + button.index, title: button.title })),
    data: { ...data, state: "asking" },
  });
}

/**
 * A note in place of the question (same tag, no actions, no sound): what became of it.
 * `settled` notes (the alert is decided) are closed by a dashboard on screen and by the next
 * question; `answeredHere` marks an answer sent from this notification; `decided` is the state
 * an `alert.decided` push said.
 */
function showNote(data, body, settled, answeredHere = false, decided = null) {
  return self.registration.showNotification(data.title || "alertd", {
    body,
    tag: data.alertId,
    renotify: false,
    silent: true,
    requireInteraction: false,
    icon: "/ui/icon-192.png",
    actions: [],
    data: { alertId: data.alertId, client: data.client, title: data.title, body, state: "note", settled, answeredHere, decided },
  });
}

const OUTCOMES = {
  answered: "Answered: nothing left to do.",
  dismissed: "Dismissed: it is no longer asked.",
  expired: "Expired before anyone answered.",
  withdrawn: "Withdrawn by the program that asked.",
};

async function showDecided(alert) {
  const [shown] = await self.registration.getNotifications({ tag: alert.id });
  const before = shown ? shown.data || {} : {};
  const data = { alertId: alert.id, client: alert.client, title: before.title || `An alert for ${alert.client}` };
  // An answer sent from this notification already says what it was.
  const body = before.answeredHere ? before.body : OUTCOMES[alert.state] || `It is ${text(alert.state) || "decided"}.`;
  await showNote(data, body, true, !!before.answeredHere, text(alert.state));
  await tellWindows({ type: "alertd.settled", alertId: alert.id });
}

/** Closes the notes about alerts that are decided: a new question makes them old news. */
async function closeSettled() {
  for (const notification of await self.registration.getNotifications()) {
    if (notification.data && notification.data.settled) notification.close();
  }
}

async function tellWindows(message) {
  for (const client of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) client.postMessage(message);
}

// MARK: - Taps

self.addEventListener("notificationclick", (event) => {
  event.waitUntil(tapped(event.notification, event.action));
});

/**
 * A page of this origin may act on a notification as a tap on it would (the browser tests do:
 * headless Chromium has no notification to tap): `action` names an action, "" the notification
 * itself. It gains nothing it lacked: any script of this origin can read a notification's data
 * (registration.getNotifications()) and post to its link. The browser still opens or focuses a
 * window only for a real tap.
 */
self.addEventListener("message", (event) => {
  const message = event.data || {};
  if (message.type !== "alertd.tap" || typeof message.tag !== "string" || typeof message.action !== "string") return;
  event.waitUntil(
    (async () => {
      const [notification] = await self.registration.getNotifications({ tag: message.tag });
      const outcome = notification ? await tapped(notification, message.action) : "no notification";
      if (event.source) event.source.postMessage({ type: "alertd.tapped", tag: message.tag, outcome });
    })(),
  );
});

/**
 * A tap: on an action, the answer (the notification says how it went); on the notification
 * itself, the dashboard on the alert's client. Resolves to what happened, in a few words.
 */
async function tapped(notification, action) {
  const data = notification.data || {};
  const match = /^button:(\d+)$/.exec(action || "");
  if (match && data.state === "asking" && data.answerURL) {
    const button = (data.buttons || []).find((b) => b.index === Number(match[1]));
    // Never a destructive button from a notification, whatever asks for it.
    if (button && button.style !== "destructive") return answer(data, button);
  }
  notification.close();
  return openDashboard(data.client);
}

/** POSTs the choice to the push's answer link, then shows what came of it in place of the question. */
async function answer(data, button) {
  // At once, so that a second tap has nothing to press: the question makes way for the sending.
  await showNote(data, `Sending “${button.title}”…`, false);
  let response;
  let body = null;
  try {
    response = await fetch(data.answerURL, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ button_index: button.index }),
      credentials: "omit",
      cache: "no-store",
      referrerPolicy: "no-referrer",
      signal: AbortSignal.timeout(ANSWER_TIMEOUT),
    });
    body = await response.json().catch(() => null);
  } catch (error) {
    // Not sent (no network, alertd restarting): the question again, so that a tap can try again.
    // The link is used up only by an answer alertd received.
    await showAsked(data, `“${button.title}” was not sent: alertd could not be reached. Try again.`);
    return "not sent";
  }
  if (response.ok && body) {
    const result = body.result;
    let said;
    if (result) said = `You answered “${result.button}”.`;
    else if ((body.quorum || 1) > 1) said = `You voted “${button.title}”: ${(body.votes || []).length} of ${body.quorum} approvals.`;
    else said = `You chose “${button.title}”.`;
    // Decided (not a vote short of the quorum): the note is settled, as alert.decided would make it.
    await showNote(data, said, !!result, true);
    return "answered";
  }
  const decided = body && body.alert && body.alert.result;
  let why;
  if (decided) {
    const who = decided.decided_by ? ` by ${decided.decided_by}` : "";
    why = decided.outcome === "answered" ? `Already answered “${decided.button}”${who}.` : `Too late: it was ${decided.outcome}.`;
  } else {
    why = `Not answered: ${(body && body.detail) || `alertd answered ${response.status}`}. Tap to open the dashboard.`;
  }
  await showNote(data, `“${button.title}” was not chosen. ${why}`, !!decided);
  return "refused";
}

/**
 * Shows the client on a dashboard window (it follows the message) and focuses it, or opens one
 * on it. Resolves to "shown", "opened", or "not opened" when the browser refused to open a
 * window (it allows that only in answer to a real tap).
 */
async function openDashboard(client) {
  const valid = typeof client === "string" && CLIENT_ID.test(client);
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const dashboards = windows.filter((w) => new URL(w.url).pathname === "/");
  if (dashboards.length > 0) {
    const target = dashboards.find((w) => w.focused) || dashboards[0];
    if (valid) target.postMessage({ type: "alertd.open", client });
    await target.focus().catch(() => undefined);
    return "shown";
  }
  const path = valid ? "/#/clients/" + encodeURIComponent(client) : "/";
  return self.clients.openWindow(new URL(path, self.location.origin).href).then(
    () => "opened",
    () => "not opened",
  );
}
