// flowsnap GraphQL explorer: edit a query and its variables, send them to the
// GraphQL endpoint, read the answer with its snapshot position, and page
// through connections. Plain browser JavaScript, no dependencies.
"use strict";

(() => {
  const byId = (id) => document.getElementById(id);
  const els = {
    query: byId("query"),
    variables: byId("variables"),
    variablesError: byId("variables-error"),
    run: byId("run"),
    next: byId("next-page"),
    first: byId("first-page"),
    status: byId("status"),
    position: byId("position"),
    timing: byId("timing"),
    raw: byId("raw"),
    errors: byId("errors"),
    output: byId("output"),
    list: byId("example-list"),
  };
  const endpointMeta = document.querySelector('meta[name="flowsnap-endpoint"]');
  const endpoint = (endpointMeta && endpointMeta.content) || "/graphql";
  const storageKey = "flowsnap.explorer.";
  const indentUnit = "  ";
  // Response fields whose string values are run ids: clicking one puts it
  // into the variables as "id".
  const runIdFields = new Set(["id", "parentRunId", "lineageId"]);

  let examples = [];
  let inflight = null; // AbortController of the request in flight
  let last = null; // {text, json} of the latest response
  let rawMode = false;
  let nextCursor = null; // endCursor of the first page that has a next page

  // ---- storage (best effort: private windows may refuse it) ----

  function stored(name) {
    try {
      return window.localStorage.getItem(storageKey + name);
    } catch {
      return null;
    }
  }

  function store(name, value) {
    try {
      window.localStorage.setItem(storageKey + name, value);
    } catch {
      // Nothing to do: the editors still work, they are just not remembered.
    }
  }

  // ---- status line ----

  function setStatus(text) {
    els.status.textContent = text;
  }

  // ---- variables ----

  // parseVariables reads the variables editor: an empty editor is {}.
  function parseVariables() {
    const text = els.variables.value.trim();
    if (text === "") return { ok: true, value: {} };
    let value;
    try {
      value = JSON.parse(text);
    } catch (err) {
      return { ok: false, message: "Variables are not valid JSON: " + err.message };
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      return { ok: false, message: "Variables must be a JSON object, like {\"id\": \"run-000001\"}." };
    }
    return { ok: true, value };
  }

  function showVariablesError(message) {
    els.variablesError.textContent = message || "";
    els.variablesError.hidden = !message;
    if (message) els.variables.setAttribute("aria-invalid", "true");
    else els.variables.removeAttribute("aria-invalid");
  }

  function setVariables(value) {
    els.variables.value = JSON.stringify(value, null, 2);
    store("variables", els.variables.value);
    showVariablesError("");
    updatePaging();
  }

  function useId(id) {
    const vars = parseVariables();
    if (!vars.ok) {
      showVariablesError(vars.message);
      setStatus("Fix the variables to use this id.");
      return;
    }
    vars.value.id = id;
    setVariables(vars.value);
    setStatus("Variable id set to " + JSON.stringify(id) + ".");
  }

  // ---- examples ----

  async function loadExamples() {
    const src = els.list.dataset.src;
    try {
      const res = await fetch(src, { headers: { Accept: "application/json" } });
      if (!res.ok) throw new Error("HTTP " + res.status);
      const data = await res.json();
      examples = data.map((e) => ({
        name: e.name,
        description: e.description || "",
        query: Array.isArray(e.query) ? e.query.join("\n") : String(e.query),
        variables: JSON.stringify(e.variables || {}, null, 2),
      }));
    } catch (err) {
      const li = document.createElement("li");
      li.textContent = "Could not load the examples (" + err.message + ").";
      els.list.replaceChildren(li);
      return;
    }
    const items = examples.map((example, index) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.dataset.index = String(index);
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = example.name;
      button.append(name);
      if (example.description) {
        const desc = document.createElement("span");
        desc.className = "desc";
        desc.textContent = example.description;
        button.append(desc);
      }
      li.append(button);
      return li;
    });
    els.list.replaceChildren(...items);
    if (els.query.value.trim() === "" && examples.length > 0) loadExample(0, false);
    markCurrentExample();
  }

  function loadExample(index, focus) {
    const example = examples[index];
    if (!example) return;
    els.query.value = example.query;
    els.variables.value = example.variables;
    store("query", els.query.value);
    store("variables", els.variables.value);
    showVariablesError("");
    nextCursor = null;
    markCurrentExample();
    updatePaging();
    if (focus) {
      els.query.focus();
      els.query.setSelectionRange(0, 0);
      els.query.scrollTop = 0;
      setStatus("Loaded " + example.name + ". Press Run to send it.");
    }
  }

  function markCurrentExample() {
    for (const button of els.list.querySelectorAll("button[data-index]")) {
      const example = examples[Number(button.dataset.index)];
      const current = example && example.query === els.query.value;
      if (current) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    }
  }

  // ---- paging ----

  // findNextPage returns the endCursor of the first pageInfo, in document
  // order, that says there is a next page.
  function findNextPage(value) {
    if (value === null || typeof value !== "object") return null;
    if (Array.isArray(value)) {
      for (const item of value) {
        const cursor = findNextPage(item);
        if (cursor !== null) return cursor;
      }
      return null;
    }
    for (const [key, item] of Object.entries(value)) {
      if (key === "pageInfo" && item && item.hasNextPage === true && typeof item.endCursor === "string") {
        return item.endCursor;
      }
      const cursor = findNextPage(item);
      if (cursor !== null) return cursor;
    }
    return null;
  }

  function queryTakesAfter() {
    return /\$after\s*:/.test(els.query.value);
  }

  function updatePaging() {
    const takesAfter = queryTakesAfter();
    els.next.hidden = !(takesAfter && nextCursor !== null);
    const vars = parseVariables();
    els.first.hidden = !(takesAfter && vars.ok && vars.value.after != null);
  }

  function goToPage(after) {
    const vars = parseVariables();
    if (!vars.ok) {
      showVariablesError(vars.message);
      return;
    }
    vars.value.after = after;
    setVariables(vars.value);
    run();
  }

  // ---- running a query ----

  async function run() {
    const query = els.query.value;
    if (query.trim() === "") {
      setStatus("Write a query first.");
      els.query.focus();
      return;
    }
    const vars = parseVariables();
    if (!vars.ok) {
      showVariablesError(vars.message);
      setStatus("Not sent: the variables need fixing.");
      els.variables.focus();
      return;
    }
    showVariablesError("");
    if (inflight) inflight.abort();
    const controller = new AbortController();
    inflight = controller;
    els.output.setAttribute("aria-busy", "true");
    setStatus("Running…");
    const started = performance.now();
    let res, text;
    try {
      res = await fetch(endpoint, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/graphql-response+json, application/json",
        },
        body: JSON.stringify({ query, variables: vars.value }),
        signal: controller.signal,
      });
      text = await res.text();
    } catch (err) {
      if (controller.signal.aborted) return; // a newer request took over
      showFailure("The request failed: " + err.message, performance.now() - started);
      return;
    } finally {
      if (inflight === controller) {
        inflight = null;
        els.output.removeAttribute("aria-busy");
      }
    }
    if (controller.signal.aborted) return;
    showResponse(res, text, performance.now() - started);
  }

  function formatSize(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " kB";
    return (bytes / (1024 * 1024)).toFixed(1) + " MB";
  }

  function showFailure(message, elapsed) {
    last = null;
    nextCursor = null;
    els.timing.textContent = Math.round(elapsed) + " ms";
    els.position.hidden = true;
    renderErrors([{ message }]);
    els.output.replaceChildren();
    els.raw.disabled = true;
    setStatus("Failed.");
    updatePaging();
  }

  function showResponse(res, text, elapsed) {
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    last = { text, json };
    const size = new TextEncoder().encode(text).length;
    els.timing.textContent =
      Math.round(elapsed) + " ms · " + formatSize(size) + " · HTTP " + res.status;

    const position = json && json.extensions && json.extensions.position;
    if (position && typeof position.source === "string") {
      const source = position.source;
      const short = source.length > 8 ? source.slice(0, 8) + "…" : source;
      els.position.textContent = "source " + short + " @ revision " + position.revision;
      els.position.title = "source " + source + " @ revision " + position.revision;
      els.position.setAttribute("aria-label", "Snapshot position: source " + source + ", revision " + position.revision);
      els.position.hidden = false;
    } else {
      els.position.hidden = true;
    }

    const errors = json && Array.isArray(json.errors) ? json.errors.slice() : [];
    if (json === undefined && !res.ok) {
      errors.unshift({ message: "HTTP " + res.status + " " + res.statusText + ": the answer is not JSON." });
    } else if (json === undefined) {
      errors.unshift({ message: "The answer is not JSON." });
    }
    renderErrors(errors);

    nextCursor = json ? findNextPage(json.data) : null;
    els.raw.disabled = false;
    renderOutput();
    updatePaging();
    setStatus(
      errors.length === 0
        ? "Done."
        : "Done with " + errors.length + (errors.length === 1 ? " error." : " errors.")
    );
  }

  // ---- errors ----

  function formatPath(path) {
    let out = "";
    for (const part of path) {
      if (typeof part === "number") out += "[" + part + "]";
      else out += (out ? "." : "") + String(part);
    }
    return out;
  }

  function renderErrors(errors) {
    if (errors.length === 0) {
      els.errors.hidden = true;
      els.errors.replaceChildren();
      return;
    }
    const heading = document.createElement("h3");
    heading.textContent = errors.length === 1 ? "1 error" : errors.length + " errors";
    const list = document.createElement("ol");
    for (const error of errors) {
      const li = document.createElement("li");
      const code = error && error.extensions && error.extensions.code;
      if (code) {
        const span = document.createElement("span");
        span.className = "code";
        span.textContent = String(code);
        li.append(span);
      }
      li.append(String(error && error.message !== undefined ? error.message : JSON.stringify(error)));
      const where = document.createElement("span");
      where.className = "where";
      if (error && Array.isArray(error.path) && error.path.length > 0) {
        where.append("at " + formatPath(error.path));
      }
      if (error && Array.isArray(error.locations)) {
        for (const loc of error.locations) {
          if (!loc || typeof loc.line !== "number") continue;
          const column = typeof loc.column === "number" ? loc.column : 1;
          const jump = document.createElement("button");
          jump.type = "button";
          jump.className = "small";
          jump.textContent = "line " + loc.line + ":" + column;
          jump.setAttribute("aria-label", "Show line " + loc.line + ", column " + column + " in the query");
          jump.addEventListener("click", () => jumpTo(loc.line, column));
          where.append(jump);
        }
      }
      if (where.childNodes.length > 0) li.append(where);
      list.append(li);
    }
    els.errors.replaceChildren(heading, list);
    els.errors.hidden = false;
  }

  function jumpTo(line, column) {
    const lines = els.query.value.split("\n");
    let offset = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i].length + 1;
    const current = lines[Math.min(line, lines.length) - 1] || "";
    offset += Math.min(Math.max(column - 1, 0), current.length);
    els.query.focus();
    els.query.setSelectionRange(offset, offset);
    const lineHeight = parseFloat(getComputedStyle(els.query).lineHeight) || 20;
    els.query.scrollTop = Math.max(0, (line - 1) * lineHeight - els.query.clientHeight / 3);
  }

  // ---- response body ----

  function renderOutput() {
    els.raw.setAttribute("aria-pressed", rawMode ? "true" : "false");
    if (!last) return;
    if (rawMode || last.json === undefined) {
      els.output.textContent = last.text;
      return;
    }
    els.output.replaceChildren(renderJSON(last.json));
  }

  // renderJSON pretty-prints a value as DOM nodes (never as HTML text),
  // colouring keys and literals and turning run ids into buttons.
  function renderJSON(value) {
    const out = document.createDocumentFragment();
    let plain = "";
    const flush = () => {
      if (plain) out.append(plain);
      plain = "";
    };
    const token = (text, className) => {
      flush();
      const span = document.createElement("span");
      span.className = className;
      span.textContent = text;
      out.append(span);
    };
    const walk = (v, depth, key) => {
      const pad = indentUnit.repeat(depth);
      if (v === null) return token("null", "j-null");
      if (Array.isArray(v)) {
        if (v.length === 0) return void (plain += "[]");
        plain += "[\n";
        v.forEach((item, i) => {
          plain += pad + indentUnit;
          walk(item, depth + 1, null);
          plain += i < v.length - 1 ? ",\n" : "\n";
        });
        plain += pad + "]";
        return;
      }
      switch (typeof v) {
        case "object": {
          const keys = Object.keys(v);
          if (keys.length === 0) return void (plain += "{}");
          plain += "{\n";
          keys.forEach((k, i) => {
            plain += pad + indentUnit;
            token(JSON.stringify(k), "j-key");
            plain += ": ";
            walk(v[k], depth + 1, k);
            plain += i < keys.length - 1 ? ",\n" : "\n";
          });
          plain += pad + "}";
          return;
        }
        case "string":
          if (key !== null && runIdFields.has(key)) {
            flush();
            const button = document.createElement("button");
            button.type = "button";
            button.className = "j-id";
            button.dataset.id = v;
            button.title = "Use as the id variable";
            button.textContent = JSON.stringify(v);
            out.append(button);
            return;
          }
          return token(JSON.stringify(v), "j-str");
        case "number":
          return token(String(v), "j-num");
        case "boolean":
          return token(String(v), "j-lit");
        default:
          plain += JSON.stringify(v);
      }
    };
    walk(value, 0, null);
    flush();
    return out;
  }

  // ---- editors ----

  // replaceRange edits the text keeping the browser's undo history where it can.
  function replaceRange(textarea, start, end, text) {
    textarea.setSelectionRange(start, end);
    let done = false;
    try {
      done = document.execCommand("insertText", false, text);
    } catch {
      done = false;
    }
    if (!done) {
      textarea.setRangeText(text, start, end, "end");
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }

  function indentLines(textarea, outdent) {
    const { value, selectionStart: start, selectionEnd: end } = textarea;
    if (!outdent && start === end) {
      replaceRange(textarea, start, end, indentUnit);
      return;
    }
    const lineStart = value.lastIndexOf("\n", start - 1) + 1;
    let blockEnd = end;
    if (blockEnd > start && value[blockEnd - 1] === "\n") blockEnd--;
    const nextBreak = value.indexOf("\n", blockEnd);
    const lineEnd = nextBreak === -1 ? value.length : nextBreak;
    const lines = value.slice(lineStart, lineEnd).split("\n");
    const changed = lines.map((line) =>
      outdent ? line.replace(/^ {1,2}|^\t/, "") : indentUnit + line
    );
    const block = changed.join("\n");
    if (block === lines.join("\n")) return;
    replaceRange(textarea, lineStart, lineEnd, block);
    if (start === end) {
      const removed = lines[0].length - changed[0].length;
      const caret = Math.max(lineStart, start - removed);
      textarea.setSelectionRange(caret, caret);
    } else {
      textarea.setSelectionRange(lineStart, lineStart + block.length);
    }
  }

  function newlineWithIndent(textarea) {
    const { value, selectionStart: start, selectionEnd: end } = textarea;
    const lineStart = value.lastIndexOf("\n", start - 1) + 1;
    const line = value.slice(lineStart, start);
    let indent = /^[ \t]*/.exec(line)[0];
    if (/[{[(]\s*$/.test(line)) indent += indentUnit;
    replaceRange(textarea, start, end, "\n" + indent);
  }

  function setUpEditor(textarea, name) {
    let escaped = false; // Esc then Tab moves focus out, as usual
    textarea.addEventListener("focus", () => {
      escaped = false;
    });
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        escaped = true;
        return;
      }
      const wasEscaped = escaped;
      escaped = false;
      if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
      if (event.key === "Tab" && !wasEscaped) {
        event.preventDefault();
        indentLines(textarea, event.shiftKey);
      } else if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        newlineWithIndent(textarea);
      }
    });
    textarea.addEventListener("input", () => {
      store(name, textarea.value);
      if (name === "query") markCurrentExample();
      else showVariablesError("");
      updatePaging();
    });
  }

  // ---- wiring ----

  setUpEditor(els.query, "query");
  setUpEditor(els.variables, "variables");

  els.query.value = stored("query") || "";
  els.variables.value = stored("variables") || "";

  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      run();
    }
  });
  els.run.addEventListener("click", run);
  els.next.addEventListener("click", () => {
    if (nextCursor !== null) goToPage(nextCursor);
  });
  els.first.addEventListener("click", () => goToPage(null));
  els.raw.addEventListener("click", () => {
    rawMode = !rawMode;
    renderOutput();
  });
  els.list.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-index]");
    if (button) loadExample(Number(button.dataset.index), true);
  });
  els.output.addEventListener("click", (event) => {
    const button = event.target.closest("button.j-id");
    if (button) useId(button.dataset.id);
  });

  updatePaging();
  loadExamples();
})();
