// The alertd operator dashboard. Plain JavaScript, no build step, no library.
//
// Everything that comes from an alert (title, message, button titles, metadata,
// token and client names) reaches the page through textContent, append(string)
// or setAttribute on attributes that run nothing: it is never parsed as HTML. The
// Content-Security-Policy (no inline script, no other origin) is the second wall.
"use strict";

(() => {
  const TOKEN_KEY = "alertd.token";
  /** Seconds a long-poll of `current` may park. */
  const WAIT_SECONDS = 25;
  /** Reconnect delays (ms), the last one repeating; each drawn from 75–100 % of its value. */
  const BACKOFF = [500, 1000, 2000, 4000];
  /** How often lists that have no long-poll (clients, the queue) are refreshed (ms). */
  const CLIENTS_REFRESH = 2000;
  const QUEUE_REFRESH = 3000;
  const HISTORY_LIMIT = 200;
  const HISTORY_ROWS = 25;
  const DAY = 24 * 3600 * 1000;
  const CLIENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

  const $ = (id) => document.getElementById(id);

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY),
    /** The answer of /v1/whoami: {name, roles, clients, auth}. */
    me: null,
    /** Bumped whenever the view changes or the token goes: older loops stop. */
    generation: 0,
    controller: null,
    /** The alert the client view shows (null: none; undefined: not known yet). */
    shown: undefined,
    /** The client's pending alerts in display order, from the last refresh (null: not known yet). */
    pending: null,
    /** A destructive button pressed once, waiting for its confirmation: {alertId, button, client}. */
    confirming: null,
    /** The confirmation that was open when its alert left the display, until that is reported. */
    unconfirmed: null,
    busy: false,
    /** Server time minus browser time (ms), when they differ by more than the Date header's resolution. */
    skew: 0,
    countdownTimer: 0,
  };

  // MARK: - Building DOM without HTML

  /** Children worth appending: strings become text nodes, never markup. */
  const present = (children) => children.flat().filter((child) => child !== null && child !== undefined && child !== false);

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    setAttributes(node, attributes);
    node.append(...present(children));
    return node;
  }

  function svg(tag, attributes, ...children) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    setAttributes(node, attributes);
    node.append(...present(children));
    return node;
  }

  function replaceChildren(node, ...children) {
    node.replaceChildren(...present(children));
  }

  function setAttributes(node, attributes) {
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "class") node.setAttribute("class", value);
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
  }

  function show(id, visible) {
    $(id).hidden = !visible;
  }

  // MARK: - Talking to alertd

  class HTTPError extends Error {
    constructor(status, problem) {
      super((problem && problem.detail) || `HTTP ${status}`);
      this.status = status;
      this.problem = problem;
      this.retryAfter = 0;
    }
  }
  /** The token is missing or refused: the prompt is back. */
  class Unauthorized extends Error {}

  /**
   * One API request. The token travels only in the Authorization header.
   * Resolves to the parsed JSON body, or null for 204; rejects with HTTPError,
   * Unauthorized, a TypeError (network) or an AbortError.
   */
  async function api(path, options = {}) {
    const headers = { Accept: "application/json" };
    const token = options.token !== undefined ? options.token : state.token;
    if (token) headers.Authorization = "Bearer " + token;
    let body;
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(options.body);
    }
    const response = await fetch(path, {
      method: options.method || "GET",
      headers,
      body,
      signal: options.signal,
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    noteServerClock(response);
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (error) {
        data = null;
      }
    }
    if (response.status === 401) {
      if (options.token === undefined) signedOut("alertd refused the token: enter one again.");
      throw new Unauthorized((data && data.detail) || "unauthorized");
    }
    if (!response.ok) {
      const error = new HTTPError(response.status, data);
      error.retryAfter = Number(response.headers.get("Retry-After")) || 0;
      throw error;
    }
    return response.status === 204 ? null : data;
  }

  function clientPath(client, rest) {
    return "/v1/clients/" + encodeURIComponent(client) + "/alerts" + (rest || "");
  }

  /** The Date header has a resolution of one second: correct only clocks that are clearly off. */
  function noteServerClock(response) {
    const date = Date.parse(response.headers.get("Date") || "");
    if (Number.isNaN(date)) return;
    const skew = date + 500 - Date.now();
    state.skew = Math.abs(skew) > 2000 ? skew : 0;
  }

  const serverNow = () => Date.now() + state.skew;

  const isAbort = (error) => error && error.name === "AbortError";
  const isNetwork = (error) =>
    error instanceof TypeError || (error instanceof HTTPError && [429, 502, 503, 504].includes(error.status));

  /** Waits `ms`, or less when the view changes meanwhile. */
  function sleep(ms, generation) {
    return new Promise((resolve) => {
      const signal = state.controller.signal;
      if (generation !== state.generation || signal.aborted) {
        resolve();
        return;
      }
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
    });
  }

  // MARK: - Connection banner and backoff

  let failures = 0;

  function backoffDelay(error) {
    const base = BACKOFF[Math.min(failures, BACKOFF.length - 1)];
    failures += 1;
    const retryAfter = error instanceof HTTPError ? error.retryAfter * 1000 : 0;
    return Math.max(base * (0.75 + Math.random() * 0.25), Math.min(retryAfter, 10000));
  }

  function connectionLost(error, delay) {
    const banner = $("banner");
    const reason = error instanceof HTTPError ? `alertd answered ${error.status}` : "connection to alertd lost";
    banner.textContent = `Reconnecting… (${reason}; next try in ${Math.max(1, Math.round(delay / 1000))} s)`;
    banner.className = "banner warning";
    banner.hidden = false;
  }

  function connected() {
    if (failures === 0) return;
    failures = 0;
    const banner = $("banner");
    banner.textContent = "Connected again.";
    banner.className = "banner ok";
    banner.hidden = false;
    setTimeout(() => {
      if (failures === 0) banner.hidden = true;
    }, 2000);
  }

  // MARK: - Views and routing

  function route() {
    const match = /^#\/clients\/([^/?#]+)\/?$/.exec(location.hash);
    if (match) {
      let client = "";
      try {
        client = decodeURIComponent(match[1]);
      } catch (error) {
        client = match[1];
      }
      return { view: "client", client };
    }
    return { view: "clients" };
  }

  /** Stops every loop of the previous view. */
  function stopLoops() {
    state.generation += 1;
    if (state.controller) state.controller.abort();
    state.controller = new AbortController();
    clearInterval(state.countdownTimer);
    state.countdownTimer = 0;
    return state.generation;
  }

  function showOnly(view) {
    for (const id of ["loading", "login-view", "clients-view", "client-view"]) show(id, id === view);
  }

  function render() {
    if (!state.me) return;
    const generation = stopLoops();
    const where = route();
    renderIdentity();
    renderDevice();
    if (where.view === "client") {
      $("crumb-client").textContent = where.client;
      show("crumb-client", true);
      document.title = `${where.client} · alertd`;
      showOnly("client-view");
      followClient(where.client, generation);
    } else {
      show("crumb-client", false);
      document.title = "Clients · alertd";
      showOnly("clients-view");
      followClients(generation);
    }
  }

  function renderIdentity() {
    const me = state.me;
    const identity = $("identity");
    if (!me.auth) {
      identity.textContent = "open: no tokens configured";
      show("sign-out", false);
    } else {
      identity.textContent = `${me.name} · ${me.roles.join(", ")}`;
      identity.title = `clients: ${me.clients.join(", ")}`;
      show("sign-out", true);
    }
  }

  const canAnswer = () => state.me && (state.me.roles.includes("answer") || state.me.roles.includes("admin"));

  // MARK: - Votes (SPEC §10: an alert that needs several people)

  /** Who this page votes as: its token's name (from /v1/whoami), or null without tokens (one anonymous decider). */
  const decider = () => (state.me && state.me.auth ? state.me.name : null);

  const voteCount = (alert) => (alert && alert.votes ? alert.votes.length : 0);

  /** This page's vote on the displayed alert, once it voted (its buttons are then disabled); else null. */
  function myVote(alert) {
    if (!alert || alert.state !== "displayed" || !(alert.quorum > 1) || !state.me) return null;
    return alert.votes.find((vote) => vote.decided_by === decider()) || null;
  }

  /**
   * "1 of 2 approvals — alice: Deploy", as alertctl says it; null for quorum 1. Votes for two
   * buttons count apart ("Deploy 1 of 2, Roll back 1 of 2 — …"); a cancel-style vote needs no
   * count (it answers at once) and is only named.
   */
  function tally(alert) {
    if (!alert || !(alert.quorum > 1)) return null;
    const votes = alert.votes || [];
    const isCancel = (vote) => (alert.buttons[vote.button_index] || {}).style === "cancel";
    const counted = [];
    for (const vote of votes) if (!isCancel(vote) && !counted.includes(vote.button)) counted.push(vote.button);
    const count = (button) => votes.filter((vote) => vote.button === button).length;
    let head;
    if (counted.length === 0) head = `0 of ${alert.quorum} approvals`;
    else if (counted.length === 1) head = `${count(counted[0])} of ${alert.quorum} approvals`;
    else head = counted.map((button) => `${button} ${count(button)} of ${alert.quorum}`).join(", ");
    if (votes.length === 0) return head;
    return head + " — " + votes.map((vote) => `${vote.decided_by === null ? "anonymous" : vote.decided_by}: ${vote.button}`).join(", ");
  }

  /** "alice", "alice and bob", "alice, bob and carol". */
  function names(list) {
    return list.length > 1 ? list.slice(0, -1).join(", ") + " and " + list[list.length - 1] : list[0] || "";
  }

  /** Who decided a terminal alert: every decider who chose its button when it needed several, else the one who decided. */
  function deciders(alert) {
    const result = alert.result || {};
    const voters = (result.votes || []).filter((vote) => vote.button === result.button && vote.decided_by !== null);
    if (alert.quorum > 1 && voters.length > 1) return names(voters.map((vote) => vote.decided_by));
    return result.decided_by || null;
  }

  /** What "You voted" says under the buttons: the vote and how many more the button needs. */
  function votedText(alert, vote) {
    const more = Math.max(0, alert.quorum - alert.votes.filter((other) => other.button === vote.button).length);
    return `You voted “${vote.button}”; waiting for ${more} more. A vote is not changed.`;
  }

  /**
   * The alert shown got a vote (here or elsewhere): its votes line, its buttons and the
   * "You voted" note change in place, so focus and an open confirmation stay where they are.
   */
  function renderVotes(alert) {
    const line = $("votes");
    if (line) line.textContent = tally(alert) || "";
    const comments = $("vote-comments");
    if (comments) comments.replaceWith(voteWordsElement(alert));
    // A decider who voted writes nothing more on it.
    const home = $("answer-form-home");
    if (home && myVote(alert)) home.hidden = true;
    const mine = myVote(alert);
    const note = $("voted-note");
    if (note) {
      note.hidden = !mine;
      note.textContent = mine ? votedText(alert, mine) : "";
    }
    for (const b of document.querySelectorAll("#stage-content button.action")) b.disabled = state.busy || !canAnswer() || !!mine;
    // A vote of this token made in another tab: a confirmation left open here could only be refused.
    if (mine && state.confirming) keep(false);
  }

  // MARK: - Sign in

  async function start() {
    showOnly("loading");
    for (;;) {
      try {
        state.me = await api("/v1/whoami", { token: state.token || null });
        connected();
        render();
        refreshDevice();
        return;
      } catch (error) {
        if (error instanceof Unauthorized) {
          signedOut(state.token ? "alertd refused the stored token: enter one again." : "");
          return;
        }
        const delay = backoffDelay(error);
        connectionLost(error, delay);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  function signedOut(message) {
    stopLoops();
    state.token = null;
    state.me = null;
    state.shown = undefined;
    sessionStorage.removeItem(TOKEN_KEY);
    $("identity").textContent = "";
    show("sign-out", false);
    // The device stays subscribed (notifications work with no tab open); only the page forgets.
    device.saved = null;
    device.said = "";
    renderDevice();
    showOnly("login-view");
    $("login-error").textContent = message || "";
    $("login-submit").disabled = false;
    const input = $("token-input");
    input.value = "";
    input.focus();
  }

  async function signIn(event) {
    event.preventDefault();
    const token = $("token-input").value.trim();
    if (!token) {
      $("login-error").textContent = "Enter a token.";
      return;
    }
    $("login-submit").disabled = true;
    $("login-error").textContent = "";
    try {
      const me = await api("/v1/whoami", { token });
      state.token = token;
      state.me = me;
      sessionStorage.setItem(TOKEN_KEY, token);
      $("token-input").value = "";
      render();
      refreshDevice();
    } catch (error) {
      $("login-error").textContent =
        error instanceof Unauthorized
          ? "That token is not valid."
          : `alertd cannot be reached (${error.message}); try again.`;
      $("token-input").select();
    } finally {
      $("login-submit").disabled = false;
    }
  }

  // MARK: - Clients

  async function followClients(generation) {
    $("example-origin").textContent = location.origin;
    while (generation === state.generation) {
      let delay = CLIENTS_REFRESH;
      try {
        const clients = await listClients();
        if (generation !== state.generation) return;
        connected();
        $("clients-error").textContent = "";
        renderClients(clients);
      } catch (error) {
        if (isAbort(error) || error instanceof Unauthorized) return;
        if (isNetwork(error)) {
          delay = backoffDelay(error);
          connectionLost(error, delay);
        } else {
          $("clients-error").textContent = `Cannot list clients: ${error.message}`;
        }
      }
      await sleep(delay, generation);
    }
  }

  /** Every client the token may see: GET /v1/clients is paged by its next_cursor. */
  async function listClients() {
    let clients = [];
    let cursor = null;
    do {
      const query = "?limit=1000" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
      const data = await api("/v1/clients" + query, { signal: state.controller.signal });
      clients = clients.concat(data.clients);
      cursor = data.next_cursor;
    } while (cursor);
    return clients;
  }

  function renderClients(clients) {
    const list = $("client-list");
    const sorted = [...clients].sort((a, b) => a.client.localeCompare(b.client));
    replaceChildren(
      list,
      ...sorted.map((summary) => {
        const live = summary.displayed !== null;
        return el(
          "li",
          { "data-client": summary.client },
          el(
            "a",
            { class: "client-card card", href: "#/clients/" + encodeURIComponent(summary.client) },
            el("span", { class: "client-name", text: summary.client }),
            el("span", { class: "client-pending", text: `${summary.pending} pending` }),
            el("span", { class: live ? "client-state live" : "client-state idle", text: live ? "alert displayed" : "idle" }),
          ),
        );
      }),
    );
    show("clients-empty", clients.length === 0);
    const listed = sorted.map((summary) => summary.client);
    if (listed.join("\n") !== device.listed.join("\n")) {
      device.listed = listed;
      renderDevice();
    }
  }

  function openClient(event) {
    event.preventDefault();
    const input = $("open-client-input");
    const client = input.value.trim();
    if (!CLIENT_ID.test(client)) {
      $("clients-error").textContent = "A client id is 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit.";
      return;
    }
    input.value = "";
    location.hash = "#/clients/" + encodeURIComponent(client);
  }

  // MARK: - One client

  async function followClient(client, generation) {
    $("client-title").textContent = client;
    $("client-error").textContent = "";
    $("client-summary").textContent = "";
    $("flash").textContent = "";
    state.shown = undefined;
    state.pending = null;
    show("client-panels", true);
    renderStage(client, null);
    // Nothing is known yet: no "0 pending", no "Nothing queued" until alertd said so.
    renderQueue(null);
    renderHistory(null);
    if (!CLIENT_ID.test(client)) {
      refused(`“${client}” is not a client id.`);
      return;
    }
    refreshQueue(client, generation);
    refreshHistory(client, generation);
    followQueue(client, generation);
    let after = "";
    // A look answers at once: the first one, and the first after a lost connection, so that the
    // page says it is connected again as soon as alertd answers (a long-poll would say so only
    // when the displayed alert changed, or after its 25 s) and shows what changed meanwhile.
    let look = true;
    while (generation === state.generation) {
      try {
        // Then each long-poll parks until the displayed alert is another, or has another number
        // of votes than this page shows (SPEC §10, docs/quorum.md).
        const query =
          look || state.shown === undefined
            ? ""
            : `?wait=${WAIT_SECONDS}&after=${encodeURIComponent(after)}&votes=${voteCount(state.shown)}`;
        const alert = await api(clientPath(client, "/current" + query), { signal: state.controller.signal });
        if (generation !== state.generation) return;
        look = false;
        connected();
        const id = alert ? alert.id : "";
        if (state.shown === undefined || id !== after) {
          const previous = state.shown;
          after = id;
          state.shown = alert;
          renderStage(client, alert);
          if (previous && previous.id !== id) reportPrevious(client, previous, generation);
          refreshQueue(client, generation);
          refreshHistory(client, generation);
        } else if (alert && state.shown && voteCount(alert) > voteCount(state.shown)) {
          // A vote on the alert shown. (One with fewer votes than shown was read before the
          // choice this page made and already shows: never taken back.)
          state.shown = alert;
          renderVotes(alert);
        }
      } catch (error) {
        if (isAbort(error) || error instanceof Unauthorized) return;
        if (isNetwork(error)) {
          const delay = backoffDelay(error);
          connectionLost(error, delay);
          look = true;
          await sleep(delay, generation);
        } else {
          // 400 or 403: retrying will not help. What the panels would show is not known:
          // they make way for what to do.
          refused(whatToDo(client, error));
          return;
        }
      }
    }
  }

  /** The client cannot be shown: the panels go, the reason and what to do stay; every loop stops. */
  function refused(text) {
    stopLoops();
    show("client-panels", false);
    $("client-summary").textContent = "";
    $("client-error").textContent = text;
  }

  function whatToDo(client, error) {
    const me = state.me;
    if (error instanceof HTTPError && error.status === 403 && me && me.auth) {
      return (
        `Token ${me.name} may not read ${client}: its clients are ${me.clients.join(", ")}. ` +
        `Sign out and sign in with a token whose clients include ${client}, or open one of its clients.`
      );
    }
    return `Cannot follow ${client}: ${error.message}`;
  }

  /** The displayed alert left: say how (answered here or elsewhere, dismissed, expired, withdrawn, covered). */
  async function reportPrevious(client, previous, generation) {
    try {
      const alert = await api(clientPath(client, "/" + encodeURIComponent(previous.id)), { signal: state.controller.signal });
      if (generation !== state.generation) return;
      const unconfirmed = state.unconfirmed && state.unconfirmed.alertId === previous.id ? state.unconfirmed : null;
      $("flash").textContent =
        describeDecision(alert) + (unconfirmed ? ` “${unconfirmed.button.title}” was not confirmed here: nothing was chosen from this page.` : "");
    } catch (error) {
      // The history shows it anyway.
    }
  }

  function describeDecision(alert) {
    const title = `“${alert.title}”`;
    const result = alert.result;
    if (!result) return `${title} is queued again behind a newer alert.`;
    const who = deciders(alert);
    const by = who ? ` by ${who}` : "";
    switch (result.outcome) {
      case "answered":
        return `${title} was answered “${result.button}”${by}${wordsText(alert, result)}.`;
      case "withdrawn":
        return `${title} was withdrawn${by}.`;
      default:
        return `${title} was ${result.outcome}.`;
    }
  }

  /** The queue has no long-poll: it is refreshed every few seconds, and the history's "x min ago" every 30 s. */
  async function followQueue(client, generation) {
    for (let tick = 1; generation === state.generation; tick += 1) {
      await sleep(QUEUE_REFRESH, generation);
      if (generation !== state.generation) return;
      await refreshQueue(client, generation);
      if (tick % 10 === 0) refreshHistory(client, generation);
    }
  }

  async function refreshQueue(client, generation) {
    try {
      const data = await api(clientPath(client, "?limit=100"), { signal: state.controller.signal });
      if (generation !== state.generation) return;
      const before = new Set((state.pending || []).map((alert) => alert.id));
      state.pending = data.alerts;
      renderQueue(data.alerts, data.next_cursor !== null, client);
      renderPosition();
      // Something left the queue without being displayed (withdrawn, expired): it is history now.
      const now = new Set(data.alerts.map((alert) => alert.id));
      for (const id of before) {
        if (!now.has(id) && (!state.shown || state.shown.id !== id)) {
          refreshHistory(client, generation);
          break;
        }
      }
    } catch (error) {
      // The long-poll reports connection trouble; the queue catches up on the next refresh.
    }
  }

  async function refreshHistory(client, generation) {
    try {
      const query = `?state=answered,dismissed,expired,withdrawn&limit=${HISTORY_LIMIT}`;
      const data = await api(clientPath(client, query), { signal: state.controller.signal });
      if (generation !== state.generation) return;
      renderHistory(data.alerts);
    } catch (error) {
      // As above.
    }
  }

  // MARK: - The alert

  /**
   * The label and key of the button shown at `position` (from 0): 1–9, then a–g for the tenth to
   * the sixteenth, as alertctl watch, get and list label them (and choose --number takes them).
   */
  const KEY_LABELS = "123456789abcdefg";
  function keyLabel(position) {
    return KEY_LABELS[position] || String(position + 1);
  }

  /** Buttons in the order people expect: the cancel button set apart, last. */
  function orderedButtons(alert) {
    const buttons = alert.buttons.map((button, index) => ({ ...button, index }));
    return [...buttons.filter((b) => b.style !== "cancel"), ...buttons.filter((b) => b.style === "cancel")];
  }

  function renderStage(client, alert) {
    clearInterval(state.countdownTimer);
    state.countdownTimer = 0;
    state.busy = false;
    // A confirmation left open when its alert goes: reportPrevious says so with what became of it.
    state.unconfirmed = state.confirming && (!alert || alert.id !== state.confirming.alertId) ? state.confirming : null;
    state.confirming = null;
    const stage = $("stage");
    const content = $("stage-content");
    if (!alert) {
      stage.className = "stage idle";
      replaceChildren(
        content,
        el(
          "div",
          { class: "idle-message" },
          el("p", { class: "idle-title", text: state.shown === undefined ? "Loading…" : "Nothing to answer" }),
          el("p", { class: "muted", text: `New alerts for ${client} appear here as they are posted.` }),
        ),
      );
      renderPosition();
      return;
    }
    const sheet = alert.style === "action_sheet";
    stage.className = sheet ? "stage sheet-stage" : "stage alert-stage";
    const ordered = orderedButtons(alert);
    const mayAnswer = canAnswer();
    const mine = myVote(alert);
    const makeButton = (button, position) =>
      el(
        "button",
        {
          type: "button",
          class: `action ${button.style}`,
          "data-index": button.index,
          "data-style": button.style,
          disabled: !mayAnswer || !!mine,
          onclick: () => press(client, alert, button),
        },
        el("kbd", { class: "key", "aria-hidden": "true", text: keyLabel(position) }),
        el("span", { class: "action-title", text: button.title }),
      );
    const buttonElements = ordered.map(makeButton);

    const body = el(
      "div",
      { class: "dialog-body" },
      escalatedFrom(client, alert)
        ? el("p", { id: "escalated-from", class: "dialog-escalated", text: escalatedFrom(client, alert) })
        : null,
      el("h2", { id: "dialog-title", class: "dialog-title", text: alert.title }),
      alert.message ? el("p", { id: "dialog-message", class: "dialog-message", text: alert.message }) : null,
      alert.quorum > 1 ? el("p", { id: "votes", class: "dialog-votes", text: tally(alert) }) : null,
      alert.quorum > 1 ? voteWordsElement(alert) : null,
      alert.metadata ? metadataElement(alert.metadata) : null,
      alert.buttons.length === 0 ? countdownElement() : null,
      mayAnswer && !mine && alert.buttons.length > 0 ? answerForm(alert) : null,
    );
    const note = mayAnswer
      ? alert.quorum > 1
        ? el("p", { id: "voted-note", class: "voted-note", hidden: !mine, text: mine ? votedText(alert, mine) : "" })
        : null
      : el("p", {
          class: "readonly-note",
          text: `Read only: token ${state.me.name} (roles: ${state.me.roles.join(", ")}) may not answer; that needs the answer role.`,
        });

    let dialog;
    const dialogAttributes = {
      role: "alertdialog",
      "aria-modal": "false",
      "aria-labelledby": "dialog-title",
      "aria-describedby": alert.message ? "dialog-message" : null,
      tabindex: "-1",
      "data-alert-id": alert.id,
      "data-style": alert.style,
    };
    if (sheet) {
      // An action sheet: a vertical list of actions anchored at the bottom, the cancel button in its own group below.
      const cancel = buttonElements.filter((b) => b.dataset.style === "cancel");
      const actions = buttonElements.filter((b) => b.dataset.style !== "cancel");
      dialog = el(
        "div",
        { ...dialogAttributes, class: "dialog sheet" },
        el("div", { class: "sheet-group" }, body, actions.length ? el("div", { class: "actions vertical" }, actions) : null, note),
        cancel.length ? el("div", { class: "sheet-group sheet-cancel" }, el("div", { class: "actions vertical" }, cancel)) : null,
      );
    } else {
      // An alert: centered; two buttons side by side, otherwise stacked.
      const layout = buttonElements.length === 2 ? "horizontal" : "vertical";
      dialog = el(
        "div",
        { ...dialogAttributes, class: "dialog alert" },
        body,
        buttonElements.length ? el("div", { class: `actions ${layout}` }, buttonElements) : null,
        note,
      );
    }
    dialog.append(el("div", { id: "confirm", class: "confirm", hidden: true }));
    replaceChildren(content, dialog);
    renderPosition();
    if (alert.buttons.length === 0) startCountdown(alert);
    if ($("login-view").hidden) dialog.focus({ preventScroll: true });
  }

  function renderPosition() {
    const position = $("stage-position");
    const summary = $("client-summary");
    const alert = state.shown;
    if (state.pending === null) {
      // Not known yet: say nothing rather than "0 pending".
      summary.textContent = "";
      position.textContent = "";
      return;
    }
    const pendingCount = state.pending.length;
    summary.textContent = `${pendingCount} pending`;
    if (!alert) {
      position.textContent = "";
      return;
    }
    const total = Math.max(pendingCount, 1);
    const behind = Math.max(pendingCount - 1, 0);
    const parts = [`1 of ${total}`, behind === 0 ? "nothing queued behind" : `${behind} queued behind`];
    if (alert.priority !== 0) parts.push(`priority ${alert.priority}`);
    if (alert.expires_at) parts.push(`expires ${relativeFuture(Date.parse(alert.expires_at))}`);
    position.textContent = parts.join(" · ");
  }

  function countdownElement() {
    return el(
      "div",
      { class: "countdown" },
      el("span", { id: "countdown-text", class: "countdown-text" }),
      el("progress", { id: "countdown-bar", max: "1000", value: "1000" }),
    );
  }

  function startCountdown(alert) {
    const total = (alert.dismiss_after || 0) * 1000;
    const shownAt = Date.parse(alert.displayed_at || alert.created_at);
    const tick = () => {
      const text = $("countdown-text");
      const bar = $("countdown-bar");
      if (!text || !bar) return;
      const left = Math.max(0, Math.min(total, shownAt + total - serverNow()));
      const seconds = Math.ceil(left / 1000);
      text.textContent = left > 0 ? `Dismissed in ${seconds} s` : "Dismissing…";
      text.dataset.remaining = String(seconds);
      bar.value = total > 0 ? Math.round((left / total) * 1000) : 0;
    };
    tick();
    state.countdownTimer = setInterval(tick, 200);
  }

  /**
   * A button pressed, by click or key. A destructive one is not chosen at once: the first press
   * asks (as alertctl watch does), y or the confirm button chooses it, anything else keeps the
   * alert. Every other button, cancel among them, is chosen at once.
   */
  function press(client, alert, button) {
    if (state.busy || !canAnswer() || !state.shown || state.shown.id !== alert.id || myVote(state.shown)) return;
    if (button.style !== "destructive") {
      keep(false);
      if (!wordsFor(alert, button)) return;
      choose(client, alert, button);
      return;
    }
    // A second press of the same button (a double click) is not the confirmation: that is y or the confirm button, elsewhere.
    if (state.confirming && state.confirming.alertId === alert.id && state.confirming.button.index === button.index) return;
    state.confirming = { alertId: alert.id, button, client };
    const box = $("confirm");
    const form = $("answer-form");
    replaceChildren(
      box,
      el("p", { class: "confirm-text", id: "confirm-text", text: `“${button.title}” is destructive. Choose it?` }),
      // The answer's fields and comment move into the confirmation (SPEC §13), what was typed kept.
      form ? showFieldsOf(form, alert, button) : null,
      el(
        "div",
        { class: "confirm-buttons" },
        el("button", { type: "button", id: "confirm-keep", class: "confirm-keep", onclick: () => keep(true) },
          el("kbd", { class: "key", "aria-hidden": "true", text: "Esc" }), "Keep the alert"),
        el("button", { type: "button", id: "confirm-yes", class: "confirm-yes", onclick: confirmed },
          el("kbd", { class: "key", "aria-hidden": "true", text: "y" }), `Choose “${button.title}”`),
      ),
    );
    box.setAttribute("role", "group");
    box.setAttribute("aria-labelledby", "confirm-text");
    box.hidden = false;
    for (const b of document.querySelectorAll("#stage-content button.action")) {
      b.classList.toggle("armed", b.dataset.index === String(button.index));
    }
    // Enter on the focused button keeps the alert: only y or a deliberate click chooses.
    $("confirm-keep").focus({ preventScroll: true });
  }

  function confirmed() {
    const pending = state.confirming;
    if (!pending) return;
    // A required field left empty: the confirmation stays open on it, nothing is sent.
    if (!wordsFor(state.shown, pending.button)) return;
    keep(false);
    choose(pending.client, state.shown, pending.button);
  }

  /** Leaves the confirmation; `said` tells the person nothing was chosen. */
  function keep(said) {
    const pending = state.confirming;
    state.confirming = null;
    const box = $("confirm");
    // The answer's form goes back above the buttons, with what was typed.
    const form = $("answer-form");
    const home = $("answer-form-home");
    if (form && home && form.parentElement !== home) {
      home.append(form);
      showFieldsOf(form, state.shown, null);
    }
    if (box) {
      box.hidden = true;
      replaceChildren(box);
    }
    for (const b of document.querySelectorAll("#stage-content button.action.armed")) b.classList.remove("armed");
    if (pending && said) {
      $("flash").textContent = `Kept: “${pending.button.title}” was not chosen.`;
      const dialog = document.querySelector("#stage-content [role=alertdialog]");
      if (dialog) dialog.focus({ preventScroll: true });
    }
  }

  async function choose(client, alert, button) {
    if (state.busy || !canAnswer() || !state.shown || state.shown.id !== alert.id) return;
    state.busy = true;
    const buttons = document.querySelectorAll("#stage-content button.action");
    for (const b of buttons) b.disabled = true;
    const generation = state.generation;
    try {
      const words = wordsFor(alert, button, true) || {};
      const answered = await api(clientPath(client, "/" + encodeURIComponent(alert.id) + "/choice"), {
        method: "POST",
        body: { button_index: button.index, ...words },
        signal: state.controller.signal,
      });
      if (generation !== state.generation) return;
      if (!answered.result) {
        // A vote short of the quorum (SPEC §10): the alert stays, with the vote; its buttons
        // stay disabled for this decider, and the long-poll brings the others' votes.
        state.busy = false;
        showVoted(answered);
        $("flash").textContent = `You voted “${button.title}” on “${answered.title}”: ${tally(answered)}.`;
        return;
      }
      // The long-poll brings the next alert; until then this one stays, its buttons disabled.
      $("flash").textContent = `You answered “${answered.result.button}” to “${answered.title}”.`;
    } catch (error) {
      if (isAbort(error) || error instanceof Unauthorized) return;
      if (generation !== state.generation) return;
      const problem = error.problem || {};
      if (problem.code === "already-voted" && problem.alert) {
        state.busy = false;
        showVoted(problem.alert);
        $("flash").textContent = `You already voted on “${problem.alert.title}”: a vote is not changed, and “${button.title}” was not chosen.`;
      } else if (problem.code === "already-decided" && problem.alert) {
        $("flash").textContent = "Too late: " + describeDecision(problem.alert);
      } else if (problem.code === "invalid-answer") {
        // Nothing was chosen; each field alertd refused says why, and what was typed stays.
        for (const entry of problem.errors || []) markField(entry.field, entry.reason);
        $("flash").textContent = `“${button.title}” was not chosen: ${(problem.errors || []).map((e) => `${e.field}: ${e.reason}`).join("; ") || error.message}`;
        if (state.shown && state.shown.id === alert.id) {
          state.busy = false;
          for (const b of buttons) b.disabled = false;
        }
      } else {
        $("flash").textContent = `The choice was not recorded: ${error.message}`;
        if (state.shown && state.shown.id === alert.id) {
          state.busy = false;
          for (const b of buttons) b.disabled = false;
        }
      }
    }
  }

  // MARK: - Answers with words (SPEC §13)

  /** The fields of `alert` that belong to `button`. */
  function fieldsOf(alert, button) {
    return (alert.fields || []).filter((field) => (field.buttons || []).includes(button.title));
  }

  /**
   * The inputs an answer carries: one per field (its label, a hint of the buttons it belongs to
   * when not all, its placeholder and length), then an optional comment. Kept in a home above
   * the buttons; a destructive button's confirmation takes it in (showFieldsOf).
   */
  function answerForm(alert) {
    const everyButton = alert.buttons.filter((b) => b.style !== "cancel").map((b) => b.title);
    const fields = (alert.fields || []).map((field) => {
      const id = `field-${field.name}`;
      const only = field.buttons.length !== everyButton.length || field.buttons.some((title) => !everyButton.includes(title));
      return el(
        "div",
        { class: "answer-field", "data-field": field.name, "data-buttons": JSON.stringify(field.buttons) },
        el(
          "label",
          { for: id },
          field.label || field.name,
          field.required ? el("span", { class: "required", title: "required", text: " *" }) : null,
          only ? el("span", { class: "field-for muted", text: ` (for ${field.buttons.map((t) => `“${t}”`).join(", ")})` }) : null,
        ),
        el("input", {
          id,
          type: "text",
          name: field.name,
          autocomplete: "off",
          spellcheck: "false",
          maxlength: String(field.max_length),
          placeholder: field.placeholder || "",
          "aria-describedby": `${id}-error`,
          "aria-required": field.required ? "true" : "false",
          oninput: () => clearMark(id),
        }),
        el("p", { id: `${id}-error`, class: "field-error", role: "alert" }),
      );
    });
    return el(
      "div",
      { id: "answer-form-home", class: "answer-form-home" },
      el(
        "div",
        { id: "answer-form", class: "answer-form" },
        ...fields,
        el(
          "div",
          { class: "answer-field answer-comment" },
          el("label", { for: "answer-comment" }, "Comment ", el("span", { class: "muted", text: "(optional: why)" })),
          el("textarea", {
            id: "answer-comment",
            name: "comment",
            rows: "2",
            maxlength: "1000",
            "aria-describedby": "answer-comment-error",
            oninput: () => clearMark("answer-comment"),
          }),
          el("p", { id: "answer-comment-error", class: "field-error", role: "alert" }),
        ),
      ),
    );
  }

  /** Shows the fields of `button` in the form (all when null); returns the form. */
  function showFieldsOf(form, alert, button) {
    for (const row of form.querySelectorAll(".answer-field[data-field]")) {
      const belongs = !button || JSON.parse(row.dataset.buttons || "[]").includes(button.title);
      row.hidden = !belongs;
    }
    return form;
  }

  /** What is typed into a field it said was wrong: the mark goes. */
  function clearMark(id) {
    const note = $(`${id}-error`);
    if (note) note.textContent = "";
    const input = $(id);
    if (input) input.removeAttribute("aria-invalid");
  }

  /** Shows `reason` under the input `path` names (`values.ticket`, `comment`). */
  function markField(path, reason) {
    const id = path === "comment" ? "answer-comment" : path.startsWith("values.") ? `field-${path.slice(7)}` : null;
    const input = id && $(id);
    const note = id && $(`${id}-error`);
    if (note) note.textContent = reason;
    if (input) input.setAttribute("aria-invalid", "true");
  }

  /**
   * The comment and values to send with `button` (only its fields, only what is filled), or
   * null when a required field of it is empty: that field says so and takes the focus, and
   * nothing is sent. `quiet`: just the words.
   */
  function wordsFor(alert, button, quiet) {
    const words = {};
    const values = {};
    let missing = null;
    for (const note of document.querySelectorAll("#stage-content .field-error")) note.textContent = "";
    for (const field of fieldsOf(alert, button)) {
      const input = $(`field-${field.name}`);
      const value = input ? input.value : "";
      if (input) input.removeAttribute("aria-invalid");
      if (value !== "") values[field.name] = value;
      else if (field.required && !missing) missing = { field, input };
    }
    if (missing && !quiet) {
      markField(`values.${missing.field.name}`, `Required for “${button.title}”.`);
      $("flash").textContent = `“${missing.field.label || missing.field.name}” is required for “${button.title}”: nothing was sent.`;
      if (missing.input) missing.input.focus({ preventScroll: true });
      return null;
    }
    if (Object.keys(values).length) words.values = values;
    const comment = $("answer-comment");
    if (comment && comment.value.trim() !== "") words.comment = comment.value;
    return words;
  }

  /** `, with ticket “OPS-1”: “why”`: an answer's values and comment, as a sentence's end. */
  function wordsText(alert, result) {
    const values = result.values || {};
    const order = [...(alert.fields || []).map((f) => f.name), ...Object.keys(values).sort()];
    const shown = [...new Set(order)].filter((name) => values[name] !== undefined);
    let text = shown.length ? ", with " + shown.map((name) => `${name} “${values[name]}”`).join(", ") : "";
    if (result.comment) text += `: “${result.comment}”`;
    return text;
  }

  /** Under the votes line (a quorum): what each decider said, when they said anything. */
  function voteWordsElement(alert) {
    const said = (alert.votes || []).filter((vote) => vote.comment);
    if (!said.length) return el("ul", { id: "vote-comments", class: "vote-comments", hidden: true });
    return el(
      "ul",
      { id: "vote-comments", class: "vote-comments" },
      ...said.map((vote) => el("li", { text: `${vote.decided_by === null ? "anonymous" : vote.decided_by}: “${vote.comment}”` })),
    );
  }

  /** The alert as a choice of this page left it, when it is still the one shown and not older. */
  function showVoted(alert) {
    if (state.shown && state.shown.id === alert.id && voteCount(alert) >= voteCount(state.shown)) state.shown = alert;
    if (state.shown && state.shown.id === alert.id) renderVotes(state.shown);
  }

  function onKey(event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.isComposing) return;
    if ($("client-view").hidden || !$("login-view").hidden) return;
    const target = event.target;
    if (target instanceof Element && target.closest("input, textarea, select")) return;
    const dialog = document.querySelector("#stage-content [role=alertdialog]");
    if (!dialog) return;
    if (state.confirming) {
      // Same rule as alertctl watch: y chooses the destructive button, any other key keeps the alert.
      if (["Shift", "Control", "Alt", "Meta", "CapsLock", "Tab"].includes(event.key)) return;
      if ((event.key === "Enter" || event.key === " ") && target instanceof Element && target.closest("button")) return;
      event.preventDefault();
      if (event.key === "y" || event.key === "Y") confirmed();
      else keep(true);
      return;
    }
    const buttons = [...dialog.querySelectorAll("button.action")];
    let chosen = null;
    const position = event.key.length === 1 ? KEY_LABELS.indexOf(event.key.toLowerCase()) : -1;
    if (position >= 0) {
      chosen = buttons[position] || null;
    } else if (event.key === "Escape") {
      chosen = buttons.find((b) => b.dataset.style === "cancel") || null;
    } else if (event.key === "Enter") {
      // A focused button or link answers Enter itself.
      if (target instanceof Element && target.closest("button, a")) return;
      chosen = [...buttons].sort((a, b) => a.dataset.index - b.dataset.index).find((b) => b.dataset.style === "default") || null;
    } else {
      return;
    }
    if (!chosen) return;
    event.preventDefault();
    if (!chosen.disabled) chosen.click();
  }

  /**
   * An alert's metadata as a person reads it: Alertmanager's labels as labels, every
   * other member as a key and its value (a string as it is, anything else as compact
   * JSON), and the raw JSON one click away ("Raw JSON", a <details>). All text nodes.
   */
  function metadataElement(metadata) {
    const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
    const alertmanager = isObject(metadata.alertmanager) ? metadata.alertmanager : null;
    const labels = alertmanager && isObject(alertmanager.labels) ? alertmanager.labels : null;
    const members = Object.entries(metadata).filter(([key]) => !(labels && key === "alertmanager"));
    const shown = (value) => (typeof value === "string" ? value : JSON.stringify(value));
    return el(
      "div",
      { class: "dialog-metadata-box" },
      labels
        ? el(
            "ul",
            { class: "dialog-labels", "aria-label": "Alertmanager labels" },
            ...Object.entries(labels).map(([name, value]) =>
              el("li", { class: "label" }, el("span", { class: "label-name", text: name }), el("span", { class: "label-value", text: shown(value) })),
            ),
          )
        : null,
      members.length > 0
        ? el("dl", { class: "dialog-metadata", "aria-label": "metadata" }, ...members.flatMap(([key, value]) => [el("dt", { text: key }), el("dd", { text: shown(value) })]))
        : null,
      el(
        "details",
        { class: "dialog-metadata-json" },
        el("summary", { text: "Raw JSON" }),
        el("pre", { class: "dialog-metadata-raw", "aria-label": "metadata as JSON", text: JSON.stringify(metadata, null, 2) }),
      ),
    );
  }

  // MARK: - Queue and history

  /**
   * "Escalated from ops: nobody answered there in 5 min", when `alert` came to `client` by
   * escalation (SPEC §12), as alertctl watch says it; null on its own client.
   */
  function escalatedFrom(client, alert) {
    if (!alert || alert.client === client) return null;
    const index = (alert.escalated_to || []).findIndex((step) => step.client === client);
    if (index < 0) return null;
    const step = (alert.escalation || [])[index];
    const after = step ? ` in ${formatDuration(step.after * 1000)}` : "";
    return `Escalated from ${alert.client}: nobody answered there${after}`;
  }

  function renderQueue(alerts, more, client) {
    if (alerts === null) {
      replaceChildren($("queue-list"));
      show("queue-empty", false);
      return;
    }
    const queued = alerts.filter((alert) => alert.state === "queued");
    replaceChildren(
      $("queue-list"),
      ...queued.map((alert) =>
        el(
          "li",
          { "data-alert-id": alert.id },
          el("span", { class: "queue-title", text: alert.title }),
          el("span", { class: "muted", text: alert.priority !== 0 ? ` priority ${alert.priority}` : "" }),
          escalatedFrom(client, alert)
            ? el("span", { class: "queue-escalated muted", text: ` ↑ from ${alert.client}` })
            : null,
        ),
      ),
      more ? el("li", { class: "muted", text: "and more…" }) : null,
    );
    show("queue-empty", queued.length === 0);
  }

  /** How long a person took: from when the alert was displayed (else created) to its decision. */
  function tookMs(alert) {
    const from = Date.parse(alert.displayed_at || alert.created_at);
    return Math.max(0, Date.parse(alert.decided_at) - from);
  }

  function renderHistory(alerts) {
    if (alerts === null) {
      replaceChildren($("history-body"));
      replaceChildren($("chart"));
      $("chart-caption").textContent = "";
      show("history-empty", false);
      show("history-table", false);
      return;
    }
    // The list comes newest-created first; people read it by decision time.
    const decided = [...alerts].sort((a, b) => Date.parse(b.decided_at) - Date.parse(a.decided_at));
    replaceChildren(
      $("history-body"),
      ...decided.slice(0, HISTORY_ROWS).map((alert) => {
        const result = alert.result || {};
        const decidedAt = Date.parse(alert.decided_at);
        return el(
          "tr",
          { "data-alert-id": alert.id, "data-outcome": result.outcome },
          el("td", { title: alert.decided_at, text: relativePast(decidedAt) }),
          el("td", { class: "history-title", text: alert.title }),
          el("td", null, el("span", { class: `outcome ${result.outcome}`, text: result.outcome })),
          el(
            "td",
            { class: "history-button" },
            result.button === null || result.button === undefined ? "—" : result.button,
            wordsText(alert, result) ? el("span", { class: "history-words", text: wordsText(alert, result).replace(/^, /, "") }) : null,
          ),
          el("td", { class: "history-by", text: deciders(alert) || "—" }),
          el("td", { class: "history-took", text: formatDuration(tookMs(alert)) }),
        );
      }),
    );
    show("history-empty", decided.length === 0);
    show("history-table", decided.length > 0);
    renderChart(decided);
  }

  /** Time to answer over the last day: one dot per answered alert, drawn as SVG. */
  function renderChart(decided) {
    const chart = $("chart");
    const now = serverNow();
    const answered = decided
      .filter((alert) => alert.state === "answered" && now - Date.parse(alert.decided_at) <= DAY)
      .map((alert) => ({ alert, at: Date.parse(alert.decided_at), took: tookMs(alert) }));
    const width = 600;
    const height = 180;
    const left = 58;
    const right = 12;
    const top = 12;
    const bottom = 28;
    const plotWidth = width - left - right;
    const plotHeight = height - top - bottom;
    const maxTook = niceCeiling(Math.max(1000, ...answered.map((point) => point.took)));
    const x = (at) => left + ((at - (now - DAY)) / DAY) * plotWidth;
    const y = (took) => top + plotHeight - (took / maxTook) * plotHeight;

    const parts = [];
    for (const fraction of [0, 0.5, 1]) {
      const value = maxTook * fraction;
      parts.push(svg("line", { class: "grid", x1: left, x2: width - right, y1: y(value), y2: y(value) }));
      parts.push(svg("text", { class: "axis-label", x: left - 6, y: y(value) + 4, "text-anchor": "end" }, formatDuration(value)));
    }
    for (let hoursAgo = 24; hoursAgo >= 0; hoursAgo -= 6) {
      const at = now - hoursAgo * 3600 * 1000;
      parts.push(svg("line", { class: "tick", x1: x(at), x2: x(at), y1: top + plotHeight, y2: top + plotHeight + 4 }));
      parts.push(
        svg("text", { class: "axis-label", x: x(at), y: height - 8, "text-anchor": "middle" }, hoursAgo === 0 ? "now" : `−${hoursAgo} h`),
      );
    }
    for (const point of answered) {
      parts.push(
        svg(
          "circle",
          { class: "point", cx: x(point.at).toFixed(1), cy: y(point.took).toFixed(1), r: 4, "data-alert-id": point.alert.id },
          svg("title", null, `${point.alert.title}: ${formatDuration(point.took)}`),
        ),
      );
    }
    replaceChildren(chart, parts);
    const caption = $("chart-caption");
    if (answered.length === 0) {
      caption.textContent = "Time to answer, last 24 hours: no answers yet.";
    } else {
      const sorted = answered.map((point) => point.took).sort((a, b) => a - b);
      const median = sorted[Math.floor((sorted.length - 1) / 2)];
      caption.textContent =
        `Time to answer, last 24 hours: ${answered.length} answer${answered.length === 1 ? "" : "s"}, ` +
        `median ${formatDuration(median)}, slowest ${formatDuration(sorted[sorted.length - 1])}.`;
    }
  }

  function niceCeiling(ms) {
    const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400, 604800];
    for (const seconds of steps) if (ms <= seconds * 1000) return seconds * 1000;
    return Math.ceil(ms / 604800000) * 604800000;
  }

  // MARK: - Formatting

  function formatDuration(ms) {
    const seconds = ms / 1000;
    if (seconds < 10) return `${Math.round(seconds * 10) / 10} s`;
    if (seconds < 60) return `${Math.round(seconds)} s`;
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) {
      const rest = Math.round(seconds - minutes * 60);
      return rest ? `${minutes} min ${rest} s` : `${minutes} min`;
    }
    const hours = Math.floor(minutes / 60);
    if (hours < 48) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
    return `${Math.round(hours / 24)} d`;
  }

  function relativePast(at) {
    const ms = serverNow() - at;
    if (ms < 45000) return "just now";
    if (ms < 3600000) return `${Math.round(ms / 60000)} min ago`;
    if (ms < DAY) return `${Math.round(ms / 3600000)} h ago`;
    return new Date(at).toLocaleString();
  }

  function relativeFuture(at) {
    const ms = at - serverNow();
    if (ms <= 0) return "now";
    return "in " + formatDuration(ms);
  }


  // MARK: - This device: notifications (SPEC §11, docs/push.md)

  const BLOCKED = "Notifications are blocked for this site: allow them in the browser's site settings, then try again.";
  /**
   * How long the browser's push service may take to subscribe (ms). A browser that cannot reach
   * it (a network that blocks it; headless Chromium, which has none) may never answer.
   */
  const SUBSCRIBE_TIMEOUT = 20000;

  /**
   * Web Push on this device. `reason`: why notifications cannot be offered (null: they can);
   * `browser`: the browser's PushSubscription; `saved`: alertd's record of it made by this
   * token (`{id, endpoint, clients, answer, decider}`), null when alertd has none; `said`: the
   * outcome of the last click; `listed`: the clients the clients view shows.
   */
  const device = {
    worker: null,
    workerError: "",
    reason: "Checking whether this device can be notified…",
    key: null,
    browser: null,
    saved: null,
    busy: false,
    said: "",
    listed: [],
  };

  /** A step of subscribing that failed, with what to tell the person. */
  class DeviceError extends Error {}

  /** Why this page cannot subscribe, whatever alertd says; null when it can. */
  function pushSupport() {
    if (!window.isSecureContext) {
      return "Notifications need HTTPS: open the dashboard at an https:// address whose certificate this device trusts (docs/push.md).";
    }
    if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
      return (
        "This browser cannot receive Web Push here. On an iPhone or iPad (iOS 16.4 or later), add the dashboard " +
        "to the Home Screen first (Share, then Add to Home Screen) and open it from there."
      );
    }
    return null;
  }

  /**
   * The service worker (/sw.js, scope /): what makes the dashboard installable and shows
   * notifications. Registered on every load where the browser has service workers.
   */
  function registerWorker() {
    if (!window.isSecureContext || !("serviceWorker" in navigator)) return;
    device.worker = navigator.serviceWorker.register("/sw.js", { scope: "/", updateViaCache: "none" }).catch((error) => {
      device.workerError = error.message;
      return null;
    });
    navigator.serviceWorker.addEventListener("message", onWorkerMessage);
    navigator.serviceWorker.startMessages();
    document.addEventListener("visibilitychange", closeSettledNotes);
    closeSettledNotes();
  }

  function onWorkerMessage(event) {
    const message = event.data || {};
    if (message.type === "alertd.open" && typeof message.client === "string" && CLIENT_ID.test(message.client)) {
      // A tap on a notification: show its client.
      location.hash = "#/clients/" + encodeURIComponent(message.client);
    } else if (message.type === "alertd.settled") {
      closeSettledNotes();
    }
  }

  /**
   * The worker never leaves a push without a notification (browsers punish that): a decided
   * alert's question becomes a quiet note. A dashboard on screen shows the same, so it closes
   * those notes.
   */
  async function closeSettledNotes() {
    if (document.visibilityState !== "visible" || !device.worker) return;
    const registration = await device.worker;
    if (!registration || !registration.getNotifications) return;
    for (const notification of await registration.getNotifications()) {
      if (notification.data && notification.data.settled) notification.close();
    }
  }

  /** Reads what this device and alertd know: the push key, the browser's subscription, alertd's record of it. */
  async function refreshDevice() {
    const token = state.token;
    device.reason = pushSupport();
    device.key = null;
    device.browser = null;
    device.saved = null;
    if (!device.reason) {
      try {
        device.key = (await api("/v1/push/key")).public_key;
        const registration = await device.worker;
        if (!registration) throw new DeviceError(`The service worker did not register (${device.workerError || "unknown error"}).`);
        device.browser = await registration.pushManager.getSubscription();
        if (device.browser) {
          const list = await api("/v1/push/subscriptions");
          device.saved = list.subscriptions.find((saved) => saved.endpoint === device.browser.endpoint) || null;
        }
        if (Notification.permission === "denied") device.reason = BLOCKED;
      } catch (error) {
        if (error instanceof Unauthorized || token !== state.token) return;
        if (error instanceof HTTPError && error.status === 404) {
          device.reason = "Notifications are off on this alertd: its config sets no push.subject (docs/push.md).";
        } else {
          device.reason = error instanceof DeviceError ? error.message : `Notifications cannot be offered: ${error.message}`;
        }
      }
    }
    if (token === state.token) renderDevice();
  }

  /** The clients "Notify this device" adds: the one shown, or every one listed. */
  function clientsShown() {
    const where = route();
    if (where.view === "client") return CLIENT_ID.test(where.client) ? [where.client] : [];
    return device.listed;
  }

  function renderDevice() {
    const bar = $("device");
    if (!state.me) {
      bar.hidden = true;
      return;
    }
    bar.hidden = false;
    const where = route();
    const shown = clientsShown();
    const saved = device.saved ? device.saved.clients : [];
    const missing = shown.filter((client) => !saved.includes(client));
    let status;
    if (device.saved) {
      const decider = device.saved.decider === null ? "anyone (alertd has no tokens)" : device.saved.decider;
      status =
        `This device is notified of ${names(saved)}` +
        (device.saved.answer ? `; its buttons answer as ${decider}.` : "; a tap opens the dashboard (this token may not answer).");
    } else if (device.reason) {
      status = device.reason;
    } else if (device.browser) {
      status = "This browser has a subscription that alertd does not hold for this token (removed, or made with another token).";
    } else {
      status = "Get alerts on this device, even with the dashboard closed.";
    }
    $("device-status").textContent = device.said ? `${status} ${device.said}` : status;

    const notify = $("device-notify");
    notify.hidden = !!device.saved && missing.length === 0;
    notify.disabled = device.busy || !!device.reason || shown.length === 0;
    if (where.view === "client") notify.textContent = `Notify this device of ${where.client}`;
    else if (saved.length === 0) notify.textContent = "Notify this device";
    else notify.textContent = missing.length === 1 ? `Also notify of ${missing[0]}` : `Also notify of ${missing.length} more clients`;
    notify.title = shown.length ? `For ${names(device.saved ? [...saved, ...missing] : shown)}` : "No client to be notified of yet";

    const drop = $("device-drop-client");
    drop.hidden = !(where.view === "client" && saved.includes(where.client) && saved.length > 1);
    drop.disabled = device.busy;
    drop.textContent = `Stop notifying of ${where.client || ""}`;

    const stop = $("device-stop");
    stop.hidden = !device.saved && !device.browser;
    stop.disabled = device.busy;
  }

  function base64urlBytes(text) {
    const base64 = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
    return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  }

  function sameBytes(buffer, bytes) {
    if (!buffer) return false;
    const other = new Uint8Array(buffer);
    return other.length === bytes.length && other.every((byte, index) => byte === bytes[index]);
  }

  function problemText(error) {
    const problem = error.problem || {};
    const fields = (problem.errors || []).map((field) => `${field.field} ${field.reason}`).join("; ");
    return (problem.detail || error.message) + (fields ? ` (${fields})` : "");
  }

  /** "Notify this device": the clients shown, added to those this device is notified of. */
  function notifyDevice() {
    const saved = device.saved ? device.saved.clients : [];
    saveDevice([...saved, ...clientsShown().filter((client) => !saved.includes(client))]);
  }

  /**
   * Subscribes this browser (asking for permission: this runs in the click, which browsers
   * require) with alertd's key, and saves the subscription for `clients` with the page's token:
   * its buttons answer when the token may (`answer` or `admin`).
   */
  async function saveDevice(clients) {
    if (device.busy || device.reason) return;
    device.busy = true;
    device.said = "";
    renderDevice();
    const token = state.token;
    let made = null;
    try {
      const permission = await Notification.requestPermission();
      if (permission !== "granted") throw new DeviceError(permission === "denied" ? BLOCKED : "Notifications were not allowed: nothing changed.");
      const registration = await device.worker;
      if (!registration) throw new DeviceError(`The service worker did not register (${device.workerError || "unknown error"}).`);
      await navigator.serviceWorker.ready;
      const key = base64urlBytes(device.key);
      let subscription = await registration.pushManager.getSubscription();
      if (subscription && !sameBytes(subscription.options.applicationServerKey, key)) {
        // Made for another key (this alertd's store was replaced): nothing can push to it any more.
        await subscription.unsubscribe();
        subscription = null;
      }
      if (!subscription) {
        device.said = "Subscribing…";
        renderDevice();
        let timer = 0;
        const late = new Promise((resolve, reject) => {
          timer = setTimeout(() => reject(new DOMException("its push service did not answer within 20 s: can this device reach it?", "TimeoutError")), SUBSCRIBE_TIMEOUT);
        });
        try {
          subscription = made = await Promise.race([registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }), late]);
        } catch (error) {
          throw new DeviceError(`This browser could not subscribe (${error.name}: ${error.message}).`);
        } finally {
          clearTimeout(timer);
        }
      }
      const body = Object.assign(subscription.toJSON(), { clients, answer: canAnswer() });
      const saved = await api("/v1/push/subscriptions", { method: "POST", body });
      device.browser = subscription;
      device.saved = saved;
      device.said = "Saved.";
    } catch (error) {
      if (error instanceof Unauthorized) return;
      if (made) await made.unsubscribe().catch(() => undefined);
      if (error instanceof DeviceError) device.said = error.message;
      else if (error instanceof HTTPError) device.said = `alertd did not save it: ${problemText(error)}`;
      else device.said = `Not saved: ${error.message}`;
    } finally {
      device.busy = false;
      if (token === state.token) renderDevice();
    }
  }

  /** "Stop notifying of X": the same subscription without X. */
  function dropClient() {
    const where = route();
    if (!device.saved || where.view !== "client") return;
    saveDevice(device.saved.clients.filter((client) => client !== where.client));
  }

  /** "Stop notifications": alertd forgets the subscription, then the browser ends it. */
  async function stopDevice() {
    if (device.busy) return;
    device.busy = true;
    device.said = "";
    renderDevice();
    try {
      if (device.saved) {
        try {
          await api("/v1/push/subscriptions/" + encodeURIComponent(device.saved.id), { method: "DELETE" });
        } catch (error) {
          // Already gone (alertctl push remove, an ended endpoint): the browser's side still ends.
          if (!(error instanceof HTTPError && error.status === 404)) throw error;
        }
      }
      const registration = await device.worker;
      const subscription = registration && (await registration.pushManager.getSubscription());
      if (subscription) await subscription.unsubscribe();
      device.saved = null;
      device.browser = null;
      device.said = "Stopped: this device gets no more notifications.";
    } catch (error) {
      if (error instanceof Unauthorized) return;
      device.said = error instanceof HTTPError ? `alertd did not remove it: ${problemText(error)}` : `Not stopped: ${error.message}`;
    } finally {
      device.busy = false;
      renderDevice();
    }
  }

  // MARK: - Start

  document.addEventListener("DOMContentLoaded", () => {
    $("login-form").addEventListener("submit", signIn);
    $("open-client").addEventListener("submit", openClient);
    $("sign-out").addEventListener("click", () => signedOut("Signed out."));
    $("device-notify").addEventListener("click", notifyDevice);
    $("device-drop-client").addEventListener("click", dropClient);
    $("device-stop").addEventListener("click", stopDevice);
    registerWorker();
    document.addEventListener("keydown", onKey);
    window.addEventListener("hashchange", render);
    start();
  });
})();
