// The playground (/console/playground): posts each turn to /console/playground/responses, which answers with the
// Responses API's own Server-Sent Events, and draws them as they arrive: the reply's text, and every tool call
// (function, file_search, MCP) as an item of its own. A call of the visitor's client tool gets a Tool output box
// whose submit continues the response with a function_call_output.
// Everything the model or a tool supplies is set with textContent, never parsed as HTML.
"use strict";

(() => {
  const form = document.getElementById("playground");
  if (!form) return;
  const transcript = document.getElementById("pg-transcript");
  const errorBox = document.getElementById("pg-error");
  const sendButton = document.getElementById("pg-send");
  const continues = document.getElementById("pg-continues");
  const csrfHeader = form.dataset.csrfHeader;
  let previousResponseId = null;

  function el(tag, className, text) {
    const made = document.createElement(tag);
    if (className) made.className = className;
    if (text !== undefined) made.textContent = text;
    return made;
  }

  function showError(message) {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
  }

  function setContinues(responseId) {
    previousResponseId = responseId;
    continues.textContent = responseId ? `continues ${responseId}` : "";
  }

  function pretty(json) {
    try {
      return JSON.stringify(JSON.parse(json), null, 2);
    } catch {
      return json || "";
    }
  }

  // The turn's settings as the page shows them now; the client tool's schema must be JSON.
  function settings() {
    const body = { model: form.elements.model.value };
    if (form.elements.vector_store_id.value) body.vector_store_id = form.elements.vector_store_id.value;
    const instructions = form.elements.instructions.value.trim();
    if (instructions) body.instructions = instructions;
    if (form.elements.tool_enabled.checked) {
      let parameters;
      try {
        parameters = JSON.parse(form.elements.tool_parameters.value);
      } catch (problem) {
        throw new Error(`The client tool's parameters are not JSON: ${problem.message}`);
      }
      body.client_tool = {
        name: form.elements.tool_name.value.trim(),
        description: form.elements.tool_description.value.trim(),
        parameters,
      };
    }
    const mcpUrl = form.elements.mcp_url.value.trim();
    if (mcpUrl) body.mcp_server = { server_label: form.elements.mcp_label.value.trim() || "mcp", server_url: mcpUrl };
    if (previousResponseId) body.previous_response_id = previousResponseId;
    return body;
  }

  // One item of a reply (a message or a tool call), drawn from its events.
  function itemBlock(item) {
    const block = el("div", `output-item ${item.type}`);
    block.dataset.type = item.type;
    if (item.type === "message") {
      block.append(el("p", "text", ""));
      return block;
    }
    const head = el("p", "item-head");
    const names = {
      function_call: () => ["function call", item.name],
      file_search_call: () => ["file_search", ""],
      mcp_call: () => ["MCP call", `${item.server_label}.${item.name}`],
      mcp_list_tools: () => ["MCP tools of", item.server_label],
      mcp_approval_request: () => ["MCP approval request", `${item.server_label}.${item.name}`],
    };
    const [kind, name] = (names[item.type] || (() => [item.type.replaceAll("_", " "), ""]))();
    head.append(el("span", "kind", kind), " ", el("code", "tool", name || ""), " ", el("span", "item-status", ""));
    block.append(head, el("pre", "arguments", ""));
    return block;
  }

  function drawDone(block, item) {
    const status = block.querySelector(".item-status");
    if (status) status.textContent = item.status || "";
    const detail = block.querySelector("pre.arguments");
    if (item.type === "message") {
      const text = (item.content || []).map((part) => part.text || part.refusal || "").join("");
      block.querySelector(".text").textContent = text;
    } else if (item.type === "function_call" || item.type === "mcp_approval_request") {
      detail.textContent = pretty(item.arguments);
    } else if (item.type === "mcp_call") {
      const answer = item.error ? `error: ${JSON.stringify(item.error)}` : `→ ${item.output ?? ""}`;
      detail.textContent = `${pretty(item.arguments)}\n${answer}`;
    } else if (item.type === "mcp_list_tools") {
      detail.textContent = item.error || (item.tools || []).map((tool) => tool.name).join(", ");
    } else if (item.type === "file_search_call") {
      const found = (item.results || []).map((hit) => `${hit.filename} (${Number(hit.score).toFixed(2)}): ${hit.text}`);
      detail.textContent = [`queries: ${(item.queries || []).join(" | ")}`, ...found].join("\n");
    } else {
      detail.textContent = JSON.stringify(item, null, 2);
    }
  }

  // A reply: the <li> that the events of one response fill in.
  function newReply() {
    const li = el("li", "turn assistant");
    const status = el("p", "reply-status", "waiting for the model…");
    li.append(el("span", "who", "model"), status);
    transcript.append(li);
    const blocks = new Map();
    const blockOf = (itemId) => blocks.get(itemId) || null;
    return {
      li,
      status,
      responseId: null,
      add(item) {
        const block = itemBlock(item);
        blocks.set(item.id, block);
        li.insertBefore(block, status);
        return block;
      },
      blockOf,
    };
  }

  // Not a <form>: the transcript is inside the page's form, and forms do not nest.
  function toolOutputBox(reply, calls, model) {
    const box = el("div", "tool-output act");
    box.setAttribute("role", "group");
    box.append(el("p", "hint", "The model waits for your client tool's output."));
    calls.forEach((call, index) => {
      const id = `pg-output-${reply.responseId}-${index}`;
      const label = el("label", "", calls.length > 1 ? `Tool output (${call.name})` : "Tool output");
      label.htmlFor = id;
      const area = el("textarea");
      area.id = id;
      area.rows = 2;
      area.dataset.callId = call.call_id;
      box.append(label, area);
    });
    const submit = el("button", "", "Submit output");
    submit.type = "button";
    box.append(submit);
    submit.addEventListener("click", () => {
      let body;
      try {
        body = turnSettings();
      } catch {
        return;
      }
      const outputs = [...box.querySelectorAll("textarea")].map((area) => ({
        call_id: area.dataset.callId,
        output: area.value,
      }));
      const controls = box.querySelectorAll("textarea, button");
      for (const control of controls) control.disabled = true;
      run({ ...body, model, tool_outputs: outputs, previous_response_id: reply.responseId }, null).then((taken) => {
        if (!taken) for (const control of controls) control.disabled = false; // refused: let the person retry
      });
    });
    reply.li.append(box);
    box.querySelector("textarea").focus();
  }

  function turnSettings() {
    try {
      return settings();
    } catch (problem) {
      showError(problem.message);
      throw problem;
    }
  }

  function finish(reply, response, model) {
    const state = response.status || "done";
    reply.status.textContent = `${state} · ${response.id}`;
    reply.li.classList.add(`status-${state}`);
    if (response.error) showError(`The response failed: ${response.error.message || response.error.code}`);
    setContinues(response.id);
    const calls = (response.output || []).filter((item) => item.type === "function_call");
    if (calls.length) toolOutputBox(reply, calls, model);
  }

  function handle(reply, event, model) {
    const type = event.type || "";
    if (type === "response.created" || type === "response.in_progress" || type === "response.queued") {
      reply.responseId = event.response.id;
      reply.status.textContent = `streaming · ${event.response.id}`;
    } else if (type === "response.output_item.added") {
      reply.add(event.item);
    } else if (type === "response.output_item.done") {
      drawDone(reply.blockOf(event.item.id) || reply.add(event.item), event.item);
    } else if (type === "response.output_text.delta") {
      const text = reply.blockOf(event.item_id)?.querySelector(".text");
      if (text) text.textContent += event.delta;
    } else if (type.endsWith("_arguments.delta")) {
      const args = reply.blockOf(event.item_id)?.querySelector("pre.arguments");
      if (args) args.textContent += event.delta;
    } else if (/^response\.(file_search|mcp|web_search)_call\.[a-z_]+$/.test(type) && event.item_id) {
      const status = reply.blockOf(event.item_id)?.querySelector(".item-status");
      if (status) status.textContent = type.split(".").pop().replaceAll("_", " ");
    } else if (type === "response.completed" || type === "response.incomplete" || type === "response.failed") {
      finish(reply, event.response, model);
    } else if (type === "error") {
      showError(`Error: ${event.message || event.code || "the stream failed"}`);
    }
  }

  async function refusal(answer) {
    try {
      const body = await answer.json();
      return body.detail || body.error?.message || JSON.stringify(body);
    } catch {
      return `HTTP ${answer.status}`;
    }
  }

  // Send one turn, then draw its events as they arrive. True when the server took it.
  async function run(body, message) {
    showError("");
    sendButton.disabled = true;
    if (message !== null) {
      const mine = el("li", "turn user");
      mine.append(el("span", "who", "you"), el("p", "text", message));
      transcript.append(mine);
    }
    const reply = newReply();
    try {
      const answer = await fetch("/console/playground/responses", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json", [csrfHeader]: form.elements.csrf_token.value },
        body: JSON.stringify(body),
      });
      if (!answer.ok || !(answer.headers.get("content-type") || "").startsWith("text/event-stream")) {
        reply.li.remove();
        showError(`Refused (${answer.status}): ${await refusal(answer)}`);
        return false;
      }
      const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
      let pending = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += value;
        let end;
        while ((end = pending.indexOf("\n\n")) >= 0) {
          const frame = pending.slice(0, end);
          pending = pending.slice(end + 2);
          const data = frame
            .split("\n")
            .filter((line) => line.startsWith("data:"))
            .map((line) => line.slice(5).trimStart())
            .join("\n");
          if (data && data !== "[DONE]") handle(reply, JSON.parse(data), body.model);
        }
      }
      return true;
    } catch (problem) {
      showError(`The stream broke off: ${problem.message}`);
      return reply.responseId !== null; // once created, the response goes on in the API (and the inbox)
    } finally {
      sendButton.disabled = false;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    event.stopPropagation(); // console.js would disable the form's buttons for good, as for a page-loading form
    const message = form.elements.message.value;
    if (!message.trim()) return;
    let body;
    try {
      body = turnSettings();
    } catch {
      return;
    }
    form.elements.message.value = "";
    run({ ...body, input: message }, message);
  });

  document.getElementById("pg-new").addEventListener("click", () => {
    transcript.replaceChildren();
    setContinues(null);
    showError("");
  });
})();
